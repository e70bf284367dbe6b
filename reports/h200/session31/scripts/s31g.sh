#!/usr/bin/env bash
# session 31, run 7 (H200): reduce_form (the length-aware reduce's one-round merge compiled per rows a warp):
# test_gpu_mla (72 cases: the length-aware ones, one in 6 run again by the other form, bit-identical), each
# ragged shape's H200-DB length-aware choice timed with reduce_form 0 and 1 alternating twice, and the reduce's
# instructions and duration with each form (Nsight Compute)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
t0=$(date +%s)
MLA_TUNE_TEST_CASES=${CASES:-72} timeout 200 build/tests/test_gpu_mla > $OUT/run7-test-gpu-mla.txt 2>&1
echo "test_gpu_mla rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "FAIL|cases passed|reduce form|checks" $OUT/run7-test-gpu-mla.txt | tail -6
COMMON="num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
B="build/mla-tune bench --no-ceilings --warmup 3 --reps 20"
t0=$(date +%s)
{ while read h b mix v; do
    for round in 1 2; do for rf in 0 1; do
      printf "%4s %4s %-24s rf=%d  " $h $b ${mix%%:*} $rf
      timeout 60 $B --heads $h --batch $b --lengths $mix --variant "$v,$COMMON,reduce_form=$rf" 2>&1 | grep -E "^ +[0-9]" | head -1 | cut -c40-60
    done; done
  done <<'LIST'
16 8 long-tail tile_q=16,kv_granularity=64
16 32 long-tail tile_q=16,kv_granularity=64,snap_cap=2
16 128 long-tail tile_q=16,kv_granularity=64,request_cost=256
16 8 one-long:32768:1024 tile_q=64,kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 32 one-long:32768:1024 tile_q=16,kv_granularity=16
16 128 one-long:32768:1024 tile_q=16,kv_granularity=64,snap_cap=2
16 32 uniform-random:256-8192 tile_q=16,kv_granularity=64,snap_cap=2
16 128 uniform-random:256-8192 tile_q=16,kv_granularity=64,request_cost=256
128 8 long-tail tile_q=64,kv_granularity=64,snap_keys=512
128 32 long-tail tile_q=64,kv_granularity=64,snap_keys=512
128 128 long-tail tile_q=64,kv_granularity=16,request_cost=256
128 8 one-long:32768:1024 tile_q=64,kv_granularity=64,request_cost=256,snap_cap=2
128 32 one-long:32768:1024 tile_q=64,kv_granularity=64
128 128 one-long:32768:1024 tile_q=64,kv_granularity=64,request_cost=256
128 32 uniform-random:256-8192 tile_q=64,kv_granularity=64,request_cost=256
128 128 uniform-random:256-8192 tile_q=64,kv_granularity=16,request_cost=256
LIST
} > $OUT/run7-bench-reduce-form.txt 2>&1
echo "forced-variant bench in $(( $(date +%s) - t0 )) s"; cat $OUT/run7-bench-reduce-form.txt
M=gpu__time_duration.sum,sm__inst_executed.sum
for shape in "--heads 128 --batch 32 --lengths uniform-random:256-8192 --variant tile_q=64,kv_granularity=64,request_cost=256" \
             "--heads 128 --batch 8 --lengths one-long:32768:1024 --variant tile_q=64,kv_granularity=64,request_cost=256,snap_cap=2" \
             "--heads 16 --batch 128 --lengths uniform-random:256-8192 --variant tile_q=16,kv_granularity=64,request_cost=256"; do
  for rf in 0 1; do
    timeout 120 /usr/local/cuda/bin/ncu --clock-control none --metrics $M -k regex:'^mla_reduce' -c 2 \
      build/mla-tune bench --no-ceilings --warmup 1 --reps 3 $shape,$COMMON,reduce_form=$rf 2>&1 |
      grep -E "gpu__time|inst_executed" | paste - - | awk -v s="${shape%% --variant*} rf=$rf" '{print s, $3 " us", $NF " warp instructions"}'
  done
done | tee $OUT/run7-ncu-reduce-form.txt
