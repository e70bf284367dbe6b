#!/usr/bin/env bash
# session 28, run 6 (H200): issue 27 - Plan.run's engine-form function (python/mlatune/_fast.py):
# the Python tests with torch (python_cpu: real tensor guards on CPU tensors; python_gpu: results,
# graph replays, the C path), then python/bench_overhead.py, which times run with and without the
# fast path in the same process (plans of their own), three processes per shape
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 200 ctest -R python --output-on-failure -V 2>&1) > $OUT/ctest-python.txt
grep -E "tests passed|Test +#|Ran |OK|FAILED|SKIP" $OUT/ctest-python.txt | tail -12
{
for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  for pin in "taskset -c 3" "taskset -c 3" "" ""; do
    echo "== $shape ${pin:-unpinned}"
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 $pin python3 python/bench_overhead.py $shape
  done
done
} > $OUT/overhead.txt 2>&1
grep -E "^==|over the C call|without the fast" $OUT/overhead.txt
