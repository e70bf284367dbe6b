#!/usr/bin/env bash
# recorded-sweep.sh MLA_TUNE - `mla-tune sweep --recorded` (issue 25, "Also
# build"): the calls a runtime recorded in a user DB (rows as
# db/recorded.c writes them at mlt_plan_destroy; the runtime's side is
# test_db_validators / test_runtime_db) become the plan's keys, exactly
# those: a uniform one and a ragged one (its longest kept, as a one-long
# mix), the same shape from two devices of the arch once, another arch's
# left out.  Swept on the fake device, the DB then measures exactly those
# keys and lookup finds them exact; a DB without recorded calls is refused.
# Validators on the way: show --stale lists what the runtime would ignore
# (another compiler where NVRTC is here to compare, a key whose kernel text
# changed) and lookup leaves it out and says so.
set -euo pipefail
bin=$1
dir=$(mktemp -d /tmp/mla-tune-recorded-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "recorded-sweep: FAIL: $*" >&2; exit 1; }
unset MLA_TUNE_DB MLA_TUNE_SYSTEM_DB MLA_TUNE_SYSTEM_DB_PATH MLA_TUNE_RECORD_CALLS
export XDG_CACHE_HOME=$dir/cache XDG_DATA_HOME=$dir/data
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3"; exit 77; }

cat > search.yaml <<'YAML'
name: recorded-search
problems:
  - {heads: 16, batch: [2], seq_len: [64]}
timing: {warmup: 1, reps: 3}
search: {strategy: random, budget: 4, seed: 3}
YAML
# a schema-5 DB with no recorded calls yet: refused, saying how to record
"$bin" sweep --config search.yaml --db user.db --fake-device 'sleep:ms=0' >first.log 2>&1 || fail "first sweep: $(cat first.log)"
set +e
"$bin" sweep --recorded --config search.yaml --db user.db --dry-run >none.log 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "no recorded calls: exit $rc: $(cat none.log)"
grep -q 'no recorded calls for sm_90.*MLA_TUNE_RECORD_CALLS' none.log || fail "no recorded calls: $(cat none.log)"

cp user.db sys.db  # a system DB of the first sweep's key only
now="strftime('%Y-%m-%dT%H:%M:%fZ','now')"
sqlite3 user.db "INSERT INTO recorded_calls VALUES
  ('sm_90',114,'mla_decode','bf16','bf16',16,1,576,512,64,32,1024,1024,'nearest',610,$now,$now),
  ('sm_90',132,'mla_decode','bf16','bf16',16,1,576,512,64,32,1024,1024,'nearest',5,$now,$now),
  ('sm_90',114,'mla_decode','bf16','fp8e4m3',128,2,576,512,64,8,4096,16384,'heuristic',61,$now,$now),
  ('gfx942',304,'mla_decode','bf16','bf16',16,1,576,512,64,4,512,512,'heuristic',9,$now,$now);"

"$bin" sweep --recorded --config search.yaml --db user.db --dry-run >dry.log 2>&1 || fail "dry run: $(cat dry.log)"
grep -q 'sweep --recorded: 2 keys from 3 recorded call shapes' dry.log || fail "dry run keys: $(cat dry.log)"
grep -q '^total: 2 keys' dry.log || fail "dry-run total: $(cat dry.log)"

"$bin" sweep --recorded --config search.yaml --db user.db --fake-device 'sleep:ms=0' >sweep.log 2>&1 ||
  fail "sweep: $(cat sweep.log)"
