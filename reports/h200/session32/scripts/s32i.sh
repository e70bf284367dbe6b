#!/usr/bin/env bash
# session 32, run 9 (H200): where the persistent prefill form's time goes now (producer warpgroup, 16-byte
# stores of out): speed of light, pipes, warp states and the per-instruction stall samples at 128 heads x
# 8 x 1024, bf16 causal
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
NCU=/usr/local/cuda/bin/ncu
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16"
A="build/mla-tune bench --prefill --warmup 1 --reps 3 --no-ceilings --heads 128 --tokens 8192 --requests 8 --variant $P"
timeout 150 $NCU -k regex:'^mla_prefill$' -c 1 --launch-skip 1 --clock-control none --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section WarpStateStats --section MemoryWorkloadAnalysis $A > $OUT/run9-ncu-8x1024.txt 2>&1
echo "rc=$?"; grep -E "Duration|Throughput|highest-utilized|Stall|Issued|Eligible|L2 Hit|Warp Cycles" $OUT/run9-ncu-8x1024.txt | head -24
timeout 200 $NCU -k regex:'^mla_prefill$' -c 1 --launch-skip 1 --clock-control none --section SourceCounters \
  --section WarpStateStats --page source --csv --print-source sass $A > $OUT/run9-source-8x1024.csv 2>&1
echo "source page rc=$? $(wc -l < $OUT/run9-source-8x1024.csv) lines"
python3 tuner/stalls-top.py $OUT/run9-source-8x1024.csv 30 > $OUT/run9-source-8x1024-top.txt 2>&1; head -45 $OUT/run9-source-8x1024-top.txt
