#!/usr/bin/env bash
# session 28, run 1 (H200): the first GPU run of session 27's code (splits
# rescaled between keys): the GPU tests of the decode family, the backend and
# Python; then the six between-key calls the merged shipped DBs rescale, each
# through the DB (as the runtime runs it) and as measured at its nearest key
# (--variant); then issue 27's per-call cost on this machine's host
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $OUT/nvidia-smi.csv 2>&1
lscpu | grep -E "Model name|^CPU\(s\)|MHz" >> $OUT/nvidia-smi.csv
(cd build && timeout 400 ctest -L gpu -R "mla|backend|python|bench_smoke" --output-on-failure -V 2>&1) > $OUT/ctest-gpu.txt
grep -E "tests passed|Test +#|cases passed|SKIP|Failed|FAIL" $OUT/ctest-gpu.txt | tail -12
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
B="timeout 40 build/mla-tune bench --system-db /tmp/system.db --reps 30 --no-ceilings"
V16="tile_q=16,kv_granularity=64,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
V64="tile_q=64,kv_granularity=64,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
W="tile_q=64,kv_granularity=16,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=1,groups_per_cu=0,wg_schedule=1"
{
for a in "16 3 $V16,num_splits=16" "16 12 $V16,num_splits=16" "16 48 $V64,num_splits=4" \
         "128 3 $W,num_splits=4" "128 12 $W,num_splits=4" \
         "128 48 tile_q=64,kv_granularity=64,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=1,groups_per_cu=0"; do
  set -- $a
  for rep in 1 2; do
    $B --heads $1 --batch $2 --seq-len 1024 | grep -E "^ *[0-9]"
    $B --heads $1 --batch $2 --seq-len 1024 --variant $3 | grep -E "^ *[0-9]"
  done
done
} > $OUT/between-keys.txt 2>&1
awk '{match($0,/num_splits=[0-9]+/); print $1,$3,$7,substr($0,RSTART,RLENGTH), ($0 ~ /rescaled/ ? "rescaled" : "")}' $OUT/between-keys.txt
{
for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  for pin in "taskset -c 3" "taskset -c 3" ""; do
    echo "== $shape ${pin:-unpinned}"
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 $pin python3 python/bench_overhead.py $shape
  done
done
} > $OUT/overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/overhead.txt
