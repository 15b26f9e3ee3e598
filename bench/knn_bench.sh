#!/usr/bin/env bash
# knn_bench.sh: exact nearest-neighbour search with the simhash index, ORDER BY fp <-> q
# LIMIT k, against the sequential scan with top-N sort that answers the same query without
# it; and insert throughput under the near-duplicate constraint
# EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&) against a plain simhash index and no
# index. Beside each index latency, its scan floor: a C popcount scan of the same codes for
# the same centres. Everything is measured in one run on the same data and the same server.
#
# Usage:
#   bench/knn_bench.sh [ROWS ...]
#
#   ROWS   table sizes, default "1000000 10000000" (about 25 minutes on 2 cores);
#          `bench/knn_bench.sh 1000000` is a quick run (about 5 minutes).
#
#   BENCH_START_SERVER=1 bench/knn_bench.sh > bench/results/knn_bench-DATE.txt
#
# Data sets: exactly those of bench/index_bench.sh (the same SQL and seeds, copied here):
#   uniform  random 64-bit fingerprints (two random() calls of 32 bits each), setseed(0.125)
#   skewed   50,000 centres (hashint8extended(c, 42), c = 0..49999); each row is a random
#            centre with 0..6 bits flipped (positions drawn with replacement); then 20% of
#            the rows get their top 16 bits cleared; setseed(0.25)
# Table knb_<ds>(id int8, fp simhash), VACUUM (FREEZE, ANALYZE), then
# CREATE INDEX knb_<ds>_fp ON knb_<ds> USING simhash (fp) (timed, after a CHECKPOINT), ANALYZE.
#
# Query centres: index_bench's radius-3 queries (the same SQL and seed, setseed(0.5), drawn
# for its radii 3 and 6 so that the r = 3 draws are the same): BENCH_QUERIES (200) centres,
# each a random row of the table with 0..3 random bits flipped.
#
# Queries, each run in a plpgsql function with EXECUTE ... USING (planned for every run, as
# a client's query would be):
#   SELECT count(id), array_agg(d) FROM (SELECT id, fp <-> $1 AS d FROM t
#                                        ORDER BY fp <-> $1 LIMIT k) s
#   index     default planner settings; the plan must be "Index Scan using knb_<ds>_fp ...
#             Order By: (fp <-> q)" (checked on EXPLAIN; if the planner does not pick it by
#             itself, the run says so and uses enable_seqscan = off, enable_sort = off)
#             k = 10 on every centre; k = 1 and k = 100 on the first BENCH_K_QUERIES (200)
#   seq scan  enable_indexscan, enable_bitmapscan, enable_indexonlyscan off: Seq Scan and a
#             top-N heapsort; the plan must show "Seq Scan on knb_<ds>" and "Sort". It is
#             slow, so only the first BENCH_SEQ_QUERIES centres are timed (default: all of
#             them up to 2M rows, else 20)
# Latency is measured on the server: clock_timestamp() around EXECUTE (planning + execution)
# in one session per data set, after warm-up queries (5 index, 1 seq scan), with the table,
# index and centres loaded into shared_buffers (pg_prewarm). BENCH_PASSES (3) rounds over all
# variants; a query's latency is the fastest of its rounds (a moment of load on the machine
# hits one run, not all). Median and p95 are percentile_cont over the centres; "seq / index"
# is the ratio of the medians. One backend, no parallel workers, jit off.
#
# Exactness: the distances each query returns (array_agg(d), in the order returned) must
# equal the sequential scan's for the same centre and k: for k = 10 on EVERY index centre
# (centres beyond the timed seq-scan subset are checked by one untimed sequential pass), for
# k = 1 and k = 100 on the seq-scan subset (one sequential pass each, its times shown for
# information), and every round must return the same distances. Rows beyond the ties at the
# k-th distance may differ, so ids are not compared (sql/knn.sql and TAP 017 do that).
# A mismatch is listed and the script exits 2.
#
# Scan floor: beside every index figure (median and p95, per data set, size and k), the time
# a plain C scan of the same codes takes for the same centres, and the ratio index / floor
# (columns "floor ms" and "x floor"; in the summary, a table of its own): the physical
# reference of each latency, measured in the same run. bench/scan_floor.c is compiled at
# start into the scratch directory with cc -O3 -march=native (else -O2 -mpopcnt, else -O2;
# the flags used are printed); after the index rounds it reads the table's fingerprints
# (COPY (SELECT fp::int8 ... ORDER BY id) TO STDOUT) into one uint64 array and, for each
# centre and k the index ran (in the index's order), finds the k smallest popcount(code ^ q)
# in one pass, timed by clock_gettime(CLOCK_MONOTONIC) around each query, BENCH_PASSES passes,
# the fastest counting. Its distances must equal the index's; a difference is a mismatch
# (listed, exit 2) like the others.
#
# Inserts (BENCH_INSERT_ROWS=200000, 0 skips): three fresh copies of the 1M-row uniform
# table (BENCH_INSERT_BASE rows, the same rows as the uniform data set at that size):
#   none        no index
#   plain       CREATE INDEX ... USING simhash (fp)
#   constraint  ALTER TABLE ... ADD CONSTRAINT ... EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&)
# each VACUUM ANALYZE'd, then BENCH_INSERT_ROWS new uniform rows (pre-generated in a table
# of their own, setseed(0.875), the same rows for all three) are added by
#   INSERT INTO t SELECT id, fp FROM knb_new WHERE id BETWEEN a AND b ON CONFLICT DO NOTHING
# in batches of BENCH_INSERT_BATCH (10,000) rows, one statement (and transaction) each,
# synchronous_commit = off. ON CONFLICT DO NOTHING is a no-op for the tables without the
# constraint; for the constraint table it skips near-duplicates, and the skipped rows are
# counted. Each table gets two halves of the rows, in the order none, plain, constraint,
# constraint, plain, none (a drift in the machine's load falls on all alike), each half
# after a CHECKPOINT and timed by the server clock around its batches. Afterwards both
# indexes pass simhash_index_verify and answer 10-NN of 5 new rows as a sequential scan does.
#
# Scratch server: with BENCH_START_SERVER=1, or when no server answers at the configured
# connection, the script initdb's (first time) and starts a cluster of its own under
# $BENCH_DIR (default /tmp/simhash-knn-bench-$BENCH_PORT), on port $BENCH_PORT (default
# 55480, Unix socket only), as the postgres OS user when run as root, with shared_buffers =
# 4GB, max_wal_size = 10GB, checkpoint_timeout = 30min, autovacuum = off,
# shared_preload_libraries = simhash, and stops it at exit. Binaries from $PG_BINDIR (default:
# pg_config --bindir, else /usr/lib/postgresql/15/bin); the simhash library and extension
# files are whatever that installation holds, so a relocated private copy of PostgreSQL with
# the build under test installed only there works (bench/soak.sh does the same):
#   PG_BINDIR=/tmp/soakpg/usr/lib/postgresql/15/bin BENCH_START_SERVER=1 bench/knn_bench.sh
# In its own database it drops and re-creates the extension at start. Otherwise the usual
# libpq variables (PGHOST, PGPORT, ...) select the server; session settings go in PGOPTIONS.
#
# Other settings (environment):
#   BENCH_QUERIES=200          centres per data set and size (k = 10)
#   BENCH_K_QUERIES=           centres for k = 1 and k = 100 (default: BENCH_QUERIES)
#   BENCH_SEQ_QUERIES=         centres timed by the sequential scan (see above)
#   BENCH_PASSES=3             rounds; each query's fastest run counts
#   BENCH_DATASETS="uniform skewed"
#   BENCH_INSERT_BASE=1000000 BENCH_INSERT_ROWS=200000 BENCH_INSERT_BATCH=10000
#   BENCH_INDEX_WITH=          storage parameters of the data sets' indexes, e.g. "blocks = 3"
#                              (the insert part keeps the defaults)
#   BENCH_MWM=2GB BENCH_WORK_MEM=64MB   maintenance_work_mem, work_mem
#   BENCH_NOTE=                a line for the header (e.g. which build was installed where)
#   BENCH_RAW=                 a file to copy every raw figure to (tab separated; the floor's
#                              runs are "lat" rows of variant "floor", one per centre, k and pass)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NQ=${BENCH_QUERIES:-200}
KQ=${BENCH_K_QUERIES:-$NQ}
SEQ_Q=${BENCH_SEQ_QUERIES:-}
PASSES=${BENCH_PASSES:-3}
INDEX_WITH=${BENCH_INDEX_WITH:+ WITH ($BENCH_INDEX_WITH)}
DATASETS=${BENCH_DATASETS:-uniform skewed}
INS_BASE=${BENCH_INSERT_BASE:-1000000}
INS_ROWS=${BENCH_INSERT_ROWS:-200000}
INS_BATCH=${BENCH_INSERT_BATCH:-10000}
MWM=${BENCH_MWM:-2GB}
WORK_MEM=${BENCH_WORK_MEM:-64MB}
BENCH_PORT=${BENCH_PORT:-55480}
BENCH_DIR=${BENCH_DIR:-/tmp/simhash-knn-bench-$BENCH_PORT}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000000 10000000)

