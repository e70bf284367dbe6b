#!/usr/bin/env bash
# session 16 final run C: views plans of split grids back on the direct epilogue; test_gpu_mla; views vs plain
set -uo pipefail
OUT=${OUT:-/tmp/o}
bin=build/mla-tune sys=reports/h100/fast-decode/tuning.db
(cd build && ctest -R test_gpu_mla --output-on-failure -V 2>&1 | grep -E "cases passed|fnuz KV cases|checks,|CHECK failed" | cut -c1-400)
for r in 1 2; do
  for v in "" --views; do
    echo "### round $r plain/views: $v"
    $bin bench --system-db $sys --no-ceilings $v --heads 16 --batch 1,8,32,128 --seq-len 1024,16384 | grep -E "^ +16"
  done
done
