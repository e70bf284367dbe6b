#!/usr/bin/env bash
# session 16, diagnosis 1: schedule .w (first item's length) A/B; mla_schedule under ncu (stalls) and the
# floors of a one-work-group kernel; timelines of LA16 vs the grid at B=8
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export bin=$PWD/.deps/lead/mla-tune
NCU=/usr/local/cuda/bin/ncu
HEAD=$PWD/.deps/exp/head NEW=$PWD/.deps/exp/new
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
G64S16="tile_q=64,kv_granularity=64,num_splits=16,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
mix=long-tail,one-long:32768:1024
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
for r in 1 2; do
  echo "### round $r: head kernels"; MLA_TUNE_KERNEL_DIR=$HEAD $bin bench --cache-dir /tmp/c-head --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
  echo "### round $r: new kernels"; MLA_TUNE_KERNEL_DIR=$NEW $bin bench --cache-dir /tmp/c-new --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
done
echo "### grid comparator B=8 uniform 4992"
$bin bench --cache-dir /tmp/c-new --no-ceilings --heads 16 --batch 8 --seq-len 4992 --variant $G64S16
echo "### floors (ncu)"
/usr/local/cuda/bin/nvcc -arch=sm_90 -o /tmp/empty .deps/empty.cu && timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum /tmp/empty 2>&1 | grep -E "empty1|load192|gpu__time" | tr -s ' ' | paste -sd' ' | fold -w 200
echo "### mla_schedule B=128 (ncu sections)"
timeout 180 $NCU --clock-control none --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats --section SchedulerStats \
  -k regex:'^mla_schedule' --launch-skip 2 -c 1 env MLA_TUNE_KERNEL_DIR=$NEW $bin bench --cache-dir /tmp/c-new --no-ceilings --warmup 1 --reps 2 --heads 16 --batch 128 --lengths long-tail --variant $LA16 2>&1 | grep -v "^MTT" | sed -n '/mla_schedule/,$p' | head -150
echo "### mla_schedule duration B=8/32/128 new"
for B in 8 32 128; do
  timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_schedule' -c 4 env MLA_TUNE_KERNEL_DIR=$NEW $bin bench --cache-dir /tmp/c-new --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "gpu__time_duration" | tr -s ' ' | paste -sd' '
done
echo "### traces"
.deps/trace.sh la16-onelong-8 $NEW --heads 16 --batch 8 --lengths one-long:32768:1024 --variant $LA16
.deps/trace.sh la16-uniform-8 $NEW --heads 16 --batch 8 --seq-len 4992 --lengths uniform --variant $LA16
.deps/trace.sh g64s16-uniform-8 $NEW --heads 16 --batch 8 --seq-len 4992 --variant $G64S16
} 2>&1 | tee $OUT/diag23a.txt
cd $OUT && tar czf raw.tgz *.raw && rm -f *.raw
