#!/usr/bin/env bash
# session 25, run 14: the rest of the broad DB's batch gaps - configs/plans/broad-h100.yaml gained
# batches 4/16/64 x 4096/16384 keys at 32 and 64 heads (bf16) and at 16 and 128 heads with fp8 KV;
# run 13's broad DB resumed with it and exported, shapes no key names before and after
exec "$(dirname "$0")/broad-resume.sh" "32 4 16384 --kv-dtype bf16" "32 16 8192 --kv-dtype bf16" \
  "64 16 4096 --kv-dtype bf16" "64 48 16384 --kv-dtype bf16" "16 16 16384 --kv-dtype fp8e4m3" \
  "16 4 4096 --kv-dtype fp8e4m3" "128 4 16384 --kv-dtype fp8e4m3" "128 64 8192 --kv-dtype fp8e4m3"
