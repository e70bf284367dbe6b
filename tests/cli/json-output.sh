#!/usr/bin/env bash
# json-output.sh MLA_TUNE - every read command's --json goes through a JSON
# parser (python3 -m json.tool), and what it says agrees with the text form
# and the database: show lists as many choices as the text form counts, with
# params as an object equal to the stored "k=v,..." string; lookup reports
# the variant, distance and nearest key the text form prints; devices is an
# object whether or not a GPU is there; compile lists the table's variants
# with structured params; bench is an object with the reason when there is
# no GPU, and on the CPU emulation of an AMD GPU its rows agree with the
# table.  The database comes from a sweep on the fake device, so nothing
# here depends on a GPU or on fixed numbers.
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

# show: parses; one element per choice; params an object matching the text;
# the gain over the heuristic as the text shows it, or null and why
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
    # the gain over the built-in heuristic: known (with its range, the
    # heuristic's variant as an object) or null with the reason, as the
    # text form's column says
    g = r["gain_over_heuristic"]
    if g is None:
        assert r["heuristic_ms"] is None and r["gain_low"] is None and r["gain_missing"], r
        assert f"'-' for " in text and r["gain_missing"] in text, r["gain_missing"]
    else:
        assert isinstance(r["heuristic"], dict) and r["gain_missing"] is None, r
        assert abs(r["heuristic_ms"] / r["median_ms"] - g) < 1e-3 * g and r["gain_low"] <= g <= r["gain_high"], r
        assert f'{g:.2f}x ({r["gain_low"]:.2f}-{r["gain_high"]:.2f})' in text, r
assert any(r["gain_over_heuristic"] is not None for r in rows), "no gain known in a fresh sweep"
PY

# holdout: parses; a row per key of the DB; its summary agrees with the
# rows and with the text form
"$bin" holdout --db fixture.db --json > holdout.json
"$bin" holdout --db fixture.db > holdout.txt
python3 - <<'PY' || fail "holdout --json disagrees with holdout"
import json, math, re
h = json.load(open("holdout.json"))
show = json.load(open("show.json"))
keys, s = h["keys"], h["summary"]
assert len(keys) == len(show) == s["keys"], (len(keys), len(show))
both = [k for k in keys if k["as_measured_ms"] is not None and k["runs_ms"] is not None]
assert s["both_timed"] == len(both) and s["untimed"] == len(keys) - len(both)
assert s["rescaled"] == sum(k["rescaled"] for k in keys)
for k in keys:
    assert isinstance(k["runs"], dict) and isinstance(k["as_measured"], dict) and isinstance(k["rule"], dict)
    assert k["rescaled"] == (k["runs"] != k["as_measured"]), k
# the rule's variant, timed by the sweep on every key (the fixture's fake
# device fails 2 splits: those keys have none)
assert s["rule_timed"] == sum(k["rule_ms"] is not None for k in both) > 0, s
if both:
    g = math.exp(sum(math.log(k["runs_ms"] / k["choice_ms"]) for k in both) / len(both))
    assert abs(g - s["runs_geomean"]) < 1e-4 * g, (g, s)  # JSON numbers carry 6 digits
text = open("holdout.txt").read()
assert re.search(rf"^{s['keys']} keys held out; {s['rescaled']} rescaled; {s['untimed']} with", text, re.M), text
PY

# lookup: parses, exact and far; agrees with the text form
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 --json | parses "lookup --json"
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 --json > exact.json
"$bin" lookup --arch sm_90 --heads 16 --batch 64 --seq-len 8192 > exact.txt
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 --json > far.json
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 > far.txt
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 --memory-gbps 4800 --json > far-bw.json
"$bin" lookup --arch sm_90 --heads 16 --batch 1024 --seq-len 65536 --memory-gbps 4800 > far-bw.txt
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
# the bandwidth the rescale weighed: null with --arch alone, as given with --memory-gbps
assert f["memory_gbps"] is None and e["memory_gbps"] is None, (f, e)
assert "memory bandwidth not known" in t, t
b = json.load(open("far-bw.json"))
assert b["memory_gbps"] == 4800 and "  for    132 CUs, 4800 GB/s of memory bandwidth\n" in open("far-bw.txt").read(), b
h = json.load(open("heuristic.json"))
assert h["source"] == "heuristic" and h["nearest_key"] is None and "page size 1" in h["missing"], h
# whose keys: the fixture's rows name the fake device; the text says the same
assert isinstance(e["key_device"], str) and e["key_device"], e
assert f'  on     {e["key_device"]} ({e["key_compute_units"]} CUs)\n' in open("exact.txt").read(), e
assert h["key_device"] is None, h
PY

# devices: an object with a list, GPU or not (no GPU: exit 1 and the reason)
set +e
"$bin" devices --json > devices.json 2>/dev/null
set -e
parses "devices --json" < devices.json
python3 -c 'import json; d = json.load(open("devices.json")); assert isinstance(d["devices"], list) and ("error" in d)' ||
  fail "devices --json shape"

# compile: parses; the same variants, statuses and counts as the table
"$bin" compile --arch sm_90 --defaults-only --cache-dir "$dir/cc" --all-pages --json > compile.json ||
  fail "compile --json exit $?"
