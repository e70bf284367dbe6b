#!/usr/bin/env bash
# session 31, run 1 (H200): issue 27 checked again (python_gpu: the README's example as written, both q
# forms against the reference, graph replay; bench_overhead in eight processes), then where a ragged
# call's time goes at 128 heads B=32 and 16 heads B=128 (Nsight Compute durations per kernel: the H200
# ragged DB's length-aware choices against the uniform twin's grid)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; lscpu | grep -E "Model name|MHz"; } > $OUT/machine.txt 2>&1
t0=$(date +%s)
(cd build && timeout 200 ctest -L gpu -R python --output-on-failure -V 2>&1) > $OUT/run1-ctest-python.txt
echo "python ctest rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "tests passed|Test +#|Ran |OK|FAIL|Error" $OUT/run1-ctest-python.txt | tail -12
for i in 1 2 3 4; do for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  echo "== $shape process $i (core $((2 * i)))"
  PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 taskset -c $((2 * i)) python3 python/bench_overhead.py $shape 2>&1 | tail -6
done; done > $OUT/run1-python-overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/run1-python-overhead.txt
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
V=reports/h200/ragged/tuning.db
ncu_bench() { # heads batch what...
  local h=$1 b=$2; shift 2
  timeout 90 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size -k regex:'^mla_' -c 12 \
    build/mla-tune bench --db $V --system-db /tmp/system.db --no-ceilings --warmup 1 --reps 3 --heads $h --batch $b "$@" 2>&1 |
    grep -E "^  mla_|gpu__time_duration|registers_per|grid_size" | paste - - - - | sed "s|^|$h heads B=$b $* :: |" | tr -s ' '
}
{ for m in long-tail one-long:32768:1024 uniform-random:256-8192; do ncu_bench 128 32 --lengths $m; done
  for s in 3505 2016 4035; do ncu_bench 128 32 --seq-len $s; done
  ncu_bench 16 128 --lengths one-long:32768:1024; ncu_bench 16 128 --seq-len 1272; } > $OUT/run1-ncu.txt 2>&1
cat $OUT/run1-ncu.txt
