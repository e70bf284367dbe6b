#!/usr/bin/env bash
# session 22, run 5: where the 64-row path's epilogue time goes (partials, 64 rows x 512 fp32):
# marks inside the last item's epilogue (diag/wgmma64-trace-epilogue.patch; trace-summary's
# names are the transposed path's: 3 = "Q^T built" = both warpgroups done, 4 = "chunk 1 landed"
# = rows staged in shared memory, 5 = "its scores" = last chunk done, 6 = "last chunk done" =
# rows stored)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
W=num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
rm -rf /tmp/kd && cp -r kernels /tmp/kd && patch -s -d /tmp/kd -p4 < reports/h100/session22/diag/wgmma64-trace-epilogue.patch || echo PATCH FAILED
for spec in "one-long:32768:1024|tile_q=64,kv_granularity=16,$W,groups_per_cu=1,request_cost=256" \
            "uniform|tile_q=64,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0"; do
  mix=${spec%%|*}; var=${spec#*|}
  echo "### trace $mix $var" >> $OUT/trace.txt
  MT_TRACE_SRC=/tmp/kd timeout 120 tuner/trace-timeline.sh build/mla-tune --heads 128 --batch 32 --seq-len 2016 \
    --lengths $mix --variant "$var" >> $OUT/trace.txt 2>&1
done
grep -E "^###|^call|within|->" $OUT/trace.txt | tail -40
