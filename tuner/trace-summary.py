#!/usr/bin/env python3
"""trace-summary.py < RAW - the timeline of traced MLA decode calls.

Reads the "MTT kind block smid gt[0..7] clk[0..7]" lines a kernel built with
MT_TRACE prints (kernels/prelude.h; tuner/trace-timeline.sh makes such a
build) and prints, for the last calls, when each marked point was reached,
in microseconds from the first decode work-group's start: the minimum,
median and maximum over work-groups.  Kinds: 0 / 1 = the decode kernel's
warpgroups 0 / 1 (transposed path marks: 0 start, 1 item known, 2 first
copies issued (thread 0), 3 Q^T built, 4 first chunk landed, 5 its scores
done, 6 last chunk done, 7 end), 2 = the reduce (0 start, 1 decode's
results visible, 2 end).  The reduce prints the decode's lines too (a
kernel with wgmma must not call printf), so only variants with a reduce
(num_splits > 1, or length-aware: groups_per_cu > 0) are traced.  Calls are told apart by a gap of more than 30 us
between starts (the bench flushes the L2 between calls).  The global timer
is in ns; the cycle counts give the same intervals within one SM, at the
clock estimated from both.
"""
import statistics
import sys

NAMES = {
    0: ["start", "item known", "copies issued", "Q^T built", "chunk 1 landed", "its scores", "last chunk done", "end"],
    2: ["start", "decode visible", "end"],
}


def main():
    recs = []
    for line in sys.stdin:
        if not line.startswith("MTT "):
            continue
        f = line.split()
        kind, block, smid = int(f[1]), int(f[2]), int(f[3])
        gt = [int(x) for x in f[4:12]]
        clk = [int(x) for x in f[12:20]]
        recs.append((kind, block, smid, gt, clk))
    if not recs:
        sys.exit("trace-summary: no MTT lines (was the kernel built with MT_TRACE? only variants with a "
                 "reduce, num_splits > 1 or groups_per_cu > 0, print: the reduce prints the decode's lines)")
    recs.sort(key=lambda r: r[3][0])
    # calls from the decode lines alone (the reduce's blocks may start late
    # when printing holds them up); each reduce line joins the last call
    # that started before it
    calls, last = [], None
    for r in (r for r in recs if r[0] < 2):
        if last is None or r[3][0] - last > 30000:
            calls.append([])
        calls[-1].append(r)
        last = r[3][0]
    starts = [c[0][3][0] for c in calls]
    for r in (r for r in recs if r[0] == 2):
        i = max((k for k, t in enumerate(starts) if t <= r[3][0]), default=None)
        if i is not None:
            calls[i].append(r)
    rates = [(r[4][7] - r[4][0]) / (r[3][7] - r[3][0]) for r in recs if r[3][7] > r[3][0] + 2000 and r[0] < 2]
    ghz = statistics.median(rates) if rates else 0
    print(f"{len(calls)} calls traced; SM clock ~{ghz:.2f} GHz (cycles / global-timer ns)")
    for ci, call in enumerate(calls[-3:]):
        dec = [r for r in call if r[0] < 2]
        red = [r for r in call if r[0] == 2]
        if not dec:
            continue
        t0 = min(r[3][0] for r in dec)
        end = max(max(r[3]) for r in call)
        sms = len({r[2] for r in dec})
        print(f"\ncall {len(calls) - min(3, len(calls)) + ci}: {len({r[1] for r in dec})} decode work-groups on {sms} SMs, "
              f"{len(red)} reduce blocks; first decode start -> last mark {(end - t0) / 1000:.2f} us")
        print(f"  {'kind':4} {'mark':18} {'min':>7} {'median':>7} {'max':>7}   (us from the first decode start)")
        for kind in (0, 1, 2):
            rs = [r for r in call if r[0] == kind]
            names = NAMES[0 if kind < 2 else 2]
            for i, name in enumerate(names):
                v = [(r[3][i] - t0) / 1000 for r in rs if r[3][i]]
                if v:
                    print(f"  {kind:4} {name:18} {min(v):7.2f} {statistics.median(v):7.2f} {max(v):7.2f}")
        if ghz:
            print(f"  within a work-group (cycles / {ghz:.2f} GHz), median / max us:")
            for kind in (0, 1):
                rs = [r for r in call if r[0] == kind]
                names = NAMES[0]
                marks = [i for i in range(8) if all(r[4][i] for r in rs)]
                for a, b in zip(marks, marks[1:]):
                    v = [(r[4][b] - r[4][a]) / ghz / 1000 for r in rs]
                    print(f"  {kind:4} {names[a]:>15} -> {names[b]:15} {statistics.median(v):6.2f} {max(v):6.2f}")


if __name__ == "__main__":
    main()
