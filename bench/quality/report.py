#!/usr/bin/python3
# report.py: the tables of bench/quality/quality.sh, from the distance histogram it computed in
# SQL. Input: a tab-separated file, one row per (set, op, rate, label, mode, distance) with the
# number of pairs; distance is \N when a fingerprint is NULL (such a pair is never found); and
# optionally the list of mode names in the order of modes.txt (one a line).
# Usage: /usr/bin/python3 bench/quality/report.py hist.tsv [modes.lst]   (quality.sh calls it)
#
# Definitions (percentages): at threshold t a pair is found when its distance is <= t.
#   R    recall: found pos / pos
#   FPR  found neg / neg (and, for spam, found hard / hard)
#   P    precision on a set with as many negatives as positives: R / (R + FPR); where the set
#        has equal counts (every pooled set here) this is found pos / (found pos + found neg)
#   F1   2PR / (P + R); the best-F1 threshold is the smallest t in 0..16 with the highest F1
#   all-pairs FPR  found allneg / allneg: allneg are all non-duplicate pairs of a set's pool
#        (see quality.sh), what a query against a large table meets; since P on balanced sets
#        is near 100% almost everywhere, this is the figure that separates the modes.
#        zh-variant has the all-pairs FPR of zh-edit (its originals are the zh-edit chunks).
#   long-document sets (debdocs, sotu-full, manpages), every pair labelled by exact Jaccard J:
#        pairs within t; all-pairs precision = found (pos + mid) / found (pos + mid + hard +
#        allneg), i.e. the share of the pairs within t with J >= 0.5 ("-" when none is
#        within t, counted as met); the number found with J < 0.5 (hard + allneg) and J < 0.2
#        (allneg); R80 = recall of the J >= 0.8 pairs, R80x = the same without byte-identical
#        texts (op "="); sotu-full len80 = recall of the length-mismatched copies app10 and
#        part90 (J 0.888-0.912), and recall per lenpos group (app<f>, part<p>).
# Sections: R/P tables per set (and all-pairs FPR, and spam's hard negatives); recall per edit
# rate (and per op at t = 3, 6); best-F1 summary per set; mean F1 over English / Chinese / all
# sets; OpenCC variants side by side; operating points (largest t, searched in 0..24, whose
# all-pairs FPR is <= 0.01% resp. 0.1%, per set and one t for every set) with the recall
# there; candidate mode/threshold settings side by side; zh-variant recall per op and rate;
# long-document tables per set; variant folding side by side (every mode whose name contains
# "-fold" next to the mode named by what precedes it); the operating radius per mode: the
# largest t in 0..16 with (a) all-pairs precision >= 99% on every long set and (b) all-pairs
# FPR <= 0.01% on every earlier set (spam, zh-cross*, sotu, moby, zh-edit), over the sets the
# mode was measured on, with the recall there on every set; and the v2 goal per mode and t
# in 4..16: debdocs all-pairs precision >= 99% and R80 >= 99%, every earlier set's all-pairs
# FPR <= 0.01%, and recall no lower than the baseline mode (QUALITY_BASELINE, default v1) at
# radius 8 on spam, zh-cross, zh-cross-tw2sp-tw and sotu/moby/zh-edit at 1/2/5/10% edits.
import os
import sys
from collections import defaultdict

T = list(range(17))
SETS = ["spam", "zh-cross", "zh-cross-t2s", "zh-cross-tw2sp", "zh-cross-tw2sp-tw", "sotu", "moby", "zh-edit",
        "zh-variant"]
LONG = ["debdocs", "sotu-full", "manpages"]
ALLNEG_OF = {"zh-variant": "zh-edit"}   # zh-variant's originals are the zh-edit chunks
PRIMARY = ["spam", "sotu", "moby", "zh-cross", "zh-edit"]
ENGLISH = ["spam", "sotu", "moby"]
CHINESE = ["zh-cross", "zh-edit"]
EDIT_SETS = ["sotu", "moby", "zh-edit"]
LEVELS = [0.01, 0.1]   # all-pairs FPR limits of the operating points, percent
TX = list(range(25))   # thresholds searched for the operating points
RATES = [1, 2, 5, 10, 20]
OPS = ["del", "ins", "sub"]
VAR_OPS = ["var", "var+e2"]
VAR_RATES = [10, 50, 100]
BASELINE = os.environ.get("QUALITY_BASELINE", "v1")

