#!/usr/bin/python3
# trgm.py: pg_trgm's similarity() over the all-pairs pools of bench/quality/quality.sh, which
# calls it (QUALITY_TRGM=1). similarity(a, b) in SQL extracts the trigrams of both texts on every
# call; over the ~15 million pool pairs (documents up to 2 MB) that would take hours on 2 cores
# (quality.sh times it on a sample and prints the extrapolation). So the trigram sets are taken
# once per document from the server (show_trgm(body), pg_trgm's own extraction: one element per
# stored 3-byte trigram, multibyte ones shown by their hashed code) and the similarity is
# computed here as pg_trgm defines it: |A n B| / (|A| + |B| - |A n B|) over the distinct
# trigram sets, rounded to float4 as pg_trgm rounds it (0 when either set is empty). Every
# labelled pair, whose similarity quality.sh computes with similarity() in SQL, and a random
# sample of pool pairs (likewise) are compared with this computation; the differences are
# printed (expected: none).
#
# Usage: trgm.py DOCS LABELLED ALLNEG SAMPLE OUT
#   DOCS      id <TAB> show_trgm(body) (an array literal), every document
#   LABELLED  set, op, rate, label, a, b, similarity(a, b) from SQL: the labelled pairs
#   ALLNEG    set, a, b: the all-pairs pools' non-duplicate pairs (q_allneg)
#   SAMPLE    set, a, b, similarity(a, b) from SQL: a sample of ALLNEG
#   OUT       the histogram: set, op, rate, label, 'pg_trgm', d, count, where d = 100 - k and k
#             is the largest integer in 0..100 with similarity >= k / 100 (as pg_trgm compares
#             it with pg_trgm.similarity_threshold: float4 similarity >= float8 threshold), so
#             that "d <= 100 - 100 s" is "similarity >= s" for s = 0.00, 0.01, .. 1.00 and
#             report.py can read it like the distances of the modes
import struct
from array import array
import sys
import time
from collections import Counter, defaultdict


def f4(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def bucket(sim):
    """the largest k in 0..100 with sim >= k / 100 (sim a float4 value as a Python float)"""
    k = min(100, max(0, int(sim * 100)))
    while k < 100 and sim >= (k + 1) / 100:
        k += 1
    while k > 0 and sim < k / 100:
        k -= 1
    return k


def parse(arr):
    arr = arr.strip()
    assert arr[0] == "{" and arr[-1] == "}", arr[:40]
    body = arr[1:-1]
    if not body:
        return []
    # trigram elements hold letters, digits and blanks, or 0x<hex>: no comma, quote or backslash
    return [e[1:-1] if e.startswith('"') else e for e in body.split(",")]


def main():
    docs_f, lab_f, allneg_f, sample_f, out_f = sys.argv[1:6]
    t0 = time.time()
    trg = {}
    with open(docs_f, encoding="utf-8") as fh:
        for line in fh:
            i, arr = line.rstrip("\n").split("\t", 1)
            trg[int(i)] = parse(arr)

    def sim_sets(a, b):
        A, B = set(trg[a]), set(trg[b])
        if not A or not B:
            return 0.0
        c = len(A & B)
        return f4(c / (len(A) + len(B) - c))

    hist = Counter()
    # labelled pairs: SQL's similarity() is the figure; compared with the computation here
    lab_n = lab_diff = lab_bdiff = 0
    with open(lab_f, encoding="utf-8") as fh:
        for line in fh:
            s, op, rate, label, a, b, sim = line.rstrip("\n").split("\t")
            sq = f4(float(sim))   # SQL prints the shortest text that reads back as that float4
            py = sim_sets(int(a), int(b))
            lab_n += 1
            lab_diff += sq != py
            lab_bdiff += bucket(sq) != bucket(py)
            hist[(s, op, rate, label, 100 - bucket(sq))] += 1
    smp_n = smp_diff = 0
    with open(sample_f, encoding="utf-8") as fh:
        for line in fh:
            s, a, b, sim = line.rstrip("\n").split("\t")
            smp_n += 1
            smp_diff += f4(float(sim)) != sim_sets(int(a), int(b))
    # pool pairs: per set, each document's trigram set as a bit set over the set's vocabulary
    pairs = defaultdict(lambda: (array("i"), array("i")))   # 15 million pairs: compact
    with open(allneg_f, encoding="utf-8") as fh:
        for line in fh:
            s, a, b = line.rstrip("\n").split("\t")
            pa, pb = pairs[s]
            pa.append(int(a))
            pb.append(int(b))
    n_all = 0
    for s, (pa, pb) in pairs.items():
        pl = zip(pa, pb)
        ids = sorted(set(pa) | set(pb))
        vocab = {}
        bits, size = {}, {}
        for i in ids:
            ts = set(trg[i])
            for t in ts:
                if t not in vocab:
                    vocab[t] = len(vocab)
        nbytes = (len(vocab) + 7) // 8
        for i in ids:
            ba = bytearray(nbytes)
            ts = set(trg[i])
            for t in ts:
                v = vocab[t]
                ba[v >> 3] |= 1 << (v & 7)
            bits[i] = int.from_bytes(ba, "little")
            size[i] = len(ts)
        h = Counter()
        for a, b in pl:
            la, lb = size[a], size[b]
            if la == 0 or lb == 0:
                h[0] += 1
                continue
            c = (bits[a] & bits[b]).bit_count()
            h[bucket(f4(c / (la + lb - c)))] += 1
        for k, n in h.items():
            hist[(s, "-", "0", "allneg", 100 - k)] += n
        n_all += len(pa)
    with open(out_f, "w", encoding="utf-8") as fh:
        for (s, op, rate, label, d), n in sorted(hist.items()):
            fh.write("%s\t%s\t%s\t%s\tpg_trgm\t%d\t%d\n" % (s, op, rate, label, d, n))
    print("pg_trgm: %d labelled pairs by similarity() in SQL (computed here from show_trgm: %d differ, "
          "%d in another 0.01 step); %d pool pairs computed here from show_trgm in %.0f s (a sample of %d "
          "of them also by similarity() in SQL: %d differ)"
          % (lab_n, lab_diff, lab_bdiff, n_all, time.time() - t0, smp_n, smp_diff))


main()
