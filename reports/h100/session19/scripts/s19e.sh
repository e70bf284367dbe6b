#!/usr/bin/env bash
# session 19: the wgmma prefill path with a producer warp of its own: the GPU test, then every variant in fp8 and bf16
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 300 ./tests/test_gpu_prefill > $OUT/test_gpu_prefill.txt 2>&1); echo "prefill test rc=$?"
grep -E "BAD|passed|failed|checks" $OUT/test_gpu_prefill.txt | head -20
for dt in fp8e4m3 bf16; do
for v in tile_q=128,kv_tile=128,block_threads=256,mma=2 tile_q=128,kv_tile=64,block_threads=256,mma=2 tile_q=64,kv_tile=128,block_threads=128,mma=2 tile_q=64,kv_tile=64,block_threads=128,mma=2; do
  echo "== $dt $v"
  timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 5 --no-ceilings --q-dtype $dt --kv-dtype $dt --variant $v 2>&1 | tee -a $OUT/bench-ws.txt | grep -v "^#" | grep -v "^ *N \|device" | cut -c1-90
done
done
