#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
LA64="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
nc() { local label=$1; shift
  /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum -k regex:'^mla_' -c 40 $bin bench --no-ceilings --warmup 1 --reps 3 "$@" > $OUT/ncu-raw.txt 2>&1
  echo "== $label: $(python3 .deps/ncu-agg.py $OUT/ncu-raw.txt)"; }
(cd build && MLA_TUNE_TEST_SEED=11 ctest -R test_gpu_mla --output-on-failure 2>&1 | grep -E "tests passed|Passed|Failed|FAIL|mismatch" | head -20) | tee $OUT/ctest.txt
{
echo "### base LA16 16 heads"
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/base $bin bench --no-ceilings --cache-dir /tmp/c-base --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
echo "### new LA16 16 heads"
$bin bench --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
echo "### base LA64 128 heads"
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/base $bin bench --no-ceilings --cache-dir /tmp/c-base --heads 128 --batch 8,32,128 --lengths $mix --variant $LA64
echo "### new LA64 128 heads"
$bin bench --no-ceilings --heads 128 --batch 8,32,128 --lengths $mix --variant $LA64
nc "new LA16 one-long B=128" --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
nc "new LA16 one-long B=8" --heads 16 --batch 8 --lengths one-long:32768:1024 --variant $LA16
echo "### through the runtime: ragged DB over fast-decode (as ragged-run.sh)"
$bin bench --db reports/h100/ragged/tuning.db --system-db reports/h100/fast-decode/tuning.db --no-ceilings --heads 16,128 --batch 8,32,128 --lengths $mix
} 2>&1 | tee $OUT/diag22e.txt
