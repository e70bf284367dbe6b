#!/usr/bin/env bash
# session 20: the broad H100 plan swept (configs/plans/broad-h100.yaml: 8/16/32/64/128 heads, bf16 and fp8
# KV, batch 1..128, 1k..16k keys; the warpgroup variants), then fp8 at 32/128 heads over every
# matrix-unit variant (reports/h100/session20/plans/fp8-many-rows.yaml)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 360 build/mla-tune sweep --config configs/plans/broad-h100.yaml --db $OUT/broad.db > $OUT/broad-sweep.txt 2>&1; echo "broad rc=$?"
tail -5 $OUT/broad-sweep.txt
timeout 200 build/mla-tune sweep --config reports/h100/session20/plans/fp8-many-rows.yaml --db $OUT/fp8x.db > $OUT/fp8x-sweep.txt 2>&1; echo "fp8x rc=$?"
tail -3 $OUT/fp8x-sweep.txt
build/mla-tune show --db $OUT/broad.db --system-db $OUT/broad.db > $OUT/broad-show.txt 2>&1
build/mla-tune show --db $OUT/fp8x.db --system-db $OUT/fp8x.db > $OUT/fp8x-show.txt 2>&1
cut -c1-230 $OUT/fp8x-show.txt
