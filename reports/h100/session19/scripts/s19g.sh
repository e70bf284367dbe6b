#!/usr/bin/env bash
# session 19: the crossover on a denser grid (sq every 16-32 around the boundary, 7 contexts), then held-out points
# (other sq and contexts) checked against the DB's answers, lookups and the report
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB=$OUT/crossover.db
CTX=0,2048,4096,8192,16384,32768,65536
for sq in 1,4,16,32,64,96,112,128,144,160,176,192,224,256,288,320 352,384,448,512; do
  timeout 250 build/mla-tune crossover --db $DB --heads 16,128 --context $CTX --sq $sq --reps 10 >> $OUT/grid.txt 2>&1; echo "grid rc=$?"
done
grep -c " MQA$\| MHA$" $OUT/grid.txt
timeout 250 build/mla-tune crossover --db $DB --check --heads 16,128 --context 3000,4096,12000,45000,65536 \
  --sq 8,24,48,80,104,120,136,152,168,184,208,240,272,304,400,480 --reps 10 > $OUT/check.txt 2>&1; echo "check rc=$?"
awk '$1 ~ /^[0-9]+$/ {n++; r=$(NF-1); if (r>w) w=r; if (r>1.03) o++; if ($3<=64 && $NF>=1.0) b++} END {print n, "checked; worst chosen/best", w, "; over 3%:", o+0, "; sq<=64 not faster than MHA:", b+0}' $OUT/check.txt
for q in "128 64 4096" "128 200 16384" "16 300 65536" "128 1000 8192" "16 100 12000"; do set -- $q
  build/mla-tune lookup --crossover --db $DB --system-db $DB --heads $1 --sq $2 --context $3 >> $OUT/lookup.txt 2>&1
done
build/mla-tune report --db $DB -o $OUT/report > $OUT/report-log.txt 2>&1; echo "report rc=$?"
build/mla-tune show --crossover --db $DB --system-db $DB > $OUT/show.txt 2>&1
