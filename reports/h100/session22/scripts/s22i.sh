#!/usr/bin/env bash
# session 22, run 12: after snap_cap joined the length-aware schedule (schedule.cu changed, so every
# length-aware row is measured again, and the ragged space gained snap_cap 2), the ragged plan and the
# mma.sync batch-8 plan resumed on the ragged DB (s22d.sh each; the second on the first's result)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=reports/h100/session22/scripts/s22d.sh
$S configs/plans/ragged-h100.yaml reports/h100/ragged/tuning.db ragged ${RAGGED_LIMIT:-480}
$S reports/h100/session22/plans/ragged-16h-b8-mma1.yaml $OUT/ragged.db ragged2 60
