#!/usr/bin/env bash
# session 30, run 3 (H200): the split rescale's two refinements (family.c: fill a wave the key left
# idle on a device of >= 28 GB/s a compute unit; more splits than the key's in a cluster only where
# it pays) - the between-heads shapes through the merged shipped (H100) DBs, then run 2's
# between-keys shapes of session 28, each against its H200 sweep winner; lookup's answer for the
# shapes that changed; then the GPU tests but the prefill one (run 2 ran it)
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/build:$PWD/.deps/lib/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
build/mla-tune devices | tee $OUT/run3-devices.txt
R=reports/h100
rm -f /tmp/system.db; build/mla-tune merge $R/fast-decode/tuning.db $R/ragged/tuning.db $R/broad/tuning.db \
  $R/crossover/tuning.db $R/prefill/tuning.db -o /tmp/system.db > /dev/null 2>&1
H=reports/h200/session30/between-heads-h200.db K=reports/h200/session28/run4-between-keys.db
B="timeout 60 build/mla-tune bench --reps 15 --warmup 3 --no-ceilings"
for rep in 1 2; do
  echo "# shipped"; $B --system-db /tmp/system.db --heads 8,16,32,64 --batch 16,64 --seq-len 1024,8192 | grep -E "^ *[0-9]"
  echo "# winner";  $B --db $H --heads 8,16,32,64 --batch 16,64 --seq-len 1024,8192 | grep -E "^ *[0-9]"
done > $OUT/run3-between-heads.txt 2>&1
grep -E "^#|^ *[0-9]" $OUT/run3-between-heads.txt | awk '/^#/{w=$2; next} {print w, $1, $3, $4, $7}' | sort -k2,2n -k3,3n -k4,4n -s | paste - - - -
for rep in 1 2; do
  for k in "16 3,12,48 1024" "128 3,12,48 1024" "16 48,100,512 4096" "128 24,200 4096"; do
    set -- $k
    echo "# shipped"; $B --system-db /tmp/system.db --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
    echo "# winner";  $B --db $K --heads $1 --batch $2 --seq-len $3 | grep -E "^ *[0-9]"
  done
done > $OUT/run3-between-keys.txt 2>&1
grep -E "^#|^ *[0-9]" $OUT/run3-between-keys.txt | awk '/^#/{w=$2; next} {print w, $1, $3, $4, $7}' | sort -k2,2n -k3,3n -k4,4n -s | paste - - - -
for s in "--heads 32 --batch 64 --seq-len 1024" "--heads 64 --batch 16 --seq-len 8192" "--heads 128 --batch 12 --seq-len 1024"; do
  build/mla-tune lookup --system-db /tmp/system.db $s 2>&1 | head -4
done > $OUT/run3-lookup.txt 2>&1; cut -c1-220 $OUT/run3-lookup.txt
(cd build && timeout 400 ctest -L gpu -E prefill --output-on-failure 2>&1) > $OUT/run3-ctest-gpu.txt
grep -E "tests passed|Passed|Failed|\*\*\*" $OUT/run3-ctest-gpu.txt
