#!/usr/bin/env bash
# session 18: stall reasons of the wgmma prefill (128 heads x 8192 causal)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
v=${V:-tile_q=128,kv_tile=128,block_threads=256,mma=2}
timeout 200 ncu -k mla_prefill --launch-skip 2 --launch-count 1 --section WarpStateStats --section InstructionStats --print-details all \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__cycles_elapsed.avg \
  build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests 1 --causal --reps 3 --warmup 1 --no-ceilings --variant $v > $OUT/ncu-stalls.txt 2>&1
grep -iE "stall|pipe|inst_executed|cycles_elapsed" $OUT/ncu-stalls.txt | head -60
