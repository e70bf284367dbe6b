#!/usr/bin/env bash
# trace.sh NAME SRC BENCH-ARGS...: a traced run of kernel sources SRC with $bin, raw MTT lines to $OUT/NAME.raw
set -uo pipefail
name=$1 src=$2; shift 2
tmp=$(mktemp -d)
cp "$src"/prelude.h "$tmp"/; cp -r "$src"/mla_decode "$tmp"/
sed -i '1i #define MT_TRACE 1' "$tmp/prelude.h"
MLA_TUNE_KERNEL_DIR=$tmp $bin bench --no-ceilings --warmup 2 --reps 5 --cache-dir "$tmp/cache" "$@" > "$OUT/$name.raw" 2>&1
echo "## trace $name: $*"
python3 tuner/trace-summary.py < "$OUT/$name.raw" | tail -30
