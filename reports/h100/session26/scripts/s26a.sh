#!/usr/bin/env bash
# session 26, run 1: shapes no issue lists, through the shipped DBs merged as an install merges them:
# page sizes 1 / 16 against 64 (SGLang's page 1 has no key: the built-in rule), Sq 2 / 4 (speculative
# decoding), 32 / 64 heads, batches far from the keys, fp8 KV at page 1
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20"
{
timeout 200 $B --heads 16,128 --batch 8,32,128 --seq-len 4096,16384 --page-size 1,16,64
timeout 60 $B --heads 16,128 --batch 32 --seq-len 4096 --page-size 1,64 --kv-dtype fp8e4m3 --no-ceilings
timeout 60 $B --heads 16,128 --sq 2,4 --batch 8,32,128 --seq-len 4096 --no-ceilings
timeout 60 $B --heads 32,64 --batch 3,12,100,200,512 --seq-len 3000 --no-ceilings
timeout 60 $B --heads 16,128 --batch 512 --seq-len 2048 --no-ceilings
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | awk '{print $1,$2,$3,$4,$6,$7,$10,$11,$12}' | cut -c1-110
