#!/usr/bin/env bash
# session 21, run 8: warpgroup 1 converts half of the next chunk during warpgroup 0's scores and
# the other half while its own P V products run (was: all of it before P); the GPU checks of the
# 64-row points (focused draw) and fp8 times against run 5's
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=72 timeout 220 build/tests/test_gpu_mla > $OUT/focus.txt 2>&1
echo "focus rc=$?"; grep -E "FAIL|cases passed|tile_q 64|checks" $OUT/focus.txt | head -8
B="build/mla-tune bench --no-ceilings --reps 20 --system-db build/example-prefix/share/mla-tune/tuning.db"
V="kv_granularity=16,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,groups_per_cu=0"
{
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3 --batch 8,32,128 --seq-len 16384 --variant "tile_q=64,num_splits=1,split_reduce=0,$V"
timeout 60 $B --heads 128 --kv-dtype fp8e4m3 --batch 32 --seq-len 16384 --variant "tile_q=64,num_splits=2,split_reduce=1,$V"
timeout 60 $B --heads 128 --kv-dtype fp8e4m3 --batch 32 --lengths long-tail,one-long:32768:1024
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
