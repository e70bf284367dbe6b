#!/usr/bin/env bash
# session 17, run 1: mla_schedule under ncu (cold vs warm caches, stall reasons); issue 28 baselines
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=$PWD/.deps/lead/mla-tune
NCU=/usr/local/cuda/bin/ncu
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
{
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
echo "### floors (ncu), cache all then none"
/usr/local/cuda/bin/nvcc -arch=sm_90 -o /tmp/empty .deps/empty.cu
for cc in all none; do echo "cache $cc"; timeout 120 $NCU --clock-control none --cache-control $cc --metrics gpu__time_duration.sum /tmp/empty 2>&1 | grep -E "empty1|load192|gpu__time" | tr -s ' ' | paste -sd' ' | fold -w 200; done
echo "### mla_schedule duration B=8/32/128, cache all then none"
for cc in all none; do for B in 8 32 128; do
  echo "cache $cc B=$B"; timeout 60 $NCU --clock-control none --cache-control $cc --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.max -k regex:'^mla_schedule' -c 4 $bin bench --cache-dir /tmp/c --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "gpu__time_duration|inst_executed|cycles_elapsed" | tr -s ' ' | paste -sd' '
done; done
echo "### mla_schedule B=128 stall reasons (ncu)"
timeout 180 $NCU --clock-control none --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
  --metrics smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_sample_count,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle \
  -k regex:'^mla_schedule' --launch-skip 2 -c 1 $bin bench --cache-dir /tmp/c --no-ceilings --warmup 1 --reps 2 --heads 16 --batch 128 --lengths long-tail --variant $LA16 2>&1 | grep -v "^MTT" | sed -n '/mla_schedule/,$p' | head -120
echo "### issue 28 baselines (fast-decode DB)"
$bin bench --cache-dir /tmp/c --db reports/h100/fast-decode/tuning.db --heads 128 --batch 32 --seq-len 16384
$bin bench --cache-dir /tmp/c --db reports/h100/fast-decode/tuning.db --no-ceilings --heads 128 --batch 128 --seq-len 4096,1024
$bin bench --cache-dir /tmp/c --db reports/h100/fast-decode/tuning.db --no-ceilings --heads 128 --batch 8 --seq-len 16384
$bin bench --cache-dir /tmp/c --db reports/h100/fast-decode/tuning.db --no-ceilings --heads 16 --sq 1,8 --batch 32 --seq-len 16384
} 2>&1 | tee $OUT/s17a.txt
