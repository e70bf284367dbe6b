#!/usr/bin/env bash
# quick-sweep-nogpu.sh SOURCE_DIR BUILD_DIR - the main job on a host with no
# GPU (skipped, exit 77, where there is one: there it sweeps): it exits 0
# and shows the plan with its estimate, one lookup in the shipped system DB
# per key of the plan, and what it needs to measure; with
# MLA_TUNE_REQUIRE_GPU=1 the same ends in exit 3.
set -euo pipefail
src=$1 build=$2
fail() { echo "quick-sweep-nogpu: FAIL: $*" >&2; exit 1; }
if "$build/mla-tune" devices >/dev/null 2>&1; then
  echo "SKIP: this host has a GPU (the main job would sweep)"; exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
MLA_TUNE_BUILD_DIR=$build MLA_TUNE_SKIP_SETUP=1 "$src/tuner/quick-sweep.sh" > "$out" 2>&1 ||
  fail "exited $?: $(cat "$out")"
keys=$(grep -cE '^[0-9]+ +16 +1 +64 ' "$out" || true)
[ "$keys" -gt 0 ] || fail "no plan rows: $(cat "$out")"
grep -q '^estimate: about ' "$out" || fail "no estimate"
runs=$(grep -c '^     runs   mla_decode' "$out" || true)
[ "$runs" -eq "$keys" ] || fail "$keys keys, $runs lookups"
grep -q 'from the system DB' "$out" || fail "lookups did not read the shipped system DB"
grep -q '^== to measure' "$out" || fail "no next step"
set +e
MLA_TUNE_REQUIRE_GPU=1 MLA_TUNE_BUILD_DIR=$build MLA_TUNE_SKIP_SETUP=1 "$src/tuner/quick-sweep.sh" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "MLA_TUNE_REQUIRE_GPU=1: exit $rc, not 3"
echo "quick-sweep-nogpu: ok ($keys keys shown with the shipped DB's answers)"
