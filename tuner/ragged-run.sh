#!/usr/bin/env bash
# ragged-run.sh DB [SWEEP_SECONDS] - ON the GPU machine (through
# tests/gpu-run.sh): sweeps configs/plans/ragged-h100.yaml into DB (resuming
# what DB holds), then times the ragged batches through the runtime with DB
# over the shipped fast-decode DB (mla-tune bench --lengths: each ragged
# batch beside the uniform batch with the same total keys), once with the
# lengths known to the dispatcher and once unknown (as under CUDA-graph
# capture), and the scheduling kernel alone under Nsight Compute.
# Logs and the DB go to $OUT.
set -uo pipefail
db=$1; secs=${2:-400}
OUT=${OUT:-/tmp/mla-tune-out}
bin=build/mla-tune
sys=reports/h100/fast-decode/tuning.db
timeout "$secs" "$bin" sweep --config configs/plans/ragged-h100.yaml --db "$db" > "$OUT/ragged-sweep.txt" 2>&1
rc=$?
tail -25 "$OUT/ragged-sweep.txt"
[ "$rc" -ne 0 ] && { echo "sweep stopped (exit $rc): run again to resume"; exit "$rc"; }
mixes=long-tail,one-long:32768:1024,uniform-random:256-8192
{
  "$bin" bench --db "$db" --system-db "$sys" --heads 16 --batch 8,32,128 --lengths "$mixes" --csv "$OUT/ragged-n16.csv"
  "$bin" bench --db "$db" --system-db "$sys" --no-ceilings --heads 128 --batch 8,32,128 --lengths "$mixes" \
    --csv "$OUT/ragged-n128.csv"
  echo "# the same with the lengths unknown to the dispatcher (CUDA-graph capture): a length-aware variant runs"
  "$bin" bench --db "$db" --system-db "$sys" --no-ceilings --hints unknown --heads 16,128 --batch 8,32,128 \
    --lengths "$mixes" --csv "$OUT/ragged-unknown.csv"
  echo "# uniform batches, as before (no regression): B=128 x 16384 and B=1 x 16384 at 16 heads, B=32 x 16384 at 128"
  "$bin" bench --db "$db" --system-db "$sys" --no-ceilings --heads 16 --batch 1,128 --seq-len 16384
  "$bin" bench --db "$db" --system-db "$sys" --no-ceilings --heads 128 --batch 32 --seq-len 16384
} 2>&1 | tee "$OUT/ragged-bench.txt"
/usr/local/cuda/bin/ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'^mla_schedule' -c 5 \
  "$bin" bench --no-ceilings --warmup 1 --reps 3 --heads 16 --batch 128 --lengths long-tail \
  --variant "tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1" \
  2>&1 | grep -E "^  mla_|gpu__time_duration" | tee "$OUT/ragged-schedule-ncu.txt"
# the device tool brings back only a few files: bundle them
cp "$db" "$OUT/ragged.db"
(cd "$OUT" && tar czf ragged.tgz ragged-sweep.txt ragged-bench.txt ragged-*.csv ragged-schedule-ncu.txt ragged.db &&
  rm -f ragged-sweep.txt ragged-*.csv ragged.db)
