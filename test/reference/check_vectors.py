#!/usr/bin/env python3
"""Compare the C extension with the independent reference (simhash_ref.py).

Every test document below goes through the reference and through PostgreSQL (psql -At,
connection from the PG* environment variables) for the modes words/1, words/2, words/3,
chars/1, chars/2, chars/3, chars/5, mixed/2 and mixed/5. For each, the fingerprint AND the feature list of
simhash_features() (in order, with weights and hashes) must match. Also checked:

  - the other inputs of spec section 7 (text[], text[] + float8[], tsvector, simhash_agg);
  - malformed UTF-8 (spec section 1) in an SQL_ASCII database;
  - the identities of spec section 7 (simhash_agg over simhash_features, and simhash of the
    array of features repeated by weight, both equal simhash(doc));
  - seeded random documents, and a sweep over every code point assigned in Unicode 14.0;
  - the class and case-folding tables in src/fingerprint/unicode_tables.h against the reference's own
    derivation, for every code point (this finds table errors no document happens to hit);
  - every pinned value in expected/vectors.out (the pg_regress suite "vectors") against the
    reference, and that sql/vectors.sql holds exactly the documents listed here.

Usage:
  check_vectors.py               run everything; exit 1 on any mismatch
  check_vectors.py --write-sql   (re)generate sql/vectors.sql from the lists below; its
                                 expected output comes from running pg_regress, and is then
                                 verified by a plain run of this script
  check_vectors.py -v            also print every passing vector
  check_vectors.py --segmentation
                                 only the long runs without ASCII, where the C code
                                 normalises in segments: each must equal NFKC of the whole
                                 text (also part of the plain run)

The last line is always "vectors: N passed, N failed".
"""
import functools
import hashlib
import os
import re
import subprocess
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

try:
    import xxhash  # noqa: F401  (needed by simhash_ref)
except ImportError:                     # e.g. a pyenv python3 first in PATH: use Debian's
    if os.path.exists("/usr/bin/python3") and \
            os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

sys.path.insert(0, HERE)
import simhash_ref as ref  # noqa: E402

# (feature mode, size, specification version): every mode under both versions
MODES = [(mo, sz, v) for v in (1, 2)
         for mo, sz in [("words", 1), ("words", 2), ("words", 3),
                        ("chars", 1), ("chars", 2), ("chars", 3), ("chars", 5),
                        ("mixed", 2), ("mixed", 5)]]

# ---------------------------------------------------------------------------
# Test documents: (name, text). Names are ASCII identifiers; they key the pinned rows.
# Decomposed sequences and invisible characters are written as escapes.
# ---------------------------------------------------------------------------

DOCS = [
    # ASCII
    ("ascii_prose",
     "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away, "
     "and the quick brown fox is never seen again in the quiet village by the river."),
    ("ascii_case", "Hello HELLO hello hElLo World WORLD world"),
    ("ascii_punct",
     "Wait... what?! (yes) -- no; \"quoted\" [brackets] {braces} <tags> @user #hashtag "
     "$100 50% a&b a/b a_b a-b a.b a+b=c, e.g. i.e. O'Neil don't can't won't ~tilde~ "
     "`tick` \\back\\slash | pipe ^caret* ***"),
    ("ascii_numbers", "Pi is 3.14159, e is 2.71828; 1,000,000 and 1e-10 and -42 and 0x1F and v2.0.1"),
    ("ascii_lines", "line one\nline two\r\nline\tthree\n\n\nlast  line   "),
    # Latin with diacritics, composed and decomposed
    ("latin_composed", "Café crème brûlée, naïve façade; Ångström, señor, Øresund, Łódź, Dvořák."),
    ("latin_decomposed",
     "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, nai\u0308ve fac\u0327ade; "
     "A\u030Angstro\u0308m, sen\u0303or, \u00D8resund, L\u0301o\u0301dz\u0301, Dvor\u030Ca\u0301k."),
    ("latin_mixed_forms", "re\u0301sume\u0301 résumé RÉSUMÉ RE\u0301SUME\u0301 e\u0323\u0302 ệ e\u0302\u0323"),
    ("german_sz", "Straße STRASSE strasse Maße MASSE Fuß \u1E9E GROẞ groß"),
    ("turkish_i", "İstanbul ISTANBUL istanbul ıspanak Işık I\u0307stanbul iı İI"),
    # Greek, Cyrillic
    ("greek", "Σίσυφος ΟΔΥΣΣΕΥΣ Ὀδυσσεύς ὀδυσσεὺς λόγος ΛΌΓΟΣ σοφίας ς Σ ϐ ϑ ϕ ΐ"),
    ("cyrillic", "Привет, мир! ЁЖИК ёжик Й й И\u0306 Ї і\u0308 Съешь же ещё этих мягких французских булок."),
    # CJK
    ("chinese_simplified", "中华人民共和国成立于1949年。我们爱学习中文，汉字很有意思！"),
    ("chinese_traditional", "中華民國，繁體中文字。臺灣的學習環境很好\uF900\uF901。"),
    ("japanese",
     "東京タワーは、ひらがなとカタカナ、漢字で書きます。ガギグゲゴ がぎぐ "
     "か\u3099き\u3099 か゛ ﾃﾞｰﾀ ｶﾞｷﾞ コーヒー スーパー 々 人々 ゟ ㌔ ㍿"),
    ("korean", "안녕하세요 세계! 한국어 문장입니다. \u1100\u1161\u11A8\u1100\u1161 ﾡﾤ \u3131\u314F"),
    ("bopomofo_yi", "ㄅㄆㄇㄈ ꀀꀁꀂ"),
    # South-East Asian (unsegmented), Indic, Arabic, Hebrew
    ("thai", "สวัสดีชาวโลก ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ ๑๒๓"),
    ("lao_khmer_myanmar", "ສະບາຍດີ សួស្តី\u17B4ពិភពលោក မင်္ဂလာပါ"),
    ("arabic", "مرحبا بالعالم! العَرَبِيَّة لغة جميلة ﻻ ﷺ ١٢٣٫٤٥ كتــــاب"),
    ("hebrew", "שָׁלוֹם עוֹלָם! עברית"),
    ("hindi", "नमस्ते दुनिया, हिन्दी में क़िताब पढ़ो। क्षत्रिय ४२"),
    ("other_scripts", "தமிழ் ሰላም ᠮᠣᠩᠭᠣᠯ\u180B Ελλάδα ქართული Հայերեն"),
    # emoji and symbols
    ("emoji",
     "I \u2764\uFE0F it 😀😀 👍🏽 👨\u200D👩\u200D👧\u200D👦 🏳\uFE0F\u200D🌈 🇯🇵🇫🇷 "
     "👩🏾\u200D💻 1\uFE0F\u20E3 #\uFE0F\u20E3 🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F "
     "☺\uFE0E ☺\uFE0F"),
    ("symbols", "© 2024 ACME™ ® ℃ 25°C № 5 ★★★ ♥ ∑ √2 ≠ ∞ € $ £ ¥ + = < > ←→ §1 ¶"),
    # compatibility forms
    ("fullwidth", "ＡＢＣ　ｄｅｆ１２３！ ＦＵＬＬ　ｗｉｄｔｈ　ｔｅｘｔ ﾊﾝｶｸ"),
    ("ligatures", "ﬁnal ﬂow ﬀ ﬃ ﬄ ĳ Ǆ ǅ ǆ ﬅ ﬆ ﬁ\u0301"),
    ("superscripts", "x² + y³ = z⁴ H₂O E=mc² 2ⁿ ª º ʰ ½ ⅓ ¼ Ⅻ ⅻ ① ⑴ ⒜ ㈱ ㎏ ㎞ ㏂"),
    # invisible characters
    ("soft_hyphen", "co\u00ADoperate hy\u00ADphen\u00ADation \u00ADstart end\u00AD"),
    ("zero_width", "a\u200Db \u200Cc d\u200Be zero\u2060width \uFEFFbom \u3164filler\u115F x\u034Fy"),
    # specification version 2: Han variants fold to one class representative (traditional,
    # simplified, Z and Hong Kong glyph variants), and repeated features count once
    ("han_variants", "為爲为 裡裏里 峰峯 後后 發髮发 臺台檯颱 中文 鐘鍾钟"),
    ("repeats", "the cat the cat the cat sat on the mat the mat the mat"),
    ("marks_edge",
     "\u0301start a \u0301b 漢\u0301字 ก\u0E34 \u20DD x\u20DD \u0301 \u0301\u0302 ๆ\u0E4C"),
    ("whitespace_kinds", "a\u00A0b\u2002c\u3000d\u2028e\u2029f\u0085g\u000Bh\u000Ci"),
    # mixed
    ("mixed_scripts",
     "Hello 世界! Привет мир — مرحبا 😀 καλημέρα 東京2020 naïve café ソウル서울 abc漢def"),
    ("zh_en_manpage", "ls 命令列出目录内容。选项 -l 使用长格式列出，--all 不忽略以 . 开头的条目；另见 dir(1)"),
    ("mixed_numbers", "3.14 ３．１４ ٣٫١٤ ३.१४ 三点一四 1,5 € 2½ 10⁻³ 0.001 ½"),
    # NULL cases and tiny documents
    ("empty", ""),
    ("whitespace_only", " \t\n\r  \u3000\u00A0\u2003 "),
    ("punctuation_only", "!?... ,;:—–()[]{}«»\"'“”‘’ ¿¡ ・、。 -_- ** // %"),
    ("ignorable_only", "\u200B\u200D\uFE0F\u00AD\u2060\uFEFF"),
    ("separators_and_ignorables", " \u200B , \u00AD ; \uFE0F ."),
    ("single_char", "a"),
    ("single_han", "漢"),
    ("single_emoji", "😀"),
    ("single_mark", "\u0301"),
    ("single_ligature", "ﬁ"),
    ("two_words", "hello world"),
    # characters assigned after Unicode 14.0, which NFKC (pinned to 14.0) leaves alone on
    # every server: Unicode 16's outlined letters U+1CCD6.. (PostgreSQL 18's normaliser maps
    # them to letters), 15.0's Cyrillic modifier letters (a compatibility decomposition in
    # 15.0) and Kawi letters, CJK extension H (15.0) and I (15.1)
    ("after_unicode_14",
     "\U0001CCD6\U0001CCD7\U0001CCD8 hello world \U0001CCD9 test \U0001E030\U0001E031 \u043a\u0438 "
     "\U00011F04\U00011F05 \U00031350\U00031351 \U0002EBF0 ok"),
]


