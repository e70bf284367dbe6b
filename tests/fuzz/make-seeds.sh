#!/usr/bin/env bash
# make-seeds.sh BUILD_DIR OUT_DIR - seed corpora for the fuzzers: the
# shipped YAML configs, and small real databases (written by a fake sweep,
# with crossover points added).
set -euo pipefail
build=$1; out=$2; src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/yaml" "$out/db"
cp "$src"/configs/spaces/*.yaml "$src"/configs/plans/*.yaml "$out/yaml/"
tmp=$(mktemp -d)
cat > "$tmp/plan.yaml" <<'PLAN'
name: seed
problems:
  - {heads: 16, batch: [1, 2], seq_len: 64}
timing: {warmup: 1, reps: 3}
search: {strategy: random, budget: 3}
PLAN
"$build/mla-tune" sweep --config "$tmp/plan.yaml" --db "$tmp/seed.db" --fake-device 'wrong:tile_q=4' >/dev/null 2>&1
# and two crossover points (schema 6), so that mutations reach that loader too
sqlite3 "$tmp/seed.db" "INSERT INTO crossover(device_id, n_heads, q_dtype, kv_dtype, sq, context, mqa_ms, mha_ms,
  mqa_absorb_ms, mqa_attention_ms, mqa_output_ms, mha_decompress_ms, mha_attention_ms, mqa_variant, mha_variant, blas,
  tool_version, measured_at) SELECT id, 128, 'bf16', 'bf16', sq, 4096, 1.0, 2.0, 0.25, 0.5, 0.25, 0.8, 1.2, 'tile_q=64',
  'mma=2', 'seed BLAS', 'seed', '2026-01-01T00:00:00.000Z' FROM devices, (SELECT 64 AS sq UNION SELECT 128) LIMIT 2;"
sqlite3 "$tmp/seed.db" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;" >/dev/null
cp "$tmp/seed.db" "$out/db/seed.db"
# inputs that once crashed a fuzzer stay in the corpus
cp "$src"/tests/fuzz/regressions/db-* "$out/db/" 2>/dev/null || true
rm -rf "$tmp"
