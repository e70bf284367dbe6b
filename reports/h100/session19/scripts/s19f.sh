#!/usr/bin/env bash
# session 19: the MHA/MQA crossover measured (issue 29): the grid stored in a DB, then held-out points checked
# against the DB's answers, lookups and the report
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB=$OUT/crossover.db
timeout 280 build/mla-tune crossover --db $DB --heads 16,128 --context 0,4096,16384,65536 \
  --sq 1,4,16,32,64,96,128,160,192,256,384,512 --reps 10 --csv $OUT/grid.csv > $OUT/grid.txt 2>&1; echo "grid rc=$?"
grep -v "^ *[0-9]" $OUT/grid.txt | head -5; grep -c "MQA\|MHA" $OUT/grid.txt
timeout 200 build/mla-tune crossover --db $DB --check --heads 16,128 --context 2048,4096,32768,65536 \
  --sq 8,24,48,80,112,144,176,224,320,448 --reps 10 --csv $OUT/check.csv > $OUT/check.txt 2>&1; echo "check rc=$?"
tail -3 $OUT/check.txt
for q in "128 64 4096" "128 200 16384" "16 300 65536" "128 1000 8192"; do set -- $q
  build/mla-tune lookup --crossover --db $DB --system-db $DB --heads $1 --sq $2 --context $3 >> $OUT/lookup.txt 2>&1
done
build/mla-tune report --db $DB -o $OUT/report > $OUT/report-log.txt 2>&1; echo "report rc=$?"
