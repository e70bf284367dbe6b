#!/usr/bin/env bash
# session 31, run 3 (H200): why the length-aware reduce takes 8-17 us at 128 heads B=32 (Nsight Compute
# sections on mla_reduce: launch, occupancy, memory, warp states), and the decode kernel's own duration
# with piece_merge 0 / 4 (is the merge in decode the cost?)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B="build/mla-tune bench --no-ceilings --warmup 1 --reps 3 --heads 128 --batch 32"
BASE="tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1,kv_granularity=64"
NCU=/usr/local/cuda/bin/ncu
for mix in uniform-random:256-8192 long-tail; do
  timeout 150 $NCU --clock-control none --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SpeedOfLight -k regex:'^mla_reduce' -s 1 -c 1 \
    $B --lengths $mix --variant "$BASE,request_cost=256" > $OUT/run3-ncu-reduce-${mix%%:*}.txt 2>&1
  echo "== reduce $mix rc=$?"; grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Achieved Occupancy|Grid Size|Registers|Stall|Warp Cycles Per Issued|One or More" $OUT/run3-ncu-reduce-${mix%%:*}.txt | head -24
done
for pm in 0 4; do
  timeout 150 $NCU --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_' -c 6 \
    $B --lengths uniform-random:256-8192 --variant "$BASE,request_cost=256,piece_merge=$pm" 2>&1 |
    grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v pm=$pm '{print "piece_merge=" pm, $1, $NF}'
done | tee $OUT/run3-ncu-merge.txt
# the trace build: where a reduce work-group's time goes (MT_TRACE marks: start, after the dependency wait, end)
