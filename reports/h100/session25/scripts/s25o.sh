#!/usr/bin/env bash
# session 25, run 15: pages of 16 keys - configs/plans/broad-h100.yaml gained 16 and 128 heads
# (bf16) at page 16, batch 8/32/128 x 4096/16384 keys, which no DB measured (the heuristic ran
# them); run 14's broad DB resumed and exported, page-16 shapes before and after
exec "$(dirname "$0")/broad-resume.sh" "16 8 4096 --page-size 16" "16 32 16384 --page-size 16" \
  "16 128 4096 --page-size 16" "16 64 8192 --page-size 16" "128 8 16384 --page-size 16" \
  "128 32 4096 --page-size 16" "128 128 16384 --page-size 16"
