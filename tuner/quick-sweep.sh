#!/usr/bin/env bash
# quick-sweep.sh - THE main job (README): on a fresh Debian 12 host, install
# what is missing, build, install into build/prefix, then
#   - with a GPU: sweep the `quick` plan (a smoke test: 4 keys, 48 of the
#     space's variants sampled per key, a minute or two) into an SQLite
#     tuning database and show what it chose;
#   - with no GPU: show the plan (sweep --dry-run, with its time estimate),
#     what the shipped system DB would run for each of its keys (lookup),
#     and what a sweep needs to measure them.
#
#   tuner/quick-sweep.sh [DB]        (default: mla-tune-quick.db)
#
# Exit status: 0 when the sweep ran (GPU) or the preview was shown (no GPU:
# nothing measured, which is not an error; MLA_TUNE_REQUIRE_GPU=1 turns it
# into exit 3); 1 when building, installing or a command failed.  CI never
# runs it (.ci/run runs tests/run-tests.sh).
#
# MLA_TUNE_BUILD_DIR (default build) and MLA_TUNE_SKIP_SETUP=1 (no apt-get)
# let a test run it against an existing build.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${1:-mla-tune-quick.db}
build=${MLA_TUNE_BUILD_DIR:-build}
[ "${MLA_TUNE_SKIP_SETUP:-0}" = 1 ] || tests/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target mla-tune >/dev/null   # (builds libmlatune too)
# an installed tree: the shipped system DB and the configs, found relative
# to the tool, as an engine's install would find them
prefix=$build/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
tool=$prefix/bin/mla-tune

if "$tool" devices >/dev/null 2>&1; then
  "$tool" devices
  "$tool" sweep --config quick --db "$db"
  "$tool" show --db "$db"
  echo
  echo "next: '$tool report --db $db -o report' (HTML), a full plan ('sweep --config deepseek-v3-tp8'),"
  echo "      'export --arch ARCH -o tuning.db' to ship it (README: Tuning, Ship a database)"
  exit 0
fi

echo "== no GPU on this host: nothing can be measured here. What the sweep would do:"
"$tool" devices 2>&1 | sed 's/^/   /' || true
echo
"$tool" sweep --dry-run --config quick --arch sm_90
echo
echo "== what the shipped system DB ($prefix/share/mla-tune/tuning.db, H100 results) would run on sm_90"
echo "   for each key of the plan (mla-tune lookup; no GPU needed):"
# the plan's keys: '#  heads Sq page batch len max q/kv variants jobs lengths'
"$tool" sweep --dry-run --config quick --arch sm_90 |
  awk '$1 ~ /^[0-9]+$/ && NF >= 10 {split($8, dt, "/"); print $2, $3, $4, $5, $6, dt[1], dt[2]}' |
  while read -r heads sq page batch len q kv; do
    "$tool" lookup --arch sm_90 --heads "$heads" --sq "$sq" --page-size "$page" --batch "$batch" \
      --seq-len "$len" --q-dtype "$q" --kv-dtype "$kv" | sed 's/^/   /'
  done
cat <<MSG

== to measure: run this script on a host with a GPU the runtime can drive:
   NVIDIA: the driver (libcuda.so.1) and NVRTC (libnvrtc, CUDA 12 or 13);
   AMD: the HIP runtime (libamdhip64) and hiprtc (ROCm 5-7).
   '$tool devices' must list the GPU; then this script sweeps the quick plan
   into $db (resumable: run it again after an interruption).
MSG
if [ "${MLA_TUNE_REQUIRE_GPU:-0}" = 1 ]; then exit 3; fi
exit 0
