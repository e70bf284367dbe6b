#!/usr/bin/env bash
# session 32, run 2 (H200): where the persistent prefill form's per-tile cost goes (~4.3 us a tile at
# 128 heads whatever the request length, run 1): Nsight Compute's speed of light, pipes, warp states and
# per-instruction stall samples of one launch at 32 x 256 (1.5 key tiles a tile) and 1 x 8192
# (32.5: steady state), bf16 causal, 128 heads
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
NCU=/usr/local/cuda/bin/ncu
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1"
G="tile_q=128,kv_tile=128,block_threads=256,mma=2"
prof() { # name variant requests tokens
  local name=$1 v=$2 req=$3
  timeout 150 $NCU -k regex:'^mla_prefill$' -c 1 --launch-skip 1 --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
    build/mla-tune bench --prefill --warmup 1 --reps 3 --no-ceilings --heads 128 --tokens 8192 --requests $req --variant "$v" \
    > $OUT/run2-ncu-$name.txt 2>&1
  echo "== $name rc=$?"; grep -E "Duration|Throughput|Pipe|Stall|Issued|Eligible|Active Warps|L2 Hit|Mem Busy|Max Bandwidth|Registers" $OUT/run2-ncu-$name.txt | head -40
}
prof persistent-32x256 "$P" 32
prof persistent-8x1024 "$P" 8
prof grid-1x8192 "$G" 1
timeout 200 $NCU -k regex:'^mla_prefill$' -c 1 --launch-skip 1 --clock-control none --section SourceCounters --section WarpStateStats \
  --page source --csv --print-source sass \
  build/mla-tune bench --prefill --warmup 1 --reps 3 --no-ceilings --heads 128 --tokens 8192 --requests 32 --variant "$P" \
  > $OUT/run2-source-persistent-32x256.csv 2>&1
echo "source page rc=$? $(wc -l < $OUT/run2-source-persistent-32x256.csv) lines"
python3 tuner/stalls-top.py $OUT/run2-source-persistent-32x256.csv 30 2>&1 | head -60