if [ -z "${PG_BINDIR:-}" ]; then
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
fi
PSQL=$PG_BINDIR/psql
[ -x "$PSQL" ] || PSQL=$(command -v psql || true)

die() { echo "knn_bench: $*" >&2; exit 1; }
isint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for n in "${SIZES[@]}"; do isint "$n" || die "table size '$n' is not a positive integer"; done
isint "$NQ" || die "BENCH_QUERIES must be a positive integer"
isint "$KQ" || die "BENCH_K_QUERIES must be a positive integer"
[ "$KQ" -le "$NQ" ] || KQ=$NQ
isint "$PASSES" || die "BENCH_PASSES must be a positive integer"
[ -z "$SEQ_Q" ] || isint "$SEQ_Q" || die "BENCH_SEQ_QUERIES must be a positive integer"
for d in $DATASETS; do [[ $d =~ ^(uniform|skewed)$ ]] || die "BENCH_DATASETS: uniform and/or skewed"; done
isint "$INS_BASE" || die "BENCH_INSERT_BASE must be a positive integer"
[[ $INS_ROWS =~ ^[0-9]+$ ]] || die "BENCH_INSERT_ROWS must be a non-negative integer"
isint "$INS_BATCH" || die "BENCH_INSERT_BATCH must be a positive integer"
command -v python3 >/dev/null || die "python3 is needed"
command -v cc >/dev/null || die "cc is needed (the scan floor, bench/scan_floor.c, is compiled at run time)"
[ -n "$PSQL" ] && [ -x "$PSQL" ] || die "psql is needed"

# ---------------------------------------------------------------------------
# server (as bench/index_bench.sh)
# ---------------------------------------------------------------------------
STARTED=0
WORK=$(mktemp -d)
as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cleanup() {
	local rc=$?
	if [ -n "${DB_READY:-}" ]; then
		"$PSQL" -X -q -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS knb_uniform, knb_skewed, knb_q, knb_new, knb_ins_none, knb_ins_plain, knb_ins_constraint" >/dev/null 2>&1 || true
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

export PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=$MWM -c work_mem=$WORK_MEM -c synchronous_commit=off -c max_parallel_workers_per_gather=0 -c max_parallel_maintenance_workers=0 -c jit=off -c client_min_messages=warning"

psql_b() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_t() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' "$@"; }

if [ "$STARTED" = 1 ]; then
	psql_b -c "DROP EXTENSION IF EXISTS simhash CASCADE" >/dev/null
fi
psql_b -c "CREATE EXTENSION IF NOT EXISTS simhash" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed in $PG_BINDIR/..?)"
PREWARM=1
psql_b -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" >/dev/null 2>&1 || PREWARM=0
S=$(psql_t -c "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'simhash'")
DB_READY=1

RES=$WORK/results.tsv
: >"$RES"
log() { echo "[$(date '+%H:%M:%S')] $*" >&2; }

# ---------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------
PKGLIBDIR=$(psql_t -c "SELECT setting FROM pg_config() WHERE name = 'PKGLIBDIR'" 2>/dev/null ||
	"$PG_BINDIR/pg_config" --pkglibdir 2>/dev/null || echo /nonexistent)
