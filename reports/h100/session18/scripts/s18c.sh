#!/usr/bin/env bash
# session 18: which change breaks the 2-warpgroup wgmma prefill: sweep-verify 3 kernel texts
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
for k in kA kB kD; do
  echo "== $k"
  MLA_TUNE_KERNEL_DIR=$PWD/.deps/$k timeout 150 build/mla-tune sweep --config .deps/pchk/plans/chk.yaml --db /tmp/$k.db 2>&1 | tee $OUT/sweep-$k.txt | grep -iE "fail|wrong|error|verified|measured" | head -12
done
