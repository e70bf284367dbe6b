#!/usr/bin/env bash
# session 24, run 7: why the length-aware decode takes 64 us where the fixed-split grid takes
# 47-50 us for the same cuts (128 heads, B=32 x 2016, every request in two pieces; run 6):
# Nsight Compute metrics of one decode launch of each (DRAM bytes, L2 hit rate, grid, registers,
# throughput), with replay (the metrics need several passes)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2
LA_A="tile_q=64,kv_granularity=64,num_splits=1,$W,split_reduce=0,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2"
G2="tile_q=64,kv_granularity=16,num_splits=2,$W,split_reduce=0,groups_per_cu=0"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed
for v in "$LA_A" "$G2"; do
  echo "== $v"
  timeout 200 /usr/local/cuda/bin/ncu --metrics $M -k regex:'^mla_decode' --launch-skip 3 -c 1 \
    build/mla-tune bench --no-ceilings --warmup 2 --reps 3 --heads 128 --batch 32 --seq-len 2016 --variant "$v" 2>&1 |
    grep -E "^  mla_|^    [a-z]"
done > $OUT/ncu-metrics.txt 2>&1
cat $OUT/ncu-metrics.txt