LIB=$PKGLIBDIR/simhash.so
lib_id() { [ -f "$LIB" ] && echo "$LIB, $(date -u -r "$LIB" '+%Y-%m-%d %H:%M:%S UTC'), sha256 $(sha256sum "$LIB" | cut -c1-16)"; }
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
[ -n "$CPU" ] || CPU=$(uname -m)
GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null)" ]; then GITREV="$GITREV+dirty(src)"; fi
{
	printf 'env\tcommand\t%s\n' "$( { env | grep -E '^(BENCH_|PG_BINDIR=)' | grep -v '^BENCH_NOTE=' | sort | tr '\n' ' '; } || true)bench/knn_bench.sh ${SIZES[*]}"
	printf 'env\tcpu\t%s (%s cpus visible), %s GiB RAM\n' "$CPU" "$(nproc 2>/dev/null || echo '?')" \
		"$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo '?')"
	printf 'env\tserver\t%s\n' "$(psql_t -c "SELECT version()")"
	printf 'env\tbinaries\t%s\n' "$PG_BINDIR"
	printf 'env\tsimhash\textension %s; script run from checkout %s (%s)\n' "$(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")" "$GITREV" "$ROOT"
	printf 'env\tlibrary\t%s%s\n' "$(lib_id || echo "$LIB (not found)")" "$( [ "$STARTED" = 1 ] && echo ", preloaded by the scratch server")"
	printf 'env\tnote\t%s\n' "${BENCH_NOTE:-}"
	printf 'env\tsettings\t%s\n' "$(psql_t -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY o) FROM unnest(ARRAY['shared_buffers', 'maintenance_work_mem', 'work_mem', 'max_wal_size', 'checkpoint_timeout', 'synchronous_commit', 'max_parallel_workers_per_gather', 'max_parallel_maintenance_workers', 'jit', 'autovacuum']) WITH ORDINALITY u(name, o)")"
	printf 'env\tprewarm\t%s\n' "$PREWARM"
	printf 'env\tfloor\t%s (%s)\n' "$FLOOR_CC" "$(cc --version 2>/dev/null | head -n1)"
	printf 'env\tstarted\t%s, load average %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
} >>"$RES"
LIB_BEFORE=$(lib_id || true)

# ---------------------------------------------------------------------------
# data: bench/index_bench.sh's data sets and its radius-3 query centres (bench/data/*.sql)
# ---------------------------------------------------------------------------
UNIFORM_FP="((floor(random() * 4294967296)::int8 << 32) | floor(random() * 4294967296)::int8)::$S.simhash"

gen_table() {	# ds n table
	local ds=$1 n=$2 t=$3
	psql_b <<SQL
DROP TABLE IF EXISTS $t;
CREATE TABLE $t (id int8 NOT NULL, fp $S.simhash) WITH (autovacuum_enabled = off);
SQL
	psql_b -v tbl="$t" -v rows="$n" -v ext="$S" -f "$ROOT/bench/data/$ds.sql"
	psql_b -c "VACUUM (FREEZE, ANALYZE) $t"
}

# index_bench's query generation for its default radii (3, 6) and BENCH_QUERIES centres;
# its r = 3 centres are kept (qno 1..NQ): a random row with 0..3 random bits flipped
gen_queries() {	# ds n
	local t=knb_$1 n=$2 bad
	psql_b -c "DROP TABLE IF EXISTS knb_q"
	psql_b -v qtbl=knb_q -v tbl="$t" -v rows="$n" -v radii=3,6 -v nq="$NQ" -v ext="$S" \
		-f "$ROOT/bench/data/queries.sql"
	psql_b <<SQL
DELETE FROM knb_q WHERE r <> 3;
ALTER TABLE knb_q ADD PRIMARY KEY (qno);
VACUUM ANALYZE knb_q;
SQL
	bad=$(psql_t -c "SELECT count(*) FROM knb_q WHERE q IS NULL")
	[ "$bad" = 0 ] || die "query generation: $bad centres without a source row"
}

# one CREATE INDEX or ALTER TABLE, timed by the server after a checkpoint: "ms<TAB>bytes"
timed_build() {	# index-name statement
	psql_t <<SQL
CHECKPOINT;
SELECT clock_timestamp() AS t0 \\gset
$2;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1), pg_relation_size('$1');
SQL
}

# ---------------------------------------------------------------------------
# kNN latency
# ---------------------------------------------------------------------------
# the query for k nearest neighbours of $1: rows returned and their distances, in order
knn_sql() {	# table k
	echo "SELECT count(id), array_agg(d) FROM (SELECT id, fp OPERATOR($S.<->) \$1 AS d FROM $1 ORDER BY fp OPERATOR($S.<->) \$1 LIMIT $2) s"
}

# Returns the plan for the first centre of the range (o_qno = -1, one line each), then per
# centre qno in [qfrom, qto] the time of one run (planning + execution), the rows returned
# and their distances.
MEASURE_FN=$(cat <<'SQL'
CREATE OR REPLACE FUNCTION pg_temp.knb_measure(sql text, qfrom int, qto int, warmup int)
RETURNS TABLE (o_qno int, o_ms float8, o_n int8, o_d text, o_line text)
LANGUAGE plpgsql AS $fn$
DECLARE
    qr record;
    t0 timestamptz;
    t1 timestamptz;
    n int8;
    d int[];
    l text;
BEGIN
    SELECT * INTO qr FROM knb_q WHERE qno >= qfrom ORDER BY qno LIMIT 1;
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || sql USING qr.q LOOP
        o_qno := -1; o_line := l;
        RETURN NEXT;
    END LOOP;
    o_line := NULL;
    FOR qr IN SELECT * FROM knb_q WHERE qno BETWEEN qfrom AND qto ORDER BY qno LIMIT warmup LOOP
        EXECUTE sql INTO n, d USING qr.q;
    END LOOP;
    FOR qr IN SELECT * FROM knb_q WHERE qno BETWEEN qfrom AND qto ORDER BY qno LOOP
        t0 := clock_timestamp();
        EXECUTE sql INTO n, d USING qr.q;
        t1 := clock_timestamp();
        o_qno := qr.qno; o_ms := extract(epoch FROM t1 - t0) * 1000; o_n := n;
        o_d := array_to_string(d, ',');
        RETURN NEXT;
    END LOOP;
END
$fn$;
SQL
)

SEQ_PRE="SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off;"

# one variant in the measuring script: "round variant k" rows on stdout of psql
measure_step() {	# ds n round variant k qfrom qto warmup pre
	local ds=$1 n=$2 round=$3 v=$4 k=$5 qfrom=$6 qto=$7 warmup=$8 pre=$9
	echo "SELECT to_char(clock_timestamp(), 'HH24:MI:SS') AS ts \\gset"
	echo "\\warn '[':ts'] $ds $n: $v k=$k, centres $qfrom..$qto (round $round)'"
	echo "BEGIN;"
	echo "$pre"
	echo "SELECT $round, '$v', $k, o_qno, o_ms, o_n, o_d, o_line FROM pg_temp.knb_measure(\$q\$$(knn_sql "knb_$ds" "$k")\$q\$, $qfrom, $qto, $warmup);"
	echo "ROLLBACK;"
}