# hist[(set, mode, label)][(op, rate)] = {distance or None: n}
hist = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        s, op, rate, label, mode, d, n = line.rstrip("\n").split("\t")
        hist[(s, mode, label)][(op, int(rate))][None if d == "\\N" else int(d)] += int(n)
if len(sys.argv) > 2:
    with open(sys.argv[2], encoding="utf-8") as fh:
        MODES = [x.strip() for x in fh if x.strip()]
else:
    MODES = sorted({m for (_, m, _) in hist})


def cum(s, mode, label, op=None, rate=None, ts=T):
    """(total, [found at t for t in ts])"""
    tot, by = 0, defaultdict(int)
    if label == "allneg":
        s = ALLNEG_OF.get(s, s)
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


def table(title, rows, cols, width=8, first=22):
    print()
    print(title)
    print("  " + "mode".ljust(first) + "".join(" " + str(c).rjust(width - 1) for c in cols))
    for name, cells in rows:
        print("  " + name.ljust(first) + "".join(" " + str(c).rjust(width - 1) for c in cells))


def nm(m):
    return m


def counts_line(s):
    pt, _ = cum(s, modes_of(s)[0], "pos")
    nt, _ = cum(s, modes_of(s)[0], "neg")
    ht, _ = cum(s, modes_of(s)[0], "hard")
    return "%d pos, %d neg%s" % (pt, nt, ", %d hard" % ht if ht else "")


print()
print("=" * 100)
print("Recall/precision (%%) at Hamming distance threshold t = 0..%d, per set and mode" % T[-1])
print("(modes: see the list at the top, from modes.txt; P: precision with as many negatives as positives)")
present = [s for s in SETS if any(hist.get((s, m, "pos")) for m in MODES)]
for s in present:
    rows = []
    for m in modes_of(s):
        R, F, P, F1 = rates(s, m)
        rows.append((nm(m), [rp(R[t], P[t]) for t in T]))
    table("[%s] R/P, %s%s" % (s, counts_line(s), ", all edit rates pooled" if s in EDIT_SETS else ""),
          rows, ["t=%d" % t for t in T])
    an, _ = cum(s, modes_of(s)[0], "allneg")
    if an and s in ALLNEG_OF:
        print("  [%s] all-pairs FPR: that of %s (the same documents)" % (s, ALLNEG_OF[s]))
    elif an:
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
print("Edit sets per edit rate: recall (%) at t = 0..16, del/ins/sub pooled (one edited copy per"
      " op of each original); the negatives are in the pooled tables above")
