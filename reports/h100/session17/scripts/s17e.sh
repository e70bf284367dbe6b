#!/usr/bin/env bash
# session 17, run: Nsight Compute on the 64-row decode kernel, 128 heads B=32 x 16384, wg_schedule 0 vs 1
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export MLA_TUNE_CACHE_DIR=$PWD/build/test-cache
NCU=/usr/local/cuda/bin/ncu
{
for w in 0 1; do
  V="tile_q=64,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=1,groups_per_cu=0,wg_schedule=$w"
  echo "### wg_schedule=$w"
  timeout 200 $NCU --clock-control none --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    -k regex:'^mla_decode' --launch-skip 3 -c 1 build/mla-tune bench --no-ceilings --warmup 3 --reps 3 --heads 128 --batch 32 --seq-len 16384 --variant "$V" > $OUT/ncu-wg$w.txt 2>&1
  grep -E "Duration|Throughput|gmma|Stall|stall|Issue|Warp Cycles|Eligible|Executed Ipc|Pipe" $OUT/ncu-wg$w.txt | grep -v "^==" | head -40; tail -5 $OUT/ncu-wg$w.txt
done
} 2>&1 | tee $OUT/s17e.txt
