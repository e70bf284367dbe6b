#!/usr/bin/env bash
# session 20, run 8: the Python GPU tests (cut by run 7's limit), test_gpu_mla again (its
# variant draw's helpers shared, decode_variants.h), and fp8 / 8-32-head calls timed through
# the system DB an install of this tree ships (build/example-prefix)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20 --no-ceilings"
{
timeout 60 $B --heads 32,64,128 --kv-dtype fp8e4m3 --batch 32,128 --seq-len 16384
timeout 40 $B --heads 32,128 --kv-dtype fp8e4m3 --page-size 16 --batch 1,128 --seq-len 4096
} > $OUT/bench-final.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench-final.txt | cut -c1-80,180-330
(cd build && timeout 200 ctest -R python_gpu --output-on-failure) > $OUT/python-gpu.txt 2>&1; echo "python_gpu rc=$?"; tail -3 $OUT/python-gpu.txt
(cd build && timeout 240 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla2.txt 2>&1; echo "gpu mla rc=$?"
grep -E "cases passed|tile_q 32" $OUT/gpu-mla2.txt
