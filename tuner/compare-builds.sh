#!/usr/bin/env bash
# compare-builds.sh OLD_MLA_TUNE NEW_MLA_TUNE [ROUNDS] - ON the GPU machine:
# times the same decode shapes through two builds of mla-tune with the
# shipped H100 databases (a refactor must leave them within noise).  The
# builds alternate, ROUNDS (default 2) times each, so drift over the run
# (clocks, temperature) falls on both; each build keeps its own JIT cache.
# Prints one table per build and round; compare the time_us columns.
set -uo pipefail
old=$1; new=$2; rounds=${3:-2}
sys=reports/h100/fast-decode/tuning.db
user=reports/h100/ragged/tuning.db
shapes() {  # BIN CACHE
  local bin=$1
  export MLA_TUNE_CACHE_DIR=$2
  "$bin" bench --db "$user" --system-db "$sys" --heads 16 --batch 1,8,32,128 --seq-len 1024,4096,16384 2>&1
  "$bin" bench --db "$user" --system-db "$sys" --no-ceilings --heads 128 --batch 8,32,128 --seq-len 1024,4096,16384 2>&1
  "$bin" bench --db "$user" --system-db "$sys" --no-ceilings --heads 16 --kv-dtype fp8e4m3 --batch 32,128 \
    --seq-len 4096,16384 2>&1
  "$bin" bench --db "$user" --system-db "$sys" --no-ceilings --heads 16,128 --batch 32,128 --lengths long-tail 2>&1
}
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    echo "=== $which build, round $r: $bin"
    shapes "$bin" "/tmp/mla-tune-cache-$which" | grep -vE "^# "
  done
done
