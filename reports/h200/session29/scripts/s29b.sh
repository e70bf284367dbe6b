#!/usr/bin/env bash
# session 29, run 2 (H200): the persistent form again after ptxas's wgmma serialisation was taken out
# (run 1: every persistent variant serialised, 1.2-1.45x slower than the grid form): the issue-29 shapes
# timed grid form against persistent form, then test_gpu_prefill whole (run 1 stopped it at 240 s)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,32"
run() { dt=$1; shift; for v in "$@"; do echo "== $dt $v"; timeout 60 $B --heads 16,128 --q-dtype $dt --kv-dtype $dt --variant "$v" 2>&1 | grep -vE "^#|^$|  N  reqs" | tail -6; done; }
{
run bf16 "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1" "tile_q=128,kv_tile=128,block_threads=256,mma=2" \
         "tile_q=128,kv_tile=64,block_threads=256,mma=2,persistent=1" "tile_q=64,kv_tile=64,block_threads=128,mma=2,persistent=1"
run fp8e4m3 "tile_q=64,kv_tile=64,block_threads=128,mma=2,persistent=1" "tile_q=64,kv_tile=64,block_threads=128,mma=2" \
         "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1" "tile_q=64,kv_tile=128,block_threads=128,mma=2,persistent=1"
} 2>&1 | tee $OUT/run2-bench-prefill.txt
timeout 400 build/tests/test_gpu_prefill > $OUT/run2-test-gpu-prefill.txt 2>&1; echo "test_gpu_prefill rc=$?"
grep -E "^BAD|cases passed|checks|persistent form" $OUT/run2-test-gpu-prefill.txt | head -20
