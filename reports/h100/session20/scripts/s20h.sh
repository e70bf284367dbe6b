#!/usr/bin/env bash
# session 20, run 9: the heuristic without the partials' bound (edf3996), timed where no DB key
# exists (page 16): small batches, 16-bit and fp8 KV
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B="build/mla-tune bench --system-db build/example-prefix/share/mla-tune/tuning.db --reps 20 --no-ceilings --page-size 16"
{
timeout 60 $B --heads 32,128 --kv-dtype fp8e4m3 --batch 1,8,128 --seq-len 4096
timeout 60 $B --heads 32,128 --batch 1,8 --seq-len 1024,4096
} > $OUT/bench-heuristic.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench-heuristic.txt | cut -c1-80,180-330
