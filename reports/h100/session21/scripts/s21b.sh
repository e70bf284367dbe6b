#!/usr/bin/env bash
# session 21, runs 3-4 (RESUME_DB=reports/h100/session21/broad-resume.db for the second): the broad plan resumed on a copy of the shipped broad DB (only the new
# fp8 64-row variants are measured: every other row's sources are unchanged), then the
# heuristic's fp8 choices where no DB key exists (page 16) and the fp8 length-aware forms
# (64-row vs 16-row) on ragged 128-head batches
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cp ${RESUME_DB:-reports/h100/broad/tuning.db} $OUT/broad.db
timeout 330 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/sweep.txt 2>&1
echo "sweep rc=$?"; tail -4 $OUT/sweep.txt | cut -c1-250
B="build/mla-tune bench --system-db build/example-prefix/share/mla-tune/tuning.db --reps 20 --no-ceilings"
V="kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,split_reduce=0,groups_per_cu=1"
{
echo "## heuristic (page 16: no DB key)"
timeout 60 $B --page-size 16 --heads 64,128 --kv-dtype fp8e4m3 --batch 1,8,32,128 --seq-len 1024,4096
echo "## fp8 ragged, 128 heads: through the dispatcher (the rule's length-aware form, 64-row), then the 16-row one"
timeout 60 $B --heads 128 --kv-dtype fp8e4m3 --batch 32 --lengths long-tail,one-long:32768:1024
timeout 60 $B --heads 128 --kv-dtype fp8e4m3 --batch 32 --lengths long-tail,one-long:32768:1024 --variant "tile_q=16,kv_stages=4,$V"
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
