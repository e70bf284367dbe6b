#!/usr/bin/env bash
# session 25, run 14: the rest of the broad DB's batch gaps - configs/plans/broad-h100.yaml gained
# batches 4/16/64 x 4096/16384 keys at 32 and 64 heads (bf16) and at 16 and 128 heads with fp8 KV;
# the shipped broad DB (run 13's) is resumed with it (only the new keys are measured) and exported.
# Before and after, shapes no key names, through the shipped DBs merged as an install merges them
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
  for s in "32 4 16384 bf16" "32 16 8192 bf16" "64 16 4096 bf16" "64 48 16384 bf16" "16 16 16384 fp8e4m3" \
           "16 4 4096 fp8e4m3" "128 4 16384 fp8e4m3" "128 64 8192 fp8e4m3"; do
    set -- $s
    timeout 60 $B --heads $1 --batch $2 --seq-len $3 --kv-dtype $4 2>&1 | grep -E "^ *[0-9]" | cut -c1-150
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
