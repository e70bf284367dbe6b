#!/usr/bin/env bash
# session 21, run 10: the built-in rule for 16-bit KV (16-row base at up to 2 row tiles, cluster
# merge where the partials' round trip is >= 1/4 of a tile's KV bytes) timed where no DB key
# exists (page 16), and a cold plan (empty code cache: its 21 variants compiled side by side)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
B="build/mla-tune bench --no-ceilings --reps 20 --system-db build/example-prefix/share/mla-tune/tuning.db"
rm -rf /tmp/coldcache; mkdir -p /tmp/coldcache
s=$(date +%s.%N); timeout 120 $B --cache-dir /tmp/coldcache --page-size 16 --heads 128 --batch 1 --seq-len 1024 --reps 3 > $OUT/cold.txt 2>&1
e=$(date +%s.%N); echo "cold plan + 1 row: $(echo "$e - $s" | bc) s" | tee -a $OUT/cold.txt
{
timeout 100 $B --page-size 16 --heads 64,128 --batch 1,2,8,32 --seq-len 1024,4096,16384
timeout 40 $B --page-size 16 --heads 16,32 --batch 1,8 --seq-len 1024,4096
} > $OUT/bench.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/bench.txt | cut -c1-80,180-330
