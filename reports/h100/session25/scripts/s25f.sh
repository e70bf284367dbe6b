#!/usr/bin/env bash
# session 25, run 6 (issue 28): the 64-row path's compute alone: expk/ is HEAD's kernel text with
# only the first two chunks copied and every later chunk's wait skipped (wrong results, the
# arithmetic and the warpgroups' hand-offs timed without the data movement), against HEAD's,
# alternating twice; with tuner/probes/pair-stream.cu's data movement alone (runs 1-3) this
# splits the 128-head call's time
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
G=tile_q=64,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0
ab() { # heads batch seq variant
  for round in 1 2; do
    for tree in head compute-only; do
      if [ $tree = head ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/expk/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 30 --heads $1 --batch $2 --seq-len $3 --variant "$4" \
        2>&1 | grep -E "^ *[0-9]" | head -1 | sed "s/^/$tree$round /" | cut -c1-108
    done
  done
}
{
ab 128 32 16384 "$G,kv_granularity=64,num_splits=2,wg_schedule=1"
ab 128 32 16384 "$G,kv_granularity=64,num_splits=2"
ab 128 128 4096 "$G,kv_granularity=16,num_splits=1"
ab 128 128 4096 "$G,kv_granularity=16,num_splits=1,wg_schedule=1"
ab 128 128 1024 "$G,kv_granularity=16,num_splits=1"
ab 128 8 16384 "$G,kv_granularity=16,num_splits=8"
} > $OUT/compute-only.txt 2>&1
cat $OUT/compute-only.txt
