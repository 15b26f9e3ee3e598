#!/usr/bin/env bash
# dedup_bench.sh: deduplicating a whole table: the time to find every pair of rows
# within k = 3 bits and the groups, with the grouping window functions simhash_component() and
# simhash_leader() (in-memory multi-index batch mode), against what a user would do without
# them: the self-join through the simhash index, the self-join through four hand-made btree
# indexes on the 16-bit blocks, and a plain sequential-scan self-join. Everything is measured
# in one run on the same data, with each statement's peak memory.
#
# Usage:
#   bench/dedup_bench.sh [ROWS ...]
#
#   ROWS   table sizes, default "1000000 10000000". `bench/dedup_bench.sh 1000000` takes about
#          6 minutes on 2 cores (4 of them the 100k-row seq scan self-join). At 10M rows, the
#          default 1M outer rows of the btree self-join would take about 23 minutes (a probe of
#          the 10M-row block indexes costs 1.4 ms); use BENCH_BTREE_ROWS=100000 there (scaled
#          x100): the 10M size then takes about 10 minutes (seq scan 3.6, simhash index
#          self-join 2.6, btree 2.3; measured 2026-11-23).
#
# Data (one table db_t per size, bigint id primary key, fp simhash NOT NULL), generated in SQL
# after setseed(0.375), so every run sees the same rows; with NC = max(1, ROWS / 5) centres,
# centre c (0 <= c < NC) being hashint8extended(c, 42), row g = 1..ROWS draws, in this order,
# z, c, k, p1..p4, u1, u2 from random() and is
#   z <  0.2: a unique random fingerprint (u1 << 32) | u2, u1 and u2 uniform 32-bit
#   z >= 0.2: centre c = floor(random() * NC) with its bits p1..pk flipped, k = floor(random()
#             * 5) = 0..4, positions uniform 0..63 drawn with replacement (a position drawn
#             twice flips back, so a few rows get fewer flips); k = 0 gives exact copies.
# So ~80% of the rows sit in clusters of ~4 rows (Poisson) whose members are up to 8 bits
# apart (4 from the centre), and ~20% are random singletons.
#
# Variants, k = 3, each in a FRESH connection (so its peak memory is its own), timed on the
# server: clock_timestamp() before and after the statement (psql \gset), planning included;
# the result rows are consumed by an aggregate in the same statement:
#   component  SELECT count(*) FILTER (WHERE c = id), count(*) FILTER (WHERE c <> id)
#              FROM (SELECT id, simhash_component(id, fp, 3) OVER (ORDER BY id) AS c FROM db_t) s
#              -> groups (rows that represent their group) and rows in a group of >= 2 that
#              are not its representative. (An unused window column is not computed; here it
#              is used.) client_min_messages = debug1 captures the function's own line:
#              distinct fingerprints, comparisons and pairs of DISTINCT fingerprints.
#   leader     the same with simhash_leader(id, fp, 3)
#   index      CREATE INDEX db_t_simhash ON db_t USING simhash (fp) (timed on its own: "build"),
#              then SELECT count(*) FROM db_t a JOIN db_t b ON b.fp <~> a.fp <= 3 AND a.id < b.id
#              (the plan must be a Nested Loop over an Index Scan using db_t_simhash); pairs of
#              rows, exact copies included
#   btree      four btree expression indexes on the 16-bit blocks ((fp::int8 >> 48) & 65535, ...
#              >> 32, >> 16, fp::int8 & 65535; build timed, summed), and the self-join
#              ON (b0(b) = b0(a) OR b1(b) = b1(a) OR b2(b) = b2(a) OR b3(b) = b3(a))
#                 AND b.fp <~> a.fp <= 3 AND a.id < b.id          (pigeonhole: r <= 3 < 4 blocks)
#              in a transaction that drops the simhash index (rolled back); the plan must use a
#              BitmapOr of the block indexes. It is slow, so the outer side is restricted to
#              a.id <= B = min(ROWS, BENCH_BTREE_ROWS) (default 1M): every probe still goes to
#              the whole table and its indexes, so a probe costs what it would in the full
#              join, and the time is scaled LINEARLY by ROWS / B (marked "scaled" when B < ROWS).
#   seqscan    the self-join on the first S = min(ROWS, BENCH_SEQ_ROWS) (default 100k) rows,
#              WHERE a.id <= S AND b.id <= S, index and bitmap scans off: a Nested Loop over a
#              Materialize that evaluates simhash_hamming_within() in C for all S^2 (a, b); its time is
#              scaled QUADRATICALLY by (ROWS / S)^2 (marked "scaled" when S < ROWS).
# Ratios ("x faster") are the (scaled) baseline's time over the variant's time, statement
# against statement: index builds are NOT included on either side (they are shown apart).
#
# Checks (a failure prints MISMATCH and the script exits 2):
#   - pair counts: the index join also counts its pairs with a.id <= B and with b.id <= S
#     (FILTER, same statement); they must equal the btree join's and the seq scan's counts;
#   - groups on the first S rows: simhash_component and simhash_leader over those rows
#     against references computed in SQL from the pairs the simhash index finds among them
#     (components: label propagation to the smallest id; leaders: every rule of leader
#     clustering checked against the pairs: each row's representative is a leader, the
#     earliest leader within 3 bits, and no leader is within 3 bits of an earlier one).
#
# Peak memory: after each variant's statement, its backend's /proc/self/status, read on the
# server with pg_read_file (needs superuser or pg_read_server_files; Linux): VmHWM (peak
# resident set) in MB = 10^6 bytes. It counts the shared_buffers pages the backend touched,
# which is why the scratch server runs with shared_buffers = 128MB; "private" is VmHWM minus
# RssShmem at the end (shared pages only accumulate, so this is a lower bound of the private
# peak, exact when the shared part was already at its end value at the peak); "before" is
# VmRSS right after connecting and SETs. The groups' estimate printed beside them is the
# doc/dedup.md's 60 bytes/row (+ 16 bytes per pair of distinct fingerprints for leaders); the private
# peak also holds the backend's own baseline and the WindowAgg's tuplestore (the partition,
# in memory up to work_mem, then spilled to a temporary file).
#
# Settings for every variant: one core (max_parallel_workers_per_gather = 0,
# max_parallel_maintenance_workers = 0), jit off, maintenance_work_mem = BENCH_MWM (2GB; the
# grouping functions need ~60 bytes/row in it), work_mem = BENCH_WORK_MEM (64MB), autovacuum
# off on the table. Caches are not prewarmed: the table was just written and VACUUMed, and
# every variant starts by reading it (through the OS page cache).
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE, ...); the
# database needs the simhash extension installed (`make install`); the script creates and
# drops tables named db_*. Session settings are passed in PGOPTIONS.
# Scratch server: with BENCH_START_SERVER=1, or when no server answers at the configured
# connection, the script initdb's (first time) and starts a cluster of its own under
# $BENCH_DIR (default /tmp/simhash-bench-$BENCH_PORT), on port $BENCH_PORT (default 55438,
# Unix socket only), as the postgres OS user when run as root, with shared_buffers = 128MB,
# max_wal_size = 10GB, checkpoint_timeout = 30min, autovacuum off and
# shared_preload_libraries = simhash, and stops it at exit.
#
# Other settings (environment):
#   BENCH_BTREE_ROWS=1000000   outer rows of the btree self-join (B above)
#   BENCH_SEQ_ROWS=100000      rows of the sequential-scan self-join and of the group checks (S)
#   BENCH_MWM=2GB BENCH_WORK_MEM=64MB
#   BENCH_KEEP_TABLES=0        1 keeps the last table at exit
#   BENCH_GROUPS_ONLY=0        1 runs only the two grouping variants (no self-joins, no checks):
#                              how time and memory grow at sizes where the self-joins would take
#                              hours, e.g. BENCH_GROUPS_ONLY=1 BENCH_MWM=8GB bench/dedup_bench.sh 100000000
#   PG_BINDIR                  server binaries (default: pg_config --bindir, else
#                              /usr/lib/postgresql/15/bin)
#
# Example: BENCH_START_SERVER=1 bench/dedup_bench.sh | tee bench/results/dedup_bench-DATE.txt
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BTREE_ROWS=${BENCH_BTREE_ROWS:-1000000}
SEQ_ROWS=${BENCH_SEQ_ROWS:-100000}
MWM=${BENCH_MWM:-2GB}
WORK_MEM=${BENCH_WORK_MEM:-64MB}
KEEP_TABLES=${BENCH_KEEP_TABLES:-0}
GROUPS_ONLY=${BENCH_GROUPS_ONLY:-0}
BENCH_PORT=${BENCH_PORT:-55438}
BENCH_DIR=${BENCH_DIR:-/tmp/simhash-bench-$BENCH_PORT}
K=3
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000 10000000)

