#!/usr/bin/env bash
# merge-shards.sh RESULTS [OUT]
#
# Joins the shard databases that sweep-shard.sh left in RESULTS
# (shard-I-of-N.db for I = 0 .. N-1) with one `mla-tune merge` into OUT
# (default RESULTS/merged.db; merge never overwrites a file).  Refuses a
# folder with a shard missing or with shards of two different counts, so a
# partial fan-out is never mistaken for a whole one.
#
# Environment: MLA_TUNE  the mla-tune binary (default: mla-tune on PATH)
set -euo pipefail
die() { echo "merge-shards: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: merge-shards.sh RESULTS [OUT]"
results=$1
out=${2:-$results/merged.db}
mla_tune=${MLA_TUNE:-mla-tune}
[ -d "$results" ] || die "$results is not a folder"

shopt -s nullglob
files=("$results"/shard-*-of-*.db)
[ ${#files[@]} -gt 0 ] || die "no shard-I-of-N.db in $results"
count=
for f in "${files[@]}"; do
  b=$(basename "$f")
  [[ "$b" =~ ^shard-(0|[1-9][0-9]*)-of-([1-9][0-9]*)\.db$ ]] || die "$f: not a name sweep-shard.sh writes"
  n=${BASH_REMATCH[2]}
  [ -z "$count" ] || [ "$count" = "$n" ] || die "$results holds shards of $count and of $n: one sweep per folder"
  count=$n
done
inputs=()
missing=()
for ((i = 0; i < count; i++)); do
  f=$results/shard-$i-of-$count.db
  if [ -f "$f" ]; then inputs+=("$f"); else missing+=("$i"); fi
done
[ ${#missing[@]} -eq 0 ] || die "$results lacks shard(s) ${missing[*]} of $count: run those indexes again"
[ ${#files[@]} -eq "$count" ] || die "$results holds a shard numbered $count or more of $count"

if [ "$count" -eq 1 ]; then
  # merge wants two or more inputs; one shard is the whole sweep already
  [ ! -e "$out" ] || die "$out already exists"
  cp "${inputs[0]}" "$out"
  echo "merge-shards: one shard: copied to $out"
else
  "$mla_tune" merge "${inputs[@]}" -o "$out"
fi
echo "merge-shards: $count shard(s) of $results -> $out"
