#!/usr/bin/env bash
# session 24, run 6: where a 128-head B=32 call's time goes, kernel by kernel (Nsight Compute
# gpu__time_duration, no replay, clocks and caches as the bench left them; ncu serialises the
# kernels, so the reduce's overlap with decode is gone): the length-aware form on the uniform
# batch of 2016 keys against the fixed-split grid with the same cuts (2 splits, reduce kernel)
# and with the cluster merge, then the ragged mixes
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2
LA_A="tile_q=64,kv_granularity=64,num_splits=1,$W,split_reduce=0,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2"
LA_B="tile_q=64,kv_granularity=16,num_splits=1,$W,split_reduce=0,groups_per_cu=1,request_cost=256"
G2="tile_q=64,kv_granularity=16,num_splits=2,$W,split_reduce=0,groups_per_cu=0"
G2C="tile_q=64,kv_granularity=16,num_splits=2,$W,split_reduce=1,groups_per_cu=0"
run() { # name args...
  local name=$1; shift
  echo "== $name: $*"
  timeout 120 /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    -k regex:'^mla_' -c 16 build/mla-tune bench --no-ceilings --warmup 2 --reps 3 --heads 128 "$@" 2>&1 |
    grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v n="$name" '{print n, $1, $(NF)}'
  timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads 128 "$@" 2>&1 | grep -E "^ *[0-9]" | cut -c1-100
}
{
run la-uniform --batch 32 --seq-len 2016 --variant "$LA_A"
run grid2-uniform --batch 32 --seq-len 2016 --variant "$G2"
run grid2c-uniform --batch 32 --seq-len 2016 --variant "$G2C"
run la-one-long --batch 32 --lengths one-long:32768:1024 --variant "$LA_A"
run la-long-tail --batch 32 --lengths long-tail --variant "$LA_B"
} > $OUT/ncu-durations.txt 2>&1
cat $OUT/ncu-durations.txt
