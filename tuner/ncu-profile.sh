#!/usr/bin/env bash
# ncu-profile.sh MLA_TUNE [NAME 'BENCH-ARGS']... - profiles the decode kernel
# with Nsight Compute (present on the H100 machine at
# /usr/local/cuda/bin/ncu).  Without shapes: a few pinned ones, a lone
# work-group (latency), batch 128 (bandwidth) and 128 heads (matrix units).
# One launch per shape (-c 1, after the bench's warm-up compile); text
# reports go to $OUT/ncu-NAME.txt.  NCU_SET picks the sections (default
# full), NCU_CLOCKS=none keeps the clocks as found (ncu locks them to base
# otherwise, which shifts the balance between memory and compute).
# Run on the device through tests/gpu-run.sh (SKIP_GPU_TESTS=1).
set -uo pipefail
bin=$1; shift
OUT=${OUT:-/tmp/mla-tune-out}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
v16="tile_q=16,kv_granularity=16,block_threads=128,kv_chunk=32,mma=1,kv_stages=4"
v32="tile_q=32,kv_granularity=16,block_threads=256,kv_chunk=32,mma=1,kv_stages=2"
profile() {  # NAME BENCH-ARGS...
  local name=$1; shift
  timeout 180 "$NCU" --set "${NCU_SET:-full}" --clock-control "${NCU_CLOCKS:-base}" \
    --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct -k regex:'^mla_decode$' -c 1 --launch-skip 2 \
    "$bin" bench --no-ceilings --warmup 2 --reps 3 "$@" > "$OUT/ncu-$name.txt" 2>&1
  echo "== $name: rc=$?"
  grep -E "dram__bytes_read|lts__t_sector_hit|Duration|Registers Per|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|L1/TEX Hit|Shared Memory" "$OUT/ncu-$name.txt" | head -20
}
if [ $# -gt 0 ]; then
  while [ $# -ge 2 ]; do
    # shellcheck disable=SC2086
    profile "$1" $2
    shift 2
  done
  exit 0
fi
profile lone   --heads 16 --batch 1 --seq-len 4096 --variant "$v16,num_splits=1"
profile b128   --heads 16 --batch 128 --seq-len 16384 --variant "$v16,num_splits=1"
profile h128   --heads 128 --batch 32 --seq-len 16384 --variant "$v32,num_splits=1"
