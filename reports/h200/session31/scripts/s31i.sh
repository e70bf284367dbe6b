#!/usr/bin/env bash
# session 31, run 9 (H200): two splits rescaled from a key merge in a cluster where the path can (family.c:
# the pair rule): the shapes between the shipped DBs' keys that it changes, through the runtime with the
# merged shipped (H100) DBs, against the H200 sweeps' winners (price-lookups.py: 1.030x -> 1.018x predicted)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
B="build/mla-tune bench --system-db /tmp/system.db --no-ceilings --warmup 3 --reps 20"
for round in 1 2; do
  timeout 90 $B --heads 8,16,32,64 --batch 48,64 --seq-len 1024
  timeout 60 $B --heads 128 --batch 24 --seq-len 4096
done > $OUT/run9-bench-pairs.txt 2>&1
grep -E "^ +[0-9]" $OUT/run9-bench-pairs.txt | cut -c1-60,100-260
