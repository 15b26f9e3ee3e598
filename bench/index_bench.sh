#!/usr/bin/env bash
# index_bench.sh: the simhash index access method against what a user would do without it:
# a sequential scan with the same C distance function, four btree expression indexes on the
# 16-bit blocks (OR of block equalities plus a distance filter), and a GIN index over an
# int4[] of block keys; plus build time, index size and insert throughput against a btree
# on the fingerprint column; and, beside each simhash-index latency, its scan floor: a C
# popcount scan of the same codes for the same queries. Everything is measured in one run on
# the same data.
#
# Usage:
#   bench/index_bench.sh [ROWS ...]
#
#   ROWS   table sizes, default "1000000 10000000". `bench/index_bench.sh 1000000` is a
#          quick run (about 9 minutes); the default takes about 30 minutes on 2 cores.
#          Radius 12 (in the default radii since it may exceed 7) adds about 1 of those
#          minutes at 1M rows and about 2 at 10M: see BENCH_RADII.
#
# Data sets, each generated in SQL from a fixed seed (setseed), so every run sees the same rows:
#   uniform  random 64-bit fingerprints (two random() calls of 32 bits each)
#   skewed   50,000 centres (hashint8extended(c, 42), c = 0..49999); each row is a random
#            centre with 0..6 bits flipped (positions drawn with replacement, so a few rows
#            get fewer); then 20% of the rows get their top 16 bits cleared
#            (fp & '0000ffffffffffff'), so one 16-bit block value holds a fifth of the table
#
# Queries: per data set and radius (BENCH_RADII), BENCH_QUERIES (200) fingerprints, each a
# random row of the table with k = 0..r random bits flipped, so every query has at least one
# match (bench/data/queries.sql draws six bit positions per query, so above r = 6 a query is
# still at most 6 bits from its row: at r = 12 about half of them have k >= 6).
# Latency is measured on the server: a plpgsql function runs each query with EXECUTE ...
# USING (so it includes planning, as a client's query would) between two clock_timestamp()
# calls, after 5 untimed warm-up queries. All of it runs in one session per data set, in
# BENCH_PASSES (3) rounds over every radius and variant; a query's latency is the fastest of
# its rounds (a moment of load on the machine hits one run, not all; and the first round
# maps the shared_buffers pages into the backend, see measure_all). Median and p95 are
# percentile_cont over the queries. The planning time of each query (EXPLAIN without
# ANALYZE) is shown beside it. Variants:
#   simhash index   SELECT count(*) FROM t WHERE fp <~> $1 <= r
#                   (enable_seqscan = off; the planner picks Index or Bitmap scan)
#   btree x4        (r <= 7 only, see below)
#                   four indexes on ((fp::int8 >> 48) & 65535), ((fp::int8 >> 32) & 65535),
#                   ((fp::int8 >> 16) & 65535), (fp::int8 & 65535); r <= 3:
#                   WHERE (b0 = q0 OR b1 = q1 OR b2 = q2 OR b3 = q3) AND fp <~> q <= r;
#                   4 <= r <= 7 (pigeonhole: some block within 1 bit): bj = ANY(the 17 values
#                   within 1 bit of qj) for each block, OR-ed, plus the distance filter
#   GIN             (r <= 7 only) one index on ARRAY[0*65536 + b0, 1*65536 + b1, 2*65536 + b2, 3*65536 + b3]
#                   (int4[], default array_ops): WHERE keys && ARRAY[the 4 (r <= 3) or 68
#                   (r <= 7) probe keys] AND fp <~> q <= r
#   seq scan        the simhash query with index and bitmap scans disabled: simhash_hamming_within()
#                   in C on every row. It is slow, so only the first BENCH_SEQ_QUERIES
#                   queries are run (default: all of them up to 2M rows, else 20)
# Radii above 7 (BENCH_RADII takes 0..64): only the simhash index, the seq scan and the scan
# floor run. The block alternatives rest on the pigeonhole bound (a match is within r / 4 bits
# of the query in some block) and probe 0 or 1 bit of each block; r = 8 would need 2 bits
# (137 values per block), r = 12 3 bits (697). Their rows for such a radius read
# "n/a (r > 7 ...)" and they have no plan line.
# Each variant runs in a transaction that drops the other variants' indexes (and rolls back),
# so the planner cannot use them; its plan is checked (the wrong plan is an error) and shown.
# Every variant must return the same count as the simhash index for every query it ran, in
# every round; a mismatch is printed and the script exits 2. The slowest simhash-index query
# of each data set and radius is shown with EXPLAIN (ANALYZE, BUFFERS).
# Scan floor: beside the simhash index's median and p95 (per data set, size and radius), the
# time a plain C scan of the same codes takes for the same queries, and the ratio index /
# floor (columns "floor ms" and "x floor", each median / p95): the physical reference of each
# latency, measured in the same run. bench/scan_floor.c is compiled at start into the scratch
# directory with cc -O3 -march=native (else -O2 -mpopcnt, else -O2; the flags used are
# printed); after the rounds it reads the table's fingerprints (COPY (SELECT fp::int8 ...
# ORDER BY id) TO STDOUT) into one uint64 array and, for each query the simhash index ran (in
# its order), counts the codes with popcount(code ^ q) <= r, timed by
# clock_gettime(CLOCK_MONOTONIC) around each query, BENCH_PASSES passes, the fastest
# counting. Its counts must equal the index's; a difference is a mismatch (exit 2) as above.
# Build time (server clock around CREATE INDEX, after a CHECKPOINT) and pg_relation_size for:
# the simhash index, the four btree indexes together, the GIN index, a btree on fp.
# Inserts: pgbench, BENCH_INSERT_CLIENTS (2) clients, one row from the data set's
# distribution per transaction, into two copies of the table (first BENCH_INSERT_ROWS rows,
# default all), one with only a btree on fp, one with only the simhash index; each gets
# BENCH_INSERT_SECONDS (30) s in two halves, in the order btree, simhash, simhash, btree.
# Afterwards the simhash copy's index is checked against a sequential scan on 5 new rows.
# Caches: table and indexes are loaded into shared_buffers (pg_prewarm) before the queries.
# All variants run with the same settings: single core (max_parallel_workers_per_gather = 0,
# max_parallel_maintenance_workers = 0), jit off, autovacuum off on the bench tables.
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE, ...). The
# database needs the simhash extension installed (`make install`) and, for prewarming,
# pg_prewarm (contrib); the script creates and drops tables named ixb_*. Session settings
# (maintenance_work_mem, work_mem, synchronous_commit, parallelism, jit) are passed in
# PGOPTIONS; server-wide ones (shared_buffers, max_wal_size, checkpoint_timeout) are only
# set on the scratch server, and the values in effect are printed either way.
#
# Scratch server: with BENCH_START_SERVER=1, or when no server answers at the configured
# connection, the script initdb's (first time) and starts a cluster of its own under
# $BENCH_DIR (default /tmp/simhash-bench-$BENCH_PORT), on port $BENCH_PORT (default 55437,
# Unix socket only), as the postgres OS user when run as root, with shared_buffers = 4GB,
# max_wal_size = 10GB, checkpoint_timeout = 30min, shared_preload_libraries = simhash (so a
# `make install` during the run cannot change the build being measured), and stops it at
# exit. In its own database it drops and re-creates the extension at start. Binaries
# (initdb, pg_ctl, pg_isready, psql, pgbench, pg_config) from $PG_BINDIR (default:
# pg_config --bindir, else /usr/lib/postgresql/15/bin; psql and pgbench fall back to PATH
# when $PG_BINDIR has none); the simhash library and extension files are whatever that
# installation holds, so a private copy of PostgreSQL with the build under test installed only
# there works: `make PG_CONFIG=/x/bin/pg_config install`, then
#   PG_BINDIR=/x/bin BENCH_START_SERVER=1 bench/index_bench.sh 100000
# The header names the binaries and the library (the server's PKGLIBDIR/simhash.so, its
# time stamp and sha256).
#
# Other settings (environment):
#   BENCH_QUERIES=200          queries per data set and radius
#   BENCH_PASSES=3             rounds; each query's fastest run counts
#   BENCH_SEQ_QUERIES=         queries run by the sequential scan (see above)
#   BENCH_RADII="3 6 12"       radii, each 0..64 (btree x4 and GIN only at r <= 7, see above).
#                              12 is in the default because it is minhash's operating point
#                              with verification, and it is cheap because it runs no block
#                              alternatives. At 100k and 200k rows (200 queries, 3 passes) it
#                              took about 6 and 12 s of 32 and 53 s runs. Almost all of that
#                              was the seq scan, which grows with the table; the floor took
#                              under 0.1 s. Extrapolated: about 30 s per data set at 1M rows
#                              (seq scan ~28 s, index ~3 s; at that size the index reads one
#                              block table whole) and under a minute at 10M (20 seq scan
#                              queries ~30 s; the index at most ~25 s, which is what reading a
#                              table whole would cost). BENCH_RADII="3 6" gives the run as it
#                              was before 12 was added.
#   BENCH_DATASETS="uniform skewed"
#   BENCH_INDEX_WITH=          storage parameters of the simhash index the queries use (and of
#                              its 1MB build), e.g. "blocks = 5"; the insert copies keep the defaults
#   BENCH_INSERT_SECONDS=30    pgbench time per table (0: no insert test)
#   BENCH_INSERT_CLIENTS=2     pgbench -c/-j
#   BENCH_INSERT_ROWS=0        rows in each insert copy; 0: the whole table
#   BENCH_MWM=2GB BENCH_WORK_MEM=64MB   maintenance_work_mem (all builds), work_mem
#   BENCH_KEEP_TABLES=0        1 keeps the last data set's table and query tables at exit
#   BENCH_RAW=                 a file to copy every raw figure to (tab separated, one line per
#                              query run, build, insert test; the floor's runs are "lat" rows
#                              of variant "floor", planning time 0)
#   PG_BINDIR                  PostgreSQL binaries, psql included (default: pg_config --bindir,
#                              else /usr/lib/postgresql/15/bin); see "Scratch server"
#
# Example: BENCH_START_SERVER=1 bench/index_bench.sh 1000000 10000000 | tee bench/results/x.txt
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NQ=${BENCH_QUERIES:-200}
PASSES=${BENCH_PASSES:-3}
SEQ_Q=${BENCH_SEQ_QUERIES:-}
RADII=${BENCH_RADII:-3 6 12}
INDEX_WITH=${BENCH_INDEX_WITH:+ WITH ($BENCH_INDEX_WITH)}
DATASETS=${BENCH_DATASETS:-uniform skewed}
INS_SECS=${BENCH_INSERT_SECONDS:-30}
INS_CLIENTS=${BENCH_INSERT_CLIENTS:-2}
INS_ROWS=${BENCH_INSERT_ROWS:-0}
MWM=${BENCH_MWM:-2GB}
WORK_MEM=${BENCH_WORK_MEM:-64MB}
KEEP_TABLES=${BENCH_KEEP_TABLES:-0}
BENCH_PORT=${BENCH_PORT:-55437}
BENCH_DIR=${BENCH_DIR:-/tmp/simhash-bench-$BENCH_PORT}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000 10000000)

