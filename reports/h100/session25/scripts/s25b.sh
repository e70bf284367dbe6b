#!/usr/bin/env bash
# session 25, run 2 (issue 28): tuner/probes/pair-stream.cu with a producer warp, 3 stages and
# multicast: what the 128-head path's data movement could cost in other forms
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 200 ./pair-stream.bin > $OUT/pair-stream2.txt 2>&1; cat $OUT/pair-stream2.txt
