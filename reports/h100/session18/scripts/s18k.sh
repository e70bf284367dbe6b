#!/usr/bin/env bash
# session 18: test_gpu_prefill with the wgmma path at qk 128 / v 64 too
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 300 ctest -R test_gpu_prefill -V > $OUT/test_gpu_prefill.txt 2>&1); echo "ctest rc=$?"
grep -E "BAD|D=128|cases passed|checks, " $OUT/test_gpu_prefill.txt | cut -c1-170 | head -14
