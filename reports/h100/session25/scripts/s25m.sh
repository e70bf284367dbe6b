#!/usr/bin/env bash
# session 25, run 13: the broad DB's batch gaps - configs/plans/broad-h100.yaml gained batches
# 2/4/16/64/256 x 4096/16384/65536 keys at 16 and 128 heads (bf16); the shipped broad DB resumed
# with it and exported, shapes no key names before and after (broad-resume.sh; the sweep's
# timeout was 480 s in this run)
exec "$(dirname "$0")/broad-resume.sh" "16 4 65536" "16 16 16384" "16 64 4096" "16 256 4096" "16 2 32768" \
  "16 48 8192" "128 4 16384" "128 16 4096" "128 64 2048" "128 64 16384" "128 2 65536" "128 256 1024"
