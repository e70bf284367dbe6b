#!/usr/bin/env bash
# session 25, run 12 (issue 27): the per-call cost of the Python path over the C call
# (python/bench_overhead.py) with the host waiting for the GPU between turns by
# torch.cuda.synchronize (the thread may sleep) and by polling the stream (the core kept
# busy), alternating, pinned to one core as in session 24's run 4
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  for wait in sync spin sync spin; do
    echo "== $shape --wait $wait"
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 100 taskset -c 3 python3 python/bench_overhead.py $shape --wait $wait --reps 50
  done
done
} > $OUT/overhead-wait.txt 2>&1
grep -E "^==|over the C call|^C call  |^run  " $OUT/overhead-wait.txt | cut -c1-160
