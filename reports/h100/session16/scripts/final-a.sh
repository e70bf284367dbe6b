#!/usr/bin/env bash
# session 16 final run A (extra of tests/gpu-run.sh): issue 25's validators on the GPU, bench --json, the quick
# sweep's matrix ceiling and gain over the heuristic
set -uo pipefail
OUT=${OUT:-/tmp/o}
echo "### gpu-validators.sh"
MLA_TUNE=build/mla-tune tests/gpu-validators.sh 2>&1 | tail -30; echo "gpu-validators rc ${PIPESTATUS[0]}"
echo "### quick sweep: show (gain over the heuristic), report ceilings"
build/mla-tune sweep --config quick --db /tmp/q.db > $OUT/quick-sweep.txt 2>&1; echo "sweep rc $?"
build/mla-tune show --db /tmp/q.db --system-db /tmp/q.db 2>&1 | head -20
build/mla-tune report --db /tmp/q.db -o /tmp/qr > /dev/null 2>&1; grep -m2 -i "ceiling" /tmp/qr/report.md
echo "### bench --json"
build/mla-tune bench --heads 16 --batch 1,8 --seq-len 4096 --json | python3 -m json.tool | head -30
