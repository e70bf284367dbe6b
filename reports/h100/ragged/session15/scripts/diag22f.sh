#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
bin=build/mla-tune
sys=reports/h100/fast-decode/tuning.db
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
mix=long-tail,one-long:32768:1024,uniform-random:256-8192
(cd build && MLA_TUNE_TEST_SEED=13 ctest -R test_gpu_mla --output-on-failure 2>&1 | grep -E "tests passed|Passed|Failed|FAIL|mismatch|differ" | head -20) | tee $OUT/ctest.txt
{
echo "### new LA16 16 heads (pinned)"
$bin bench --no-ceilings --heads 16 --batch 8,32,128 --lengths $mix --variant $LA16
echo "### uniform, no regression: fast-decode DB, base kernels then new"
for k in base new; do
  if [ $k = base ]; then export MLA_TUNE_KERNEL_DIR=$PWD/.deps/exp/base; c=/tmp/c-base; else unset MLA_TUNE_KERNEL_DIR; c=/tmp/c-new; fi
  echo "## $k"
  $bin bench --cache-dir $c --system-db $sys --no-ceilings --heads 16 --batch 1,128 --seq-len 16384
  $bin bench --cache-dir $c --system-db $sys --no-ceilings --heads 128 --batch 32 --seq-len 16384
done
unset MLA_TUNE_KERNEL_DIR
echo "### schedule kernel alone (ncu), batch 8/32/128"
for B in 8 32 128; do
/usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_schedule' -c 4 \
  $bin bench --no-ceilings --warmup 1 --reps 3 --heads 16 --batch $B --lengths long-tail --variant $LA16 2>&1 | grep -E "gpu__time_duration" | tr -s ' ' | paste -sd' '
done
echo "### sweep of the ragged plan (fresh DB)"
rm -f $OUT/ragged.db
timeout 300 $bin sweep --config configs/plans/ragged-h100.yaml --db $OUT/ragged.db > $OUT/sweep.txt 2>&1; echo "sweep rc $?"; tail -5 $OUT/sweep.txt
echo "### through the runtime (new ragged DB over fast-decode)"
$bin bench --db $OUT/ragged.db --system-db $sys --heads 16 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n16.csv
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --heads 128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-n128.csv
echo "# lengths unknown to the dispatcher (CUDA-graph capture)"
$bin bench --db $OUT/ragged.db --system-db $sys --no-ceilings --hints unknown --heads 16,128 --batch 8,32,128 --lengths $mix --csv $OUT/ragged-unknown.csv
} 2>&1 | tee $OUT/diag22f.txt
cd $OUT && tar czf ragged.tgz ragged.db sweep.txt ragged-*.csv && rm -f ragged.db ragged-*.csv sweep.txt
