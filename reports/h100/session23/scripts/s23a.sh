#!/usr/bin/env bash
# session 23, run 1: the 64-row path's partial rows stored by bulk copies (wgmma64.cu) - A/B
# against the previous kernel text (oldk/kernels through MLA_TUNE_KERNEL_DIR, alternating, twice)
# on the 128-head ragged choices and two fixed-split grids with the reduce; test_gpu_mla on the
# 64-row path; then issue 27's per-call cost (python/bench_overhead.py) at two shapes, twice
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
LA_A="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2"
LA_B="tile_q=64,kv_granularity=16,num_splits=1,$W,groups_per_cu=1,request_cost=256"
LA_C="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,snap_cap=2"
LA_D="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256"
G4="tile_q=64,kv_granularity=16,num_splits=4,$W,groups_per_cu=0"
G2="tile_q=64,kv_granularity=16,num_splits=2,$W,groups_per_cu=0"
ab() { # heads batch option value variant
  for round in 1 2; do
    for tree in old new; do
      if [ $tree = old ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/oldk/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads $1 --batch $2 $3 $4 --variant "$5" \
        2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree$round /" | cut -c1-100
    done
  done
}
{
ab 128 32 --lengths one-long:32768:1024 "$LA_A"
ab 128 32 --lengths long-tail "$LA_B"
ab 128 32 --lengths uniform-random:256-8192 "$LA_B"
ab 128 128 --lengths one-long:32768:1024 "$LA_C"
ab 128 128 --lengths long-tail "$LA_B"
ab 128 8 --lengths one-long:32768:1024 "$LA_D"
ab 128 8 --seq-len 4096 "$G4"
ab 128 32 --seq-len 4096 "$G2"
} > $OUT/ab.txt 2>&1
cat $OUT/ab.txt
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=48 timeout 200 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla-wg64.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla-wg64.txt | tail -5
{
for i in 1 2; do
  PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 100 python3 python/bench_overhead.py --heads 16 --batch 1 --seq-len 1024
  PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 100 python3 python/bench_overhead.py --heads 128 --batch 32 --seq-len 4096
done
for s in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  timeout 60 build/mla-tune bench $s --page-size 64 --no-ceilings --reps 50 2>&1 | grep -E "^ *[0-9]"
done
} > $OUT/overhead.txt 2>&1
grep -E "^(path|C call|run|vLLM)|over the C call|^ *[0-9]" $OUT/overhead.txt