# ---- a ~200 KB document, built the same way here and in SQL (so it can be pinned) ----

# Part A: mixed units with ASCII in between: segments end before ASCII characters.
BIG_A_UNITS = [
    "lorem ", "ipsum ", "dolor. ", "Sit ", "AMET, ", "naïve ", "cafe\u0301 ", "東京", "タワー ",
    "한국어 ", "😀 ", "👍🏽", "Привет ", "мир! ", "3.14 ", "ﬁne ", "x² ", "co\u00ADop ",
    "İstanbul ", "Straße ", "中文", "字符 ", "ｆｕｌｌ ", "e\u0301\u0323 ", "ΟΔΥΣΣΕΥΣ ",
    "مرحبا ", "नमस्ते ", "สวัสดี ", "\n", "-- ",
]
BIG_A_COUNT = 3000
# Part B: no ASCII at all, far more than 65,536 code points, so the normaliser's segments
# end at Han ideographs and Hangul syllables; the units include decomposed sequences
# (jamo, combining marks) that compose and reorder across unit boundaries.
BIG_B_UNITS = [
    "中", "文", "字", "符", "測", "試", "繁", "體", "한", "국", "어", "\u1100", "\u1161",
    "\u11A8", "α", "\u0301", "\u0323", "ω", "\u0342", "ё", "ж", "\u0306", "か", "\u3099",
    "カ", "ー", "ｶ", "ﾞ", "\u3000", "\u00A0", "、", "。", "😀", "\u200D", "ﬁ", "é", "ß",
    "ς", "Σ", "ا", "ل", "\u064E", "ก", "\u0E34", "\u00AD", "①", "㌔",
]
BIG_B_COUNT = 70000


def _pick(i, k, salt):
    """A deterministic, well-mixed index into k units: the first 32 bits of md5(salt || i),
    computed the same way in SQL below."""
    return int(hashlib.md5(("%s%d" % (salt, i)).encode()).hexdigest()[:8], 16) % k


def big_document():
    part_a = "".join(BIG_A_UNITS[_pick(i, len(BIG_A_UNITS), "a")] for i in range(1, BIG_A_COUNT + 1))
    part_b = "".join(BIG_B_UNITS[_pick(i, len(BIG_B_UNITS), "b")] for i in range(1, BIG_B_COUNT + 1))
    return part_a + part_b + " end of the big document"


def big_document_sql():
    def part(units, count, salt):
        arr = "ARRAY[%s]" % ", ".join(sql_literal(u) for u in units)
        return ("(SELECT string_agg((%s)\n"
                "      [1 + ('x' || substr(md5('%s' || i), 1, 8))::bit(32)::bigint %% %d], '' ORDER BY i)\n"
                "   FROM generate_series(1, %d) AS i)" % (arr, salt, len(units), count))
    return (part(BIG_A_UNITS, BIG_A_COUNT, "a") + "\n  || "
            + part(BIG_B_UNITS, BIG_B_COUNT, "b") + "\n  || ' end of the big document'")


ALL_DOCS = DOCS + [("big_mixed_200kb", big_document())]

# Malformed UTF-8 (spec section 1), as raw bytes: checked in an SQL_ASCII database.
MALFORMED = [
    ("bad_lead_bytes", b"abc\x80def \xff\xfe ghi \xc0\xaf"),
    ("truncated", b"caf\xc3 x\xe6\x97 y\xf0\x9f\x98 end\xe6"),
    ("overlong", b"a\xe0\x80\xaf b\xf0\x80\x80\xaf c\xc1\xbf"),
    ("surrogate", b"x\xed\xa0\x80y \xed\xbf\xbf z"),
    ("above_max", b"p\xf4\x90\x80\x80q \xf5\x80\x80\x80 r"),
    ("valid_mixed_in", b"ok \xe6\x97\xa5\xe6\x9c\xac\x80 caf\xc3\xa9 e\xcc\x81"),
]

