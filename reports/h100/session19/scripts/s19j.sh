#!/usr/bin/env bash
# session 19: fp8's 64 x 64 tile held to 128 registers (four work-groups an SM instead of three): the issue's shapes
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for r in 1 2; do
timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --context 0,4096 --causal --reps 10 --no-ceilings --q-dtype fp8e4m3 --kv-dtype fp8e4m3 2>&1 | tee -a $OUT/bench-4groups.txt | grep -v "^#" | grep -v "^ *N \|device" | cut -c1-90
done
