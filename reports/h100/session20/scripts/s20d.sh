#!/usr/bin/env bash
# session 20, run 4: the transposed fp8 path at 32 rows (tile_q 32) - verified and timed
# against 16 rows by a sweep (reports/h100/session20/plans/fp8-t32.yaml), then the decode
# GPU test (random variants of the whole space against the CPU reference)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 200 build/mla-tune sweep --config reports/h100/session20/plans/fp8-t32.yaml --db $OUT/t32.db > $OUT/t32-sweep.txt 2>&1
echo "t32 rc=$?"; grep -v "^key" $OUT/t32-sweep.txt | tail -25 | cut -c1-250
sqlite3 $OUT/t32.db "select status, count(*) from measurements group by status" 2>/dev/null
build/mla-tune show --db $OUT/t32.db --system-db $OUT/t32.db > $OUT/t32-show.txt 2>&1
(cd build && timeout 300 ctest -R test_gpu_mla --output-on-failure) > $OUT/gpu-mla.txt 2>&1
echo "gpu mla rc=$?"; grep -E "cases passed|FAIL|failed|mismatch" $OUT/gpu-mla.txt | head -20
