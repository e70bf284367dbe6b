#!/usr/bin/env bash
# gpu-issue28.sh - runs ON the H100 machine (device tool), from the
# repository root, after tests/gpu-prepare.sh here, with build/ and .deps/
# carried (as tests/gpu-run.sh):
#   run(command="tests/gpu-issue28.sh", carry=["build", ".deps"])
#
# Issue 28: the 64-row warpgroup path's overlapped schedule (wg_schedule=1,
# kernels/mla_decode/wgmma64_seesaw.cu) against today's (wg_schedule=0).
#   tests  test_gpu_mla as the suite runs it (its draw gives wg_schedule=1 to
#          every other 64-row case)
#   focus  test_gpu_mla with MLA_TUNE_TEST_FOCUS=wgmma64: every case the
#          64-row path serves takes it, about half of those wg_schedule=1
#          (FOCUS_CASES cases, default 160)
#   bench  mla-tune bench, the shipped H100 DBs for the tuned choice, then the
#          same 64-row variants forced with wg_schedule 0 and 1 (and a few
#          split counts for 1): 128 heads B=32x16384, B=128x4096, B=8x16384,
#          B=128x1024; 16 heads Sq=8 B=32x16384 against Sq=1
# Usage: tests/gpu-issue28.sh [all|tests|focus|bench]   (default all; each
# part alone fits one 10-minute device command, all together may not).  Logs and CSVs go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/mla-tune-out}
mkdir -p "$OUT"
what=${1:-all}
export LD_LIBRARY_PATH="$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the build tree was configured at /work/main: make that path valid here
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then
  mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main
fi
export MLA_TUNE_CACHE_DIR=${MLA_TUNE_CACHE_DIR:-$PWD/build/test-cache}
bin=build/mla-tune
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/nvidia-smi.csv" 2>&1
status=0

if [ "$what" = all ] || [ "$what" = tests ]; then
  # the suite's draw (144 cases, a fresh seed: the log prints it; ~3 min)
  build/tests/test_gpu_mla > "$OUT/test_gpu_mla.txt" 2>&1 || status=1
  tail -3 "$OUT/test_gpu_mla.txt"
  echo "cases with wg_schedule=1 (suite draw): $(grep -c '^case.*wg_schedule=1' "$OUT/test_gpu_mla.txt")"
fi
if [ "$what" = all ] || [ "$what" = focus ]; then
  # the 64-row path wherever it runs, half of it overlapped (MLA_TUNE_TEST_SEED=N repeats a draw)
  MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=${FOCUS_CASES:-160} build/tests/test_gpu_mla \
    > "$OUT/test_gpu_mla-wgmma64.txt" 2>&1 || status=1
  tail -3 "$OUT/test_gpu_mla-wgmma64.txt"
  echo "cases with wg_schedule=1 (focus run): $(grep -c '^case.*wg_schedule=1' "$OUT/test_gpu_mla-wgmma64.txt")"
fi

if [ "$what" = all ] || [ "$what" = bench ]; then
  dbs=(--system-db reports/h100/fast-decode/tuning.db --db reports/h100/ragged/tuning.db)
  v64() { # splits split_reduce wg_schedule [groups_per_cu granularity]
    echo "tile_q=64,kv_granularity=${5:-16},num_splits=$1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=$2,groups_per_cu=${4:-0},wg_schedule=$3"
  }
  n=0
  bench() { # label, then bench arguments
    local label=$1; shift
    n=$((n + 1))
    echo "== $label"
    "$bin" bench "${dbs[@]}" "$@" --csv "$OUT/bench-$n.csv"
  }
  {
    # the ceilings once; the tuned choice for every shape
    bench "tuned, 128 heads" --heads 128 --batch 8,32 --seq-len 16384
    bench "tuned, 128 heads" --no-ceilings --heads 128 --batch 128 --seq-len 1024,4096
    bench "tuned, 16 heads Sq=1 / Sq=8" --no-ceilings --heads 16 --sq 1,8 --batch 32 --seq-len 16384
    # forced: today's schedule (0) and the overlapped one (1) on the same variant
    for s in "2 1" "2 0" "1 0" "4 1"; do
      for w in 0 1; do
        bench "128 heads B=32x16384, splits/cluster $s, wg_schedule=$w" --no-ceilings --heads 128 --batch 32 \
          --seq-len 16384 --variant "$(v64 $s $w)"
      done
    done
    for s in "1 0" "2 1"; do
      for w in 0 1; do
        bench "128 heads B=128x4096 and x1024, splits/cluster $s, wg_schedule=$w" --no-ceilings --heads 128 \
          --batch 128 --seq-len 1024,4096 --variant "$(v64 $s $w)"
      done
    done
    for s in "8 0" "8 1" "4 1" "16 0"; do
      for w in 0 1; do
        bench "128 heads B=8x16384, splits/cluster $s, wg_schedule=$w" --no-ceilings --heads 128 --batch 8 \
          --seq-len 16384 --variant "$(v64 $s $w)"
      done
    done
    for w in 0 1; do
      bench "128 heads B=8x16384, length-aware (groups_per_cu 1), wg_schedule=$w" --no-ceilings --heads 128 \
        --batch 8 --seq-len 16384 --variant "$(v64 1 0 $w 1 64)"
    done
    for s in "2 1" "2 0" "4 1"; do
      for w in 0 1; do
        bench "16 heads Sq=8 B=32x16384, splits/cluster $s, wg_schedule=$w" --no-ceilings --heads 16 --sq 8 \
          --batch 32 --seq-len 16384 --variant "$(v64 $s $w)"
      done
    done
  } 2>&1 | tee "$OUT/bench-issue28.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit $status
