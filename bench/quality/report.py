#!/usr/bin/python3
# report.py: the tables of bench/quality/quality.sh, from the distance histogram it computed in
# SQL. Input: a tab-separated file, one row per (set, op, rate, label, mode, distance) with the
# number of pairs; distance is \N when a fingerprint is NULL (such a pair is never found).
# Usage: /usr/bin/python3 bench/quality/report.py hist.tsv   (quality.sh calls it)
#
# Definitions (percentages): at threshold t a pair is found when its distance is <= t.
#   R    recall: found pos / pos
#   FPR  found neg / neg (and, for spam, found hard / hard)
#   P    precision on a set with as many negatives as positives: R / (R + FPR); where the set
#        has equal counts (every pooled set here) this is found pos / (found pos + found neg)
#   F1   2PR / (P + R); the best-F1 threshold is the smallest t in 0..12 with the highest F1
#   all-pairs FPR  found allneg / allneg: allneg are all non-duplicate pairs of a set's pool
#        (see quality.sh), what a query against a large table meets; since P on balanced sets
#        is near 100% almost everywhere, this is the figure that separates the modes.
# Sections: R/P tables per set (and all-pairs FPR, and spam's hard negatives); recall per edit
# rate (and per op at t = 3, 6); best-F1 summary per set; mean F1 over English / Chinese / all
# sets; OpenCC variants side by side; operating points (largest t, searched in 0..24, whose
# all-pairs FPR is <= 0.01% resp. 0.1%, per set and one t for every set) with the recall
# there; candidate mode/threshold settings side by side.
import sys
from collections import defaultdict

T = list(range(13))
SETS = ["spam", "zh-cross", "zh-cross-t2s", "zh-cross-tw2sp", "zh-cross-tw2sp-tw", "sotu", "moby", "zh-edit"]
PRIMARY = ["spam", "sotu", "moby", "zh-cross", "zh-edit"]
ENGLISH = ["spam", "sotu", "moby"]
CHINESE = ["zh-cross", "zh-edit"]
EDIT_SETS = ["sotu", "moby", "zh-edit"]
LEVELS = [0.01, 0.1]   # all-pairs FPR limits of the operating points, percent
TX = list(range(25))   # thresholds searched for the operating points
MODES = ["w1", "w2", "w3", "w4", "w5", "c2", "c3", "c4", "c5", "c6", "tsv"]
MODE_NAME = {"tsv": "tsvector"}
RATES = [1, 2, 5, 10, 20]
OPS = ["del", "ins", "sub"]

# hist[(set, mode, label)][(op, rate)] = {distance or None: n}
hist = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        s, op, rate, label, mode, d, n = line.rstrip("\n").split("\t")
        hist[(s, mode, label)][(op, int(rate))][None if d == "\\N" else int(d)] += int(n)


def cum(s, mode, label, op=None, rate=None, ts=T):
    """(total, [found at t for t in ts])"""
    tot, by = 0, defaultdict(int)
    for (o, r), h in hist[(s, mode, label)].items():
        if (op is not None and o != op) or (rate is not None and r != rate):
            continue
        for d, n in h.items():
            tot += n
            if d is not None:
                by[d] += n
    found = [sum(n for d, n in by.items() if d <= t) for t in ts]
    return tot, found


def rates(s, mode, op=None, rate=None, neg="neg", ts=T):
    """lists over ts: R, FPR, P, F1 (percent; P and F1 None when undefined)"""
    pt, pf = cum(s, mode, "pos", op, rate, ts)
    nt, nf = cum(s, mode, neg, ts=ts)
    if pt == 0 or nt == 0:
        return None
    R = [100.0 * f / pt for f in pf]
    F = [100.0 * f / nt for f in nf]
    P = [None if r + f == 0 else 100.0 * r / (r + f) for r, f in zip(R, F)]
    F1 = [None if p is None or p + r == 0 else 2 * p * r / (p + r) for p, r in zip(P, R)]
    return R, F, P, F1


def best(F1):
    b = None
    for t in T:
        if F1[t] is not None and (b is None or F1[t] > F1[b] + 1e-12):
            b = t
    return b


