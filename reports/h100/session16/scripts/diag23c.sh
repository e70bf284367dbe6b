#!/usr/bin/env bash
# session 16, run 3: the transposed path's epilogue as a rolled loop through shared memory
# (test_gpu_mla, then head vs new kernels through the runtime and pinned)
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export bin=$PWD/.deps/lead/mla-tune
HEAD=$PWD/.deps/exp/head
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
sys=reports/h100/fast-decode/tuning.db
{
echo "### test_gpu_mla (new kernels), default cases, then seed 7"
.deps/lead/test_gpu_mla 2>&1 | tail -4
MLA_TUNE_TEST_SEED=7 .deps/lead/test_gpu_mla 2>&1 | tail -2
for r in 1 2; do
  for k in head new; do
    if [ $k = head ]; then export MLA_TUNE_KERNEL_DIR=$HEAD; c=/tmp/c-head; else unset MLA_TUNE_KERNEL_DIR; c=/tmp/c-new; fi
    echo "### round $r $k: ragged through the runtime (ragged DB over fast-decode), 16 heads"
    $bin bench --cache-dir $c --no-ceilings --db reports/h100/ragged/tuning.db --system-db $sys --heads 16 --batch 8,32,128 --lengths $mix | grep -E "^ +16"
    echo "### round $r $k: LA16 pinned --views, long-tail"
    $bin bench --cache-dir $c --no-ceilings --views --heads 16 --batch 32,128 --lengths long-tail --variant $LA16 | grep -E "^ +16"
    echo "### round $r $k: uniform through the fast-decode DB"
    $bin bench --cache-dir $c --no-ceilings --system-db $sys --heads 16 --batch 1,8,32,128 --seq-len 1024,4096,16384 | grep -E "^ +16"
  done
done
} 2>&1 | tee $OUT/diag23c.txt
