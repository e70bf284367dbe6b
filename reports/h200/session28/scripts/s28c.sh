#!/usr/bin/env bash
# session 28, run 3 (H200): issue 22 tuned on this GPU - configs/plans/ragged-h200.yaml (the bf16
# ragged keys and each one's uniform twin at its exact shape) swept into a new DB, then issue 22's
# table through it (over the merged shipped H100 DBs), known and unknown lengths, the uniform targets,
# and the schedule kernel alone under Nsight Compute (batch 128, the DB's length-aware choices)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
[ -f /tmp/system.db ] || build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1
DB=$OUT/ragged-h200.db
timeout 380 build/mla-tune sweep --config configs/plans/ragged-h200.yaml --db $DB > $OUT/sweep.txt 2>&1
echo "sweep exit $?"; grep -E "^sweep|compiled|measured|failed" $OUT/sweep.txt | tail -4
B="build/mla-tune bench --db $DB --system-db /tmp/system.db --reps 20 --no-ceilings"
M=long-tail,one-long:32768:1024,uniform-random:256-8192
{
timeout 60 $B --heads 16,128 --batch 8,32,128 --lengths $M
echo "# lengths unknown to the dispatcher (as under CUDA-graph capture)"
timeout 60 $B --hints unknown --heads 16,128 --batch 8,32,128 --lengths $M
timeout 40 build/mla-tune bench --db $DB --system-db /tmp/system.db --reps 20 --heads 16 --batch 1,128 --seq-len 16384
timeout 40 $B --heads 128 --batch 32 --seq-len 16384
} > $OUT/bench.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench.txt | awk '{print $1,$3,$4,$7,$10,$12,$13}'
for h in 16 128; do
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_' -c 12 \
    build/mla-tune bench --db $DB --system-db /tmp/system.db --no-ceilings --warmup 1 --reps 3 --heads $h --batch 128 \
    --lengths long-tail 2>&1 | grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v h=$h '{print h, $1, $NF}'
done | tee $OUT/ncu-b128.txt
build/mla-tune show --db $DB > $OUT/show.txt 2>&1
