#!/usr/bin/env bash
# session 28, run 8 (H200): why the length-aware decode takes 23.3 us where the uniform twin's grid
# takes 20.5 at 16 heads B=8 (run 5): Nsight Compute metrics of both decode kernels (the H200 ragged
# DB's choices: long-tail and its twin), the reduces' too
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
V=reports/h200/ragged/tuning.db
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__grid_size,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
for a in "--lengths long-tail" "--seq-len 4783"; do
  echo "== $a"
  timeout 90 /usr/local/cuda/bin/ncu --clock-control none --metrics $M -k regex:'^mla_(decode|reduce)' -c 2 \
    build/mla-tune bench --db $V --no-ceilings --warmup 1 --reps 3 --heads 16 --batch 8 $a 2>&1 |
    grep -E "^  mla_|^    [a-z]" | sed -E 's/ +/ /g'
done | tee $OUT/ncu-metrics-16h-b8.txt
