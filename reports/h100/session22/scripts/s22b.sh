#!/usr/bin/env bash
# session 22, runs 3-4: the length-aware reduce with a warp's load slots filled by several rows
# (reduce.cu, schedule.cu) - correctness (test_gpu_mla) and A/B against the previous kernel
# text (oldk/kernels, through MLA_TUNE_KERNEL_DIR), the two alternating, twice
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1
LA64="tile_q=64,kv_granularity=16,$W,request_cost=256"
LA16="tile_q=16,kv_granularity=64,$W,request_cost=256"
TREES=${TREES:-old new}
ab() { # heads batch mix variant
  for round in 1 2; do
    for tree in $TREES; do
      if [ $tree = old ]; then K="MLA_TUNE_KERNEL_DIR=$PWD/oldk/kernels"; else K="MLA_TUNE_KERNEL_DIR=$PWD/kernels"; fi
      env $K timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads $1 --batch $2 --lengths $3 --variant "$4" \
        2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree$round /" | cut -c1-110
    done
  done
}
{
for b in 8 32 128; do ab 128 $b one-long:32768:1024 "$LA64"; ab 128 $b long-tail "$LA64"; done
ab 128 32 uniform-random:256-8192 "$LA64"
for b in 8 32 128; do ab 16 $b one-long:32768:1024 "$LA16"; ab 16 $b long-tail "$LA16"; done
} > $OUT/ab.txt 2>&1
cat $OUT/ab.txt
if [ -n "${TRACE:-}" ]; then
  rm -rf /tmp/kd && cp -r kernels /tmp/kd && patch -s -d /tmp/kd -p4 < reports/h100/session22/diag/wgmma64-trace.patch
  MT_TRACE_SRC=/tmp/kd timeout 120 tuner/trace-timeline.sh build/mla-tune --heads 128 --batch 32 \
    --lengths one-long:32768:1024 --variant "$LA64" > $OUT/trace.txt 2>&1
  tail -32 $OUT/trace.txt
fi
(cd build && timeout 400 ctest -R test_gpu_mla --output-on-failure -V) > $OUT/gpu-mla.txt 2>&1
grep -E "cases passed|tests passed|FAIL|length-aware" $OUT/gpu-mla.txt | tail -5
