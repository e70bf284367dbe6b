#!/usr/bin/env bash
# session 18: where 8 x 1024-token prefill loses (Nsight Compute, 128 heads, the kept kernel), against 1 x 8192
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for r in 8 1; do
timeout 200 ncu -k mla_prefill --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --print-details all \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_elapsed.avg,dram__bytes_read.sum,lts__t_bytes.sum \
  build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests $r --causal --reps 3 --warmup 1 --no-ceilings > $OUT/ncu-r$r.txt 2>&1
echo "== requests $r"; grep -iE "Duration|hmma|cycles_active|cycles_elapsed|dram__bytes|lts__t_bytes|Stall (Barrier|Wait|GMMA|Long|MIO|Not Sel|Math|Short|Dispatch|No Inst)" $OUT/ncu-r$r.txt | head -20
done
