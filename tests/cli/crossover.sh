#!/usr/bin/env bash
# crossover.sh MLA_TUNE CROSSOVER_POINTS - `mla-tune lookup --crossover`,
# `show` and export / merge on crossover points written by the fixture
# writer (crossover_points.c, through mt_db_put_crossover): the measured
# answer with its numbers (an exact point, an interpolated one, the nearest
# context, the user DB over the system DB), the flop rule where nothing was
# measured for the dtypes, --json agreeing with the text form, a shipped
# (exported) file and a merge keeping the points, and the errors a
# mistyped request gets.  No GPU: --arch everywhere.
set -euo pipefail
bin=$1 points=$2
dir=$(mktemp -d /tmp/mla-tune-crossover-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "crossover: FAIL: $*" >&2; exit 1; }
expect() {  # expect RC PATTERN CMD...: exit RC and PATTERN on stderr
  local rc=$1 pattern=$2; shift 2
  set +e; "$@" >out.txt 2>err.txt; local got=$?; set -e
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, not $rc: $(cat err.txt)"
  grep -qE -- "$pattern" err.txt || fail "'$*': stderr lacks /$pattern/: $(cat err.txt)"
}
unset MLA_TUNE_DB MLA_TUNE_SYSTEM_DB MLA_TUNE_SYSTEM_DB_PATH
export XDG_DATA_HOME=$dir/xdg  # no default user DB

# the system DB: sm_90, 132 CUs, 128 heads, bf16/bf16, contexts 4096 and 16384.
# At 4096: MHA - MQA is +1 at sq 64 and -0.5 at 128, so MHA from sq 107.
"$points" system.db <<'POINTS' || fail "fixture system.db"
sm_90 132 128 bf16 bf16 32 4096 1.0 2.0
sm_90 132 128 bf16 bf16 64 4096 2.0 3.0
sm_90 132 128 bf16 bf16 128 4096 4.0 3.5
sm_90 132 128 bf16 bf16 256 4096 8.0 5.0
sm_90 132 128 bf16 bf16 64 16384 6.0 5.0
sm_90 132 128 bf16 bf16 128 16384 12.0 9.0
POINTS
# the user DB re-measured sq 256 at 4096
"$points" user.db <<'POINTS' || fail "fixture user.db"
sm_90 132 128 bf16 bf16 256 4096 8.0 6.0
POINTS
look() { "$bin" lookup --crossover --arch sm_90 --db user.db --system-db system.db "$@"; }

# an exact point
look --heads 128 --sq 64 --context 4096 > exact.txt
grep -q '^  form     MQA (measured, system DB)$' exact.txt || fail "exact: $(cat exact.txt)"
grep -q '^  times    MQA 2.0000 ms, MHA 3.0000 ms at sq 64$' exact.txt || fail "exact times: $(cat exact.txt)"
grep -q '^  boundary MHA from sq 107 at context 4096$' exact.txt || fail "exact boundary: $(cat exact.txt)"
# the points measured at that context, with their winners; sq 256 from the user DB
grep -qE '^ +128 +4.0000 +3.5000  MHA +system$' exact.txt || fail "table: $(cat exact.txt)"
grep -qE '^ +256 +8.0000 +6.0000  MHA +user$' exact.txt || fail "user point: $(cat exact.txt)"
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+ +[0-9.]+  (MQA|MHA) ' exact.txt)" -eq 4 ] || fail "not 4 points at 4096: $(cat exact.txt)"

# interpolated three quarters of the way from 64 to 128: MQA 3.5, MHA 3.375
look --heads 128 --sq 112 --context 4096 > mid.txt
grep -q '^  form     MHA (measured, system DB)$' mid.txt || fail "mid: $(cat mid.txt)"
grep -q '^  times    MQA 3.5000 ms, MHA 3.3750 ms at sq 112$' mid.txt || fail "mid times: $(cat mid.txt)"
grep -q 'points   132 CUs, 128 heads, context 4096: sq 64 (MQA 2.0000, MHA 3.0000 ms, system) sq 128' mid.txt ||
  fail "mid points: $(cat mid.txt)"
