#!/usr/bin/env bash
# session 20, runs 5-6: the broad sweep again after the transposed path learnt 32-row tiles
# (wgmma_t16.cu changed: its stored rows no longer match the sources, so the sweep re-measures
# them, and the fp8 keys gain the tile_q 32 variants); resumable: the DB comes from the tree
# (reports/h100/session20/broad-work.db) and goes back in $OUT; then the export and `show`.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cp reports/h100/session20/broad-work.db $OUT/broad.db
timeout ${SWEEP_S:-520} build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/broad-sweep3.txt 2>&1
echo "broad rc=$?"; grep -E "measured|skipped" $OUT/broad-sweep3.txt | tail -3
build/mla-tune show --db $OUT/broad.db --system-db $OUT/broad.db > $OUT/broad-show.txt 2>&1
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/broad-export.db; echo "export rc=$?"
build/mla-tune show --stale --db $OUT/broad-export.db --system-db $OUT/broad-export.db 2>&1 | tail -5
if [ -n "${GPU_MLA:-}" ]; then
  (cd build && timeout 260 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla.txt 2>&1
  echo "gpu mla rc=$?"; grep -E "cases passed|tile_q 32|FAIL" $OUT/gpu-mla.txt | head -20
fi