if [ -z "${PG_BINDIR:-}" ]; then
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
fi

die() { echo "dedup_bench: $*" >&2; exit 1; }
isint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for n in "${SIZES[@]}"; do isint "$n" || die "table size '$n' is not a positive integer"; done
isint "$BTREE_ROWS" || die "BENCH_BTREE_ROWS must be a positive integer"
isint "$SEQ_ROWS" || die "BENCH_SEQ_ROWS must be a positive integer"
command -v python3 >/dev/null || die "python3 is needed"
command -v psql >/dev/null || die "psql is needed"

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
		psql -X -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS db_t" >/dev/null 2>&1 || true
	fi
	if [ "$STARTED" = 1 ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -m fast stop >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
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
	as_owner "$PG_BINDIR/pg_ctl" -D "$BENCH_DIR/data" -l "$BENCH_DIR/server.log" -w -t 120 \
		-o "-p $BENCH_PORT -k $BENCH_DIR -c listen_addresses='' -c shared_buffers=128MB -c max_wal_size=10GB -c checkpoint_timeout=30min -c autovacuum=off -c shared_preload_libraries=simhash" \
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

export PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=$MWM -c work_mem=$WORK_MEM -c synchronous_commit=off -c max_parallel_workers_per_gather=0 -c max_parallel_maintenance_workers=0 -c jit=off -c client_min_messages=warning"

psql_b() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_t() { psql -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' "$@"; }

if [ "$STARTED" = 1 ]; then
	psql_b -c "DROP EXTENSION IF EXISTS simhash CASCADE" >/dev/null
fi
psql_b -c "CREATE EXTENSION IF NOT EXISTS simhash" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed? cd $ROOT && make && make install)"
S=$(psql_t -c "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'simhash'")
psql_t -c "SELECT 1 FROM pg_proc WHERE proname = 'simhash_component' AND pronamespace = '$S'::regnamespace" | grep -q 1 ||
	die "this simhash build has no simhash_component (cd $ROOT && make && make install)"
DB_READY=1

# the backend's memory, from its own /proc/self/status: VmRSS VmHWM RssShmem RssFile (kB)
MEMSQL="SELECT 'mem', (regexp_match(s, 'VmRSS:\\s+(\\d+)'))[1], (regexp_match(s, 'VmHWM:\\s+(\\d+)'))[1], (regexp_match(s, 'RssShmem:\\s+(\\d+)'))[1], (regexp_match(s, 'RssFile:\\s+(\\d+)'))[1] FROM pg_read_file('/proc/self/status') s"
if ! psql_t -c "$MEMSQL" >/dev/null 2>&1; then
	echo "note: cannot read /proc/self/status on the server (not Linux, or no pg_read_server_files): no memory figures" >&2
	MEMSQL="SELECT 'mem', '', '', '', ''"
fi

RES=$WORK/results.tsv
: >"$RES"
log() { echo "[$(date '+%H:%M:%S')] $*" >&2; }

GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null)" ]; then GITREV="$GITREV+dirty(src)"; fi
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
{
	printf 'env\tcommand\t%s\n' "$(env | grep '^BENCH_' | sort | tr '\n' ' ')bench/dedup_bench.sh ${SIZES[*]}"
	printf 'env\tcpu\t%s (%s cpus visible), %s GiB RAM\n' "${CPU:-$(uname -m)}" "$(nproc 2>/dev/null || echo '?')" \
		"$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo '?')"
	printf 'env\tserver\t%s\n' "$(psql_t -c "SELECT version()")"
	printf 'env\tsimhash\textension %s, checkout %s%s\n' "$(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")" "$GITREV" \
		"$( [ "$STARTED" = 1 ] && echo ", library preloaded by the scratch server")"
	printf 'env\tsettings\t%s\n' "$(psql_t -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY o) FROM unnest(ARRAY['shared_buffers', 'maintenance_work_mem', 'work_mem', 'max_parallel_workers_per_gather', 'max_parallel_maintenance_workers', 'jit', 'huge_pages']) WITH ORDINALITY u(name, o)")"
	printf 'env\tstarted\t%s, load average %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
} >>"$RES"

