#!/usr/bin/env bash
# session 32, run 10 (H200): issue 29's crossover measured on this GPU with this session's prefill (the
# persistent form with its producer warpgroup, 16-byte stores): both forms of one request's chunk, end
# to end (GEMMs through cuBLASLt), on the default grid refined at every change of winner, then checked at
# points off the grid; decode (MQA) through the merged shipped H100 DBs
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
R=reports/h100
build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db $R/prefill/tuning.db \
  -o /tmp/system.db > /dev/null 2>&1
export MLA_TUNE_SYSTEM_DB=/tmp/system.db
DB=$OUT/crossover-h200.db
t0=$(date +%s)
timeout 330 build/mla-tune crossover --refine --db $DB > $OUT/run10-crossover-grid.txt 2>&1
echo "crossover rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^ +(16|128) +(4096|16384|65536) +(128|256|512) " $OUT/run10-crossover-grid.txt | head -12
t0=$(date +%s)
timeout 200 build/mla-tune crossover --check --db $DB --sq 8,24,40,72,136,200,300,400 --context 3000,8192,32768 \
  > $OUT/run10-crossover-check.txt 2>&1
echo "check rc=$? in $(( $(date +%s) - t0 )) s"; tail -4 $OUT/run10-crossover-check.txt
awk '$1 ~ /^[0-9]+$/ && NF >= 15 {n++; if ($(NF-1) + 0 <= 1.03) ok++; if ($(NF-1) + 0 > worst) worst = $(NF-1) + 0}
     END {printf "within 3%% of the faster form: %d of %d, worst %.3f\n", ok, n, worst}' $OUT/run10-crossover-check.txt
