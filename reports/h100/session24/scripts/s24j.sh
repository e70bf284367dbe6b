#!/usr/bin/env bash
# session 24, run 11: the mma.sync batch-8 plan (session 22's, outside the ragged space) resumed on
# run 9's full ragged DB (its length-aware rows stale with schedule.cu too), exported as the
# shipped ragged DB; then the 16-head batch-8 ragged keys through the merged shipped DBs
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
reports/h100/session22/scripts/s22d.sh reports/h100/session22/plans/ragged-16h-b8-mma1.yaml \
  reports/h100/session24/ragged-full.db ragged2 120
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $OUT/ragged2-export.db $R/broad/tuning.db \
  $R/crossover/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
timeout 120 build/mla-tune bench --system-db /tmp/system.db --reps 20 --heads 16 --batch 8 \
  --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --no-ceilings > $OUT/bench-16h-b8.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench-16h-b8.txt | cut -c1-150
