#!/usr/bin/env bash
# bench-variants.sh MLA_TUNE < LINES - times pinned variants with `mla-tune
# bench`: each input line is "BENCH-ARGS | VARIANT" (the bench arguments
# choose the shapes); blank lines and # comments are skipped.  Prints the
# ceilings once, then one row per shape and variant.  Used to explore the
# variant space by hand before a sweep (reports/PERFLOG.md shows runs).
set -uo pipefail
bin=$1
"$bin" bench --batch 1 --seq-len 64 --reps 3 --warmup 1 2>&1 | grep -E "^(device|copy|matrix)"
while IFS= read -r line; do
  case "$line" in ''|'#'*) continue ;; esac
  args=${line%%|*}
  variant=$(echo "${line#*|}" | tr -d ' ')
  # shellcheck disable=SC2086
  "$bin" bench --no-ceilings $args --variant "$variant" 2>&1 | grep -vE "^(device|  *N |   N )" | grep -v "time_us"
done