measure_all() {	# ds n seq_nq
	local ds=$1 n=$2 seq_nq=$3 t=knb_$1 round k ix_pre="" plan
	local script=$WORK/measure.sql out=$WORK/measure.out
	# does the planner pick the index by itself? (the first centre, as a literal)
	plan=$(psql_t <<SQL
SELECT q FROM knb_q WHERE qno = 1 \\gset
EXPLAIN (COSTS OFF) $(knn_sql "$t" 10 | sed "s/\\\$1/:'q'::$S.simhash/g");
SQL
)
	if ! grep -qF "Index Scan using ${t}_fp" <<<"$plan"; then
		printf 'warn\t%s\t%s\tthe planner does not use the index for 10-NN with default settings (plan: %s); index runs use enable_seqscan = off, enable_sort = off\n' \
			"$ds" "$n" "$(tr '\n' ' ' <<<"$plan")" >>"$RES"
		ix_pre="SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off;"
	fi
	{
		echo "$MEASURE_FN"
		for round in $(seq 1 "$PASSES"); do
			measure_step "$ds" "$n" "$round" index 10 1 "$NQ" 5 "$ix_pre"
			measure_step "$ds" "$n" "$round" index 1 1 "$KQ" 5 "$ix_pre"
			measure_step "$ds" "$n" "$round" index 100 1 "$KQ" 5 "$ix_pre"
			measure_step "$ds" "$n" "$round" seq 10 1 "$seq_nq" 1 "$SEQ_PRE"
		done
		# exactness only (one pass, times kept for information): k = 1 and k = 100 on the
		# seq-scan subset, k = 10 on the centres the timed seq scan did not run
		measure_step "$ds" "$n" 1 seq1 1 1 "$seq_nq" 0 "$SEQ_PRE"
		measure_step "$ds" "$n" 1 seq1 100 1 "$seq_nq" 0 "$SEQ_PRE"
		[ "$seq_nq" -ge "$NQ" ] || measure_step "$ds" "$n" 1 seqcheck 10 $((seq_nq + 1)) "$NQ" 0 "$SEQ_PRE"
	} >"$script"
	psql_t -f "$script" >"$out"
	# plans: every variant must use its own path
	local vk v
	for vk in "index 10" "index 1" "index 100" "seq 10" "seq1 1" "seq1 100" "seqcheck 10"; do
		read -r v k <<<"$vk"
		awk -F'\t' -v v="$v" -v k="$k" '$1 == 1 && $2 == v && $3 == k && $4 == -1 { print $8 }' "$out" >"$WORK/plan.txt"
		[ -s "$WORK/plan.txt" ] || continue
		if [ "$v" = index ]; then
			grep -qF "Index Scan using ${t}_fp" "$WORK/plan.txt" && grep -qF "Order By: (fp <-> " "$WORK/plan.txt" ||
				{ cat "$WORK/plan.txt" >&2; die "$ds $n: $v: not an index scan ordered by fp <-> q"; }
		else
			grep -qF "Seq Scan on $t" "$WORK/plan.txt" && grep -qF "Sort" "$WORK/plan.txt" ||
				{ cat "$WORK/plan.txt" >&2; die "$ds $n: $v: not a sequential scan and sort"; }
		fi
	done
	awk -F'\t' -v OFS='\t' -v p="$ds"$'\t'"$n" '
		$4 == -1 { if ($1 == 1) print "plan", p, $2, $3, $8; next }
		{ print "lat", p, $2, $3, $1, $4, $5, $6, $7 }' "$out" >>"$RES"
}

# EXPLAIN (ANALYZE, BUFFERS) of the slowest index 10-NN centre and of the sequential scan
# on centre 1, each run twice, the second kept
explain_two() {	# ds n
	local ds=$1 n=$2 t=knb_$1 qno ms
	read -r qno ms < <(awk -F'\t' -v ds="$ds" -v n="$n" '
		$1 == "lat" && $2 == ds && $3 == n && $4 == "index" && $5 == 10 {
			if (!($7 in best) || $8 < best[$7]) best[$7] = $8 }
		END { w = -1; for (q in best) if (best[q] > w) { w = best[q]; wq = q }; print wq, w }' "$RES")
	[ -n "$qno" ] || return 0
	psql_t <<SQL | sed "s/^/explain\t$ds\t$n\t/" >>"$RES"
CREATE FUNCTION pg_temp.knb_explain(qn int, seq bool) RETURNS SETOF text LANGUAGE plpgsql AS \$\$
DECLARE qr record; l text;
BEGIN
    IF seq THEN $SEQ_PRE END IF;
    SELECT * INTO qr FROM knb_q WHERE qno = qn;
    FOR i IN 1 .. 2 LOOP
        FOR l IN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS) ' || \$q\$$(knn_sql "$t" 10)\$q\$ USING qr.q LOOP
            IF i = 2 THEN RETURN NEXT l; END IF;
        END LOOP;
    END LOOP;
END \$\$;
SELECT 'index, slowest centre ($qno, fastest run $ms ms)';
SELECT * FROM pg_temp.knb_explain($qno, false);
BEGIN;
SELECT 'seq scan, centre 1';
SELECT * FROM pg_temp.knb_explain(1, true);
ROLLBACK;
SQL
}

# The scan floor: the table's fingerprints as int8 (ORDER BY id, the physical order) in one
# uint64 array, scanned by bench/scan_floor.c for the index's centres and k, in the index's
# order (k = 10, 1, 100), BENCH_PASSES rounds; it checks its distances against the index's
# (round 1) and exits 2 on a difference, listed as "floorbad" rows.
scan_floor() {	# ds n
	local ds=$1 n=$2 t=knb_$1 rc=0 want got bad
	log "$ds $n: scan floor ($FLOOR_CC)"
	psql_t -c "COPY (SELECT fp::int8 FROM $t WHERE fp IS NOT NULL ORDER BY id) TO STDOUT" >"$WORK/codes.txt"
	psql_t -c "SELECT qno, q::int8 FROM knb_q ORDER BY qno" >"$WORK/centres.txt"
	awk -F'\t' -v OFS='\t' -v ds="$ds" -v n="$n" '
		NR == FNR { q[$1] = $2; next }
		$1 == "lat" && $2 == ds && $3 == n && $4 == "index" && $6 == 1 { print $5, $7, q[$7], $10 }' \
		"$WORK/centres.txt" "$RES" >"$WORK/floor.in"
	"$FLOOR" knn "$WORK/codes.txt" "$WORK/floor.in" "$PASSES" >"$WORK/floor.out" 2>"$WORK/floor.err" || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 2 ] || { cat "$WORK/floor.err" >&2; die "$ds $n: scan_floor failed"; }
	want=$(( $(wc -l <"$WORK/floor.in") * PASSES )); got=$(wc -l <"$WORK/floor.out")
	[ "$got" = "$want" ] || die "$ds $n: scan_floor printed $got results, not $want"
	printf 'floorcodes\t%s\t%s\t%s\n' "$ds" "$n" "$(wc -l <"$WORK/codes.txt")" >>"$RES"
	awk -F'\t' -v OFS='\t' -v p="$ds"$'\t'"$n" '{ print "lat", p, "floor", $1, $3, $2, $4, ($5 == "" ? 0 : split($5, a, ",")), $5 }' \
		"$WORK/floor.out" >>"$RES"
	sed 's/^/  /' "$WORK/floor.err" >&2
	bad=$(grep -E ': (expected|pass) ' "$WORK/floor.err" | sed "s/^scan_floor: /floorbad\t$ds\t$n\t/" || true)
	[ -z "$bad" ] || echo "$bad" >>"$RES"
	[ "$rc" = 0 ] || [ -n "$bad" ] || die "$ds $n: scan_floor exited 2 and named no centre"
	rm -f "$WORK/codes.txt"
}

