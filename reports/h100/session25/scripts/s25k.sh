#!/usr/bin/env bash
# session 25, run 11: the GPU tests run 10's time limit cut (every one but test_gpu_mla and
# test_gpu_backend, which passed there)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 540 ctest -L gpu -E "test_gpu_mla|test_gpu_backend" --output-on-failure 2>&1) > $OUT/ctest-gpu-rest.txt
grep -E "tests passed|Test +#|SKIP|Failed|FAIL|cases|checks" $OUT/ctest-gpu-rest.txt | tail -14
