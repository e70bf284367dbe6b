#!/usr/bin/env bash
# session 32, run 4 (H200): the H200 prefill DB swept again with out_stores (configs/plans/prefill-h200.yaml
# resumed over the rows kept by rehash: only the new points are timed), then issue 29's figures through the
# built-in rule (no prefill DB) and through the new DB, bf16 and fp8; then issue 27's per-call overhead in
# three more pinned processes
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
DB=$OUT/prefill-h200.db
cp reports/h200/prefill/tuning.db $DB
t0=$(date +%s)
timeout 240 build/mla-tune sweep --config configs/plans/prefill-h200.yaml --db $DB > $OUT/run4-sweep.txt 2>&1
echo "sweep exit $? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/run4-sweep.txt | cut -c1-200
build/mla-tune show --db $DB --system-db /nonexistent 2>&1 | grep -v "^$" > $OUT/run4-show.txt; cut -c1-230 $OUT/run4-show.txt | head -20
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --heads 16,128 --tokens 8192 --requests 1,8,32"
NODB="env HOME=/tmp/nodb XDG_DATA_HOME=/tmp/nodb XDG_CONFIG_HOME=/tmp/nodb"
{ echo "== built-in rule, bf16"; timeout 100 $NODB $B 2>&1 | grep -vE "^$"
  echo "== built-in rule, fp8"; timeout 100 $NODB $B --no-ceilings --q-dtype fp8e4m3 --kv-dtype fp8e4m3 2>&1 | grep -vE "^#|^$"
  echo "== --db (the new H200 prefill DB), bf16"; timeout 100 $B --no-ceilings --db $DB 2>&1 | grep -vE "^#|^$"
} > $OUT/run4-bench.txt 2>&1
cut -c1-175 $OUT/run4-bench.txt
for i in 1 2 3; do for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  echo "== $shape process $i (core $((2 * i)))"
  PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 taskset -c $((2 * i)) python3 python/bench_overhead.py $shape 2>&1 | tail -6
done; done > $OUT/run4-python-overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/run4-python-overhead.txt
