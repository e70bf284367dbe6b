#!/usr/bin/env bash
# session 21, run 6: the Python GPU tests on the session's code; Nsight Compute on the fp8 64-row
# path against the bf16 one (128 heads, B=128 x 16384: which pipe bounds the conversion); and
# uniform-random 256-8192 batches (longest < 2x the mean: not "ragged" to the dispatcher) through
# the system DB's fixed splits against the length-aware form
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 200 ctest -R python_gpu --output-on-failure) > $OUT/python-gpu.txt 2>&1; echo "python_gpu rc=$?"; tail -3 $OUT/python-gpu.txt
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20 --no-ceilings"
W="kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
A="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis"
for kv in fp8e4m3 bf16; do
  timeout 120 ncu -k regex:mla_decode --launch-skip 2 -c 1 $S build/mla-tune bench --heads 128 --kv-dtype $kv --batch 128 \
    --seq-len 16384 --variant "tile_q=64,$W" --reps 2 --warmup 1 --no-ceilings > $OUT/ncu-$kv.txt 2>&1
  echo "ncu $kv rc=$?"
done
grep -E "Duration|Pipe|Issue Slots|Executed Ipc|Shared|L2 Cache Throughput|DRAM Throughput|Stall|Warp Cycles" $OUT/ncu-fp8e4m3.txt | head -40
{
echo "## uniform-random 256-8192, B=128 and 32: the system DB, then the length-aware form"
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3,bf16 --batch 32,128 --lengths uniform-random:256-8192
timeout 60 $B --heads 64,128 --kv-dtype fp8e4m3,bf16 --batch 32,128 --lengths uniform-random:256-8192 --variant "$A"
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
