#!/usr/bin/env bash
# session 22, run 7: the broad plan's resume finished (run 6 stopped at its limit), then the
# ragged plan resumed on a copy of the shipped ragged DB (s22d.sh each)
set -uo pipefail
S=reports/h100/session22/scripts/s22d.sh
$S configs/plans/broad-h100.yaml reports/h100/broad/tuning.db broad 170
$S configs/plans/ragged-h100.yaml reports/h100/ragged/tuning.db ragged ${RAGGED_LIMIT:-380}
