#!/usr/bin/env bash
# quick-sweep.sh - THE main job (README): on a fresh Debian 12 host, install
# what is missing, build, and run the `quick` sweep plan on the local GPU
# into an SQLite tuning database, then show what it chose.
#
#   tuner/quick-sweep.sh [DB]        (default: mla-tune-quick.db)
#
# On a host with no GPU, `mla-tune sweep` says so, naming the libraries and
# devices it looked for, and this script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${1:-mla-tune-quick.db}
tests/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target mla-tune >/dev/null
build/mla-tune sweep --config configs/plans/quick.yaml --db "$db"
build/mla-tune show --db "$db"