grep -q 'interpolated between sq 64 and 128' mid.txt || fail "mid why: $(cat mid.txt)"
# between the system's 128 and the user's 256
look --heads 128 --sq 192 --context 4096 --json > mixed.json
python3 - <<'PY' || fail "mixed sources"
import json
d = json.load(open("mixed.json"))
assert d["source"] == "user+system" and d["mqa_ms"] == 6.0 and d["mha_ms"] == 4.75, d
assert [p["db"] for p in d["points_used"]] == ["system", "user"], d["points_used"]
PY

# --json agrees with the text form and the fixture
look --heads 128 --sq 112 --context 4096 --json > mid.json
python3 - <<'PY' || fail "lookup --crossover --json"
import json
d = json.load(open("mid.json")); t = open("mid.txt").read()
assert d["form"] == "MHA" and d["measured"] is True and d["source"] == "system", d
assert (d["mqa_ms"], d["mha_ms"], d["boundary_sq"]) == (3.5, 3.375, 107), d
assert d["key"] == {"compute_units": 132, "heads": 128, "context": 4096, "lo_sq": 64, "hi_sq": 128}, d["key"]
assert [p["sq"] for p in d["points_used"]] == [64, 128], d["points_used"]
at = [(p["sq"], p["mqa_ms"], p["mha_ms"], p["winner"], p["db"]) for p in d["points_at_context"]]
assert at == [(32, 1.0, 2.0, "MQA", "system"), (64, 2.0, 3.0, "MQA", "system"), (128, 4.0, 3.5, "MHA", "system"),
              (256, 8.0, 6.0, "MHA", "user")], at
p = d["points_at_context"][0]
assert (p["mqa_absorb_ms"], p["mqa_attention_ms"], p["mqa_output_ms"], p["mha_decompress_ms"],
        p["mha_attention_ms"]) == (0.25, 0.5, 0.25, 0.8, 1.2), p
assert d["points_read"] == 6 and d["why"] in t, d
PY

# the nearest context by ratio: 9000 is x2.20 from 4096, x1.82 from 16384
look --heads 128 --sq 64 --context 9000 > near.txt
grep -q '^  form     MHA (measured, system DB)$' near.txt || fail "near: $(cat near.txt)"
grep -q 'at context 16384 (nearest to 9000, x1.82)' near.txt || fail "near why: $(cat near.txt)"

# nothing measured for fp16: the flop rule, MHA from sq 168 at context 4096
look --heads 128 --sq 167 --context 4096 --q-dtype fp16 > rule.txt
grep -q '^  form     MQA by the flop rule (6 crossover points read for sm_90; none for these dtypes)$' rule.txt ||
  fail "rule: $(cat rule.txt)"
grep -q '^  boundary MHA from sq 168 at context 4096 (by the flops)$' rule.txt || fail "rule boundary: $(cat rule.txt)"
grep -q 'no crossover measured for sm_90 with fp16/bf16' rule.txt || fail "rule why: $(cat rule.txt)"
look --heads 128 --sq 168 --context 4096 --q-dtype fp16 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["form"] == "MHA" and d["measured"] is False and d["source"] == "rule" and d["key"] is None, d
assert d["mqa_ms"] is None and d["boundary_sq"] == 168 and d["flops"]["mha"] <= d["flops"]["mqa"], d
' || fail "rule --json"

# show: the points after the choices, the choices count still last; --crossover alone, and as JSON
"$bin" show --db user.db --system-db system.db > show.txt || fail "show: $?"
grep -qE '^user +sm_90 +132 +128 bf16/bf16 +4096 +256 +8.0000 +6.0000 MHA ' show.txt || fail "show user point: $(cat show.txt)"
grep -qE '^system +sm_90 +132 +128 bf16/bf16 +4096 +32 +1.0000 +2.0000 MQA +0.2500/0.5000/0.2500, 0.8000/1.2000$' show.txt ||
  fail "show system point: $(cat show.txt)"
