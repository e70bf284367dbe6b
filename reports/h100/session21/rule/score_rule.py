#!/usr/bin/env python3
# Scores a built-in rule against the broad sweep's exhaustive measurements (session 21):
#   python3 reports/h100/session21/rule/score_rule.py [reports/h100/broad/tuning.db]
# rule_session20() is kernels/mla_decode/heuristic.c as of session 21's first half; see explore.py
# for the candidates tried (16-row base at few tiles, cluster merge by the partials' bytes).
# Evaluate candidate built-in rules against the broad sweep's exhaustive measurements.
import sqlite3, math, sys, collections, os
HERE = os.path.dirname(os.path.abspath(__file__))
db = sqlite3.connect(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].endswith('.db')
                     else os.path.join(HERE, '..', '..', 'broad', 'tuning.db'))
rows = db.execute("""select p.n_heads, p.batch, p.seq_len, p.kv_dtype, v.params, m.median_ms, m.source_hash
  from measurements m join problems p on p.id = m.problem_id join variants v on v.id = m.variant_id
  where m.status = 'ok' order by m.measured_at""").fetchall()
# latest hashes only: keep, per (key, params), the min over hashes measured... keep the newest hash set
keys = collections.defaultdict(dict)
for h, b, l, kv, params, ms, sh in rows:
    d = dict(kv.split('=') for kv in params.split(','))
    d = {k: int(v) for k, v in d.items()}
    k = (h, b, l, kv)
    name = params
    keys[k][name] = (d, ms)  # the latest measurement of each variant
CUS = 132
def norm(d):
    d = dict(d)
    d.setdefault('wg_schedule', 0); d.setdefault('split_reduce', 0); d.setdefault('groups_per_cu', 0)
    return d
def lookup(k, want):
    best = None
    for name, (d, ms) in keys[k].items():
        d = norm(d)
        if all(d.get(a) == v for a, v in want.items()):
            if best is None or ms < best: best = ms
    return best
def rule_session20(h, b, l, kv):
    """the rule before session 21's fitting (fp8 64-row base already in)"""
    fp8 = kv.startswith('fp8')
    rows = h
    if not fp8: tile, stages = 64, 2
    elif rows >= 64 and kv == 'fp8e4m3' and ((rows + 63)//64)*b >= 32: tile, stages = 64, 2
    elif rows >= 32: tile, stages = 32, 4
    else: tile, stages = 16, 4
    tiles = ((rows + tile - 1)//tile) * b
    s = 1
    maxs = 4 if (fp8 and tile == 64) else 128
    while s < 128 and tiles*s*2 <= CUS and l // (s*2) >= 64: s *= 2
    s = min(s, maxs)
    return dict(tile_q=tile, kv_stages=stages, num_splits=s, split_reduce=0, wg_schedule=0)
def evaluate(rule, label, filt=lambda k: True):
    logs = []; worst = []
    for k in sorted(keys):
        if not filt(k): continue
        best = min(ms for d, ms in keys[k].values())
        want = rule(*k)
        got = lookup(k, want)
        if got is None:
            print('missing', k, want); continue
        logs.append(math.log(got / best)); worst.append((got / best, k, want))
    worst.sort(reverse=True)
    print(f"{label}: {len(logs)} keys, geomean {math.exp(sum(logs)/len(logs)):.3f}x, worst " +
          ", ".join(f"{r:.2f}x {k[0]}h B={k[1]} L={k[2]} {k[3]}" for r, k, w in worst[:4]))
def rule_session21(h, b, l, kv):
    """kernels/mla_decode/heuristic.c after session 21"""
    d = rule_session20(h, b, l, kv)
    if kv.startswith('fp8'):
        return d
    rows = h
    d['kv_granularity'] = 16
    if ((rows + 63) // 64) * b <= 2:  # T16_MAX_TILES
        tiles = ((rows + 15) // 16) * b
        s = 1
        while s < 128 and tiles * s * 2 <= CUS and l // (s * 2) >= 64: s *= 2
        d.update(tile_q=16, num_splits=s)
        return d
    s = d['num_splits']
    if s >= 2 and s * min(rows, 64) * 512 * 8 >= 0.25 * l * 576 * 2:  # CLUSTER_PARTIALS
        d.update(num_splits=min(16, max(2, s // 2)), split_reduce=1)
    return d

if __name__ == '__main__':
    for kvf in ('bf16', 'fp8e4m3'):
        f = lambda k, kvf=kvf: k[3] == kvf
        evaluate(rule_session20, f'session 20 rule {kvf}', f)
        evaluate(rule_session21, f'session 21 rule {kvf}', f)
