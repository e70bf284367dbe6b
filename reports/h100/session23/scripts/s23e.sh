#!/usr/bin/env bash
# session 23, runs 8-9: after the grid's 16-bit results joined the bulk copies (wgmma64.cu,
# wgmma64_epilogue.cuh) every 64-row row is stale again: the ragged plan resumed on a copy of its
# shipped DB, then the broad plan (s22d.sh each); BROAD_ONLY=1 for the broad one alone
set -uo pipefail
S=reports/h100/session22/scripts/s22d.sh
[ -z "${BROAD_ONLY:-}" ] && $S configs/plans/ragged-h100.yaml reports/h100/ragged/tuning.db ragged ${RAGGED_S:-240}
$S configs/plans/broad-h100.yaml reports/h100/broad/tuning.db broad ${BROAD_S:-330}
