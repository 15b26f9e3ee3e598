#!/usr/bin/env python3
"""Generate src/nfkc_tables.h: the Unicode NFKC data the simhash tokeniser
normalises with (src/nfkc.c), frozen at one Unicode version.

Why: the fingerprint specifications normalise text with NFKC. Until extension
0.3.0 the tokeniser used the server's own normaliser, whose Unicode version
follows the PostgreSQL major version (14.0 in 15, 15.1 in 17, 16.0 in 18): a
text with characters assigned after 14.0 got another fingerprint after
pg_upgrade. These tables pin NFKC to Unicode 14.0, the version PostgreSQL 15
(and so every fingerprint stored until then on it) used.

Derivation: Debian's unicode-data holds one version (15.0). The normalisation
data of the characters assigned in an earlier version never changes (Unicode's
normalization stability policy: decomposition mappings, canonical combining
classes of assigned characters and composition exclusions are frozen), so the
data of version V is the newer data restricted to the code points DerivedAge.txt
says were assigned in V or before; every later code point is treated as
unassigned (combining class 0, no decomposition, never composed).

Input: /usr/share/unicode (UnicodeData.txt, DerivedAge.txt,
DerivedNormalizationProps.txt).
Usage: tools/gen_nfkc_tables.py [UNICODE_DIR [VERSION]] > src/nfkc_tables.h
       (VERSION defaults to 14.0)
"""
import os
import sys

UDIR = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
PIN = tuple(int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "14.0").split("."))
MAXCP = 0x110000
SBASE, LBASE, VBASE, TBASE = 0xAC00, 0x1100, 0x1161, 0x11A7
SCOUNT = 11172

# quick check values (NFKC_QC) in the record
QC_YES, QC_NO, QC_MAYBE = 0, 1, 2


