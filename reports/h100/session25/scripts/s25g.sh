#!/usr/bin/env bash
# session 25, run 7 (issue 28): why the multicast pair serialises once its chunks are held
# (runs 2-3): tuner/probes/pair-stream.cu (built here, copied to ./pair-stream.bin) with the pair
# launched as a cluster without multicast, one release per work-group instead of one per warp,
# and one issuer of all nine boxes
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
timeout 200 ./pair-stream.bin > $OUT/pair-stream4.txt 2>&1; cat $OUT/pair-stream4.txt
