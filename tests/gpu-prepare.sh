#!/usr/bin/env bash
# gpu-prepare.sh - run HERE (the Debian development host) before sending work
# to the GPU machine with the device tool.
#
# The GPU machine (Ubuntu 24.04, CUDA 13, no package registry) has
# libsqlite3.so.0 and libcuda.so.1 but no libyaml and no -dev headers, so we
# build here and carry two ignored folders:
#   build/   the build tree (binaries, ctest files; absolute paths point at
#            /work/main, which gpu-run.sh recreates there as a symlink)
#   .deps/   the contents of Debian's libyaml-0-2 and libcmark-gfm packages (dpkg -x)
# Object files, archives and install trees go to build-stash/ while the
# tree travels (64 MiB with the tracked files); the next run of this script
# puts them back before building, so run it again (not cmake --build alone)
# before using build/ here.
# Then, with the device tool:
#   run(command="tests/gpu-run.sh", carry=["build", ".deps"])
set -euo pipefail
cd "$(dirname "$0")/.."
# what the last run set aside (below) goes back first, so the build stays incremental
if [ -d build-stash ]; then
  (cd build-stash && find . -type f) | while read -r f; do
    mkdir -p "build/$(dirname "$f")" && mv -f "build-stash/$f" "build/$f"
  done
  rm -rf build-stash
fi
tests/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_TUNE_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
# shared libraries mla-tune needs that the GPU machine lacks (no registry
# there): Debian's packages unpacked into .deps/lib
mkdir -p .deps
for pkg in libyaml-0-2 libcmark-gfm0.29.0.gfm.6 libcmark-gfm-extensions0.29.0.gfm.6; do
  if [ ! -e ".deps/$pkg.done" ]; then
    (cd .deps && apt-get download "$pkg" >/dev/null 2>&1 && dpkg -x "$pkg"_*.deb lib && rm -f "$pkg"_*.deb && touch "$pkg.done")
  fi
done
tests/example/build-against-install.sh build . >/dev/null
rm -rf build/test-cache build/Testing
# The device tool carries at most 64 MiB with the tracked tree (~31 MiB):
# debug info stripped from the binaries, and what no GPU test reads (object
# files, static archives, the install trees) set aside in build-stash/, which
# the next gpu-prepare.sh puts back before building
find build -type f \( -name '*.so*' -o -perm -u+x \) ! -name '*.sh' ! -name '*.py' -print0 |
  while IFS= read -r -d '' f; do
    if head -c4 "$f" | grep -q ELF; then strip --strip-debug "$f"; fi
  done
mkdir -p build-stash
(cd build && find . -type f \( -name '*.o' -o -name '*.a' \) -o -type f -path './prefix/*' \
   -o -type f -path './example-prefix/*') | while read -r f; do
  mkdir -p "build-stash/$(dirname "$f")" && mv "build/$f" "build-stash/$f"
done
du -sh build .deps
