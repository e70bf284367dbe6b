#!/usr/bin/env bash
# session 30, run 6 (H200): more shapes no issue lists, through the merged shipped DBs - page sizes
# 1 and 16 against 64 (vLLM's block sizes), and Sq 2 / 4 (speculative decoding) at 16 and 128 heads
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
B="timeout 100 build/mla-tune bench --reps 10 --warmup 3 --system-db /tmp/system.db"
{ for page in 64 16 1; do $B --no-ceilings --heads 16,128 --batch 8,64,128 --seq-len 4096 --page-size $page 2>&1; done
  $B --no-ceilings --heads 16,128 --sq 2,4 --batch 8,64 --seq-len 4096 2>&1; } > $OUT/run6-pages-sq.txt
grep -E "^ *[0-9]" $OUT/run6-pages-sq.txt | cut -c1-75,100-200 | head -60
