#!/usr/bin/env bash
# session 22, run 13: with snap_cap in the schedule and the ragged DB re-swept - the GPU tests the
# change touches (test_gpu_mla draws snap_cap with the schedule's costs; test_gpu_backend,
# bench_smoke, python_gpu), then issue 22's table and the fp8 ragged mixes through the shipped DBs
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
if [ -z "${SKIP_TESTS:-}" ]; then
  (cd build && ctest -L gpu -R "mla|backend|bench_smoke|python" --output-on-failure -V 2>&1) > $OUT/ctest-gpu.txt
  grep -E "tests passed|Test +#|cases passed|SKIP|Failed" $OUT/ctest-gpu.txt | tail -12
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  B="build/mla-tune bench --system-db build/example-prefix/share/mla-tune/tuning.db --reps 20"
  {
  timeout 200 $B --heads 16,128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --no-ceilings
  timeout 100 $B --heads 16 --batch 1,128 --seq-len 16384
  timeout 60 $B --heads 128 --batch 32 --seq-len 16384 --no-ceilings
  } > $OUT/bench.txt 2>&1
  timeout 200 $B --no-ceilings --heads 64,128 --kv-dtype fp8e4m3 --batch 8,32,128 \
    --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 > $OUT/bench-fp8.txt 2>&1
  grep -v "^mla-tune: no tuning" $OUT/bench.txt $OUT/bench-fp8.txt | awk '{print $1,$2,$3,$4,$5,$6,$7,$8,$14}' | cut -c1-120
fi
