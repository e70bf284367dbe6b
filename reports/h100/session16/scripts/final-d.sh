#!/usr/bin/env bash
# session 16 final run D: the ragged DB swept again with the final kernel sources (its validators must match what
# ships), its bench; test_gpu_mla and python_gpu on the final host code
set -uo pipefail
OUT=${OUT:-/tmp/o}
bin=build/mla-tune sys=reports/h100/fast-decode/tuning.db
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
rm -f $OUT/ragged.db
s=$(date +%s); $bin sweep --config configs/plans/ragged-h100.yaml --db $OUT/ragged.db > $OUT/sweep.txt 2>&1; echo "sweep rc $? in $(( $(date +%s) - s )) s"; tail -3 $OUT/sweep.txt
echo "### through the runtime (new ragged DB over fast-decode)"
$bin bench --db $OUT/ragged.db --system-db $sys --heads 16 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n16.csv
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --heads 128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n128.csv
echo "# lengths unknown to the dispatcher (CUDA-graph capture)"
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --hints unknown --heads 16,128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-unknown.csv
$bin show --stale --db $OUT/ragged.db --system-db $sys 2>&1 | tail -3
(cd build && ctest -R "test_gpu_mla|python_gpu" --output-on-failure -V 2>&1 | grep -E "cases passed|fnuz KV cases|checks,|Test +#|tests passed|FAIL" | cut -c1-300)
cd $OUT && tar czf ragged.tgz ragged.db sweep.txt ragged-*.csv && rm -f ragged.db ragged-*.csv
