#!/usr/bin/env bash
# session 18: the A-operand keep-alive fix: sweep-verify, then the GPU test and the shapes
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for i in 1 2 3; do
  timeout 150 build/mla-tune sweep --config .deps/pchk/plans/chk.yaml --db /tmp/kF$i.db 2>&1 | tee $OUT/sweep-kF.txt | grep -iE "wrong|sweep wgmma" | head -8
done
(cd build && timeout 300 ctest -R test_gpu_prefill -V > $OUT/test_gpu_prefill.txt 2>&1); echo "ctest rc=$?"
grep -E "BAD|passed|failed" $OUT/test_gpu_prefill.txt | cut -c1-160 | head -20
for v in tile_q=128,kv_tile=128,block_threads=256,mma=2 tile_q=128,kv_tile=64,block_threads=256,mma=2; do
  timeout 120 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 10 --variant $v 2>&1 | tee -a $OUT/bench.txt | grep -v "^#" | tail -4
done
