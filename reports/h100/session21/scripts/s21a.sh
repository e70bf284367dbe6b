#!/usr/bin/env bash
# session 21, run 1: the fp8 64-row path (wgmma64_fp8.cu): its GPU checks
# (test_gpu_mla focused on the 64-row points, every dtype), then its time
# against the 32-row transposed path and bf16 KV at 64 and 128 heads
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/nvidia-smi.csv 2>&1
MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=72 timeout 220 build/tests/test_gpu_mla > $OUT/focus.txt 2>&1
echo "focus rc=$?"; grep -E "FAIL|cases passed|tile_q 64|checks" $OUT/focus.txt | head -20
grep -E "kv=fp8" $OUT/focus.txt | grep "tile_q=64" | cut -c1-120 | head -12
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20 --no-ceilings"
V="kv_granularity=16,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,groups_per_cu=0"
{
echo "## the system DB (fp8: 32-row transposed; bf16: 64-row)"
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3,bf16 --batch 32,128 --seq-len 16384
echo "## fp8 on the 64-row path, 1 split"
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3 --batch 32,128 --seq-len 16384 --variant "tile_q=64,num_splits=1,split_reduce=0,$V"
echo "## fp8 on the 64-row path, 2 splits (cluster merge)"
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3 --batch 32 --seq-len 16384 --variant "tile_q=64,num_splits=2,split_reduce=1,$V"
echo "## fp8 on the 64-row path, q fp16, fnuz"
timeout 60 $B --heads 128 --kv-dtype fp8e4m3fnuz --q-dtype fp16 --batch 128 --seq-len 16384 --variant "tile_q=64,num_splits=1,split_reduce=0,$V"
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-90,180-330