knn_bench() {	# ds n
	local ds=$1 n=$2 t=knb_$1 out seq_nq
	if [ -n "$SEQ_Q" ]; then seq_nq=$SEQ_Q
	elif [ "$n" -le 2000000 ]; then seq_nq=$NQ
	else seq_nq=20; fi
	[ "$seq_nq" -le "$NQ" ] || seq_nq=$NQ
	log "$ds $n: generating the table"
	gen_table "$ds" "$n" "$t" >/dev/null
	gen_queries "$ds" "$n" >/dev/null
	log "$ds $n: CREATE INDEX"
	out=$(timed_build "${t}_fp" "CREATE INDEX ${t}_fp ON $t USING simhash (fp)$INDEX_WITH")
	printf 'build\t%s\t%s\t%s\t%s\n' "$ds" "$n" "$out" "$(psql_t -c "SELECT pg_relation_size('$t')")" >>"$RES"
	psql_b -c "ANALYZE $t" >/dev/null
	if [ "$PREWARM" = 1 ]; then
		psql_t -c "SELECT sum(pg_prewarm(c)) FROM unnest(ARRAY['$t', '${t}_fp', 'knb_q']::regclass[]) c" >/dev/null
	fi
	measure_all "$ds" "$n" "$seq_nq"
	scan_floor "$ds" "$n"
	explain_two "$ds" "$n"
	psql_b -c "DROP TABLE $t, knb_q" >/dev/null
}

# ---------------------------------------------------------------------------
# inserts
# ---------------------------------------------------------------------------
insert_bench() {
	local v b lo hi half script out seg=0
	local -A done_half=()
	log "inserts: three copies of the $INS_BASE-row uniform table"
	gen_table uniform "$INS_BASE" knb_ins_none >/dev/null
	psql_b <<SQL >/dev/null
CREATE TABLE knb_ins_plain (LIKE knb_ins_none) WITH (autovacuum_enabled = off);
INSERT INTO knb_ins_plain SELECT * FROM knb_ins_none;
CREATE TABLE knb_ins_constraint (LIKE knb_ins_none) WITH (autovacuum_enabled = off);
INSERT INTO knb_ins_constraint SELECT * FROM knb_ins_none;
DROP TABLE IF EXISTS knb_new;
SELECT setseed(0.875) \\g /dev/null
CREATE TABLE knb_new AS SELECT $INS_BASE + g AS id, $UNIFORM_FP AS fp FROM generate_series(1, $INS_ROWS) g;
ALTER TABLE knb_new ADD PRIMARY KEY (id);
SQL
	out=$(timed_build knb_ins_plain_fp "CREATE INDEX knb_ins_plain_fp ON knb_ins_plain USING simhash (fp)")
	printf 'insbuild\tplain\t%s\n' "$out" >>"$RES"
	out=$(timed_build knb_ins_constraint_nodup "ALTER TABLE knb_ins_constraint ADD CONSTRAINT knb_ins_constraint_nodup EXCLUDE USING simhash ($S.simhash_ball(fp, 3) WITH OPERATOR($S.&&))")
	printf 'insbuild\tconstraint\t%s\n' "$out" >>"$RES"
	psql_b -c "VACUUM ANALYZE knb_ins_none, knb_ins_plain, knb_ins_constraint, knb_new" >/dev/null
	[ "$PREWARM" = 0 ] || psql_t -c "SELECT sum(pg_prewarm(c)) FROM unnest(ARRAY['knb_ins_none', 'knb_ins_plain', 'knb_ins_plain_fp', 'knb_ins_constraint', 'knb_ins_constraint_nodup', 'knb_new']::regclass[]) c" >/dev/null
	half=$(( (INS_ROWS + 1) / 2 ))
	for v in none plain constraint constraint plain none; do
		# each table's first segment adds the first half of the new rows, its second the rest
		if [ -n "${done_half[$v]:-}" ]; then lo=$((INS_BASE + half + 1)); hi=$((INS_BASE + INS_ROWS))
		else lo=$((INS_BASE + 1)); hi=$((INS_BASE + half)); fi
		done_half[$v]=1
		seg=$((seg + 1))
		log "inserts: knb_ins_$v, rows $lo..$hi"
		script=$WORK/ins.sql
		{
			echo "CHECKPOINT;"
			echo "SELECT clock_timestamp() AS t0 \\gset"
			for ((b = lo; b <= hi; b += INS_BATCH)); do
				echo "INSERT INTO knb_ins_$v SELECT id, fp FROM knb_new WHERE id BETWEEN $b AND $((b + INS_BATCH - 1 < hi ? b + INS_BATCH - 1 : hi)) ON CONFLICT DO NOTHING;"
			done
			echo "SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000, 1);"
		} >"$script"
		out=$(psql_t -f "$script")
		printf 'insseg\t%s\t%s\t%s\t%s\n' "$seg" "$v" "$((hi - lo + 1))" "$out" >>"$RES"
	done
	for v in none plain constraint; do
		printf 'inscount\t%s\t%s\n' "$v" "$(psql_t -c "SELECT count(*) - $INS_BASE FROM knb_ins_$v")" >>"$RES"
	done
	# the indexes after the inserts: sound, and 10-NN of 5 new rows as a sequential scan
	for v in plain_fp constraint_nodup; do
		printf 'insverify\t%s\t%s\n' "$v" "$(psql_t -c "SELECT * FROM $S.simhash_index_verify('knb_ins_$v')" 2>&1 | tr '\n\t' '  ')" >>"$RES"
	done
	for v in plain constraint; do
		local chk
		chk=$(psql_t <<SQL | paste -sd ' '
SET enable_seqscan = off; SET enable_sort = off;
SELECT array_agg(d ORDER BY qid, o) FROM (SELECT n.id AS qid, x.o, x.d FROM (SELECT * FROM knb_new ORDER BY id DESC LIMIT 5) n,
    LATERAL (SELECT row_number() OVER () AS o, d FROM (SELECT i.fp OPERATOR($S.<->) n.fp AS d FROM knb_ins_$v i ORDER BY i.fp OPERATOR($S.<->) n.fp LIMIT 10) y) x) z;
RESET enable_seqscan; RESET enable_sort;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT array_agg(d ORDER BY qid, o) FROM (SELECT n.id AS qid, x.o, x.d FROM (SELECT * FROM knb_new ORDER BY id DESC LIMIT 5) n,
    LATERAL (SELECT row_number() OVER () AS o, d FROM (SELECT i.fp OPERATOR($S.<->) n.fp AS d FROM knb_ins_$v i ORDER BY i.fp OPERATOR($S.<->) n.fp LIMIT 10) y) x) z;
SQL
)
		printf 'inscheck\t%s\t%s\n' "$v" "$chk" >>"$RES"
	done
	psql_b -c "DROP TABLE knb_ins_none, knb_ins_plain, knb_ins_constraint, knb_new" >/dev/null
}

