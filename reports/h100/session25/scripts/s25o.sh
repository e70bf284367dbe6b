#!/usr/bin/env bash
# session 25, run 15: pages of 16 keys - configs/plans/broad-h100.yaml gained 16 and 128 heads
# (bf16) at page 16, batch 8/32/128 x 4096/16384 keys, which no DB measured (the heuristic ran
# them); the shipped broad DB (run 14's) is resumed (only the new keys are measured) and exported.
# Before and after, page-16 shapes through the shipped DBs merged as an install merges them
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
merged() { # out broad-db
  rm -f $1; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $2 $R/crossover/tuning.db \
    $R/prefill/tuning.db -o $1 > /dev/null 2>&1 || { echo "merge failed"; exit 1; }
}
shapes() { # system-db
  B="build/mla-tune bench --system-db $1 --reps 20 --no-ceilings"
  for s in "16 8 4096" "16 32 16384" "16 128 4096" "16 64 8192" "128 8 16384" "128 32 4096" "128 128 16384"; do
    set -- $s
    timeout 60 $B --heads $1 --batch $2 --seq-len $3 --page-size 16 2>&1 | grep -E "^ *[0-9]" | cut -c1-150
  done
}
merged /tmp/before.db $R/broad/tuning.db
shapes /tmp/before.db > $OUT/bench-before.txt 2>&1
cp $R/broad/tuning.db $OUT/broad.db
timeout 420 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/sweep.txt 2>&1
grep -E "measured|failed" $OUT/sweep.txt | tail -3
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/tuning.db > $OUT/export.txt 2>&1; cat $OUT/export.txt
merged /tmp/after.db $OUT/tuning.db
shapes /tmp/after.db > $OUT/bench-after.txt 2>&1
paste -d'\n' $OUT/bench-before.txt $OUT/bench-after.txt | cut -c1-175
