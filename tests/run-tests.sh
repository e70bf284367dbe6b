#!/usr/bin/env bash
# run-tests.sh - THE test command (README, .ci/run).  On a fresh Debian 12
# host it installs what is missing, then:
#   1. builds everything with gcc, -Wall -Wextra -Werror, into build/, and
#      runs the whole suite with ctest: unit, database, config, sweep,
#      packaging, the compile check of every variant of the sm_90 (NVRTC) and
#      gfx942 spaces and a part of gfx950's (clang-22, offline HIP), and the
#      GPU tests, which report "skipped" on a host with no GPU;
#   2. builds with clang-19, AddressSanitizer + UndefinedBehaviorSanitizer
#      and libFuzzer into build-sanitize/, and runs the parser, database,
#      cache and sweep tests under the sanitizers plus a short run of each
#      fuzzer (FUZZ_SECONDS, default 30).
# Either stage failing fails the command.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
tests/setup-deps.sh

echo "== 1/2: gcc build and full test suite"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_TUNE_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900)
# what the AMD matrix-core (MFMA) variants use on gfx942 and gfx950: compiled
# here, never run on AMD hardware (no AMD GPU); VGPRs per lane, SGPRs per
# wave, LDS bytes per group
for arch in gfx942 gfx950; do
  echo "-- $arch MFMA variants (mma=1): registers and LDS, per variant shape and dtype"
  cat build/tests/compile-reports/$arch-mfma-space.txt build/tests/compile-reports/$arch-mfma-dtypes.txt |
    awk '/^mla_decode_simt/ {dt = $5 " " $6} $1 == "ok" {v = $9; sub(/num_splits=[0-9]+,/, "", v); print dt, "vgprs", $4, "sgprs", $5, "lds", $6, "scratch", $7, v}' |
    sort -u
done
echo "-- AMD variants compiled (0 failed is required by the compile tests)"
for f in build/tests/compile-reports/gfx9*.txt; do echo "$(basename "$f" .txt): $(grep -E '^[0-9]+ variants:' "$f")"; done
# the AMD kernels run on the CPU (test_amd_emu) and hiprtc (compile_gfx90a_hiprtc):
# their summaries, from ctest's log of this run
echo "-- AMD kernels emulated on the CPU, and hiprtc"
grep -hE "harness self-check|emulated AMD cases passed|fp8 KV cases passed|negative control on|through hiprtc:|SKIP: no hiprtc" \
  build/Testing/Temporary/LastTest.log | sed 's/^[0-9]*: //' || true

echo "== 2/2: clang-19 ASan+UBSan build, sanitized tests and fuzzers"
CC=clang-19 cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_TUNE_WERROR=ON -DMLA_TUNE_FUZZ=ON \
  -DFUZZ_SECONDS="${FUZZ_SECONDS:-30}" >/dev/null
cmake --build build-sanitize -j"$jobs" --target mla-tune test_sha256 test_cache test_reference test_prefill_reference test_crossover_pick test_variant test_schedule \
  test_discovery test_dispatch test_dispatch_rescale test_plan_rescale test_db test_db_files test_db_validators test_holdout test_rehash test_crossover_db test_crossover_runtime test_runtime_db mt_stub_cuda test_config test_sweep test_sweep_workers \
  test_prefill_tuning test_blaslt test_crossover_refine mt_crossover_points \
  fuzz_yaml fuzz_db
(cd build-sanitize && ctest --output-on-failure -j"$jobs" --timeout 900 -L 'unit|db|parsers|sweep|fuzz' -LE gpu)
