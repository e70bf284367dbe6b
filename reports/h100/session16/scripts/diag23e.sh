#!/usr/bin/env bash
# session 16, run 5: the schedule's cost per request (MT_SCHEDULE_OVERHEAD) and snap distance, probed
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export bin=$PWD/.deps/lead/mla-tune
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
LA64="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
{
for r in 1 2; do
  for k in new o256 o1024 s512 o256s512; do
    export MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/$k
    echo "### round $r $k: LA16 16 heads"
    $bin bench --cache-dir /tmp/c-$k --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16 | grep -E "^ +16"
    echo "### round $r $k: LA64 128 heads"
    $bin bench --cache-dir /tmp/c-$k --no-ceilings --heads 128 --batch 8,32,128 --lengths $mix --variant $LA64 | grep -E "^ +128"
  done
done
} 2>&1 | tee $OUT/diag23e.txt
