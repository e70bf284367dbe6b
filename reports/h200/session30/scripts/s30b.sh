#!/usr/bin/env bash
# session 30, run 2 (H200): test_gpu_prefill whole with the reference on every core; the
# between-heads plan swept (8/16/32/64 heads, B=16/64, L=1024/8192, the broad space), then each
# shape timed three ways, alternating twice: its sweep winner, the merged shipped DBs as the
# runtime runs them, the built-in rule
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
t0=$(date +%s)
timeout 240 build/tests/test_gpu_prefill > $OUT/run2-test-gpu-prefill.txt 2>&1
echo "test_gpu_prefill rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^BAD|passed|failed|compiled" $OUT/run2-test-gpu-prefill.txt | tail -4
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
DB=$OUT/between-heads-h200.db
t0=$(date +%s)
timeout 230 build/mla-tune sweep --config reports/h200/session30/plans/between-heads.yaml --db $DB > $OUT/run2-sweep.txt 2>&1
echo "sweep exit $? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/run2-sweep.txt | cut -c1-150
B="timeout 40 build/mla-tune bench --reps 15 --warmup 3 --no-ceilings --heads 8,16,32,64 --batch 16,64 --seq-len 1024,8192"
for rep in 1 2; do
  echo "# sweep winner"; $B --db $DB | grep -E "^ *[0-9]"
  echo "# shipped DBs";  $B --system-db /tmp/system.db | grep -E "^ *[0-9]"
  echo "# built-in rule"; $B | grep -E "^ *[0-9]"
done > $OUT/run2-between-bench.txt 2>&1
grep -E "^#|^ *[0-9]" $OUT/run2-between-bench.txt | awk '/^#/{w=$3; next} {print w, $1, $3, $4, $7}' | sort -k2,2n -k3,3n -k4,4n -s