# ---------------------------------------------------------------------------
# SQL pieces
# ---------------------------------------------------------------------------
blk() {	# block j of $1.fp (j = 0: the top 16 bits), as int8: the btree index expressions
	case $2 in
		0) echo "(($1fp::int8 >> 48) & 65535)" ;;
		1) echo "(($1fp::int8 >> 32) & 65535)" ;;
		2) echo "(($1fp::int8 >> 16) & 65535)" ;;
		3) echo "($1fp::int8 & 65535)" ;;
	esac
}
D="OPERATOR($S.<~>)"
group_sql() {	# function
	echo "SELECT count(*) FILTER (WHERE c = id) AS groups, count(*) FILTER (WHERE c <> id) AS dups FROM (SELECT id, $S.$1(id, fp, $K) OVER (ORDER BY id) AS c FROM db_t) s"
}
index_sql() {	# B S
	echo "SELECT count(*) AS pairs, count(*) FILTER (WHERE a.id <= $1) AS pairs_b, count(*) FILTER (WHERE b.id <= $2) AS pairs_s FROM db_t a JOIN db_t b ON b.fp $D a.fp <= $K AND a.id < b.id"
}
btree_sql() {	# B
	local j cond=""
	for j in 0 1 2 3; do
		[ -z "$cond" ] || cond="$cond OR "
		cond="$cond$(blk b. $j) = $(blk a. $j)"
	done
	echo "SELECT count(*) AS pairs FROM db_t a JOIN db_t b ON ($cond) AND b.fp $D a.fp <= $K AND a.id < b.id WHERE a.id <= $1"
}
seq_sql() {	# S
	echo "SELECT count(*) AS pairs FROM db_t a JOIN db_t b ON b.fp $D a.fp <= $K AND a.id < b.id WHERE a.id <= $1 AND b.id <= $1"
}

