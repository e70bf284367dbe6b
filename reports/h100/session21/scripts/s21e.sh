#!/usr/bin/env bash
# session 21, run 7: Nsight Compute on the fp8 64-row path against the bf16 one (128 heads,
# B=128 x 16384: which pipe bounds the conversion; run 6's attempt passed --reps 2, refused),
# and the uniform-random 256-8192 batches again now that a call of longest >= 1.5x the mean
# is ragged to the dispatcher (was 2x; these have 1.94x)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20 --no-ceilings"
W="kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis"
for kv in fp8e4m3 bf16; do
  timeout 150 ncu -k regex:mla_decode --launch-skip 2 -c 1 $S build/mla-tune bench --heads 128 --kv-dtype $kv --batch 128 \
    --seq-len 16384 --variant "tile_q=64,$W" --reps 3 --warmup 1 --no-ceilings > $OUT/ncu-$kv.txt 2>&1
  echo "ncu $kv rc=$?"
done
{
echo "## uniform-random 256-8192 and the other mixes through the system DB (ragged from 1.5x the mean)"
timeout 90 $B --heads 64,128 --kv-dtype fp8e4m3,bf16 --batch 128 --lengths uniform-random:256-8192
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
