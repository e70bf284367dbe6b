#!/usr/bin/env bash
# session 17, final: the GPU suite on the session's code, then the ragged bench through the shipped DBs
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
git log --oneline -1 > $OUT/commit.txt 2>/dev/null
(cd build && timeout 470 ctest -L gpu --output-on-failure -V 2>&1) > $OUT/ctest-gpu.txt; echo "ctest rc $?"
grep -E "tests passed|Test +#|cases passed|fnuz KV cases|checks,|FAIL|prefill.*cases|failed" $OUT/ctest-gpu.txt | cut -c1-400 | head -40
bin=build/mla-tune
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
{
timeout 100 $bin bench --system-db reports/h100/fast-decode/tuning.db --db reports/h100/ragged/tuning.db --no-ceilings --heads 16,128 --batch 8,32,128 --lengths $mix
} > $OUT/ragged-bench.txt 2>&1
grep -E "^ +(16|128) " $OUT/ragged-bench.txt | awk '{print $1, $3, $4, $5, $7, $13, $14}'