gen_table() {	# n
	local n=$1
	psql_b <<SQL
DROP TABLE IF EXISTS db_t;
CREATE TABLE db_t (id int8 PRIMARY KEY, fp $S.simhash NOT NULL) WITH (autovacuum_enabled = off);
SQL
	psql_b -v tbl=db_t -v rows="$n" -v ext="$S" -f "$ROOT/bench/data/clustered.sql"
	psql_b <<SQL
VACUUM (FREEZE, ANALYZE) db_t;
SQL
}

# one variant in a fresh connection: plan (EXPLAIN, COSTS OFF), memory before, the timed
# statement, memory after. Appends "plan" lines and one "var" line to $RES.
#   run_variant n name "pre-SQL" "statement" "post-SQL" [stderr file]
run_variant() {
	local n=$1 name=$2 pre=$3 sql=$4 post=$5 err=${6:-/dev/null} out=$WORK/var.out
	log "$n rows: $name"
	psql_t >"$out" 2>"$err" <<SQL
$pre
EXPLAIN (COSTS OFF) $sql;
$MEMSQL;
SELECT clock_timestamp() AS db_t0 \\gset
SELECT 'res', r.* FROM ($sql) r;
SELECT 'time', extract(epoch FROM clock_timestamp() - :'db_t0'::timestamptz);
$MEMSQL;
$post
SQL
	awk -F'\t' -v OFS='\t' -v n="$n" -v v="$name" '
		$1 == "mem" { m[++nm] = $2 OFS $3 OFS $4 OFS $5; next }
		$1 == "res" { r = $2; for (i = 3; i <= NF; i++) r = r " " $i; next }
		$1 == "time" { t = $2; next }
		{ print "plan", n, v, $0 }
		END { print "var", n, v, t, r, m[1], m[2] }' "$out" >>"$RES"
}

plan_of() {	# n name
	awk -F'\t' -v n="$1" -v v="$2" '$1 == "plan" && $2 == n && $3 == v { print $4 }' "$RES"
}
need_plan() {	# n name pattern
	if ! plan_of "$1" "$2" | grep -qE -- "$3"; then
		plan_of "$1" "$2" >&2
		die "$1 rows, $2: the plan does not match '$3'"
	fi
}

