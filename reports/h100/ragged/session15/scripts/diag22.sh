#!/usr/bin/env bash
# issue 22 diagnosis: where the length-aware per-layer call's time goes at 16 heads
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
sys=reports/h100/fast-decode/tuning.db
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
nc() { local label=$1; shift
  /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum -k regex:'^mla_' -c 60 $bin bench --no-ceilings --warmup 1 --reps 4 "$@" > $OUT/ncu-raw.txt 2>&1
  echo "== $label: $(python3 .deps/ncu-agg.py $OUT/ncu-raw.txt)"; }
{
echo "### events, LA16 pinned (ragged + uniform same keys), 16 heads"
$bin bench --no-ceilings --heads 16 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --variant $LA16
echo "### events, snap=share/2 (kernel dir copy)"
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/snaphalf $bin bench --no-ceilings --cache-dir /tmp/c-snap --heads 16 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --variant $LA16
echo "### ncu per kernel (us / DRAM MB)"
for B in 8 32 128; do
  nc "LA16 one-long B=$B" --heads 16 --batch $B --lengths one-long:32768:1024 --variant $LA16
  nc "LA16 long-tail B=$B" --heads 16 --batch $B --lengths long-tail --variant $LA16
done
nc "grid DB uniform B=128 L=1272" --system-db $sys --heads 16 --batch 128 --seq-len 1272
nc "grid DB uniform B=128 L=3568" --system-db $sys --heads 16 --batch 128 --seq-len 3568
nc "grid DB uniform B=32 L=2016" --system-db $sys --heads 16 --batch 32 --seq-len 2016
nc "grid DB uniform B=8 L=4992" --system-db $sys --heads 16 --batch 8 --seq-len 4992
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/snaphalf nc "snaphalf LA16 one-long B=128" --cache-dir /tmp/c-snap --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
} 2>&1 | tee $OUT/diag22.txt
