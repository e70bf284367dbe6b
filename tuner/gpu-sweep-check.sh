#!/usr/bin/env bash
# gpu-sweep-check.sh - the sweep and runtime checks on a GPU machine (run by
# the device tool after tests/gpu-prepare.sh; see tests/gpu-run.sh for the
# environment).  Everything lands in $OUT/results.tar.gz (the device tool
# brings back at most 8 files), and a summary is printed:
#   1. the quick plan end to end into a fresh DB (wall time, summary);
#   2. the quick plan again into another DB, SIGKILLed part-way, then
#      resumed: row counts before / after, duplicates;
#   3. a sweep where one variant runs a faulting kernel (--inject-fault):
#      recorded as launch-failed, the sweep finishes; the same for prefill
#      (its mma.sync variants fault);
#   4. mla-tune show / lookup on the quick DB;
#   5. the example program (built against an installed prefix) with the
#      quick DB: cold and warm start, correctness, time per call;
#   6. the host-side dispatch benchmark;
#   7. (REPORT_PLAN=file) a further sweep for the committed report.
set -uo pipefail
OUT=${OUT:-/tmp/mla-tune-out}
R=$OUT/results
mkdir -p "$R"
B=build/mla-tune
export MLA_TUNE_CACHE_DIR=/tmp/mla-tune-cache
q() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@"; }

echo "== 1. quick sweep"
t0=$(date +%s%N)
$B sweep --config configs/plans/quick.yaml --db "$R/quick.db" > "$R/sweep-quick.txt" 2> "$R/sweep-quick.err"
rc=$?; echo "exit $rc wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
tail -8 "$R/sweep-quick.txt"

echo "== 2. kill -9 and resume"
$B sweep --config configs/plans/quick.yaml --db "$R/kill.db" > "$R/sweep-kill-1.txt" 2>&1 &
pid=$!
sleep "${KILL_AFTER:-10}"
kill -9 $pid; wait $pid 2>/dev/null
before=$(q "$R/kill.db" "select count(*) from measurements")
$B sweep --config configs/plans/quick.yaml --db "$R/kill.db" > "$R/sweep-kill-2.txt" 2>&1
after=$(q "$R/kill.db" "select count(*) from measurements")
distinct=$(q "$R/kill.db" "select count(distinct problem_id||'/'||variant_id||'/'||reps) from measurements")
echo "killed with $before rows; after resume $after rows, $distinct distinct (problem, variant, reps)"
grep -E "measured|skipped" "$R/sweep-kill-2.txt" | head -2

echo "== 3. injected fault"
cat > /tmp/fault-plan.yaml <<'PLAN'
name: fault
problems:
  - {heads: 16, batch: 8, seq_len: 2048}
timing: {warmup: 2, reps: 5}
search: {strategy: random, budget: 24, seed: 3}
PLAN
$B sweep --config /tmp/fault-plan.yaml --db "$R/fault.db" --inject-fault tile_q=32 > "$R/sweep-fault.txt" 2>&1
echo "exit $?"
q "$R/fault.db" "select group_concat(status||':'||n, ' ') from (select status, count(*) n from measurements group by 1)"
q "$R/fault.db" "select error from measurements where status='launch-failed' limit 1"
cat > /tmp/fault-prefill-plan.yaml <<PLAN
name: fault-prefill
spaces: $PWD/configs/spaces/prefill
problems:
  - {kind: mla_prefill, heads: 16, tokens: 256, requests: 2}
timing: {warmup: 2, reps: 5}
PLAN
$B sweep --config /tmp/fault-prefill-plan.yaml --db "$R/fault-prefill.db" --inject-fault mma=1 \
  > "$R/sweep-fault-prefill.txt" 2>&1
echo "prefill: exit $?"
q "$R/fault-prefill.db" "select group_concat(status||':'||n, ' ') from (select status, count(*) n from measurements group by 1)"
q "$R/fault-prefill.db" "select error from measurements where status='launch-failed' limit 1"

echo "== 4. show / lookup"
$B show --db "$R/quick.db" | tee "$R/show.txt"
$B lookup --db "$R/quick.db" --heads 16 --batch 16 --seq-len 3000 | tee "$R/lookup.txt"
$B lookup --db "$R/quick.db" --heads 8 --batch 16 --seq-len 3000 | tee -a "$R/lookup.txt"

echo "== 5. example program through the installed runtime"
rm -rf /tmp/example-cache
for i in 1 2; do
  build/example-build/decode_example --db "$R/quick.db" --cache-dir /tmp/example-cache --heads 16 --batch 64 \
    --seq-len 8192 2>&1 | tee -a "$R/example.txt"
done

echo "== 6. dispatch benchmark"
build/tests/bench_dispatch | tee "$R/bench-dispatch.txt"

if [ -n "${REPORT_PLAN:-}" ]; then
  echo "== 7. report sweep: $REPORT_PLAN"
  t0=$(date +%s%N)
  timeout "${REPORT_TIMEOUT:-300}" $B sweep --config "$REPORT_PLAN" --db "$R/report.db" > "$R/sweep-report.txt" 2>&1
  echo "exit $? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -30 "$R/sweep-report.txt"
fi
for db in "$R"/*.db; do python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" "$db"; done
tar czf "$OUT/results.tar.gz" -C "$OUT" results && rm -rf "$R"
