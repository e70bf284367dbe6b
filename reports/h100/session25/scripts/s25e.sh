#!/usr/bin/env bash
# session 25, run 5 (issue 29): every warpgroup prefill variant at the shapes (causal,
# 16 and 128 heads, 8192 new tokens as 1, 8 and 32 requests), bf16 and fp8: what the built-in
# default (used where no DB has a causal prefill key) leaves on the table
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
{
for dt in bf16 fp8e4m3; do
  for v in "tile_q=128,kv_tile=128,block_threads=256" "tile_q=128,kv_tile=64,block_threads=256" \
           "tile_q=64,kv_tile=128,block_threads=128" "tile_q=64,kv_tile=64,block_threads=128"; do
    timeout 120 build/mla-tune bench --prefill --no-ceilings --reps 10 --heads 16,128 --tokens 8192 --requests 1,8,32 \
      --q-dtype $dt --kv-dtype $dt --variant "$v,mma=2" 2>&1 | grep -E "^ *[0-9]" | cut -c1-150
  done
done
} > $OUT/prefill-variants.txt 2>&1
cat $OUT/prefill-variants.txt
