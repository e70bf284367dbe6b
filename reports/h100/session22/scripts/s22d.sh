#!/usr/bin/env bash
# session 22, runs 6-8: a plan resumed on a copy of a shipped DB after the length-aware reduce's
# change (reduce.cu is compiled into every fixed-split variant with the reduce kernel and every
# length-aware one, so their rows no longer validate and are measured again; the rest are
# skipped), then the DB exported for sm_90.  Usage: s22d.sh PLAN DB NAME SECONDS
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
plan=$1 db=$2 name=$3 limit=$4
cp "$db" $OUT/$name.db
timeout "$limit" build/mla-tune sweep --config "$plan" --db $OUT/$name.db > $OUT/$name-sweep.txt 2>&1
echo "sweep rc=$?"; tail -3 $OUT/$name-sweep.txt | cut -c1-250
build/mla-tune export --arch sm_90 --db $OUT/$name.db -o $OUT/$name-export.db > $OUT/$name-export.txt 2>&1
echo "export rc=$?"; build/mla-tune show --stale --db $OUT/$name-export.db 2>&1 | tail -3
