#!/usr/bin/env python3
"""check_meta.py: validate META.json against the PGXN Meta Spec 1.0.0
(https://pgxn.org/spec/, the rules PGXN::Meta::Validator applies), and against the
repository: the version is simhash.control's default_version and the files it
names exist. Exits non-zero, listing every problem, when anything is wrong.

    python3 tools/check_meta.py [META.json]
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Meta Spec 1.0.0, "license"
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
# Semantic Versioning 1.0.0 as PGXN uses it: MAJOR.MINOR.PATCH[prerelease]
SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([a-zA-Z][-0-9A-Za-z]*)?$")
# a version range: "0", a version, or comma-separated operator + version
RANGE_PART = re.compile(r"^\s*(==|!=|>=|<=|>|<)?\s*(\S+)\s*$")
TERM = re.compile(r"^[^\s/\\\x00-\x1f]{2,}$")
TAG = re.compile(r"^[^/\\\x00-\x1f]{1,255}$")
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
TOP = {
    "abstract", "description", "generated_by", "license", "maintainer", "meta-spec", "name",
    "no_index", "prereqs", "provides", "release_status", "resources", "tags", "version",
}
REQUIRED = {"abstract", "license", "maintainer", "meta-spec", "name", "provides", "version"}

problems = []


def bad(msg):
    problems.append(msg)


def custom(key):
    return key.startswith("x_") or key.startswith("X_")


def check_string(where, v):
    if not isinstance(v, str) or not v.strip():
        bad(f"{where}: must be a non-empty string")
        return False
    return True


def check_version(where, v):
    if not isinstance(v, str) or not SEMVER.match(v):
        bad(f"{where}: {v!r} is not a semantic version (MAJOR.MINOR.PATCH)")


def check_range(where, v):
    if v == "0" or v == 0:
        return
    if not isinstance(v, str):
        bad(f"{where}: {v!r} is not a version range")
        return
    for part in v.split(","):
        m = RANGE_PART.match(part)
        if not m or not SEMVER.match(m.group(2)):
            bad(f"{where}: {part.strip()!r} is not a version or an operator and a version")


def check_path(where, v):
    if check_string(where, v):
        if v.startswith("/") or "\\" in v:
            bad(f"{where}: {v!r} must be a relative Unix path")
        elif not os.path.exists(os.path.join(ROOT, v)):
            bad(f"{where}: {v} does not exist in the repository")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "META.json")
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
    if not isinstance(meta, dict):
        bad("the document must be an object")
        meta = {}

    for k in REQUIRED - meta.keys():
        bad(f"{k}: required")
    for k in meta.keys() - TOP:
        if not custom(k):
            bad(f"{k}: not a key of the spec (custom keys start with x_)")

    spec = meta.get("meta-spec")
    if not isinstance(spec, dict) or spec.get("version") != "1.0.0":
        bad("meta-spec: must be an object with version 1.0.0")
    if "name" in meta and not (isinstance(meta["name"], str) and TERM.match(meta["name"])):
        bad(f"name: {meta['name']!r} is not a term (2+ characters, no space, slash or control)")
    if "abstract" in meta:
        check_string("abstract", meta["abstract"])
    if "description" in meta:
        check_string("description", meta["description"])
    if "version" in meta:
        check_version("version", meta["version"])

    m = meta.get("maintainer")
    if isinstance(m, list):
        if not m:
            bad("maintainer: empty list")
        for i, x in enumerate(m):
            check_string(f"maintainer[{i}]", x)
    elif m is not None:
        check_string("maintainer", m)

    lic = meta.get("license")
    if isinstance(lic, str):
        if lic not in LICENSES:
            bad(f"license: {lic!r} is not one of the spec's license strings")
    elif isinstance(lic, list):
        for x in lic:
            if x not in LICENSES:
                bad(f"license: {x!r} is not one of the spec's license strings")
    elif isinstance(lic, dict):
        for k, v in lic.items():
            check_string(f"license.{k}", v)
    elif lic is not None:
        bad("license: must be a string, a list of strings or an object")

    prov = meta.get("provides")
    if prov is not None:
        if not isinstance(prov, dict) or not prov:
            bad("provides: must be a non-empty object")
        else:
            for name, p in prov.items():
                where = f"provides.{name}"
                if not TERM.match(name):
                    bad(f"{where}: the name is not a term")
                if not isinstance(p, dict):
                    bad(f"{where}: must be an object")
                    continue
                for k in ("file", "version"):
                    if k not in p:
                        bad(f"{where}.{k}: required")
                for k in p.keys() - {"file", "version", "abstract", "docfile"}:
                    if not custom(k):
                        bad(f"{where}.{k}: not a key of the spec")
                if "file" in p:
                    check_path(f"{where}.file", p["file"])
                if "docfile" in p:
                    check_path(f"{where}.docfile", p["docfile"])
                if "version" in p:
                    check_version(f"{where}.version", p["version"])
                if "abstract" in p:
                    check_string(f"{where}.abstract", p["abstract"])

    pre = meta.get("prereqs")
    if pre is not None:
        if not isinstance(pre, dict):
            bad("prereqs: must be an object")
        else:
            for phase, rels in pre.items():
                if phase not in PHASES and not custom(phase):
                    bad(f"prereqs.{phase}: not a phase of the spec")
                if not isinstance(rels, dict):
                    bad(f"prereqs.{phase}: must be an object")
                    continue
                for rel, reqs in rels.items():
                    if rel not in RELATIONS and not custom(rel):
                        bad(f"prereqs.{phase}.{rel}: not a relationship of the spec")
                    if not isinstance(reqs, dict):
                        bad(f"prereqs.{phase}.{rel}: must be an object")
                        continue
                    for dep, rng in reqs.items():
                        check_range(f"prereqs.{phase}.{rel}.{dep}", rng)

    tags = meta.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not tags:
            bad("tags: must be a non-empty list")
        else:
            for t in tags:
                if not isinstance(t, str) or not TAG.match(t):
                    bad(f"tags: {t!r} is not a tag")
    rs = meta.get("release_status")
    if rs is not None and rs not in ("stable", "testing", "unstable"):
        bad(f"release_status: {rs!r} must be stable, testing or unstable")

    # the repository's own facts
    control = open(os.path.join(ROOT, "simhash.control"), encoding="utf-8").read()
    dv = re.search(r"default_version\s*=\s*'([^']+)'", control)
    if not dv:
        bad("simhash.control has no default_version")
    else:
        if meta.get("version") != dv.group(1):
            bad(f"version: {meta.get('version')} is not simhash.control's default_version {dv.group(1)}")
        pv = (prov or {}).get("simhash", {}).get("version")
        if pv != dv.group(1):
            bad(f"provides.simhash.version: {pv} is not simhash.control's default_version {dv.group(1)}")

    if problems:
        print(f"{path}: {len(problems)} problem(s)")
        for p in problems:
            print("  " + p)
        return 1
    print(f"{path}: valid PGXN Meta Spec 1.0.0, version {meta['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
