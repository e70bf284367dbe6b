#!/usr/bin/env bash
# session 30, run 4 (H200): the final split rescale (run 3's, plus a split of at least 256 keys when
# filling: run 3 found B=16 x 1024 filled to 8 splits of 128 keys 1.3-1.5x slower) through the
# merged shipped (H100) DBs at run 2-3's shapes, twice; the sweep winners are run 2-3's
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
B="timeout 60 build/mla-tune bench --reps 15 --warmup 3 --no-ceilings --system-db /tmp/system.db"
for rep in 1 2; do
  $B --heads 8,16,32,64 --batch 16,64 --seq-len 1024,8192 | grep -E "^ *[0-9]"
  for k in "16 3,12,48 1024" "128 3,12,48 1024" "16 48,100,512 4096" "128 24,200 4096"; do
    set -- $k; $B --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
  done
done > $OUT/run4-shipped.txt 2>&1
awk '{print $1, $3, $4, $7}' $OUT/run4-shipped.txt | sort -k1,1n -k2,2n -k3,3n -s | paste - -
