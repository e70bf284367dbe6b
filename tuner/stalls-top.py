#!/usr/bin/env python3
"""stalls-top.py CSV [N] - reads the SASS source page that ncu-stalls.sh
writes ($OUT/stalls-NAME.csv) and prints where the warps of the decode
kernel wait: the share of each stall reason over all samples, then the N
instructions (default 25) with the most samples and their top reasons."""
import csv
import sys


def rows_of(path):
    lines = open(path, errors="replace").read().splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith('"Address"'))
    return list(csv.DictReader(lines[head:]))


def num(s):
    try:
        return float(s.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def main():
    rows = rows_of(sys.argv[1])
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    sums = {k: sum(num(r[k]) for r in rows) for k in reasons}
    print("samples: %d" % total)
    for k, v in sorted(sums.items(), key=lambda kv: -kv[1]):
        if v / total >= 0.01:
            print("  %-24s %5.1f%%" % (k[6:], 100.0 * v / total))
    print("top instructions (samples %, top reasons):")
    for r in sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[:top_n]:
        s = num(r["Warp Stall Sampling (All Samples)"])
        why = sorted(((num(r[k]), k[6:]) for k in reasons), reverse=True)[:2]
        print("  %5.1f%%  %-60s %s" % (100.0 * s / total, r["Source"][:60].strip(),
                                     ", ".join("%s %.0f%%" % (n, 100.0 * v / s) for v, n in why if s and v)))


if __name__ == "__main__":
    main()
