#!/usr/bin/env bash
# session 18: the four wgmma prefill points on the shapes and a chunk, then Nsight Compute on 128 heads x 8192
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
v=tile_q=128,kv_tile=128,block_threads=256,mma=2
timeout 120 build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests 1,8,32 --context 4096 --causal --non-causal --reps 10 --variant $v 2>&1 | tee -a $OUT/bench.txt | grep -v "^#" | tail -12
timeout 200 ncu -k mla_prefill --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section Occupancy \
  build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests 1 --causal --reps 3 --warmup 1 --no-ceilings --variant $v > $OUT/ncu.txt 2>&1
grep -E "Duration|Throughput|Tensor|Pipe|Stall|stall|Warp Cycles|Issue|Achieved|Registers" $OUT/ncu.txt | head -40
