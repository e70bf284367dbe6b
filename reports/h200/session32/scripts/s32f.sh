#!/usr/bin/env bash
# session 32, run 6 (H200): the persistent prefill form with a producer warpgroup of its own (setmaxnreg:
# 40 registers for it, 232 for the two consumer warpgroups; one warp of it walks the tiles issuing K and V
# as stages free up, the consumers never issue): the later forms' GPU cases, then the shapes of run 5 (whose
# "before" rows are the form this replaces) and 1 x 8192, bf16 and fp8
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
MLA_TUNE_TEST_PREFILL_ONLY=forms timeout 200 build/tests/test_gpu_prefill > $OUT/run6-test-gpu-prefill-forms.txt 2>&1
echo "test_gpu_prefill (forms) rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run6-test-gpu-prefill-forms.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,16,32,64 --heads 16,128"
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16"
{ for pass in 1 2; do
    echo "== producer warpgroup, pass $pass"
    timeout 90 $B --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
  done
  echo "== grid form (out_stores=16), for scale"
  timeout 90 $B --variant "tile_q=128,kv_tile=128,block_threads=256,mma=2,out_stores=16" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
  echo "== fp8, producer warpgroup"
  timeout 60 $B --q-dtype fp8e4m3 --kv-dtype fp8e4m3 --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-70
} 2>&1 | tee $OUT/run6-bench-prefill.txt