for s in [x for x in EDIT_SETS if x in present]:
    for rate in RATES:
        rows = []
        for m in modes_of(s):
            R, F, P, F1 = rates(s, m, rate=rate)
            rows.append((nm(m), [pct(R[t]) for t in T]))
        table("[%s] %d%% of units edited: recall" % (s, rate), rows, ["t=%d" % t for t in T], width=6, first=22)
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
print("Summary per set: best-F1 threshold (smallest t in 0..16 with the highest F1), its F1 and "
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
        rows.append((nm(m), [(lambda r: "" if r is None else rp(r[0][thr], r[2][thr]))(rates(v, m)) for v in variants]))
    table("R/P at t=%d  (none: raw text; t2s both: opencc -c t2s.json on both pages; tw2sp both: "
          "-c tw2sp.json on both; tw2sp TW: on the zh_TW page only)" % thr,
          rows, [label[v] for v in variants], width=12)
rows = []
for m in modes_of("zh-cross"):
    cells = []
    for v in variants:
        if rates(v, m) is None:
            cells.append("")
            continue
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
for m in MODES:
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
table("", rows, cols, width=12, first=24)


# ---------------------------------------------------------------------------
# zh-variant: recall per substitution op and rate
# ---------------------------------------------------------------------------
def pct1(x):
    return "-" if x is None else "%.1f" % x


if "zh-variant" in present:
    print()
    print("=" * 100)
    print("[zh-variant] recall (%) per op and rate: zh-edit chunk vs. a copy with that share of its "
          "substitutable characters replaced by a Unihan variant (var), and then 2% of its characters "
          "substituted (var+e2)")
    for op in VAR_OPS:
        for rate in VAR_RATES:
            rows = []
            for m in modes_of("zh-variant"):
                R = rates("zh-variant", m, op=op, rate=rate)[0]
                rows.append((m, [pct(R[t]) for t in T]))
            table("[zh-variant] %s %d%%: recall" % (op, rate), rows, ["t=%d" % t for t in T], width=6)


# ---------------------------------------------------------------------------
# long documents: all-pairs precision and recall
# ---------------------------------------------------------------------------
def long_counts(s, m, ts=T):
    """per t: dict with returned pairs, J >= 0.5 among them, J < 0.5, J < 0.2, and recall of
    J >= 0.8 (all, and without byte-identical pairs)."""
    pos_t, pos_f = cum(s, m, "pos", ts=ts)
    posn_t, posn_f = cum(s, m, "pos", op="-", ts=ts)
    mid_t, mid_f = cum(s, m, "mid", ts=ts)
    hard_t, hard_f = cum(s, m, "hard", ts=ts)
    neg_t, neg_f = cum(s, m, "allneg", ts=ts)
    out = []
    for k in range(len(ts)):
        good = pos_f[k] + mid_f[k]
        ret = good + hard_f[k] + neg_f[k]
        out.append({"ret": ret, "P": None if ret == 0 else 100.0 * good / ret,
                    "lt50": hard_f[k] + neg_f[k], "lt20": neg_f[k],
                    "R80": None if pos_t == 0 else 100.0 * pos_f[k] / pos_t,
                    "R80n": None if posn_t == 0 else 100.0 * posn_f[k] / posn_t})
    return out, (pos_t, posn_t, mid_t, hard_t, neg_t)


def lenpos_recall(s, m, ts=T, op=None, rate=None, jmin=None):
    """recall of the length-mismatched copies (label lenpos), optionally only op/rate"""
    tot, found = cum(s, m, "lenpos", op=op, rate=rate, ts=ts)
    return None if tot == 0 else [100.0 * f / tot for f in found]


def lenpos80(s, m, ts=T):
    """recall of the lenpos pairs whose exact Jaccard is >= 0.8 (app10, app25 with J >= 0.8,
    part90): pooled over the (op, rate) groups whose every pair has J >= 0.8 is not known
    here, so the groups are listed in LEN80"""
    tot, found = 0, [0] * len(ts)
    for op, rate in LEN80:
        t_, f_ = cum(s, m, "lenpos", op=op, rate=rate, ts=ts)
        tot += t_
        found = [a + b for a, b in zip(found, f_)]
    return None if tot == 0 else [100.0 * f / tot for f in found]


LEN80 = [("app", 10), ("part", 90)]   # the length-mismatched groups with J >= 0.8 (0.888-0.912)
present_long = [s for s in LONG if any(hist.get((s, m, "allneg")) for m in MODES)]
if present_long:
    print()
    print("=" * 100)
    print("Long documents, ALL pairs of each set labelled by exact word 5-shingle Jaccard J: per mode and")
    print("threshold t, the pairs within t: how many, all-pairs precision P = share with J >= 0.5, how many")
    print("with J < 0.5 and with J < 0.2; and the recall of the pairs with J >= 0.8 (R80; R80x: without")
    print("byte-identical texts). Percentages with one decimal.")
for s in present_long:
    ms = [m for m in MODES if hist.get((s, m, "allneg"))]
    _, (pt, ptn, mt, ht, nt) = long_counts(s, ms[0])
    print()
    print("[%s] %d pairs: %d with J >= 0.8 (%d of them byte-identical), %d with 0.5 <= J < 0.8, "
          "%d with 0.2 <= J < 0.5, %d with J < 0.2" % (s, pt + mt + ht + nt, pt, pt - ptn, mt, ht, nt))
    res = {m: long_counts(s, m)[0] for m in ms}
    for key, title, f in (("ret", "pairs within t", str), ("P", "all-pairs precision (% with J >= 0.5)", pct1),
                          ("lt50", "pairs within t with J < 0.5", str), ("lt20", "pairs within t with J < 0.2", str),
                          ("R80", "recall of the J >= 0.8 pairs (%)", pct1),
                          ("R80n", "recall of the J >= 0.8 pairs that are not byte-identical (%)", pct1)):
        if key.startswith("R80") and (pt if key == "R80" else ptn) == 0:
            continue
        table("[%s] %s" % (s, title), [(m, [f(res[m][t][key]) for t in T]) for m in ms],
              ["t=%d" % t for t in T], width=7)
    if any(hist.get((s, m, "lenpos")) for m in ms):
        groups = sorted({k for m in ms for k in hist.get((s, m, "lenpos"), {})})
        print()
        print("[%s] length-mismatched copies (lenpos): app<f>: an address and itself with f%% more words "
              "appended (a contiguous run of other addresses); part<p>: an address and a contiguous p%% "
              "of it; bp<f>: f%% boilerplate added at one end; bpswap<f>: that block against another of the "
              "same length; reord<r>: r%% of its sentences moved (build_sets.py, real_edits). Exact "
              "Jaccard of each group is in the build log above." % s)
        for t0 in (4, 6, 8, 10, 12, 14):
            rows = []
            for m in ms:
                rows.append((m, [pct(lenpos_recall(s, m, op=o, rate=r)[t0]) for o, r in groups]))
            table("[%s] recall (%%) of the length-mismatched copies at t=%d" % (s, t0), rows,
                  ["%s%d" % g for g in groups], width=8)


# ---------------------------------------------------------------------------
# variant folding side by side
# ---------------------------------------------------------------------------
FOLDED = [m for m in MODES if "-fold" in m]
if FOLDED:
    pairs_f = []
    for m in FOLDED:
        base = m.split("-fold")[0]
        if base in MODES:
            pairs_f.append((base, m))
    order = []
    for b, m in pairs_f:
        if b not in order:
            order.append(b)
        order.append(m)
    print()
    print("=" * 100)
    print("Variant folding (q_fold: Unihan traditional/simplified/Z + kHKGlyph semantic variants; "
          "-nohk: without the semantic ones): recall (%) with and without")
    for t0 in (4, 6, 8, 10, 12):
        rows = []
        for m in order:
            cells = []
            for op in VAR_OPS:
                for rate in VAR_RATES:
                    R = rates("zh-variant", m, op=op, rate=rate, ts=TX) if hist.get(("zh-variant", m, "pos")) else None
                    cells.append(pct(R[0][t0]) if R else "")
            for x in ("zh-cross", "zh-edit"):
                R = rates(x, m, ts=TX) if hist.get((x, m, "pos")) else None
                cells.append(pct(R[0][t0]) if R else "")
            for x in ("zh-edit", "zh-cross"):
                A = allneg_fpr(x, m, TX)
                cells.append(fpr(A[t0], 100.0) if A else "")
            if hist.get(("debdocs", m, "allneg")):
                lc = long_counts("debdocs", m, ts=TX)[0][t0]
                cells += [pct1(lc["P"]), pct1(lc["R80"])]
            else:
                cells += ["", ""]
            rows.append((m, cells))
        table("t=%d: zh-variant recall per op/rate; zh-cross, zh-edit recall (pooled); all-pairs FPR (%%) of "
              "zh-edit and zh-cross; debdocs all-pairs precision and R80" % t0, rows,
              ["%s%d" % (o.replace("var+e2", "v+e2"), r) for o in VAR_OPS for r in VAR_RATES]
              + ["zh-cross", "zh-edit", "FPRedit", "FPRcross", "deb P", "deb R80"], width=9)


# ---------------------------------------------------------------------------
# the operating radius per mode, and the goal
# ---------------------------------------------------------------------------
FPR_SETS = [x for x in ["spam", "zh-cross", "zh-cross-t2s", "zh-cross-tw2sp", "zh-cross-tw2sp-tw", "sotu", "moby",
                        "zh-edit"] if x in present]


def recall_items(m, t):
    """(name, recall %) of every set the mode has, at t (TX index)"""
    out = []
    for x in ["spam", "zh-cross", "zh-cross-tw2sp-tw"]:
        if hist.get((x, m, "pos")):
            out.append((x, rates(x, m, ts=TX)[0][t]))
    for x in EDIT_SETS:
        if hist.get((x, m, "pos")):
            for r in (1, 2, 5, 10):
                out.append(("%s %d%%" % (x, r), rates(x, m, rate=r, ts=TX)[0][t]))
    if hist.get(("zh-variant", m, "pos")):
        for op in VAR_OPS:
            for r in VAR_RATES:
                out.append(("zh-variant %s %d%%" % (op, r), rates("zh-variant", m, op=op, rate=r, ts=TX)[0][t]))
    for x in present_long:
        if hist.get((x, m, "allneg")):
            lc = long_counts(x, m, ts=TX)[0][t]
            if lc["R80"] is not None:
                out.append(("%s R80" % x, lc["R80"]))
            if lc["R80n"] is not None and lc["R80n"] != lc["R80"]:
                out.append(("%s R80x" % x, lc["R80n"]))
            L = lenpos80(x, m, ts=TX)
            if L is not None:
                out.append(("%s len80" % x, L[t]))
    return out


def checks(m, t):
    """the operating-radius conditions at t: (ok_a, ok_b, worst precision, worst FPR)"""
    worst_p, worst_f = None, None
    for x in present_long:
        if hist.get((x, m, "allneg")):
            P = long_counts(x, m, ts=TX)[0][t]["P"]
            if P is not None and (worst_p is None or P < worst_p):
                worst_p = P
    for x in FPR_SETS:
        A = allneg_fpr(x, m, TX)
        if A is not None and (worst_f is None or A[t] > worst_f):
            worst_f = A[t]
    return ((worst_p is None or worst_p >= 99.0), (worst_f is None or worst_f <= 0.01), worst_p, worst_f)


print()
print("=" * 100)
print("Operating radius per mode: the largest t in 0..16 at which (a) the all-pairs precision (J >= 0.5)")
print("is >= 99%% on every long-document set (%s) and (b) the all-pairs FPR is <= 0.01%% on every"
      % ", ".join(present_long))
print("earlier set that has one (%s); the recall (%%) there. Sets a mode was not measured on are"
      % ", ".join(FPR_SETS))
print("left out of its conditions (fold modes: Chinese sets and debdocs only). R80: J >= 0.8 pairs; R80x: the")
print("same without byte-identical texts; sotu-full len80: the length-mismatched copies with J >= 0.8")
print("(app10, part90). minP: the lowest all-pairs precision of the long sets; maxFPR: the highest FPR.")
OPR = {}
item_names = []
for m in MODES:
    for name, _ in recall_items(m, 0):
        if name not in item_names:
            item_names.append(name)
rows = []
for m in MODES:
    good = [t for t in T if all(checks(m, t)[:2])]
    t = max(good) if good else None
    OPR[m] = t
    if t is None:
        rows.append((m, ["none"]))
        continue
    _, _, wp, wf = checks(m, t)
    items = dict(recall_items(m, t))
    rows.append((m, [t, pct1(wp), fpr(wf, 100.0) if wf is not None else "-"]
                 + [pct1(items[n]) if n in items else "" for n in item_names]))
print()
print("  (columns, in order: t, minP, maxFPR, then recall per item)")
for m, cells in rows:
    print("  %-22s %s" % (m, "  ".join("%s" % c for c in cells[:3])))
for k in range(0, len(item_names), 8):
    chunk = item_names[k:k + 8]
    table("recall (%%) at the operating radius, %d/%d" % (k // 8 + 1, (len(item_names) + 7) // 8),
          [(m, (cells[3 + k:3 + k + 8] if len(cells) > 1 else [])) for m, cells in rows],
          [n.replace("zh-cross-", "zc-").replace("zh-variant ", "zv ") for n in chunk], width=14)

# a looser variant of (a): sotu-full has no pair with J >= 0.5 and manpages 23, so there any
# returned pair makes the precision 0 or swings it; judge them instead like the earlier sets, by
# the share of their J < 0.5 pairs within t (<= 0.01%), and debdocs by precision >= 99%
def checks_loose(m, t):
    ok = True
    for x in present_long:
        if not hist.get((x, m, "allneg")):
            continue
        lc = long_counts(x, m, ts=TX)[0][t]
        if x == "debdocs":
            ok = ok and (lc["P"] is None or lc["P"] >= 99.0)
        else:
            _, (pt, ptn, mt, ht, nt) = long_counts(x, m, ts=TX)
            ok = ok and 100.0 * lc["lt50"] / (ht + nt) <= 0.01
    return ok and checks(m, t)[1]


print()
print("Operating radius, looser (a): debdocs all-pairs precision >= 99%; sotu-full and manpages (no resp.")
print("23 pairs with J >= 0.5) judged by the share of their J < 0.5 pairs within t, <= 0.01% (2.7 resp.")
print("60 pairs); (b) as above. The pairs within t with J < 0.5 on each long set, and the recall there:")
rows = []
for m in MODES:
    good = [t for t in T if checks_loose(m, t)]
    t = max(good) if good else None
    if t is None:
        rows.append((m, ["none"]))
        continue
    items = dict(recall_items(m, t))
    lt = [str(long_counts(x, m, ts=TX)[0][t]["lt50"]) if hist.get((x, m, "allneg")) else "" for x in present_long]
    rows.append((m, [t, fpr(checks(m, t)[3], 100.0) if checks(m, t)[3] is not None else "-"] + lt
                 + [pct1(items[n]) if n in items else "" for n in item_names]))
hdr = ["t", "maxFPR"] + ["<0.5 %s" % x for x in present_long]
for k in range(0, len(item_names), 8):
    chunk = item_names[k:k + 8]
    table("looser operating radius, %d/%d" % (k // 8 + 1, (len(item_names) + 7) // 8),
          [(m, (c[:len(hdr)] if k == 0 else []) + c[len(hdr) + k:len(hdr) + k + 8] if len(c) > 1 else c)
           for m, c in rows],
          (hdr if k == 0 else []) + [n.replace("zh-cross-", "zc-").replace("zh-variant ", "zv ") for n in chunk],
          width=14)

# the goal: debdocs P >= 99% and R80 >= 99% at the radius; every earlier set: all-pairs FPR <= 0.01%
# and recall >= the baseline's at radius 8
print()
print("=" * 100)
print("Goal per mode and radius t: debdocs all-pairs precision >= 99% and recall of its J >= 0.8 pairs")
print(">= 99%%; on every earlier set all-pairs FPR <= 0.01%% and recall no lower than %s at radius 8 (spam,"
      % BASELINE)
print("zh-cross, zh-cross-tw2sp-tw pooled; sotu, moby, zh-edit at 1, 2, 5, 10% edits: 15 items).")
print("Cell: ok, or what fails: P<precision>, R<recall> (debdocs), F<highest FPR %>, -<largest recall")
print("shortfall in points>x<number of items short>.")
GOAL_ITEMS = [n for n in item_names if n in ("spam", "zh-cross", "zh-cross-tw2sp-tw")
              or any(n == "%s %d%%" % (x, r) for x in EDIT_SETS for r in (1, 2, 5, 10))]
base = dict(recall_items(BASELINE, 8)) if BASELINE in MODES else {}
if not base:
    print("  (baseline mode %s not measured: recall comparison left out)" % BASELINE)
GT = list(range(4, 17))
rows, meets = [], {}
for m in MODES:
    cells = []
    meets[m] = []
    for t in GT:
        fails = []
        if hist.get(("debdocs", m, "allneg")):
            lc = long_counts("debdocs", m, ts=TX)[0][t]
            if lc["P"] is not None and lc["P"] < 99.0:
                fails.append("P%.1f" % lc["P"])
            if lc["R80"] is not None and lc["R80"] < 99.0:
                fails.append("R%.1f" % lc["R80"])
        _, okb, _, wf = checks(m, t)
        if not okb:
            fails.append("F%s" % fpr(wf, 100.0))
        items = dict(recall_items(m, t))
        short = [base[n] - items[n] for n in GOAL_ITEMS if n in base and n in items and items[n] < base[n] - 1e-9]
        if short:
            fails.append("-%.1fx%d" % (max(short), len(short)))
        cells.append("ok" if not fails else " ".join(fails))
        if not fails:
            meets[m].append(t)
    rows.append((m, cells))
for k in (0, 7):
    ts = GT[k:k + 7]
    table("goal check, t=%d..%d" % (ts[0], ts[-1]), [(m, c[k:k + 7]) for m, c in rows],
          ["t=%d" % t for t in ts], width=19)
print()
print("Modes and radii meeting the whole goal: " + ("; ".join(
    "%s at t=%s" % (m, ",".join(map(str, v))) for m, v in meets.items() if v) or "none"))
if base:
    print("Baseline %s at radius 8, the recall (%%) to match: %s" % (BASELINE, ", ".join(
        "%s %s" % (n, pct1(base[n])) for n in GOAL_ITEMS if n in base)))


# ---------------------------------------------------------------------------
# pg_trgm side by side (quality.sh with QUALITY_TRGM=1: a third argument, trgm.py's histogram)
# ---------------------------------------------------------------------------
# pg_trgm's similarity(a.body, b.body) is read like a mode named pg_trgm whose "distance" is
# 100 - 100 s at similarity threshold s (found when similarity >= s), s = 0.00 .. 1.00. Best
# threshold per set, by the rules of the operating points above: on the earlier sets the smallest
# s (the largest recall) whose all-pairs FPR is <= 0.01%; on the long sets the smallest s whose
# all-pairs precision (share of the returned pairs with J >= 0.5) is >= 99% (met when no pair is
# returned). Beside it, each verified mode (QUALITY_VERIFY) at its radius R.
TRGM = "pg_trgm"
S_FIXED = [0.3, 0.5, 0.7]


def s_d(s):
    return 100 - int(round(s * 100))


def trgm_best_short(x):
    A = allneg_fpr(x, TRGM, [s_d(k / 100) for k in range(101)])
    if A is None:
        return None
    ok = [k for k in range(101) if A[k] <= 0.01]
    return min(ok) / 100 if ok else None


def trgm_best_long(x):
    lc = long_counts(x, TRGM, ts=[s_d(k / 100) for k in range(101)])[0]
    ok = [k for k in range(101) if lc[k]["P"] is None or lc[k]["P"] >= 99.0]
    return min(ok) / 100 if ok else None


def fs(s):
    return "%.2f" % s


if len(sys.argv) > 3:
    with open(sys.argv[3], encoding="utf-8") as fh:
        for line in fh:
            s, op, rate, label, mode, d, n = line.rstrip("\n").split("\t")
            hist[(s, mode, label)][(op, int(rate))][None if d == "\\N" else int(d)] += int(n)
    VER_R = {}
    for m in MODES:
        if "@r" in m:
            try:
                VER_R[m] = int(m.split("@r", 1)[1].split("j", 1)[0])
            except ValueError:
                pass
    print()
    print("=" * 100)
    print("pg_trgm side by side: similarity(a.body, b.body) (pg_trgm trigram similarity, default")
    print("pg_trgm.similarity_threshold 0.3), a pair found when similarity >= s, at s = 0.3, 0.5, 0.7 and the")
    print("best s per set: on the earlier sets the smallest s (0.00..1.00) whose all-pairs FPR is <= 0.01% (the")
    print("largest recall there), on the long sets the smallest s whose all-pairs precision (J >= 0.5) is >= 99%")
    print("(met when no pair is returned); \"none\": no s meets it. Beside it the verified modes at their radius R.")
    print("R/P: recall/precision (%) with as many negatives as positives; allFPR: the all-pairs FPR (%).")
    short = [x for x in SETS if hist.get((x, TRGM, "pos")) and x in present]
    rows = []
    for x in short:
        cells = []
        b = trgm_best_short(x)
        for s in S_FIXED + ([b] if b is not None else []):
            R, F, P, _ = rates(x, TRGM, ts=[s_d(s)])
            A = allneg_fpr(x, TRGM, [s_d(s)])
            cells += [rp(R[0], P[0]), fpr(A[0], 100.0) if A else "-"]
        if b is None:
            cells += ["none", ""]
        rows.append((x, cells[:6] + ([fs(b)] if b is not None else ["none"]) + cells[6:8]))
        for m, r in VER_R.items():
            if hist.get((x, m, "pos")):
                R, F, P, _ = rates(x, m, ts=[r])
                A = allneg_fpr(x, m, [r])
                rows.append(("  %s" % m, ["", "", "", "", "", "", "t=%d" % r, rp(R[0], P[0]),
                                          fpr(A[0], 100.0) if A else "-"]))
    table("pg_trgm per set (rows \"  <mode>\": the verified mode at t = R, in the best columns; zh-variant:"
          " the all-pairs FPR of zh-edit)", rows,
          ["R/P 0.3", "allFPR", "R/P 0.5", "allFPR", "R/P 0.7", "allFPR", "best s", "R/P", "allFPR"],
          width=10, first=30)
    if hist.get(("spam", TRGM, "pos")):
        b = trgm_best_short("spam")
        cols = sorted(set(S_FIXED + ([b] if b is not None else [])))
        rows = [(TRGM, [pct(rates("spam", TRGM, neg="hard", ts=[s_d(s)])[1][0]) for s in cols])]
        for m, r in VER_R.items():
            if hist.get(("spam", m, "pos")):
                rows.append(("%s t=%d" % (m, r), [pct(rates("spam", m, neg="hard", ts=[r])[1][0])]))
        table("[spam] hard negatives (0.3 <= Jaccard < 0.8) found, %", rows,
              ["s=%s" % fs(s) for s in cols], width=9, first=30)
    for x in [e for e in EDIT_SETS if hist.get((e, TRGM, "pos")) and e in present]:
        b = trgm_best_short(x)
        cols = sorted(set(S_FIXED + ([b] if b is not None else [])))
        rows = [("%s s=%s%s" % (TRGM, fs(s), " best" if s == b else ""),
                 [pct(rates(x, TRGM, rate=r, ts=[s_d(s)])[0][0]) for r in RATES]) for s in cols]
        for m, r in VER_R.items():
            if hist.get((x, m, "pos")):
                rows.append(("%s t=%d" % (m, r), [pct(rates(x, m, rate=q, ts=[r])[0][0]) for q in RATES]))
        table("[%s] recall (%%) per edit rate" % x, rows, ["R %d%%" % r for r in RATES], width=8, first=30)
    longs = [x for x in LONG if hist.get((x, TRGM, "allneg"))]
    if longs:
        print()
        print("pg_trgm on the long sets: per s, the pairs returned, all-pairs precision P (% with J >= 0.5),")
        print("P80 (% with J >= 0.8), the returned pairs with J < 0.5 and J < 0.2, R80 / R80x (recall of the")
        print("J >= 0.8 pairs, all / without byte-identical texts); the verified modes at t = R below")
    GRID = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95]
    for x in longs:
        b = trgm_best_long(x)
        cols = sorted(set(GRID + ([b] if b is not None else [])))
        rows = []

        def lrow(m, t):
            lc = long_counts(x, m, ts=[t])[0][0]
            p80_t, p80_f = cum(x, m, "pos", ts=[t])
            return [lc["ret"], pct1(lc["P"]), pct1(None if lc["ret"] == 0 else 100.0 * p80_f[0] / lc["ret"]),
                    lc["lt50"], lc["lt20"], pct1(lc["R80"]), pct1(lc["R80n"])]
        for s in cols:
            rows.append(("%s s=%s%s" % (TRGM, fs(s), " best" if s == b else ""), lrow(TRGM, s_d(s))))
        if b is None:
            rows.append(("%s best: none" % TRGM, []))
        for m, r in VER_R.items():
            if hist.get((x, m, "allneg")):
                rows.append(("%s t=%d" % (m, r), lrow(m, r)))
        table("[%s] pairs returned and precision by J" % x, rows,
              ["pairs", "P", "P80", "J<0.5", "J<0.2", "R80", "R80x"], width=9, first=30)
        if hist.get((x, TRGM, "lenpos")):
            groups = sorted({k for k in hist.get((x, TRGM, "lenpos"), {})})
            rows = [("%s s=%s" % (TRGM, fs(s)), [pct(lenpos_recall(x, TRGM, op=o, rate=q, ts=[s_d(s)])[0])
                                                  for o, q in groups]) for s in S_FIXED]
            for m, r in VER_R.items():
                if hist.get((x, m, "lenpos")):
                    rows.append(("%s t=%d" % (m, r), [pct(lenpos_recall(x, m, op=o, rate=q, ts=[r])[0])
                                                       for o, q in groups]))
            table("[%s] recall (%%) of the length-mismatched copies" % x, rows,
                  ["%s%d" % g for g in groups], width=8, first=30)
