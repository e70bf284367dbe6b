#!/usr/bin/env bash
# session 23, run 2: the bulk-copy epilogue shared by the three 64-row paths
# (wgmma64_epilogue.cuh) - the GPU tests it touches, A/B against the previous text
# (oldk/kernels) on the fp8 64-row and overlapped (wg_schedule=1) paths, then the ragged
# plan resumed on a copy of the shipped ragged DB (its 64-row rows no longer validate)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 260 ctest -L gpu -R "mla|backend|bench_smoke" --output-on-failure -V 2>&1) > $OUT/ctest-gpu.txt
grep -E "tests passed|Test +#|cases passed|SKIP|Failed|FAIL" $OUT/ctest-gpu.txt | tail -14
W=block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
F8="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256"
SS="tile_q=64,kv_granularity=64,num_splits=1,$W,groups_per_cu=1,request_cost=256,snap_keys=512,snap_cap=2,wg_schedule=1"
ab() { # heads batch option value variant [more options]
  for round in 1 2; do
    for tree in old new; do
      if [ $tree = old ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/oldk/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads $1 --batch $2 $3 $4 --variant "$5" ${6:-} ${7:-} \
        2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree$round /" | cut -c1-100
    done
  done
}
{
ab 64 128 --lengths one-long:32768:1024 "$F8" --kv-dtype fp8e4m3
ab 128 32 --lengths one-long:32768:1024 "$F8" --kv-dtype fp8e4m3
ab 128 32 --lengths one-long:32768:1024 "$SS"
} > $OUT/ab.txt 2>&1
cat $OUT/ab.txt
reports/h100/session22/scripts/s22d.sh configs/plans/ragged-h100.yaml reports/h100/ragged/tuning.db ragged ${RAGGED_S:-280}
