#!/usr/bin/env bash
# trace-timeline.sh MLA_TUNE BENCH-ARGS... - where a call's time goes, from
# inside the kernels: runs `mla-tune bench BENCH-ARGS` (give the shape and
# --variant) on a copy of the kernel sources built with MT_TRACE (marks in
# kernels/mla_decode/*.cu, printing in kernels/prelude.h; the runtime's own
# builds never have them), then tuner/trace-summary.py prints when each
# marked point was reached over the work-groups of the last calls.  The
# traced build prints from every work-group, so its times are a little
# longer than the plain one's: compare marks with each other, and the call
# with an untraced bench.  MT_TRACE_SRC=DIR traces the kernel sources in
# DIR instead of kernels/ (an older version, say).  Needs a GPU and python3.
set -euo pipefail
bin=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=${MT_TRACE_SRC:-$root/kernels}
cp "$src"/prelude.h "$tmp"/
cp -r "$src"/mla_decode "$tmp"/
sed -i '1i #define MT_TRACE 1' "$tmp/prelude.h"
MLA_TUNE_KERNEL_DIR=$tmp "$bin" bench --no-ceilings --warmup 2 --reps 5 --cache-dir "$tmp/cache" "$@" >"$tmp/raw.txt" 2>&1 ||
  { tail -20 "$tmp/raw.txt" >&2; exit 1; }
grep -v '^MTT ' "$tmp/raw.txt" | grep -v '^ *$' || true
python3 "$root/tuner/trace-summary.py" <"$tmp/raw.txt"
