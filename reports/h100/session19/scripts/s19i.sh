#!/usr/bin/env bash
# session 19: fp8 prefill with three K / V stages (two for 16-bit): the GPU test, then the four wgmma points in fp8
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
F="--q-dtype fp8e4m3 --kv-dtype fp8e4m3"
for v in tile_q=64,kv_tile=64,block_threads=128,mma=2 tile_q=128,kv_tile=64,block_threads=256,mma=2 tile_q=64,kv_tile=128,block_threads=128,mma=2 tile_q=128,kv_tile=128,block_threads=256,mma=2; do
  timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --context 0,4096 --causal --reps 5 --no-ceilings $F --variant $v 2>&1 | tee -a $OUT/bench-3stages.txt | grep -v "^#" | grep -v "^ *N \|device" | cut -c1-90
done
(cd build && timeout 400 ./tests/test_gpu_prefill > $OUT/test_gpu_prefill.txt 2>&1); echo "prefill test rc=$?"
grep -E "BAD|passed|failed|checks" $OUT/test_gpu_prefill.txt | head -20
