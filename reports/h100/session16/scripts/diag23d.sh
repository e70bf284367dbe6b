#!/usr/bin/env bash
# session 16, run 4: the 64-row path's epilogue staged too (length-aware and views builds); forced everywhere as a probe
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export bin=$PWD/.deps/lead/mla-tune
LA64="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
G64="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
sys=reports/h100/fast-decode/tuning.db
{
echo "### test_gpu_mla (new kernels)"
.deps/lead/test_gpu_mla 2>&1 | tail -2
for r in 1 2; do
  for k in head new forced; do
    c=/tmp/c-$k; export MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/$k
    if [ $k != forced ]; then
      echo "### round $r $k: 128 heads ragged through the runtime"
      $bin bench --cache-dir $c --no-ceilings --db reports/h100/ragged/tuning.db --system-db $sys --heads 128 --batch 8,32,128 --lengths $mix | grep -E "^ +128"
      echo "### round $r $k: views, LA64 128 heads long-tail; G64 16 heads uniform"
      $bin bench --cache-dir $c --no-ceilings --views --heads 128 --batch 32,128 --lengths long-tail --variant $LA64 | grep -E "^ +128"
      $bin bench --cache-dir $c --no-ceilings --views --heads 16 --batch 128 --seq-len 1024 --variant $G64 | grep -E "^ +16"
    fi
    echo "### round $r $k: uniform through the fast-decode DB"
    $bin bench --cache-dir $c --no-ceilings --system-db $sys --heads 16,128 --batch 1,8,32,128 --seq-len 1024,16384 | grep -E "^ +(16|128) "
  done
done
} 2>&1 | tee $OUT/diag23d.txt
