#!/usr/bin/env bash
# session 28, run 2 (H200): issue 22's tables through the merged shipped (H100) DBs, the uniform
# targets, issue 28's shapes, the prefill shapes of issue 29
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || exit 1
B="build/mla-tune bench --system-db /tmp/system.db --reps 20"
{
timeout 200 $B --heads 16,128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192 --no-ceilings
timeout 60 $B --heads 16 --batch 1,128 --seq-len 16384
timeout 60 $B --heads 128 --batch 8,32 --seq-len 16384 --no-ceilings
timeout 60 $B --heads 128 --batch 128 --seq-len 1024,4096 --no-ceilings
} > $OUT/bench.txt 2>&1
grep -E "^ *[0-9]" $OUT/bench.txt | awk '{print $1,$3,$4,$7,$10,$12,$13}' | cut -c1-80
timeout 120 build/mla-tune bench --prefill --system-db /tmp/system.db --heads 16,128 --tokens 8192 --requests 1,8 --causal > $OUT/prefill.txt 2>&1
grep -E "^ *[0-9]" $OUT/prefill.txt | cut -c1-120
