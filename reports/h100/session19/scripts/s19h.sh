#!/usr/bin/env bash
# session 19, last: the crossover grid shipped (sq every 16 from 80 to 512, 7 contexts), held-out points checked
# against it, the report; then the prefill shapes in bf16 and fp8 through the built-in rule
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
DB=$OUT/tuning.db
CTX=0,2048,4096,8192,16384,32768,65536
for sq in 1,4,16,32,48,64,80,96,112,128,144,160,176,192,208,224 240,256,272,288,304,320,336,352,368,384,400,416,432,448,464,480 496,512; do
  timeout 250 build/mla-tune crossover --db $DB --heads 16,128 --context $CTX --sq $sq --reps 10 >> $OUT/grid.txt 2>&1; echo "grid rc=$?"
done
grep -c " MQA$\| MHA$" $OUT/grid.txt
timeout 250 build/mla-tune crossover --db $DB --check --heads 16,128 --context 3000,4096,12000,45000,65536 \
  --sq 8,24,40,72,104,120,136,152,168,184,200,232,264,300,400,500 --reps 10 > $OUT/check.txt 2>&1; echo "check rc=$?"
awk '$1 ~ /^[0-9]+$/ {n++; r=$(NF-1); if (r>w) w=r; if (r>1.03) o++; if ($3<=64 && $NF>=1.0) b++} END {print n, "checked; worst chosen/best", w, "; over 3%:", o+0, "; sq<=64 not faster than MHA:", b+0}' $OUT/check.txt
awk '$1 ~ /^[0-9]+$/ && $(NF-1) > 1.03' $OUT/check.txt
build/mla-tune report --db $DB -o $OUT/report > $OUT/report-log.txt 2>&1; echo "report rc=$?"
build/mla-tune show --crossover --db $DB --system-db $DB > $OUT/show.txt 2>&1
for dt in bf16 fp8e4m3; do
  timeout 150 build/mla-tune bench --prefill --heads 128,16 --tokens 8192 --requests 1,8 --context 0,4096 --causal --reps 10 --q-dtype $dt --kv-dtype $dt 2>&1 | tee -a $OUT/bench-prefill.txt | grep -v "^#" | cut -c1-100
done
