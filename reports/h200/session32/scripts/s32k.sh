#!/usr/bin/env bash
# session 32, run 11 (H200): with the producer warpgroup, is the persistent form's 128 x 64 point (shorter
# steps, so a shorter first-scores-and-softmax at each tile's start) now as fast as its 128 x 128 on short
# requests? Both timed, alternating twice, bf16 causal
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,16,32 --heads 16,128"
{ for pass in 1 2; do
    for kv in 128 64; do
      echo "== kv_tile $kv, pass $pass"
      timeout 90 $B --variant "tile_q=128,kv_tile=$kv,block_threads=256,mma=2,persistent=1,out_stores=16" 2>&1 |
        grep -vE "^#|^$|  N  reqs|^device" | cut -c1-62
    done
  done; } 2>&1 | tee $OUT/run11-bench-kv64.txt
