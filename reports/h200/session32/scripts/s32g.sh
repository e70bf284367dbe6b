#!/usr/bin/env bash
# session 32, run 7 (H200): main with the persistent form's producer warpgroup and the fp8 rule: the whole
# of test_gpu_prefill, the H200 prefill DB swept again (its persistent rows are stale: their code changed),
# then issue 29's figures through the built-in rule (no prefill DB), bf16 and fp8, twice
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
timeout 240 build/tests/test_gpu_prefill > $OUT/run7-test-gpu-prefill.txt 2>&1
echo "test_gpu_prefill rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run7-test-gpu-prefill.txt | head
DB=$OUT/prefill-h200.db
cp reports/h200/prefill/tuning.db $DB
t0=$(date +%s)
timeout 240 build/mla-tune sweep --config configs/plans/prefill-h200.yaml --db $DB > $OUT/run7-sweep.txt 2>&1
echo "sweep exit $? in $(( $(date +%s) - t0 )) s"; tail -2 $OUT/run7-sweep.txt | cut -c1-200
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --heads 16,128 --tokens 8192 --requests 1,8,32"
NODB="env HOME=/tmp/nodb XDG_DATA_HOME=/tmp/nodb XDG_CONFIG_HOME=/tmp/nodb"
{ for pass in 1 2; do
    echo "== built-in rule, bf16, pass $pass"; timeout 100 $NODB $B 2>&1 | grep -vE "^$"
    echo "== built-in rule, fp8, pass $pass"; timeout 100 $NODB $B --no-ceilings --q-dtype fp8e4m3 --kv-dtype fp8e4m3 2>&1 | grep -vE "^#|^$"
  done
  echo "== --db (the H200 prefill DB swept again), bf16"; timeout 100 $B --no-ceilings --db $DB 2>&1 | grep -vE "^#|^$"
} > $OUT/run7-bench.txt 2>&1
cut -c1-175 $OUT/run7-bench.txt