timed_build() {	# n name "statements"
	local out
	out=$(psql_t <<SQL
CHECKPOINT;
SELECT clock_timestamp() AS t0 \\gset
$3
SELECT extract(epoch FROM clock_timestamp() - :'t0'::timestamptz);
SQL
)
	printf 'build\t%s\t%s\t%s\n' "$1" "$2" "$out" >>"$RES"
}

# the group checks on the first s rows (untimed, one session): prints "check" lines
check_groups() {	# n s
	local n=$1 s=$2
	log "$n rows: checks on the first $s rows"
	psql_t <<SQL | sed "s/^/check\t$n\t/" >>"$RES"
SET enable_seqscan = off;
CREATE TEMP TABLE db_pairs AS
  SELECT a.id AS x, b.id AS y FROM db_t a JOIN db_t b ON b.fp $D a.fp <= $K AND a.id < b.id
  WHERE a.id <= $s AND b.id <= $s;
RESET enable_seqscan;
CREATE TEMP TABLE db_edge AS SELECT x, y FROM db_pairs UNION ALL SELECT y, x FROM db_pairs;
CREATE INDEX ON db_edge (x);
CREATE TEMP TABLE db_comp AS
  SELECT id, $S.simhash_component(id, fp, $K) OVER (ORDER BY id) AS rep FROM db_t WHERE id <= $s;
CREATE TEMP TABLE db_lead AS
  SELECT id, $S.simhash_leader(id, fp, $K) OVER (ORDER BY id) AS rep FROM db_t WHERE id <= $s;
ANALYZE db_edge, db_comp, db_lead;
-- components: propagate the smallest id over the pairs until nothing changes
CREATE TEMP TABLE db_lab AS SELECT id, id AS lab FROM db_t WHERE id <= $s;
DO \$\$
DECLARE changed bigint;
BEGIN
  LOOP
    UPDATE db_lab l SET lab = m.lab
    FROM (SELECT e.x, min(o.lab) AS lab FROM db_edge e JOIN db_lab o ON o.id = e.y GROUP BY e.x) m
    WHERE l.id = m.x AND m.lab < l.lab;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
END \$\$;
SELECT 'pairs', count(*) FROM db_pairs;
SELECT 'component_rows', count(*), count(*) FILTER (WHERE c.rep IS DISTINCT FROM l.lab),
       count(DISTINCT l.lab)
FROM db_lab l FULL JOIN db_comp c USING (id);
-- leaders: L = rows that are their own representative
SELECT 'leader_rows', count(*),
  count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM db_lead r WHERE r.id = d.rep AND r.rep = r.id))
  + count(*) FILTER (WHERE d.rep <> d.id AND (d.rep > d.id OR NOT EXISTS (SELECT 1 FROM db_edge e WHERE e.x = d.id AND e.y = d.rep)))
  + count(*) FILTER (WHERE EXISTS (SELECT 1 FROM db_edge e JOIN db_lead l ON l.id = e.y AND l.rep = l.id
                                   WHERE e.x = d.id AND e.y < least(d.rep, d.id))),
  count(*) FILTER (WHERE d.rep = d.id)
FROM db_lead d;
SQL
}

