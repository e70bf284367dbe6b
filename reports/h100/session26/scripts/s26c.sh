#!/usr/bin/env bash
# session 26, run 3: the page-1 gather with the block-table entries loaded once per chunk (hoist,
# build/ktrees/hoist = the kernel text of this commit) against the same plus an L2 prefetch of the
# chunk after next (build/ktrees/prefetch), alternating twice through MLA_TUNE_KERNEL_DIR, the rule's
# variants (no page-1 key in the shipped DBs); the rule's old mma.sync variant at 16 heads with the
# rule's split counts; then test_gpu_mla focused on the 64-row path (page 1 among its cases).
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1 || { echo "merge failed"; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20 --no-ceilings --page-size 1"
for pass in 1 2; do
  for t in hoist prefetch; do
    echo "== $t (pass $pass)"
    MLA_TUNE_KERNEL_DIR=$PWD/build/ktrees/$t timeout 100 $B --heads 16,128 --batch 1,8,32,128 --seq-len 16384 2>&1 \
      | grep -E "^ *[0-9]" | awk '{print $1,$3,$4,$7,$11,substr($15,1,60)}'
  done
done > $OUT/ab-gather.txt 2>&1
cat $OUT/ab-gather.txt
M=tile_q=16,kv_granularity=16,block_threads=128,kv_chunk=32,mma=1,kv_stages=2
{
for bs in "1 128" "8 16" "32 4" "128 1"; do set -- $bs
  timeout 30 $B --heads 16 --batch $1 --seq-len 16384 --variant $M,num_splits=$2
done
} 2>&1 | grep -E "^ *[0-9]" | awk '{print "mma.sync", $1,$3,$4,$7,$11}' | tee $OUT/mma-sync-16h.txt
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=96 timeout 240 ./tests/test_gpu_mla) > $OUT/gpu-mla-wg64.txt 2>&1
echo "wg64 focus: rc=$?"; grep "page= 1" $OUT/gpu-mla-wg64.txt | grep -c "mma=2"; grep -E "FAIL|checks" $OUT/gpu-mla-wg64.txt | tail -5
