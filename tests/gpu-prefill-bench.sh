#!/usr/bin/env bash
# gpu-prefill-bench.sh - runs ON the GPU machine (device tool), from the
# repository root, with a build tree and .deps/ carried (tests/gpu-prepare.sh
# here): the prefill family through the tuner and the runtime (issue 29).
#   1. sweeps a small prefill plan (default configs/plans/prefill-h100-small.yaml:
#      every variant verified against the CPU reference, timed) into a fresh DB;
#   2. shows what it chose;
#   3. benches the plan's own shapes through mlt_prefill_run with that DB
#      (the reason column must say "matching ... prefill key ... user DB");
#   4. benches the shapes (128 and 16 heads, 8192 new tokens in 1
#      request and in 8 of 1024, causal) with that DB (nearest keys).
# Logs and the DB go to $OUT.  Usage, with the device tool:
#   run(command="tests/gpu-prefill-bench.sh", carry=["build", ".deps"])
#   run(command="BUILD=build-prefill tests/gpu-prefill-bench.sh", carry=["build-prefill", ".deps"])
# PLAN=FILE sweeps another plan; SKIP_SWEEP=1 benches an existing $OUT/prefill.db.
set -uo pipefail
BUILD=${BUILD:-build}
PLAN=${PLAN:-configs/plans/prefill-h100-small.yaml}
OUT=${OUT:-/tmp/mla-tune-out}
mkdir -p "$OUT"
# .deps: libyaml and cmark-gfm; the build tree's own library too (a tree
# built elsewhere, e.g. from `git archive`, has its run path there)
export LD_LIBRARY_PATH="$PWD/$BUILD:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the build tree was configured at /work/main: make that path valid here
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
MT="$BUILD/mla-tune"
DB="$OUT/prefill.db"
status=0
"$MT" devices 2>&1 | tee "$OUT/devices.txt"
if [ -z "${SKIP_SWEEP:-}" ]; then
  rm -f "$DB" "$DB-wal" "$DB-shm"
  echo "== sweep $PLAN"
  "$MT" sweep --config "$PLAN" --db "$DB" 2>&1 | tee "$OUT/prefill-sweep.txt" || status=1
fi
echo "== show"
"$MT" show --db "$DB" 2>&1 | tee "$OUT/prefill-show.txt" || status=1
echo "== bench: the plan's shapes (exact keys)"
"$MT" bench --prefill --db "$DB" --heads 16,128 --tokens 2048 --requests 1,4 --causal \
  --csv "$OUT/prefill-bench-plan.csv" 2>&1 | tee "$OUT/prefill-bench-plan.txt" || status=1
"$MT" bench --prefill --db "$DB" --heads 128 --tokens 2048 --requests 4 --context 2048 --non-causal \
  2>&1 | tee -a "$OUT/prefill-bench-plan.txt" || status=1
echo "== bench: the issue's shapes (128 and 16 heads, 8192 new tokens: 1 x 8192 and 8 x 1024, causal)"
"$MT" bench --prefill --db "$DB" --heads 128,16 --tokens 8192 --requests 1,8 --causal \
  --csv "$OUT/prefill-bench-issue.csv" 2>&1 | tee "$OUT/prefill-bench-issue.txt" || status=1
exit $status
