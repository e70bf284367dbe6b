#!/usr/bin/env bash
# session 18 final: every GPU test, then the prefill plan swept into a DB and the shapes benched through it
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export OUT
timeout 420 tests/gpu-run.sh > $OUT/gpu-run.txt 2>&1; echo "gpu-run rc=$?"
grep -E "tests passed|cases passed|checks, " $OUT/ctest-gpu.txt | head -12
grep -E "BAD|FAIL" $OUT/ctest-gpu.txt | head -5
timeout 240 tests/gpu-prefill-bench.sh > $OUT/prefill-bench.txt 2>&1; echo "prefill-bench rc=$?"
grep -E "sweep prefill|measured|^ *(16|128) " $OUT/prefill-bench.txt | tail -16
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 120 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8,32 --context 4096 --causal --non-causal --reps 5 2>&1 | tee $OUT/bench-context.txt | grep -v "^#" | tail -13
rm -f $OUT/*.csv $OUT/nvidia-smi.csv
