#!/usr/bin/env bash
# session 25, run 10: the session's last code - every GPU test (ctest -L gpu: test_gpu_mla,
# test_gpu_prefill, test_gpu_backend, bench_smoke, python_gpu, ...), then issue 22's table and the
# uniform targets through the shipped DBs merged as an install merges them (prefill DB included)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 400 ctest -L gpu --output-on-failure 2>&1) > $OUT/ctest-gpu.txt
grep -E "tests passed|Test +#|SKIP|Failed|FAIL" $OUT/ctest-gpu.txt | tail -14
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20"
{
timeout 150 $B --heads 16,128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --no-ceilings
timeout 60 $B --heads 16 --batch 1,128 --seq-len 16384
timeout 60 $B --heads 128 --batch 8,32 --seq-len 16384 --no-ceilings
timeout 60 $B --heads 128 --batch 128 --seq-len 1024,4096 --no-ceilings
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | awk '{print $1,$3,$4,$7,$10,$13}' | cut -c1-110
