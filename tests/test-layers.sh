#!/usr/bin/env bash
# test-layers.sh SOURCE_DIR BUILD_DIR - issue 23's structural rules:
#   1. no #include runs up a layer (check-layers.sh on the tree), and the
#      check does catch one (a copy of the tree with an upward include);
#   2. libmlatune.so, what engines link, carries no test or probe kernels
#      and does not link libyaml (no runtime code reads YAML).
set -euo pipefail
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd)
"$src/tests/check-layers.sh" "$src"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runtime/base" "$tmp/db" "$tmp/kernels/fam_a" "$tmp/kernels/fam_b" "$tmp/tuner" "$tmp/tests"
printf '#include "db/db.h"\n' > "$tmp/runtime/base/error.h"; touch "$tmp/db/db.h"
if "$src/tests/check-layers.sh" "$tmp" > "$tmp/out.txt"; then
  echo "FAIL: runtime/base including db/ was not reported"; exit 1
fi
grep -q "UP: runtime/base/error.h (layer 1) includes db/db.h (layer 6)" "$tmp/out.txt"
printf '\n' > "$tmp/runtime/base/error.h"
printf '#include "kernels/fam_b/b.h"\n' > "$tmp/kernels/fam_a/a.c"; touch "$tmp/kernels/fam_b/b.h"
if "$src/tests/check-layers.sh" "$tmp" > "$tmp/out.txt"; then
  echo "FAIL: one family including another was not reported"; exit 1
fi
grep -q "ACROSS FAMILIES: kernels/fam_a/a.c" "$tmp/out.txt"
echo "check-layers.sh reports an upward include and a cross-family one"

lib=$(ls "$build"/libmlatune.so.* | head -1)
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "$(basename "$lib") needs: $needed"
case "$needed" in *yaml*|*cmark*) echo "FAIL: the runtime library links a tuner-only library"; exit 1 ;; esac
for probe in mt_test_oob_write mt_test_axpy mt_l2_evict_read mt_fill_random; do
  if grep -q "$probe" "$lib"; then echo "FAIL: $probe (a test or probe kernel) is in the runtime library"; exit 1; fi
done
grep -q "mla_decode/simt.cu" "$lib" || { echo "FAIL: the decode family's sources are missing"; exit 1; }
echo "the runtime library carries the family kernels only, and no libyaml"
