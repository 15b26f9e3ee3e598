#!/usr/bin/env python3
"""Independent reference implementation of the simhash fingerprint (spec versions 1 and 2).

Written from doc/specification.md ("Fingerprint specification") alone: it shares no code or tables with the C
extension or with tools/gen_unicode_tables.py. The character classes and the case
folding are re-derived at start-up from the Unicode 15.0 data files of Debian's
unicode-data package (/usr/share/unicode, or $SIMHASH_UNICODE_DIR), the way section 3
of the spec describes them; NFKC is Python's unicodedata.normalize (Unicode 14.0 in
Python 3.11, the same version as PostgreSQL 15's normaliser); XXH3-64 is python3-xxhash.

Command line (prints the distinct features in first-occurrence order as
"weight<TAB>hash<TAB>feature", then "fingerprint: <16 hex digits>" or "fingerprint: NULL"):

  simhash_ref.py [-m words|chars|mixed] [-n SIZE] [-V 1|2] TEXT a text document (-V: the
                                                          specification version, default 2)
  simhash_ref.py [-m ...] [-n ...] --file PATH            the document is a UTF-8 file
                                                          (malformed bytes: spec section 1)
  simhash_ref.py --tokens T1 T2 ... [--weights W1 W2 ...] simhash(text[] [, float8[]])
  simhash_ref.py --tsvector "'a':1A,2 'b'" [--label-weights D,C,B,A]
                                                          simhash(tsvector [, float8[]]),
                                                          from tsvector's text form
  simhash_ref.py --minhash [-m ...] [-n ...] TEXT|--file PATH
                                                          minhash(doc, mode, size): the
                                                          MinHash sketch (specification
                                                          "MinHash", version 1)
  -q: print only the fingerprint.

As a module: text_features(), feature_list(), fingerprint_text(), minhash_text(), fingerprint_tokens(),
fingerprint_weighted(), fingerprint_tsvector(), fingerprint_agg(); see their docstrings.

Where the spec leaves something open, this file says so in a comment marked SPEC.
"""
import argparse
import bisect
import bz2
import functools
import math
import os
import sys
import unicodedata

try:
    import xxhash
