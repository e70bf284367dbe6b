#!/usr/bin/env bash
# session 30, run 7 (H200): page 16's chunk copies with the chunk's page indices read before any copy
# (wgmma_common.cuh) - test_gpu_mla's first 48 cases (16 at page 16), then the same variants at page
# 16 and 64 timed on the old kernel text (exp-old/kernels, HEAD's) and the new, alternating
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
MLA_TUNE_TEST_SEED=30 MLA_TUNE_TEST_CASES=48 timeout 150 build/tests/test_gpu_mla > $OUT/run7-test-gpu-mla.txt 2>&1
echo "test_gpu_mla rc=$?"; tail -2 $OUT/run7-test-gpu-mla.txt; grep -c "page 16\|page=16\|p16" $OUT/run7-test-gpu-mla.txt
V16="tile_q=16,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2"
V64="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2"
B="timeout 60 build/mla-tune bench --reps 10 --warmup 3 --no-ceilings --batch 64,128 --seq-len 4096"
for rep in 1 2; do for tree in old new; do for page in 16 64; do
  dir=$PWD/kernels; [ $tree = old ] && dir=$PWD/exp-old/kernels
  echo "# $tree page $page"
  MLA_TUNE_KERNEL_DIR=$dir $B --heads 16 --page-size $page --variant $V16 --cache-dir /tmp/cache-$tree | grep -E "^ *[0-9]"
  MLA_TUNE_KERNEL_DIR=$dir $B --heads 128 --page-size $page --variant $V64 --cache-dir /tmp/cache-$tree | grep -E "^ *[0-9]"
done; done; done > $OUT/run7-page16.txt 2>&1
grep -E "^#|^ *[0-9]" $OUT/run7-page16.txt | awk '/^#/{w=$2" p"$4; next} {print w, $1, $3, $7}' | sort -k2,2 -k3,3n -k4,4n -s | paste - - - -
