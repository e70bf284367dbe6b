#!/usr/bin/env bash
# session 31, run 8 (H200): for the next attempt at issue 22's gap (main's kernels): where the length-aware
# reduce's instructions and stalls are (Nsight Compute source counters, warp states, instruction mix at 128
# heads B=32 uniform-random), and the length-aware decode against the twin's grid at 128 heads B=32 long-tail
# (81 against 70 us: launch, occupancy, warp states, memory)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
COMMON="num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
NCU="/usr/local/cuda/bin/ncu --clock-control none"
B="build/mla-tune bench --no-ceilings --warmup 1 --reps 3 --heads 128 --batch 32"
timeout 150 $NCU --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats \
  -k regex:'^mla_reduce' -c 1 $B --lengths uniform-random:256-8192 \
  --variant "tile_q=64,kv_granularity=64,request_cost=256,$COMMON" > $OUT/run8-ncu-reduce-source.txt 2>&1
echo "reduce rc=$?"; grep -E "Stall|stall|Issued|Executed Ipc|Branch|Warp Cycles|No Eligible|Active Warps" $OUT/run8-ncu-reduce-source.txt | head -30
S="--section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SpeedOfLight"
timeout 150 $NCU $S -k regex:'^mla_decode' -c 1 $B --lengths long-tail \
  --variant "tile_q=64,kv_granularity=64,snap_keys=512,$COMMON" > $OUT/run8-ncu-decode-ragged.txt 2>&1
echo "decode ragged rc=$?"
timeout 150 $NCU $S -k regex:'^mla_decode' -c 1 $B --seq-len 3505 \
  --variant "tile_q=64,kv_granularity=64,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=1,groups_per_cu=0,wg_schedule=1" \
  > $OUT/run8-ncu-decode-twin.txt 2>&1
echo "decode twin rc=$?"
for f in ragged twin; do echo "== $f"; grep -E "Duration|DRAM Throughput|Compute \(SM\)|L2 Hit|Grid Size|Registers Per|Achieved Occ|Warp Cycles Per Issued|Stall" $OUT/run8-ncu-decode-$f.txt | head -14; done
