#!/usr/bin/env bash
# fingerprint_throughput.sh: single-core throughput of simhash(text) on real documents,
# against md5(text) and length(text) measured in the same run on the same rows.
#
# Usage:
#   bench/fingerprint_throughput.sh [CORPUS_DIR]
#
#   CORPUS_DIR   every regular file under it (recursively) is a document. Default: Debian's
#                /usr/share/doc/*/copyright plus /usr/share/common-licenses/*. Files are read
#                client side (python3), so the server never needs access to them; files that
#                are not valid UTF-8 or contain NUL bytes are skipped.
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE, ...). The
# database needs the simhash extension installed on the server (`make install`); the script
# runs CREATE EXTENSION IF NOT EXISTS simhash and creates (and at exit drops) the table
# bench_docs(id, body) in that database.
#
# Scratch server: with BENCH_START_SERVER=1, or when no server answers at the configured
# connection, the script initdb's (first time) and starts a cluster of its own under
# $BENCH_DIR (default /tmp/simhash-bench-$BENCH_PORT), on port $BENCH_PORT (default 55434,
# Unix socket only), as the postgres OS user when run as root, and stops it at exit. The
# data directory is kept for the next run.
#
# Other settings (environment):
#   BENCH_MIN_MB=50      replicate the corpus until it holds at least this many MB (10^6
#                        bytes) of text, for stable numbers
#   BENCH_RUNS=5         timed runs per function (after one warm-up); the median is reported
#   BENCH_KEEP_TABLE=0   1 keeps bench_docs at exit
#   BENCH_STORAGE=       column storage of body: empty keeps the default (EXTENDED: TOAST
#                        compressed with default_toast_compression); "external" stores the
#                        text uncompressed, so decompression drops out of every timing
#   PG_BINDIR            server binaries for the scratch cluster (default: pg_config --bindir,
#                        else /usr/lib/postgresql/15/bin)
#
# What is measured: for each expression e, `SELECT count(e) FROM bench_docs` (count() of the
# result is the cheapest aggregate that still forces e to be evaluated for every row), timed
# by the server as the "Execution Time" of EXPLAIN (ANALYZE, TIMING OFF), with
# max_parallel_workers_per_gather = 0 (one backend, one core) and jit = off. The functions
# are run round-robin, so drift in machine load spreads over all of them alike.
# Floors: every expression pays for the heap scan, fetching and decompressing the TOASTed
# body and the executor. length(body) shows that floor plus, in a multibyte (UTF-8)
# database, a character count (pg_mbstrlen_with_len, one pg_mblen() call per character,
# about as costly as md5 itself). ascii(body) detoasts the whole body and reads one
# character: the floor alone. "fn MB/s" is the throughput with the ascii(body) time
# subtracted, i.e. of the function itself; it tells how much faster a function could look
# on uncompressed data (see BENCH_STORAGE).
#
# Example: BENCH_START_SERVER=1 bench/fingerprint_throughput.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MIN_MB=${BENCH_MIN_MB:-50}
RUNS=${BENCH_RUNS:-5}
KEEP_TABLE=${BENCH_KEEP_TABLE:-0}
STORAGE=${BENCH_STORAGE:-}
BENCH_PORT=${BENCH_PORT:-55434}
BENCH_DIR=${BENCH_DIR:-/tmp/simhash-bench-$BENCH_PORT}
CORPUS_DIR=${1:-}

if [ -z "${PG_BINDIR:-}" ]; then
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
fi

die() { echo "fingerprint_throughput: $*" >&2; exit 1; }
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"
[[ $MIN_MB =~ ^[0-9]+([.][0-9]+)?$ ]] || die "BENCH_MIN_MB must be a number"
[ -z "$CORPUS_DIR" ] || [ -d "$CORPUS_DIR" ] || die "$CORPUS_DIR is not a directory"
[[ $STORAGE =~ ^(|plain|main|external|extended)$ ]] || die "BENCH_STORAGE must be plain, main, external or extended"
command -v python3 >/dev/null || die "python3 is needed"
command -v psql >/dev/null || die "psql is needed"

# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------
STARTED=0
TMPFILES=()
as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cleanup() {
	local rc=$?
	[ ${#TMPFILES[@]} -eq 0 ] || rm -f "${TMPFILES[@]}"
	if [ "$KEEP_TABLE" != 1 ] && [ -n "${DB_READY:-}" ]; then
		psql -X -q -c "DROP TABLE IF EXISTS bench_docs" >/dev/null 2>&1 || true
	fi
	if [ "$STARTED" = 1 ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -m fast stop >/dev/null 2>&1 || true
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_server() {
	local owner=postgres
	[ "$(id -u)" = 0 ] || owner=$(id -un)
	mkdir -p "$BENCH_DIR"
	if [ "$(id -u)" = 0 ]; then chown postgres "$BENCH_DIR"; fi
	if [ ! -f "$BENCH_DIR/data/PG_VERSION" ]; then
		echo "creating a scratch cluster in $BENCH_DIR/data" >&2
		as_owner "$PG_BINDIR/initdb" -D "$BENCH_DIR/data" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	fi
	if as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" status >/dev/null 2>&1; then
		die "a server is already running in $BENCH_DIR/data; stop it or set BENCH_DIR/BENCH_PORT"
	fi
	echo "starting a scratch server on port $BENCH_PORT (socket in $BENCH_DIR)" >&2
	as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w \
		-o "-p $BENCH_PORT -k $BENCH_DIR -c listen_addresses='' -c shared_buffers=256MB" \
		start >/dev/null
	STARTED=1
	export PGHOST=$BENCH_DIR PGPORT=$BENCH_PORT PGUSER=$owner
	psql -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'simhash_bench'" |
		grep -q 1 || psql -X -q -d postgres -c "CREATE DATABASE simhash_bench" >/dev/null
	export PGDATABASE=simhash_bench
}

if [ "${BENCH_START_SERVER:-0}" = 1 ]; then
	start_server
elif ! "$PG_BINDIR/pg_isready" -q >/dev/null 2>&1; then
	echo "no server reachable with the current PG* settings; starting a scratch one" >&2
	start_server
fi

psql_b() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_b -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS simhash" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed? cd $ROOT && make && make install)"
SCHEMA=$(psql_b -tAc "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'simhash'")

# ---------------------------------------------------------------------------
# corpus
# ---------------------------------------------------------------------------
DB_READY=1
psql_b <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_docs;
CREATE TABLE bench_docs (id bigint GENERATED ALWAYS AS IDENTITY, body text NOT NULL);
SQL
if [ -n "$STORAGE" ]; then
	psql_b -c "ALTER TABLE bench_docs ALTER COLUMN body SET STORAGE $STORAGE" >/dev/null
fi

# COPY text format rows (one column: body) for every NUL-separated path on stdin.
corpus_copy() {
	python3 -c '
import sys
def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
files = skipped = 0
for path in sys.stdin.buffer.read().split(b"\0"):
    if not path:
        continue
    try:
        with open(path, "rb") as f:
            body = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        skipped += 1
        continue
    if "\0" in body:
        skipped += 1
        continue
    sys.stdout.write(esc(body) + "\n")
    files += 1
print(f"read {files} files ({skipped} skipped: unreadable, not UTF-8 or binary)", file=sys.stderr)
'
}

CORPUS_DESC="/usr/share/doc/*/copyright + /usr/share/common-licenses/*"
[ -z "$CORPUS_DIR" ] || CORPUS_DESC="every regular file under $CORPUS_DIR"
if [ -n "$CORPUS_DIR" ]; then
	find "$CORPUS_DIR" -type f -print0
else
	{ find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f -print0
	  find /usr/share/common-licenses -maxdepth 1 -type f -print0; }
fi | corpus_copy | psql_b -c "\\copy bench_docs (body) FROM STDIN"

read -r SRC_ROWS SRC_BYTES < <(psql_b -tAF ' ' -c "SELECT count(*), coalesce(sum(octet_length(body)), 0) FROM bench_docs")
[ "$SRC_BYTES" -gt 0 ] || die "the corpus is empty"
COPIES=$(python3 -c "import math; print(max(1, math.ceil($MIN_MB * 1e6 / $SRC_BYTES)))")
if [ "$COPIES" -gt 1 ]; then
	psql_b -c "INSERT INTO bench_docs (body) SELECT d.body FROM bench_docs d, generate_series(2, $COPIES) g ORDER BY g, d.id" >/dev/null
fi
psql_b -c "VACUUM (FREEZE, ANALYZE) bench_docs" >/dev/null
read -r ROWS BYTES CHARS DISK < <(psql_b -tAF ' ' -c "SELECT count(*), sum(octet_length(body)), sum(length(body)), pg_total_relation_size('bench_docs') FROM bench_docs")

# ---------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------
# name|expression. md5 is the baseline; "simhash(body)" is the default the final line reports.
FUNCS=(
	"md5(body)|md5(body)"
	"length(body)|length(body)"
	"ascii(body) [detoast]|ascii(body)"
	"simhash(body)|$SCHEMA.simhash(body)"
	"simhash(body, 'words', 2, 1) [spec v1]|$SCHEMA.simhash(body, 'words', 2, 1)"
	"simhash(body, 'words', 1)|$SCHEMA.simhash(body, 'words', 1)"
	"simhash(body, 'words', 3)|$SCHEMA.simhash(body, 'words', 3)"
	"simhash(body, 'chars', 3)|$SCHEMA.simhash(body, 'chars', 3)"
	"simhash(body, 'chars', 5)|$SCHEMA.simhash(body, 'chars', 5)"
)
# the MinHash sketch (0.3.0 on)
if [ "$(psql_b -tAc "SELECT count(*) FROM pg_proc WHERE proname = 'minhash'")" != 0 ]; then
	FUNCS+=("minhash(body)|$SCHEMA.minhash(body)")
fi
# verification (0.3.0 on): one simhash_jaccard call reads two documents, here the row twice
if [ "$(psql_b -tAc "SELECT count(*) FROM pg_proc WHERE proname = 'simhash_jaccard'")" != 0 ]; then
	FUNCS+=("simhash_jaccard(body, body) [verify a pair]|$SCHEMA.simhash_jaccard(body, body)")
fi
NAMES=$(for f in "${FUNCS[@]}"; do echo "${f%%|*}"; done)

SQLFILE=$(mktemp)
OUTFILE=$(mktemp)
TMPFILES+=("$SQLFILE" "$OUTFILE")
{
	echo "SET max_parallel_workers_per_gather = 0;"
	echo "SET jit = off;"
	for round in $(seq 0 "$RUNS"); do		# round 0 is the warm-up
		for i in "${!FUNCS[@]}"; do
			f=${FUNCS[$i]}
			echo "\\echo @@ $round $i"
			echo "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) SELECT count(${f#*|}) FROM bench_docs;"
		done
	done
} >"$SQLFILE"

# the library the server loads, when it is on this machine: say which build was measured,
# and notice a `make install` during the run (the session keeps the library it loaded first)
# (the pg_config of PG_BINDIR, the server's, before the one on PATH)
PGCONFIG=pg_config
[ -x "$PG_BINDIR/pg_config" ] && PGCONFIG=$PG_BINDIR/pg_config
LIB="$("$PGCONFIG" --pkglibdir 2>/dev/null || echo /nonexistent)/simhash.so"
lib_id() { [ -f "$LIB" ] && echo "$(date -u -r "$LIB" '+%Y-%m-%d %H:%M:%S UTC'), sha256 $(sha256sum "$LIB" | cut -c1-12)"; }
LIB_BEFORE=$(lib_id || true)

echo "timing ${#FUNCS[@]} expressions: 1 warm-up + $RUNS runs each over $ROWS rows ..." >&2
psql_b -tA -f "$SQLFILE" >"$OUTFILE"

CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
[ -n "$CPU" ] || CPU=$(uname -m)
PGVER=$(psql_b -tAc "SELECT version()")
EXTVER=$(psql_b -tAc "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")
STORAGE_DESC=$(psql_b -tAc "SELECT CASE a.attstorage WHEN 'x' THEN 'extended, ' || current_setting('default_toast_compression') WHEN 'e' THEN 'external (uncompressed)' WHEN 'm' THEN 'main' ELSE 'plain' END FROM pg_attribute a WHERE a.attrelid = 'bench_docs'::regclass AND a.attname = 'body'")
LIBDESC="(not on this machine)"
if [ -n "$LIB_BEFORE" ]; then
	LIBDESC="$LIB, $LIB_BEFORE"
	if [ "$(lib_id || true)" != "$LIB_BEFORE" ]; then
		LIBDESC="$LIBDESC (WARNING: replaced during the run)"
	fi
fi
GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null)" ]; then GITREV="$GITREV+dirty(src)"; fi

export BENCH_OUT=$OUTFILE BENCH_BYTES=$BYTES BENCH_ROWS=$ROWS BENCH_CHARS=$CHARS BENCH_DISK=$DISK \
	BENCH_SRC_ROWS=$SRC_ROWS BENCH_SRC_BYTES=$SRC_BYTES BENCH_COPIES=$COPIES BENCH_RUNS_N=$RUNS \
	BENCH_STORAGE_DESC=$STORAGE_DESC BENCH_LIB=$LIBDESC BENCH_CPU=$CPU BENCH_PGVER=$PGVER BENCH_EXTVER=$EXTVER BENCH_GITREV=$GITREV \
	BENCH_CORPUS=$CORPUS_DESC BENCH_NAMES=$NAMES BENCH_NCPU=$(nproc 2>/dev/null || echo '?')
python3 - <<'PY'
import os, re, statistics, sys

env = os.environ
names = env["BENCH_NAMES"].split("\n")
times = {}          # name -> [seconds of each timed run]
order = []
cur = None
parallel = False
with open(env["BENCH_OUT"]) as f:
    for line in f:
        line = line.rstrip("\n")
        if line.startswith("@@ "):
            _, rnd, idx = line.split()
            name = names[int(idx)]
            cur = (int(rnd), name)
            if name not in order:
                order.append(name)
                times[name] = []
            continue
        if "Workers Launched" in line or "Gather" in line:
            parallel = True
        m = re.match(r"\s*Execution Time: ([0-9.]+) ms", line)
        if m and cur is not None:
            if cur[0] > 0:
                times[cur[1]].append(float(m.group(1)) / 1000.0)
            cur = None

nbytes = int(env["BENCH_BYTES"])
mb = nbytes / 1e6
med = {n: statistics.median(t) for n, t in times.items() if t}
if "md5(body)" not in med or "simhash(body)" not in med:
    sys.exit("fingerprint_throughput: missing timings; psql output:\n" + open(env["BENCH_OUT"]).read())
FLOOR = "ascii(body) [detoast]"
floor = med.get(FLOOR)

print()
print("simhash fingerprint throughput (single core)")
print(f"  cpu:      {env['BENCH_CPU']} ({env['BENCH_NCPU']} cpus visible; one backend used)")
print(f"  server:   {env['BENCH_PGVER']}")
print(f"  simhash:  extension {env['BENCH_EXTVER']}, checkout {env['BENCH_GITREV']}")
print(f"  library:  {env['BENCH_LIB']}")
print(f"  corpus:   {env['BENCH_CORPUS']}: {env['BENCH_SRC_ROWS']} documents, "
      f"{int(env['BENCH_SRC_BYTES']):,} bytes; x{env['BENCH_COPIES']} copies")
print(f"  table:    {int(env['BENCH_ROWS']):,} rows, {nbytes:,} bytes of text "
      f"({mb:.1f} MB, {int(env['BENCH_CHARS']):,} characters), "
      f"{int(env['BENCH_DISK']) / 1e6:.1f} MB on disk with TOAST; storage {env['BENCH_STORAGE_DESC']}")
print(f"  method:   SELECT count(<expr>) FROM bench_docs; EXPLAIN ANALYZE execution time, "
      f"median of {env['BENCH_RUNS_N']} runs after 1 warm-up;")
print(f"            max_parallel_workers_per_gather = 0, jit = off; MB = 10^6 bytes")
print()
hdr = f"{'function':<26} {'median s':>9} {'MB/s':>8} {'vs md5':>7} {'fn MB/s':>8} {'spread':>7}"
print(hdr)
print("-" * len(hdr))
for n in order:
    if n not in med:
        continue
    t = med[n]
    ratio = med["md5(body)"] / t
    spread = (max(times[n]) - min(times[n])) / t * 100
    if floor is not None and n != FLOOR and t > floor:
        net = f"{mb / (t - floor):8.1f}"
    else:
        net = f"{'-':>8}"
    print(f"{n:<26} {t:9.3f} {mb / t:8.1f} {ratio:7.2f} {net} {spread:6.1f}%")
if parallel:
    print("WARNING: some plans used parallel workers: the figures are not single-core")
print()
print("vs md5: throughput ratio to md5(body) (> 1 is faster than md5). fn MB/s: throughput with")
print("the ascii(body) time (scan + detoast + executor: the floor) subtracted. length(body) counts")
print("characters on top of that floor. spread: (max - min) / median of the timed runs.")
print(f"default simhash / md5 throughput ratio: {med['md5(body)'] / med['simhash(body)']:.2f}")
if "minhash(body)" in med:
    print(f"minhash / md5 throughput ratio: {med['md5(body)'] / med['minhash(body)']:.2f}")
PY