measured=$(sqlite3 user.db "SELECT p.n_heads || ' ' || p.sq || ' ' || p.kv_dtype || ' ' || p.batch || ' ' || p.seq_len
  || ' ' || p.max_len || ' ' || p.lengths FROM problems p WHERE p.id IN (SELECT problem_id FROM measurements)
  AND NOT (p.batch = 2 AND p.seq_len = 64) ORDER BY p.n_heads")
want="16 1 bf16 32 1024 1024 uniform
128 2 fp8e4m3 8 4096 16384 one-long:16384:2340"
[ "$measured" = "$want" ] || fail "measured keys:
$measured
want:
$want"
# validators: the fake device records this host's compiler (worker.c), so
# all is valid here; a choice measured with another compiler is stale where
# this host has one to compare with (NVRTC), and show --stale says why
"$bin" show --stale --db user.db --system-db sys.db >stale.txt 2>&1 || fail "show --stale: $(cat stale.txt)"
grep -q '^0 stale (0: kernel sources changed, 0: another compiler), 4 valid' stale.txt || fail "show --stale: $(cat stale.txt)"
if ! grep -q 'compiler not compared for sm_90' stale.txt; then
  sqlite3 sys.db "UPDATE choices SET compiler_version = 'nvrtc-0.1'"
  "$bin" show --stale --db user.db --system-db sys.db >stale.txt 2>&1 || fail "show --stale: $(cat stale.txt)"
  grep -q '^1 stale (0: kernel sources changed, 1: another compiler), 3 valid' stale.txt &&
    grep -q 'measured with nvrtc-0.1, this build compiles with nvrtc-' stale.txt || fail "show --stale: $(cat stale.txt)"
  sqlite3 sys.db "UPDATE choices SET compiler_version = ''"  # (an unknown compiler is not compared)
fi
# one key's recorded kernel text changed since: stale, listed, not used
sqlite3 user.db "UPDATE choices SET source_hash = '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'
  WHERE problem_id IN (SELECT id FROM problems WHERE n_heads = 128)"
"$bin" show --stale --db user.db --system-db sys.db >stale.txt 2>&1 || fail "show --stale: $(cat stale.txt)"
grep -q '^1 stale (1: kernel sources changed, 0: another compiler), 3 valid' stale.txt || fail "show --stale: $(cat stale.txt)"
grep -q '^user .* 128 .* 8 .* 4096 .*16384  mla_decode:' stale.txt || fail "show --stale row: $(cat stale.txt)"
"$bin" show --stale --json --db user.db --system-db sys.db | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["stale_sources"] == 1 and d["valid"] == 3 and len(d["stale"]) == 1, d
s = d["stale"][0]
assert s["heads"] == 128 and s["db"] == "user" and s["validity"] == "stale: sources" and s["compute_units"] == 132, s
' || fail "show --stale --json"
"$bin" lookup --arch sm_90 --db user.db --system-db sys.db --heads 128 --sq 2 --kv-dtype fp8e4m3 --batch 8 \
  --seq-len 4096 --max-len 16384 >stale-lookup.txt 2>&1 || fail "lookup: $(cat stale-lookup.txt)"
grep -q 'heuristic' stale-lookup.txt && grep -q 'STALE  1 entries for sm_90 ignored' stale-lookup.txt ||
  fail "lookup of a stale key: $(cat stale-lookup.txt)"
# the recorded shapes now have exact keys (the fake device is a 132-SM sm_90)
"$bin" lookup --arch sm_90 --cus 132 --db user.db --system-db sys.db --heads 16 --batch 32 --seq-len 1024 \
  >lookup.txt 2>&1 || fail "lookup: $(cat lookup.txt)"
grep -q 'exact key (batch 32, uniform, mean 1024' lookup.txt || fail "lookup: $(cat lookup.txt)"
# the H100 PCIe that recorded them (114 SMs) uses the 132-SM keys, and says so
"$bin" lookup --arch sm_90 --cus 114 --db user.db --system-db sys.db --heads 16 --batch 32 --seq-len 1024 \
  >lookup114.txt 2>&1 || fail "lookup: $(cat lookup114.txt)"
grep -q 'on the nearest device (132 CUs; this one 114)' lookup114.txt || fail "lookup 114: $(cat lookup114.txt)"
echo "recorded-sweep: ok (2 recorded shapes swept, exact afterwards; nearest device said)"
