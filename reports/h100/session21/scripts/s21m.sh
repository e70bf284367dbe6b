#!/usr/bin/env bash
# session 21, run 15: after the compile loops moved onto mt_parallel_for (0109de2): a cold plan
# (empty code cache) and calls through it, bench_smoke and the Python GPU tests
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
rm -rf /tmp/coldcache
s=$(date +%s%N)
timeout 120 build/mla-tune bench --no-ceilings --cache-dir /tmp/coldcache --page-size 16 --heads 128 --batch 1,8 \
  --seq-len 1024 --reps 5 --system-db build/example-prefix/share/mla-tune/tuning.db > $OUT/cold.txt 2>&1
e=$(date +%s%N)
echo "cold plan and two timed rows: $(( (e - s) / 1000000 )) ms" >> $OUT/cold.txt
grep -v "^mla-tune: no tuning" $OUT/cold.txt | cut -c1-110
(cd build && timeout 200 ctest -R 'bench_smoke|python_gpu' --output-on-failure) > $OUT/ctest.txt 2>&1; echo "ctest rc=$?"; tail -4 $OUT/ctest.txt
