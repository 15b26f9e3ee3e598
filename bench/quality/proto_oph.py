#!/usr/bin/python3
# proto_oph.py: prototype of a one-permutation MinHash sketch (b-bit minwise hashing) in the 64
# bits of a simhash, measured with the quality harness's sets (the question: can a 64-bit sketch
# compared by Hamming distance separate near-duplicates from related long documents better than
# Charikar's simhash over the same features?). Offline: it reads what
#   QUALITY_KEEP=DIR bash bench/quality/quality.sh
# kept (docs.tsv, pairs.tsv, pool.tsv, hist.tsv, modes.lst), takes every document's distinct
# specification version 2 feature hashes from the installed extension (simhash_features(body),
# column hash; so Han variants fold as in version 2), computes the sketches below in Python, and
# writes their distance histogram in hist.tsv's format (labelled pairs as quality.sh joins them,
# all-pairs negatives as its q_excl / q_allneg define them), then the combined histogram for
# report.py:
#   /usr/bin/python3 bench/quality/proto_oph.py DIR
#   QUALITY_BASELINE=v1 /usr/bin/python3 bench/quality/report.py DIR/hist-oph.tsv DIR/modes-oph.lst
# Server: a scratch PostgreSQL 15 cluster (initdb into a new directory under /tmp, Unix socket
# there only, port $OPH_PORT, default 54361), stopped and removed at exit; with BENCH_USE_PGENV=1
# the server and database of the libpq variables (creates and drops table oph_docs).
# Needs python3-numpy.
#
# The sketch (mode oph<K>x<B><d>: K bins, B bits per bin, K * B = 64; d = densification, r
# rotation, o optimal), over the set F of distinct 64-bit feature hashes h of the document
# (unsigned; as simhash_features(body) lists them in version 2):
#   1. bin(h) = h >> (64 - log2 K) (the top 6 bits for K = 64, 5 for K = 32);
#      val(h) = h & (2^(64 - log2 K) - 1) (the remaining 58 resp. 59 bits).
#   2. m[i] = min val(h) over the h in F with bin(h) = i; bin i is empty when there is none.
#      No features: NULL (as simhash).
#   3. Densification, key[i] for every bin:
#      non-empty bin: key[i] = m[i].
#      rotation (Shrivastava & Li 2014): the first non-empty bin j = (i + t) mod K, t = 1, 2, ...
#        to the right, cyclically: key[i] = m[j] | (t << (64 - log2 K)) (the distance goes into
#        the bits above the value, so a borrowed key never equals a key of a non-empty bin nor
#        one borrowed from another distance).
#      optimal (Shrivastava 2017): probe j_a = top log2 K bits of splitmix64((i << 32) | a) for
#        a = 0, 1, 2, ... (a sequence fixed by i alone) until bin j_a is non-empty:
#        key[i] = m[j_a] (copied, as in the paper).
#   4. Bits: x = splitmix64(key[i] XOR (i * 0x9E3779B97F4A7C15)); bin i gives the low B bits of x
#      at bit positions B*i .. B*i + B - 1 of the sketch (bit 0 = least significant).
#   splitmix64(z): z += 0x9E3779B97F4A7C15; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
#      z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31) (all mod 2^64).
# Equal keys give equal bits; different keys give bits that differ with probability 1/2 each.
# So for K = 64, B = 1, a bin whose minima differ (probability 1 - J for a non-empty bin of both
# documents, J the Jaccard of the feature sets) disagrees with probability 1/2: the expected
# Hamming distance is 32 (1 - J). For K = 32, B = 2, a differing bin gives 0, 1 or 2 differing
# bits (1/4, 1/2, 1/4): the same expectation 32 (1 - J), with a larger variance (fewer bins).
# The 32-bin minima follow from the 64-bin ones exactly (bin i of 32 holds bins 2i and 2i + 1 of
# 64, bit 58 of the 59-bit value being the low bit of the 64-bin index), so one export serves
# both.
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

import numpy as np

U64 = np.uint64
GOLDEN = U64(0x9E3779B97F4A7C15)
M1 = U64(0xBF58476D1CE4E5B9)
M2 = U64(0x94D049BB133111EB)
EMPTY = np.iinfo(np.uint64).max
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def splitmix64(z):
    with np.errstate(over="ignore"):
        z = (z + GOLDEN).astype(np.uint64)
        z = ((z ^ (z >> U64(30))) * M1).astype(np.uint64)
        z = ((z ^ (z >> U64(27))) * M2).astype(np.uint64)
        return z ^ (z >> U64(31))


