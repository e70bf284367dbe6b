#!/usr/bin/env bash
# session 31, run 6 (H200): what bounds the length-aware reduce (main's kernels): Nsight Compute on
# mla_reduce with caches flushed (ncu's default) and not (--cache-control none: the partials as decode
# left them in L2), instructions, DRAM bytes, issue rate; 128 heads B=32 (uniform-random, long-tail) and
# 16 heads B=8 long-tail, each shape's H200-DB length-aware variant
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
M=gpu__time_duration.sum,sm__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
BASE="tile_q=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
while read h b mix v; do
  for cc in all none; do
    echo "== $h heads B=$b $mix cache-control $cc"
    timeout 120 /usr/local/cuda/bin/ncu --clock-control none --cache-control $cc --metrics $M -k regex:'^mla_(decode|reduce)' -s 2 -c 2 \
      build/mla-tune bench --no-ceilings --warmup 1 --reps 3 --heads $h --batch $b --lengths $mix --variant "$BASE,$v" 2>&1 |
      grep -E "^  mla_|gpu__time|inst_executed|dram__bytes|hit_rate|issue_active|warps_active" | sed 's/  */ /g'
  done
done > $OUT/run6-ncu-reduce.txt 2>&1 <<'LIST'
128 32 uniform-random:256-8192 kv_granularity=64,request_cost=256
128 32 long-tail kv_granularity=64,snap_keys=512
16 8 long-tail kv_granularity=64,request_cost=256,snap_keys=512,snap_cap=2
LIST
cat $OUT/run6-ncu-reduce.txt
