#!/usr/bin/env bash
# ncu-durations.sh - each kernel's own duration (decode, then reduce) for a
# few pinned variants, under Nsight Compute with the clocks and caches left
# as the bench's flush left them (one metric, one pass: no replay).  ncu runs
# the kernels one after the other, so the reduce's overlap with decode (the
# dependent launch) is gone: the two numbers say where a call's time goes,
# not what the call costs.  Run on the GPU machine through tests/gpu-run.sh
# (SKIP_GPU_TESTS=1); output in reports/h100/fast-decode/probe-launch-arg-and-ncu.txt.
set -uo pipefail
T="tile_q=16,block_threads=256,kv_chunk=64,mma=2,split_reduce=0,kv_stages=2"
run() { # name args...
  local name=$1; shift
  /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    -k regex:'^mla_' --launch-skip 4 -c 6 build/mla-tune bench --no-ceilings --warmup 2 --reps 3 "$@" 2>&1 |
    grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v n="$name" '{print n, $1, $(NF)}'
}
run b1-grid128 --batch 1 --seq-len 16384 --variant "$T,kv_granularity=16,num_splits=128,groups_per_cu=0"
run b1-pers --batch 1 --seq-len 16384 --variant "$T,kv_granularity=64,num_splits=1,groups_per_cu=1"
run b32x4k-grid4 --batch 32 --seq-len 4096 --variant "$T,kv_granularity=16,num_splits=4,groups_per_cu=0"
run b32x4k-pers --batch 32 --seq-len 4096 --variant "$T,kv_granularity=64,num_splits=1,groups_per_cu=1"
run b128-grid --batch 128 --seq-len 16384 --variant "$T,kv_granularity=16,num_splits=1,groups_per_cu=0"
run b128-pers --batch 128 --seq-len 16384 --variant "$T,kv_granularity=64,num_splits=1,groups_per_cu=1"
