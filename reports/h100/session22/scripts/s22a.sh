#!/usr/bin/env bash
# session 22, run 1: where a length-aware 64-row call's time goes at 128 heads (issue 22):
# the same keys as a grid with the reduce kernel, with the cluster merge, and length-aware;
# timelines from inside the decode kernel (diag/wgmma64-trace.patch) and Nsight Compute per kernel
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB="--system-db build/example-prefix/share/mla-tune/tuning.db"
B="build/mla-tune bench $DB --reps 20 --no-ceilings --heads 128 --batch 32"
V=tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0
LA="$V,kv_granularity=16,groups_per_cu=1,request_cost=256"
G2=tile_q=64,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,groups_per_cu=0
if [ -z "${SKIP_BENCH:-}" ]; then {
echo "## dispatched"
timeout 100 $B --lengths long-tail,one-long:32768:1024,uniform-random:256-8192
echo "## LA64 (request_cost 256) on the mixes and on uniform 2016 / 4096"
timeout 100 $B --variant "$LA" --lengths long-tail,one-long:32768:1024
timeout 60 $B --variant "$LA" --seq-len 2016,4096
echo "## LA64 default costs"
timeout 60 $B --variant "$V,kv_granularity=16,groups_per_cu=1" --lengths one-long:32768:1024 --seq-len 2016
echo "## grid 2 splits, reduce kernel / cluster"
timeout 60 $B --variant "$G2,split_reduce=0" --seq-len 2016,4096
timeout 60 $B --variant "$G2,split_reduce=1" --seq-len 2016,4096
} > $OUT/bench.txt 2>&1
cut -c1-140 $OUT/bench.txt | grep -v "^mla-tune: no tuning"
fi
rm -rf /tmp/kd && cp -r kernels /tmp/kd && patch -s -d /tmp/kd -p4 < reports/h100/session22/diag/wgmma64-trace.patch || echo PATCH FAILED
for spec in "one-long:32768:1024|$LA" "uniform|$LA" "uniform|$G2,split_reduce=0"; do
  mix=${spec%%|*}; var=${spec#*|}
  echo "### trace $mix $var" >> $OUT/trace.txt
  MT_TRACE_SRC=/tmp/kd timeout 120 tuner/trace-timeline.sh build/mla-tune $DB --heads 128 --batch 32 --seq-len 2016 \
    --lengths $mix --variant "$var" >> $OUT/trace.txt 2>&1
done
grep -v "^ *[0-9]* *1 " $OUT/trace.txt | head -120
S="--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
for spec in "one-long:32768:1024|$LA" "uniform|$LA" "uniform|$G2,split_reduce=0" "uniform|$G2,split_reduce=1"; do
  mix=${spec%%|*}; var=${spec#*|}
  echo "### ncu $mix $var" >> $OUT/ncu.txt
  timeout 120 ncu -k regex:mla --launch-skip 2 -c 6 $S build/mla-tune bench $DB --no-ceilings --warmup 1 --reps 3 --heads 128 --batch 32 \
    --seq-len 2016 --lengths $mix --variant "$var" >> $OUT/ncu.txt 2>&1
done
grep -E "^###|mla_|gpu__time|dram__|lts__t|sm__thr" $OUT/ncu.txt
