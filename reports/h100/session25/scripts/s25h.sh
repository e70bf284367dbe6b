#!/usr/bin/env bash
# session 25, run 8 (issues 28, 22): the 64-row path's two row tiles of a request launched as one
# cluster (launch.c tile_cluster; run 7's probe: the copies alone 296 -> 208 us). test_gpu_mla
# focused on the 64-row path, then the suite's draw; then the shipped DBs' choices (merged as an
# install merges them) with the clusters (new) and without (old: the A/B switch
# MLA_TUNE_EXP_NO_TILE_CLUSTER, this run only), alternating twice: 128 heads' ragged table and
# uniform shapes, 16 heads Sq=8, and 16 heads B=128 x 16384 (one tile: unchanged)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd build && MLA_TUNE_TEST_FOCUS=wgmma64 MLA_TUNE_TEST_CASES=96 timeout 240 tests/test_gpu_mla) > $OUT/gpu-mla-wg64.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla-wg64.txt | tail -4
(cd build && timeout 240 tests/test_gpu_mla) > $OUT/gpu-mla.txt 2>&1
grep -E "cases passed|tests passed|FAIL|seed" $OUT/gpu-mla.txt | tail -4
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db -o /tmp/system.db > $OUT/merge.txt 2>&1 || { echo "merge failed"; cat $OUT/merge.txt; exit 1; }
B="build/mla-tune bench --system-db /tmp/system.db --reps 20 --no-ceilings"
for round in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then export MLA_TUNE_EXP_NO_TILE_CLUSTER=1; else unset MLA_TUNE_EXP_NO_TILE_CLUSTER; fi
    {
    timeout 100 $B --heads 128 --batch 8,32,128 --lengths long-tail,one-long:32768:1024,uniform-random:256-8192
    timeout 60 $B --heads 128 --batch 8,32 --seq-len 16384
    timeout 60 $B --heads 128 --batch 128 --seq-len 1024,4096
    timeout 60 $B --heads 16 --sq 8 --batch 32 --seq-len 16384
    timeout 60 $B --heads 16 --batch 128 --seq-len 16384
    } 2>&1 | grep -E "^ *[0-9]" | sed "s/^/$tree$round /" | cut -c1-140
  done
done > $OUT/ab-tile-cluster.txt 2>&1
unset MLA_TUNE_EXP_NO_TILE_CLUSTER
cat $OUT/ab-tile-cluster.txt | cut -c1-118
