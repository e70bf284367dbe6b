#!/usr/bin/env bash
# session 18, last: the prefill GPU test on the last kernel text, and python_gpu (cut by the time limit in s18h)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
(cd build && timeout 400 ctest -R "test_gpu_prefill|python_gpu" --output-on-failure -V > $OUT/ctest-gpu-last.txt 2>&1); echo "ctest rc=$?"
grep -E "Test +#|tests passed|cases passed|checks, |^59: Ran|^59: OK|FAILED" $OUT/ctest-gpu-last.txt | head