def data_lines(name):
    with open(os.path.join(UDIR, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            r = fields[0].split("..")
            a = int(r[0], 16)
            b = int(r[1], 16) if len(r) > 1 else a
            yield a, b, fields[1:]


def data_version():
    with open(os.path.join(UDIR, "DerivedAge.txt"), encoding="utf-8") as f:
        return f.readline().strip().lstrip("# ").replace("DerivedAge-", "").replace(".txt", "")


def main():
    assigned = bytearray(MAXCP)
    for a, b, f in data_lines("DerivedAge.txt"):
        if tuple(int(x) for x in f[0].split(".")) <= PIN:
            for c in range(a, b + 1):
                assigned[c] = 1

    ccc = {}
    decomp = {}                 # cp -> (is_compat, [cps])
    with open(os.path.join(UDIR, "UnicodeData.txt"), encoding="utf-8") as f:
        for line in f:
            p = line.split(";")
            cp = int(p[0], 16)
            if not assigned[cp]:
                continue
            if int(p[3]):
                ccc[cp] = int(p[3])
            if p[5]:
                parts = p[5].split()
                compat = parts[0].startswith("<")
                if compat:
                    parts = parts[1:]
                decomp[cp] = (compat, [int(x, 16) for x in parts])
    for cp, (_, d) in decomp.items():
        assert all(assigned[x] for x in d), hex(cp)

    exclusions = set()
    qc = {}
    for a, b, f in data_lines("DerivedNormalizationProps.txt"):
        if f[0] == "Full_Composition_Exclusion":
            exclusions.update(c for c in range(a, b + 1) if assigned[c])
        elif f[0] == "NFKC_QC":
            v = QC_NO if f[1] == "N" else QC_MAYBE
            for c in range(a, b + 1):
                if assigned[c]:
                    qc[c] = v

    def full(cp):
        """The full compatibility decomposition (NFKD before reordering)."""
        if cp not in decomp:
            return [cp]
        out = []
        for x in decomp[cp][1]:
            out.extend(full(x))
        return out

    # canonical compositions: primary composites with a canonical decomposition of two
    pairs = []
    for cp, (compat, d) in decomp.items():
        if compat or cp in exclusions:
            continue
        assert len(d) == 2, hex(cp)      # singletons are excluded
        pairs.append(((d[0] << 21) | d[1], cp))
    pairs.sort()

    # records: (ccc, qc, offset into the pool, length); record 0 is "nothing"
    pool = []
    records = [(0, QC_YES, 0, 0)]
    rec_of = {}
    index = [0] * MAXCP
    for cp in range(MAXCP):
        if SBASE <= cp < SBASE + SCOUNT:
            continue            # Hangul syllables: algorithmic
        c = ccc.get(cp, 0)
        q = qc.get(cp, QC_YES)
        d = full(cp) if cp in decomp else None
        if c == 0 and q == QC_YES and d is None:
            continue
        if d is None:
            key = (c, q, 0, 0)
            if key not in rec_of:
                rec_of[key] = len(records)
                records.append(key)
            index[cp] = rec_of[key]
        else:
            index[cp] = len(records)
            records.append((c, q, len(pool), len(d)))
            pool.extend(d)
    assert len(records) < 65536 and len(pool) < 65536
    assert max(r[3] for r in records) < 256

    blocks = {}
    stage1 = []
    stage2 = []
    for hi in range(MAXCP >> 8):
        blk = tuple(index[hi << 8:(hi + 1) << 8])
        if blk not in blocks:
            blocks[blk] = len(blocks)
            stage2.append(blk)
        stage1.append(blocks[blk])

    ver = "%d.%d" % PIN
    out = sys.stdout
    out.write("/*\n * nfkc_tables.h\n *\t\tUnicode %s NFKC data for the simhash tokeniser's normaliser (nfkc.c).\n *\n" % ver)
    out.write(" * GENERATED by tools/gen_nfkc_tables.py from Unicode %s data (Debian package\n" % data_version())
    out.write(" * unicode-data), restricted to the code points assigned in Unicode %s. Do not\n" % ver)
    out.write(" * edit by hand. Part of the fingerprint specification: changing these tables\n")
    out.write(" * changes fingerprints.\n */\n")
    out.write("#ifndef SIMHASH_NFKC_TABLES_H\n#define SIMHASH_NFKC_TABLES_H\n\n")
    out.write('#define SH_NFKC_UNICODE_VERSION "%s"\n\n' % ver)
    out.write("#define SH_NFKC_QC_YES\t%d\n#define SH_NFKC_QC_NO\t%d\n#define SH_NFKC_QC_MAYBE\t%d\n\n"
              % (QC_YES, QC_NO, QC_MAYBE))
    out.write("/* A code point's normalisation data; record 0: combining class 0, quick check\n"
              " * yes, no decomposition. */\n")
    out.write("typedef struct ShNfkcRecord\n{\n\tuint8\t\tccc;\t\t\t/* canonical combining class */\n"
              "\tuint8\t\tqc;\t\t\t\t/* NFKC_QC: SH_NFKC_QC_* */\n"
              "\tuint8\t\tdecomp_len;\t\t/* 0: none */\n"
              "\tuint16\t\tdecomp_off;\t\t/* full decomposition in sh_nfkc_pool */\n"
              "} ShNfkcRecord;\n\n")
    out.write("static const ShNfkcRecord sh_nfkc_records[%d] = {\n" % len(records))
    for i in range(0, len(records), 4):
        out.write("\t" + " ".join("{%d, %d, %d, %d}," % (r[0], r[1], r[3], r[2]) for r in records[i:i + 4]) + "\n")
    out.write("};\n\n")
    out.write("/* Full compatibility decompositions (recursively expanded, not reordered). */\n")
    out.write("static const uint32 sh_nfkc_pool[%d] = {\n" % len(pool))
    for i in range(0, len(pool), 8):
        out.write("\t" + ", ".join("0x%05X" % x for x in pool[i:i + 8]) + ",\n")
    out.write("};\n\n")
    out.write("/* Two-stage index: sh_nfkc_stage2[sh_nfkc_stage1[c >> 8]][c & 255] is c's record. */\n")
    out.write("static const uint16 sh_nfkc_stage1[%d] = {\n" % len(stage1))
    for i in range(0, len(stage1), 16):
        out.write("\t" + ", ".join(str(x) for x in stage1[i:i + 16]) + ",\n")
    out.write("};\n\n")
    out.write("static const uint16 sh_nfkc_stage2[%d][256] = {\n" % len(stage2))
    for blk in stage2:
        out.write("\t{\n")
        for i in range(0, 256, 16):
            out.write("\t\t" + ",".join(str(x) for x in blk[i:i + 16]) + ",\n")
        out.write("\t},\n")
    out.write("};\n\n")
    out.write("/* Canonical compositions: (first << 21 | second) -> composite, sorted by key;\n"
              " * composition exclusions left out. Hangul is algorithmic. */\n")
    out.write("static const uint64 sh_nfkc_comp_key[%d] = {\n" % len(pairs))
    for i in range(0, len(pairs), 6):
        out.write("\t" + ", ".join("UINT64CONST(0x%011X)" % k for k, _ in pairs[i:i + 6]) + ",\n")
    out.write("};\n\nstatic const uint32 sh_nfkc_comp_to[%d] = {\n" % len(pairs))
    for i in range(0, len(pairs), 8):
        out.write("\t" + ", ".join("0x%05X" % v for _, v in pairs[i:i + 8]) + ",\n")
    out.write("};\n\n#endif\t\t\t\t\t\t\t/* SIMHASH_NFKC_TABLES_H */\n")
    sys.stderr.write("nfkc tables (Unicode %s): %d records, %d pool entries, %d blocks, %d compositions\n"
                     % (ver, len(records), len(pool), len(stage2), len(pairs)))


if __name__ == "__main__":
    main()
