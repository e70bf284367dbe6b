#!/usr/bin/env bash
# session 23, runs 5-6: issue 22's table (and the uniform targets; fp8 with FP8=1) through the
# shipped DBs as the install merges them (re-swept after the 64-row epilogue's change)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db $R/crossover/tuning.db \
  -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20"
if [ -z "${FP8:-}" ]; then
  {
  timeout 200 $B --heads 16,128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --no-ceilings
  timeout 100 $B --heads 16 --batch 1,128 --seq-len 16384
  timeout 60 $B --heads 128 --batch 32 --seq-len 16384 --no-ceilings
  } > $OUT/bench.txt 2>&1
  F=$OUT/bench.txt
else
  timeout 200 $B --no-ceilings --heads 64,128 --kv-dtype fp8e4m3 --batch 8,32,128 \
    --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 > $OUT/bench-fp8.txt 2>&1
  F=$OUT/bench-fp8.txt
fi
grep -v "^mla-tune: no tuning" $F | awk '{print $1,$3,$4,$7,$13,$14}' | cut -c1-100
