#!/usr/bin/env bash
# session 19: fp8 prefill with 2^x in f16x2 and the warpgroups' ping-pong: the GPU test, then A/B (ping-pong off
# through MLA_TUNE_KERNEL_DIR=.deps/k-nopp, the same tree with PW_PINGPONG 0), fp8 and bf16
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 300 ./tests/test_gpu_prefill > $OUT/test_gpu_prefill.txt 2>&1); echo "prefill test rc=$?"
grep -E "BAD|passed|failed|checks" $OUT/test_gpu_prefill.txt | head -20
for round in 1 2; do
for tree in main nopp; do
  for dt in fp8e4m3 bf16; do
    echo "== round $round tree $tree $dt"
    if [ $tree = nopp ]; then export MLA_TUNE_KERNEL_DIR=$PWD/.deps/k-nopp; else unset MLA_TUNE_KERNEL_DIR; fi
    timeout 150 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 10 --q-dtype $dt --kv-dtype $dt $([ $round = 2 ] && echo --no-ceilings) 2>&1 | tee -a $OUT/bench-ab.txt | grep -v "^#" | cut -c1-80
  done
done
done
