#!/usr/bin/env bash
# session 32, run 5 (H200): the persistent prefill form issuing V one key tile ahead (V_(g+1) into the stage
# P_(g-1) V_(g-1) read, once every warp is past it; the next tile's V_0 at a tile's last step): the later
# forms' GPU cases, then the short-request shapes against the form before the change (its kernels carried
# in build/base-kernels, run through MLA_TUNE_KERNEL_DIR), alternating twice; then, for issue 22, the stall
# samples of the length-aware decode and reduce at 16 heads B=8 long-tail (the H200 ragged DB's choice);
# first, for issue 27, the Python GPU tests (the README's example as written among them)
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
t0=$(date +%s)
(cd build && timeout 200 ctest -L gpu -R python --output-on-failure -V 2>&1) > $OUT/run5-ctest-python.txt
echo "python ctest rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "tests passed|Ran |^OK|FAILED|Error" $OUT/run5-ctest-python.txt | tail -6
MLA_TUNE_TEST_PREFILL_ONLY=forms timeout 200 build/tests/test_gpu_prefill > $OUT/run5-test-gpu-prefill-forms.txt 2>&1
echo "test_gpu_prefill (forms) rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run5-test-gpu-prefill-forms.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 8,16,32,64 --heads 16,128"
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16"
{ for pass in 1 2; do
    echo "== before (V issued at its step), pass $pass"
    MLA_TUNE_KERNEL_DIR=$PWD/build/base-kernels timeout 90 $B --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
    echo "== V one key tile ahead, pass $pass"
    timeout 90 $B --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
  done
  echo "== fp8 128 x 128 persistent: before / after"
  MLA_TUNE_KERNEL_DIR=$PWD/build/base-kernels timeout 60 $B --q-dtype fp8e4m3 --kv-dtype fp8e4m3 --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-70
  timeout 60 $B --q-dtype fp8e4m3 --kv-dtype fp8e4m3 --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-70
} 2>&1 | tee $OUT/run5-bench-prefill.txt
NCU=/usr/local/cuda/bin/ncu
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db $R/crossover/tuning.db \
  $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
for k in decode reduce; do
  timeout 150 $NCU -k regex:"^mla_$k\$" -c 1 --launch-skip 2 --clock-control none --section SourceCounters --section WarpStateStats \
    --section SpeedOfLight --page source --csv --print-source sass \
    build/mla-tune bench --db reports/h200/ragged/tuning.db --system-db /tmp/system.db --no-ceilings --warmup 1 --reps 3 \
    --heads 16 --batch 8 --lengths long-tail > $OUT/run5-source-$k.csv 2>&1
  echo "== mla_$k source page rc=$? $(wc -l < $OUT/run5-source-$k.csv) lines"
  python3 tuner/stalls-top.py $OUT/run5-source-$k.csv 25 > $OUT/run5-source-$k-top.txt 2>&1; head -40 $OUT/run5-source-$k-top.txt
done
