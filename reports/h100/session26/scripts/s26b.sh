#!/usr/bin/env bash
# session 26, run 2: pages under 16 keys on the 64-row warpgroup path (rows gathered by cp.async,
# wgmma_common.cuh). test_gpu_mla focused on the 64-row path (page 1 among its cases) and as drawn;
# page 1 through the built-in rule (now the 64-row path) against the rule's old mma.sync variant
# and page 64 through the shipped DBs; then the broad plan resumed on the shipped broad DB (only its
# new page-1 keys run), exported, and page 1 through the DBs.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=240 timeout 200 ./tests/test_gpu_mla) > $OUT/gpu-mla-wg64.txt 2>&1
echo "wg64 focus: rc=$?"; grep -c "page= 1.*mma=2" $OUT/gpu-mla-wg64.txt; grep -E "FAIL|checks" $OUT/gpu-mla-wg64.txt | tail -5
(cd build && timeout 150 ./tests/test_gpu_mla) > $OUT/gpu-mla.txt 2>&1
echo "drawn: rc=$?"; grep -E "FAIL|checks" $OUT/gpu-mla.txt | tail -5
R=reports/h100
merged() { rm -f $1; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $2 $R/crossover/tuning.db \
  $R/prefill/tuning.db -o $1 > /dev/null 2>&1 || { echo "merge failed"; exit 1; }; }
merged /tmp/system.db $R/broad/tuning.db
B="build/mla-tune bench --reps 20 --no-ceilings"
OLD=tile_q=16,kv_granularity=16,num_splits=1,block_threads=128,kv_chunk=32,mma=1,kv_stages=2
{
timeout 100 $B --system-db /tmp/system.db --heads 16,128 --batch 1,8,32,128 --seq-len 4096,16384 --page-size 1
timeout 60 $B --system-db /tmp/system.db --heads 16,128 --batch 8,32,128 --seq-len 16384 --page-size 64
timeout 60 $B --system-db /tmp/system.db --heads 16,128 --batch 8,32,128 --seq-len 16384 --page-size 1 --variant $OLD
} > $OUT/bench-rule.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench-rule.txt | awk '{print $1,$3,$4,$7,$11,substr($15,1,100)}'
cp $R/broad/tuning.db $OUT/broad.db
timeout 300 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/sweep.txt 2>&1
grep -E "measured|failed" $OUT/sweep.txt | tail -3
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/tuning.db > $OUT/export.txt 2>&1; cat $OUT/export.txt
merged /tmp/after.db $OUT/tuning.db
timeout 100 $B --system-db /tmp/after.db --heads 16,128 --batch 1,8,32,128 --seq-len 4096,16384 --page-size 1 \
  > $OUT/bench-db.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench-db.txt | awk '{print $1,$3,$4,$7,$11,substr($15,1,100)}'
