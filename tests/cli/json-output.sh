#!/usr/bin/env bash
# json-output.sh MLA_TUNE - every read command's --json goes through a JSON
# parser (python3 -m json.tool), and what it says agrees with the text form
# and the database: show lists as many choices as the text form counts, with
# params as an object equal to the stored "k=v,..." string; lookup reports
# the variant, distance and nearest key the text form prints; devices is an
# object whether or not a GPU is there.  The database comes from a sweep on
# the fake device, so nothing here depends on a GPU or on fixed numbers.
set -euo pipefail
bin=$1
dir=$(mktemp -d /tmp/mla-tune-json-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "json-output: FAIL: $*" >&2; exit 1; }
parses() { python3 -m json.tool >/dev/null || fail "$1: not JSON"; }
export MLA_TUNE_DB=$dir/fixture.db MLA_TUNE_SYSTEM_DB=$dir/fixture.db

cat > plan.yaml <<'YAML'
name: json-fixture
problems:
  - {heads: 16, batch: [1, 64], seq_len: [1024, 8192]}
timing: {warmup: 1, reps: 5}
search: {strategy: random, budget: 8, seed: 3}
YAML
"$bin" sweep --config plan.yaml --db fixture.db --fake-device 'wrong:num_splits=2' >/dev/null 2>&1 ||
  fail "fixture sweep"

# show: parses; one element per choice; params an object matching the text
"$bin" show --json | parses "show --json"
n_text=$("$bin" show | tail -1 | sed -E 's/^([0-9]+) choices.*/\1/')
"$bin" show --json > show.json
"$bin" show > show.txt
python3 - "$n_text" <<'PY' || fail "show --json disagrees with show"
import json, sys
rows = json.load(open("show.json"))
assert len(rows) == int(sys.argv[1]), (len(rows), sys.argv[1])
text = open("show.txt").read()
for r in rows:
    assert isinstance(r["params"], dict) and r["params"], r["params"]
    flat = ",".join(f"{k}={v}" for k, v in r["params"].items())
    assert f'{r["family"]}:{flat} ' in text, flat
    assert all(isinstance(v, int) for v in r["params"].values())
PY

# lookup: parses, exact and far; agrees with the text form
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 --json | parses "lookup --json"
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 --json > exact.json
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 > exact.txt
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 --json > far.json
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 > far.txt
"$bin" lookup --arch sm_90 --heads 16 --batch 8 --seq-len 4096 --page-size 1 --json > heuristic.json
"$bin" lookup --arch sm_90 --heads 16 --batch 8 --seq-len unknown --json | parses "lookup --seq-len unknown --json"
python3 - <<'PY' || fail "lookup --json disagrees with lookup"
import json
e = json.load(open("exact.json")); t = open("exact.txt").read()
assert e["source"] == "exact" and e["distance"] == 0 and not e["far"], e
flat = ",".join(f"{k}={v}" for k, v in e["params"].items())
assert f'runs   {e["family"]}:{flat}\n' in t, (flat, t)
f = json.load(open("far.json")); t = open("far.txt").read()
# nearest measured: batch 64 x 8192: |log2(1024/64)| + |log2(65536/8192)| = 4 + 3
assert f["source"] == "nearest" and abs(f["distance"] - 7) < 1e-9 and f["far"], f
assert f["nearest_key"]["batch"] == 64 and f["nearest_key"]["seq_len"] == 8192, f
assert "FAR" in t and "distance 7.00" in t, t
h = json.load(open("heuristic.json"))
assert h["source"] == "heuristic" and h["nearest_key"] is None and "page size 1" in h["missing"], h
PY

# devices: an object with a list, GPU or not (no GPU: exit 1 and the reason)
set +e
"$bin" devices --json > devices.json 2>/dev/null
set -e
parses "devices --json" < devices.json
python3 -c 'import json; d = json.load(open("devices.json")); assert isinstance(d["devices"], list) and ("error" in d)' ||
  fail "devices --json shape"

# compile and bench, where they take --json
for cmd in "compile --arch sm_90 --defaults-only --no-cache" "bench --heads 16 --batch 1 --seq-len 1024 --reps 3"; do
  if "$bin" ${cmd%% *} --help | grep -q -- --json; then
    set +e; "$bin" $cmd --json > out.json 2>/dev/null; set -e
    parses "$cmd --json" < out.json
  else
    echo "json-output: note: '${cmd%% *}' has no --json yet"
  fi
done
echo "json-output: ok"
