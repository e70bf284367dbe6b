#!/usr/bin/env bash
# session 24, run 1: item_cluster=2 (a length-aware stretch on a cluster of two work-groups,
# halves of every item merged through distributed shared memory; wgmma64_cluster.cuh).
# test_gpu_mla on the length-aware 64-row points (item_cluster drawn), then the 128-head
# ragged batches with the shipped DBs' length-aware choices, item_cluster 1 against 2
# (same costs, and the default costs), alternating twice
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && MLA_TUNE_TEST_FOCUS=la64 MLA_TUNE_TEST_CASES=48 timeout 240 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla-la64.txt 2>&1
grep -E "cases passed|item_cluster|tests passed|FAIL|seed" $OUT/gpu-mla-la64.txt | tail -8
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
LA_A="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2"
LA_B="tile_q=64,kv_granularity=16,num_splits=1,$W,groups_per_cu=1,request_cost=256"
LA_C="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,snap_cap=2"
LA_D="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256"
LA_0="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1"
ab() { # batch lengths variant
  for round in 1 2; do
    for v in "$3" "$3,item_cluster=2" "$LA_0,item_cluster=2"; do
      tag=c1; case "$v" in "$LA_0,item_cluster=2") tag=c2d;; *item_cluster=2) tag=c2;; esac
      timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads 128 --batch $1 --lengths $2 --variant "$v" \
        2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tag.$round /" | cut -c1-104
    done
  done
}
{
ab 32 one-long:32768:1024 "$LA_A"
ab 32 long-tail "$LA_B"
ab 32 uniform-random:256-8192 "$LA_B"
ab 128 one-long:32768:1024 "$LA_C"
ab 128 long-tail "$LA_B"
ab 128 uniform-random:256-8192 "$LA_B"
ab 8 one-long:32768:1024 "$LA_D"
ab 8 long-tail "$LA_D"
ab 8 uniform-random:256-8192 "$LA_D"
} > $OUT/ab.txt 2>&1
cat $OUT/ab.txt
