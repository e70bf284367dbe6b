#!/usr/bin/env bash
# session 32, run 8 (H200): turns between the two consumer warpgroups again, now that the producer has a
# warpgroup of its own (the trial's kernels carried in build/pp-kernels, run through MLA_TUNE_KERNEL_DIR):
# its later-form GPU cases, then main against it, alternating twice, bf16 and fp8
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
MLA_TUNE_KERNEL_DIR=$PWD/build/pp-kernels MLA_TUNE_TEST_PREFILL_ONLY=forms timeout 200 build/tests/test_gpu_prefill \
  > $OUT/run8-test-gpu-prefill-forms.txt 2>&1
echo "test_gpu_prefill (forms, turns) rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run8-test-gpu-prefill-forms.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,16,32 --heads 16,128"
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16"
{ for pass in 1 2; do
    echo "== main, pass $pass"; timeout 90 $B --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
    echo "== turns, pass $pass"
    MLA_TUNE_KERNEL_DIR=$PWD/build/pp-kernels timeout 90 $B --variant "$P" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
  done
  F="--heads 128 --requests 1,8 --q-dtype fp8e4m3 --kv-dtype fp8e4m3 --variant $P"
  echo "== fp8 main"; timeout 60 $B $F 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-70
  echo "== fp8 turns"
  MLA_TUNE_KERNEL_DIR=$PWD/build/pp-kernels timeout 60 $B $F 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-70
} 2>&1 | tee $OUT/run8-bench-prefill.txt
