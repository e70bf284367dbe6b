import sys, subprocess, statistics
def rates(raw, B, L, extra):
    sched = subprocess.run(["./sched_dump", B, L] + extra, capture_output=True, text=True).stdout.split("\n")[1:]
    work = {}
    for line in sched:
        if line.strip():
            s, keys, items = map(int, line.split()[:3]); work[s] = (keys, items)
    recs = []
    for line in open(raw):
        if line.startswith("MTT "):
            f = line.split(); kind, block = int(f[1]), int(f[2]); gt = [int(x) for x in f[4:12]]
            if kind == 0: recs.append((block, int(f[3]), gt))
    recs.sort(key=lambda r: r[2][0])
    calls = []; last = None
    for r in recs:
        if last is None or r[2][0] - last > 30000: calls.append([])
        calls[-1].append(r); last = r[2][0]
    out = {}
    for call in calls[-3:]:
        t0 = min(r[2][0] for r in call)
        for block, smid, gt in call:
            k, it = work[block]
            if k: out.setdefault(smid, []).append(k / ((gt[7] - gt[4]) / 1000))
    return {s: statistics.mean(v) for s, v in out.items()}
a = rates("/tmp/raw/la16-uniform-1272.raw", "128", "1272", [])
b = rates("/tmp/raw/la16-onelong-128.raw", "128", "1024", ["32768"])
common = sorted(set(a) & set(b))
import math
xa = [a[s] for s in common]; xb = [b[s] for s in common]
ma, mb = statistics.mean(xa), statistics.mean(xb)
cov = sum((x-ma)*(y-mb) for x, y in zip(xa, xb)); r = cov / math.sqrt(sum((x-ma)**2 for x in xa) * sum((y-mb)**2 for y in xb))
print("SMs", len(common), "corr of per-SM rate across the two runs: %.2f" % r)
for s in sorted(common, key=lambda s: a[s])[:6] + sorted(common, key=lambda s: a[s])[-6:]:
    print(s, "%.1f %.1f" % (a[s], b[s]))
