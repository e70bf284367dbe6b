#!/usr/bin/env bash
# fleet-shards.sh MLA_TUNE SOURCE_DIR - the fan-out of configs/fleet/ run on
# this host (issue 30): a small plan swept as N = 2 and N = 3 shards, each
# shard its own process on the fake device through the shipped scripts (N=2
# through slurm-sweep.sbatch with the environment a Slurm array task gets,
# N=3 through sweep-shard.sh with the index a Kubernetes Indexed Job gives),
# all shards of one N at once, then merge-shards.sh.  The merged database
# must equal one unsharded sweep of the plan: the same number of
# measurements, no (key, variant) twice, every key of the plan, the same
# measurements and the same choices (the fake device's times are
# deterministic).  Also: a finished shard run again does nothing, a folder
# with a shard missing or of two counts is refused, the shell scripts parse
# (bash -n) and the Kubernetes manifests are Indexed Jobs whose SHARD_COUNT
# is their completions.
set -euo pipefail
bin=$1 src=$2
fleet=$src/configs/fleet
dir=$(mktemp -d /tmp/mla-tune-fleet-XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "fleet-shards: FAIL: $*" >&2; exit 1; }
unset MLA_TUNE_DB MLA_TUNE_SYSTEM_DB MLA_TUNE_SYSTEM_DB_PATH
export XDG_CACHE_HOME=$dir/cache MLA_TUNE=$bin
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3"; exit 77; }

# the examples parse
for f in "$fleet"/*.sh "$fleet"/slurm-sweep.sbatch; do bash -n "$f" || fail "bash -n $f"; done
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - "$fleet" <<'PY' || fail "Kubernetes manifests"
import sys, yaml
d = sys.argv[1]
(sweep,) = list(yaml.safe_load_all(open(d + "/k8s-indexed-job.yaml")))
(merge,) = list(yaml.safe_load_all(open(d + "/k8s-merge-job.yaml")))
for job in (sweep, merge):
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job", job.get("kind")
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
s = sweep["spec"]
assert s["completionMode"] == "Indexed", "completionMode"
assert 1 <= s["parallelism"] <= s["completions"], "parallelism"
(c,) = s["template"]["spec"]["containers"]
env = {e["name"]: e.get("value") for e in c["env"]}
assert int(env["SHARD_COUNT"]) == s["completions"], "SHARD_COUNT != completions"
assert "JOB_COMPLETION_INDEX" in " ".join(c["command"]), "the index"
assert env["RESULTS"] in " ".join(merge["spec"]["template"]["spec"]["containers"][0]["command"]), "merge folder"
print("fleet-shards: manifests: Indexed Job of %d, parallelism %d" % (s["completions"], s["parallelism"]))
PY
else
  # no PyYAML: the lines that matter, by grep
  grep -q '^kind: Job' "$fleet/k8s-indexed-job.yaml" && grep -q 'completionMode: Indexed' "$fleet/k8s-indexed-job.yaml" &&
    grep -q 'JOB_COMPLETION_INDEX' "$fleet/k8s-indexed-job.yaml" || fail "k8s-indexed-job.yaml lacks an Indexed Job"
  echo "fleet-shards: manifests checked by grep (python3 has no yaml module)"
fi

# a plan of 5 keys (uneven over 2 and 3 shards), random search: each key
# draws its candidates from its place in the whole plan, so a shard must draw
# what the unsharded sweep draws
cat > plan.yaml <<'YAML'
name: fleet-fixture
problems:
  - {heads: 16, batch: [1, 4, 16, 64, 128], seq_len: [2048]}
timing: {warmup: 1, reps: 5}
search: {strategy: random, budget: 8, seed: 11}
YAML
fake=(--fake-device 'wrong:num_splits=2')
keys=$("$bin" sweep --config plan.yaml --dry-run | sed -n 's/^total: \([0-9]*\) keys.*/\1/p')
[ "$keys" = 5 ] || fail "dry run: '$keys' keys"
"$bin" sweep --config plan.yaml --db single.db "${fake[@]}" >single.log 2>&1 || fail "single sweep: $(cat single.log)"