if [ -z "${PG_BINDIR:-}" ]; then
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
fi
PSQL=$PG_BINDIR/psql
[ -x "$PSQL" ] || PSQL=$(command -v psql || true)
PGBENCH=$PG_BINDIR/pgbench
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench || true)

die() { echo "index_bench: $*" >&2; exit 1; }
isint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for n in "${SIZES[@]}"; do isint "$n" || die "table size '$n' is not a positive integer"; done
isint "$NQ" || die "BENCH_QUERIES must be a positive integer"
isint "$PASSES" || die "BENCH_PASSES must be a positive integer"
[ -z "$SEQ_Q" ] || isint "$SEQ_Q" || die "BENCH_SEQ_QUERIES must be a positive integer"
for r in $RADII; do [[ $r =~ ^([0-9]|[1-5][0-9]|6[0-4])$ ]] || die "BENCH_RADII: each radius must be 0..64"; done
for d in $DATASETS; do [[ $d =~ ^(uniform|skewed)$ ]] || die "BENCH_DATASETS: uniform and/or skewed"; done
[[ $INS_SECS =~ ^[0-9]+$ ]] || die "BENCH_INSERT_SECONDS must be a non-negative integer"
isint "$INS_CLIENTS" || die "BENCH_INSERT_CLIENTS must be a positive integer"
[[ $INS_ROWS =~ ^[0-9]+$ ]] || die "BENCH_INSERT_ROWS must be a non-negative integer"
command -v python3 >/dev/null || die "python3 is needed"
command -v cc >/dev/null || die "cc is needed (the scan floor, bench/scan_floor.c, is compiled at run time)"
{ [ -n "$PSQL" ] && [ -x "$PSQL" ]; } || die "psql is needed"
[ -n "$PGBENCH" ] && [ -x "$PGBENCH" ] || die "pgbench is needed"

# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------
STARTED=0
WORK=$(mktemp -d)
as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cleanup() {
	local rc=$?
	if [ "$KEEP_TABLES" != 1 ] && [ -n "${DB_READY:-}" ]; then
		"$PSQL" -X -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS ixb_uniform, ixb_skewed, ixb_q, ixb_ins_btree_fp, ixb_ins_simhash" >/dev/null 2>&1 || true
	fi
	if [ "$STARTED" = 1 ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -m fast stop >/dev/null 2>&1 || true
	fi
	if [ -n "${BENCH_RAW:-}" ] && [ -f "$WORK/results.tsv" ]; then cp "$WORK/results.tsv" "$BENCH_RAW" || true; fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# the scan floor (bench/scan_floor.c), compiled for this machine into the scratch directory
FLOOR=$WORK/scan_floor
FLOOR_CC=
for flags in "-O3 -march=native" "-O2 -mpopcnt" "-O2"; do
	read -ra fa <<<"$flags"
	if cc "${fa[@]}" -o "$FLOOR" "$ROOT/bench/scan_floor.c" 2>>"$WORK/cc.err"; then FLOOR_CC="cc $flags"; break; fi
done
[ -n "$FLOOR_CC" ] || { cat "$WORK/cc.err" >&2; die "bench/scan_floor.c does not compile"; }

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
	as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w -t 120 \
		-o "-p $BENCH_PORT -k $BENCH_DIR -c listen_addresses='' -c shared_buffers=4GB -c max_wal_size=10GB -c checkpoint_timeout=30min -c autovacuum=off -c shared_preload_libraries=simhash" \
		start >/dev/null
	STARTED=1
	export PGHOST=$BENCH_DIR PGPORT=$BENCH_PORT PGUSER=$owner
	"$PSQL" -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'simhash_bench'" |
		grep -q 1 || "$PSQL" -X -q -d postgres -c "CREATE DATABASE simhash_bench" >/dev/null
	export PGDATABASE=simhash_bench
}

if [ "${BENCH_START_SERVER:-0}" = 1 ]; then
	start_server
elif ! "$PG_BINDIR/pg_isready" -q >/dev/null 2>&1; then
	echo "no server reachable with the current PG* settings; starting a scratch one" >&2
	start_server
fi

# the same session settings for psql and pgbench, whichever server
export PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=$MWM -c work_mem=$WORK_MEM -c synchronous_commit=off -c max_parallel_workers_per_gather=0 -c max_parallel_maintenance_workers=0 -c jit=off -c client_min_messages=warning"

psql_b() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_t() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' "$@"; }

if [ "$STARTED" = 1 ]; then
	# our own database: the extension's objects must match the library loaded at start
	psql_b -c "DROP EXTENSION IF EXISTS simhash CASCADE" >/dev/null
fi
psql_b -c "CREATE EXTENSION IF NOT EXISTS simhash" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed in $PG_BINDIR/..? cd $ROOT && make PG_CONFIG=$PG_BINDIR/pg_config install)"
PREWARM=1
psql_b -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" >/dev/null 2>&1 || PREWARM=0
S=$(psql_t -c "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'simhash'")
DB_READY=1

