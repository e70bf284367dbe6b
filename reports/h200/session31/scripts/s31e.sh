#!/usr/bin/env bash
# session 31, run 5 (H200): piece_merge, third form (the look-up by an idle warp when the item starts, no fences
# for requests of more pieces, one thread's fence before a ticket, values 2 and 4): test_gpu_mla on it, the
# forced-variant table, and Nsight Compute durations of decode with 0 and 4
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
t0=$(date +%s)
MLA_TUNE_TEST_FOCUS=piece_merge MLA_TUNE_TEST_CASES=${CASES:-40} timeout 200 build/tests/test_gpu_mla > $OUT/run5-test-gpu-mla-merge.txt 2>&1
echo "test_gpu_mla (piece_merge focus) rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "FAIL|cases passed|piece_merge|checks" $OUT/run5-test-gpu-mla-merge.txt | tail -6
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
V=reports/h200/ragged/tuning.db
B="build/mla-tune bench --db $V --system-db /tmp/system.db --no-ceilings --warmup 3 --reps 20"
BASE="tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
t0=$(date +%s)
{ while read h b mix extra; do
    for pm in ${PMS:-0 2 4}; do
      echo "== $h heads B=$b $mix $extra piece_merge=$pm"
      timeout 60 $B --heads $h --batch $b --lengths $mix --variant "$BASE,$extra,piece_merge=$pm" 2>&1 | grep -E "^ +[0-9]" | head -1 | cut -c1-90
    done
  done <<'LIST'
128 8 long-tail kv_granularity=64,snap_keys=512
128 32 long-tail kv_granularity=64,snap_keys=512
128 128 long-tail kv_granularity=16,request_cost=256
128 8 one-long:32768:1024 kv_granularity=64,request_cost=256,snap_cap=2
128 32 one-long:32768:1024 kv_granularity=64
128 128 one-long:32768:1024 kv_granularity=64,request_cost=256
128 8 uniform-random:256-8192 kv_granularity=64
128 32 uniform-random:256-8192 kv_granularity=64,request_cost=256
128 128 uniform-random:256-8192 kv_granularity=16,request_cost=256
16 8 long-tail kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 32 long-tail kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 128 long-tail kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 8 one-long:32768:1024 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 32 one-long:32768:1024 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 128 one-long:32768:1024 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 8 uniform-random:256-8192 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 32 uniform-random:256-8192 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
16 128 uniform-random:256-8192 kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
LIST
} > $OUT/run5-bench-piece-merge.txt 2>&1
echo "forced-variant bench in $(( $(date +%s) - t0 )) s"; cat $OUT/run5-bench-piece-merge.txt
BASE="tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
for shape in "--heads 128 --batch 8 --lengths uniform-random:256-8192 --variant $BASE,kv_granularity=64" \
             "--heads 128 --batch 32 --lengths uniform-random:256-8192 --variant $BASE,kv_granularity=64,request_cost=256" \
             "--heads 16 --batch 8 --lengths long-tail --variant $BASE,kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2"; do
  for pm in 0 4; do
    timeout 150 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_(decode|reduce)' -c 4 \
      build/mla-tune bench --no-ceilings --warmup 1 --reps 3 $shape,piece_merge=$pm 2>&1 |
      grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v s="${shape%% --variant*} pm=$pm" '{print s, $1, $NF}'
  done
done | tee $OUT/run5-ncu.txt
