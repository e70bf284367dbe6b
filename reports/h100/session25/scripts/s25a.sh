#!/usr/bin/env bash
# session 25, run 1 (issue 28): what holds 128 heads B=32 x 16384 at ~272 us.
#  1. tuner/probes/pair-stream.cu: the 64-row path's data movement alone (two row tiles per
#     request reading the same chunks, 2 stages, chunks held a set time), with L2 cache
#     hints, without sharing, and the two tiles as a cluster with multicast copies
#  2. the SM clock and power while the bench runs the shipped choice (throttling)
#  3. Nsight Compute: the breakdown of the memory and SM throughput of one decode launch,
#     the overlapped (wg_schedule=1, shipped) and plain schedules
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 150 build/pair-stream > $OUT/pair-stream.txt 2>&1; cat $OUT/pair-stream.txt
W=tile_q=64,kv_granularity=64,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0
{
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 50 > $OUT/clocks.csv &
  SMI=$!
  timeout 60 build/mla-tune bench --no-ceilings --reps 200 --heads 128 --batch 32 --seq-len 16384 --variant "$W,wg_schedule=1"
  kill $SMI
} > $OUT/bench-clocks.txt 2>&1
cat $OUT/bench-clocks.txt | cut -c1-150
sort -t, -k1 -n $OUT/clocks.csv | awk -F, 'NR>1{print $1}' | sort -n | uniq -c | sort -k2 -n | tail -12
M1=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
M2=breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
for v in "$W,wg_schedule=1" "$W,wg_schedule=0"; do for M in $M1 $M2; do
  echo "== $v"
  timeout 100 /usr/local/cuda/bin/ncu --clock-control none --metrics $M -k regex:'^mla_decode' --launch-skip 3 -c 1 \
    build/mla-tune bench --no-ceilings --warmup 2 --reps 3 --heads 128 --batch 32 --seq-len 16384 --variant "$v" 2>&1 |
    grep -E "^  mla_|^    [a-z]|ERR|rror"
done; done > $OUT/ncu-breakdown.txt 2>&1
cat $OUT/ncu-breakdown.txt