RES=$WORK/results.tsv			# every figure, tab separated, read by the report
: >"$RES"
log() { echo "[$(date '+%H:%M:%S')] $*" >&2; }

# ---------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------
# the library the server loads: its own PKGLIBDIR (pg_config() needs a superuser), else
# $PG_BINDIR's pg_config
PKGLIBDIR=$(psql_t -c "SELECT setting FROM pg_config() WHERE name = 'PKGLIBDIR'" 2>/dev/null ||
	"$PG_BINDIR/pg_config" --pkglibdir 2>/dev/null || echo /nonexistent)
LIB=$PKGLIBDIR/simhash.so
lib_id() { [ -f "$LIB" ] && echo "$LIB, $(date -u -r "$LIB" '+%Y-%m-%d %H:%M:%S UTC'), sha256 $(sha256sum "$LIB" | cut -c1-12)"; }
LIB_BEFORE=$(lib_id || true)
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
[ -n "$CPU" ] || CPU=$(uname -m)
GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null)" ]; then GITREV="$GITREV+dirty(src)"; fi
{
	printf 'env\tcommand\t%s\n' "$( { env | grep -E '^(BENCH_|PG_BINDIR=)' | sort | tr '\n' ' '; } || true)bench/index_bench.sh ${SIZES[*]}"
	printf 'env\tcpu\t%s (%s cpus visible), %s GiB RAM\n' "$CPU" "$(nproc 2>/dev/null || echo '?')" \
		"$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo '?')"
	printf 'env\tserver\t%s\n' "$(psql_t -c "SELECT version()")"
	printf 'env\tbinaries\t%s (psql %s)\n' "$PG_BINDIR" "$PSQL"
	printf 'env\tsimhash\textension %s, checkout %s\n' "$(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")" "$GITREV"
	printf 'env\tlibrary\t%s%s\n' "${LIB_BEFORE:-$LIB (not found)}" "$( [ "$STARTED" = 1 ] && echo ", preloaded by the scratch server")"
	printf 'env\tsettings\t%s\n' "$(psql_t -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY o) FROM unnest(ARRAY['shared_buffers', 'maintenance_work_mem', 'work_mem', 'random_page_cost', 'max_wal_size', 'checkpoint_timeout', 'synchronous_commit', 'wal_level', 'max_parallel_workers_per_gather', 'max_parallel_maintenance_workers', 'jit', 'autovacuum']) WITH ORDINALITY u(name, o)")"
	printf 'env\tindex\t%s\n' "USING simhash (fp)${INDEX_WITH:- (default storage parameters)}"
	printf 'env\tprewarm\t%s\n' "$PREWARM"
	printf 'env\tfloor\t%s (%s)\n' "$FLOOR_CC" "$(cc --version 2>/dev/null | head -n1)"
	printf 'env\tstarted\t%s, load average %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
} >>"$RES"

# ---------------------------------------------------------------------------
# SQL pieces
# ---------------------------------------------------------------------------
# the variants run at radius r: the btree and GIN block alternatives only up to r = 7 (a
# match differs from the query in at most r bits, so some one of the 4 blocks in at most
# r / 4; the probes cover 0 (r <= 3) or 1 (r <= 7) bits of it; at r = 8 that would be 2, 137
# values per block), above it the simhash index and the sequential scan (and the floor)
variants() {	# r
	if [ "$1" -le 7 ]; then echo simhash btree4 gin seqscan; else echo simhash seqscan; fi
}

# block j of fp (j = 0: the top 16 bits), as int8: the btree index expressions
blk() {
	case $1 in
		0) echo "((fp::int8 >> 48) & 65535)" ;;
		1) echo "((fp::int8 >> 32) & 65535)" ;;
		2) echo "((fp::int8 >> 16) & 65535)" ;;
		3) echo "(fp::int8 & 65535)" ;;
	esac
}
# the GIN expression: the four blocks tagged by their number, as int4[]
GINEXPR="(ARRAY[$(blk 0)::int4, (65536 + $(blk 1))::int4, (131072 + $(blk 2))::int4, (196608 + $(blk 3))::int4])"
# random 64-bit fingerprint; a skewed one (centre c with k random bits flipped, 20% top-cleared)
UNIFORM_FP="((floor(random() * 4294967296)::int8 << 32) | floor(random() * 4294967296)::int8)::$S.simhash"

# The measuring function. Parameters of every query: $1 q, $2..$5 blocks of q (int8),
# $6..$9 the probe values of each block (int8[]), $10 the GIN probe keys (int4[]).
# Returns the plan of the first query (qno -1), then per query (qno >= 1) the time of one
# run (clock_timestamp() around EXECUTE: planning + execution, as a client would see it),
# its count, and the planning time alone (EXPLAIN (SUMMARY ON) without ANALYZE).
MEASURE_FN=$(cat <<SQL
CREATE OR REPLACE FUNCTION pg_temp.ixb_measure(sql text, rad int, nq int, warmup int)
RETURNS TABLE (o_qno int, o_ms float8, o_n int8, o_plan_ms float8, o_line text)
LANGUAGE plpgsql AS \$fn\$
DECLARE
    qr record;
    t0 timestamptz;
    t1 timestamptz;
    cnt int8;
    l text;
    js json;
BEGIN
    SELECT * INTO qr FROM ixb_q WHERE ixb_q.r = rad ORDER BY ixb_q.qno LIMIT 1;
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || sql
        USING qr.q, qr.b0, qr.b1, qr.b2, qr.b3, qr.nb0, qr.nb1, qr.nb2, qr.nb3, qr.gk LOOP
        o_qno := -1; o_line := l;
        RETURN NEXT;
    END LOOP;
    o_line := NULL;
    -- warm-up, untimed: catalog caches, code paths, the first plans
    FOR qr IN SELECT * FROM ixb_q WHERE ixb_q.r = rad ORDER BY ixb_q.qno LIMIT warmup LOOP
        EXECUTE sql INTO cnt USING qr.q, qr.b0, qr.b1, qr.b2, qr.b3, qr.nb0, qr.nb1, qr.nb2, qr.nb3, qr.gk;
        EXECUTE 'EXPLAIN (SUMMARY ON, FORMAT JSON) ' || sql INTO js
            USING qr.q, qr.b0, qr.b1, qr.b2, qr.b3, qr.nb0, qr.nb1, qr.nb2, qr.nb3, qr.gk;
    END LOOP;
    FOR qr IN SELECT * FROM ixb_q WHERE ixb_q.r = rad AND ixb_q.qno <= nq ORDER BY ixb_q.qno LOOP
        t0 := clock_timestamp();
        EXECUTE sql INTO cnt USING qr.q, qr.b0, qr.b1, qr.b2, qr.b3, qr.nb0, qr.nb1, qr.nb2, qr.nb3, qr.gk;
        t1 := clock_timestamp();
        EXECUTE 'EXPLAIN (SUMMARY ON, FORMAT JSON) ' || sql INTO js
            USING qr.q, qr.b0, qr.b1, qr.b2, qr.b3, qr.nb0, qr.nb1, qr.nb2, qr.nb3, qr.gk;
        o_qno := qr.qno; o_ms := extract(epoch FROM t1 - t0) * 1000; o_n := cnt;
        o_plan_ms := (js->0->>'Planning Time')::float8;
        RETURN NEXT;
    END LOOP;
END
\$fn\$;
SQL
)

