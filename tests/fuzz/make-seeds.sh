#!/usr/bin/env bash
# make-seeds.sh BUILD_DIR OUT_DIR - seed corpora for the fuzzers: the
# shipped YAML configs, and small real databases (written by a fake sweep).
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
sqlite3 "$tmp/seed.db" "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;" >/dev/null
cp "$tmp/seed.db" "$out/db/seed.db"
# inputs that once crashed a fuzzer stay in the corpus
cp "$src"/tests/fuzz/regressions/db-* "$out/db/" 2>/dev/null || true
rm -rf "$tmp"
