#!/usr/bin/env bash
# session 30, run 1 (H200): session 29's compile-ahead in test_gpu_prefill (never yet run on a GPU),
# shapes no issue lists through the shipped DBs (heads 8..128, Sq 1..4, batch 1..256, bf16 and fp8
# KV: time against the copy and matrix ceilings), and issue 27's per-call cost in four processes
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,driver_version --format=csv; nproc; } > $OUT/machine.txt 2>&1
t0=$(date +%s)
timeout 330 build/tests/test_gpu_prefill > $OUT/run1-test-gpu-prefill.txt 2>&1
echo "test_gpu_prefill rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^BAD|cases passed|checks|compil" $OUT/run1-test-gpu-prefill.txt | tail -5
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || exit 1
B="build/mla-tune bench --warmup 3 --reps 10 --system-db /tmp/system.db"
t0=$(date +%s)
{ timeout 150 $B --heads 8,32,64 --sq 1,2 --batch 1,16,64,256 --seq-len 1024,8192
  timeout 60 $B --no-ceilings --heads 16,128 --sq 1,4 --batch 4,48,200 --seq-len 3000 --kv-dtype bf16,fp8e4m3; } > $OUT/run1-broad.txt 2>&1
echo "broad bench in $(( $(date +%s) - t0 )) s"
cut -c1-150 $OUT/run1-broad.txt | grep -v "^#" | head -120
for i in 1 2; do for shape in "--heads 16 --batch 1 --seq-len 1024" "--heads 128 --batch 32 --seq-len 4096"; do
  echo "== $shape process $i"; PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so timeout 60 taskset -c $((2 + i)) python3 python/bench_overhead.py $shape 2>&1 | tail -4
done; done > $OUT/run1-python-overhead.txt 2>&1
grep -E "^==|over the C call" $OUT/run1-python-overhead.txt
