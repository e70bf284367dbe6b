#!/usr/bin/env bash
# bench-smoke.sh MLA_TUNE - GPU test: `mla-tune bench` end to end on small
# shapes (both ceilings, a pinned matrix-unit variant with splits, bf16 and
# fp8 KV); fails on any error or non-finite output, and on a ceiling that is
# missing.  Exits 77 (skipped) without a GPU.
set -uo pipefail
bin=$1
"$bin" devices > /dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" bench --heads 16 --sq 1,2 --batch 1,4 --seq-len 300 --kv-dtype bf16,fp8e4m3 --reps 5 --warmup 1 > "$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "bench failed (exit $rc)"; exit 1; }
grep -q "^copy ceiling: [1-9]" "$out" || { echo "no copy ceiling"; exit 1; }
if "$bin" devices | grep -q " sm_[89]"; then
  grep -q "^matrix ceiling: [1-9]" "$out" || { echo "no matrix ceiling"; exit 1; }
  "$bin" bench --no-ceilings --heads 16 --batch 2 --seq-len 1000 --reps 5 --warmup 1 \
    --variant tile_q=16,kv_granularity=16,num_splits=8,block_threads=256,kv_chunk=32,mma=1,kv_stages=3 || exit 1
fi
rows=$(grep -cE "^ +16 " "$out")
[ "$rows" -eq 8 ] || { echo "expected 8 rows, got $rows"; exit 1; }
