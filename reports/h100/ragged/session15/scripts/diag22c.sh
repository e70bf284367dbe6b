#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
G16="tile_q=16,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
G64="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
{
for round in 1 2; do
echo "### round $round: base (HEAD kernels)"
MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/base $bin bench --no-ceilings --cache-dir /tmp/c-base --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
echo "### round $round: new"
$bin bench --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
done
echo "### grid t16 / t64 split 1, uniform B=128 L=1272 (new)"
$bin bench --no-ceilings --heads 16 --batch 128 --seq-len 1272 --variant $G16
$bin bench --no-ceilings --heads 16 --batch 128 --seq-len 1272 --variant $G64
echo "### traces (new)"
.deps/trace-raw.sh la16-onelong-128 $PWD/kernels --heads 16 --batch 128 --lengths one-long:32768:1024 --variant $LA16
.deps/trace-raw.sh la16-uniform-1272 $PWD/kernels --heads 16 --batch 128 --seq-len 1272 --lengths uniform --variant $LA16
.deps/trace-raw.sh la16-onelong-8 $PWD/kernels --heads 16 --batch 8 --lengths one-long:32768:1024 --variant $LA16
} 2>&1 | tee $OUT/diag22c.txt
cd $OUT && tar czf raw.tgz *.raw && rm -f *.raw
