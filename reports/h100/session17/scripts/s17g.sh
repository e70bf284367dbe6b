#!/usr/bin/env bash
# session 17, after the review's host refactors (worker_job.c, bench_gpu.c, int_list.c): the main job on the GPU
# (quick sweep: the worker's verdict and timing), a ragged bench and a prefill bench (the benches' GPU tools)
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
{
echo "### tuner/quick-sweep.sh"
s=$(date +%s); timeout 300 tuner/quick-sweep.sh $OUT/quick.db > $OUT/quick.txt 2>&1; echo "rc $? in $(( $(date +%s) - s )) s"
grep -E "measured, |failed" $OUT/quick.txt | head -3
echo "### bench, ragged"
timeout 100 build/mla-tune bench --no-ceilings --system-db reports/h100/fast-decode/tuning.db --db reports/h100/ragged/tuning.db --heads 16 --batch 32 --lengths long-tail,one-long:32768:1024 | grep -E "^ +16"
echo "### bench --prefill"
timeout 100 build/mla-tune bench --prefill --no-ceilings --heads 16 --tokens 1024 --requests 1,4 --reps 5 2>&1 | tail -3
} 2>&1 | tee $OUT/s17g.txt