q() { sqlite3 "$1" "$2"; }
key_cols="p.kind, p.q_dtype, p.kv_dtype, p.n_heads, p.sq, p.d, p.dl, p.page_size, p.batch, p.seq_len, p.lengths"
keys_of() { q "$1" "SELECT $key_cols FROM problems p WHERE p.id IN (SELECT problem_id FROM measurements) ORDER BY 1,2,3,4,5,6,7,8,9,10,11"; }
meas_of() { q "$1" "SELECT $key_cols, v.family, v.params, m.status, m.median_ms FROM measurements m
  JOIN problems p ON p.id = m.problem_id JOIN variants v ON v.id = m.variant_id ORDER BY 1,2,3,4,5,6,7,8,9,10,11,12,13"; }
choices_of() { q "$1" "SELECT c.arch, $key_cols, v.family, v.params, c.median_ms, c.default_ms, c.reason FROM choices c
  JOIN problems p ON p.id = c.problem_id JOIN variants v ON v.id = c.variant_id ORDER BY 1,2,3,4,5,6,7,8,9,10,11,12"; }
n_single=$(q single.db "SELECT count(*) FROM measurements")
[ "$n_single" -gt 0 ] && [ "$(keys_of single.db | wc -l)" = 5 ] || fail "single sweep: $n_single rows"

check_merged() {  # N DB
  local n=$1 db=$2
  [ "$(q "$db" "SELECT count(*) FROM measurements")" = "$n_single" ] ||
    fail "N=$n: $(q "$db" "SELECT count(*) FROM measurements") measurements merged, $n_single in one sweep"
  [ "$(q "$db" "SELECT count(*) FROM (SELECT 1 FROM measurements GROUP BY problem_id, variant_id HAVING count(*) > 1)")" = 0 ] ||
    fail "N=$n: a (key, variant) measured twice"
  [ "$(keys_of "$db")" = "$(keys_of single.db)" ] || fail "N=$n: keys differ: $(keys_of "$db")"
  [ "$(meas_of "$db")" = "$(meas_of single.db)" ] || fail "N=$n: measurements differ from the single sweep's"
  [ "$(q "$db" "SELECT count(*) FROM choices")" = 5 ] || fail "N=$n: $(q "$db" "SELECT count(*) FROM choices") choices"
  [ "$(choices_of "$db")" = "$(choices_of single.db)" ] ||
    fail "N=$n: choices differ:"$'\n'"$(diff <(choices_of single.db) <(choices_of "$db"))"
  echo "fleet-shards: N=$n: $n_single measurements of 5 keys, no duplicates, choices = the single sweep's"
}

# N=2: two Slurm array tasks, as sbatch --array=0-1 runs them (each its own
# process, at once); the arguments after the script reach mla-tune sweep
pids=()
for i in 0 1; do
  SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=1 \
    SLURM_ARRAY_JOB_ID=4242 SLURM_SUBMIT_DIR=$src PLAN=plan.yaml RESULTS=$dir/r2 SCRATCH=$dir/node$i \
    bash "$fleet/slurm-sweep.sbatch" "${fake[@]}" >slurm-$i.log 2>&1 &
  pids+=($!)
done
for i in 0 1; do wait "${pids[$i]}" || fail "slurm task $i: $(cat slurm-$i.log)"; done
[ -f r2/shard-0-of-2.db ] && [ -f r2/shard-1-of-2.db ] || fail "r2: $(ls r2)"
[ "$(ls -A r2 | grep -c partial || true)" = 0 ] || fail "a partial copy left in r2"
[ $(( $(q r2/shard-0-of-2.db "SELECT count(*) FROM measurements") + $(q r2/shard-1-of-2.db "SELECT count(*) FROM measurements") )) \
  = "$n_single" ] || fail "N=2: the shards' counts do not add up"
bash "$fleet/merge-shards.sh" r2 >merge2.log 2>&1 || fail "merge N=2: $(cat merge2.log)"
check_merged 2 r2/merged.db
# an array that is not 0..N-1 is refused (its task count is not the shard count)
set +e
SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=1 SLURM_ARRAY_TASK_MIN=3 SLURM_ARRAY_TASK_MAX=3 SLURM_SUBMIT_DIR=$src \
  PLAN=plan.yaml RESULTS=$dir/rx SCRATCH=$dir/nodex bash "$fleet/slurm-sweep.sbatch" "${fake[@]}" >x.log 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q SHARD_COUNT x.log || fail "a lone array task 3 was not refused ($rc): $(cat x.log)"

# N=3: three Indexed Job pods (JOB_COMPLETION_INDEX 0..2), at once
pids=()
for i in 0 1 2; do
  JOB_COMPLETION_INDEX=$i SHARD_COUNT=3 PLAN=plan.yaml RESULTS=$dir/r3 SCRATCH=$dir/pod$i DEVICES=all \
    bash -c 'exec bash "$0" "$JOB_COMPLETION_INDEX" "$SHARD_COUNT" -- "${@}"' "$fleet/sweep-shard.sh" "${fake[@]}" \
    >pod-$i.log 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait "${pids[$i]}" || fail "pod $i: $(cat pod-$i.log)"; done
bash "$fleet/merge-shards.sh" r3 "$dir/merged3.db" >merge3.log 2>&1 || fail "merge N=3: $(cat merge3.log)"
check_merged 3 merged3.db

# a pod replaced after it finished: nothing measured again
PLAN=plan.yaml RESULTS=$dir/r3 SCRATCH=$dir/pod1 bash "$fleet/sweep-shard.sh" 1 3 -- "${fake[@]}" >again.log 2>&1 ||
  fail "shard 1/3 again: $(cat again.log)"
grep -q "is done" again.log || fail "shard 1/3 ran again: $(cat again.log)"
# a missing shard, or shards of two counts, are refused and write nothing
mkdir bad
cp r3/shard-0-of-3.db r3/shard-2-of-3.db bad/
set +e
bash "$fleet/merge-shards.sh" bad >bad.log 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "lacks shard(s) 1 of 3" bad.log && [ ! -e bad/merged.db ] || fail "missing shard ($rc): $(cat bad.log)"
cp r2/shard-1-of-2.db bad/
set +e
bash "$fleet/merge-shards.sh" bad >bad.log 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "shards of" bad.log || fail "mixed counts ($rc): $(cat bad.log)"
# bad indexes
set +e
PLAN=plan.yaml RESULTS=$dir/ry bash "$fleet/sweep-shard.sh" 3 3 >bad.log 2>&1
rc=$?
set -e
[ $rc = 2 ] && grep -q "INDEX must be" bad.log || fail "index 3 of 3 ($rc): $(cat bad.log)"
echo "fleet-shards: ok"
