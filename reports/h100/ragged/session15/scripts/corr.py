import sys, subprocess, statistics
raw, B, L = sys.argv[1], sys.argv[2], sys.argv[3]
extra = sys.argv[4:] 
sched = subprocess.run(["./sched_dump", B, L] + extra, capture_output=True, text=True).stdout.split("\n")[1:]
work = {}
for line in sched:
    if line.strip():
        s, keys, items = map(int, line.split()[:3]); work[s] = (keys, items)
recs = []
for line in open(raw):
    if line.startswith("MTT "):
        f = line.split(); kind, block = int(f[1]), int(f[2]); gt = [int(x) for x in f[4:12]]
        if kind < 2: recs.append((kind, block, int(f[3]), gt))
recs.sort(key=lambda r: r[3][0])
# last call: split by gaps > 30us
calls = []; last = None
for r in recs:
    if last is None or r[3][0] - last > 30000: calls.append([])
    calls[-1].append(r); last = r[3][0]
call = calls[-1]; t0 = min(r[3][0] for r in call)
rows = {}
for kind, block, smid, gt in call:
    if kind == 0: rows[block] = [smid, (gt[7]-t0)/1000, (gt[4]-t0)/1000]
out = []
for b, (smid, end, land) in rows.items():
    k, it = work[b]; out.append((end, b, smid, k, it, land))
out.sort()
for e in out[:8] + [None] + out[-12:]:
    if e is None: print("..."); continue
    print("end %6.1f block %3d sm %3d keys %5d items %d landed %.1f  rate %.1f keys/us" % (e[0], e[1], e[2], e[3], e[4], e[5], e[3]/(e[0]-e[5]) if e[0]>e[5] else 0))
# correlation: mean end by items
for it in sorted(set(o[4] for o in out)):
    sel = [o for o in out if o[4] == it]
    print("items", it, "n", len(sel), "mean end %.1f" % statistics.mean(o[0] for o in sel), "mean keys %.0f" % statistics.mean(o[3] for o in sel))
# rate spread
rates = [o[3]/(o[0]-o[5]) for o in out if o[3] > 0]
print("rate keys/us: min %.1f median %.1f max %.1f" % (min(rates), statistics.median(rates), max(rates)))
# by sm id parity / gpc guess