# ---------------------------------------------------------------------------
# one size
# ---------------------------------------------------------------------------
run_size() {	# n
	local n=$1 b s t0
	b=$BTREE_ROWS; [ "$b" -le "$n" ] || b=$n
	s=$SEQ_ROWS; [ "$s" -le "$n" ] || s=$n
	printf 'size\t%s\t%s\t%s\n' "$n" "$b" "$s" >>"$RES"
	log "$n rows: generating the table"
	t0=$(date +%s.%N)
	gen_table "$n" >/dev/null
	printf 'gen\t%s\t%s\t%s\n' "$n" "$(python3 -c "import time; print(round(time.time() - $t0, 1))")" \
		"$(psql_t -c "SELECT pg_relation_size('db_t'), count(DISTINCT fp) FROM db_t")" >>"$RES"
	# groups (only the primary key exists)
	for f in simhash_component simhash_leader; do
		run_variant "$n" "${f#simhash_}" "SET client_min_messages = debug1;" "$(group_sql $f)" "" "$WORK/debug.err"
		printf 'debug\t%s\t%s\t%s\n' "$n" "${f#simhash_}" "$(grep -m1 "^DEBUG: *$f: [0-9]* rows," "$WORK/debug.err" | sed 's/^[A-Z0-9]*: *//')" >>"$RES"
	done
	need_plan "$n" component "WindowAgg"
	need_plan "$n" leader "WindowAgg"
	if [ "$GROUPS_ONLY" = 1 ]; then
		[ "$KEEP_TABLES" = 1 ] || psql_b -c "DROP TABLE db_t" >/dev/null
		return
	fi
	# sequential scan self-join on the first s rows
	run_variant "$n" seqscan "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;" "$(seq_sql "$s")" ""
	need_plan "$n" seqscan "Seq Scan on db_t"
	if plan_of "$n" seqscan | grep -q "Index"; then die "$n rows, seqscan: the plan uses an index"; fi
	# the simhash index self-join
	log "$n rows: CREATE INDEX USING simhash"
	timed_build "$n" index "CREATE INDEX db_t_simhash ON db_t USING simhash (fp);"
	psql_b -c "ANALYZE db_t"
	run_variant "$n" index "" "$(index_sql "$b" "$s")" ""
	need_plan "$n" index "Index Scan using db_t_simhash"
	need_plan "$n" index "Nested Loop"
	check_groups "$n" "$s"
	# the btree block self-join (outer rows a.id <= b), without the simhash index
	log "$n rows: four btree block indexes"
	timed_build "$n" btree "$(for j in 0 1 2 3; do echo "CREATE INDEX db_t_b$j ON db_t ($(blk "" $j));"; done) ANALYZE db_t;"
	run_variant "$n" btree "BEGIN; DROP INDEX db_t_simhash;" "$(btree_sql "$b")" "ROLLBACK;"
	need_plan "$n" btree "BitmapOr"
	need_plan "$n" btree "db_t_b0"
	[ "$KEEP_TABLES" = 1 ] || psql_b -c "DROP TABLE db_t" >/dev/null
}

