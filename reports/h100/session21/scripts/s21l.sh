#!/usr/bin/env bash
# session 21, run 14: issue 27's per-call cost of the Python package over the C call, measured
# again on this session's code (twice per shape, to see the run-to-run spread)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for i in 1 2; do
  for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 120 python3 python/bench_overhead.py $shape \
      >> $OUT/overhead.txt 2>&1
  done
done
grep -E "^shape|over the C call" $OUT/overhead.txt
