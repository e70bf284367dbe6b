#!/usr/bin/env bash
# sweep-shard.sh INDEX COUNT [-- EXTRA SWEEP OPTIONS...]
#
# One host's part of a plan swept over COUNT hosts: `mla-tune sweep --shard
# INDEX/COUNT` into a database on this host's local disk, then the finished
# database copied (under a temporary name, then renamed) into the shared
# results folder as shard-INDEX-of-COUNT.db.  merge-shards.sh joins them.
# The Slurm array (slurm-sweep.sbatch) and the Kubernetes Indexed Job
# (k8s-indexed-job.yaml) both run this with their own index; see README.md.
#
# Environment:
#   PLAN      the plan: a file every host can read, or a shipped plan's name
#             (deepseek-v3-tp8, ...)                                 (required)
#   RESULTS   the shared results folder, one per sweep of one plan   (required)
#   SCRATCH   a folder on this host's local disk for the working database
#             (default ${TMPDIR:-/tmp}); SQLite's WAL mode, which the sweep
#             uses, must not be used on a network filesystem
#   DEVICES   the GPUs of this host to use (default all)
#   MLA_TUNE  the mla-tune binary (default: mla-tune on PATH)
# Options after `--` go to `mla-tune sweep` as they are (e.g. --job-timeout).
#
# Exit: 0 done (or done before: the shard is already in RESULTS), 2 usage,
# otherwise the sweep's or the copy's failure.
set -euo pipefail
die() { echo "sweep-shard: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: sweep-shard.sh INDEX COUNT [-- EXTRA SWEEP OPTIONS...]"
index=$1 count=$2
shift 2
if [ $# -gt 0 ]; then
  [ "$1" = "--" ] || die "unexpected argument '$1' (extra sweep options go after --)"
  shift
fi
[[ "$count" =~ ^[1-9][0-9]*$ ]] || die "COUNT must be a positive whole number, got '$count'"
[[ "$index" =~ ^(0|[1-9][0-9]*)$ ]] && [ "$index" -lt "$count" ] ||
  die "INDEX must be a whole number from 0 to COUNT-1 ($((count - 1))), got '$index'"
[ -n "${PLAN:-}" ] || die "set PLAN to a plan file or a shipped plan's name"
[ -n "${RESULTS:-}" ] || die "set RESULTS to the shared results folder"
mla_tune=${MLA_TUNE:-mla-tune}
scratch=${SCRATCH:-${TMPDIR:-/tmp}}
devices=${DEVICES:-all}

name=shard-$index-of-$count
final=$RESULTS/$name.db
mkdir -p "$RESULTS" "$scratch"
if [ -e "$final" ]; then
  # a task the scheduler ran again after it had finished: nothing to do
  echo "sweep-shard: $final exists: shard $index/$count is done"
  exit 0
fi
# the working database stays on the local disk; a task restarted on the same
# host resumes from it (the sweep skips what it has)
work=$scratch/mla-tune-$(basename "$RESULTS")-$name.db
echo "sweep-shard: shard $index/$count of $PLAN on $(hostname) into $work"
"$mla_tune" sweep --config "$PLAN" --db "$work" --shard "$index/$count" --devices "$devices" "$@"
# a sweep that ended closes its database: SQLite folds the -wal file back in
# and removes it, so the one file is the whole database
[ ! -s "$work-wal" ] || { echo "sweep-shard: $work-wal is left: the database is still open" >&2; exit 1; }
cp "$work" "$RESULTS/.$name.db.partial"
mv "$RESULTS/.$name.db.partial" "$final"
echo "sweep-shard: wrote $final"