ALLNEG_DESC = {"spam": "every pair of the loaded bodies, Jaccard < 0.8",
               "sotu": "every pair of chunks of the corpus", "moby": "every pair of chunks of the corpus",
               "zh-edit": "every pair of chunks of the corpus"}
for _v in SETS:
    if _v.startswith("zh-cross"):
        ALLNEG_DESC[_v] = "every zh_CN page against every zh_TW page of another page"


def fpr(found, tot):
    if tot == 0:
        return "-"
    x = 100.0 * found / tot
    return "0" if found == 0 else ("%.3f" % x if x < 1 else "%.1f" % x)


def allneg_fpr(s, m, ts=T):
    """list over ts of the all-pairs FPR in percent, or None"""
    tot, found = cum(s, m, "allneg", ts=ts)
    return None if tot == 0 else [100.0 * f / tot for f in found]


def pct(x):
    return "-" if x is None else "%.0f" % x


def rp(r, p):
    return "%s/%s" % (pct(r), pct(p))


def modes_of(s):
    return [m for m in MODES if hist.get((s, m, "pos"))]


def table(title, rows, cols, width=8, first=10):
    print()
    print(title)
    print("  " + "mode".ljust(first) + "".join(" " + str(c).rjust(width - 1) for c in cols))
    for name, cells in rows:
        print("  " + name.ljust(first) + "".join(" " + str(c).rjust(width - 1) for c in cells))


def nm(m):
    return MODE_NAME.get(m, m)


def counts_line(s):
    pt, _ = cum(s, modes_of(s)[0], "pos")
    nt, _ = cum(s, modes_of(s)[0], "neg")
    ht, _ = cum(s, modes_of(s)[0], "hard")
    return "%d pos, %d neg%s" % (pt, nt, ", %d hard" % ht if ht else "")


print()
print("=" * 100)
print("Recall/precision (%) at Hamming distance threshold t = 0..12, per set and mode")
print("(w<n>: simhash(body, 'words', n); c<n>: simhash(body, 'chars', n); tsvector: "
      "simhash(to_tsvector('english', body)); P: precision with as many negatives as positives)")
present = [s for s in SETS if any(hist.get((s, m, "pos")) for m in MODES)]
for s in present:
    rows = []
    for m in modes_of(s):
        R, F, P, F1 = rates(s, m)
        rows.append((nm(m), [rp(R[t], P[t]) for t in T]))
    table("[%s] R/P, %s%s" % (s, counts_line(s), ", all edit rates pooled" if s in EDIT_SETS else ""),
          rows, ["t=%d" % t for t in T])
    an, _ = cum(s, modes_of(s)[0], "allneg")
    if an:
        rows = []
        for m in modes_of(s):
            tot, found = cum(s, m, "allneg")
            rows.append((nm(m), [fpr(f, tot) for f in found]))
        table("[%s] all-pairs FPR (%%): share of all %d non-duplicate pairs (%s) within t"
              % (s, an, ALLNEG_DESC.get(s, "")), rows, ["t=%d" % t for t in T])
    if s == "spam":
        rows = []
        for m in modes_of(s):
            _, Fh, _, _ = rates(s, m, neg="hard")
            rows.append((nm(m), [pct(Fh[t]) for t in T]))
        table("[spam] hard negatives (0.3 <= Jaccard < 0.8) found, % (the FPR on them)",
              rows, ["t=%d" % t for t in T])

print()
print("=" * 100)
print("Edit sets per edit rate: recall (%) at t = 0..12, del/ins/sub pooled (one edited copy per"
      " op of each original); the negatives are in the pooled tables above")
for s in [x for x in EDIT_SETS if x in present]:
    for rate in RATES:
        rows = []
        for m in modes_of(s):
            R, F, P, F1 = rates(s, m, rate=rate)
            rows.append((nm(m), [pct(R[t]) for t in T]))
        table("[%s] %d%% of units edited: recall" % (s, rate), rows, ["t=%d" % t for t in T], width=6, first=11)
    for thr in (3, 6):
        rows = []
        for m in modes_of(s):
            cells = []
            for op in OPS:
                for rate in RATES:
                    R, _, _, _ = rates(s, m, op=op, rate=rate)
                    cells.append(pct(R[thr]))
            rows.append((nm(m), cells))
        table("[%s] recall (%%) at t=%d per edit op and rate" % (s, thr), rows,
              ["%s%d" % (op, r) for op in OPS for r in RATES], width=6)

