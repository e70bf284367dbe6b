#!/usr/bin/env bash
# broad-resume.sh SHAPE... - session 25's runs 13-15: configs/plans/broad-h100.yaml resumed on the
# shipped broad DB (only keys it lacks are measured) and exported; before and after, each SHAPE
# ("heads batch seq_len [more mla-tune bench options]") through the shipped DBs merged as an
# install merges them. Logs and the DBs in $OUT.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
merged() { # out broad-db
  rm -f $1; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $2 $R/crossover/tuning.db \
    $R/prefill/tuning.db -o $1 > /dev/null 2>&1 || { echo "merge failed"; exit 1; }
}
shapes() { # system-db SHAPE...
  local db=$1; shift
  for s in "$@"; do
    set -- $s
    local heads=$1 batch=$2 len=$3; shift 3
    timeout 60 build/mla-tune bench --system-db $db --reps 20 --no-ceilings --heads $heads --batch $batch \
      --seq-len $len "$@" 2>&1 | grep -E "^ *[0-9]" | cut -c1-150
  done
}
merged /tmp/before.db $R/broad/tuning.db
shapes /tmp/before.db "$@" > $OUT/bench-before.txt 2>&1
cp $R/broad/tuning.db $OUT/broad.db
timeout 420 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/sweep.txt 2>&1
grep -E "measured|failed" $OUT/sweep.txt | tail -3
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/tuning.db > $OUT/export.txt 2>&1; cat $OUT/export.txt
merged /tmp/after.db $OUT/tuning.db
shapes /tmp/after.db "$@" > $OUT/bench-after.txt 2>&1
paste -d'\n' $OUT/bench-before.txt $OUT/bench-after.txt | cut -c1-175
