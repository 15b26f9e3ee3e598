#!/usr/bin/python3
# proto_oph_summary.py: the figures of the one-permutation MinHash prototype (proto_oph.py) that
# report.py does not print in one place: recall per edit rate and all-pairs FPR per set at t = 6,
# 8, 10, 12, recall of spam and zh-cross*, and which goal items (recall below the baseline v1 at
# radius 8) each sketch misses at t = 6..9.
# Usage: /usr/bin/python3 bench/quality/proto_oph_summary.py DIR/hist-oph.tsv
import sys
from collections import defaultdict
H=defaultdict(lambda: defaultdict(int))
for line in open(sys.argv[1]):
    s,op,rate,label,mode,d,n=line.rstrip('\n').split('\t')
    H[(s,mode,label,op,int(rate))][None if d=='\\N' else int(d)]+=int(n)
def frac(s,mode,label,t,op=None,rate=None):
    tot=f=0
    for (s2,m2,l2,o2,r2),h in H.items():
        if s2!=s or m2!=mode or l2!=label: continue
        if op is not None and not o2.startswith(op): continue
        if rate is not None and r2!=rate: continue
        for d,n in h.items():
            tot+=n
            if d is not None and d<=t: f+=n
    return (100.0*f/tot if tot else float('nan')), tot
modes=['v1','v2','oph64x1o','oph64x1r','oph32x2o','oph32x2r']
TS=[6,8,10,12]
print("recall per edit rate (%), t = 6 / 8 / 10 / 12")
for s in ['sotu','moby','zh-edit']:
    for r in [1,2,5,10]:
        print(f"  {s+' '+str(r)+'%':<12}"+"".join(f"{m:>10}:"+"/".join(f"{frac(s,m,'pos',t,rate=r)[0]:.1f}" for t in TS) for m in modes))
print("all-pairs FPR (%), t = 6 / 8 / 10 / 12")
for s in ['spam','zh-cross','zh-cross-t2s','zh-cross-tw2sp','zh-cross-tw2sp-tw','sotu','moby','zh-edit']:
    print(f"  {s:<18}"+"".join(f"{m:>10}:"+"/".join(f"{frac(s,m,'allneg',t)[0]:.4f}" for t in TS) for m in modes))
print("recall spam / zh-cross / zh-cross-tw2sp-tw / zh-cross-t2s / zh-cross-tw2sp, t=6/8/10/12")
for s in ['spam','zh-cross','zh-cross-tw2sp-tw','zh-cross-t2s','zh-cross-tw2sp']:
    print(f"  {s:<18}"+"".join(f"{m:>10}:"+"/".join(f"{frac(s,m,'pos',t)[0]:.1f}" for t in TS) for m in modes))
base={}
for s in ['sotu','moby','zh-edit']:
    for r in [1,2,5,10]: base[(s,r)]=frac(s,'v1','pos',8,rate=r)[0]
for s in ['spam','zh-cross','zh-cross-tw2sp-tw']: base[(s,None)]=frac(s,'v1','pos',8)[0]
for m in ['oph64x1o','oph64x1r','oph32x2o','oph32x2r']:
    for t in [6,7,8,9]:
        short=[]
        for (s,r),b in base.items():
            v=frac(s,m,'pos',t,rate=r)[0]
            if v < b-1e-9: short.append(f"{s}{'' if r is None else ' '+str(r)+'%'} {v:.1f}<{b:.1f}")
        print(m,t,'; '.join(short))
