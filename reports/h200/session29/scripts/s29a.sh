#!/usr/bin/env bash
# session 29, run 1 (H200): the prefill family's persistent form (persistent=1, wgmma_persistent.cu):
# test_gpu_prefill (every form, the persistent one over the GPU's SMs and over 3), then the issue-29
# shapes timed grid form against persistent form, bf16 and fp8, 16 and 128 heads
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt 2>&1
timeout 240 build/tests/test_gpu_prefill > $OUT/run1-test-gpu-prefill.txt 2>&1; echo "test_gpu_prefill rc=$?"
grep -E "^BAD|cases passed|checks" $OUT/run1-test-gpu-prefill.txt | head -20
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,32"
for dt in bf16 fp8e4m3; do
  for v in "tile_q=128,kv_tile=128,block_threads=256,mma=2" "tile_q=64,kv_tile=64,block_threads=128,mma=2" \
           "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1" "tile_q=128,kv_tile=64,block_threads=256,mma=2,persistent=1" \
           "tile_q=64,kv_tile=128,block_threads=128,mma=2,persistent=1" "tile_q=64,kv_tile=64,block_threads=128,mma=2,persistent=1"; do
    echo "== $dt $v"
    timeout 60 $B --heads 16,128 --q-dtype $dt --kv-dtype $dt --variant "$v" 2>&1 | grep -vE "^#|^$" | tail -7
  done
done 2>&1 | tee $OUT/run1-bench-prefill.txt
