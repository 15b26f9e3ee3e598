#!/usr/bin/env python3
"""Generate src/fingerprint/unicode_tables.h: the frozen character classes, simple case
folding and (specification version 2) Han variant folding that the simhash
tokeniser uses.

The tables are generated once from a named Unicode version and committed, so a
fingerprint never changes because the build machine has newer Unicode data.
Regenerating them with another Unicode version changes fingerprints of text
that contains the affected characters: that is a new tokeniser version, never
an in-place update.

Input: Debian's unicode-data package (/usr/share/unicode).
Usage: tools/gen_unicode_tables.py [UNICODE_DIR] > src/fingerprint/unicode_tables.h
"""
import bz2
import collections
import sys
import os

from ucd import MAXCP, hex5, two_stage, write_array, write_stage2
import ucd

UDIR = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"

# Character classes (low 3 bits of a table entry); see doc/specification.md.
SEP, WORD, SINGLE, MARK, IGNORE = 0, 1, 2, 3, 4
FOLD_FLAG = 0x80
VARIANT_FLAG = 0x40

# Specification version 2 folds Han variant characters: the classes are the
# connected components of these Unihan_Variants.txt relations, and every
# member of a class maps to the class's smallest code point. kSemanticVariant
# is taken only where its source is kHKGlyph (the Hong Kong glyph standard's
# "same character, different glyph" forms such as 為/爲, 裡/裏, 峰/峯).
VARIANT_FIELDS = ("kTraditionalVariant", "kSimplifiedVariant", "kZVariant")
VARIANT_SEMANTIC_SOURCE = "kHKGlyph"

# Scripts written without spaces between words: each letter is a token.
UNSEGMENTED = {
    "Han", "Hiragana", "Katakana", "Bopomofo", "Yi", "Thai", "Lao", "Khmer",
    "Myanmar", "Tai_Le", "New_Tai_Lue", "Tai_Tham", "Tai_Viet", "Nushu",
    "Tangut", "Khitan_Small_Script",
}


def ranges(path):
    return ucd.ranges(UDIR, path)


