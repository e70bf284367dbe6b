#!/usr/bin/env bash
# session 26, run 5: the session's last kernel text. The broad plan resumed on the shipped broad DB
# (rehashed: only its new page-1 keys at 64 and 128 heads run) and exported; every GPU test; page 1
# through the shipped DBs merged as an install merges them (16 heads: the rule's mma.sync base), and
# the uniform targets at page 64.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
cp $R/broad/tuning.db $OUT/broad.db
timeout 240 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/sweep.txt 2>&1
grep -E "measured|failed" $OUT/sweep.txt | tail -2
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/tuning.db > $OUT/export.txt 2>&1; cat $OUT/export.txt
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $OUT/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1 || { echo "merge failed"; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20"
{
timeout 100 $B --heads 16,64,128 --batch 1,8,32,128 --seq-len 4096,16384 --page-size 1
timeout 60 $B --heads 16 --batch 1,128 --seq-len 16384 --no-ceilings
timeout 60 $B --heads 128 --batch 8,32 --seq-len 16384 --no-ceilings
} > $OUT/bench.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench.txt | awk '{print $1,$3,$4,$7,$10,$11,substr($15,1,90)}'
(cd build && timeout 420 ctest -L gpu --output-on-failure 2>&1) > $OUT/ctest-gpu.txt
grep -E "tests passed|Test +#|SKIP|Failed|FAIL" $OUT/ctest-gpu.txt | tail -14
