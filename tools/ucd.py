"""ucd.py: what the Unicode table generators share (tools/gen_unicode_tables.py,
tools/gen_nfkc_tables.py): reading the data files of the Unicode Character
Database, the two-stage lookup table both header files use, and writing C
arrays. Kept in one place so the two generated headers read their data and lay
out their tables the same way.
"""
import os

MAXCP = 0x110000


def ranges(udir, name):
    """Yield (first, last, fields after the first) for each data line of a UCD file."""
    with open(os.path.join(udir, name), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            cps = fields[0].split("..")
            yield int(cps[0], 16), int(cps[-1], 16), fields[1:]


def version(udir):
    """The version of the data: DerivedAge.txt's first line is "# DerivedAge-15.0.0.txt"."""
    with open(os.path.join(udir, "DerivedAge.txt"), encoding="utf-8") as f:
        first = f.readline()
    return first.strip().lstrip("# ").replace("DerivedAge-", "").replace(".txt", "")


def two_stage(values):
    """Split a value per code point into stage1 (one entry per 256 code points: which
    block) and stage2 (the distinct blocks): stage2[stage1[c >> 8]][c & 255] == values[c]."""
    blocks = {}
    stage1 = []
    stage2 = []
    for hi in range(MAXCP >> 8):
        blk = tuple(values[hi << 8:(hi + 1) << 8])
        if blk not in blocks:
            blocks[blk] = len(blocks)
            stage2.append(blk)
        stage1.append(blocks[blk])
    return stage1, stage2


def write_array(out, decl, values, per_line, fmt=str, sep=", "):
    """Write `static const DECL = {...};` with per_line values a line, each through fmt."""
    out.write("static const %s = {\n" % decl)
    for i in range(0, len(values), per_line):
        out.write("\t" + sep.join(fmt(x) for x in values[i:i + per_line]) + ",\n")
    out.write("};\n")


def write_stage2(out, decl, blocks, per_line):
    """Write the blocks of a two-stage table: `static const DECL = {{...}, ...};`."""
    out.write("static const %s = {\n" % decl)
    for blk in blocks:
        out.write("\t{\n")
        for i in range(0, 256, per_line):
            out.write("\t\t" + ",".join(str(x) for x in blk[i:i + per_line]) + ",\n")
        out.write("\t},\n")
    out.write("};\n")


def hex5(x):
    return "0x%05X" % x
