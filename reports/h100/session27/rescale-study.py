#!/usr/bin/env python3
"""Session 27's study before the rescaling was built (the record behind
PERFLOG session 27, items 1-2): each uniform decode key of a DB held out,
the nearest other key (|log2| of batch plus |log2| of mean, the
dispatcher's distance, ties to the first in (batch, mean) order, at most 2
away) answers, and the held-out key's own rows time a rule for the
answer's split count.  Rules: the winner as measured; splits x
(key_batch / batch)^e for a few exponents e; two refinements for keys whose
grid was under the SMs.  `mla-tune holdout` measures the rule that was
kept through the runtime's own dispatcher.

    python3 reports/h100/session27/rescale-study.py reports/h100/broad/tuning.db
"""
import collections
import math
import re
import sqlite3
import sys

CUS = 132  # the H100's SMs, the DBs' device
SPLITS = [1, 2, 4, 8, 16, 32, 64, 128]


def load(path):
    """times[(shape, batch, mean)][params] = the least ok median (ms)."""
    times = collections.defaultdict(dict)
    db = sqlite3.connect(path)
    cols = [r[1] for r in db.execute("pragma table_info(problems)")]
    lengths = "p.lengths" if "lengths" in cols else "'uniform'"
    for qd, kd, h, sq, pg, b, L, mix, params, ms in db.execute(
            f"select p.q_dtype, p.kv_dtype, p.n_heads, p.sq, p.page_size, p.batch, p.seq_len, {lengths}, v.params, "
            "m.median_ms from measurements m join problems p on p.id = m.problem_id "
            "join variants v on v.id = m.variant_id where m.status = 'ok' and p.kind = 'mla_decode'"):
        if mix == "uniform":
            t = times[((qd, kd, h, sq, pg), b, L)]
            t[params] = min(ms, t.get(params, ms))
    return times


def get(p, k):
    m = re.search(k + r"=(\d+)", p)
    return int(m.group(1)) if m else 0


def with_splits(p, s):
    """The variant with s splits, as the family normalises it."""
    q = re.sub(r"num_splits=\d+", f"num_splits={s}", p)
    if s == 1:
        q = re.sub(r"kv_granularity=\d+", "kv_granularity=16", q)
    if not 2 <= s <= 16:
        q = re.sub(r"split_reduce=\d+", "split_reduce=0", q)
    return q


def nearest_pow2(x):
    return min(SPLITS, key=lambda c: abs(math.log2(c / max(x, 1e-9))))


def rule(name, p, kb, b, heads):
    if get(p, "groups_per_cu") or name == "as measured":
        return p
    s, tiles = get(p, "num_splits"), -(-heads // get(p, "tile_q"))
    if name.startswith("exponent"):
        want = s * (kb / b) ** float(name.split()[1])
    else:  # the refinements: a key's grid under the SMs was limited by its keys per split
        want = s * kb / b
        if b > kb:
            want = max(want, min(s, CUS / (b * tiles)))
        if name == "both refinements" and b < kb and kb * tiles * s < 0.75 * CUS:
            want = s
    return with_splits(p, nearest_pow2(want))


def main():
    times = load(sys.argv[1])
    keys = collections.defaultdict(list)
    for shape, b, L in times:
        keys[shape].append((b, L))
    best = {k: min(t.values()) for k, t in times.items()}
    winner = {k: min(t, key=t.get) for k, t in times.items()}
    rules = ["as measured"] + [f"exponent {e}" for e in (0.5, 0.75, 0.9, 1.0, 1.25)] + \
            ["no fewer than fill the SMs", "both refinements"]
    for name in rules:
        n, logs, worst = 0, 0.0, 1.0
        for shape, ks in keys.items():
            for b, L in ks:
                others = sorted(k for k in ks if k != (b, L))
                if not others:
                    continue
                nb, nL = min(others, key=lambda k: abs(math.log2(b / k[0])) + abs(math.log2(L / k[1])))
                if abs(math.log2(b / nb)) + abs(math.log2(L / nL)) > 2.01:
                    continue
                t = times[(shape, b, L)].get(rule(name, winner[(shape, nb, nL)], nb, b, shape[2]))
                if t is not None:
                    r = t / best[(shape, b, L)]
                    n, logs, worst = n + 1, logs + math.log(r), max(worst, r)
        print(f"{name:28s} {n:4d} keys timed: geomean {math.exp(logs / n):.3f}, worst {worst:.2f}")


if __name__ == "__main__":
    main()
