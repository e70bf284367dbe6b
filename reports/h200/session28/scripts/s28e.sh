#!/usr/bin/env bash
# session 28, run 5 (H200): the session's last code - the GPU tests run 1 did not cover (prefill, gemm)
# and python_gpu again (mlt_plan_explain now checks the batch); where a 16-head batch-8 ragged call's
# time goes (Nsight Compute durations: the H200 ragged DB's length-aware choices against the uniform
# twin's grid); issue 29's fp8 prefill against bf16 at 128 heads x 8192
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
V=reports/h200/ragged/tuning.db
for a in "--lengths long-tail" "--lengths one-long:32768:1024" "--seq-len 4783" "--seq-len 4992"; do
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_' -c 9 \
    build/mla-tune bench --db $V --system-db /tmp/system.db --no-ceilings --warmup 1 --reps 3 --heads 16 --batch 8 \
    $a 2>&1 | grep -E "^  mla_|gpu__time_duration" | paste - - | awk -v a="$a" '{print a, $1, $NF}'
done | tee $OUT/ncu-16h-b8.txt
timeout 120 build/mla-tune bench --prefill --system-db /tmp/system.db --heads 128 --tokens 8192 --requests 1,8 --causal \
  --q-dtype fp8e4m3 --kv-dtype fp8e4m3 > $OUT/prefill-fp8.txt 2>&1
grep -E "^ *[0-9]" $OUT/prefill-fp8.txt | cut -c1-120
(cd build && timeout 330 ctest -L gpu -R "prefill|gemm|python" --output-on-failure -V 2>&1) > $OUT/ctest-gpu-rest.txt
grep -E "tests passed|Test +#|cases passed|SKIP|Failed|FAIL" $OUT/ctest-gpu-rest.txt | tail -12
