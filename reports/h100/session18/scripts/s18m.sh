#!/usr/bin/env bash
# session 18 review: one swizzled row copy for q and the fallback (pw_copy_rows): GPU test + the shapes
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --causal --reps 10 2>&1 | tee $OUT/bench-review.txt | grep -v "^#" | tail -4
timeout 100 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --context 4096 --causal --reps 5 2>&1 | tee -a $OUT/bench-review.txt | grep -v "^#" | tail -4
(cd build && timeout 200 ctest -R test_gpu_prefill -V > $OUT/test_gpu_prefill-review.txt 2>&1); echo "ctest rc=$?"
grep -E "BAD|cases passed|checks, " $OUT/test_gpu_prefill-review.txt | cut -c1-160 | head -5
