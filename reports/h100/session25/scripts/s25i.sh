#!/usr/bin/env bash
# session 25, run 9 (issue 29): the prefill family tuned for shipping - configs/plans/prefill-h100.yaml
# swept into a fresh DB, exported, shown; then the prefill shapes (and chunks after context)
# through the shipped DBs merged with it, as an install merges them
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
rm -f $OUT/sweep.db $OUT/tuning.db
timeout 420 build/mla-tune sweep --config configs/plans/prefill-h100.yaml --db $OUT/sweep.db > $OUT/sweep.txt 2>&1
tail -22 $OUT/sweep.txt | cut -c1-170
build/mla-tune export --arch sm_90 --db $OUT/sweep.db -o $OUT/tuning.db > $OUT/export.txt 2>&1; cat $OUT/export.txt
build/mla-tune show --db $OUT/tuning.db --system-db /nonexistent.db > $OUT/show.txt 2>&1; cut -c1-170 $OUT/show.txt | tail -18
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $OUT/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
{
timeout 120 build/mla-tune bench --prefill --system-db /tmp/system.db --no-ceilings --reps 10 --heads 16,128 --tokens 8192 --requests 1,8,16,32
timeout 60 build/mla-tune bench --prefill --system-db /tmp/system.db --no-ceilings --reps 10 --heads 16,128 --tokens 2048 --requests 4 --context 4096
} > $OUT/bench-prefill.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench-prefill.txt | cut -c1-170