# ---------------------------------------------------------------------------
# the report (reads $RES)
# ---------------------------------------------------------------------------
report() {	# header | "ds n" | inserts | final
	INDEX_WITH=$INDEX_WITH BENCH_RES=$RES BENCH_WHAT=$1 BENCH_PASSES=$PASSES BENCH_INS_BATCH=$INS_BATCH BENCH_INS_BASE=$INS_BASE \
	python3 - <<'PY'
import os, sys
from collections import defaultdict

env = os.environ
rows = [l.rstrip("\n").split("\t") for l in open(env["BENCH_RES"]) if l.strip()]
what = env["BENCH_WHAT"]

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
lat = defaultdict(lambda: defaultdict(list))  # (ds, n, variant, k) -> qno -> [(ms, nrows, dists)]
plans = defaultdict(list)
explains = defaultdict(list)
builds = {}
warns = []
order = []
insseg, inscount, insverify, inscheck, insbuild = [], {}, {}, {}, {}
floorbad = defaultdict(list)  # (ds, n) -> the scan floor's mismatch messages
floorcodes = {}
for f in rows:
    kind = f[0]
    if kind == "env":
        envs[f[1]] = f[2] if len(f) > 2 else ""
    elif kind == "lat":
        ds, n, v, k, rnd, q, ms, nr = f[1], int(f[2]), f[3], int(f[4]), int(f[5]), int(f[6]), float(f[7]), int(f[8])
        d = f[9] if len(f) > 9 else ""
        lat[(ds, n, v, k)][q].append((ms, nr, d))
        if (ds, n) not in order:
            order.append((ds, n))
    elif kind == "plan":
        plans[(f[1], int(f[2]), f[3], int(f[4]))].append(f[5])
    elif kind == "explain":
        explains[(f[1], int(f[2]))].append(f[3])
    elif kind == "build":
        builds[(f[1], int(f[2]))] = (float(f[3]), int(f[4]), int(f[5]))
    elif kind == "warn":
        warns.append((f[1], int(f[2]), f[3]))
    elif kind == "insseg":
        insseg.append((int(f[1]), f[2], int(f[3]), float(f[4])))
    elif kind == "inscount":
        inscount[f[1]] = int(f[2])
    elif kind == "insverify":
        insverify[f[1]] = f[2]
    elif kind == "inscheck":
        inscheck[f[1]] = f[2]
    elif kind == "insbuild":
        insbuild[f[1]] = (float(f[2]), int(f[3]))
    elif kind == "floorbad":
        floorbad[(f[1], int(f[2]))].append(f[3])
    elif kind == "floorcodes":
        floorcodes[(f[1], int(f[2]))] = int(f[3])

def stats(ds, n, v, k):
    d = lat.get((ds, n, v, k))
    if not d:
        return None
    ms = [min(x[0] for x in runs) for runs in d.values()]
    return {"med": pct(ms, 0.5), "p95": pct(ms, 0.95), "max": max(ms), "nq": len(ms),
            "rounds": max(len(r) for r in d.values())}

def seq_ref(ds, n, k):
    """qno -> distances of the sequential scan (any seq variant) for k"""
    ref = {}
    for v in ("seq", "seq1", "seqcheck"):
        for q, runs in lat.get((ds, n, v, k), {}).items():
            ref.setdefault(q, runs[0][2])
    return ref

def exactness(ds, n, k):
    """(centres compared, mismatch messages) of the index against the seq scan"""
    msgs = []
    ref = seq_ref(ds, n, k)
    ix = lat.get((ds, n, "index", k), {})
    compared = 0
    for v in ("index", "seq", "seq1", "seqcheck"):
        for q, runs in sorted(lat.get((ds, n, v, k), {}).items()):
            if len({r[2] for r in runs}) > 1:
                msgs.append(f"{ds} {n:,} k={k} centre {q}: {v} returned different distances in different rounds")
            if any(r[1] != k for r in runs):
                msgs.append(f"{ds} {n:,} k={k} centre {q}: {v} returned {runs[0][1]} rows, not {k}")
    for q, runs in sorted(ix.items()):
        if q not in ref:
            continue
        compared += 1
        if runs[0][2] != ref[q]:
            msgs.append(f"{ds} {n:,} k={k} centre {q}: index {{{runs[0][2]}}} seq scan {{{ref[q]}}}")
    return compared, msgs

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

def fmt_x(x):
    return f"{x:.1f}" if x < 10 else f"{x:.0f}"

def floor_cells(ds, n, k):
    """'floor ms' and 'x floor' (index / floor), each "median / p95", for the index's centres"""
    ix, fl = stats(ds, n, "index", k), stats(ds, n, "floor", k)
    if not ix or not fl:
        return "-", "-"
    return (f"{fmt_ms(fl['med'])} / {fmt_ms(fl['p95'])}",
            f"{fmt_x(ix['med'] / fl['med'])} / {fmt_x(ix['p95'] / fl['p95'])}")

def floor_note(ds, n):
    nq = sum(len(lat.get((ds, n, "floor", k), {})) for k in (1, 10, 100))
    if not nq:
        return "floor: not measured"
    bad = len(floorbad.get((ds, n), []))
    return (f"floor: {floorcodes.get((ds, n), 0):,} codes scanned in C for each centre and k the index ran;"
            f" its distances equal the index's on {nq - bad} of {nq}")

def plan_summary(lines):
    nodes = []
    for i, l in enumerate(lines):
        s = l.strip()
        if i == 0 or s.startswith("->"):
            nodes.append(s.lstrip("-> ").strip())
        elif s.startswith("Order By:") or s.startswith("Sort Key:"):
            nodes[-1] += f" [{s}]"
    return " > ".join(nodes)

def mean_dist(ds, n, k):
    d = lat.get((ds, n, "index", k), {})
    last = [int(r[0][2].split(",")[-1]) for r in d.values() if r[0][2]]
    first = [int(r[0][2].split(",")[0]) for r in d.values() if r[0][2]]
    if not last:
        return ""
    return f"distance of the 1st neighbour: median {pct(first, 0.5):.0f}; of the k-th: median {pct(last, 0.5):.0f}, max {max(last)}"

def print_set(ds, n):
    print()
    print(f"== {ds}, {n:,} rows ==")
    b = builds.get((ds, n))
    if b:
        print(f"CREATE INDEX USING simhash (fp){os.environ.get('INDEX_WITH', '')}: {b[0] / 1000:.1f} s, index {b[1] / 1e6:.1f} MB, table {b[2] / 1e6:.1f} MB")
    for w in warns:
        if (w[0], w[1]) == (ds, n):
            print("WARNING: " + w[2])
    print(f"latency in ms, server side (planning + execution), fastest of {env['BENCH_PASSES']} rounds per centre;")
    print("median / p95 / max over the centres; the seq scan rows marked (1 run) are single runs for the exactness check;")
    print("floor ms: the C scan of the same codes for the same centres, median / p95; x floor: index / floor")
    hdr = (f"{'variant':<26} | {'centres':>7} | {'median':>8} {'p95':>8} {'max':>8} | {'seq / index':>11} | {'exact':>9}"
           f" | {'floor ms':>15} | {'x floor':>11}")
    print(hdr)
    print("-" * len(hdr))
    for k in (1, 10, 100):
        ix = stats(ds, n, "index", k)
        compared, msgs = exactness(ds, n, k)
        for v, name in (("index", f"index, k={k}"), ("seq", f"seq scan, k={k}"),
                        ("seq1", f"seq scan, k={k} (1 run)"), ("seqcheck", f"seq scan, k={k} (1 run)")):
            st = stats(ds, n, v, k)
            if not st:
                continue
            r = f"{st['med'] / ix['med']:.0f}x" if v == "seq" and ix else ""
            ex = f"{compared - len([m for m in msgs if 'index {' in m])}/{compared}" if v == "index" else ""
            fm, fx = floor_cells(ds, n, k) if v == "index" else ("", "")
            print(f"{name:<26} | {st['nq']:>7} | {fmt_ms(st['med']):>8} {fmt_ms(st['p95']):>8} {fmt_ms(st['max']):>8} | {r:>11} | {ex:>9}"
                  f" | {fm:>15} | {fx:>11}")
    for k in (1, 10, 100):
        s = mean_dist(ds, n, k)
        if s:
            print(f"k={k}: {s}")
    print("('exact': centres whose index distances equal the sequential scan's / centres compared)")
    print(floor_note(ds, n))
    print("plans (first centre):")
    for (pds, pn, v, k), lines in sorted(plans.items(), key=lambda x: (x[0][2], x[0][3])):
        if (pds, pn) == (ds, n):
            print(f"  {v} k={k}: {plan_summary(lines)}")
    if (ds, n) in explains:
        print("EXPLAIN (ANALYZE, BUFFERS), second run:")
        for l in explains[(ds, n)]:
            print("   " + l)
    for k in (1, 10, 100):
        for m in exactness(ds, n, k)[1]:
            print("MISMATCH: " + m)
    for m in floorbad.get((ds, n), []):
        print("MISMATCH: floor: " + m)

def ins_rates():
    tot = defaultdict(lambda: [0, 0.0])
    for seg, v, nrows, ms in insseg:
        tot[v][0] += nrows
        tot[v][1] += ms
    return {v: (r, ms, r / (ms / 1000) if ms else float("nan")) for v, (r, ms) in tot.items()}

def print_inserts():
    if not insseg:
        return
    rates = ins_rates()
    print()
    print(f"== inserts into {int(env['BENCH_INS_BASE']):,} uniform rows ==")
    for v, (ms, by) in insbuild.items():
        print(f"{'CREATE INDEX' if v == 'plain' else 'ADD CONSTRAINT ... EXCLUDE'} on the base table: {ms / 1000:.1f} s, index {by / 1e6:.1f} MB")
    print(f"INSERT ... SELECT of {int(env['BENCH_INS_BATCH']):,} pre-generated rows per statement (autocommit), ON CONFLICT DO NOTHING,")
    print("timed by the server clock; segments (in run order): " +
          ", ".join(f"{v} {n:,} rows {ms / 1000:.2f} s" for _, v, n, ms in sorted(insseg)))
    hdr = f"{'table has':<44} | {'rows/s':>8} | {'added':>8} {'skipped':>7} | {'constraint / this':>17}"
    print(hdr)
    print("-" * len(hdr))
    c = rates.get("constraint")
    for v, name in (("none", "no index"), ("plain", "simhash index (fp)"),
                    ("constraint", "EXCLUDE (simhash_ball(fp, 3) WITH &&)")):
        if v not in rates:
            continue
        r = rates[v]
        added = inscount.get(v, 0)
        rr = f"{c[2] / r[2]:.2f}" if c and v != "constraint" else ""
        print(f"{name:<44} | {r[2]:8.0f} | {added:8,} {r[0] - added:7,} | {rr:>17}")
    for v, s in insverify.items():
        print(f"simhash_index_verify(knb_ins_{v}) after the inserts: {s}")
    for v, s in inscheck.items():
        a = s.split(" ")
        ok = len(a) == 2 and a[0] == a[1]
        print(f"10-NN of 5 new rows in knb_ins_{v}: index and seq scan distances " + ("equal" if ok else f"DIFFER: {s}"))

def ins_failures():
    out = []
    for v, s in inscheck.items():
        a = s.split(" ")
        if not (len(a) == 2 and a[0] == a[1]):
            out.append(f"inserts: 10-NN check on knb_ins_{v} failed")
    return out

def summary():
    print()
    print("== summary ==")
    print("k-NN latency, ms, server side (planning + execution), median / p95 over the centres (fastest of the rounds);")
    print("seq/index: ratio of the medians; mismatches: centres whose index distances differ from the seq scan's")
    hdr = (f"{'rows':>11} {'data':<8} | {'index 10-NN':>15} | {'seq scan 10-NN':>19} | {'seq/index':>9} | "
           f"{'mismatches':>13} | {'index 1-NN':>15} | {'index 100-NN':>15}")
    print(hdr)
    print("-" * len(hdr))
    total_mm = 0
    for ds, n in sorted(order, key=lambda x: (x[1], x[0] != "uniform")):
        ix, sq, i1, i100 = (stats(ds, n, "index", 10), stats(ds, n, "seq", 10),
                            stats(ds, n, "index", 1), stats(ds, n, "index", 100))
        mm = [exactness(ds, n, k) for k in (1, 10, 100)]
        nmm = sum(len(m) for _, m in mm)
        ncmp = sum(c for c, _ in mm)
        total_mm += nmm
        f2 = lambda s: f"{fmt_ms(s['med'])} / {fmt_ms(s['p95'])}" if s else "-"
        sqs = f"{f2(sq)} ({sq['nq']})" if sq else "-"
        rr = f"{sq['med'] / ix['med']:.0f}x" if sq and ix else "-"
        print(f"{n:>11,} {ds:<8} | {f2(ix):>15} | {sqs:>19} | {rr:>9} | {f'{nmm} of {ncmp}':>13} | {f2(i1):>15} | {f2(i100):>15}")
    print("(seq scan: the number of centres it timed in brackets; mismatches: k = 1, 10, 100 together)")
    print()
    print("the index beside its scan floor (bench/scan_floor.c: the same codes in one uint64 array, scanned in C for the")
    print("same centres and k), ms, median / p95; x floor = index / floor; floor mismatches: its distances against the index's")
    hdr = f"{'rows':>11} {'data':<8} | {'k':>3} | {'index':>15} | {'floor':>15} | {'x floor':>11} | {'floor mismatches':>16}"
    print(hdr)
    print("-" * len(hdr))
    for ds, n in sorted(order, key=lambda x: (x[1], x[0] != "uniform")):
        nbad = len(floorbad.get((ds, n), []))
        total_mm += nbad
        for k in (1, 10, 100):
            ix = stats(ds, n, "index", k)
            if not ix:
                continue
            fm, fx = floor_cells(ds, n, k)
            nfl = len(lat.get((ds, n, "floor", k), {}))
            kbad = len([m for m in floorbad.get((ds, n), []) if f" k={k} " in m])
            print(f"{n:>11,} {ds:<8} | {k:>3} | {fmt_ms(ix['med']) + ' / ' + fmt_ms(ix['p95']):>15} | {fm:>15} | {fx:>11} | {f'{kbad} of {nfl}':>16}")
    rates = ins_rates()
    if rates:
        print()
        print(f"inserts, {sum(r[0] for r in rates.values()) // max(len(rates), 1):,} rows into {int(env['BENCH_INS_BASE']):,} uniform rows, "
              f"INSERT ... SELECT {int(env['BENCH_INS_BATCH']):,} rows per statement:")
        c = rates.get("constraint")
        for v, name in (("none", "no index"), ("plain", "simhash index"), ("constraint", "EXCLUDE ... simhash_ball(fp, 3) WITH &&")):
            if v in rates:
                extra = ""
                if v == "constraint":
                    extra = f", {rates[v][0] - inscount.get(v, 0)} skipped"
                elif c:
                    extra = f", constraint / this = {c[2] / rates[v][2]:.2f}"
                print(f"  {name:<40} {rates[v][2]:9.0f} rows/s{extra}")
    return total_mm

def goals():
    sizes = sorted({n for _, n in order})
    misses = 0
    print()
    n = 10_000_000 if 10_000_000 in sizes else (sizes[-1] if sizes else None)
    note = "" if n == 10_000_000 else f" (the goals are stated at 10,000,000 rows; this run's largest size is {n:,})" if n else ""
    print(f"== goals at {n:,} rows{note} ==" if n else "== goals ==")
    def line(name, ok, text):
        nonlocal misses
        if ok is None:
            print(f"n/a   {name}: not measured")
            return
        misses += 0 if ok else 1
        print(f"{'PASS' if ok else 'MISS':<5} {name}: {text}")
    for ds, lim, x in (("uniform", 5.0, 75), ("skewed", 1.0, 350)):
        ix, sq = (stats(ds, n, "index", 10), stats(ds, n, "seq", 10)) if n else (None, None)
        line(f"{ds} exact 10-NN median <= {lim:g} ms", None if not ix else ix["med"] <= lim,
             f"{fmt_ms(ix['med'])} ms" if ix else "")
        r = sq["med"] / ix["med"] if ix and sq else None
        line(f"{ds} >= {x}x faster than the seq scan (medians)", None if r is None else r >= x,
             f"{r:.0f}x ({fmt_ms(sq['med'])} / {fmt_ms(ix['med'])} ms)" if r else "")
    rates = ins_rates()
    c, p, z = rates.get("constraint"), rates.get("plain"), rates.get("none")
    line("inserts under the constraint >= 0.5x the rate with a plain simhash index", None if not (c and p) else c[2] / p[2] >= 0.5,
         f"{c[2] / p[2]:.2f} ({c[2]:.0f} / {p[2]:.0f} rows/s)" if c and p else "")
    if c and z:
        print(f"      (for comparison: constraint / no index = {c[2] / z[2]:.2f}, {c[2]:.0f} / {z[2]:.0f} rows/s)")
    return misses

if what == "header":
    print("simhash exact nearest neighbours (ORDER BY fp <-> q LIMIT k) and near-duplicate constraint benchmark")
    for k in ("command", "started", "cpu", "server", "binaries", "library", "simhash", "note", "settings"):
        if envs.get(k):
            print(f"  {k + ':':<10} {envs[k]}")
    print("  method:   latency from clock_timestamp() around EXECUTE ... USING in a plpgsql loop (planning included),")
    print(f"            fastest of {env['BENCH_PASSES']} rounds per centre, all queries of a data set in one session, warm cache")
    print("            (table, index, centres " + ("loaded with pg_prewarm" if envs.get("prewarm") == "1" else "NOT prewarmed: pg_prewarm missing") +
          "); one backend, no parallel workers, jit off, autovacuum off")
    print("  floor:    bench/scan_floor.c, compiled by this run: " + envs.get("floor", "?"))
    print("            the table's codes in one uint64 array, scanned in C for the index's centres and k; clock_gettime")
    print(f"            around each query, fastest of {env['BENCH_PASSES']} passes per centre")
elif what == "inserts":
    print_inserts()
elif what == "final":
    mm = summary()
    goals()
    bad = ins_failures()
    if mm or bad:
        print()
        print(f"!!! {mm} exactness mismatches" + (f", {len(bad)} insert check failures" if bad else "") + " !!!")
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
	for ds in $DATASETS; do
		T0=$(date +%s)
		knn_bench "$ds" "$n"
		report "$ds $n"
		echo "($ds, $n rows: $(( $(date +%s) - T0 )) s in all)"
	done
done
if [ "$INS_ROWS" -gt 0 ]; then
	T0=$(date +%s)
	insert_bench
	report inserts
	echo "(inserts: $(( $(date +%s) - T0 )) s in all)"
fi
if [ -n "$LIB_BEFORE" ] && [ "$(lib_id || true)" != "$LIB_BEFORE" ]; then
	echo
	echo "WARNING: $LIB was replaced during the run" \
		"$( [ "$STARTED" = 1 ] && echo "(the scratch server preloaded it at start, so the figures are from the build named above)")"
fi
echo
echo "total run time: $(( $(date +%s) - T_ALL )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
report final