# ---------------------------------------------------------------------------
# features: per document, the minimum of the low 58 bits per top-6-bit bin (in SQL)
# ---------------------------------------------------------------------------
def export_bins(keep, out):
    use_env = os.environ.get("BENCH_USE_PGENV") == "1"
    port = os.environ.get("OPH_PORT", "54361")
    bindir = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")
    root = os.geteuid() == 0
    work = None
    env = dict(os.environ)

    def as_owner(cmd):
        return (["runuser", "-u", "postgres", "--"] + cmd) if root else cmd

    started = False
    try:
        if not use_env:
            work = tempfile.mkdtemp(prefix="simhash-oph-")
            os.chmod(work, 0o755)
            datadir = os.path.join(work, "pg")
            os.mkdir(datadir)
            if root:
                subprocess.run(["chown", "postgres", work, datadir], check=True)
            subprocess.run(as_owner([f"{bindir}/initdb", "-D", datadir, "-E", "UTF8", "--locale=C.UTF-8",
                                     "-A", "trust"]), check=True, stdout=subprocess.DEVNULL)
            subprocess.run(as_owner([f"{bindir}/pg_ctl", "-D", datadir, "-l", os.path.join(work, "server.log"),
                                     "-w", "-t", "120", "-o",
                                     f"-p {port} -k {work} -c listen_addresses='' -c shared_buffers=512MB "
                                     "-c fsync=off -c autovacuum=off", "start"]),
                           check=True, stdout=subprocess.DEVNULL)
            started = True
            env.update(PGHOST=work, PGPORT=port, PGUSER="postgres" if root else os.environ.get("USER", ""),
                       PGDATABASE="postgres")
        env["PGOPTIONS"] = env.get("PGOPTIONS", "") + " -c work_mem=256MB -c jit=off -c client_min_messages=warning"
        docs = os.path.join(keep, "docs.tsv")
        sql = f"""
CREATE EXTENSION IF NOT EXISTS simhash;
DROP TABLE IF EXISTS oph_docs;
CREATE TABLE oph_docs (id int PRIMARY KEY, set text NOT NULL, body text NOT NULL);
\\copy oph_docs FROM '{docs}'
SELECT 'extension ' || extversion FROM pg_extension WHERE extname = 'simhash';
SELECT 'simhash(text) = version 2 on a test text: ' || (simhash(b) = simhash(b, 'words', 2, 2) AND simhash(b) <> simhash(b, 'words', 2, 1))
  FROM (VALUES ('the cat and the cat and the dog 後來 后来')) v(b);
\\copy (SELECT d.id, (f.hash::int8 >> 58) & 63, min(f.hash::int8 & 288230376151711743), count(DISTINCT f.hash::int8) FROM oph_docs d, simhash_features(d.body) f GROUP BY 1, 2) TO '{out}'
SELECT 'documents ' || count(*) FROM oph_docs;
DROP TABLE oph_docs;
"""
        r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-tA"], input=sql, text=True, env=env,
                           capture_output=True)
        if r.returncode != 0:
            sys.exit("proto_oph: psql failed: " + r.stderr)
        for line in r.stdout.split("\n"):
            if line.strip():
                log("server: " + line.strip())
    finally:
        if started:
            subprocess.run(as_owner([f"{bindir}/pg_ctl", "-D", datadir, "-m", "fast", "-w", "stop"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if work:
            subprocess.run(["rm", "-rf", work])


# ---------------------------------------------------------------------------
# sketches
# ---------------------------------------------------------------------------
def probe_table(k, n_probe):
    """optimal densification: probe bins P[i, a] for a < n_probe"""
    shift = U64(64 - (k.bit_length() - 1))
    i = np.arange(k, dtype=np.uint64)[:, None]
    a = np.arange(n_probe, dtype=np.uint64)[None, :]
    return (splitmix64((i << U64(32)) | a) >> shift).astype(np.int64)


def sketch(m, k, b, dens):
    """m: (n, k) uint64 minima, EMPTY where empty; rows with no non-empty bin give NULL.
    returns (fp uint64 (n,), null mask (n,), keys (n, k))"""
    n = m.shape[0]
    vbits = 64 - (k.bit_length() - 1)
    nonempty = m != EMPTY
    null = ~nonempty.any(axis=1)
    key = m.copy()
    todo = ~nonempty & ~null[:, None]
    rows = np.arange(n)[:, None]
    if dens == "r":
        for t in range(1, k):
            if not todo.any():
                break
            j = (np.arange(k) + t) % k
            src = m[:, j]
            hit = todo & (src != EMPTY)
            key[hit] = src[hit] | (U64(t) << U64(vbits))
            todo &= ~hit
    else:
        n_probe = 1 << 14
        P = probe_table(k, n_probe)
        a = 0
        while todo.any():
            if a == n_probe:
                sys.exit("proto_oph: probe table too short")
            j = P[:, a]
            src = m[:, j]
            hit = todo & (src != EMPTY)
            key[hit] = src[hit]
            todo &= ~hit
            a += 1
    x = splitmix64(key ^ (np.arange(k, dtype=np.uint64) * GOLDEN)[None, :])
    mask = U64((1 << b) - 1)
    fp = np.zeros(n, dtype=np.uint64)
    for i in range(k):
        fp |= (x[:, i] & mask) << U64(b * i)
    fp[null] = 0
    return fp, null


POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount(x):
    x = np.ascontiguousarray(x, dtype=np.uint64)
    return POP8[x.view(np.uint8)].reshape(x.shape + (8,)).sum(axis=-1, dtype=np.int64)


def main():
    keep = sys.argv[1] if len(sys.argv) > 1 else "/tmp/oph-keep"
    bins_file = os.path.join(keep, "oph-bins.tsv")
    if not os.path.exists(bins_file) or os.environ.get("OPH_REEXPORT") == "1":
        log("exporting per-bin minima of the version 2 features (SQL)")
        export_bins(keep, bins_file + ".tmp")
        os.replace(bins_file + ".tmp", bins_file)
    # documents
    ids, doc_set = [], {}
    with open(os.path.join(keep, "docs.tsv"), encoding="utf-8") as fh:
        for line in fh:
            i, s, _ = line.split("\t", 2)
            ids.append(int(i))
            doc_set[int(i)] = s
    ids = np.array(sorted(ids), dtype=np.int64)
    row = {int(i): r for r, i in enumerate(ids)}
    n = len(ids)
    m64 = np.full((n, 64), EMPTY, dtype=np.uint64)
    nfeat = np.zeros(n, dtype=np.int64)
    raw = np.loadtxt(bins_file, dtype=np.int64, delimiter="\t", ndmin=2)
    r = np.array([row[int(i)] for i in raw[:, 0]], dtype=np.int64)
    m64[r, raw[:, 1]] = raw[:, 2].astype(np.uint64)
    np.add.at(nfeat, r, raw[:, 3])
    log(f"{n} documents, {len(raw)} non-empty bins, {int((nfeat == 0).sum())} without features")
    # 32 bins of 59-bit values from the 64 bins of 58-bit values
    lo, hi = m64[:, 0::2], m64[:, 1::2]
    m32 = np.where(lo != EMPTY, lo, np.where(hi != EMPTY, hi | U64(1 << 58), EMPTY))

    # densification statistics per set: share of empty bins, documents with > 0 / >= 32 empty bins
    stats = []
    sets_order = []
    for s in doc_set.values():
        if s not in sets_order:
            sets_order.append(s)
    set_of_row = np.array([doc_set[int(i)] for i in ids])
    for s in sets_order:
        sel = (set_of_row == s) & (nfeat > 0)
        e64 = (m64[sel] == EMPTY).sum(axis=1)
        e32 = (m32[sel] == EMPTY).sum(axis=1)
        f = nfeat[sel]
        stats.append((s, int(sel.sum()), int(np.median(f)), int((f < 64).sum()), 100.0 * e64.mean() / 64,
                      100.0 * (e64 > 0).mean(), 100.0 * (e64 >= 32).mean(), 100.0 * e32.mean() / 32))
    modes = [("oph64x1o", 64, 1, "o"), ("oph64x1r", 64, 1, "r"), ("oph32x2o", 32, 2, "o"), ("oph32x2r", 32, 2, "r")]
    fps = {}
    for name, k, b, dens in modes:
        fps[name] = sketch(m64 if k == 64 else m32, k, b, dens)
        log(f"sketch {name}")

    def dist(name, ra, rb):
        fp, null = fps[name]
        d = popcount(fp[ra] ^ fp[rb])
        return d, null[ra] | null[rb]

    out = defaultdict(int)   # (set, op, rate, label, mode, d or None) -> n
    # labelled pairs
    P = defaultdict(list)
    with open(os.path.join(keep, "pairs.tsv"), encoding="utf-8") as fh:
        pairs = [line.rstrip("\n").split("\t") for line in fh]
    pa = np.array([row[int(p[3])] for p in pairs])
    pb = np.array([row[int(p[4])] for p in pairs])
    keys = [(p[0], p[1], int(p[2]), p[5]) for p in pairs]
    for name, *_ in modes:
        d, nl = dist(name, pa, pb)
        for kk, dd, nn in zip(keys, d.tolist(), nl.tolist()):
            out[kk + (name, None if nn else dd)] += 1
    log(f"{len(pairs)} labelled pairs")
    # all-pairs negatives, as quality.sh's q_excl / q_allneg
    pool = defaultdict(lambda: defaultdict(list))
    with open(os.path.join(keep, "pool.tsv"), encoding="utf-8") as fh:
        for line in fh:
            s, i, side = line.rstrip("\n").split("\t")
            pool[s][side].append(int(i))
    excl = defaultdict(set)
    y_sets = {s for s in pool if pool[s].get("y")}
    for p in pairs:
        if p[5] in ("pos", "dup") or p[0] in y_sets:
            a, b = int(p[3]), int(p[4])
            excl[p[0]].add((a, b))
            excl[p[0]].add((b, a))
    allneg_n = {}
    for s in pool:
        blocks = []   # (rows a, rows b, upper triangle only)
        for side in ("x", "y"):
            if pool[s].get(side):
                blocks.append((sorted(pool[s][side]), sorted(pool[s][side]), True))
        if pool[s].get("l") and pool[s].get("r"):
            blocks.append((sorted(pool[s]["l"]), sorted(pool[s]["r"]), False))
        total = 0
        for A, B, tri in blocks:
            ra = np.array([row[i] for i in A])
            rb = np.array([row[i] for i in B])
            # excluded pairs inside this block
            ex = []
            setA, setB = set(A), set(B)
            for (a, b) in excl[s]:
                if a in setA and b in setB and (not tri or a < b):
                    ex.append((row[a], row[b]))
            ex = sorted(set(ex))
            for name, *_ in modes:
                fp, null = fps[name]
                hist = np.zeros(65, dtype=np.int64)
                nnull = 0
                step = max(1, 4_000_000 // max(1, len(rb)))
                for s0 in range(0, len(ra), step):
                    blk = ra[s0:s0 + step]
                    d = popcount(fp[blk][:, None] ^ fp[rb][None, :])
                    nl = null[blk][:, None] | null[rb][None, :]
                    ok = ~nl
                    if tri:
                        # pairs a < b by id: A and B are the same sorted list
                        jj = np.arange(len(rb))[None, :]
                        ii = np.arange(s0, s0 + len(blk))[:, None]
                        up = jj > ii
                        ok &= up
                        nl &= up
                    hist += np.bincount(d[ok], minlength=65)
                    nnull += int(nl.sum())
                if ex:
                    ea = np.array([e[0] for e in ex])
                    eb = np.array([e[1] for e in ex])
                    d, nl = dist(name, ea, eb)
                    hist -= np.bincount(d[~nl], minlength=65)
                    nnull -= int(nl.sum())
                for dd in range(65):
                    if hist[dd]:
                        out[(s, "-", 0, "allneg", name, dd)] += int(hist[dd])
                if nnull:
                    out[(s, "-", 0, "allneg", name, None)] += nnull
                if name == modes[0][0]:
                    total += int(hist.sum()) + nnull
        allneg_n[s] = total
    log("all-pairs negatives: " + ", ".join(f"{s} {n}" for s, n in allneg_n.items()))
    with open(os.path.join(keep, "hist-oph-only.tsv"), "w", encoding="utf-8") as fh:
        for k in sorted(out, key=lambda k: tuple("" if x is None else str(x) for x in k)):
            d = "\\N" if k[5] is None else str(k[5])
            fh.write(f"{k[0]}\t{k[1]}\t{k[2]}\t{k[3]}\t{k[4]}\t{d}\t{out[k]}\n")
    with open(os.path.join(keep, "hist-oph.tsv"), "w", encoding="utf-8") as fo:
        for f in ("hist.tsv", "hist-oph-only.tsv"):
            with open(os.path.join(keep, f), encoding="utf-8") as fi:
                fo.write(fi.read())
    with open(os.path.join(keep, "modes-oph.lst"), "w", encoding="utf-8") as fh:
        fh.write("v1\nv2\n" + "".join(name + "\n" for name, *_ in modes))
    print("== one-permutation MinHash sketches (proto_oph.py): densification per set")
    print("(documents with features; median distinct features; documents with < 64 features; mean share of")
    print(" empty bins with 64 bins; documents with any empty bin / with 32 or more empty of 64; mean share")
    print(" empty with 32 bins)")
    print(f"  {'set':<18} {'docs':>6} {'median':>7} {'<64':>6} {'empty64':>8} {'any':>7} {'>=32':>7} {'empty32':>8}")
    for s, nd, med, lt, e64, anyd, half, e32 in stats:
        print(f"  {s:<18} {nd:>6} {med:>7} {lt:>6} {e64:>7.1f}% {anyd:>6.1f}% {half:>6.1f}% {e32:>7.1f}%")
    log("wrote hist-oph.tsv, modes-oph.lst")


if __name__ == "__main__":
    main()