# Seeded random documents: ASCII, a list of awkward characters and any code point assigned
# in Unicode 14.0 (from the data files, so the set does not depend on Python's version).
RANDOM_SEED = 20240501
RANDOM_COUNT = 400
AWKWARD = (list("\u0301\u0323\u0302\u0308\u0327\u0342\u0345\u3099\u309A\u309B\uFF9E\u1100\u1161"
                "\u11A8\uAC00\u200D\u200C\u00AD\uFE0F\uFE0E\u034F\u17B4\u3164\u115F\u0E34\u0E31"
                "\u064E\u0651\u093C\u094D\u05B7\u05BCİıßẞςΣσſ\u212A\u2126\u212BﬁﬀĳǄ²ª①㍿㌔ｶﾞｰーｱ。、"
                "\u3000 \u00A0\u2028\t\n\r.,;!?-'\"😀👍🏽🇯🇵\U000E0067\u20E3©®™℃½\uFFFD")
           + ["\U00020000", "\uF900", "\u0344", "\u0F73", "\u0F81", "\U0001D15E", "\U0001F3FB"])


def random_documents():
    import random
    rng = random.Random(RANDOM_SEED)
    t = ref.tables()
    new = _unicode_15_new()
    assigned = [c for c in range(1, 0x110000)
                if t.general_category(c) not in ("Cn", "Cs") and c not in new]
    docs = []
    for k in range(RANDOM_COUNT):
        n = rng.choice([1, 2, 3, 5, 8, 20, 60, 200])
        s = []
        for _ in range(n):
            r = rng.random()
            if r < 0.35:
                s.append(chr(rng.randrange(0x20, 0x7F)) if rng.random() < 0.9 else rng.choice(" \t\n"))
            elif r < 0.65:
                s.append(rng.choice(AWKWARD))
            else:
                s.append(chr(rng.choice(assigned)))
        docs.append(("random_%03d" % k, "".join(s)))
    return docs


def code_point_sweep():
    """Every code point assigned in Unicode 14.0 (and a few unassigned ones), each after an
    'x' it might compose with, 4,000 to a document: compared in chars/1 and words/1."""
    t = ref.tables()
    new = _unicode_15_new()
    cps = [c for c in range(1, 0x110000)
           if (t.general_category(c) not in ("Cn", "Cs") and c not in new) or c in (0x0378, 0xE0080, 0x10FFFF)]
    return [("sweep_%06X" % cps[i], " ".join("x" + chr(c) for c in cps[i:i + 4000]))
            for i in range(0, len(cps), 4000)]


_NEW15 = None


def _unicode_15_new():
    global _NEW15
    if _NEW15 is None:
        _NEW15 = set()
        for a, b, f in ref._data_lines("DerivedAge.txt"):
            if f[0] == "15.0":
                _NEW15.update(range(a, b + 1))
    return _NEW15


# Long runs without ASCII, where the C tokeniser normalises in segments: the result must
# still be NFKC of the whole text (these once exposed segment cuts that were visible).
SEG_SPACE = "\u3000"
SEGMENTATION_CASES = [
    # a Han ideograph early in a segment, then a run of only 65,538 code points without
    # ASCII, Han or Hangul: the spec promises whole-text NFKC
    ("seg_han_early", SEG_SPACE * 65535 + "中" + SEG_SPACE * 65535 + "\u03B1\u0301\u0323"),
    # a Han ideograph outside U+3400..U+4DBF and U+4E00..U+9FFF (Extension B) right after
    # 131,070 code points without any: the spec counts it as a Han ideograph
    ("seg_ext_b_ideograph", SEG_SPACE * 131070 + "\U00020000\u0301\u0323"),
    # a run of more than 131,072 code points without ASCII, Han or Hangul: "cut arbitrarily"
    ("seg_no_boundary", SEG_SPACE * 131071 + "\u03B1\u0301\u0323"),
    # controls: a BMP Han ideograph after a long run is a boundary; so is ASCII
    ("seg_bmp_han", SEG_SPACE * 131070 + "中\u0301\u0323"),
    ("seg_ascii", SEG_SPACE * 131070 + "a\u0301\u0323"),
]


# ---------------------------------------------------------------------------
# The other inputs (spec section 7): label, SQL expression, reference computation.
# A reference given as a string is an SQL expression whose text PostgreSQL supplies
# (a tsvector, computed by PostgreSQL's own text search parser, not part of the spec).
# ---------------------------------------------------------------------------

