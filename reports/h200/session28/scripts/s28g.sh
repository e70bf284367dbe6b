#!/usr/bin/env bash
# session 28, run 7 (H200): the Python tests with torch on the final text (test_torch_cpu's set_
# past its storage's end fixed; the fast path of run 6 not kept)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 200 ctest -R python --output-on-failure -V 2>&1) > $OUT/ctest-python.txt
grep -E "tests passed|Test +#|Ran |^70: OK|^71: OK|FAILED|ERROR" $OUT/ctest-python.txt | tail -12
