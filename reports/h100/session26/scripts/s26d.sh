#!/usr/bin/env bash
# session 26, run 4: pages under 16 keys through the copy engine instead of cp.async: a box per page
# (PAGE_SIZE rows x 64 columns) and column block, issued by the 32 lanes of one warp
# (build/ktrees/tma), against run 3's cp.async gather (build/ktrees/hoist): test_gpu_mla focused on
# the 64-row path with the tma text, then both alternating twice through MLA_TUNE_KERNEL_DIR (the
# rule's variants, page 1; then page 8)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && MLA_TUNE_KERNEL_DIR=$PWD/ktrees/tma MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=96 \
  timeout 240 ./tests/test_gpu_mla) > $OUT/gpu-mla-wg64-tma.txt 2>&1
echo "wg64 focus, tma: rc=$?"; grep "page= 1" $OUT/gpu-mla-wg64-tma.txt | grep -c "mma=2"; grep -E "FAIL|checks" $OUT/gpu-mla-wg64-tma.txt | tail -5
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1 || { echo "merge failed"; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20 --no-ceilings"
for pass in 1 2; do
  for t in hoist tma; do
    echo "== $t (pass $pass)"
    MLA_TUNE_KERNEL_DIR=$PWD/build/ktrees/$t timeout 100 $B --heads 16,128 --batch 1,8,32,128 --seq-len 16384 \
      --page-size 1 2>&1 | grep -E "^ *[0-9]" | awk '{print $1,$3,$4,$7,$11,substr($15,1,60)}'
  done
done > $OUT/ab-page1.txt 2>&1
cat $OUT/ab-page1.txt
for t in hoist tma; do
  echo "== $t, page 8"
  MLA_TUNE_KERNEL_DIR=$PWD/build/ktrees/$t timeout 60 $B --heads 16,128 --batch 32 --seq-len 16384 --page-size 8 2>&1 \
    | grep -E "^ *[0-9]" | awk '{print $1,$3,$4,$7,$11,substr($15,1,60)}'
done 2>&1 | tee $OUT/ab-page8.txt
