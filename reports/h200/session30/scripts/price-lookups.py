#!/usr/bin/env python3
"""price-lookups.py MLA_TUNE SYSTEM_DB MEMORY_GBPS SWEEP_DB... - what the runtime would run on a
device of MEMORY_GBPS with SYSTEM_DB's keys (`mla-tune lookup --json`), priced by another device's
sweep of the same shapes: for each decode key of each SWEEP_DB, the sweep's median of the variant
lookup names over the key's best (session 30: the H100 DBs' answers on the H200, whose sweeps of
shapes between their keys time every variant of the broad space)."""
import json, math, os, sqlite3, subprocess, sys

DEFAULTS = {"kv_stages": 2, "split_reduce": 0, "groups_per_cu": 0, "wg_schedule": 0, "request_cost": 64,
            "snap_keys": 64, "snap_cap": 4}


def norm(p):
    d = dict(DEFAULTS)
    d.update({k: int(v) for k, v in p.items()})
    return d


def parse(s):
    return norm(dict(kv.split("=") for kv in s.split(",")))


def main():
    tool, system_db, gbps, sweeps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    env = dict(os.environ, HOME="/nonexistent-home", XDG_DATA_HOME="")  # no user DB: the system DB alone
    ratios = []
    for path in sweeps:
        db = sqlite3.connect(path)
        keys = db.execute("select id, n_heads, sq, batch, seq_len from problems where kind='mla_decode' and "
                          "lengths='uniform' and kv_dtype='bf16' order by n_heads, batch, seq_len").fetchall()
        for pid, heads, sq, batch, seq in keys:
            rows = [(parse(p), ms) for p, ms in db.execute(
                "select v.params, m.median_ms from measurements m join variants v on v.id=m.variant_id "
                "where m.problem_id=? and m.status='ok'", (pid,))]
            if not rows:
                continue
            best = min(ms for _, ms in rows)
            out = subprocess.run([tool, "lookup", "--system-db", system_db, "--arch", "sm_90", "--memory-gbps", gbps,
                                  "--heads", str(heads), "--sq", str(sq), "--batch", str(batch), "--seq-len",
                                  str(seq), "--json"], capture_output=True, text=True, env=env)
            ans = json.loads(out.stdout)
            want = norm(ans["params"])
            ms = [m for p, m in rows if p == want]
            r = ms[0] / best if ms else float("nan")
            if ms:
                ratios.append(r)
            split = f"{want['num_splits']}{'c' if want['split_reduce'] else ''}"
            print(f"{heads:4d} {batch:4d} x {seq:6d}  runs {split:4s} {ms[0]*1e3 if ms else float('nan'):8.1f} us  "
                  f"best {best*1e3:8.1f}  {r:5.2f}x  ({ans['why'][:90]})")
    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{len(ratios)} keys priced: geomean {g:.3f}x, worst {max(ratios):.2f}x")


main()
