#!/usr/bin/env bash
# session 20, run 3: the broad sweep resumed to its end (configs/plans/broad-h100.yaml; run 2
# stopped at its 360 s limit after 3412 of 4148 jobs), exported for shipping, merged with the
# shipped DBs into the system DB a new install would get, and the survey re-timed through it
# with the new heuristic (the 64-row wgmma base for 16-bit KV at any head count, splits down
# to 64 keys).
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cp reports/h100/session20/broad.db $OUT/broad.db
timeout 300 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/broad-sweep2.txt 2>&1
echo "broad rc=$?"; tail -2 $OUT/broad-sweep2.txt
build/mla-tune show --db $OUT/broad.db --system-db $OUT/broad.db > $OUT/broad-show.txt 2>&1
build/mla-tune export --arch sm_90 --db $OUT/broad.db -o $OUT/broad-export.db; echo "export rc=$?"
build/mla-tune merge reports/h100/fast-decode/tuning.db reports/h100/ragged/tuning.db reports/h100/crossover/tuning.db \
  $OUT/broad-export.db -o $OUT/sys.db; echo "merge rc=$?"
B="build/mla-tune bench --system-db $OUT/sys.db --reps 20"
{
timeout 80 $B --heads 8,32 --batch 1,8,32,128 --seq-len 1024,4096,16384 --csv $OUT/a2.csv
timeout 50 $B --no-ceilings --heads 128 --batch 1,8,32,128 --seq-len 1024,4096,16384 --csv $OUT/b2.csv
timeout 25 $B --no-ceilings --heads 16 --page-size 1 --batch 8,128 --seq-len 4096
timeout 25 $B --no-ceilings --heads 16 --page-size 16 --batch 8,128 --seq-len 4096
timeout 25 $B --no-ceilings --heads 24,48 --batch 1,32,128 --seq-len 4096
timeout 25 $B --no-ceilings --heads 16 --q-dtype fp16 --kv-dtype fp16 --batch 32 --seq-len 4096
} > $OUT/survey2.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/survey2.txt | cut -c1-80,180-330
