#!/usr/bin/env bash
# session 25, run 4 (issue 28): the 64-row paths' block-table rows read a chunk (a pair) ahead of
# their copies (wgmma64_copies.cuh). test_gpu_mla focused on the 64-row path, then the suite's
# draw; then the previous kernel text (oldk/, git archive of HEAD, through MLA_TUNE_KERNEL_DIR)
# against the new, alternating twice, on 128-head shapes with the shipped choices forced
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=96 timeout 240 tests/test_gpu_mla) > $OUT/gpu-mla-wg64.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla-wg64.txt | tail -4
(cd build && timeout 240 tests/test_gpu_mla) > $OUT/gpu-mla.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla.txt | tail -4
W=tile_q=64,block_threads=256,kv_chunk=64,mma=2,kv_stages=2
G="$W,split_reduce=0,groups_per_cu=0"
L64="tile_q=64,kv_granularity=64,num_splits=1,$W,split_reduce=0,groups_per_cu=1,request_cost=256"
ab() { # heads batch lengths-or-seq variant [sq]
  for round in 1 2; do
    for tree in old new; do
      if [ $tree = old ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/oldk/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 30 --heads $1 --batch $2 $3 --variant "$4" ${5:+--sq $5} \
        2>&1 | grep -E "^ *[0-9]" | head -1 | sed "s/^/$tree$round /" | cut -c1-100
    done
  done
}
{
ab 128 32 "--seq-len 16384" "$G,kv_granularity=64,num_splits=2,wg_schedule=1"
ab 128 32 "--seq-len 16384" "$G,kv_granularity=64,num_splits=2"
ab 128 128 "--seq-len 4096" "$G,kv_granularity=16,num_splits=1"
ab 128 128 "--seq-len 4096" "$G,kv_granularity=16,num_splits=1,wg_schedule=1"
ab 128 8 "--seq-len 16384" "$G,kv_granularity=16,num_splits=8"
ab 128 128 "--seq-len 1024" "$G,kv_granularity=16,num_splits=1"
ab 16 32 "--seq-len 16384" "$G,kv_granularity=64,num_splits=2,wg_schedule=1" 8
ab 128 32 "--lengths long-tail" "$L64,snap_keys=512"
ab 128 32 "--lengths one-long:32768:1024" "$L64,snap_keys=512,snap_cap=2"
ab 128 128 "--lengths uniform-random:256-8192" "$L64,snap_cap=2"
ab 16 128 "--seq-len 16384" "$G,kv_granularity=16,num_splits=1"
} > $OUT/ab-rows-ahead.txt 2>&1
cat $OUT/ab-rows-ahead.txt
