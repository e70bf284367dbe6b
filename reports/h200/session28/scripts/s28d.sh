#!/usr/bin/env bash
# session 28, run 4 (H200): batches between the shipped DBs' keys swept (plans/between-keys.yaml,
# the broad space) and each timed three ways, alternating twice: its sweep winner (--db, exact key),
# what the runtime runs with the merged shipped DBs (the nearest key's winner, splits rescaled), and
# the built-in rule (no DB); then where 16-head batch-8 ragged calls' time goes (Nsight Compute
# durations: the H200 ragged DB's length-aware choice against its uniform twin's grid); fp8 KV ragged
# mixes through the shipped DBs
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
DB=$OUT/between-keys-h200.db
timeout 200 build/mla-tune sweep --config reports/h200/session28/plans/between-keys.yaml --db $DB > $OUT/between-sweep.txt 2>&1
echo "sweep exit $?"; tail -4 $OUT/between-sweep.txt | cut -c1-150
B="timeout 30 build/mla-tune bench --reps 20 --no-ceilings"
{
for k in "16 3,12,48 1024" "128 3,12,48 1024" "16 48,100,512 4096" "128 24,200 4096"; do
  set -- $k
  for rep in 1 2; do
    echo "# sweep winner"; $B --db $DB --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
    echo "# shipped DBs";  $B --system-db /tmp/system.db --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
    echo "# built-in rule"; $B --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
  done
done
} > $OUT/between-bench.txt 2>&1
grep -E "^#|^ *[0-9]" $OUT/between-bench.txt | awk '/^#/{w=$0; next} {print w, $1, $3, $4, $7}' | sort -k4,4n -k5,5n -k6,6n -s | head -70
# (as run: --reps 2, which bench refuses, so this part printed nothing; run 5 (s28e.sh) made it with
# --reps 3; the DB, then at reports/h200/session28/ragged-h200.db, is now reports/h200/ragged/tuning.db)
V=reports/h200/ragged/tuning.db
for a in "--lengths long-tail" "--lengths one-long:32768:1024" "--seq-len 4783"; do
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_' -c 9 \
    build/mla-tune bench --db $V --system-db /tmp/system.db --no-ceilings --warmup 1 --reps 2 --heads 16 --batch 8 \
    $a 2>&1 | grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v a="$a" '{print a, $1, $NF}'
done | tee $OUT/ncu-16h-b8.txt
timeout 150 build/mla-tune bench --system-db /tmp/system.db --reps 20 --no-ceilings --heads 64,128 --kv-dtype fp8e4m3 \
  --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 > $OUT/bench-fp8.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench-fp8.txt | awk '{print $1,$3,$4,$7,$13}'
