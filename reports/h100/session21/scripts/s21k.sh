#!/usr/bin/env bash
# session 21, run 13: configs/plans/ragged-h100.yaml (fp8 KV at 64 and 128 heads added) resumed on
# a copy of the shipped ragged DB: only the 18 fp8 ragged keys are measured; then the fp8 mixes
# through that DB (with the broad one beside it, as an install merges them)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cp reports/h100/ragged/tuning.db $OUT/ragged.db
timeout 420 build/mla-tune sweep --config configs/plans/ragged-h100.yaml --db $OUT/ragged.db > $OUT/sweep.txt 2>&1
echo "sweep rc=$?"; tail -3 $OUT/sweep.txt | cut -c1-200
build/mla-tune export --arch sm_90 --db $OUT/ragged.db -o $OUT/ragged-export.db > /dev/null 2>&1
timeout 100 build/mla-tune bench --db $OUT/ragged-export.db --system-db build/example-prefix/share/mla-tune/tuning.db \
  --reps 20 --no-ceilings --heads 64,128 --kv-dtype fp8e4m3 --batch 8,32,128 \
  --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-100,180-330
