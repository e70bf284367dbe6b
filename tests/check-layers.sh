#!/usr/bin/env bash
# check-layers.sh [SOURCE_DIR] - every #include points down (or across) the
# layers, never up (docs/layers.md).  The layers, bottom to top:
#   1 runtime/base        errors, hashing
#   2 runtime/gpu         backends, JIT, code-object cache
#   3 kernels             the family interface, variants, sources, build recipe
#   4 kernels/<family>/   one folder per kernel family
#   5 kernels/registry.c  the list of built-in families
#   6 db                  tuning databases
#   7 runtime/api         the public API and the dispatcher (runtime/include: its header)
#   8 tuner               the mla-tune tool
#   9 tests
# A family folder may not include another family's.  Prints each include
# that breaks a rule and exits 1; prints the count checked and exits 0.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"

layer() {  # PATH -> layer number, 0 when outside the layered folders
  case "$1" in
    runtime/base/*) echo 1 ;;
    runtime/gpu/*) echo 2 ;;
    kernels/registry.c) echo 5 ;;
    kernels/*/*) echo 4 ;;
    kernels/*) echo 3 ;;
    db/*) echo 6 ;;
    runtime/api/* | runtime/include/*) echo 7 ;;
    tuner/*) echo 8 ;;
    tests/*) echo 9 ;;
    *) echo 0 ;;
  esac
}

bad=0; checked=0
while IFS= read -r file; do
  from=$(layer "$file")
  dir=$(dirname "$file")
  while IFS= read -r inc; do
    [ -n "$inc" ] || continue
    if [ -f "$dir/$inc" ]; then target=$(realpath --relative-to=. "$dir/$inc")
    elif [ -f "$inc" ]; then target=$inc
    else continue  # generated, or a system header
    fi
    checked=$((checked + 1))
    to=$(layer "$target")
    if [ "$to" -gt "$from" ]; then
      echo "UP: $file (layer $from) includes $target (layer $to)"; bad=$((bad + 1))
    elif [ "$from" = 4 ] && [ "$to" = 4 ] && [ "$(echo "$file" | cut -d/ -f2)" != "$(echo "$target" | cut -d/ -f2)" ]; then
      echo "ACROSS FAMILIES: $file includes $target"; bad=$((bad + 1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find runtime kernels db tuner tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)

if [ "$bad" -gt 0 ]; then echo "$bad include(s) run up a layer"; exit 1; fi
echo "layers: $checked includes checked, none runs up a layer"
