#!/usr/bin/env bash
# session 16 final run B (extra of SKIP_GPU_TESTS=1 tests/gpu-run.sh): validators again (script fixed), the ragged
# plan swept with the schedule's costs, bench through the runtime, uniform no-regression, views, Python per-call cost
set -uo pipefail
OUT=${OUT:-/tmp/o}
bin=build/mla-tune sys=reports/h100/fast-decode/tuning.db
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
echo "### gpu-validators.sh"
MLA_TUNE=$bin tests/gpu-validators.sh > $OUT/validators.txt 2>&1; echo "gpu-validators rc $?"; tail -4 $OUT/validators.txt
echo "### the ragged plan swept (fresh DB)"
rm -f $OUT/ragged.db
s=$(date +%s); $bin sweep --config configs/plans/ragged-h100.yaml --db $OUT/ragged.db > $OUT/sweep.txt 2>&1; echo "sweep rc $? in $(( $(date +%s) - s )) s"; tail -3 $OUT/sweep.txt
echo "### through the runtime (new ragged DB over fast-decode)"
$bin bench --db $OUT/ragged.db --system-db $sys --heads 16 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n16.csv
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --heads 128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n128.csv
echo "# lengths unknown to the dispatcher (CUDA-graph capture)"
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --hints unknown --heads 16,128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-unknown.csv
echo "### uniform, fast-decode DB: plain then views"
$bin bench --system-db $sys --no-ceilings --heads 16 --batch 1,32,128 --seq-len 1024,16384
$bin bench --system-db $sys --no-ceilings --heads 128 --batch 8,32,128 --seq-len 4096,16384
$bin bench --system-db $sys --no-ceilings --views --heads 16 --batch 1,32,128 --seq-len 1024,16384
$bin bench --system-db $sys --no-ceilings --views --heads 128 --batch 8,32,128 --seq-len 4096,16384
echo "### ragged, views"
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --views --heads 16,128 --batch 32 --lengths long-tail
echo "### Python per-call cost"
python3 -c "import torch; print('torch', torch.__version__)"
for s in "16 1 1024" "128 32 4096"; do set -- $s; PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so python3 python/bench_overhead.py --heads $1 --batch $2 --seq-len $3; done
cd $OUT && tar czf ragged.tgz ragged.db sweep.txt ragged-*.csv && rm -f ragged.db ragged-*.csv
