#!/usr/bin/env bash
# session 25, run 3 (issue 28): the probe and the real 64-row path on the same machine (run 2's
# probe figures differed from run 1's by up to 15% on another H100): the bench's 128-head
# shapes with both schedules, then the probe again
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,serial,clocks.max.sm,power.limit --format=csv
W=tile_q=64,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0
{
for ws in 0 1; do
  build/mla-tune bench --no-ceilings --reps 50 --heads 128 --batch 32 --seq-len 16384 --variant "$W,kv_granularity=64,num_splits=2,wg_schedule=$ws"
  build/mla-tune bench --no-ceilings --reps 50 --heads 128 --batch 128 --seq-len 4096 --variant "$W,kv_granularity=16,num_splits=1,wg_schedule=$ws"
done 2>&1 | grep -E "^ *[0-9]" | cut -c1-100
} > $OUT/bench.txt 2>&1
cat $OUT/bench.txt
timeout 200 ./pair-stream.bin > $OUT/pair-stream3.txt 2>&1; cat $OUT/pair-stream3.txt | cut -c1-90