# ---------------------------------------------------------------------------
# the report (reads $RES)
# ---------------------------------------------------------------------------
report() {	# "header" | "size N" | "final"
	BENCH_RES=$RES BENCH_WHAT=$1 BENCH_K=$K BENCH_GROUPS_ONLY=$GROUPS_ONLY python3 - <<'PY'
import os, sys
from collections import defaultdict

env = os.environ
what = env["BENCH_WHAT"]
K = int(env["BENCH_K"])
envs, var, plans, build, debug, checks, sizes, gen = {}, {}, defaultdict(list), {}, {}, defaultdict(dict), {}, {}
for l in open(env["BENCH_RES"]):
    f = l.rstrip("\n").split("\t")
    if f[0] == "env":
        envs[f[1]] = f[2]
    elif f[0] == "size":
        sizes[int(f[1])] = (int(f[2]), int(f[3]))
    elif f[0] == "gen":
        gen[int(f[1])] = (float(f[2]), int(f[3]), int(f[4]))
    elif f[0] == "var":
        n = int(f[1])
        res = [int(x) for x in f[4].split()] if f[4] else []
        mem = [int(x) if x else None for x in f[5:13]] if len(f) >= 13 else [None] * 8
        var[(n, f[2])] = {"s": float(f[3]) if f[3] else None, "res": res, "mem0": mem[:4], "mem1": mem[4:]}
    elif f[0] == "plan":
        plans[(int(f[1]), f[2])].append(f[3])
    elif f[0] == "build":
        build[(int(f[1]), f[2])] = float(f[3])
    elif f[0] == "debug":
        debug[(int(f[1]), f[2])] = f[3]
    elif f[0] == "check":
        checks[int(f[1])][f[2]] = [int(x) for x in f[3:]]

def mb(kb):
    return None if kb is None else kb * 1024 / 1e6

def fmt_s(x):
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 1000 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"

def fmt_mb(x):
    return "-" if x is None else f"{x:.0f}"

def timing(n, v):
    """(seconds for the whole table, scaled?, note)"""
    b, s = sizes[n]
    x = var.get((n, v))
    if not x or x["s"] is None:
        return None, False, ""
    if v == "btree":
        return x["s"] * n / b, b < n, f"{b:,} outer rows x {n / b:g}" if b < n else ""
    if v == "seqscan":
        return x["s"] * (n / s) ** 2, s < n, f"{s:,} rows x {(n / s) ** 2:g}" if s < n else ""
    return x["s"], False, ""

def mismatches(n):
    out = []
    b, s = sizes[n]
    ix, bt, sq = var.get((n, "index")), var.get((n, "btree")), var.get((n, "seqscan"))
    if ix and bt and ix["res"][1] != bt["res"][0]:
        out.append(f"{n:,} rows: pairs with a.id <= {b:,}: simhash index {ix['res'][1]}, btree blocks {bt['res'][0]}")
    if ix and sq and ix["res"][2] != sq["res"][0]:
        out.append(f"{n:,} rows: pairs among the first {s:,} rows: simhash index {ix['res'][2]}, seq scan {sq['res'][0]}")
    c = checks.get(n, {})
    if c:
        if sq and c["pairs"][0] != sq["res"][0]:
            out.append(f"{n:,} rows: pairs among the first {s:,} rows: check's index join {c['pairs'][0]}, seq scan {sq['res'][0]}")
        if c["component_rows"][0] != s or c["component_rows"][1] != 0:
            out.append(f"{n:,} rows: simhash_component on the first {s:,} rows: {c['component_rows'][1]} of "
                       f"{c['component_rows'][0]} rows differ from the components of the index pairs")
        if c["leader_rows"][0] != s or c["leader_rows"][1] != 0:
            out.append(f"{n:,} rows: simhash_leader on the first {s:,} rows: {c['leader_rows'][1]} violations of leader clustering")
    elif (n, "index") in var:
        out.append(f"{n:,} rows: the group checks did not run")
    return out

NAMES = [("component", "groups: simhash_component"), ("leader", "groups: simhash_leader"),
         ("index", "pairs: simhash index self-join"), ("btree", "pairs: btree x4 block self-join"),
         ("seqscan", "pairs: seq scan self-join")]

def print_size(n):
    b, s = sizes[n]
    g = gen.get(n)
    print()
    print(f"== {n:,} rows, radius {K} ==")
    if g:
        print(f"table: {g[1] / 1e6:.1f} MB, {g[2]:,} distinct fingerprints, generated in {g[0]:.1f} s")
    bt, _, _ = timing(n, "btree")
    sq, _, _ = timing(n, "seqscan")
    hdr = (f"{'variant':<34} | {'time s':>8} | {'pairs':>11} | {'groups':>9} {'in groups':>9} | "
           f"{'peak MB':>7} {'private':>7} {'before':>6} | {'x btree':>7} {'x seq':>7} | note")
    print(hdr)
    print("-" * len(hdr))
    for v, name in NAMES:
        x = var.get((n, v))
        if not x:
            continue
        t, scaled, note = timing(n, v)
        pairs = groups = ingroups = ""
        if v in ("component", "leader"):
            groups, ingroups = f"{x['res'][0]:,}", f"{x['res'][1]:,}"
        elif v == "index":
            pairs = f"{x['res'][0]:,}"
        elif v == "btree":
            pairs = f"{x['res'][0]:,}" + ("*" if b < n else "")
        elif v == "seqscan":
            pairs = f"{x['res'][0]:,}" + ("*" if s < n else "")
        m0, m1 = x["mem0"], x["mem1"]
        peak = mb(m1[1])
        priv = mb(m1[1] - m1[2]) if m1[1] is not None and m1[2] is not None else None
        before = mb(m0[0])
        rb = f"{bt / t:.1f}" if bt and t and v not in ("btree", "seqscan") else ""
        rs = f"{sq / t:.0f}" if sq and t and v != "seqscan" else ""
        tt = fmt_s(t) + ("*" if scaled else "")
        notes = [note] if note else []
        if (n, v) in build:
            notes.append(f"index build {fmt_s(build[(n, v)])} s, not included")
        if v in ("btree", "seqscan") and x["s"] is not None and scaled:
            notes.append(f"measured {fmt_s(x['s'])} s")
        print(f"{name:<34} | {tt:>8} | {pairs:>11} | {groups:>9} {ingroups:>9} | "
              f"{fmt_mb(peak):>7} {fmt_mb(priv):>7} {fmt_mb(before):>6} | {rb:>7} {rs:>7} | {'; '.join(notes)}")
    print("* scaled: btree time x ROWS / outer rows (linear), seq scan time x (ROWS / rows)^2; their pair")
    print("  counts are those of the part measured (btree: pairs with a.id <= outer rows; seq scan: pairs")
    print(f"  among the first {s:,} rows). 'x btree' / 'x seq': the (scaled) baseline's time / this time.")
    print("  'in groups': rows that are not their group's representative. peak = VmHWM, private = VmHWM -")
    print("  RssShmem at the end, before = VmRSS before the statement (MB = 10^6 bytes).")
    for v in ("component", "leader"):
        d = debug.get((n, v))
        if d:
            print(f"  DEBUG1 {d}")
    for v in ("component", "leader"):
        x = var.get((n, v))
        if x and x["mem1"][1] is not None:
            pairs = 0
            d = debug.get((n, v), "")
            if v == "leader" and d.endswith(" pairs"):
                pairs = int(d.split()[-2])
            est = (60 * n + 16 * pairs) / 1e6
            priv = mb(x["mem1"][1] - x["mem1"][2])
            print(f"  {v}: README estimate {est:.0f} MB (60 B/row{' + 16 B/pair' if v == 'leader' else ''}); "
                  f"private peak {priv:.0f} MB, {priv / est:.2f}x the estimate, {x['mem1'][1] - x['mem0'][0]:,} kB "
                  f"above the backend's RSS before the statement")
    ix = var.get((n, "index"))
    if ix:
        print(f"  simhash index pairs with a.id <= {b:,}: {ix['res'][1]:,}; among the first {s:,} rows: {ix['res'][2]:,}")
    c = checks.get(n)
    if c:
        print(f"  checks on the first {s:,} rows: {c['pairs'][0]:,} index pairs; simhash_component: "
              f"{c['component_rows'][2]:,} components, {c['component_rows'][1]} rows differ from label propagation "
              f"over the index pairs; simhash_leader: {c['leader_rows'][2]:,} leaders, "
              f"{c['leader_rows'][1]} violations of the leader rules")
    for m in mismatches(n):
        print("MISMATCH: " + m)

def print_plans(n):
    print()
    print(f"== plans ({n:,} rows; EXPLAIN (COSTS OFF) of each timed statement) ==")
    for v, name in NAMES:
        if plans.get((n, v)):
            print(f"-- {name}")
            for l in plans[(n, v)]:
                print("   " + l)

def goals():
    if 1_000_000 not in sizes:
        print()
        print("== goals: stated at 1,000,000 rows, not measured in this run ==")
        return
    n = 1_000_000
    print()
    print("== goals at 1,000,000 rows ==")
    bt, _, _ = timing(n, "btree")
    for v in ("component", "leader"):
        t, _, _ = timing(n, v)
        if t is None:
            continue
        print(f"{'PASS' if t < 10 else 'MISS':<5} groups with simhash_{v} in under 10 s: {t:.2f} s")
        if bt:
            print(f"{'PASS' if bt / t >= 20 else 'MISS':<5} simhash_{v} >= 20x faster than the btree-block self-join: "
                  f"{bt / t:.1f}x ({fmt_s(bt)} / {t:.2f} s)")

if what == "header":
    print("dedup benchmark: all pairs and groups within k = 3 bits")
    for k in ("command", "started", "cpu", "server", "simhash", "settings"):
        print(f"  {k + ':':<10}{envs.get(k)}")
    print("  method:   each statement in a fresh connection, timed by the server (clock_timestamp() before")
    print("            and after, planning included), one backend, no parallel workers, jit off; peak memory")
    print("            from the backend's /proc/self/status afterwards")
elif what.startswith("size "):
    n = int(what.split()[1])
    print_size(n)
    if n == min(sizes):
        print_plans(n)
else:
    goals()
    mm = [m for n in sizes for m in mismatches(n)]
    if mm:
        print()
        print(f"!!! {len(mm)} mismatches !!!")
        sys.exit(2)
    print()
    if env["BENCH_GROUPS_ONLY"] == "1":
        print("groups only (BENCH_GROUPS_ONLY=1): no self-joins and no checks were run")
    else:
        print("all checks passed: pair counts agree between the simhash index, btree and seq scan self-joins;")
        print("groups agree with references computed from the index pairs")
PY
}

# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------
report header
T_ALL=$(date +%s)
for n in "${SIZES[@]}"; do
	T0=$(date +%s)
	run_size "$n"
	report "size $n"
	echo "($n rows: $(( $(date +%s) - T0 )) s in all)"
done
echo
echo "total run time: $(( $(date +%s) - T_ALL )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
report final
