#!/usr/bin/env bash
# errors.sh MLA_TUNE - what a mistyped or impossible request gets: an error
# naming the problem and a non-zero exit, never a silent default.  Also the
# other side of each: the valid form of the same request works.
set -euo pipefail
bin=$1
dir=$(mktemp -d /tmp/mla-tune-errors-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "errors: FAIL: $*" >&2; exit 1; }
# expect RC PATTERN CMD...: runs CMD, wants exit RC and PATTERN on stderr
expect() {
  local rc=$1 pattern=$2; shift 2
  set +e; "$@" >out.txt 2>err.txt; local got=$?; set -e
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, not $rc: $(cat err.txt)"
  grep -qE -- "$pattern" err.txt || fail "'$*': stderr lacks /$pattern/: $(cat err.txt)"
}
unset MLA_TUNE_DB MLA_TUNE_SYSTEM_DB MLA_TUNE_SYSTEM_DB_PATH
cat > plan.yaml <<'YAML'
name: errors-fixture
problems:
  - {heads: 16, batch: [1, 8], seq_len: [1024]}
timing: {warmup: 1, reps: 5}
search: {strategy: random, budget: 6, seed: 5}
YAML
"$bin" sweep --config plan.yaml --db a.db --fake-device 'wrong:num_splits=2' >/dev/null 2>&1 || fail "sweep a"
sed -i 's/seq_len: \[1024\]/seq_len: [4096]/' plan.yaml
"$bin" sweep --config plan.yaml --db b.db --fake-device 'wrong:num_splits=2' >/dev/null 2>&1 || fail "sweep b"
sed -i 's/batch: \[1, 8\]/batch: [32]/' plan.yaml
"$bin" sweep --config plan.yaml --db c.db --fake-device 'wrong:num_splits=2' >/dev/null 2>&1 || fail "sweep c"
count() { sqlite3 "$1" 'SELECT count(*) FROM measurements'; }

# merge of n inputs: every measurement of each, once; --output = -o
"$bin" merge a.db b.db c.db --output abc.db >/dev/null || fail "merge of three"
[ "$(count abc.db)" -eq $(( $(count a.db) + $(count b.db) + $(count c.db) )) ] || fail "merge lost or doubled rows"
"$bin" merge abc.db a.db -o again.db >/dev/null || fail "merge with shared history"
[ "$(count again.db)" -eq "$(count abc.db)" ] || fail "merge duplicated shared measurements"
expect 2 "two or more inputs" "$bin" merge a.db -o one.db

# an export that would be empty fails and leaves no file
expect 1 "no measurements for gfx942.*sm_90" "$bin" export --arch gfx942 --db abc.db -o gfx942.db
[ ! -e gfx942.db ] || fail "the empty export left gfx942.db"
"$bin" export --arch sm_90 --db abc.db -o sm90.db >/dev/null || fail "export sm_90"

# report: a key beyond the table is an error; the last row works
n=$("$bin" show --db abc.db --system-db abc.db | tail -1 | sed -E 's/^([0-9]+) choices.*/\1/')
expect 2 "has $n problem keys" "$bin" report --db abc.db -o rep --key "$n"
"$bin" report --db abc.db -o rep --key $((n - 1)) >/dev/null || fail "report --key $((n - 1))"
expect 2 "--key wants" "$bin" report --db abc.db -o rep --key two
expect 2 "--matrix-tflops wants" "$bin" report --db abc.db -o rep --matrix-tflops fast

# unknown architecture, option or command
expect 2 "unknown architecture 'sm_9'" "$bin" show --db abc.db --arch sm_9
expect 2 "unknown option '--head'" "$bin" lookup --arch sm_90 --head 16 --batch 1 --seq-len 1
expect 2 "unknown command 'shwo'" "$bin" shwo
expect 2 "max-distance wants" "$bin" lookup --arch sm_90 --heads 16 --batch 1 --seq-len 1 --max-distance -1
expect 2 "max-batch 4 must be at least --batch \\(8\\)" "$bin" lookup --arch sm_90 --heads 16 --batch 8 --seq-len 1 --max-batch 4
expect 2 "memory-gbps wants a bandwidth" "$bin" lookup --arch sm_90 --heads 16 --batch 8 --seq-len 1 --memory-gbps 0
expect 2 "memory-gbps wants a bandwidth" "$bin" lookup --arch sm_90 --heads 16 --batch 8 --seq-len 1 --memory-gbps 4800x

# holdout: the database is required and must exist; a head count is 1..128
expect 2 "--db FILE is required" "$bin" holdout
expect 1 "nope.db: no such file" "$bin" holdout --db nope.db
expect 2 "--heads takes 1..128, not '0'" "$bin" holdout --db abc.db --heads 0
expect 1 "no decode key" "$bin" holdout --db abc.db --arch gfx942
"$bin" holdout --db abc.db > holdout.txt || fail "holdout of a swept DB"
grep -qE "^[0-9]+ keys held out" holdout.txt || fail "holdout without its summary: $(cat holdout.txt)"

# aliases: sweep --plan = --config, --device = --devices
"$bin" sweep --dry-run --plan plan.yaml > dry.txt || fail "sweep --plan"
grep -qE '^estimate: about [0-9]+ s \([0-9.]+ min\) on one GPU' dry.txt || fail "dry run without an estimate: $(cat dry.txt)"
"$bin" sweep --plan plan.yaml --db d.db --device 0 --fake-device 'wrong:num_splits=2' >/dev/null 2>&1 ||
  fail "sweep --device"

# the heuristic names the part of the problem no entry has
"$bin" lookup --arch sm_90 --db abc.db --system-db abc.db --heads 16 --batch 8 --seq-len 1024 --page-size 16 > h.txt
grep -q "no entry with page size 16 (the entries that match so far have: 64)" h.txt || fail "page size: $(cat h.txt)"
"$bin" lookup --arch sm_90 --db abc.db --system-db abc.db --heads 32 --batch 8 --seq-len 1024 > h.txt
grep -q "no entry with head count 32 (the entries that match so far have: 16)" h.txt || fail "heads: $(cat h.txt)"
# crossover: its options checked before any GPU work, the DB path before the GPU
expect 2 "bad value '1,2000' for --sq" "$bin" crossover --sq 1,2000
expect 2 "bad value 'fp8e4m3' for --dtype" "$bin" crossover --dtype fp8e4m3
expect 2 "unknown option '--contexts'" "$bin" crossover --contexts 4096
expect 1 "crossover: .*/no/such/dir/x.db" "$bin" crossover --db /no/such/dir/x.db
"$bin" crossover --help | grep -q -- "--check" || fail "crossover --help lacks --check"

# the timing commands' integer options: the whole text a number in range,
# the error saying which (atoi read "30x" as 30, "x" as GPU 0, "2" reps as
# a bare "bad value")
expect 2 "bad value '2' for --reps \(a whole number, 3\.\.10000\)" "$bin" bench --reps 2
expect 2 "bad value '30x' for --reps" "$bin" bench --reps 30x
expect 2 "bad value 'x' for --device \(a GPU ordinal" "$bin" bench --device x
expect 2 "bad value '' for --warmup" "$bin" bench --warmup ''
expect 2 "bad value '0' for --page-size \(a whole number of keys" "$bin" bench --page-size 0
expect 2 "bench --prefill: bad value '-1' for --warmup" "$bin" bench --prefill --warmup -1
expect 2 "crossover: bad value '1e3' for --reps" "$bin" crossover --reps 1e3
expect 2 "crossover: bad value '-2' for --device" "$bin" crossover --device -2
echo "errors: ok"