E_ACUTE = "cafe\u0301"
EXTRAS = [
    ("tokens_basic", "simhash(ARRAY['hello', 'world', 'hello'])",
     lambda: ref.fingerprint_tokens(["hello", "world", "hello"])),
    ("tokens_as_given",
     "simhash(ARRAY['Café', 'CAFÉ', U&'cafe\\0301', 'cafe'])",
     lambda: ref.fingerprint_tokens(["Café", "CAFÉ", E_ACUTE, "cafe"])),
    ("tokens_with_nulls", "simhash(ARRAY['a', NULL, 'b', NULL, 'a b'])",
     lambda: ref.fingerprint_tokens(["a", None, "b", None, "a b"])),
    ("tokens_cjk_emoji", "simhash(ARRAY['東京', 'タワー', '😀', ''])",
     lambda: ref.fingerprint_tokens(["東京", "タワー", "😀", ""])),
    ("tokens_empty_array", "simhash(ARRAY[]::text[])", lambda: ref.fingerprint_tokens([])),
    ("tokens_only_null", "simhash(ARRAY[NULL]::text[])", lambda: ref.fingerprint_tokens([None])),
    ("weighted_basic", "simhash(ARRAY['hello', 'world', 'fox'], ARRAY[1, 2, 3]::float8[])",
     lambda: ref.fingerprint_weighted(["hello", "world", "fox"], [1, 2, 3])),
    ("weighted_fractional",
     "simhash(ARRAY['alpha', 'beta', 'gamma', 'delta'], ARRAY[0.5, 0.25, 1e-3, 0.125]::float8[])",
     lambda: ref.fingerprint_weighted(["alpha", "beta", "gamma", "delta"], [0.5, 0.25, 1e-3, 0.125])),
    ("weighted_zero_and_null",
     "simhash(ARRAY['a', 'b', NULL, 'c'], ARRAY[0, 2.5, NULL, 0]::float8[])",
     lambda: ref.fingerprint_weighted(["a", "b", None, "c"], [0, 2.5, None, 0])),
    ("weighted_all_zero", "simhash(ARRAY['a', 'b'], ARRAY[0, 0]::float8[])",
     lambda: ref.fingerprint_weighted(["a", "b"], [0, 0])),
    ("weighted_large",
     "simhash(ARRAY['x', 'y', 'z'], ARRAY[1e300, 3e299, 7e299]::float8[])",
     lambda: ref.fingerprint_weighted(["x", "y", "z"], [1e300, 3e299, 7e299])),
    ("weighted_unicode",
     "simhash(ARRAY['東', '京', 'naïve', '👍🏽'], ARRAY[1.5, 1.5, 2, 0.75]::float8[])",
     lambda: ref.fingerprint_weighted(["東", "京", "naïve", "👍🏽"], [1.5, 1.5, 2, 0.75])),
    ("tsvector_simple",
     "simhash(to_tsvector('simple', 'The quick brown fox jumps over the lazy dog; the fox again'))",
     "to_tsvector('simple', 'The quick brown fox jumps over the lazy dog; the fox again')"),
    ("tsvector_unicode",
     "simhash(to_tsvector('simple', 'Café CAFÉ naïve Straße straße Привет привет'))",
     "to_tsvector('simple', 'Café CAFÉ naïve Straße straße Привет привет')"),
    ("tsvector_no_positions", "simhash('a b c a'::tsvector)", "'a b c a'::tsvector"),
    ("tsvector_empty", "simhash(to_tsvector('simple', ''))", "to_tsvector('simple', '')"),
    ("tsvector_labels",
     "simhash(setweight(to_tsvector('simple', 'title words here'), 'A') || "
     "setweight(to_tsvector('simple', 'abstract words'), 'B') || "
     "to_tsvector('simple', 'body words body text more body'), ARRAY[0.1, 0.2, 0.4, 1.0])",
     ("setweight(to_tsvector('simple', 'title words here'), 'A') || "
      "setweight(to_tsvector('simple', 'abstract words'), 'B') || "
      "to_tsvector('simple', 'body words body text more body')", [0.1, 0.2, 0.4, 1.0])),
    ("tsvector_labels_no_positions", "simhash('x y z'::tsvector, ARRAY[2, 0, 0, 0])",
     ("'x y z'::tsvector", [2, 0, 0, 0])),
    ("tsvector_labels_zero", "simhash('x:1A y:2B'::tsvector, ARRAY[1, 1, 0, 0])",
     ("'x:1A y:2B'::tsvector", [1, 1, 0, 0])),
    ("agg_unweighted",
     "(SELECT simhash_agg(f ORDER BY n) FROM (VALUES (1, 'hello'), (2, 'world'), (3, NULL), (4, 'hello')) v(n, f))",
     lambda: ref.fingerprint_agg([("hello",), ("world",), (None,), ("hello",)])),
    ("agg_weighted",
     "(SELECT simhash_agg(f, w ORDER BY n) FROM (VALUES (1, 'alpha', 0.5), (2, 'beta', 2.0), "
     "(3, 'gamma', NULL), (4, NULL, 9.0), (5, 'delta', 1.25), (6, '東京', 0.75)) v(n, f, w))",
     lambda: ref.fingerprint_agg([("alpha", 0.5), ("beta", 2.0), ("gamma", None), (None, 9.0),
                                  ("delta", 1.25), ("東京", 0.75)])),
    ("agg_all_null",
     "(SELECT simhash_agg(f) FROM (VALUES (NULL::text), (NULL)) v(f))",
     lambda: ref.fingerprint_agg([(None,), (None,)])),
    ("agg_no_rows", "(SELECT simhash_agg(f) FROM (VALUES ('x')) v(f) WHERE false)",
     lambda: ref.fingerprint_agg([])),
    ("agg_features_japanese",
     "(SELECT simhash_agg(feature, weight) FROM simhash_features("
     "(SELECT body FROM vec_docs WHERE name = 'japanese'), 'words', 2))",
     lambda: ref.fingerprint_agg(ref.feature_list(ref.text_features(_doc("japanese"), "words", 2)))),
    ("array_features_mixed",
     "simhash(ARRAY(SELECT f.feature FROM simhash_features("
     "(SELECT body FROM vec_docs WHERE name = 'mixed_scripts'), 'chars', 3, 1) f, "
     "generate_series(1, f.weight::int)))",
     lambda: ref.fingerprint_tokens(ref.text_features(_doc("mixed_scripts"), "chars", 3, version=1))),
]

# Feature lists pinned in the regression output, for reading as much as for checking.
PINNED_FEATURES = [("japanese", "words", 1, 1), ("emoji", "words", 1, 1),
                   ("mixed_scripts", "words", 2, 1), ("latin_decomposed", "chars", 3, 1),
                   ("zero_width", "chars", 2, 1),
                   ("han_variants", "words", 1, 2), ("repeats", "words", 2, 2),
                   ("mixed_scripts", "mixed", 5, 2), ("zh_en_manpage", "mixed", 2, 2)]


_REF_CACHE = {}


def ref_result(key, body, mode, size, version):
    """(fingerprint, [(feature, weight, hash)]) from the reference, cached by key."""
    k = (key, mode, size, version)
    if k not in _REF_CACHE:
        _REF_CACHE[k] = (ref.fingerprint_text(body, mode, size, version=version),
                         [(f, float(c), "%016x" % ref.feature_hash(f))
                          for f, c in ref.feature_list(ref.text_features(body, mode, size, version=version),
                                                       version)])
    return _REF_CACHE[k]


_MH_CACHE = {}

# The feature kinds of the pinned MinHash rows: those of specification version 2.
MINHASH_MODES = [(mo, sz) for mo, sz, v in MODES if v == 2]


@functools.lru_cache(maxsize=None)
def minhash_bin_words():
    """The first words w0, w1, ... whose hash (a one-word document's only feature) falls into
    a bin no earlier one does, until all 64 bins have one: ordered by bin."""
    by_bin = {}
    n = 0
    while len(by_bin) < 64:
        w = "w%d" % n
        by_bin.setdefault(ref.feature_hash(w) >> 58, w)
        n += 1
    return [by_bin[b] for b in range(64)]


def ref_minhash(key, body, mode, size):
    """minhash(body, mode, size) from the reference, cached by key."""
    k = (key, mode, size)
    if k not in _MH_CACHE:
        _MH_CACHE[k] = ref.minhash_text(body, mode, size)
    return _MH_CACHE[k]


def _doc(name):
    for n, t in ALL_DOCS:
        if n == name:
            return t
    raise KeyError(name)


# ---------------------------------------------------------------------------
# SQL literals and the generated regression file
# ---------------------------------------------------------------------------

def _nfc_keeps(prev, ch):
    """Does NFC leave ch alone after prev (no composition with it, no reordering)?"""
    return unicodedata.normalize("NFC", prev + ch) == unicodedata.normalize("NFC", prev) + ch


def _plain(ch, prev):
    """Can ch (after prev, or None) be written as itself in the SQL file: visible, and left
    alone by an editor that normalises to NFC? Everything else is written as a U&'' escape,
    so decomposed sequences stay decomposed and invisible characters stay visible."""
    o = ord(ch)
    if ch in "'\\":
        return False
    if 0x20 <= o < 0x7F:
        return prev is None or _nfc_keeps(prev, ch)
    cat = unicodedata.category(ch)
    if cat[0] in "CZ" or ref.tables().char_class(o) == ref.IGNORE:
        return False
    if unicodedata.normalize("NFC", ch) != ch:
        return False
    if prev is not None and not _nfc_keeps(prev, ch):
        return False
    if cat[0] == "M":
        # a mark stays readable after a letter of its own script (Thai, Devanagari, ...);
        # Latin, Greek and Cyrillic combining marks (script Inherited) are always escaped
        t = ref.tables()
        return (prev is not None and unicodedata.category(prev)[0] == "L"
                and t.script.get(o) == t.script.get(ord(prev)))
    return True


def sql_literal(s):
    plain = [_plain(c, s[i - 1] if i else None) for i, c in enumerate(s)]
    if all(p or c == "'" for p, c in zip(plain, s)):
        return "'" + s.replace("'", "''") + "'"
    out = []
    for c, p in zip(s, plain):
        o = ord(c)
        if c == "'":
            out.append("''")
        elif c == "\\":
            out.append("\\\\")
        elif p:
            out.append(c)
        elif o <= 0xFFFF:
            out.append("\\%04X" % o)
        else:
            out.append("\\+%06X" % o)
    return "U&'" + "".join(out) + "'"