print()
print("=" * 100)
print("Summary per set: best-F1 threshold (smallest t in 0..12 with the highest F1), its F1 and "
      "R/P, and R/P at t = 3 and t = 6;\nallFPR: the all-pairs false positive rate (%) at that threshold")
for s in present:
    rows = []
    for m in modes_of(s):
        R, F, P, F1 = rates(s, m)
        b = best(F1)
        A = allneg_fpr(s, m)
        af = (lambda t: "-" if A is None else fpr(A[t], 100.0))
        rows.append((nm(m), [b, pct(F1[b]), rp(R[b], P[b]), af(b), rp(R[3], P[3]), pct(F1[3]), af(3),
                             rp(R[6], P[6]), pct(F1[6]), af(6)]))
    table("[%s]" % s, rows, ["best t", "F1", "R/P@best", "allFPR", "R/P@3", "F1@3", "allFPR",
                             "R/P@6", "F1@6", "allFPR"], width=9)

print()
print("=" * 100)
print("One mode and threshold for several sets: mean F1 (%) over sets, per mode and t")
for group, name in ((ENGLISH, "English: spam, sotu, moby"), (CHINESE, "Chinese: zh-cross (no OpenCC), zh-edit"),
                    (PRIMARY, "all five: spam, sotu, moby, zh-cross, zh-edit")):
    group = [g for g in group if g in present]
    rows, tops = [], []
    for m in MODES:
        if not all(hist.get((g, m, "pos")) for g in group):
            continue
        f1s = [rates(g, m)[3] for g in group]
        mean = [None if any(f[t] is None for f in f1s) else sum(f[t] for f in f1s) / len(f1s) for t in T]
        b = best(mean)
        tops.append((mean[b], m, b))
        rows.append((nm(m), [pct(x) for x in mean] + ["t=%d" % b, "%.1f" % mean[b]]))
    table("[%s] mean F1" % name, rows, ["t=%d" % t for t in T] + ["best", "F1"], width=6)
    tops.sort(reverse=True)
    print("  best: " + ", ".join("%s t=%d (%.1f)" % (nm(m), b, f) for f, m, b in tops[:4]))

print()
print("=" * 100)
print("OpenCC before fingerprinting, zh_CN vs zh_TW pages of the same man page: R/P (%) at t = 3, 6, 9"
      " and best F1")
variants = [v for v in ["zh-cross", "zh-cross-t2s", "zh-cross-tw2sp", "zh-cross-tw2sp-tw"] if v in present]
label = {"zh-cross": "none", "zh-cross-t2s": "t2s both", "zh-cross-tw2sp": "tw2sp both",
         "zh-cross-tw2sp-tw": "tw2sp TW"}
for thr in (3, 6, 9):
    rows = []
    for m in modes_of("zh-cross"):
        rows.append((nm(m), [rp(*(lambda r: (r[0][thr], r[2][thr]))(rates(v, m))) for v in variants]))
    table("R/P at t=%d  (none: raw text; t2s both: opencc -c t2s.json on both pages; tw2sp both: "
          "-c tw2sp.json on both; tw2sp TW: on the zh_TW page only)" % thr,
          rows, [label[v] for v in variants], width=12)
rows = []
for m in modes_of("zh-cross"):
    cells = []
    for v in variants:
        R, F, P, F1 = rates(v, m)
        b = best(F1)
        cells.append("%s@t=%d" % (pct(F1[b]), b))
    rows.append((nm(m), cells))
table("best F1 @ threshold", rows, [label[v] for v in variants], width=12)



def op_point(s, m, level):
    """largest t in TX with all-pairs FPR <= level, or None"""
    A = allneg_fpr(s, m, TX)
    if A is None:
        return None
    ok = [t for t in TX if A[t] <= level]
    return max(ok) if ok else -1