grep -q '^6 crossover points$' show.txt || fail "show count: $(cat show.txt)"
tail -1 show.txt | grep -qE '^0 choices ' || fail "show's last line: $(tail -1 show.txt)"
"$bin" show --db user.db --system-db system.db --crossover --json > show.json
python3 -c '
import json
rows = json.load(open("show.json"))
assert len(rows) == 6 and sum(r["db"] == "user" for r in rows) == 1, rows
r = [r for r in rows if r["db"] == "user"][0]
assert (r["sq"], r["context"], r["mha_ms"], r["winner"], r["blas"]) == (256, 4096, 6.0, "MHA", "fixture BLAS 1.0"), r
' || fail "show --crossover --json"

"$bin" show --db user.db --system-db system.db --crossover --arch gfx942 > none.txt
grep -q '^0 crossover points (user DB user.db, system DB system.db)$' none.txt || fail "show --crossover, none: $(cat none.txt)"

# export of a file that holds only crossover points: shipped, and answers as a system DB
"$bin" export --arch sm_90 --db system.db -o shipped.db > export.txt || fail "export: $(cat export.txt)"
grep -q 'wrote shipped.db (0 measurements and 6 crossover points for sm_90)' export.txt || fail "export: $(cat export.txt)"
[ "$(sqlite3 shipped.db 'PRAGMA journal_mode')" = delete ] || fail "the export is not shippable"
"$bin" lookup --crossover --arch sm_90 --system-db shipped.db --heads 128 --sq 112 --context 4096 > shipped.txt
grep -q '^  times    MQA 3.5000 ms, MHA 3.3750 ms at sq 112$' shipped.txt || fail "shipped: $(cat shipped.txt)"
expect 1 "no measurements for gfx942 and no crossover points.*sm_90" "$bin" export --arch gfx942 --db system.db -o none.db
# merge: the newer of the shared point (user.db's sq 256) stays
"$bin" merge system.db user.db -o merged.db > merge.txt || fail "merge: $(cat merge.txt)"
grep -q '0 measurements and 1 crossover point from user.db' merge.txt || fail "merge: $(cat merge.txt)"
[ "$(sqlite3 merged.db 'SELECT mha_ms FROM crossover WHERE sq = 256')" = 6.0 ] || fail "merge kept the older point"

# what a mistyped request gets
expect 2 "are required \(missing: --heads\)" "$bin" lookup --crossover --arch sm_90 --sq 64 --context 0
expect 2 "are required \(missing: --context\)" "$bin" lookup --crossover --arch sm_90 --heads 16 --sq 64
expect 2 "--sq wants an integer 1..1024, got '1025'" look --heads 16 --sq 1025 --context 0
expect 2 "--heads wants an integer 1..128, got '0'" look --heads 0 --sq 64 --context 0
expect 2 "--context wants an integer 0..2147483647, got '-1'" look --heads 16 --sq 64 --context -1
expect 2 "--context wants an integer 0..2147483647, got '4096x'" look --heads 16 --sq 64 --context 4096x
expect 2 "--q-dtype is bf16 or fp16 \(q and out\), got 'fp8'" look --heads 16 --sq 64 --context 0 --q-dtype fp8
expect 2 "unknown dtype 'fp4'" look --heads 16 --sq 64 --context 0 --kv-dtype fp4
expect 2 "unknown architecture 'sm_9'" "$bin" lookup --crossover --arch sm_9 --heads 16 --sq 64 --context 0
expect 2 "unknown option '--chunk'" look --heads 16 --chunk 64 --context 0
expect 2 "--prefill .* and --crossover .* are two questions" "$bin" lookup --prefill --crossover --arch sm_90
expect 1 "cannot read database missing.db" "$bin" lookup --crossover --arch sm_90 --db missing.db --heads 16 \
  --sq 64 --context 0
cp system.db hostile.db
sqlite3 hostile.db "UPDATE crossover SET mha_ms = 'soon' WHERE sq = 32"
expect 1 "hostile.db: invalid crossover point .*mha_ms 'soon' is not a positive time" \
  "$bin" lookup --crossover --arch sm_90 --system-db hostile.db --heads 16 --sq 64 --context 0
expect 1 "invalid crossover point" "$bin" show --system-db hostile.db --db user.db
echo "crossover: ok"
