#!/usr/bin/env bash
# session 31, run 2 (H200): piece_merge (the length-aware 64-row path's short cut requests merged by their
# last piece's work-group, no reduce pass for them): test_gpu_mla on that form (MLA_TUNE_TEST_FOCUS=piece_merge),
# then issue 22's ragged batches at 128 and 16 heads with each shape's length-aware variant at piece_merge
# 0 / 4 / 8, and the uniform twins through the H200 ragged DB; Nsight Compute durations for 128 heads B=32
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
t0=$(date +%s)
MLA_TUNE_TEST_FOCUS=piece_merge MLA_TUNE_TEST_CASES=${CASES:-40} timeout 200 build/tests/test_gpu_mla > $OUT/run2-test-gpu-mla-merge.txt 2>&1
echo "test_gpu_mla (piece_merge focus) rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "FAIL|cases passed|piece_merge|checks" $OUT/run2-test-gpu-mla-merge.txt | tail -6
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
V=reports/h200/ragged/tuning.db
B="build/mla-tune bench --db $V --system-db /tmp/system.db --no-ceilings --warmup 3 --reps 20"
BASE="tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
t0=$(date +%s)
{ while read h b mix extra; do
    for pm in ${PMS:-0 4 8}; do
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
} > $OUT/run2-bench-piece-merge.txt 2>&1
echo "forced-variant bench in $(( $(date +%s) - t0 )) s"; cat $OUT/run2-bench-piece-merge.txt
timeout 90 $B --heads 16,128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 > $OUT/run2-bench-db.txt 2>&1
grep -E "^ +[0-9]" $OUT/run2-bench-db.txt | cut -c1-100
for pm in 0 8; do
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_' -c 8 \
    $B --warmup 1 --reps 2 --heads 128 --batch 32 --lengths uniform-random:256-8192 --variant "$BASE,kv_granularity=64,request_cost=256,piece_merge=$pm" 2>&1 |
    grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v pm=$pm '{print "piece_merge=" pm, $1, $NF}'
done | tee $OUT/run2-ncu.txt