parses "compile --json" < compile.json
"$bin" compile --arch sm_90 --defaults-only --cache-dir "$dir/cc" --all-pages > compile.txt || fail "compile exit $?"
python3 - <<'PY' || fail "compile --json disagrees with compile"
import json
d = json.load(open("compile.json")); t = open("compile.txt").read()
assert d["arch"] == "sm_90" and d["cache"].endswith("/cc"), d
assert [p["page_size"] for p in d["problems"]] == [1, 16, 64], d["problems"]
variants = [v for p in d["problems"] for v in p["variants"]]
assert d["total"] == len(variants) == 3 and d["ok"] + d["failed"] + d["serialized"] == d["total"], d
assert f'{d["total"]} variants: {d["ok"]} ok, {d["failed"]} failed, {d["serialized"]} serialized' in t, t
import re
text_rows, page = [], None  # (page, status, regs, variant) in table order
for line in t.splitlines():
    m = re.search(r" page=(\d+) ", line)
    if m: page = int(m.group(1))
    f = line.split()
    if f and f[0] in ("ok", "FAILED", "SERIAL") and len(f) == 9: text_rows.append((page, f[0], f[3], f[8]))
json_rows = [(p["page_size"], v) for p in d["problems"] for v in p["variants"]]
assert len(text_rows) == len(json_rows), (text_rows, json_rows)
for (page, status, regs, name), (jpage, v) in zip(text_rows, json_rows):
    assert isinstance(v["params"], dict) and all(isinstance(x, int) for x in v["params"].values()), v
    flat = ",".join(f"{k}={x}" for k, x in v["params"].items())
    want = {"ok": "ok", "serialized": "SERIAL", "failed": "FAILED"}[v["status"]]
    assert (jpage, flat) == (page, name) and status == want, (v, name)
    if v["status"] != "failed":
        assert v["ms"] > 0 and v["registers"] == int(regs) and v["error"] is None, (v, regs)
        assert v["scalar_registers"] is None  # NVRTC reports none: -1 in the table, null here
PY

# bench with no GPU: one object with the reason, exit 1
set +e
MLA_TUNE_BACKEND=cuda MLA_TUNE_CUDA_DRIVER=/nonexistent "$bin" bench --heads 16 --batch 1 --seq-len 1024 --reps 3 \
  --json > bench-nogpu.json 2>/dev/null
rc=$?
set -e
[ $rc = 1 ] || fail "bench --json with no GPU: exit $rc"
parses "bench --json (no GPU)" < bench-nogpu.json
python3 -c 'import json; d = json.load(open("bench-nogpu.json")); assert d["device"] is None and d["rows"] == [] and d["error"]' ||
  fail "bench --json (no GPU) shape"

# bench on the CPU emulation of an AMD GPU ("hip-cpu", where clang++ runs
# it): rows agree with the table (shapes, lengths, variant, reason); a
# ragged mix brings its uniform twin with vs_uniform; unmeasured figures
# (no ceilings with --no-ceilings) are null, and the schedule's time is
# there exactly for the length-aware rows (the one-long mix: its longest
# request is 1.6x the mean, a ragged call)
export MLA_TUNE_CACHE_DIR=$dir/cache
emu=(env MLA_TUNE_BACKEND=hip-cpu)
if "${emu[@]}" "$bin" devices >/dev/null 2>&1; then
  args=(bench --heads 16 --batch 2 --seq-len 64 --lengths uniform,one-long:128:32 --reps 3 --warmup 0 --no-ceilings)
  "${emu[@]}" "$bin" "${args[@]}" --json > bench.json || fail "bench --json on hip-cpu: exit $?"
  parses "bench --json" < bench.json
  "${emu[@]}" "$bin" "${args[@]}" > bench.txt || fail "bench on hip-cpu: exit $?"
  python3 - <<'PY' || fail "bench --json disagrees with bench"
import json
d = json.load(open("bench.json")); t = open("bench.txt").read()
rows = d["rows"]; lines = [l for l in t.splitlines() if l.lstrip()[:1].isdigit()]
assert d["error"] is None and d["failures"] == 0 and len(rows) == len(lines) == 3, (d, lines)
assert d["device"]["arch"] in t and d["ceilings"] == dict.fromkeys(d["ceilings"], None), d  # --no-ceilings
for r, l in zip(rows, lines):
    f = l.split()
    assert [r["heads"], r["sq"], r["batch"], r["seq_len"], r["max_len"]] == [int(x) for x in f[:5]], (r, l)
    flat = ",".join(f"{k}={x}" for k, x in r["params"].items())
    assert f"{flat} [{r['reason']}] ({r['lengths']})" in l, (flat, l)
    assert r["time_us"] > 0 and r["p10_us"] <= r["time_us"] <= r["p90_us"], r
    assert r["pct_copy"] is None and r["pct_matrix"] is None, r
    aware = r["params"].get("groups_per_cu", 0) > 0
    assert (r["schedule_us"] is None) != aware and r["error"] is None, r
assert [r["lengths"] for r in rows] == ["uniform", "one-long:128:32", "uniform, same keys"], rows
assert rows[1]["params"].get("groups_per_cu", 0) > 0 and rows[1]["schedule_us"] > 0, rows[1]
assert rows[0]["vs_uniform"] is None and rows[1]["vs_uniform"] is None and rows[2]["vs_uniform"] > 0, rows
PY
else
  echo "json-output: note: no CPU emulation (hip-cpu) here: bench --json checked without a GPU only"
fi
echo "json-output: ok"
