#!/usr/bin/env bash
# session 30, run 5 (H200): issue 27 - where run's cost over the C call goes (python-parts.py, two
# processes), and bench_overhead.py again (two processes per shape); the references' shared row
# (kernels/attention_row.c) under test_gpu_prefill
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for i in 1 2; do echo "== process $i"; MLATUNE_LIBRARY=build/libmlatune.so timeout 60 taskset -c $((4 + i)) \
  python3 reports/h200/session30/scripts/python-parts.py 2>&1 | grep -v "^mla-tune:"; done > $OUT/run5-python-parts.txt
cat $OUT/run5-python-parts.txt
for i in 1 2; do for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  echo "== $shape process $i"; PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 taskset -c $((4 + i)) \
    python3 python/bench_overhead.py $shape 2>&1 | tail -4
done; done > $OUT/run5-python-overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/run5-python-overhead.txt
timeout 120 build/tests/test_gpu_prefill > $OUT/run5-test-gpu-prefill.txt 2>&1; echo "test_gpu_prefill rc=$?"
tail -2 $OUT/run5-test-gpu-prefill.txt
