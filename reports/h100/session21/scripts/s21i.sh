#!/usr/bin/env bash
# session 21, run 11: the GPU tests that go through plans (python_gpu, bench_smoke, backend) and
# test_gpu_prefill (its family's sources hook changed signature) on the final code, and a cold
# plan's creation (empty code cache) with the 16-bit rule's 21 variants compiled side by side
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B="build/mla-tune bench --no-ceilings --system-db build/example-prefix/share/mla-tune/tuning.db"
for h in 128 48; do
  rm -rf /tmp/coldcache; mkdir -p /tmp/coldcache
  s=$(date +%s%N)
  timeout 200 $B --cache-dir /tmp/coldcache --page-size 16 --heads $h --batch 1 --seq-len 1024 --reps 3 --warmup 1 > $OUT/cold-$h.txt 2>&1
  e=$(date +%s%N)
  echo "heads $h: cold plan (empty cache) and one timed row: $(( (e - s) / 1000000 )) ms" | tee -a $OUT/cold-$h.txt
done
(cd build && timeout 480 ctest -L gpu -R 'python_gpu|bench_smoke|test_gpu_backend|test_gpu_prefill' --output-on-failure -V) > $OUT/ctest-gpu.txt 2>&1
echo "ctest rc=$?"; grep -E "tests passed|cases passed|checks, |Test +#|Passed|Failed" $OUT/ctest-gpu.txt | tail -12