except ImportError:                     # e.g. a pyenv python3 first in PATH: use Debian's
    if (__name__ == "__main__" and os.path.exists("/usr/bin/python3")
            and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3")):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

UNICODE_DIR = os.environ.get("SIMHASH_UNICODE_DIR", "/usr/share/unicode")

# ---------------------------------------------------------------------------
# Section 3: character classes, from the Unicode data files
# ---------------------------------------------------------------------------

IGNORE, MARK, SINGLE, WORD, SEPARATOR = "ignore", "mark", "single", "word", "separator"

# Version 2: the Unihan_Variants.txt fields whose relations make the variant classes
# (kSemanticVariant too, for entries whose source is kHKGlyph).
SPEC_VARIANT_FIELDS = ("kTraditionalVariant", "kSimplifiedVariant", "kZVariant")

# The spec's list of unsegmented scripts, spelled as in the spec's table.
SPEC_UNSEGMENTED = [
    "Han", "Hiragana", "Katakana", "Bopomofo", "Yi", "Thai", "Lao", "Khmer", "Myanmar",
    "Tai Le", "New Tai Lue", "Tai Tham", "Tai Viet", "Nushu", "Tangut", "Khitan Small Script",
]


def _data_lines(name):
    """(first, last, [fields...]) for every data line of a UCD file with 'cp(..cp)? ; ...'."""
    with open(os.path.join(UNICODE_DIR, name), encoding="utf-8") as f:
        for raw in f:
            body = raw.partition("#")[0]
            if not body.strip():
                continue
            cols = [c.strip() for c in body.split(";")]
            lo, _, hi = cols[0].partition("..")
            yield int(lo, 16), int(hi or lo, 16), cols[1:]


class _RangeMap:
    """Sorted, non-overlapping code point ranges, each with a value."""

    def __init__(self, items):
        items = sorted(items)
        self.starts = [a for a, _, _ in items]
        self.items = items
        for (a1, b1, _), (a2, _, _) in zip(items, items[1:]):
            assert b1 < a2, "overlapping ranges %04X..%04X / %04X" % (a1, b1, a2)

    def get(self, cp, default=None):
        i = bisect.bisect_right(self.starts, cp) - 1
        if i >= 0:
            a, b, v = self.items[i]
            if a <= cp <= b:
                return v
        return default


class UnicodeTables:
    def __init__(self):
        # General category (UnicodeData.txt; "<..., First>"/"<..., Last>" pairs are ranges;
        # a code point not listed is unassigned, Cn).
        self.gc_single = {}
        gc_ranges = []
        first = None
        with open(os.path.join(UNICODE_DIR, "UnicodeData.txt"), encoding="utf-8") as f:
            for raw in f:
                cols = raw.rstrip("\n").split(";")
                cp, name, cat = int(cols[0], 16), cols[1], cols[2]
                if name.startswith("<") and name.endswith(", First>"):
                    first = cp
                elif name.startswith("<") and name.endswith(", Last>"):
                    gc_ranges.append((first, cp, cat))
                    first = None
                else:
                    self.gc_single[cp] = cat
        self.gc_ranges = _RangeMap(gc_ranges)

        # Script names: Scripts.txt uses long names (Tai_Le), ScriptExtensions.txt short
        # ones (Tale); PropertyValueAliases.txt relates them. Everything is compared as
        # the short code.
        long_to_short = {}
        known_short = set()
        with open(os.path.join(UNICODE_DIR, "PropertyValueAliases.txt"), encoding="utf-8") as f:
            for raw in f:
                cols = [c.strip() for c in raw.partition("#")[0].split(";")]
                if len(cols) >= 3 and cols[0] == "sc":
                    known_short.add(cols[1])
                    for alias in cols[2:]:
                        long_to_short[alias] = cols[1]
                    long_to_short[cols[1]] = cols[1]
        self.unsegmented = set()
        for spec_name in SPEC_UNSEGMENTED:
            key = spec_name.replace(" ", "_")
            if key not in long_to_short:
                raise SystemExit("unknown script in the spec's list: %r" % spec_name)
            self.unsegmented.add(long_to_short[key])

        self.script = _RangeMap((a, b, long_to_short[f[0]]) for a, b, f in _data_lines("Scripts.txt"))
        scx = []
        for a, b, f in _data_lines("ScriptExtensions.txt"):
            codes = f[0].split()
            for c in codes:
                if c not in known_short:
                    raise SystemExit("ScriptExtensions.txt: unknown script code %r" % c)
            scx.append((a, b, frozenset(codes)))
        self.scx = _RangeMap(scx)

        self.ignorable = _RangeMap(
            (a, b, True) for a, b, f in _data_lines("DerivedCoreProperties.txt")
            if f[0] == "Default_Ignorable_Code_Point")

        # Simple case folding: statuses C and S only (one code point to one code point).
        # SPEC: section 2.2 adds "(İ folds by its simple mapping)", but CaseFolding.txt has
        # no C or S line for U+0130 (only F and T), so under the stated rule İ stays İ
        # (and ı stays ı); this file follows the rule, and so does the C code.
        self.fold = {}
        for a, b, f in _data_lines("CaseFolding.txt"):
            status, mapping = f[0], f[1].split()
            if status in ("C", "S"):
                assert a == b and len(mapping) == 1 and a not in self.fold
                self.fold[a] = int(mapping[0], 16)

        # Version 2, section 3a: Han variant classes. The relations of Unihan_Variants.txt
        # named by the spec, joined into classes (a variant of a variant is in the same
        # class); each class folds to its smallest code point.
        links = {}
        with bz2.open(os.path.join(UNICODE_DIR, "Unihan_Variants.txt.bz2"), "rt",
                      encoding="utf-8") as f:
            for raw in f:
                if raw.startswith("#") or not raw.strip():
                    continue
                cp, field, value = raw.rstrip("\n").split("\t")
                if field not in SPEC_VARIANT_FIELDS and field != "kSemanticVariant":
                    continue
                a = int(cp[2:], 16)
                for item in value.split():
                    target, _, source = item.partition("<")
                    if field == "kSemanticVariant" and "kHKGlyph" not in source.split(","):
                        continue
                    b = int(target[2:], 16)
                    links.setdefault(a, set()).add(b)
                    links.setdefault(b, set()).add(a)
        self.variant = {}
        for cp in links:
            if cp in self.variant:
                continue
            members, todo = {cp}, [cp]
            while todo:
                for other in links[todo.pop()]:
                    if other not in members:
                        members.add(other)
                        todo.append(other)
            smallest = min(members)
            for m in members:
                self.variant[m] = smallest

    def variant_fold(self, cp):
        return self.variant.get(cp, cp)

    def general_category(self, cp):
        if cp in self.gc_single:
            return self.gc_single[cp]
        return self.gc_ranges.get(cp, "Cn")

    def scripts_of(self, cp):
        """The script (Scripts.txt) and the script extensions (ScriptExtensions.txt)."""
        s = {self.script.get(cp, "Zzzz")}
        s |= self.scx.get(cp, frozenset())
        return s

    @functools.lru_cache(maxsize=None)
    def char_class(self, cp):
        return self.classify(cp)

    def classify(self, cp):
        """Section 3, in its order of precedence (uncached)."""
        if self.ignorable.get(cp, False):
            return IGNORE
        gc = self.general_category(cp)
        if gc.startswith("M"):
            return MARK
        letter_or_number = gc[0] in ("L", "N")
        if letter_or_number and self.scripts_of(cp) & self.unsegmented:
            return SINGLE
        if gc == "So":
            return SINGLE
        if letter_or_number:
            return WORD
        return SEPARATOR

    def case_fold(self, cp):
        return self.fold.get(cp, cp)


@functools.lru_cache(maxsize=1)
def tables():
    return UnicodeTables()


# ---------------------------------------------------------------------------
# Section 1: input
# ---------------------------------------------------------------------------

def decode_utf8(data):
    """Bytes to code points; every byte of a malformed sequence is one U+FFFD."""
    out = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            out.append(b)
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            need, cp, low = 1, b & 0x1F, 0x80
        elif 0xE0 <= b <= 0xEF:
            need, cp, low = 2, b & 0x0F, 0x800
        elif 0xF0 <= b <= 0xF4:
            need, cp, low = 3, b & 0x07, 0x10000
        else:
            out.append(0xFFFD)          # bad lead byte (continuation, C0, C1, F5..FF)
            i += 1
            continue
        # all continuation bytes present and of the form 10xxxxxx
        ok = i + need < n
        if ok:
            for k in range(1, need + 1):
                c = data[i + k]
                if c & 0xC0 != 0x80:
                    ok = False
                    break
                cp = (cp << 6) | (c & 0x3F)
        if ok and (cp < low or cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF):
            ok = False                  # overlong, above U+10FFFF, or a surrogate
        if ok:
            out.append(cp)
            i += need + 1
        else:
            out.append(0xFFFD)
            i += 1
    return out


def _to_code_points(doc):
    if isinstance(doc, (bytes, bytearray)):
        return decode_utf8(bytes(doc))
    cps = [ord(ch) for ch in doc]
    if any(0xD800 <= c <= 0xDFFF for c in cps):
        raise ValueError("a str document must not contain surrogates (pass bytes instead)")
    return cps


# ---------------------------------------------------------------------------
# Section 2: normalisation
# ---------------------------------------------------------------------------

def _is_segment_safe(cp):
    """SPEC: code points before which the spec says a segment may end without changing
    anything: ASCII, Han ideographs, Hangul syllables."""
    t = tables()
    return (cp < 0x80 or 0xAC00 <= cp <= 0xD7A3
            or (t.script.get(cp) == "Hani" and t.general_category(cp) == "Lo"))


# SPEC: section 2.1 says segmenting "equals normalising the whole text", except that "a
# run of more than 131,072 code points containing none of those is cut arbitrarily". The
# reference normalises the whole text. The C tokeniser's cuts differ from the spec's
# description in two ways (check_vectors.py --segmentation): its Han boundary is only
# U+3400..U+4DBF and U+4E00..U+9FFF, and its hard cut comes 131,072 code points after the
# start of a segment, even when a boundary was passed within the segment's first 65,536.
def arbitrary_cut_possible(cps):
    """True when the text has a run of more than 131,072 code points without ASCII, Han
    or Hangul: the one case in which the spec leaves the result unspecified ("cut
    arbitrarily"). The reference always normalises the whole text."""
    run = 0
    for c in cps:
        if _is_segment_safe(c):
            run = 0
        else:
            run += 1
            if run > 131072:
                return True
    return False


def proposed_segments(cps):
    """SPEC: not part of spec version 1. The segments of the wording proposed for section
    2.1 (see SEGMENTATION_WORDING), which describes exactly where the C tokeniser cuts:
    a segment starts at the start of the text, at the ASCII character directly before a
    non-ASCII one, or where the previous segment was cut; it runs over non-ASCII code
    points and ends before the next ASCII character, before the first code point in
    U+3400..U+4DBF, U+4E00..U+9FFF or U+AC00..U+D7A3 once it holds 65,536 code points,
    and at the latest once it holds 131,072. Other ASCII is left as it is."""
    pieces = []
    i, n = 0, len(cps)
    while i < n:
        j = i
        while j < n and cps[j] < 0x80:
            j += 1
        if j == n:
            pieces.append(cps[i:])
            break
        start = j - 1 if j > i else j
        if start > i:
            pieces.append(cps[i:start])
        k = start
        while k < n:
            c = cps[k]
            if c < 0x80 and k > start:
                break
            size = k - start
            if size >= 131072 or (size >= 65536 and (0x3400 <= c <= 0x4DBF or 0x4E00 <= c <= 0x9FFF
                                                    or 0xAC00 <= c <= 0xD7A3)):
                break
            k += 1
        pieces.append(cps[start:k])
        i = k
    return pieces


SEGMENTATION_WORDING = proposed_segments.__doc__


def normalize(cps, segmented=False, version=2):
    """NFKC of the whole text (the spec says segmenting equals this), then simple case
    folding. Returns [(class, folded code point)]: the class is taken after NFKC and
    before case folding. segmented=True normalises the pieces of proposed_segments()
    one by one instead (not spec version 1; for comparing with the C tokeniser)."""
    t = tables()
    if segmented:
        text = "".join(unicodedata.normalize("NFKC", "".join(map(chr, p)))
                       for p in proposed_segments(cps))
    else:
        text = unicodedata.normalize("NFKC", "".join(map(chr, cps)))
    out = [(t.char_class(ord(ch)), t.case_fold(ord(ch))) for ch in text]
    if version >= 2:
        out = [(cls, t.variant_fold(cp)) for cls, cp in out]
    return out


# ---------------------------------------------------------------------------
# Section 4: features
# ---------------------------------------------------------------------------

def tokens_of(classified, kinds=False):
    """Words-mode tokens: maximal runs of word characters with their marks; each single
    character with its marks; a mark with no current token starts a word. kinds: as
    (kind, token) pairs, kind WORD or SINGLE."""
    toks = []
    cur = []
    state = None                        # None, WORD or SINGLE
    for cls, cp in classified:
        if cls == IGNORE:
            continue                    # dropped, never splits a token
        if cls == MARK:
            if state is None:
                state = WORD
            cur.append(cp)
        elif cls == WORD:
            if state == SINGLE:
                toks.append((state, cur))
                cur = []
            state = WORD
            cur.append(cp)
        elif cls == SINGLE:
            if state is not None:
                toks.append((state, cur))
            cur = [cp]
            state = SINGLE
        else:                           # separator
            if state is not None:
                toks.append((state, cur))
            cur = []
            state = None
    if state is not None:
        toks.append((state, cur))
    out = [(k, "".join(map(chr, tk))) for k, tk in toks]
    return out if kinds else [tk for _, tk in out]


MIXED_SINGLE_N = 3      # spec section 5: single characters' n-gram size in 'mixed'


def mixed_features(kinded, size):
    """'mixed': the tokens in two streams, word tokens and single characters. A feature is
    emitted when the token that completes it is read: n consecutive tokens of one stream
    (size for words, 3 for single characters) joined by one space; at the end, a stream
    with at least one but fewer than n tokens yields one feature of all of them, the word
    stream's before the single characters'."""
    out = []
    streams = {WORD: [], SINGLE: []}
    sizes = {WORD: size, SINGLE: MIXED_SINGLE_N}
    for kind, tok in kinded:
        st = streams[kind]
        st.append(tok)
        if len(st) >= sizes[kind]:
            out.append(" ".join(st[-sizes[kind]:]))
    for kind in (WORD, SINGLE):
        st = streams[kind]
        if 0 < len(st) < sizes[kind]:
            out.append(" ".join(st))
    return out


def chars_text(classified):
    """Chars-mode text: ignorables removed, runs of separators one U+0020, trimmed."""
    out = []
    pending = False
    for cls, cp in classified:
        if cls == IGNORE:
            continue
        if cls == SEPARATOR:
            pending = True
            continue
        if pending and out:
            out.append(0x20)
        pending = False
        out.append(cp)
    return "".join(map(chr, out))


def ngrams(items, n, join):
    if not items:
        return []
    if len(items) < n:
        return [join(items)]
    return [join(items[i:i + n]) for i in range(len(items) - n + 1)]


def text_features(doc, mode="words", size=None, segmented=False, version=2):
    """Every feature occurrence of a document (str, or bytes taken as UTF-8), in order.
    segmented: see normalize()."""
    if size is None:
        size = {"words": 2, "chars": 3, "mixed": 5}.get(mode)
    if mode not in ("words", "chars", "mixed"):
        raise ValueError("unknown feature mode %r" % mode)
    if not 1 <= size <= 32:
        raise ValueError("size must be between 1 and 32")
    cps = _to_code_points(doc)
    classified = normalize(cps, segmented, version)
    if mode == "words":
        return ngrams(tokens_of(classified), size, " ".join)
    if mode == "mixed":
        return mixed_features(tokens_of(classified, kinds=True), size)
    return ngrams(chars_text(classified), size, "".join)


def feature_list(occurrences, version=2):
    """Distinct features in first-occurrence order with their weights, as
    simhash_features() reports them: [(feature, weight)]. Version 1: the number of
    occurrences. Version 2: 1, or 0 for a feature whose hash an earlier feature of the
    list already has (a 64-bit collision: the hash counts once)."""
    counts = {}
    for f in occurrences:
        counts[f] = counts.get(f, 0) + 1
    if version == 1:
        return list(counts.items())
    seen = set()
    out = []
    for f in counts:
        h = feature_hash(f)
        out.append((f, 0 if h in seen else 1))
        seen.add(h)
    return out


# ---------------------------------------------------------------------------
# Section 5: hash and accumulation
# ---------------------------------------------------------------------------

def feature_hash(feature):
    data = feature.encode("utf-8") if isinstance(feature, str) else bytes(feature)
    return xxhash.xxh3_64_intdigest(data, seed=0)


def _fingerprint_from_sums(sums):
    fp = 0
    for i, s in enumerate(sums):
        if s > 0:
            fp |= 1 << i
    return fp


def accumulate_distinct(features):
    """Version 2: every distinct feature hash once. None when there are no features."""
    hashes = set(feature_hash(f) for f in features)
    sums = [0] * 64
    for h in hashes:
        for i in range(64):
            sums[i] += 1 if (h >> i) & 1 else -1
    return _fingerprint_from_sums(sums) if hashes else None


def accumulate_unit(features):
    """Unit weights, exact integer sums. None when there are no features."""
    counts = {}
    for f in features:                  # exact integers: grouping changes nothing
        counts[f] = counts.get(f, 0) + 1
    sums = [0] * 64
    for f, c in counts.items():
        h = feature_hash(f)
        for i in range(64):
            sums[i] += c if (h >> i) & 1 else -c
    return _fingerprint_from_sums(sums) if counts else None


def _check_weight(w):
    if not isinstance(w, (int, float)) or math.isnan(w) or math.isinf(w):
        raise ValueError("weight must be finite, got %r" % (w,))
    if w < 0:
        raise ValueError("weight must not be negative, got %r" % (w,))


def accumulate_weighted(pairs):
    """(feature, weight) pairs, double precision, in input order. None when no feature
    has a positive weight."""
    sums = [0.0] * 64
    positive = 0
    for f, w in pairs:
        w = float(w)
        _check_weight(w)
        if w == 0:
            continue                    # contributes nothing
        positive += 1
        h = feature_hash(f)
        for i in range(64):
            sums[i] += w if (h >> i) & 1 else -w
    return _fingerprint_from_sums(sums) if positive else None


def hex64(fp):
    return None if fp is None else "%016x" % fp


# ---------------------------------------------------------------------------
# The functions of the spec (results: 16 hex digits, or None for NULL)
# ---------------------------------------------------------------------------

def fingerprint_text(doc, mode="words", size=None, segmented=False, version=2):
    """simhash(doc, mode, size, version)."""
    occ = text_features(doc, mode, size, segmented, version)
    return hex64(accumulate_unit(occ) if version == 1 else accumulate_distinct(occ))


def _splitmix64(z):
    """MinHash specification, step 5."""
    m = (1 << 64) - 1
    z = (z + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def minhash_probe_bound():
    """The largest number of probes any bin's densification sequence (step 3) needs to have
    visited all 64 bins; the spec says 502."""
    worst = 0
    for i in range(64):
        seen, a = set(), 0
        while len(seen) < 64:
            seen.add(_splitmix64((i << 32) | a) >> 58)
            a += 1
        worst = max(worst, a)
    return worst


def minhash_of_hashes(hashes):
    """MinHash specification version 1, steps 2-4, over a set of 64-bit feature hashes.
    None (NULL) for the empty set."""
    hashes = set(hashes)
    if not hashes:
        return None
    low = (1 << 58) - 1
    m = [None] * 64
    for h in hashes:                    # step 2: per bin (top 6 bits), the least other 58 bits
        b, v = h >> 58, h & low
        if m[b] is None or v < m[b]:
            m[b] = v
    sketch = 0
    for i in range(64):
        key = m[i]
        a = 0
        while key is None:              # step 3: optimal densification
            key = m[_splitmix64((i << 32) | a) >> 58]
            a += 1
        x = _splitmix64(key ^ ((i * 0x9E3779B97F4A7C15) & ((1 << 64) - 1)))
        sketch |= (x & 1) << i          # step 4
    return sketch


def minhash_text(doc, mode="words", size=None, version=1):
    """minhash(doc, mode, size, version): the sketch of the version 2 features' hashes."""
    if version != 1:
        raise ValueError("minhash specification version must be 1")
    occ = text_features(doc, mode, size, version=2)
    return hex64(minhash_of_hashes(feature_hash(f) for f in occ))


def fingerprint_tokens(tokens):
    """simhash(text[]): every non-None element as given, weight 1."""
    return hex64(accumulate_unit(t for t in tokens if t is not None))


def fingerprint_weighted(tokens, weights):
    """simhash(text[], float8[])."""
    if len(tokens) != len(weights):
        raise ValueError("tokens and weights must have the same number of elements")
    pairs = []
    for t, w in zip(tokens, weights):
        if t is None:
            continue                    # skipped with its weight
        if w is None:
            raise ValueError("NULL weight for a non-NULL token")
        pairs.append((t, w))
    return hex64(accumulate_weighted(pairs))


def parse_tsvector(text):
    """tsvector's text form ("'lex':1A,2 'b'") to [(lexeme, [(position, label)])] in the
    stored order; labels are 'A'..'D'."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        if text[i] != "'":
            raise ValueError("unexpected tsvector text at %d: %r" % (i, text[i:i + 20]))
        i += 1
        lex = []
        while True:
            ch = text[i]
            if ch in "'\\" and i + 1 < n and text[i + 1] == ch:
                lex.append(ch)          # doubled quote or backslash
                i += 2
            elif ch == "'":
                i += 1
                break
            else:
                lex.append(ch)
                i += 1
        positions = []
        if i < n and text[i] == ":":
            i += 1
            while True:
                j = i
                while j < n and text[j].isdigit():
                    j += 1
                pos = int(text[i:j])
                label = "D"
                if j < n and text[j] in "ABCD":
                    label = text[j]
                    j += 1
                positions.append((pos, label))
                i = j
                if i < n and text[i] == ",":
                    i += 1
                    continue
                break
        out.append(("".join(lex), positions))
    return out


def fingerprint_tsvector(tsv_text, label_weights=None):
    """simhash(tsvector) and simhash(tsvector, {D, C, B, A})."""
    pairs = []
    if label_weights is not None:
        if len(label_weights) != 4:
            raise ValueError("label weights must have 4 elements {D, C, B, A}")
        for w in label_weights:
            _check_weight(float(w))
        by_label = dict(zip("DCBA", (float(w) for w in label_weights)))
    # SPEC: read as "a lexeme is one feature whose weight is the sum, in position order,
    # of its positions' label weights" (rather than one addition per position); in double
    # precision the two readings can differ only within rounding error of zero.
    for lex, positions in parse_tsvector(tsv_text):
        if label_weights is None:
            w = float(len(positions)) if positions else 1.0
        elif not positions:
            w = by_label["D"]
        else:
            w = 0.0
            for _, label in positions:
                w += by_label[label]
        pairs.append((lex, w))
    return hex64(accumulate_weighted(pairs))


def fingerprint_agg(rows):
    """simhash_agg(feature [, weight]) over rows (feature,) or (feature, weight); rows
    with a NULL feature or weight are skipped."""
    pairs = []
    for row in rows:
        f = row[0]
        w = row[1] if len(row) > 1 else 1.0
        if f is None or w is None:
            continue
        pairs.append((f, w))
    return hex64(accumulate_weighted(pairs))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def _print_features(pairs, quiet):
    if quiet:
        return
    for f, w in pairs:
        print("%g\t%016x\t%s" % (w, feature_hash(f), f))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("text", nargs="?")
    p.add_argument("-m", "--mode", choices=("words", "chars", "mixed"), default="words")
    p.add_argument("-n", "--size", type=int)
    p.add_argument("-V", "--spec-version", type=int, choices=(1, 2), default=2)
    p.add_argument("--file")
    p.add_argument("--tokens", nargs="*")
    p.add_argument("--weights", nargs="*", type=float)
    p.add_argument("--tsvector")
    p.add_argument("--label-weights")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--minhash", action="store_true", help="the MinHash sketch (minhash())")
    p.add_argument("--segmented", action="store_true",
                   help="normalise in the segments of the proposed section 2.1 wording "
                        "(not spec version 1)")
    a = p.parse_args(argv)

    if a.tokens is not None:
        if a.weights is None:
            _print_features([(t, 1) for t in a.tokens], a.quiet)
            fp = fingerprint_tokens(a.tokens)
        else:
            _print_features(list(zip(a.tokens, a.weights)), a.quiet)
            fp = fingerprint_weighted(a.tokens, a.weights)
    elif a.tsvector is not None:
        lw = [float(x) for x in a.label_weights.split(",")] if a.label_weights else None
        if not a.quiet:
            for lex, pos in parse_tsvector(a.tsvector):
                print("%s\t%016x\t%s" % (",".join("%d%s" % x for x in pos) or "-",
                                          feature_hash(lex), lex))
        fp = fingerprint_tsvector(a.tsvector, lw)
    else:
        if a.file is not None:
            with open(a.file, "rb") as f:
                doc = f.read()
        elif a.text is not None:
            doc = a.text
        else:
            p.error("give a TEXT, --file, --tokens or --tsvector")
        if not a.segmented and arbitrary_cut_possible(_to_code_points(doc)):
            print("warning: a run of more than 131,072 code points without ASCII, Han or "
                  "Hangul: the spec leaves this result unspecified", file=sys.stderr)
        if a.minhash:
            fp = minhash_text(doc, a.mode, a.size)
            print(fp if a.quiet else "minhash: %s" % (fp or "NULL"))
            return 0
        v = a.spec_version
        occ = text_features(doc, a.mode, a.size, a.segmented, v)
        _print_features(feature_list(occ, v), a.quiet)
        fp = hex64(accumulate_unit(occ) if v == 1 else accumulate_distinct(occ))
    print(fp if a.quiet else "fingerprint: %s" % (fp or "NULL"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
