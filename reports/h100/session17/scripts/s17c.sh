#!/usr/bin/env bash
# session 17, run 3: the one-warp mla_schedule - GPU schedule == host (test_gpu_mla), ncu durations old vs new, bench sched_us
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=$PWD/.deps/lead/mla-tune
NCU=/usr/local/cuda/bin/ncu
HEAD=$PWD/.deps/exp/head
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
{
echo "### test_gpu_mla (new schedule kernel)"
(cd /tmp && timeout 400 $PWD/.deps/lead/test_gpu_mla 2>&1 | tail -5) || (timeout 400 .deps/lead/test_gpu_mla 2>&1 | tail -5)
echo "### mla_schedule ncu duration, head vs new, B=8/32/128 long-tail, and B=128 uniform 4096, B=512 long-tail"
for k in head new; do
  if [ $k = head ]; then export MLA_TUNE_KERNEL_DIR=$HEAD; else unset MLA_TUNE_KERNEL_DIR; fi
  for B in 8 32 128 512; do
    echo "$k B=$B"; timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_schedule' -c 4 $bin bench --cache-dir /tmp/c-$k --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "gpu__time_duration" | tr -s ' ' | paste -sd' '
  done
done
unset MLA_TUNE_KERNEL_DIR
for r in 1 2; do
echo "### bench round $r head"; MLA_TUNE_KERNEL_DIR=$HEAD $bin bench --cache-dir /tmp/c-head --no-ceilings --heads 16 --batch 8,32,128 --lengths long-tail --variant $LA16 | grep -E "^ +16"
echo "### bench round $r new"; $bin bench --cache-dir /tmp/c-new --no-ceilings --heads 16 --batch 8,32,128 --lengths long-tail --variant $LA16 | grep -E "^ +16"
done
} 2>&1 | tee $OUT/s17c.txt
