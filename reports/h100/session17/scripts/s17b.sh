#!/usr/bin/env bash
# session 17, run 2: mla_schedule's phases by clock64 (thread 0 and the last thread), batch 8/32/128
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
bin=$PWD/.deps/lead/mla-tune
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
{
for B in 8 32 128; do for flush in read; do
  MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/trace $bin bench --cache-dir /tmp/c --no-ceilings --warmup 1 --reps 4 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "SCHED|^ +16" | sort | uniq -c | sort -rn | head -12
done; done
} 2>&1 | tee $OUT/s17b.txt
