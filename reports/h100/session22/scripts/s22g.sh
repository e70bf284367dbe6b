#!/usr/bin/env bash
# session 22, run 10: fp8 KV ragged mixes at 64 and 128 heads through the shipped DBs after the
# length-aware reduce's change (the 64-row fp8 path's length-aware form uses it too)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 200 build/mla-tune bench --system-db build/example-prefix/share/mla-tune/tuning.db --reps 20 --no-ceilings \
  --heads 64,128 --kv-dtype fp8e4m3 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 \
  > $OUT/bench-fp8.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench-fp8.txt | cut -c1-100,180-330