# ---------------------------------------------------------------------------
# one data set at one size
# ---------------------------------------------------------------------------
gen_table() {	# ds n
	local ds=$1 n=$2 t=ixb_$1
	psql_b <<SQL
DROP TABLE IF EXISTS ixb_uniform, ixb_skewed, ixb_q, ixb_ins_btree_fp, ixb_ins_simhash;
CREATE TABLE $t (id int8 NOT NULL, fp $S.simhash) WITH (autovacuum_enabled = off);
SQL
	psql_b -v tbl="$t" -v rows="$n" -v ext="$S" -f "$ROOT/bench/data/$ds.sql"
	psql_b -c "VACUUM (FREEZE, ANALYZE) $t"
}

gen_queries() {	# ds n
	local t=ixb_$1 n=$2 r radii
	radii=$(echo $RADII | sed 's/ /,/g')
	# probe values of block j: the value itself, plus the 16 one-bit flips when r >= 4
	nb() { echo "CASE WHEN r >= 4 THEN ARRAY[b$1] || ARRAY(SELECT b$1 # (1::int8 << i) FROM generate_series(0, 15) i) ELSE ARRAY[b$1] END"; }
	psql_b -v qtbl=ixb_q -v tbl="$t" -v rows="$n" -v radii="$radii" -v nq="$NQ" -v ext="$S" \
		-f "$ROOT/bench/data/queries.sql"
	psql_b <<SQL
ALTER TABLE ixb_q ADD COLUMN b0 int8, ADD COLUMN b1 int8, ADD COLUMN b2 int8, ADD COLUMN b3 int8,
    ADD COLUMN nb0 int8[], ADD COLUMN nb1 int8[], ADD COLUMN nb2 int8[], ADD COLUMN nb3 int8[], ADD COLUMN gk int4[];
UPDATE ixb_q SET b0 = (q::int8 >> 48) & 65535, b1 = (q::int8 >> 32) & 65535,
                 b2 = (q::int8 >> 16) & 65535, b3 = q::int8 & 65535;
UPDATE ixb_q SET nb0 = $(nb 0), nb1 = $(nb 1), nb2 = $(nb 2), nb3 = $(nb 3);
UPDATE ixb_q SET gk = ARRAY(SELECT unnest(nb0)::int4) || ARRAY(SELECT (65536 + unnest(nb1))::int4)
                   || ARRAY(SELECT (131072 + unnest(nb2))::int4) || ARRAY(SELECT (196608 + unnest(nb3))::int4);
ALTER TABLE ixb_q ADD PRIMARY KEY (r, qno);
VACUUM ANALYZE ixb_q;
SQL
	local bad
	bad=$(psql_t -c "SELECT count(*) FROM ixb_q WHERE q IS NULL")
	[ "$bad" = 0 ] || die "query generation: $bad queries without a source row"
}

# build one index, timed by the server after a checkpoint: prints
# "ms<TAB>bytes<TAB>WAL bytes" (WAL written from the start of the build to its end)
timed_build() {	# index-name create-statement
	psql_t <<SQL
CHECKPOINT;
SELECT clock_timestamp() AS t0, pg_current_wal_insert_lsn() AS l0 \\gset
$2;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1), pg_relation_size('$1'),
       pg_current_wal_insert_lsn() - :'l0'::pg_lsn;
SQL
}

build_indexes() {	# ds n
	local ds=$1 n=$2 t=ixb_$1 out ms=0 bytes=0 j
	log "$ds $n: btree on fp"
	out=$(timed_build "${t}_fp" "CREATE INDEX ${t}_fp ON $t (fp)")
	printf 'build\t%s\t%s\tbtree_fp\t%s\n' "$ds" "$n" "$out" >>"$RES"
	psql_b -c "DROP INDEX ${t}_fp"
	log "$ds $n: simhash index"
	out=$(timed_build "${t}_simhash" "CREATE INDEX ${t}_simhash ON $t USING simhash (fp)$INDEX_WITH")
	printf 'build\t%s\t%s\tsimhash\t%s\n' "$ds" "$n" "$out" >>"$RES"
	# the same beyond memory: sorted through tuplesort's temporary files, the index
	# itself written once (size and WAL as with ample memory)
	log "$ds $n: simhash index, maintenance_work_mem = 1MB"
	out=$(timed_build "${t}_simhash_1mb" "SET maintenance_work_mem = '1MB'; CREATE INDEX ${t}_simhash_1mb ON $t USING simhash (fp)$INDEX_WITH")
	printf 'build\t%s\t%s\tsimhash_1mb\t%s\n' "$ds" "$n" "$out" >>"$RES"
	psql_b -c "DROP INDEX ${t}_simhash_1mb"
	log "$ds $n: four btree block indexes"
	local wal=0
	for j in 0 1 2 3; do
		out=$(timed_build "${t}_b$j" "CREATE INDEX ${t}_b$j ON $t ($(blk $j))")
		ms=$(python3 -c "print($ms + $(cut -f1 <<<"$out"))")
		bytes=$((bytes + $(cut -f2 <<<"$out")))
		wal=$((wal + $(cut -f3 <<<"$out")))
	done
	printf 'build\t%s\t%s\tbtree4\t%s\t%s\t%s\n' "$ds" "$n" "$ms" "$bytes" "$wal" >>"$RES"
	log "$ds $n: GIN index"
	out=$(timed_build "${t}_gin" "CREATE INDEX ${t}_gin ON $t USING gin ($GINEXPR)")
	printf 'build\t%s\t%s\tgin\t%s\n' "$ds" "$n" "$out" >>"$RES"
	# statistics on the index expressions, for the planner's estimates
	psql_b -c "ANALYZE $t"
	psql_t -c "SELECT 'info', '$ds', $n, 'after build', blocks, array_to_string(block_masks, ' '), runs, array_to_string(run_entries, ' '), pending_entries, pending_pages FROM $S.simhash_index_info('${t}_simhash')" >>"$RES"
	printf 'size\t%s\t%s\ttable\t%s\n' "$ds" "$n" "$(psql_t -c "SELECT pg_relation_size('$t')")" >>"$RES"
}

prewarm() {	# ds
	local t=ixb_$1
	[ "$PREWARM" = 1 ] || return 0
	psql_t -c "SELECT sum(pg_prewarm(c)) FROM unnest(ARRAY['$t', '${t}_simhash', '${t}_b0', '${t}_b1', '${t}_b2', '${t}_b3', '${t}_gin', 'ixb_q']::regclass[]) c" >/dev/null
}

