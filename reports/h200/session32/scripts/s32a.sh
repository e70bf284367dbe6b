#!/usr/bin/env bash
# session 32, run 1 (H200): prefill's persistent form with turns between its two warpgroups
# (pingpong=1, wgmma_persistent.cu): its GPU cases (bf16 and fp8, whole / chunked / non-causal, over
# the SMs and over 3), then the issue-29 shapes timed against the persistent form without turns and
# the grid form, each variant twice in alternation
set -uo pipefail
source reports/h200/session32/scripts/preamble.sh
MLA_TUNE_TEST_PREFILL_ONLY=persistent timeout 200 build/tests/test_gpu_prefill > $OUT/run1-test-gpu-prefill-persistent.txt 2>&1
echo "test_gpu_prefill (persistent) rc=$?"; grep -E "^BAD|FAIL|cases passed|checks" $OUT/run1-test-gpu-prefill-persistent.txt | head
B="build/mla-tune bench --prefill --warmup 3 --reps 15 --no-ceilings --tokens 8192 --requests 1,8,32,64"
P="tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1"
G="tile_q=128,kv_tile=128,block_threads=256,mma=2"
run() { dt=$1; shift; for v in "$@"; do echo "== $dt $v"; timeout 90 $B --heads 16,128 --q-dtype $dt --kv-dtype $dt --variant "$v" 2>&1 | grep -vE "^#|^$|  N  reqs" | cut -c1-60; done; }
{ for pass in 1 2; do
    run bf16 "$P,pingpong=1" "$P" "$G"
    run fp8e4m3 "$P,pingpong=1" "$P"
  done; } 2>&1 | tee $OUT/run1-bench-prefill.txt
# tensor pipe and issue counters, 128 heads 8 x 1024 bf16, with and without turns
for v in "$P,pingpong=1" "$P"; do
  echo "== ncu $v"
  timeout 100 /usr/local/cuda/bin/ncu --clock-control none -k regex:'^mla_prefill$' -c 1 \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct \
    build/mla-tune bench --prefill --warmup 0 --reps 1 --no-ceilings --heads 128 --tokens 8192 --requests 8 --variant "$v" 2>&1 |
    grep -E "gpu__time|sm__|smsp__" | tr -s ' '
done 2>&1 | tee $OUT/run1-ncu-prefill.txt
