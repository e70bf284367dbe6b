#!/usr/bin/env bash
# gpu-prepare.sh - run HERE (the Debian development host) before sending work
# to the GPU machine with the device tool.
#
# The GPU machine (Ubuntu 24.04, CUDA 13, no package registry) has
# libsqlite3.so.0 and libcuda.so.1 but no libyaml and no -dev headers, so we
# build here and carry two ignored folders:
#   build/   the build tree (binaries, ctest files; absolute paths point at
#            /work/main, which gpu-run.sh recreates there as a symlink)
#   .deps/   the contents of Debian's libyaml-0-2 package (dpkg -x)
# Then, with the device tool:
#   run(command="tests/gpu-run.sh", carry=["build", ".deps"])
set -euo pipefail
cd "$(dirname "$0")/.."
tests/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_TUNE_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
if [ ! -e .deps/libyaml/usr/lib/x86_64-linux-gnu/libyaml-0.so.2 ]; then
  mkdir -p .deps/libyaml
  (cd .deps && apt-get download libyaml-0-2 >/dev/null && dpkg -x libyaml-0-2_*.deb libyaml && rm -f libyaml-0-2_*.deb)
fi
tests/example/build-against-install.sh build . >/dev/null
rm -rf build/test-cache build/Testing
du -sh build .deps
