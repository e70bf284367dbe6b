#!/usr/bin/env bash
# issue 30, session 17: the same plan on 1 GPU and on 2 GPUs of one host (keys handed out costliest first),
# separate empty caches, wall times; then two shards as two processes (one per GPU) merged
set -uo pipefail
OUT=${OUT:-/tmp/out}; plan=configs/plans/two-gpu-check.yaml; bin=build/mla-tune
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
W=/tmp/two-gpu; rm -rf "$W"; mkdir -p "$W"
nvidia-smi --query-gpu=index,name --format=csv > "$W/gpus.txt" 2>&1
nproc > "$W/nproc.txt"
t0=$(date +%s.%N)
timeout 200 "$bin" sweep --config "$plan" --db "$W/one.db" --devices 0 --cache-dir "$W/cache-one" > "$W/sweep-1gpu.txt" 2>&1; r1=$?
t1=$(date +%s.%N)
timeout 150 "$bin" sweep --config "$plan" --db "$W/two.db" --devices all --cache-dir "$W/cache-two" > "$W/sweep-2gpu.txt" 2>&1; r2=$?
t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v r1="$r1" -v r2="$r2" \
  'BEGIN { printf "1 GPU: rc %d, %.1f s; 2 GPUs: rc %d, %.1f s; speedup %.2fx\n", r1, b - a, r2, c - b, (b - a) / (c - b) }' | tee "$W/times.txt"
# two shards, one process each (GPU 0 and GPU 1), the code-object cache of the 2-GPU run reused
t3=$(date +%s.%N)
timeout 150 "$bin" sweep --config "$plan" --db "$W/shard-0-of-2.db" --devices 0 --shard 0/2 --cache-dir "$W/cache-two" > "$W/sweep-shard0.txt" 2>&1 &
p0=$!
timeout 150 "$bin" sweep --config "$plan" --db "$W/shard-1-of-2.db" --devices 1 --shard 1/2 --cache-dir "$W/cache-two" > "$W/sweep-shard1.txt" 2>&1 &
p1=$!
wait $p0; s0=$?; wait $p1; s1=$?
t4=$(date +%s.%N)
mkdir -p "$W/shards" && cp "$W"/shard-*-of-2.db "$W/shards/"
MLA_TUNE=$PWD/$bin configs/fleet/merge-shards.sh "$W/shards" "$W/merged.db" > "$W/merge.txt" 2>&1; rm=$?
awk -v a="$t3" -v b="$t4" -v s0="$s0" -v s1="$s1" -v rm="$rm" 'BEGIN { printf "shards: rc %d %d, %.1f s; merge rc %d\n", s0, s1, b - a, rm }' | tee -a "$W/times.txt"
for d in one two merged; do
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(sys.argv[2] + ': measurements, distinct (problem, variant):', *c.execute('select count(*), count(distinct problem_id || \':\' || variant_id) from measurements').fetchone())" "$W/$d.db" $d | tee -a "$W/times.txt"
done
"$bin" show --db "$W/one.db" --json > "$W/show-1gpu.json" 2>&1
"$bin" show --db "$W/two.db" --json > "$W/show-2gpu.json" 2>&1
rm -rf "$W/cache-one" "$W/cache-two"
(cd /tmp && tar czf "$OUT/two-gpu.tgz" two-gpu)
tail -n 3 "$W/sweep-1gpu.txt"; tail -n 3 "$W/sweep-2gpu.txt"; cat "$W/merge.txt" | tail -3