def variant_classes():
    """Map each Han variant to its class representative (only those != self)."""
    edges = collections.defaultdict(set)
    with bz2.open(os.path.join(UDIR, "Unihan_Variants.txt.bz2"), "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cp, field, value = line.rstrip("\n").split("\t")
            if field not in VARIANT_FIELDS and field != "kSemanticVariant":
                continue
            a = int(cp[2:], 16)
            for v in value.split():
                target, _, sources = v.partition("<")
                if field == "kSemanticVariant" and VARIANT_SEMANTIC_SOURCE not in sources.split(","):
                    continue
                b = int(target[2:], 16)
                if a != b:
                    edges[a].add(b)
                    edges[b].add(a)
    rep = {}
    for start in sorted(edges):
        if start in rep:
            continue
        comp, stack = {start}, [start]
        while stack:
            for y in edges[stack.pop()]:
                if y not in comp:
                    comp.add(y)
                    stack.append(y)
        low = min(comp)
        for c in comp:
            rep[c] = low
    return {c: r for c, r in rep.items() if c != r}


def main():
    gc = ["Cn"] * MAXCP
    with open(os.path.join(UDIR, "UnicodeData.txt"), encoding="utf-8") as f:
        pending = None
        for line in f:
            p = line.split(";")
            cp = int(p[0], 16)
            name, cat = p[1], p[2]
            if name.endswith(", First>"):
                pending = cp
                continue
            if name.endswith(", Last>"):
                for c in range(pending, cp + 1):
                    gc[c] = cat
                pending = None
                continue
            gc[cp] = cat

    script = ["Unknown"] * MAXCP
    for a, b, f in ranges("Scripts.txt"):
        for c in range(a, b + 1):
            script[c] = f[0]
    scx = {}
    for a, b, f in ranges("ScriptExtensions.txt"):
        for c in range(a, b + 1):
            scx[c] = set(f[0].split())
    # ScriptExtensions.txt uses short names (Hira); map them to long names.
    short2long = {}
    for a_line in open(os.path.join(UDIR, "PropertyValueAliases.txt"), encoding="utf-8"):
        parts = [x.strip() for x in a_line.split("#", 1)[0].split(";")]
        if len(parts) >= 3 and parts[0] == "sc":
            short2long[parts[1]] = parts[2]

    ignorable = [False] * MAXCP
    for a, b, f in ranges("DerivedCoreProperties.txt"):
        if f[0] == "Default_Ignorable_Code_Point":
            for c in range(a, b + 1):
                ignorable[c] = True

    fold = {}
    for a, b, f in ranges("CaseFolding.txt"):
        if f[0] in ("C", "S"):
            fold[a] = int(f[1], 16)

    cls = bytearray(MAXCP)
    for c in range(MAXCP):
        g = gc[c]
        scripts = {script[c]}
        if c in scx:
            scripts |= {short2long.get(s, s) for s in scx[c]}
        if ignorable[c]:
            k = IGNORE
        elif g[0] == "M":
            k = MARK
        elif g[0] in "LN":
            k = SINGLE if scripts & UNSEGMENTED else WORD
        elif g == "So":
            k = SINGLE
        else:
            k = SEP
        if c in fold:
            k |= FOLD_FLAG
        cls[c] = k

    variants = variant_classes()
    for c, r in variants.items():
        # a variant and its representative are letters of the same class, with
        # no case folding: folding one into the other never changes a token's
        # boundaries, only its bytes
        assert cls[c] == SINGLE and cls[r] & 0x07 == SINGLE, (hex(c), hex(r))
        cls[c] |= VARIANT_FLAG

    # Two-stage table: stage1 maps c >> 8 to a 256-entry block in stage2.
    stage1, stage2 = two_stage(cls)

    ver = ucd.version(UDIR)
    out = sys.stdout
    out.write("/*\n * unicode_tables.h\n *\t\tCharacter classes, simple case folding and Han variant folding for the\n *\t\tsimhash tokeniser.\n *\n")
    out.write(" * GENERATED by tools/gen_unicode_tables.py from Unicode %s data\n" % ver)
    out.write(" * (Debian package unicode-data). Do not edit by hand. These tables are part\n")
    out.write(" * of the fingerprint specification: changing them changes fingerprints.\n */\n")
    out.write("#ifndef SIMHASH_UNICODE_TABLES_H\n#define SIMHASH_UNICODE_TABLES_H\n\n")
    out.write('#define SH_UNICODE_VERSION "%s"\n\n' % ver)
    out.write("#define SH_CLS_SEP\t\t%d\n#define SH_CLS_WORD\t\t%d\n#define SH_CLS_SINGLE\t%d\n"
              "#define SH_CLS_MARK\t\t%d\n#define SH_CLS_IGNORE\t%d\n#define SH_CLS_MASK\t\t0x07\n"
              "#define SH_CLS_FOLD\t\t0x%02x\n#define SH_CLS_VARIANT\t0x%02x\n\n"
              % (SEP, WORD, SINGLE, MARK, IGNORE, FOLD_FLAG, VARIANT_FLAG))
    write_array(out, "uint16 sh_cls_stage1[%d]" % len(stage1), stage1, 16)
    out.write("\n")
    write_stage2(out, "uint8 sh_cls_stage2[%d][256]" % len(stage2), stage2, 32)
    out.write("\n")
    items = sorted(fold.items())
    out.write("/* Simple case folding (CaseFolding.txt status C and S), sorted by code point. */\n")
    write_array(out, "uint32 sh_fold_from[%d]" % len(items), [a for a, _ in items], 8, hex5)
    out.write("\n")
    write_array(out, "uint32 sh_fold_to[%d]" % len(items), [b for _, b in items], 8, hex5)
    out.write("\n")
    items = sorted(variants.items())
    out.write("/*\n * Han variant folding (specification version 2), sorted by code point: the\n"
              " * union of Unihan_Variants.txt's %s and\n"
              " * kSemanticVariant from %s; each class maps to its smallest code point.\n */\n"
              % (", ".join(VARIANT_FIELDS), VARIANT_SEMANTIC_SOURCE))
    write_array(out, "uint32 sh_variant_from[%d]" % len(items), [a for a, _ in items], 8, hex5)
    out.write("\n")
    write_array(out, "uint32 sh_variant_to[%d]" % len(items), [b for _, b in items], 8, hex5)
    out.write("\n#endif\t\t\t\t\t\t\t/* SIMHASH_UNICODE_TABLES_H */\n")

if __name__ == "__main__":
    main()
