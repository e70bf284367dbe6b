#!/usr/bin/env bash
# gpu-run.sh - runs ON the GPU machine (device tool), from the repository
# root, with build/ and .deps/ carried (see gpu-prepare.sh).  Writes logs to
# $OUT (the device tool brings them back).
#
#   tests/gpu-run.sh            devices + every GPU-labelled test
#   tests/gpu-run.sh EXTRA...   then runs EXTRA as a command (bench, sweep)
#   SKIP_GPU_TESTS=1 tests/gpu-run.sh EXTRA...   only EXTRA
#   GPU_TESTS=REGEX tests/gpu-run.sh            only the GPU tests REGEX names
#     (the whole set takes ~10 min on an H100, more than one device call
#     allows: run it in two, e.g. GPU_TESTS='mla|backend|gemm' then
#     GPU_TESTS='prefill|bench|python')
set -uo pipefail
OUT=${OUT:-/tmp/mla-tune-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the build tree was configured at /work/main: make that path valid here
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1
build/mla-tune devices 2>&1 | tee "$OUT/devices.txt"
status=0
if [ -z "${SKIP_GPU_TESTS:-}" ]; then
  (cd build && ctest -L gpu ${GPU_TESTS:+-R "$GPU_TESTS"} --output-on-failure -V 2>&1) > "$OUT/ctest-gpu.txt"
  status=$?
fi
[ -f "$OUT/ctest-gpu.txt" ] && grep -E "tests passed|Test +#|JIT compile|axpy over|cases passed|SKIP" "$OUT/ctest-gpu.txt"
if [ $# -gt 0 ]; then
  "$@" 2>&1 | tee "$OUT/extra.txt"
fi
exit $status
