#!/usr/bin/env bash
# session 19, first run: the GEMM wrapper, decode at chunk-sized Sq against the reference, a first crossover grid
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 120 ctest -R test_gpu_gemm -V > $OUT/test_gpu_gemm.txt 2>&1); echo "gemm rc=$?"
grep -E "ok|FAIL|checks" $OUT/test_gpu_gemm.txt | head
(cd build && MLA_TUNE_TEST_FOCUS=chunks MLA_TUNE_TEST_CASES=48 timeout 300 ./tests/test_gpu_mla > $OUT/test_gpu_mla-chunks.txt 2>&1); echo "mla chunks rc=$?"
grep -E "FAIL|passed|failed|checks" $OUT/test_gpu_mla-chunks.txt | head -30
timeout 240 build/mla-tune crossover --no-store --heads 128,16 --context 4096,65536 --sq 1,16,64,128,256,512 --reps 5 --csv $OUT/xo-a.csv 2>&1 | tee $OUT/crossover-a.txt