# All rounds of every radius and variant in ONE session. A backend's first touch of a
# shared_buffers page costs a page fault (shared memory is mapped lazily, 4 kB pages
# without huge pages): measured in fresh sessions, a query that reads 15 buffers pays
# ~0.3 ms for that alone. In one session the first round maps the pages the queries need
# and the fastest of the rounds is the steady state of a long-lived (pooled) connection.
measure_all() {	# ds n
	local ds=$1 n=$2 t=ixb_$1 sql pre nq expect warmup round r v
	local script=$WORK/measure.sql out=$WORK/measure.out
	{
		echo "$MEASURE_FN"
		for round in $(seq 1 "$PASSES"); do
			for r in $RADII; do
				for v in $(variants "$r"); do
					nq=$NQ; warmup=5
					case $v in
						simhash)
							pre="SET LOCAL enable_seqscan = off;" ;;
						seqscan)
							pre="SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;"
							nq=$SEQ_NQ; warmup=1 ;;
						btree4)
							pre="DROP INDEX ${t}_simhash, ${t}_gin; SET LOCAL enable_seqscan = off;" ;;
						gin)
							pre="DROP INDEX ${t}_simhash, ${t}_b0, ${t}_b1, ${t}_b2, ${t}_b3; SET LOCAL enable_seqscan = off;" ;;
					esac
					sql=$(variant_sql "$ds" "$r" "$v")
					echo "SELECT to_char(clock_timestamp(), 'HH24:MI:SS') AS ts \\gset"
					echo "\\warn '[':ts'] $ds $n r=$r: $v ($nq queries, round $round of $PASSES)'"
					echo "BEGIN;"
					echo "$pre"
					echo "SELECT $round, $r, '$v', o_qno, o_ms, o_n, o_plan_ms, o_line FROM pg_temp.ixb_measure(\$q\$$sql\$q\$, $r, $nq, $warmup);"
					echo "ROLLBACK;"
				done
			done
		done
	} >"$script"
	psql_t -f "$script" >"$out"
	# the plans: each variant must use its own path
	for r in $RADII; do
		for v in $(variants "$r"); do
			case $v in
				simhash) expect="${t}_simhash" ;;
				seqscan) expect="Seq Scan on $t" ;;
				btree4) expect="BitmapOr" ;;
				gin) expect="${t}_gin" ;;
			esac
			if ! awk -F'\t' -v r="$r" -v v="$v" '$1 == 1 && $2 == r && $3 == v && $4 == -1 { print $8 }' "$out" | grep -qF -- "$expect"; then
				awk -F'\t' -v r="$r" -v v="$v" '$2 == r && $3 == v && $4 == -1 { print $8 }' "$out" >&2
				die "$ds $n r=$r $v: the plan does not use '$expect'"
			fi
		done
	done
	awk -F'\t' -v OFS='\t' -v p="$ds"$'\t'"$n" '
		$4 == -1 { if ($1 == 1) print "plan", p, $2, $3, $8; next }
		{ print "lat", p, $2, $3, $1, $4, $5, $6, $7 }' "$out" >>"$RES"
}

# The scan floor: the table's fingerprints as int8 (ORDER BY id, the physical order) in one
# uint64 array, scanned by bench/scan_floor.c for the simhash index's queries (every radius,
# in the index's order), BENCH_PASSES rounds; it checks its counts against the index's
# (round 1) and exits 2 on a difference, listed as "floorbad" rows.
scan_floor() {	# ds n
	local ds=$1 n=$2 t=ixb_$1 rc=0 want got bad
	log "$ds $n: scan floor ($FLOOR_CC)"
	psql_t -c "COPY (SELECT fp::int8 FROM $t WHERE fp IS NOT NULL ORDER BY id) TO STDOUT" >"$WORK/codes.txt"
	psql_t -c "SELECT r, qno, q::int8 FROM ixb_q ORDER BY r, qno" >"$WORK/centres.txt"
	awk -F'\t' -v OFS='\t' -v ds="$ds" -v n="$n" '
		NR == FNR { q[$1 "," $2] = $3; next }
		$1 == "lat" && $2 == ds && $3 == n && $5 == "simhash" && $6 == 1 { print $4, $7, q[$4 "," $7], $9 }' \
		"$WORK/centres.txt" "$RES" >"$WORK/floor.in"
	"$FLOOR" radius "$WORK/codes.txt" "$WORK/floor.in" "$PASSES" >"$WORK/floor.out" 2>"$WORK/floor.err" || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 2 ] || { cat "$WORK/floor.err" >&2; die "$ds $n: scan_floor failed"; }
	want=$(( $(wc -l <"$WORK/floor.in") * PASSES )); got=$(wc -l <"$WORK/floor.out")
	[ "$got" = "$want" ] || die "$ds $n: scan_floor printed $got results, not $want"
	printf 'floorcodes\t%s\t%s\t%s\n' "$ds" "$n" "$(wc -l <"$WORK/codes.txt")" >>"$RES"
	# as the other variants' rows, planning time 0
	awk -F'\t' -v OFS='\t' -v p="$ds"$'\t'"$n" '{ print "lat", p, $1, "floor", $3, $2, $4, $5, 0 }' \
		"$WORK/floor.out" >>"$RES"
	sed 's/^/  /' "$WORK/floor.err" >&2
	bad=$(grep -E ': (expected|pass) ' "$WORK/floor.err" | sed "s/^scan_floor: /floorbad\t$ds\t$n\t/" || true)
	[ -z "$bad" ] || echo "$bad" >>"$RES"
	[ "$rc" = 0 ] || [ -n "$bad" ] || die "$ds $n: scan_floor exited 2 and named no query"
	rm -f "$WORK/codes.txt"
}

# the query of a variant (parameters as in ixb_measure)
variant_sql() {	# ds r variant
	local t=ixb_$1 r=$2 cond="" j
	case $3 in
		simhash|seqscan)
			echo "SELECT count(*) FROM $t WHERE fp OPERATOR($S.<~>) \$1 <= $r" ;;
		btree4)
			for j in 0 1 2 3; do
				[ -z "$cond" ] || cond="$cond OR "
				if [ "$r" -lt 4 ]; then cond="$cond$(blk $j) = \$$((j + 2))"
				else cond="$cond$(blk $j) = ANY(\$$((j + 6)))"; fi
			done
			echo "SELECT count(*) FROM $t WHERE ($cond) AND fp OPERATOR($S.<~>) \$1 <= $r" ;;
		gin)
			echo "SELECT count(*) FROM $t WHERE $GINEXPR && \$10 AND fp OPERATOR($S.<~>) \$1 <= $r" ;;
	esac
}

# EXPLAIN (ANALYZE, BUFFERS) of the slowest simhash-index query (by its fastest run), run
# twice: the second one is kept
explain_slowest() {	# ds n r
	local ds=$1 n=$2 r=$3 qno ms sql
	read -r qno ms < <(awk -F'\t' -v ds="$ds" -v n="$n" -v r="$r" '
		$1 == "lat" && $2 == ds && $3 == n && $4 == r && $5 == "simhash" {
			if (!($7 in best) || $8 < best[$7]) best[$7] = $8 }
		END { w = -1; for (q in best) if (best[q] > w) { w = best[q]; wq = q }; print wq, w }' "$RES")
	[ -n "$qno" ] || return 0
	sql=$(variant_sql "$ds" "$r" simhash)
	printf 'explain\t%s\t%s\t%s\tsimhash\tquery %s, fastest run %s ms\n' "$ds" "$n" "$r" "$qno" "$ms" >>"$RES"
	psql_t <<SQL | sed "s/^/explain\t$ds\t$n\t$r\tsimhash\t/" >>"$RES"
SET enable_seqscan = off;
CREATE FUNCTION pg_temp.ixb_explain() RETURNS SETOF text LANGUAGE plpgsql AS \$\$
DECLARE qr record; l text;
BEGIN
    SELECT * INTO qr FROM ixb_q WHERE r = $r AND qno = $qno;
    FOR i IN 1 .. 2 LOOP
        FOR l IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS) ' || \$q\$$sql\$q\$ USING qr.q LOOP
            IF i = 2 THEN RETURN NEXT l; END IF;
        END LOOP;
    END LOOP;
END \$\$;
SELECT * FROM pg_temp.ixb_explain();
SQL
}

