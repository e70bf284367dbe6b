import re, sys, statistics
unit = {"nsecond": 1e-3, "ns": 1e-3, "us": 1.0, "ms": 1e3, "usecond": 1.0, "msecond": 1e3, "second": 1e6,
        "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}
recs, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"^  (mla_\w+) \((\d+), (\d+), (\d+)\)", line)
    if m:
        cur = {"k": m.group(1), "grid": m.group(2)}
        recs.append(cur)
        continue
    m = re.match(r"^\s+(\S+)\s+(\S+)\s+([\d.,]+)\s*$", line)
    if m and cur is not None and m.group(2) in unit:
        cur[m.group(1)] = float(m.group(3).replace(",", "")) * unit[m.group(2)]
print(" ".join("%s%s:%.1f/%.0fMB" % (r["k"][4:7], r["grid"], r.get("gpu__time_duration.sum", -1),
      r.get("dram__bytes_read.sum", 0) + r.get("dram__bytes_write.sum", 0)) for r in recs))