HEADER = """\
-- Pinned fingerprint vectors of the simhash fingerprint specification, version 1
-- (doc/specification.md, "Fingerprint specification").
--
-- THESE VALUES MUST NEVER CHANGE. Users store fingerprints and compare them with
-- fingerprints computed later; a changed value here means every stored fingerprint of
-- such a document silently stops matching. If a change of the tokeniser, the Unicode
-- tables, the hash or the accumulation alters any row below, the change is wrong (or it
-- is a new, separately named version of the rules, and these rows stay as they are).
--
-- Every value in expected/vectors.out is computed independently from the spec by
-- test/reference/simhash_ref.py (Python: unicodedata NFKC, classes and case folding
-- derived from the Unicode 15.0 data files, python3-xxhash); run
-- test/reference/check_vectors.py to compare it with this file and with the C code.
-- This file is generated by "check_vectors.py --write-sql" from the documents listed
-- there; edit them there, never here.
"""


def write_sql(path):
    L = [HEADER]
    L.append("SET client_min_messages = warning;")
    L.append("CREATE EXTENSION IF NOT EXISTS simhash;")
    L.append("RESET client_min_messages;")
    L.append("\\pset null '(null)'")
    L.append("")
    L.append("-- the documents (names are the keys of the rows below)")
    L.append("CREATE TEMP TABLE vec_docs (ord int PRIMARY KEY, name text UNIQUE NOT NULL, body text NOT NULL);")
    L.append("INSERT INTO vec_docs VALUES")
    rows = ["(%d, %s, %s)" % (i + 1, sql_literal(n), sql_literal(t)) for i, (n, t) in enumerate(DOCS)]
    L.append(",\n".join(rows) + ";")
    L.append("-- about 200 KB: %d units of mixed text with ASCII, then %d code points without any"
             % (BIG_A_COUNT, BIG_B_COUNT))
    L.append("-- ASCII (the normaliser runs in bounded segments), built deterministically")
    L.append("INSERT INTO vec_docs VALUES (%d, 'big_mixed_200kb',\n  %s);" % (len(DOCS) + 1, big_document_sql()))
    L.append("-- the big document is the one check_vectors.py computes")
    L.append("SELECT octet_length(body) AS bytes, length(body) AS code_points, md5(body)")
    L.append("FROM vec_docs WHERE name = 'big_mixed_200kb';")
    L.append("")
    L.append("-- fingerprints of every document in every mode and specification version:")
    L.append("-- simhash(doc, features, size, version)")
    L.append("SELECT d.name, m.mode, m.size, m.version, simhash(d.body, m.mode, m.size, m.version) AS fingerprint")
    L.append("FROM vec_docs d CROSS JOIN (VALUES %s) AS m(k, mode, size, version)" %
             ", ".join("(%d, '%s', %d, %d)" % (k + 1, mo, sz, v) for k, (mo, sz, v) in enumerate(MODES)))
    L.append("ORDER BY d.ord, m.k;")
    L.append("")
    L.append("-- the defaults: words/2, and chars/3, specification version 2")
    L.append("SELECT name, simhash(body) AS words_default, simhash(body, 'chars') AS chars_default")
    L.append("FROM vec_docs WHERE ord <= 12 ORDER BY ord;")
    L.append("")
    L.append("-- feature lists of a few documents (feature quoted, so spaces are visible)")
    for name, mode, size, version in PINNED_FEATURES:
        L.append("SELECT format('%%L', feature) AS feature, weight, hash FROM simhash_features("
                 "(SELECT body FROM vec_docs WHERE name = '%s'), '%s', %d, %d);" % (name, mode, size, version))
    L.append("")
    L.append("-- the other inputs: text[], text[] with weights, tsvector, simhash_agg")
    L.append("SELECT label, fp AS fingerprint FROM (VALUES")
    L.append(",\n".join("  (%d, '%s', %s)" % (i + 1, lab, expr) for i, (lab, expr, _) in enumerate(EXTRAS)))
    L.append(") AS x(k, label, fp) ORDER BY k;")
    L.append("")
    L.append("-- MinHash specification version 1: minhash(doc, features, size) of every document in")
    L.append("-- the modes of version 2 (its features)")
    L.append("SELECT d.name, m.mode, m.size, minhash(d.body, m.mode, m.size) AS sketch")
    L.append("FROM vec_docs d CROSS JOIN (VALUES %s) AS m(k, mode, size)" %
             ", ".join("(%d, '%s', %d)" % (k + 1, mo, sz) for k, (mo, sz) in enumerate(MINHASH_MODES)))
    L.append("ORDER BY d.ord, m.k;")
    L.append("")
    L.append("-- one-word documents whose one feature falls into each of the 64 bins: 63 bins")
    L.append("-- filled by densification from one")
    L.append("SELECT w, (simhash_features(w)).hash::bigint >> 58 & 63 AS bin, minhash(w) AS sketch")
    L.append("FROM (VALUES %s) AS v(w) ORDER BY 2;" % ", ".join("('%s')" % w for w in minhash_bin_words()))
    L.append("")
    L.append("DROP TABLE vec_docs;")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(L) + "\n")


# ---------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------

# The database the checks run in (main() creates it afresh, so that the extension is the
# installed default version, whatever another suite left in the connection's database);
# None: the connection's own database.
CHECK_DB = None


