#!/usr/bin/env bash
# session 32, run 3 (H200): 16-byte stores of prefill's out (out_stores=16: a 4 x 4 transpose within
# each quad of lanes, then one 16-byte store where four 4-byte ones went): the later forms' GPU cases
# (persistent and out_stores, bf16 and fp8, contiguous out and rows 4- but not 16-byte aligned), the
# shapes timed against out_stores=4 in both forms (twice, alternating), then the stall samples of the
# persistent form at 128 heads x 32 x 256 again
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
MLA_TUNE_TEST_PREFILL_ONLY=forms timeout 200 build/tests/test_gpu_prefill > $OUT/run3-test-gpu-prefill-forms.txt 2>&1
echo "test_gpu_prefill (forms) rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run3-test-gpu-prefill-forms.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,32,64"
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1"
G="tile_q=128,kv_tile=128,block_threads=256,mma=2"
run() { dt=$1; shift; for v in "$@"; do echo "== $dt $v"; timeout 90 $B --heads 16,128 --q-dtype $dt --kv-dtype $dt --variant "$v" 2>&1 | grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62; done; }
{ for pass in 1 2; do
    run bf16 "$P,out_stores=16" "$P" "$G,out_stores=16" "$G"
  done
  run fp8e4m3 "tile_q=64,kv_tile=64,block_threads=128,mma=2,out_stores=16" "tile_q=64,kv_tile=64,block_threads=128,mma=2"
} 2>&1 | tee $OUT/run3-bench-prefill.txt
NCU=/usr/local/cuda/bin/ncu
timeout 200 $NCU -k regex:'^mla_prefill$' -c 1 --launch-skip 1 --clock-control none --section SourceCounters --section WarpStateStats \
  --page source --csv --print-source sass \
  build/mla-tune bench --prefill --warmup 1 --reps 3 --no-ceilings --heads 128 --tokens 8192 --requests 32 --variant "$P,out_stores=16" \
  > $OUT/run3-source-persistent-out16-32x256.csv 2>&1
echo "source page rc=$? $(wc -l < $OUT/run3-source-persistent-out16-32x256.csv) lines"
python3 tuner/stalls-top.py $OUT/run3-source-persistent-out16-32x256.csv 12 2>&1 | head -30
