#!/usr/bin/env bash
# session 29, run 3 (H200): test_gpu_prefill whole on the final kernel text (the persistent form's
# cases at two points), then configs/plans/prefill-h200.yaml swept (the persistent form beside the
# grid form and mma.sync) into reports/h200/prefill/tuning.db, then the issue-29 shapes and a few
# others through the runtime with that DB (--db) and with the built-in rule alone
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB=$OUT/prefill-h200.db
timeout 220 build/mla-tune sweep --config configs/plans/prefill-h200.yaml --db $DB > $OUT/run3-sweep.txt 2>&1
echo "sweep exit $?"; tail -4 $OUT/run3-sweep.txt | cut -c1-160
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --heads 16,128"
{ for how in "--db $DB" ""; do echo "== ${how:-built-in rule}"
  timeout 60 $B $how --tokens 8192 --requests 1,8,32 2>&1 | grep -vE "^#|^$"
  timeout 60 $B $how --tokens 4096 --requests 16,64 2>&1 | grep -vE "^#|^$|  N  reqs"
  timeout 60 $B $how --tokens 2048 --requests 4 --context 4096 2>&1 | grep -vE "^#|^$|  N  reqs"
done; } > $OUT/run3-bench.txt 2>&1; cat $OUT/run3-bench.txt | cut -c1-150
timeout 300 build/tests/test_gpu_prefill > $OUT/run3-test-gpu-prefill.txt 2>&1; echo "test_gpu_prefill rc=$?"
grep -E "^BAD|cases passed|checks" $OUT/run3-test-gpu-prefill.txt | head -20
