#!/usr/bin/env bash
# session 22, run 11 (probe): fewer cuts at 128 heads - the schedule's snap distance capped at half
# a share instead of a quarter (diag/schedule-snap-half.patch, a copy of the kernels through
# MLA_TUNE_KERNEL_DIR; the GPU builds the schedule, so the host's model is not involved), with
# snap_keys 512 and 1024, against the shipped text, alternating, twice
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
rm -rf /tmp/kc && cp -r kernels /tmp/kc && patch -s -d /tmp/kc -p4 < reports/h100/session22/diag/schedule-snap-half.patch || echo PATCH FAILED
LA="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1,request_cost=256"
for round in 1 2; do
  for tree in quarter half; do
    if [ $tree = quarter ]; then K=$PWD/kernels; else K=/tmp/kc; fi
    for snap in 512 1024; do
      MLA_TUNE_KERNEL_DIR=$K timeout 100 build/mla-tune bench --no-ceilings --reps 20 --heads 128 --batch 32,128 \
        --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --variant "$LA,snap_keys=$snap" 2>&1 |
        grep -E "^ *[0-9]" | awk -v t="$tree$round snap$snap" '$5 != $4 {print t, $0}' | cut -c1-100
    done
  done
done | tee $OUT/snap-half.txt
