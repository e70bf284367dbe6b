#!/usr/bin/env bash
# run-tests.sh - THE test command (README, .ci/run): installs what is
# missing, builds with warnings as errors, runs every test.  GPU tests (label
# "gpu") report "skipped" on a host without a GPU.
#
#   tests/run-tests.sh            build into build/ and run ctest
#   BUILD_DIR=dir tests/run-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
tests/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_TUNE_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 900
