#!/usr/bin/env bash
# session 20, run 7: the 16-head ragged keys swept again on a copy of the shipped ragged DB
# (their transposed-path choices went stale with wgmma_t16.cu's change), exported; then the GPU
# tests other than test_gpu_mla (run in s20e.sh's second call)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cp reports/h100/ragged/tuning.db $OUT/ragged.db
timeout 200 build/mla-tune sweep --config reports/h100/session20/plans/ragged-16h.yaml --db $OUT/ragged.db > $OUT/ragged-sweep.txt 2>&1
echo "ragged rc=$?"; grep -E "measured|skipped" $OUT/ragged-sweep.txt | tail -2
build/mla-tune export --arch sm_90 --db $OUT/ragged.db -o $OUT/ragged-export.db; echo "export rc=$?"
build/mla-tune show --stale --db $OUT/ragged-export.db --system-db $OUT/ragged-export.db 2>&1 | tail -2
build/mla-tune show --db $OUT/ragged-export.db --system-db $OUT/ragged-export.db > $OUT/ragged-show.txt 2>&1
(cd build && timeout 370 ctest -L gpu -R 'backend|gemm|bench|python|prefill' --output-on-failure -V) > $OUT/ctest-gpu.txt 2>&1
echo "gpu tests rc=$?"; grep -E "tests passed|Test +#|cases passed|SKIP" $OUT/ctest-gpu.txt | tail -12
