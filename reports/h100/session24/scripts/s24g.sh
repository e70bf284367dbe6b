#!/usr/bin/env bash
# session 24, run 8: the schedule's even form (schedule.cu / schedule.c): test_gpu_mla (every
# length-aware case's GPU schedule equal to the host's, graph replays), then the shipped DBs'
# length-aware choices for issue 22's ragged keys (session 23's run 11), the previous kernel
# text (oldk/, a git archive of HEAD, through MLA_TUNE_KERNEL_DIR) against the new, alternating
# twice; each line the ragged call and the uniform batch of the same keys, same variant
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 300 ctest -R "test_gpu_mla" --output-on-failure -V) > $OUT/gpu-mla.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla.txt | tail -5
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
T16="tile_q=16,kv_granularity=64,num_splits=1,$W,groups_per_cu=1"
M1="tile_q=16,kv_granularity=16,num_splits=1,block_threads=128,kv_chunk=32,mma=1,kv_stages=2,split_reduce=0,groups_per_cu=1"
L64="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256"
LT=long-tail; OL=one-long:32768:1024; UR=uniform-random:256-8192
ab() { # heads batch lengths variant
  for round in 1 2; do
    for tree in old new; do
      if [ $tree = old ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/oldk/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads $1 --batch $2 --lengths $3 --variant "$4" \
        2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree$round /" | cut -c1-124
    done
  done
}
{
ab 16 8 $LT "$M1"
ab 16 32 $LT "$T16"
ab 16 128 $LT "$T16,snap_cap=2"
ab 16 8 $OL "$M1"
ab 16 32 $OL "$T16,snap_cap=2"
ab 16 128 $OL "$T16"
ab 16 32 $UR "$T16,request_cost=256,snap_cap=2"
ab 16 128 $UR "$T16,request_cost=256"
ab 128 8 $LT "$L64"
ab 128 32 $LT "$L64"
ab 128 128 $LT "$L64"
ab 128 8 $OL "$L64"
ab 128 32 $OL "$L64,snap_keys=512,snap_cap=2"
ab 128 128 $OL "$L64,snap_cap=2"
ab 128 32 $UR "$L64,snap_cap=2"
ab 128 128 $UR "$L64,snap_cap=2"
} > $OUT/ab-even.txt 2>&1
cat $OUT/ab-even.txt