for level in LEVELS:
    print()
    print("=" * 100)
    print("Operating point at all-pairs FPR <= %g%% (about %d false matches per query in a table of a "
          "million such documents):" % (level, round(level / 100 * 1e6)))
    print("the largest t in 0..%d whose all-pairs FPR is at most that, and the recall there, R@t "
          "(pooled positives of each set; \"none\": even t=0 is above the limit)" % TX[-1])
    cols = [x for x in SETS if x in present and allneg_fpr(x, modes_of(x)[0]) is not None]
    rows = []
    for m in MODES:
        cells = []
        for x in cols:
            if not hist.get((x, m, "pos")):
                cells.append("")
                continue
            t = op_point(x, m, level)
            cells.append("none" if t < 0 else "%s@%d" % (pct(rates(x, m, ts=TX)[0][t]), t))
        rows.append((nm(m), cells))
    table("R@t", rows, [c.replace("zh-cross-", "zc-") for c in cols], width=10)
    for x in [e for e in EDIT_SETS if e in present]:
        rows = []
        for m in modes_of(x):
            t = op_point(x, m, level)
            if t < 0:
                rows.append((nm(m), ["none"]))
                continue
            A = allneg_fpr(x, m, TX)
            rows.append((nm(m), [t] + [pct(rates(x, m, rate=r, ts=TX)[0][t]) for r in RATES] + [fpr(A[t], 100.0)]))
        table("[%s] at that t: recall per edit rate, and the all-pairs FPR (%%)" % x, rows,
              ["t"] + ["R %d%%" % r for r in RATES] + ["allFPR"], width=8)

for level in LEVELS:
    print()
    print("=" * 100)
    print("One threshold for every set: per mode, the largest t in 0..%d whose all-pairs FPR is at most %g%%"
          % (TX[-1], level))
    print("in every set that has one (spam, zh-cross*, sotu, moby, zh-edit), and the recall there (%):")
    print("spam and zh-cross* pooled; edit sets at 1/2/5% edits (10% and 20% in the tables above)")
    fsets = [x for x in SETS if x in present and allneg_fpr(x, modes_of(x)[0]) is not None]
    rsets = [x for x in ["spam", "zh-cross", "zh-cross-t2s", "zh-cross-tw2sp-tw"] if x in present]
    esets = [x for x in EDIT_SETS if x in present]
    rows = []
    for m in MODES:
        if not all(hist.get((x, m, "pos")) for x in fsets):
            continue
        ts = [op_point(x, m, level) for x in fsets]
        t = min(ts)
        if t < 0:
            rows.append((nm(m), ["none"]))
            continue
        worst = max(allneg_fpr(x, m, TX)[t] for x in fsets)
        cells = [t, fpr(worst, 100.0)]
        cells += [pct(rates(x, m, ts=TX)[0][t]) for x in rsets]
        cells += ["/".join(pct(rates(x, m, rate=r, ts=TX)[0][t]) for r in (1, 2, 5)) for x in esets]
        rows.append((nm(m), cells))
    table("R (%) at that t; maxFPR: the highest all-pairs FPR (%) among the sets there", rows,
          ["t", "maxFPR"] + [x.replace("zh-cross-", "zc-") for x in rsets]
          + ["%s 1/2/5" % x for x in esets], width=14)

print()
print("=" * 100)
print("Candidate settings side by side: recall (%) and all-pairs FPR (%) per set at fixed thresholds")
print("(spam, zc-tw2sp-tw: pooled recall; edit sets: recall at 1/2/5% edits)")
cand_sets = [x for x in ["spam", "zh-cross-tw2sp-tw", "sotu", "moby", "zh-edit"] if x in present]
rows = []
for m in ["w1", "w2", "w3", "c3", "c5", "c6", "tsv"]:
    for t in (3, 6, 8, 10, 12):
        cells = []
        for x in cand_sets:
            if not hist.get((x, m, "pos")):
                cells += ["", ""]
                continue
            if x in EDIT_SETS:
                cells.append("/".join(pct(rates(x, m, rate=r, ts=TX)[0][t]) for r in (1, 2, 5)))
            else:
                cells.append(pct(rates(x, m, ts=TX)[0][t]))
            A = allneg_fpr(x, m, TX)
            cells.append(fpr(A[t], 100.0))
        rows.append(("%s t=%d" % (nm(m), t), cells))
cols = []
for x in cand_sets:
    x = x.replace("zh-cross-", "zc-")
    cols += [x + " R", "FPR"]
table("", rows, cols, width=12, first=13)
