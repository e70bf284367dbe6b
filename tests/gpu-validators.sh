#!/usr/bin/env bash
# gpu-validators.sh - issue 25 ("Also build") on a real GPU, from the
# repository root on the GPU machine:  tests/gpu-run.sh tests/gpu-validators.sh
# (a few minutes on an H100: the quick plan, then two recorded keys).
#   1. a sweep on this build records validators: show --stale finds none
#      stale in it, and counts the shipped DB's as unknown (trusted);
#   2. bench with MLA_TUNE_RECORD_CALLS=1 between the quick plan's keys
#      records those calls into the user DB at plan destroy;
#   3. sweep --recorded tunes exactly those; lookup then finds them exact.
set -euo pipefail
bin=${MLA_TUNE:-build/mla-tune}
dir=$(mktemp -d /tmp/mla-tune-gpu-validators-XXXXXX)
db=$dir/user.db
shipped=reports/h100/fast-decode/tuning.db
fail() { echo "gpu-validators: FAIL: $*" >&2; exit 1; }
"$bin" sweep --config quick --db "$db" >"$dir/sweep.log" 2>&1 || fail "quick sweep: $(tail -5 "$dir/sweep.log")"
echo "== 1. show --stale: the sweep's choices and the shipped DB's"
"$bin" show --stale --db "$db" --system-db "$shipped" | tee "$dir/stale.txt"
grep -q '^0 stale' "$dir/stale.txt" || fail "stale choices right after a sweep on this build"
echo "== 2. bench with recording on (batch 3 and 24 x 3000 keys: between the quick plan's keys)"
MLA_TUNE_RECORD_CALLS=1 "$bin" bench --db "$db" --system-db "$db" --heads 16 --batch 3,24 --seq-len 3000
"$bin" sweep --recorded --db "$db" --dry-run 2>&1 | tee "$dir/recorded.txt" # the count is on stderr
grep -qE 'sweep --recorded: [1-9][0-9]* keys' "$dir/recorded.txt" || fail "recorded calls: $(cat "$dir/recorded.txt")"
echo "== 3. sweep --recorded, then lookup (3 x 3000 was recorded as 4 x 4096)"
"$bin" sweep --recorded --db "$db" >"$dir/rec.log" 2>&1 || fail "sweep --recorded: $(tail -5 "$dir/rec.log")"
"$bin" lookup --db "$db" --system-db "$db" --heads 16 --batch 4 --seq-len 4096 | tee "$dir/lookup.txt"
grep -q 'exact key' "$dir/lookup.txt" || fail "the recorded shape is not an exact key after sweep --recorded"
echo "gpu-validators: ok"
