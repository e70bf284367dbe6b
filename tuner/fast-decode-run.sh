#!/usr/bin/env bash
# fast-decode-run.sh DB [SWEEP_SECONDS] - ON the GPU machine (through
# tests/gpu-run.sh): sweeps configs/plans/fast-decode-h100.yaml into DB
# (resuming what DB already holds; stops after SWEEP_SECONDS, default 470,
# so one device call stays under its limit - run again to continue), then,
# once the sweep is complete, times the issue-7 shapes through the runtime
# with that DB (`mla-tune bench`, both ceilings measured in the same run),
# and the 16-head ones once more with the old memset flush for comparison.
# Logs go to $OUT.
set -uo pipefail
db=$1; secs=${2:-470}
OUT=${OUT:-/tmp/mla-tune-out}
bin=build/mla-tune
timeout "$secs" "$bin" sweep --config configs/plans/fast-decode-h100.yaml --db "$db" > "$OUT/sweep.txt" 2>&1
rc=$?
tail -15 "$OUT/sweep.txt"
if [ "$rc" -ne 0 ]; then
  echo "sweep stopped (exit $rc): run again to resume"
  exit "$rc"
fi
"$bin" show --db "$db" > "$OUT/show.txt" 2>&1
{
  "$bin" bench --db "$db" --heads 16 --sq 1 --batch 1,8,32,128 --seq-len 4096,16384 --csv "$OUT/bench-n16.csv"
  "$bin" bench --db "$db" --no-ceilings --heads 16 --sq 2,4 --batch 1,8,32,128 --seq-len 4096,16384 --csv "$OUT/bench-n16-sq.csv"
  "$bin" bench --db "$db" --no-ceilings --heads 16 --kv-dtype fp8e4m3 --batch 8,32,128 --seq-len 16384 --csv "$OUT/bench-n16-fp8.csv"
  "$bin" bench --db "$db" --heads 128 --batch 8,32 --seq-len 16384 --csv "$OUT/bench-n128.csv"
  echo "# the 16-head shapes again with the memset flush of sessions 1-5 (timing.h says why it changed)"
  "$bin" bench --db "$db" --no-ceilings --flush write --heads 16 --batch 1,8,32,128 --seq-len 4096,16384 \
    --csv "$OUT/bench-n16-memset.csv"
  "$bin" bench --db "$db" --no-ceilings --flush write --heads 16 --kv-dtype fp8e4m3 --batch 128 --seq-len 16384 \
    --csv "$OUT/bench-n16-fp8-memset.csv"
} 2>&1 | tee "$OUT/bench.txt"
# the device tool brings back only a few files: bundle the rest
cp "$db" "$OUT/tuning.db"
(cd "$OUT" && tar czf fast-decode.tgz sweep.txt show.txt bench*.csv tuning.db && rm -f sweep.txt show.txt bench*.csv tuning.db)
