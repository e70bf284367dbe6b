#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
nc() { local label=$1; shift
  /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum -k regex:'^mla_' -c 40 $bin bench --no-ceilings --warmup 1 --reps 3 "$@" > $OUT/ncu-raw.txt 2>&1
  echo "== $label: $(python3 .deps/ncu-agg.py $OUT/ncu-raw.txt)"; }
(cd build && MLA_TUNE_TEST_SEED=7 ctest -R test_gpu_mla --output-on-failure 2>&1 | tail -5) | tee $OUT/ctest.txt
{
for round in 1 2; do
echo "### round $round: base (HEAD kernels)"
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/base $bin bench --no-ceilings --cache-dir /tmp/c-base --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
echo "### round $round: new"
$bin bench --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
done
nc "new LA16 one-long B=128" --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
nc "new LA16 one-long B=8" --heads 16 --batch 8 --lengths one-long:32768:1024 --variant $LA16
.deps/trace-raw.sh la16-onelong-128 $PWD/kernels --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
.deps/trace-raw.sh la16-uniform-1272 $PWD/kernels --heads 16 --batch 128 --seq-len 1272 --lengths uniform --variant $LA16
} 2>&1 | tee $OUT/diag22d.txt
cd $OUT && tar czf raw.tgz *.raw && rm -f *.raw
