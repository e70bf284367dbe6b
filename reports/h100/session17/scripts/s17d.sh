#!/usr/bin/env bash
# session 17, run 4: mla_schedule forms - ncu durations (head / new one-warp / hybrid), clock64 phases of new and hybrid
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
bin=$PWD/.deps/lead/mla-tune
NCU=/usr/local/cuda/bin/ncu
E=$PWD/.deps/exp
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
{
for k in head hyb; do
  for B in 8 128 512; do
    echo "$k B=$B"; MLA_TUNE_KERNEL_DIR=$E/$k timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_schedule' -c 4 $bin bench --cache-dir /tmp/c-$k --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "gpu__time_duration" | tr -s ' ' | paste -sd' '
  done
done
for k in htrace ntrace; do for B in 8 128 512; do
  echo "$k B=$B"; MLA_TUNE_KERNEL_DIR=$E/$k $bin bench --cache-dir /tmp/c-$k --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "SCHED" | tail -3
done; done
} 2>&1 | tee $OUT/s17d.txt
