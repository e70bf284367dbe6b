#!/usr/bin/env bash
# session 23, run 7: two more changes to the 64-row path, A/B/C against HEAD's text (k0/kernels)
# through MLA_TUNE_KERNEL_DIR, alternating twice: k1/kernels = the next item's Q loaded while
# this item's results leave (and the first item's Q before its lengths are read); kernels = k1
# plus results for out without views staged as 16-bit rows and stored by bulk copies.
# On the 128-head ragged choices and uniform grids with one split (results straight to out);
# then test_gpu_mla on the 64-row path with the newest text
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
LA_A="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2"
LA_B="tile_q=64,kv_granularity=16,num_splits=1,$W,groups_per_cu=1,request_cost=256"
LA_C="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,snap_cap=2"
G1="tile_q=64,kv_granularity=16,num_splits=1,$W,groups_per_cu=0"
abc() { # heads batch option value variant
  for round in 1 2; do
    for tree in k0 k1 k2; do
      case $tree in k0) K=$PWD/k0/kernels;; k1) K=$PWD/k1/kernels;; k2) K=$PWD/kernels;; esac
      MLA_TUNE_KERNEL_DIR=$K timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads $1 --batch $2 $3 $4 \
        --variant "$5" 2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree.$round /" | cut -c1-100
    done
  done
}
{
abc 128 32 --lengths one-long:32768:1024 "$LA_A"
abc 128 32 --lengths long-tail "$LA_B"
abc 128 32 --lengths uniform-random:256-8192 "$LA_B"
abc 128 128 --lengths one-long:32768:1024 "$LA_C"
abc 128 128 --lengths long-tail "$LA_B"
abc 128 128 --seq-len 1024 "$G1"
abc 128 128 --seq-len 4096 "$G1"
abc 16 128 --seq-len 16384 "$G1"
} > $OUT/abc.txt 2>&1
cat $OUT/abc.txt
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=48 timeout 200 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla-wg64.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla-wg64.txt | tail -5
