#!/usr/bin/env bash
# session 19: the shipped crossover grid measured again with --refine (each boundary halved down to one token),
# then the held-out points checked against it, and the report
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB=$OUT/tuning.db
cp reports/h100/crossover/tuning.db $DB && chmod u+w $DB  # refine on top of the shipped grid
CTX=0,2048,4096,8192,16384,32768,65536
SQ=1,4,16,32,64,96,128,160,192,224,256,288,320,384,448,512
timeout 400 build/mla-tune crossover --db $DB --refine --heads 16,128 --context $CTX --sq $SQ --reps 10 > $OUT/grid.txt 2>&1; echo "grid rc=$?"
grep -c " MQA$\| MHA$" $OUT/grid.txt
timeout 250 build/mla-tune crossover --db $DB --check --heads 16,128 --context 3000,4096,12000,45000,65536 \
  --sq 8,24,40,72,104,120,136,152,168,184,200,232,264,300,400,500 --reps 10 > $OUT/check.txt 2>&1; echo "check rc=$?"
awk '$1 ~ /^[0-9]+$/ {n++; r=$(NF-1); if (r>w) w=r; if (r>1.03) o++; if ($3<=64 && $NF>=1.0) b++} END {print n, "checked; worst chosen/best", w, "; over 3%:", o+0, "; sq<=64 not faster than MHA:", b+0}' $OUT/check.txt
awk '$1 ~ /^[0-9]+$/ && $(NF-1) > 1.03' $OUT/check.txt
build/mla-tune show --crossover --db $DB --system-db $DB > $OUT/show.txt 2>&1
