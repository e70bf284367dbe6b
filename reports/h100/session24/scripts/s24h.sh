#!/usr/bin/env bash
# session 24, run 9: the schedule's even form (final text: a thread per stretch places the even
# pieces): every length-aware row of the ragged DB is stale (schedule.cu), so the ragged plan
# resumed on a copy of its shipped DB (s22d.sh), then the schedule's time on four keys
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
reports/h100/session22/scripts/s22d.sh configs/plans/ragged-h100.yaml reports/h100/ragged/tuning.db ragged ${RAGGED_S:-480}
M1="tile_q=16,kv_granularity=16,num_splits=1,block_threads=128,kv_chunk=32,mma=1,kv_stages=2,split_reduce=0,groups_per_cu=1"
L64="tile_q=64,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1,request_cost=256"
{
timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads 16 --batch 8 --lengths one-long:32768:1024 --variant "$M1"
timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads 128 --batch 32 --lengths one-long:32768:1024 --variant "$L64,snap_keys=512,snap_cap=2"
timeout 60 build/mla-tune bench --no-ceilings --reps 20 --heads 128 --batch 128 --lengths long-tail --variant "$L64"
} 2>&1 | grep -E "^ *[0-9]" | cut -c1-124 | tee $OUT/sched.txt
