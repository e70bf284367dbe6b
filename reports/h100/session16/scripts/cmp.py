import re,collections,sys
cur=None; d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    m=re.match(r'### round (\d) (\w+): (.*)',line)
    if m: cur=(m.group(2),m.group(3)); continue
    if cur and re.match(r'^ +(16|128) ',line):
        f=line.split()
        key=(cur[1][:14],f[0],f[2],f[3],f[4],f[-1][:18])
        d[(cur[0],key)].append(float(f[6]))
keys=sorted(set(k for (_,k) in d), key=lambda k:(k[0],int(k[1]),int(k[2]),int(k[3]),k[5]))
kinds=sys.argv[2].split(',')
for k in keys:
    vals=[min(d[(kd,k)]) if d.get((kd,k)) else None for kd in kinds]
    if vals[0] is None: continue
    s="%-14s N=%-3s B=%-4s L=%-6s max=%-6s %-18s"%k
    for kd,v in zip(kinds,vals):
        s+=" %s %6.1f"%(kd,v) if v else ""
        if v and kd!=kinds[0]: s+=" (%+5.1f%%)"%(100*(v/vals[0]-1))
    print(s)
