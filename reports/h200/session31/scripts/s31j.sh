#!/usr/bin/env bash
# session 31, run 10 (H200): the built-in rule (no database) with its two-split pairs merged in a cluster:
# 8/16/32/64 heads B=64 x 1024 (the H200 sweep: 2 splits in a cluster 29.4-31.5 us, through the reduce
# kernel 31.9-36.3) and 128 heads B=32 x 16384
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
mkdir -p /tmp/nodb; B="env HOME=/tmp/nodb XDG_DATA_HOME=/tmp/nodb XDG_CONFIG_HOME=/tmp/nodb XDG_CACHE_HOME=/tmp/nodb/cache build/mla-tune bench --no-ceilings --warmup 3 --reps 20"
{ timeout 90 $B --heads 8,16,32,64 --batch 64 --seq-len 1024
  timeout 60 $B --heads 128 --batch 32 --seq-len 16384; } > $OUT/run10-bench-rule.txt 2>&1
grep -E "^ +[0-9]|rror" $OUT/run10-bench-rule.txt | cut -c1-60,100-300
