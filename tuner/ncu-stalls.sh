#!/usr/bin/env bash
# ncu-stalls.sh MLA_TUNE NAME 'BENCH-ARGS' - where the decode kernel's warps
# wait: Nsight Compute's warp-state statistics (why warps are not issuing,
# averaged) and the per-instruction stall samples of one launch, as CSV of
# the SASS source page ($OUT/stalls-NAME.csv, with $OUT/stalls-NAME.txt for
# the summary).  Clocks as found.  Run on the device through
# tests/gpu-run.sh (SKIP_GPU_TESTS=1); read the CSV with
# tuner/stalls-top.py.
set -uo pipefail
bin=$1 name=$2 args=$3
OUT=${OUT:-/tmp/mla-tune-out}
NCU=${NCU:-/usr/local/cuda/bin/ncu}
common=(-k regex:'^mla_decode$' -c 1 --launch-skip 2 --clock-control none)
# shellcheck disable=SC2086
timeout 240 "$NCU" "${common[@]}" --section WarpStateStats --section SpeedOfLight \
  "$bin" bench --no-ceilings --warmup 2 --reps 3 $args > "$OUT/stalls-$name.txt" 2>&1
echo "== $name: rc=$?"
grep -E "Duration|Stall|Warp Cycles|Issued Warp|Active Warps|Eligible" "$OUT/stalls-$name.txt" | head -30
# shellcheck disable=SC2086
timeout 240 "$NCU" "${common[@]}" --section SourceCounters --section WarpStateStats --page source --csv \
  --print-source sass "$bin" bench --no-ceilings --warmup 2 --reps 3 $args > "$OUT/stalls-$name.csv" 2>&1
echo "== $name source page: rc=$? $(wc -l < "$OUT/stalls-$name.csv") lines"
