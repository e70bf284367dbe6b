#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
sys=reports/h100/fast-decode/tuning.db
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
G16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
G64="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
nc() { local label=$1; shift
  /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum -k regex:'^mla_' -c 40 $bin bench --no-ceilings --warmup 1 --reps 3 "$@" > $OUT/ncu-raw.txt 2>&1
  echo "== $label: $(python3 .deps/ncu-agg.py $OUT/ncu-raw.txt)"; }
{
echo "### events: grid t16 / t64 split 1, uniform B=128 L=1272"
$bin bench --no-ceilings --heads 16 --batch 128 --seq-len 1272 --variant $G16
$bin bench --no-ceilings --heads 16 --batch 128 --seq-len 1272 --variant $G64
echo "### ncu"
nc "LA16 one-long B=128" --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
nc "LA16 one-long B=8" --heads 16 --batch 8 --lengths one-long:32768:1024 --variant $LA16
nc "grid DB uniform B=128 L=1272" --system-db $sys --heads 16 --batch 128 --seq-len 1272
nc "grid DB uniform B=8 L=4992" --system-db $sys --heads 16 --batch 8 --seq-len 4992
echo "### traces"
for args in "--batch 128 --lengths one-long:32768:1024" "--batch 128 --seq-len 1272 --lengths uniform" "--batch 8 --lengths one-long:32768:1024"; do
  echo "## LA16 $args"; tuner/trace-timeline.sh $bin --heads 16 $args --variant $LA16 2>&1 | tail -40
done
echo "## snaphalf LA16 uniform 1272"; MT_TRACE_SRC=$PWD/.deps/exp/snaphalf tuner/trace-timeline.sh $bin --heads 16 --batch 128 --seq-len 1272 --variant $LA16 2>&1 | tail -30
} 2>&1 | tee $OUT/diag22b.txt
