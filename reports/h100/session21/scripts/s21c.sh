#!/usr/bin/env bash
# session 21, run 5: the GPU tests on the session's code (test_gpu_mla's full draw: 144 cases,
# fp8 on both wide tiles; backend; bench smoke), then fp8 and ragged calls through the system DB
# an install of this tree ships (build/example-prefix: the broad DB re-swept with the 64-row
# fp8 path) and the heuristic (page 16)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && timeout 330 ctest -L gpu -R 'test_gpu_mla|test_gpu_backend|bench_smoke' --output-on-failure -V) > $OUT/ctest-gpu.txt 2>&1
echo "ctest rc=$?"; grep -E "tests passed|cases passed|tile_q 32|tile_q 64|checks, |Test +#" $OUT/ctest-gpu.txt
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20 --no-ceilings"
{
echo "## fp8 and bf16 KV, 64 and 128 heads, through the system DB"
timeout 80 $B --heads 64,128 --kv-dtype fp8e4m3,bf16 --batch 8,32,128 --seq-len 16384
echo "## fp8 ragged, 128 and 64 heads, through the system DB (no ragged fp8 key: the rule's length-aware form)"
timeout 80 $B --heads 64,128 --kv-dtype fp8e4m3 --batch 32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192
echo "## the heuristic (page 16: no DB key)"
timeout 60 $B --page-size 16 --heads 64,128 --kv-dtype fp8e4m3 --batch 1,8,16,32,128 --seq-len 4096
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