insert_bench() {	# ds n
	local ds=$1 n=$2 t=ixb_$1 rows=$2 v script seg half tx out
	local -A total=()
	[ "$INS_ROWS" = 0 ] || [ "$INS_ROWS" -ge "$n" ] || rows=$INS_ROWS
	psql_b -c "DROP INDEX IF EXISTS ${t}_b0, ${t}_b1, ${t}_b2, ${t}_b3, ${t}_gin, ${t}_simhash"
	for v in btree_fp simhash; do
		log "$ds $n: inserts: a $rows-row copy with only $v"
		psql_b <<SQL
DROP TABLE IF EXISTS ixb_ins_$v;
CREATE TABLE ixb_ins_$v WITH (autovacuum_enabled = off) AS SELECT * FROM $t WHERE id <= $rows;
CREATE INDEX ixb_ins_${v}_idx ON ixb_ins_$v $( [ $v = simhash ] && echo "USING simhash" ) (fp);
VACUUM ANALYZE ixb_ins_$v;
SQL
		script=$WORK/insert_$v.sql
		if [ "$ds" = uniform ]; then
			echo "INSERT INTO ixb_ins_$v (id, fp) VALUES (0, $UNIFORM_FP);" >"$script"
		else
			cat >"$script" <<SQL
\\set c random(0, 49999)
\\set k random(0, 6)
INSERT INTO ixb_ins_$v (id, fp) SELECT 0, (CASE WHEN random() < 0.2 THEN v & 281474976710655 ELSE v END)::$S.simhash FROM (SELECT hashint8extended(:c, 42) # (SELECT coalesce(bit_xor(1::int8 << floor(random() * 64)::int), 0) FROM generate_series(1, :k)) AS v) s;
SQL
		fi
		total[$v]=0
	done
	# A B B A: each table gets two segments of half the time, so a drift in the machine's
	# load during the test falls on both alike
	half=$(( (INS_SECS + 1) / 2 ))
	for v in btree_fp simhash simhash btree_fp; do
		log "$ds $n: inserts into the $v table, $half s"
		psql_b -c "CHECKPOINT"
		out=$("$PGBENCH" -n -c "$INS_CLIENTS" -j "$INS_CLIENTS" -T "$half" -f "$WORK/insert_$v.sql" 2>"$WORK/pgbench.err") ||
			{ cat "$WORK/pgbench.err" >&2; die "pgbench failed ($ds $n $v)"; }
		tx=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
		[ -n "$tx" ] || { echo "$out" >&2; die "pgbench printed no transaction count ($ds $n $v)"; }
		total[$v]=$(( ${total[$v]} + tx ))
	done
	for v in btree_fp simhash; do
		printf 'ins\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ds" "$n" "$v" \
			"$(python3 -c "print(${total[$v]} / (2 * $half))")" \
			"$(psql_t -c "SELECT count(*) - $rows FROM ixb_ins_$v")" "$rows" >>"$RES"
	done
	# the index after the inserts: its shape, and a check that it finds the new rows
	psql_t -c "SELECT 'info', '$ds', $n, 'after inserts', blocks, array_to_string(block_masks, ' '), runs, array_to_string(run_entries, ' '), pending_entries, pending_pages FROM $S.simhash_index_info('ixb_ins_simhash_idx')" >>"$RES"
	psql_t >"$WORK/chk.out" <<SQL
SET enable_seqscan = off;
SELECT count(*) FROM ixb_ins_simhash i, LATERAL (SELECT fp FROM ixb_ins_simhash WHERE id = 0 ORDER BY ctid DESC LIMIT 5) q WHERE i.fp OPERATOR($S.<~>) q.fp <= 3;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM ixb_ins_simhash i, LATERAL (SELECT fp FROM ixb_ins_simhash WHERE id = 0 ORDER BY ctid DESC LIMIT 5) q WHERE i.fp OPERATOR($S.<~>) q.fp <= 3;
SQL
	printf 'inscheck\t%s\t%s\t%s\n' "$ds" "$n" "$(paste -sd ' ' "$WORK/chk.out")" >>"$RES"
	psql_b -c "DROP TABLE ixb_ins_btree_fp, ixb_ins_simhash"
}

# ---------------------------------------------------------------------------
# the report (reads $RES): tables for one data set and size, or everything
# ---------------------------------------------------------------------------
report() {	# "ds n" or "final"
	BENCH_RES=$RES BENCH_WHAT=$1 BENCH_NQ=$NQ BENCH_PASSES=$PASSES BENCH_INS_SECS=$INS_SECS BENCH_INS_CLIENTS=$INS_CLIENTS \
	python3 - <<'PY'
import os, sys
from collections import defaultdict

env = os.environ
rows = [l.rstrip("\n").split("\t") for l in open(env["BENCH_RES"]) if l.strip()]
what = env["BENCH_WHAT"]
nq = int(env["BENCH_NQ"])

def pct(xs, p):
    """percentile_cont: linear interpolation between the closest ranks"""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = p * (len(xs) - 1)
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

envs = {}
build = {}          # (ds, n, variant) -> (ms, bytes)
lat = defaultdict(dict)  # (ds, n, r, variant) -> {qno: (ms, count)}
plans = defaultdict(list)
explains = defaultdict(list)
ins = {}            # (ds, n, variant) -> (tps, inserted, rows)
info = defaultdict(list)
tsize = {}
inscheck = {}
order = []
floorbad = defaultdict(list)  # (ds, n) -> the scan floor's mismatch messages
floorcodes = {}
for f in rows:
    kind = f[0]
    if kind == "env":
        envs[f[1]] = f[2]
    elif kind == "build":
        build[(f[1], int(f[2]), f[3])] = (float(f[4]), int(f[5]), int(f[6]) if len(f) > 6 else None)
    elif kind == "size":
        tsize[(f[1], int(f[2]))] = int(f[4])
    elif kind == "lat":
        key = (f[1], int(f[2]), int(f[3]), f[4])
        # qno -> [(ms, count, planning ms) of each round]
        lat[key].setdefault(int(f[6]), []).append((float(f[7]), int(f[8]), float(f[9])))
        if (f[1], int(f[2])) not in order:
            order.append((f[1], int(f[2])))
    elif kind == "plan":
        plans[(f[1], int(f[2]), int(f[3]), f[4])].append(f[5])
    elif kind == "explain":
        explains[(f[1], int(f[2]), int(f[3]), f[4])].append(f[5])
    elif kind == "ins":
        ins[(f[1], int(f[2]), f[3])] = (float(f[4]), int(f[5]), int(f[6]))
    elif kind == "info":
        info[(f[1], int(f[2]))].append(f[3:])
    elif kind == "inscheck":
        inscheck[(f[1], int(f[2]))] = f[3]
    elif kind == "floorbad":
        floorbad[(f[1], int(f[2]))].append(f[3])
    elif kind == "floorcodes":
        floorcodes[(f[1], int(f[2]))] = int(f[3])

VARIANTS = [("simhash", "simhash index"), ("btree4", "btree x4 blocks, OR"),
            ("gin", "GIN block keys"), ("seqscan", "seq scan")]
BLOCK_MAX_R = 7     # the btree and GIN block alternatives run up to this radius (variants())

def radii(ds, n):
    return sorted({k[2] for k in lat if k[0] == ds and k[1] == n})

def stats(ds, n, r, v):
    d = lat.get((ds, n, r, v))
    if not d:
        return None
    ms = [min(x[0] for x in runs) for runs in d.values()]
    pl = [min(x[2] for x in runs) for runs in d.values()]
    return {"med": pct(ms, 0.5), "p95": pct(ms, 0.95), "max": max(ms), "nq": len(ms),
            "plan": pct(pl, 0.5), "rounds": max(len(runs) for runs in d.values()),
            "matches": sum(runs[0][1] for runs in d.values()) / len(d)}

MATCH_BUCKETS = [(0, 1, "<= 1"), (2, 10, "2-10"), (11, 40, "11-40"), (41, 10**18, "> 40")]

def by_matches(ds, n, r, v="simhash"):
    """(label, queries, median ms, p95 ms) of the variant's queries grouped by their count"""
    d = lat.get((ds, n, r, v), {})
    out = []
    for lo, hi, lab in MATCH_BUCKETS:
        ms = [min(x[0] for x in runs) for runs in d.values() if lo <= runs[0][1] <= hi]
        if ms:
            out.append((lab, len(ms), pct(ms, 0.5), pct(ms, 0.95)))
    return out

def mismatches(ds, n):
    out = []
    for r in radii(ds, n):
        ref = lat.get((ds, n, r, "simhash"), {})
        for v, _ in VARIANTS:
            for q, runs in sorted(lat.get((ds, n, r, v), {}).items()):
                counts = sorted({x[1] for x in runs})
                if len(counts) > 1:
                    out.append(f"{ds} {n:,} rows r={r} query {q}: {v} returned different counts "
                               f"in different rounds: {counts}")
                if q in ref and ref[q][0][1] != runs[0][1]:
                    out.append(f"{ds} {n:,} rows r={r} query {q}: simhash index {ref[q][0][1]}, {v} {runs[0][1]}")
    return out

def plan_summary(lines):
    """the plan's nodes, without their conditions"""
    nodes = []
    for i, l in enumerate(lines):
        s = l.strip()
        if i == 0 or s.startswith("->"):
            nodes.append(s.lstrip("-> ").strip())
    return " > ".join(nodes)

def fmt_ms(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"

def ratio(a, b):
    return a / b if b else float("inf")

def fmt_x(x):
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"

def floor_cells(ds, n, r):
    """'floor ms' and 'x floor' (simhash index / floor), each "median / p95", over the index's queries"""
    ix, fl = stats(ds, n, r, "simhash"), stats(ds, n, r, "floor")
    if not ix or not fl:
        return "-", "-"
    return (f"{fmt_ms(fl['med'])} / {fmt_ms(fl['p95'])}",
            f"{fmt_x(ratio(ix['med'], fl['med']))} / {fmt_x(ratio(ix['p95'], fl['p95']))}")

def print_set(ds, n):
    print()
    title = f"== {ds}, {n:,} rows =="
    print(title)
    rs = radii(ds, n)
    print(f"query latency in ms, server side: clock_timestamp() around EXECUTE (planning + execution), the fastest")
    print(f"of {env['BENCH_PASSES']} runs of each query (in separate rounds); median, p95 and max over the queries.")
    print("plan: median planning time alone (EXPLAIN without ANALYZE). 'index is': the variant's median /")
    print("the simhash index's median (times faster). floor ms: the scan floor, the same codes counted in C for the")
    print("same queries, median / p95; x floor: simhash index / floor (medians / p95s)")
    for r in rs:
        base = stats(ds, n, r, "simhash")
        seq = stats(ds, n, r, "seqscan")
        print()
        print(f"r={r}: {base['nq'] if base else 0} queries, {base['matches']:.1f} matches per query on average"
              + (f"; seq scan: the first {seq['nq']} queries only" if seq and base and seq["nq"] < base["nq"] else ""))
        hdr = (f"{'variant':<20} | {'median':>8} {'p95':>8} {'max':>8} | {'plan':>6} | {'index is':>8}"
               f" | {'floor ms':>15} | {'x floor':>11}")
        print(hdr)
        print("-" * len(hdr))
        for v, name in VARIANTS:
            st = stats(ds, n, r, v)
            if st is None:
                if v in ("btree4", "gin") and r > BLOCK_MAX_R:
                    print(f"{name:<20} | n/a (r > {BLOCK_MAX_R}: the block probes cover r / 4 <= 1 bit; not run)")
                continue
            sp = f"{ratio(st['med'], base['med']):.1f}x" if v != "simhash" and base else ""
            fm, fx = floor_cells(ds, n, r) if v == "simhash" else ("", "")
            print(f"{name:<20} | {fmt_ms(st['med']):>8} {fmt_ms(st['p95']):>8} {fmt_ms(st['max']):>8} | "
                  f"{fmt_ms(st['plan']):>6} | {sp:>8} | {fm:>15} | {fx:>11}")
        fl = lat.get((ds, n, r, "floor"), {})
        if fl:
            bad = len([m for m in floorbad.get((ds, n), []) if f" r={r} " in m])
            print(f"floor: {floorcodes.get((ds, n), 0):,} codes counted in C for each of the index's {len(fl)} queries;"
                  f" its counts equal the index's on {len(fl) - bad} of {len(fl)}")
        if base:
            print(f"simhash index p95 / median: {base['p95'] / base['med']:.2f}; by number of matches: "
                  + "; ".join(f"{lab}: {c} queries, median {fmt_ms(m)}" for lab, c, m, _ in by_matches(ds, n, r)))
    print()
    hdr = f"{'index':<22} | {'build s':>8} {'size MB':>9} {'WAL MB':>8} | {'simhash build / this':>20} {'size / this':>11}"
    print(hdr)
    print("-" * len(hdr))
    sb = build.get((ds, n, "simhash"))
    for v, name in [("simhash", "simhash"), ("simhash_1mb", "simhash, 1MB memory"),
                    ("btree4", "btree x4 blocks"), ("gin", "GIN block keys"),
                    ("btree_fp", "btree on fp")]:
        b = build.get((ds, n, v))
        if not b:
            continue
        rb = "" if v == "simhash" else f"{ratio(sb[0], b[0]):.2f}"
        rsz = "" if v == "simhash" else f"{ratio(sb[1], b[1]):.2f}"
        wal = "" if b[2] is None else f"{b[2] / 1e6:8.1f}"
        print(f"{name:<22} | {b[0] / 1000:8.1f} {b[1] / 1e6:9.1f} {wal:>8} | {rb:>20} {rsz:>11}")
    if (ds, n) in tsize:
        print(f"(table: {tsize[(ds, n)] / 1e6:.1f} MB; MB = 10^6 bytes)")
    a, b = ins.get((ds, n, "btree_fp")), ins.get((ds, n, "simhash"))
    if a or b:
        print()
        rows_ = (a or b)[2]
        half = (int(env['BENCH_INS_SECS']) + 1) // 2
        print(f"inserts: pgbench -c {env['BENCH_INS_CLIENTS']} -j {env['BENCH_INS_CLIENTS']}, one row per transaction, "
              f"into {rows_:,}-row copies of the table;")
        print(f"{2 * half} s per table, in segments of {half} s in the order btree, simhash, simhash, btree")
        hdr = f"{'table has only':<22} | {'tps':>9} {'rows added':>11} | {'simhash / this':>14}"
        print(hdr)
        print("-" * len(hdr))
        for v, name, x in [("btree_fp", "btree on fp", a), ("simhash", "simhash index", b)]:
            if x:
                rr = "" if v == "simhash" or not b else f"{ratio(b[0], x[0]):.2f}"
                print(f"{name:<22} | {x[0]:9.0f} {x[1]:11,} | {rr:>14}")
    for f in info.get((ds, n), []):
        print(f"simhash_index_info {f[0]}: blocks {f[1]}, masks {f[2]}, runs {f[3]} "
              f"({f[4]} entries), pending {f[5]} entries on {f[6]} pages")
    if (ds, n) in inscheck:
        c = inscheck[(ds, n)].split()
        ok = len(c) == 2 and c[0] == c[1]
        print(f"after inserts, 5 newest rows as queries (r=3): index {c[0] if c else '?'} matches, "
              f"seq scan {c[1] if len(c) > 1 else '?'}" + ("" if ok else "  <-- MISMATCH"))
    print("plans (first query):")
    for r in rs:
        for v, name in VARIANTS:
            if (ds, n, r, v) in plans:
                print(f"  r={r} {name}: {plan_summary(plans[(ds, n, r, v)])}")
    mm = mismatches(ds, n)
    for m in mm:
        print("MISMATCH: " + m)
    for m in floorbad.get((ds, n), []):
        print("MISMATCH: floor: " + m)

def print_explains():
    if not explains:
        return
    print()
    print("== slowest simhash-index query of each data set, size and radius: EXPLAIN (ANALYZE, BUFFERS), 2nd run ==")
    for key in sorted(explains):
        ds, n, r, v = key
        print(f"-- {ds}, {n:,} rows, r={r}")
        for l in explains[key]:
            print("   " + l)

def goals():
    sizes = sorted({n for _, n in order})
    if not sizes:
        return 0
    n = 10_000_000 if 10_000_000 in sizes else sizes[-1]
    print()
    note = "" if n == 10_000_000 else f" (the goals are stated at 10,000,000 rows; this run's largest size is {n:,})"
    print(f"== goals at {n:,} rows{note} ==")
    misses = 0
    def line(name, value, ok, fmt):
        nonlocal misses
        if value is None:
            print(f"{'n/a ':<5} {name}: not measured")
            return
        misses += 0 if ok else 1
        print(f"{'PASS' if ok else 'MISS':<5} {name}: {fmt.format(value)}")
    dss = [ds for ds in ("uniform", "skewed") if (ds, n) in order or any(k[0] == ds and k[1] == n for k in build)]
    def speedup(ds, r, v, goal, fmt):
        a, b = stats(ds, n, r, v), stats(ds, n, r, "simhash")
        x = ratio(a["med"], b["med"]) if a and b else None
        e = f" ({fmt_ms(a['med'])} / {fmt_ms(b['med'])} ms)" if a and b else ""
        line(f"{ds} r={r} median >= {goal}x faster than {'btree x4' if v == 'btree4' else 'seq scan'}",
             x, x is not None and x >= goal, fmt + e)
    for ds in dss:
        speedup(ds, 3, "btree4", 5, "{:.1f}x")
        speedup(ds, 3, "seqscan", 500, "{:.0f}x")
    s = stats("skewed", n, 3, "simhash")
    x = s["p95"] / s["med"] if s else None
    line("skewed r=3 p95 <= 2x its median", x, x is not None and x <= 2,
         "p95/median = {:.2f}" + (f" ({fmt_ms(s['p95'])} / {fmt_ms(s['med'])} ms)" if s else ""))
    if s:
        d = lat.get(("skewed", n, 3, "simhash"), {})
        few = [min(x[0] for x in runs) for runs in d.values() if runs[0][1] <= 10]
        if few:
            print(f"      (for comparison, not a goal: the {len(few)} queries with at most 10 matches: p95/median = "
                  f"{pct(few, 0.95) / pct(few, 0.5):.2f}; a match costs a heap fetch, so latency grows with the count)")
    for ds in dss:
        speedup(ds, 6, "btree4", 5, "{:.1f}x")
    for ds in dss:
        a, b = build.get((ds, n, "simhash")), build.get((ds, n, "btree4"))
        x = ratio(a[0], b[0]) if a and b else None
        line(f"{ds} build time <= the four btree indexes'", x, x is not None and x <= 1, "simhash / btree x4 = {:.3f}")
        x = ratio(a[1], b[1]) if a and b else None
        line(f"{ds} index size <= 2x the four btree indexes'", x, x is not None and x <= 2, "simhash / btree x4 = {:.3f}")
    for ds in dss:
        a, b = ins.get((ds, n, "simhash")), ins.get((ds, n, "btree_fp"))
        x = ratio(a[0], b[0]) if a and b else None
        line(f"{ds} insert rate >= 0.5x the btree-only table's", x, x is not None and x >= 0.5, "simhash / btree on fp = {:.3f}")
    return misses

if what == "header":
    print("simhash index access method benchmark")
    print(f"  command:  {envs.get('command')}")
    print(f"  started:  {envs.get('started')}")
    print(f"  cpu:      {envs.get('cpu')}")
    print(f"  server:   {envs.get('server')}")
    print(f"  binaries: {envs.get('binaries')}")
    print(f"  simhash:  {envs.get('simhash')}")
    print(f"  library:  {envs.get('library')}")
    print(f"  settings: {envs.get('settings')}")
    print(f"  index:    {envs.get('index')}")
    print("  method:   latency from clock_timestamp() around EXECUTE in a plpgsql loop (planning included),")
    print(f"            fastest of {env['BENCH_PASSES']} runs per query, each run in its own round over all variants;")
    print("            all queries of a data set in one session (a new backend pays a page fault on its first")
    print("            touch of each shared buffer); one backend, no parallel workers, jit off, autovacuum off;")
    print("            table and indexes " + ("loaded into shared_buffers with pg_prewarm" if envs.get("prewarm") == "1"
                                            else "NOT prewarmed (pg_prewarm missing)") + " before the queries;")
    print("            build time after a CHECKPOINT, same maintenance_work_mem for every index")
    print("  floor:    bench/scan_floor.c, compiled by this run: " + envs.get("floor", "?"))
    print("            the table's codes in one uint64 array, counted in C for the simhash index's queries;")
    print(f"            clock_gettime around each query, fastest of {env['BENCH_PASSES']} passes per query")
elif what == "final":
    print_explains()
    misses = goals()
    mm = [m for ds, n in order for m in mismatches(ds, n) + floorbad.get((ds, n), [])]
    bad_ins = [k for k, v in inscheck.items() if len(v.split()) != 2 or v.split()[0] != v.split()[1]]
    if mm or bad_ins:
        print()
        print(f"!!! {len(mm)} count mismatches between the simhash index and the other variants"
              + (f", {len(bad_ins)} after-insert check failures" if bad_ins else "") + " !!!")
        sys.exit(2)
else:
    ds, n = what.split()
    print_set(ds, int(n))
PY
}

# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------
report header
T_ALL=$(date +%s)
for n in "${SIZES[@]}"; do
	if [ -n "$SEQ_Q" ]; then SEQ_NQ=$SEQ_Q
	elif [ "$n" -le 2000000 ]; then SEQ_NQ=$NQ
	else SEQ_NQ=20; fi
	[ "$SEQ_NQ" -le "$NQ" ] || SEQ_NQ=$NQ
	for ds in $DATASETS; do
		T0=$(date +%s)
		log "$ds $n: generating the table"
		gen_table "$ds" "$n" >/dev/null
		gen_queries "$ds" "$n" >/dev/null
		build_indexes "$ds" "$n" >/dev/null
		prewarm "$ds"
		# rounds: every variant once per round, so that a noisy moment on the machine
		# hits one run of each query, not all of them; the fastest run counts
		measure_all "$ds" "$n"
		scan_floor "$ds" "$n"
		for r in $RADII; do explain_slowest "$ds" "$n" "$r"; done
		[ "$INS_SECS" = 0 ] || insert_bench "$ds" "$n" >/dev/null
		[ "$KEEP_TABLES" = 1 ] || psql_b -c "DROP TABLE IF EXISTS ixb_$ds, ixb_q" >/dev/null
		report "$ds $n"
		echo "($ds, $n rows: $(( $(date +%s) - T0 )) s in all)"
	done
done
if [ -n "$LIB_BEFORE" ] && [ "$(lib_id || true)" != "$LIB_BEFORE" ]; then
	echo
	if [ "$STARTED" = 1 ]; then
		echo "note: $LIB was replaced during the run; the scratch server preloaded it at start"
		echo "(shared_preload_libraries), so every figure is from the build named above"
	else
		echo "WARNING: $LIB was replaced during the run (sessions started after that loaded the new build)"
	fi
fi
echo
echo "total run time: $(( $(date +%s) - T_ALL )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
report final
