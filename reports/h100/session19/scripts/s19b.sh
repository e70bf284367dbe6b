#!/usr/bin/env bash
# session 19: fp8 prefill, first run: the GPU test (fp8 cases through the API and the family), then fp8 vs bf16
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 300 ./tests/test_gpu_prefill > $OUT/test_gpu_prefill.txt 2>&1); echo "prefill test rc=$?"
grep -E "BAD|fp8|passed|failed|checks" $OUT/test_gpu_prefill.txt | head -40
for dt in fp8e4m3 bf16; do
  timeout 150 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 10 --q-dtype $dt --kv-dtype $dt 2>&1 | tee -a $OUT/bench-fp8.txt | grep -v "^#"
done
