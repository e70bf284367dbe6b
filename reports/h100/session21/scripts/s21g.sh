#!/usr/bin/env bash
# session 21, run 9: what the fp8 64-row path's conversion costs (diagnostic kernels through
# MLA_TUNE_KERNEL_DIR, results wrong by design: nocvt = the F2FP conversions replaced by one OR,
# nostore = nothing converted or stored), 128 and 64 heads, B=128 x 16384, one split
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
V="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
B="build/mla-tune bench --no-ceilings --reps 20 --heads 64,128 --kv-dtype fp8e4m3 --batch 128 --seq-len 16384 --variant $V"
for d in ${DIAGS:-shipped nocvt nostore}; do
  echo "## $d"
  if [ $d = shipped ]; then timeout 60 $B; else MLA_TUNE_KERNEL_DIR=$PWD/diag/$d timeout 60 $B; fi
done > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80
