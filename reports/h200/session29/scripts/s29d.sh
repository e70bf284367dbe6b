#!/usr/bin/env bash
# session 29, run 4 (H200): the persistent form's GPU cases again on the final text (run 3 ran the
# whole test to its 300 s limit: 145 cases, 0 failed, the API / whole-space / 19 of the 24 persistent
# cases), then the issue-29 shapes through the runtime with no prefill DB (the built-in rule: the
# persistent form up to 1024 new tokens per request) and with the H200 prefill DB
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
MLA_TUNE_TEST_PREFILL_ONLY=persistent timeout 200 build/tests/test_gpu_prefill > $OUT/run4-test-gpu-prefill-persistent.txt 2>&1
echo "test_gpu_prefill (persistent) rc=$?"; grep -E "^BAD|cases passed|checks" $OUT/run4-test-gpu-prefill-persistent.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --heads 16,128 --tokens 8192 --requests 1,8,32"
{ echo "== built-in rule"; timeout 90 $B 2>&1 | grep -vE "^$"
  echo "== --db reports/h200/prefill/tuning.db"; timeout 60 $B --no-ceilings --db reports/h200/prefill/tuning.db 2>&1 | grep -vE "^#|^$"; } > $OUT/run4-bench.txt 2>&1
cut -c1-160 $OUT/run4-bench.txt
