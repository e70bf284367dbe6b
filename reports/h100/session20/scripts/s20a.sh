#!/usr/bin/env bash
# session 20: the survey - shapes no issue lists (head counts 8/32/64, 128 heads at every batch,
# fp8 at 128 heads, page sizes 1/16, Sq 2 at 128 heads, batch 256/512, fp16) timed through the
# shipped system DB (what an installed runtime dispatches), against the measured ceilings.
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
SYS=build/example-prefix/share/mla-tune/tuning.db
B="build/mla-tune bench --system-db $SYS --reps 20"
{
timeout 150 $B --heads 8,32,64 --batch 1,8,32,128 --seq-len 1024,4096,16384 --csv $OUT/a.csv
timeout 60 $B --no-ceilings --heads 128 --batch 1,8,32,128 --seq-len 1024,4096,16384 --csv $OUT/b.csv
timeout 60 $B --no-ceilings --heads 16,128 --kv-dtype fp8e4m3 --batch 1,8,32,128 --seq-len 4096,16384 --csv $OUT/c.csv
timeout 30 $B --no-ceilings --heads 16 --page-size 1 --batch 8,128 --seq-len 4096
timeout 30 $B --no-ceilings --heads 16 --page-size 16 --batch 8,128 --seq-len 4096
timeout 30 $B --no-ceilings --heads 16,128 --sq 2 --batch 8,32 --seq-len 4096
timeout 30 $B --no-ceilings --heads 16 --batch 256,512 --seq-len 2048
timeout 30 $B --no-ceilings --heads 16 --q-dtype fp16 --kv-dtype fp16 --batch 32 --seq-len 4096
} > $OUT/survey.txt 2>&1
grep -v "^mla-tune: no tuning" $OUT/survey.txt | cut -c1-200
