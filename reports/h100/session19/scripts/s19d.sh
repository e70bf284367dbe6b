#!/usr/bin/env bash
# session 19: fp8 prefill per variant (the fp8 ceiling measured), then Nsight Compute on the default fp8 kernel
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
F="--q-dtype fp8e4m3 --kv-dtype fp8e4m3"
timeout 100 build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests 1 --causal --reps 10 $F 2>&1 | tee $OUT/bench-fp8-ceiling.txt | grep -v "^#" | cut -c1-100
for v in tile_q=128,kv_tile=128,block_threads=256,mma=2 tile_q=128,kv_tile=64,block_threads=256,mma=2 tile_q=64,kv_tile=128,block_threads=128,mma=2 tile_q=64,kv_tile=64,block_threads=128,mma=2; do
  timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 5 --no-ceilings $F --variant $v 2>&1 | tee -a $OUT/bench-fp8-variants.txt | grep -v "^#" | grep -v "^ *N " | cut -c1-90
done
v=tile_q=128,kv_tile=128,block_threads=256,mma=2
for dt in fp8e4m3 bf16; do
timeout 200 ncu -k mla_prefill --launch-skip 2 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section Occupancy \
  build/mla-tune bench --prefill --heads 128 --tokens 8192 --requests 1 --causal --reps 3 --warmup 1 --no-ceilings --q-dtype $dt --kv-dtype $dt --variant $v > $OUT/ncu-$dt.txt 2>&1
echo "== ncu $dt"; grep -E "Duration|Throughput|Tensor|Pipe|Stall|stall|Warp Cycles|Issue|Achieved|Registers" $OUT/ncu-$dt.txt | head -40
done