def psql(script, db=None):
    cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-f", "-"]
    if db or CHECK_DB:
        cmd += ["-d", db or CHECK_DB]
    r = subprocess.run(cmd, input=script.encode("utf-8") if isinstance(script, str) else script,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("psql failed (%d):\n%s" % (r.returncode, r.stderr.decode("utf-8", "replace")))
    return r.stdout


def copy_escape(b):
    return (b.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n")
            .replace(b"\r", b"\\r"))


RESULT_QUERY = """
COPY (
  SELECT d.name, m.mode, m.size, m.version,
         coalesce(simhash(d.body, m.mode, m.size, m.version)::text, 'NULL'),
         coalesce((SELECT string_agg(encode(convert_to(f.feature, 'UTF8'), 'hex') || ':' ||
                                     f.weight::text || ':' || f.hash::text, ',' ORDER BY f.ord)
                   FROM simhash_features(d.body, m.mode, m.size, m.version)
                        WITH ORDINALITY AS f(feature, weight, hash, ord)), ''),
         coalesce((SELECT simhash_agg(feature, weight)
                   FROM simhash_features(d.body, m.mode, m.size, m.version))::text, 'NULL'),
         coalesce(simhash(ARRAY(SELECT f.feature
                                FROM simhash_features(d.body, m.mode, m.size, m.version) f,
                                     generate_series(1, f.weight::int)))::text, 'NULL'),
         CASE WHEN m.version = 2 THEN coalesce(minhash(d.body, m.mode, m.size)::text, 'NULL') ELSE '-' END
  FROM vec_docs d CROSS JOIN vec_modes m ORDER BY d.ord, m.k
) TO STDOUT;
"""


def pg_results(docs, db=None, raw_bytes=False):
    """{(name, mode, size, version): (fp, [(feature, weight, hash)], agg_fp, array_fp, minhash)}
    (minhash: the sketch of the version 2 features, for version 2 modes; "-" for version 1)"""
    s = [b"SET client_min_messages = warning;\nCREATE EXTENSION IF NOT EXISTS simhash;\n",
         b"CREATE TEMP TABLE vec_docs (ord int, name text, body text);\n",
         b"CREATE TEMP TABLE vec_modes (k int, mode text, size int, version int);\n",
         ("INSERT INTO vec_modes VALUES %s;\n" % ", ".join(
             "(%d, '%s', %d, %d)" % (k, mo, sz, v) for k, (mo, sz, v) in enumerate(MODES))).encode(),
         b"COPY vec_docs FROM STDIN;\n"]
    for i, (name, body) in enumerate(docs):
        data = body if raw_bytes else body.encode("utf-8")
        s.append(b"%d\t%s\t%s\n" % (i, name.encode(), copy_escape(data)))
    s.append(b"\\.\n")
    s.append(RESULT_QUERY.encode())
    out = psql(b"".join(s), db)
    res = {}
    for line in out.decode("utf-8").split("\n"):
        if not line:
            continue
        name, mode, size, version, fp, feats, agg, arr, mh = line.split("\t")
        fl = []
        if feats:
            for item in feats.split(","):
                h, w, hs = item.split(":")
                fl.append((bytes.fromhex(h).decode("utf-8"), float(w), hs))
        res[(name, mode, int(size), int(version))] = (None if fp == "NULL" else fp, fl,
                                        None if agg == "NULL" else agg,
                                        None if arr == "NULL" else arr,
                                        None if mh == "NULL" else mh)
    return res


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

class Tally:
    def __init__(self, verbose):
        self.passed = 0
        self.failed = 0
        self.verbose = verbose

    def ok(self, what):
        self.passed += 1
        if self.verbose:
            print("ok   %s" % what)

    def fail(self, what, detail):
        self.failed += 1
        print("FAIL %s\n     %s" % (what, detail.replace("\n", "\n     ")))


def _show(s, limit=200):
    r = repr(s)
    return r if len(r) <= limit else r[:limit] + "..."


def diff_features(ref_list, pg_list):
    """Describe the first differences between two feature lists."""
    lines = []
    n = max(len(ref_list), len(pg_list))
    for i in range(n):
        a = ref_list[i] if i < len(ref_list) else None
        b = pg_list[i] if i < len(pg_list) else None
        if a != b:
            lines.append("#%d reference %s | postgres %s" % (i + 1, _show(a, 120), _show(b, 120)))
            if len(lines) >= 8:
                lines.append("...")
                break
    lines.append("(%d features in the reference, %d in postgres)" % (len(ref_list), len(pg_list)))
    return "\n".join(lines)


def check_docs(tally, docs, db=None, raw_bytes=False, label=""):
    pg = pg_results(docs, db, raw_bytes)
    for name, body in docs:
        for mode, size, version in MODES:
            what = "%s%s %s/%d v%d" % (label, name, mode, size, version)
            rfp, rfl = ref_result(label + name, body, mode, size, version)
            got = pg.get((name, mode, size, version))
            if got is None:
                tally.fail(what, "no result from postgres")
                continue
            pfp, pfl, pagg, parr, pmh = got
            problems = []
            if version == 2:
                rmh = ref_minhash(label + name, body, mode, size)
                if rmh != pmh:
                    problems.append("minhash: reference %s, postgres %s" % (rmh, pmh))
            if rfp != pfp:
                problems.append("fingerprint: reference %s, postgres %s" % (rfp, pfp))
            if rfl != pfl:
                problems.append("features differ:\n" + diff_features(rfl, pfl))
            if pagg != pfp:
                problems.append("identity: simhash_agg(feature, weight) over simhash_features = %s, "
                                "simhash(doc) = %s" % (pagg, pfp))
            if parr != pfp:
                problems.append("identity: simhash(array of features) = %s, simhash(doc) = %s"
                                % (parr, pfp))
            if problems:
                tally.fail(what, "\n".join(problems))
            else:
                tally.ok("%s = %s (%d features)" % (what, rfp, len(rfl)))


def extra_reference(spec, pg_text):
    if callable(spec):
        return spec()
    if isinstance(spec, tuple):
        return ref.fingerprint_tsvector(pg_text, spec[1])
    return ref.fingerprint_tsvector(pg_text)


def extras_pg():
    """{label: (fingerprint or None, tsvector text or None)} from postgres."""
    s = ["SET client_min_messages = warning;", "CREATE EXTENSION IF NOT EXISTS simhash;",
         "CREATE TEMP TABLE vec_docs (name text, body text);", "COPY vec_docs FROM STDIN;"]
    for name, body in DOCS:
        s.append("%s\t%s" % (name, copy_escape(body.encode()).decode()))
    s.append("\\.")
    for label, expr, spec in EXTRAS:
        tsv = "NULL"
        if isinstance(spec, str):
            tsv = spec
        elif isinstance(spec, tuple):
            tsv = spec[0]
        s.append("COPY (SELECT '%s', coalesce((%s)::text, 'NULL'), coalesce((%s)::text, 'NULL')) TO STDOUT;"
                 % (label, expr, tsv))
    out = psql("\n".join(s) + "\n").decode("utf-8")
    res = {}
    for line in out.split("\n"):
        if line:
            label, fp, tsv = line.split("\t")
            tsv = tsv.replace("\\\\", "\\")     # COPY text escaping of backslashes
            res[label] = (None if fp == "NULL" else fp, None if tsv == "NULL" else tsv)
    return res


def check_extras(tally):
    pg = extras_pg()
    for label, expr, spec in EXTRAS:
        pfp, tsv = pg[label]
        try:
            rfp = extra_reference(spec, tsv)
        except Exception as e:          # noqa: BLE001
            tally.fail(label, "reference raised %r" % e)
            continue
        if rfp != pfp:
            tally.fail(label, "%s\nreference %s, postgres %s%s" % (
                expr, rfp, pfp, ("\ntsvector: " + tsv) if tsv else ""))
        else:
            tally.ok("%s = %s" % (label, rfp))


def check_malformed(tally):
    db = "simhash_vectors_sql_ascii"
    try:
        psql("DROP DATABASE IF EXISTS %s;\nCREATE DATABASE %s ENCODING 'SQL_ASCII' LC_COLLATE 'C' "
             "LC_CTYPE 'C' TEMPLATE template0;\n" % (db, db))
    except RuntimeError as e:
        tally.fail("malformed UTF-8 (SQL_ASCII database)", "cannot create the database: %s" % e)
        return
    try:
        check_docs(tally, MALFORMED, db=db, raw_bytes=True, label="sql_ascii:")
    finally:
        psql("DROP DATABASE IF EXISTS %s;\n" % db)


def parse_c_tables():
    path = os.path.join(ROOT, "src", "fingerprint", "unicode_tables.h")
    with open(path, encoding="utf-8") as f:
        src = f.read()

    def array(name):
        m = re.search(r"%s\[[^\]]*\](?:\[[^\]]*\])? = \{(.*?)\n\};" % re.escape(name), src, re.S)
        return [int(x, 0) for x in re.findall(r"0x[0-9A-Fa-f]+|\d+", m.group(1))]

    consts = dict((k, int(v, 0)) for k, v in re.findall(r"#define (SH_CLS_\w+)\s+(\S+)", src))
    return (array("sh_cls_stage1"), array("sh_cls_stage2"), array("sh_fold_from"), array("sh_fold_to"),
            array("sh_variant_from"), array("sh_variant_to"), consts)


def check_tables(tally):
    """Every code point's class and case folding in the C tables against the reference."""
    try:
        stage1, stage2, ffrom, fto, vfrom, vto, k = parse_c_tables()
    except (OSError, AttributeError) as e:
        tally.fail("src/fingerprint/unicode_tables.h", "cannot read the tables: %r" % e)
        return
    names = {k["SH_CLS_SEP"]: ref.SEPARATOR, k["SH_CLS_WORD"]: ref.WORD, k["SH_CLS_SINGLE"]: ref.SINGLE,
             k["SH_CLS_MARK"]: ref.MARK, k["SH_CLS_IGNORE"]: ref.IGNORE}
    cfold = dict(zip(ffrom, fto))
    cvariant = dict(zip(vfrom, vto))
    t = ref.tables()
    bad_cls, bad_fold, bad_variant = [], [], []
    for cp in range(0x110000):
        v = stage2[stage1[cp >> 8] * 256 + (cp & 0xFF)]
        mine = t.classify(cp)
        if names.get(v & k["SH_CLS_MASK"]) != mine:
            bad_cls.append((cp, names.get(v & k["SH_CLS_MASK"]), mine))
        has_flag = bool(v & k["SH_CLS_FOLD"])
        cf = cfold.get(cp, cp) if has_flag else cp
        if cf != t.case_fold(cp):
            bad_fold.append((cp, cf, t.case_fold(cp)))
        cv = cvariant.get(cp, cp) if v & k["SH_CLS_VARIANT"] else cp
        if cv != t.variant_fold(cp):
            bad_variant.append((cp, cv, t.variant_fold(cp)))
    if bad_cls:
        tally.fail("unicode_tables.h classes", "%d code points differ, e.g. %s" % (
            len(bad_cls), ", ".join("U+%04X C %s ref %s" % x for x in bad_cls[:10])))
    else:
        tally.ok("unicode_tables.h classes: all 1,114,112 code points agree")
    if bad_fold:
        tally.fail("unicode_tables.h case folding", "%d code points differ, e.g. %s" % (
            len(bad_fold), ", ".join("U+%04X C U+%04X ref U+%04X" % x for x in bad_fold[:10])))
    else:
        tally.ok("unicode_tables.h case folding: all code points agree")
    if bad_variant:
        tally.fail("unicode_tables.h Han variants", "%d code points differ, e.g. %s" % (
            len(bad_variant), ", ".join("U+%04X C U+%04X ref U+%04X" % x for x in bad_variant[:10])))
    else:
        tally.ok("unicode_tables.h Han variants: all code points agree (%d fold)" % len(cvariant))


# ---- the pinned vectors: sql/vectors.sql and expected/vectors.out ----

ROW_FP = re.compile(r"^ (\S+)\s+\| (words|chars|mixed)\s+\|\s+(\d+) \|\s+(\d) \| ([0-9a-f]{16}|\(null\))\s*$")
ROW_DEFAULT = re.compile(r"^ (\S+)\s+\| ([0-9a-f]{16}|\(null\))\s+\| ([0-9a-f]{16}|\(null\))\s*$")
ROW_EXTRA = re.compile(r"^ (\w+)\s+\| ([0-9a-f]{16}|\(null\))\s*$")
ROW_FEATURE = re.compile(r"^ ('(?:[^']|'')*')\s*\|\s+(\d+) \| ([0-9a-f]{16})$")
ROW_MH = re.compile(r"^ (\S+)\s+\| (words|chars|mixed)\s+\|\s+(\d+) \| ([0-9a-f]{16}|\(null\))\s*$")
ROW_MH_BIN = re.compile(r"^ (w\d+)\s+\|\s+(\d+) \| ([0-9a-f]{16})$")
ROW_BIG = re.compile(r"^\s+(\d+) \|\s+(\d+) \| ([0-9a-f]{32})$")


def check_pinned(tally):
    sql_path = os.path.join(ROOT, "sql", "vectors.sql")
    out_path = os.path.join(ROOT, "expected", "vectors.out")
    tmp = sql_path + ".check"
    write_sql(tmp)
    try:
        with open(tmp, encoding="utf-8") as f:
            want = f.read()
    finally:
        os.unlink(tmp)
    try:
        with open(sql_path, encoding="utf-8") as f:
            have = f.read()
    except OSError:
        have = None
    if have != want:
        tally.fail("sql/vectors.sql", "differs from what --write-sql generates from the lists here")
    else:
        tally.ok("sql/vectors.sql holds exactly the documents listed here")
    try:
        with open(out_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        tally.fail("expected/vectors.out", "cannot read: %s" % e)
        return

    def fp(s):
        return None if s == "(null)" else s

    section = None
    fp_rows, default_rows, extra_rows, big_rows = {}, {}, {}, []
    mh_rows, mh_bin_rows = {}, []
    feature_blocks = []
    for line in lines:
        if line.startswith("SELECT d.name, m.mode, m.size, minhash("):
            section = "minhash"
        elif line.startswith("SELECT d.name, m.mode"):
            section = "fp"
        elif line.startswith("SELECT name, simhash(body) AS words_default"):
            section = "default"
        elif line.startswith("SELECT format('%L', feature)"):
            section = "features"
            feature_blocks.append([])
        elif line.startswith("SELECT label, fp AS fingerprint"):
            section = "extra"
        elif line.startswith("SELECT octet_length(body)"):
            section = "big"
        elif line.startswith("SELECT w, (simhash_features(w))"):
            section = "minhash_bins"
        m = None
        if section == "fp" and (m := ROW_FP.match(line)):
            fp_rows[(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))] = fp(m.group(5))
        elif section == "default" and (m := ROW_DEFAULT.match(line)):
            default_rows[m.group(1)] = (fp(m.group(2)), fp(m.group(3)))
        elif section == "extra" and (m := ROW_EXTRA.match(line)):
            extra_rows[m.group(1)] = fp(m.group(2))
        elif section == "features" and (m := ROW_FEATURE.match(line)):
            feature_blocks[-1].append((m.group(1)[1:-1].replace("''", "'"), float(m.group(2)), m.group(3)))
        elif section == "minhash" and (m := ROW_MH.match(line)):
            mh_rows[(m.group(1), m.group(2), int(m.group(3)))] = fp(m.group(4))
        elif section == "minhash_bins" and (m := ROW_MH_BIN.match(line)):
            mh_bin_rows.append((m.group(1), int(m.group(2)), m.group(3)))
        elif section == "big" and (m := ROW_BIG.match(line)):
            big_rows.append((int(m.group(1)), int(m.group(2)), m.group(3)))

    big = _doc("big_mixed_200kb")
    want_big = (len(big.encode()), len(big), hashlib.md5(big.encode()).hexdigest())
    if big_rows != [want_big]:
        tally.fail("pinned: big document", "expected/vectors.out has %r, the generator gives %r"
                   % (big_rows, want_big))
    else:
        tally.ok("pinned: big document is %d bytes, %d code points" % want_big[:2])

    n_before = tally.failed
    for name, body in ALL_DOCS:
        for mode, size, version in MODES:
            key = (name, mode, size, version)
            rfp = ref_result(name, body, mode, size, version)[0]
            if key not in fp_rows:
                tally.fail("pinned: %s %s/%d v%d" % key, "missing from expected/vectors.out")
            elif fp_rows[key] != rfp:
                tally.fail("pinned: %s %s/%d v%d" % key, "expected/vectors.out has %s, reference %s"
                           % (fp_rows[key], rfp))
            else:
                tally.ok("pinned: %s %s/%d v%d = %s" % (key + (rfp,)))
    if len(fp_rows) != len(ALL_DOCS) * len(MODES):
        tally.fail("pinned", "expected/vectors.out has %d fingerprint rows, want %d"
                   % (len(fp_rows), len(ALL_DOCS) * len(MODES)))
    for name, body in DOCS[:12]:
        want = (ref.fingerprint_text(body), ref.fingerprint_text(body, "chars"))
        if default_rows.get(name) != want:
            tally.fail("pinned: defaults of %s" % name, "expected/vectors.out has %r, reference %r"
                       % (default_rows.get(name), want))
        else:
            tally.ok("pinned: defaults of %s" % name)
    for (name, mode, size, version), block in zip(PINNED_FEATURES, feature_blocks + [None] * 9):
        want = ref_result(name, _doc(name), mode, size, version)[1]
        if block != want:
            tally.fail("pinned: features of %s %s/%d v%d" % (name, mode, size, version),
                       diff_features(want, block or []))
        else:
            tally.ok("pinned: features of %s %s/%d v%d (%d rows)" % (name, mode, size, version, len(want)))
    pg_extra = None
    for label, expr, spec in EXTRAS:
        tsv = None
        if not callable(spec):
            if pg_extra is None:
                pg_extra = extras_pg()
            tsv = pg_extra[label][1]
        rfp = extra_reference(spec, tsv)
        if label not in extra_rows:
            tally.fail("pinned: %s" % label, "missing from expected/vectors.out")
        elif extra_rows[label] != rfp:
            tally.fail("pinned: %s" % label, "expected/vectors.out has %s, reference %s"
                       % (extra_rows[label], rfp))
        else:
            tally.ok("pinned: %s = %s" % (label, rfp))
    for name, body in ALL_DOCS:
        for mode, size in MINHASH_MODES:
            key = (name, mode, size)
            rmh = ref_minhash(name, body, mode, size)
            if mh_rows.get(key, "missing") != rmh:
                tally.fail("pinned: minhash %s %s/%d" % key, "expected/vectors.out has %s, reference %s"
                           % (mh_rows.get(key, "nothing"), rmh))
            else:
                tally.ok("pinned: minhash %s %s/%d = %s" % (key + (rmh,)))
    if len(mh_rows) != len(ALL_DOCS) * len(MINHASH_MODES):
        tally.fail("pinned", "expected/vectors.out has %d minhash rows, want %d"
                   % (len(mh_rows), len(ALL_DOCS) * len(MINHASH_MODES)))
    want_bins = [(w, b, ref.minhash_text(w)) for b, w in enumerate(minhash_bin_words())]
    if mh_bin_rows != want_bins:
        tally.fail("pinned: minhash of one-word documents, one per bin",
                   "expected/vectors.out differs from the reference: %s"
                   % [(a, b) for a, b in zip(mh_bin_rows, want_bins) if a != b][:4])
    else:
        tally.ok("pinned: minhash of 64 one-word documents, one per bin")
    bound = ref.minhash_probe_bound()
    if bound != 502:
        tally.fail("minhash densification bound", "every bin reaches every bin within %d probes; "
                   "the spec and src/fingerprint/minhash.c say 502" % bound)
    else:
        tally.ok("minhash densification: every bin's probes reach every bin within 502")
    return tally.failed == n_before


def check_unicode_versions(tally):
    """The reference normalises with Python's unicodedata, which must hold the Unicode
    version the specifications pin NFKC to (14.0: Python 3.11); the classes and folding
    come from the 15.0 data files."""
    if unicodedata.unidata_version != "14.0.0":
        tally.fail("reference", "Python's unicodedata is Unicode %s; the specifications pin NFKC "
                   "to 14.0.0 (run with Debian 12's /usr/bin/python3, 3.11)"
                   % unicodedata.unidata_version)
    else:
        tally.ok("reference NFKC is Unicode 14.0.0, as the specifications pin it")


def check_segmentation(tally):
    """The SEGMENTATION_CASES against the spec (whole-text NFKC), words/1, words/2 and
    chars/3: segmenting must not be visible."""
    global MODES
    saved, MODES = MODES, [("words", 1, 2), ("words", 2, 1), ("chars", 3, 2)]
    try:
        pg = pg_results(SEGMENTATION_CASES)
        for name, body in SEGMENTATION_CASES:
            for mode, size, version in MODES:
                pfp, pfl = pg[(name, mode, size, version)][:2]
                for segmented in (False,):
                    rfp = ref.fingerprint_text(body, mode, size, segmented, version)
                    occ = ref.text_features(body, mode, size, segmented, version)
                    rfl = [(f, float(c), "%016x" % ref.feature_hash(f)) for f, c in ref.feature_list(occ, version)]
                    what = "%s %s/%d v%d against whole-text NFKC" % (name, mode, size, version)
                    if (rfp, rfl) == (pfp, pfl):
                        tally.ok("%s = %s" % (what, rfp))
                    else:
                        tally.fail(what, "fingerprint: reference %s, postgres %s\n%s"
                                   % (rfp, pfp, diff_features(rfl, pfl)))
    finally:
        MODES = saved


def main():
    args = sys.argv[1:]
    if "--write-sql" in args:
        write_sql(os.path.join(ROOT, "sql", "vectors.sql"))
        print("wrote sql/vectors.sql (%d documents)" % len(ALL_DOCS))
        return 0
    tally = Tally("-v" in args)
    if "--segmentation" in args:
        check_segmentation(tally)
        print("vectors: %d passed, %d failed" % (tally.passed, tally.failed))
        return 1 if tally.failed else 0
    global CHECK_DB
    psql("DROP DATABASE IF EXISTS simhash_vectors;\n"
         "CREATE DATABASE simhash_vectors TEMPLATE template0;\n")
    CHECK_DB = "simhash_vectors"
    try:
        run_checks(tally)
    finally:
        CHECK_DB = None
        psql("DROP DATABASE IF EXISTS simhash_vectors;\n")
    print("vectors: %d passed, %d failed" % (tally.passed, tally.failed))
    return 1 if tally.failed else 0


def run_checks(tally):
    check_unicode_versions(tally)
    check_tables(tally)
    check_docs(tally, ALL_DOCS)
    check_docs(tally, random_documents())
    saved = MODES[:]
    MODES[:] = [("chars", 1, 2), ("words", 1, 1)]
    check_docs(tally, code_point_sweep())
    MODES[:] = saved
    check_malformed(tally)
    check_extras(tally)
    check_pinned(tally)
    # long runs without ASCII: segmenting must still equal NFKC of the whole text
    check_segmentation(tally)


if __name__ == "__main__":
    sys.exit(main())
