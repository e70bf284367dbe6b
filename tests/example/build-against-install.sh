#!/usr/bin/env bash
# Installs the build tree into a scratch prefix and builds the example
# program against that prefix alone (find_package(mlatune) and pkg-config).
#   build-against-install.sh BUILD_DIR SOURCE_DIR [run args...]
# With run args, also runs the example (GPU hosts).
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd); shift 2
prefix="$build/example-prefix"
rm -rf "$prefix" "$build/example-build"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$src/tests/example" -B "$build/example-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/example-build" >/dev/null
# pkg-config sees the same package
PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig" pkg-config --cflags --libs mlatune
# the example links the installed library, not the build tree's
ldd "$build/example-build/decode_example" | grep mlatune
if ! ldd "$build/example-build/decode_example" | grep -q "$prefix"; then
  echo "decode_example does not use the installed library" >&2; exit 1
fi
echo "example built against $prefix"
if [ $# -gt 0 ]; then "$build/example-build/decode_example" "$@"; fi
