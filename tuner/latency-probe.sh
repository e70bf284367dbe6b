#!/usr/bin/env bash
# latency-probe.sh MLA_TUNE - where the time of a small-batch call goes
# (issue 7's batch 1 / 8 / 32 targets).  Two views of the same calls:
#   1. Nsight Compute: the duration of each kernel (decode, reduce) alone,
#      clocks as found (--clock-control none, METHOD.md), caches flushed
#      before each kernel as in the bench;
#   2. `mla-tune bench` with pinned variants: events around the whole call,
#      so bench time minus the kernels' durations is launch and gap time.
# Run on the device through tests/gpu-run.sh (SKIP_GPU_TESTS=1); outputs
# under $OUT/probe-*.txt.  PROBE_NCU=0 skips the Nsight Compute part.
set -uo pipefail
bin=$1
OUT=${OUT:-/tmp/mla-tune-out}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
here=$(cd "$(dirname "$0")" && pwd)
v="tile_q=16,kv_granularity=16,kv_chunk=32,mma=1"
kernels() {  # NAME BENCH-ARGS...: durations of the kernels of two calls
  local name=$1; shift
  timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum,sm__cycles_elapsed.max \
    -k regex:'^mla_' --launch-skip 4 -c 4 "$bin" bench --no-ceilings --warmup 2 --reps 3 "$@" \
    > "$OUT/probe-ncu-$name.txt" 2>&1
  echo "== $name ($*)"
  grep -E "^  mla_|gpu__time_duration|sm__cycles_elapsed" "$OUT/probe-ncu-$name.txt" | sed 's/  */ /g'
}
if [ "${PROBE_NCU:-1}" = 1 ]; then
kernels b1-l32-s1     --heads 16 --batch 1 --seq-len 32    --variant "$v,num_splits=1,block_threads=128,kv_stages=2"
kernels b1-l4096-s128 --heads 16 --batch 1 --seq-len 4096  --variant "$v,num_splits=128,block_threads=128,kv_stages=2"
kernels b1-l16k-s128  --heads 16 --batch 1 --seq-len 16384 --variant "$v,num_splits=128,block_threads=128,kv_stages=2"
kernels b8-l16k-s16   --heads 16 --batch 8 --seq-len 16384 --variant "$v,num_splits=16,block_threads=256,kv_stages=2"
kernels b32-l4k-s4    --heads 16 --batch 32 --seq-len 4096 --variant "$v,num_splits=4,block_threads=256,kv_stages=2"
fi
"$here/bench-variants.sh" "$bin" > "$OUT/probe-bench.txt" 2>&1 <<IN
--heads 16 --batch 1 --seq-len 32 --reps 20 | $v,num_splits=1,block_threads=128,kv_stages=2
--heads 16 --batch 1 --seq-len 64 --reps 20 | $v,num_splits=2,block_threads=128,kv_stages=2
--heads 16 --batch 1 --seq-len 4096 --reps 20 | $v,num_splits=128,block_threads=128,kv_stages=2
--heads 16 --batch 1 --seq-len 4096 --reps 20 | $v,num_splits=64,block_threads=128,kv_stages=2
--heads 16 --batch 1 --seq-len 16384 --reps 20 | $v,num_splits=128,block_threads=128,kv_stages=2
--heads 16 --batch 1 --seq-len 16384 --reps 20 | $v,num_splits=64,block_threads=128,kv_stages=3
--heads 16 --batch 8 --seq-len 16384 --reps 20 | $v,num_splits=16,block_threads=256,kv_stages=2
--heads 16 --batch 8 --seq-len 16384 --reps 20 | $v,num_splits=32,block_threads=128,kv_stages=2
--heads 16 --batch 8 --seq-len 16384 --reps 20 | $v,num_splits=64,block_threads=128,kv_stages=2
--heads 16 --batch 32 --seq-len 4096 --reps 20 | $v,num_splits=4,block_threads=256,kv_stages=2
--heads 16 --batch 32 --seq-len 4096 --reps 20 | $v,num_splits=8,block_threads=128,kv_stages=2
IN
cat "$OUT/probe-bench.txt"
