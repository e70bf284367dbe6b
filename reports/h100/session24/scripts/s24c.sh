#!/usr/bin/env bash
# session 24, run 4: issue 27's per-call cost of the Python path over the C call
# (python/bench_overhead.py), three times per shape pinned to one core (taskset -c 3)
# and once unpinned, to see how much of the spread between processes is the host's
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  for pin in "taskset -c 3" "taskset -c 3" "taskset -c 3" ""; do
    echo "== $shape ${pin:-unpinned}"
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 100 $pin python3 python/bench_overhead.py $shape
  done
done
} > $OUT/overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/overhead.txt
