#!/usr/bin/env bash
# citus_bench.sh: all pairs within k = 3 bits on a three-node Citus cluster, against
# the single-node window functions and the single-node indexed self-join, with the work done by
# each node: rows held, candidate pairs compared, pairs found, and time per shard task.
#
# Usage:
#   bench/citus_bench.sh [ROWS]          ROWS default 10000000 (1000000 takes a few minutes)
#
# One machine runs the three nodes (a coordinator and two workers, 8 shards per distributed
# table, 4 on each worker), so the cluster has no more cores than the single node: the point is
# how the work divides between the workers, not a speed-up.
#
# Data: the clustered data of bench/dedup_bench.sh, the same generator in SQL and the same
# seed, so the rows are identical to its table db_t: setseed(0.375); NC = max(1, ROWS / 5)
# centres hashint8extended(c, 42); row g = 1..ROWS draws z, c, k, p1..p4, u1, u2 from random();
# z < 0.2: a random fingerprint (u1 << 32) | u2; else centre c with bits p1..pk flipped
# (k = 0..4). It is written to a local table cb_local (id bigint primary key, fp simhash) on the
# coordinator.
#
# Single node (the coordinator's local table, one backend, no parallel workers unless said,
# jit off, maintenance_work_mem 2GB, work_mem 64MB; each statement in a fresh connection, timed
# on the server with clock_timestamp() before and after it, planning included):
#   leader      SELECT count(*) FILTER (WHERE c = id), count(*) FILTER (WHERE c <> id)
#               FROM (SELECT id, simhash_leader(id, fp, 3) OVER (ORDER BY id) c FROM cb_local) s
#   component   the same with simhash_component
#   (BENCH_KEY_JOIN=1 only: the index join and key join below, on one node and distributed,
#   with their per-task and per-worker tables; together about 15 minutes at 10M rows)
#   index join  CREATE INDEX USING simhash (fp) (time apart), then
#               SELECT count(*) FROM cb_local a JOIN cb_local b ON b.fp <~> a.fp <= 3 AND a.id < b.id
#   key join    cb_lkeys (block, key, id, fp) from simhash_blocks(fp, 3, 5) (10 keys per row;
#               INSERT and VACUUM ANALYZE timed apart), then the pigeonhole self-join
#                 ON a.key = b.key AND a.block = b.block AND a.id < b.id
#                 WHERE simhash_hamming(a.fp, b.fp) <= 3 AND simhash_first_shared_block(a.fp, b.fp, 3, 5) = a.block
#               with max_parallel_workers_per_gather = 0, and again with 2 (parallel hash join).
# Distributed (on the coordinator; the tasks run on the workers):
#   load        cb_docs (id, fp) distributed by id, 8 shards: INSERT INTO cb_docs SELECT FROM
#               cb_local (loading, not dedup: shown apart)
#   keys        cb_keys (block, key, id, fp) distributed by key (colocate_with none, 8 shards):
#               INSERT INTO cb_keys SELECT k.block, k.key, d.id, d.fp FROM cb_docs d,
#               simhash_blocks(d.fp, 3, 5) k (the INSERT/SELECT method from EXPLAIN is shown),
#               then VACUUM ANALYZE cb_keys
#   join        the key self-join above on cb_keys, count(*): one task per shard, on the workers
#   pairs       the same join into a coordinator table cb_pairs (a, b): what reaches the coordinator
#   groups      simhash_pair_groups('SELECT a, b FROM cb_pairs', 'leader') on the coordinator
#   keys4       the method of simhash_key_partners (examples/dedup_pairs.sql before the packs):
#               cb_keys4 from simhash_blocks(fp, 3, 4) (4 keys per row), then VACUUM ANALYZE
#   partners    INSERT INTO cb_paired (distributed by key, colocated with cb_keys4) the rows of
#               SELECT key, id, simhash_key_partners(id, fp, block, 3, 4) OVER (PARTITION BY
#               key) with at least one partner: each key's rows searched in memory in the
#               shard task that holds the key
#   pairs4      the pairs (id < partner) into a coordinator table cb_pairs4; members4: the ids in
#               pairs to the coordinator (the script ranks them there); groups4:
#               simhash_pair_groups over them. The pairs must equal cb_pairs (when measured),
#               the groups simhash_leader's. Per shard task of the partner search: EXPLAIN
#               ANALYZE of a count(*) over it, one task at a time per worker, as for the join below.
#               (Only with BENCH_KEY_PARTNERS=1, on a cluster whose extension is at 0.3.0:
#               0.4.0 dropped simhash_key_partners; the default, 0, leaves keys4 .. groups4 out.)
#   reps        the method examples/dedup_pairs.sql uses: cb_reps (bucket, id, fp) distributed by
#               bucket = hashint8(fp) & (NB - 1), NB the script's bucket count (a power of two,
#               at least 256 and ROWS / 20,000)
#   packs       cb_packs (target, pack bytea) distributed by target: simhash_key_pack(id, fp, 3,
#               4, NT) GROUP BY bucket over the rows sorted by bucket (as the script), unnested (NT targets, the script's: at least 256 and
#               4 x distinct fingerprints / 500,000)
#   pack_partners  cb_pwin (bucket, id, fpkey, partners), colocated with cb_reps: each target's
#               packs (array_agg GROUP BY target) searched by simhash_pack_partners
#   pairs5      the script's count of the pairs of cb_pwin (half its partners: each pair is in
#               both rows' partners); must equal the gathered pairs' count
#   members5    as the script: the rows of cb_reps in cb_pwin (a semi-join; the script takes
#               the keep value from there; here the rows are not one per fingerprint, so matched
#               on the id too) to the coordinator
#   groups5     as the script: simhash_pair_groups reading the pairs of cb_pwin from the workers,
#               the ids in the order of a query over cb_members5; the groups must equal
#               simhash_leader's
#   pairs5_gather, groups5_gathered  the way before the id order (not part of the job): the
#               pairs into a coordinator table cb_pairs5 (which must equal cb_pairs4), and
#               simhash_pair_groups over it; the same groups. Per shard task of packs and pack_partners: EXPLAIN
#               ANALYZE of a count(*) over the SELECT, one task at a time per worker; the task
#               time reported adds the wall time of reps (spreading the rows by bucket).
#   script      (runs the packs) examples/dedup_pairs.sql -v table=cb_docs -v radius=3 -v action=report -v report_rows=0
#               (the summary, not the list of every row), timed
#               by the client (wall clock around psql): the end-to-end figure a user sees
# Per shard task: the join once more under EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) with
# citus.explain_all_tasks = on and citus.max_adaptive_executor_pool_size = 1, so that each
# worker runs its shard tasks one after the other (one core per worker; with the default pool
# Citus runs all 4 tasks of a worker at once and each task's time would include waiting for the
# CPU behind the others). TIMING OFF: the per-node clocks cost time on 10^8 rows; the task's
# "Execution Time" is still measured. From each task's remote plan: its node, the key rows
# scanned (each side scans the same shard), the pairs out of the Hash Join and the rows its
# Join Filter removed. The hash condition (block, key) matches every key row with itself and
# each pair of rows sharing the key twice (both orders), so
#   candidates compared = (pairs out + rows removed by the join filter - key rows) / 2
# is the number of (a, b) with a.id < b.id sharing a key, each given the distance check.
# Per worker: shards, rows of cb_docs and cb_keys (count per shard, run_command_on_shards) and
# their size (citus_shards), candidates, pairs, sum and max of its task times.
#
# Checks (a failure prints MISMATCH and exits 2): the index join, both local key joins, the
# distributed join and the per-task sum find the same number of pairs; the distributed groups
# have as many rows that are not their own kept row as simhash_leader (ids in id order);
# examples/dedup_pairs.sql reports that many duplicates, in as many groups of >= 2 rows.
#
# Cluster: initdb'd for each run under $BENCH_DIR (default /tmp/citus-bench: n0 = coordinator,
# n1, n2 = workers), Unix sockets in $BENCH_DIR only, ports $BENCH_PORT .. +2 (default 55460),
# run as the postgres OS user when the script runs as root; shared_preload_libraries = citus,
# citus.shard_count = 8, max_connections = 100, shared_buffers = 256MB, max_wal_size = 10GB,
# autovacuum off, synchronous_commit off, fsync off and full_page_writes off (a benchmark:
# nothing survives a crash), max_parallel_workers_per_gather = 0, jit off, work_mem = 64MB,
# maintenance_work_mem = 2GB on every node. Stopped and removed at exit (BENCH_KEEP=1 keeps
# the data directories, stopped). Citus and simhash must be installed for PG_BINDIR's server
# (default: pg_config --bindir, else /usr/lib/postgresql/15/bin; `bash tools/citus.sh install`
# builds Citus for PostgreSQL 15). The results in bench/results/ were measured with
# PG_BINDIR=/tmp/soakpg/usr/lib/postgresql/15/bin, a private copy of Debian's PostgreSQL 15
# with both installed, so that the CI running on the same machine kept the system one.
#
# Example: bench/citus_bench.sh 10000000 2>&1 | tee bench/results/citus_bench-DATE.txt
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=${1:-10000000}
PG_BINDIR=${PG_BINDIR:-$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)}
BASE=${BENCH_DIR:-/tmp/citus-bench}
PORT0=${BENCH_PORT:-55460}
PORTS=("$PORT0" $((PORT0 + 1)) $((PORT0 + 2)))
KEEP=${BENCH_KEEP:-0}
OLD=${BENCH_KEY_JOIN:-0}
PARTNERS=${BENCH_KEY_PARTNERS:-0}	# 1 needs extension 0.3.0 (simhash_key_partners, dropped in 0.4.0)
NOTE=${BENCH_NOTE:-}
K=3
M=5
SHARDS=8

die() { echo "citus_bench: $*" >&2; exit 1; }
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || die "ROWS '$ROWS' is not a positive integer"
[ "$ROWS" -ge 10 ] || die "ROWS must be at least 10"
[ -x "$PG_BINDIR/postgres" ] || die "no postgres in PG_BINDIR=$PG_BINDIR"
PKGLIB=$("$PG_BINDIR/pg_config" --pkglibdir)
[ -f "$PKGLIB/citus.so" ] || die "Citus is not installed in $PKGLIB"
[ -f "$PKGLIB/simhash.so" ] || die "simhash is not installed in $PKGLIB (make PG_CONFIG=$PG_BINDIR/pg_config install)"
command -v python3 >/dev/null || die "python3 is needed"
PSQL=$PG_BINDIR/psql
[ -x "$PSQL" ] || PSQL=$(command -v psql) || die "psql is needed"

as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
OWNER=postgres
[ "$(id -u)" = 0 ] || OWNER=$(id -un)

WORK=$(mktemp -d)
STARTED=()
cleanup() {
	local rc=$? i
	trap - EXIT
	for i in "${STARTED[@]}"; do
		as_owner "$PG_BINDIR/pg_ctl" -D "$BASE/n$i" -m fast -t 120 stop >/dev/null 2>&1 ||
			as_owner "$PG_BINDIR/pg_ctl" -D "$BASE/n$i" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ "$KEEP" != 1 ] && [ -d "$BASE" ]; then
		for i in 0 1 2; do rm -rf "${BASE:?}/n$i"; done
	fi
	rm -rf "$WORK"
	[ "$rc" = 0 ] || echo "citus_bench: exit status $rc (servers stopped)" >&2
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date '+%H:%M:%S')] $*" >&2; }

# ---------------------------------------------------------------------------
# the cluster
# ---------------------------------------------------------------------------
mkdir -p "$BASE"
[ "$(id -u)" != 0 ] || chown postgres "$BASE"
for i in 0 1 2; do
	if [ -f "$BASE/n$i/postmaster.pid" ] && as_owner "$PG_BINDIR/pg_ctl" -D "$BASE/n$i" status >/dev/null 2>&1; then
		die "a server is already running in $BASE/n$i: stop it first (it is not this run's)"
	fi
	if [ -S "$BASE/.s.PGSQL.${PORTS[$i]}" ] || "$PG_BINDIR/pg_isready" -q -h "$BASE" -p "${PORTS[$i]}" >/dev/null 2>&1; then
		die "something already listens on $BASE/.s.PGSQL.${PORTS[$i]}"
	fi
done
log "initdb of 3 nodes in $BASE (ports ${PORTS[*]})"
for i in 0 1 2; do
	rm -rf "${BASE:?}/n$i"
	as_owner "$PG_BINDIR/initdb" -D "$BASE/n$i" -U "$OWNER" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	as_owner tee -a "$BASE/n$i/postgresql.conf" >/dev/null <<CONF
listen_addresses = ''
port = ${PORTS[$i]}
unix_socket_directories = '$BASE'
shared_preload_libraries = 'citus'
citus.shard_count = $SHARDS
citus.log_distributed_deadlock_detection = off
max_connections = 100
shared_buffers = 256MB
max_wal_size = 10GB
checkpoint_timeout = 30min
autovacuum = off
synchronous_commit = off
fsync = off
full_page_writes = off
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
jit = off
work_mem = 64MB
maintenance_work_mem = 2GB
CONF
done
for i in 0 1 2; do
	as_owner "$PG_BINDIR/pg_ctl" -D "$BASE/n$i" -l "$BASE/n$i.log" -w -t 120 start >/dev/null ||
		{ tail -20 "$BASE/n$i.log" >&2; die "node $i did not start (log above)"; }
	STARTED+=("$i")
done

export PGHOST=$BASE PGUSER=$OWNER PGDATABASE=postgres
unset PGOPTIONS PGSERVICE
q() { local p=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -p "$p" "$@"; }
qt() { local p=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' -p "$p" "$@"; }
C=${PORTS[0]}

for i in 1 2; do q "${PORTS[$i]}" -c "CREATE EXTENSION citus" >/dev/null; done
q "$C" >/dev/null <<SQL
CREATE EXTENSION citus;
SELECT citus_set_coordinator_host('$BASE', $C);
SELECT citus_add_node('$BASE', ${PORTS[1]});
SELECT citus_add_node('$BASE', ${PORTS[2]});
CREATE EXTENSION simhash;
SQL
for i in 1 2; do
	[ "$(qt "${PORTS[$i]}" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")" != "" ] ||
		die "CREATE EXTENSION simhash did not reach the worker on port ${PORTS[$i]}"
done
qt "$C" -c "SELECT 1 FROM pg_proc WHERE proname = 'simhash_first_shared_block' AND pronargs = 4" | grep -q 1 ||
	die "this simhash has no simhash_first_shared_block(a, b, radius, blocks): reinstall it from $ROOT"

RES=$WORK/res.tsv
: >"$RES"
rec() { local IFS=$'\t'; echo "$*" >>"$RES"; }
GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src 2>/dev/null)" ]; then GITREV="$GITREV+dirty(src)"; fi
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
rec env command "bench/citus_bench.sh $*"
rec env note "$NOTE"
rec env started "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
rec env machine "${CPU:-$(uname -m)} ($(nproc) cpus visible), $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB RAM"
rec env server "$(qt "$C" -c "SELECT version()")"
rec env citus "$(qt "$C" -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"); simhash $(qt "$C" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'") ($PKGLIB/simhash.so, sha256 $(sha256sum "$PKGLIB/simhash.so" | cut -c1-16)), script of checkout $GITREV"
rec env nodes "$(qt "$C" -c "SELECT string_agg(format('%s:%s %s%s', nodename, nodeport, noderole, CASE WHEN shouldhaveshards THEN '' ELSE ' (no shards)' END), ', ' ORDER BY nodeid) FROM pg_dist_node")"
rec env settings "$(qt "$C" -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY o) FROM unnest(ARRAY['shared_buffers', 'max_connections', 'work_mem', 'maintenance_work_mem', 'max_parallel_workers_per_gather', 'jit', 'synchronous_commit', 'fsync', 'full_page_writes', 'autovacuum', 'max_wal_size', 'citus.shard_count', 'citus.max_adaptive_executor_pool_size']) WITH ORDINALITY u(name, o)")"

# one timed step in a fresh connection: "pre" (untimed SETs), then the statements between two
# clock_timestamp() readings; lines of output starting with "res" are its results
#   step NAME "pre" "statements"    -> appends "step NAME seconds res..." to $RES
step() {
	local name=$1 pre=$2 sql=$3 out=$WORK/step.out
	log "$name"
	qt "$C" >"$out" <<SQL
$pre
SELECT clock_timestamp() AS cb_t0 \\gset
$sql
SELECT 'time', extract(epoch FROM clock_timestamp() - :'cb_t0'::timestamptz);
SQL
	local t r
	t=$(awk -F'\t' '$1 == "time" { print $2 }' "$out")
	r=$(awk -F'\t' '$1 == "res" { for (i = 2; i <= NF; i++) printf "%s%s", (i > 2 ? "\t" : ""), $i }' "$out")
	[ -n "$t" ] || { cat "$out" >&2; die "$name: no time"; }
	rec step "$name" "$t" "$r"
}
res_of() { awk -F'\t' -v n="$1" -v c="$2" '$1 == "step" && $2 == n { print $(3 + c) }' "$RES"; }
mismatch() { echo "MISMATCH: $*" | tee -a "$WORK/mismatch" >&2; }
plan() {	# name "pre" statement: EXPLAIN (COSTS OFF) into $RES
	qt "$C" -c "$2" -c "EXPLAIN (COSTS OFF) $3" | sed "s/^/plan\t$1\t/" >>"$RES"
}

LOCAL_SET="SET max_parallel_workers_per_gather = 0; SET jit = off; SET maintenance_work_mem = '2GB'; SET work_mem = '64MB';"
JOIN_COND="ON a.key = b.key AND a.block = b.block AND a.id < b.id WHERE simhash_hamming(a.fp, b.fp) <= $K AND simhash_first_shared_block(a.fp, b.fp, $K, $M) = a.block"
group_sql() { echo "SELECT 'res', count(*) FILTER (WHERE c = id), count(*) FILTER (WHERE c <> id) FROM (SELECT id, $1(id, fp, $K) OVER (ORDER BY id) AS c FROM cb_local) s;"; }

# ---------------------------------------------------------------------------
# data (bench/dedup_bench.sh's generator, bench/data/clustered.sql)
# ---------------------------------------------------------------------------
step generate "" "
CREATE TABLE cb_local (id int8 PRIMARY KEY, fp simhash NOT NULL) WITH (autovacuum_enabled = off);
\\set tbl cb_local
\\set rows $ROWS
\\set ext public
\\i $ROOT/bench/data/clustered.sql
VACUUM (FREEZE, ANALYZE) cb_local;"
rec data "$(qt "$C" -c "SELECT count(*), count(DISTINCT fp), pg_relation_size('cb_local'), sum(fp::int8 # id) FROM cb_local")"

# ---------------------------------------------------------------------------
# single node
# ---------------------------------------------------------------------------
step leader "$LOCAL_SET" "$(group_sql simhash_leader)"
step component "$LOCAL_SET" "$(group_sql simhash_component)"
if [ "$OLD" = 1 ]; then
step index_build "$LOCAL_SET" "CREATE INDEX cb_local_fp ON cb_local USING simhash (fp); ANALYZE cb_local;"
IDX_SQL="SELECT count(*) FROM cb_local a JOIN cb_local b ON b.fp <~> a.fp <= $K AND a.id < b.id"
plan index_join "$LOCAL_SET" "$IDX_SQL"
grep -q "Index Scan using cb_local_fp" <(awk -F'\t' '$1 == "plan" && $2 == "index_join"' "$RES") ||
	{ grep "plan.index_join" "$RES" >&2; die "the index self-join does not use the simhash index"; }
step index_join "$LOCAL_SET" "SELECT 'res', r.* FROM ($IDX_SQL) r;"
q "$C" -c "DROP INDEX cb_local_fp" >/dev/null

step lkeys_insert "$LOCAL_SET" "
CREATE TABLE cb_lkeys (block int, key bigint, id bigint, fp simhash) WITH (autovacuum_enabled = off);
INSERT INTO cb_lkeys SELECT k.block, k.key, d.id, d.fp FROM cb_local d, simhash_blocks(d.fp, $K, $M) k;"
step lkeys_vacuum "$LOCAL_SET" "VACUUM (ANALYZE) cb_lkeys;"
rec lkeys "$(qt "$C" -c "SELECT count(*), pg_table_size('cb_lkeys') FROM cb_lkeys")"
LKEY_SQL="SELECT count(*) FROM cb_lkeys a JOIN cb_lkeys b $JOIN_COND"
plan lkey_join0 "$LOCAL_SET" "$LKEY_SQL"
step lkey_join0 "$LOCAL_SET" "SELECT 'res', r.* FROM ($LKEY_SQL) r;"
PAR_SET="$LOCAL_SET SET max_parallel_workers_per_gather = 2;"
plan lkey_join2 "$PAR_SET" "$LKEY_SQL"
step lkey_join2 "$PAR_SET" "SELECT 'res', r.* FROM ($LKEY_SQL) r;"
q "$C" -c "DROP TABLE cb_lkeys" >/dev/null

PAIRS=$(res_of index_join 1)
for v in lkey_join0 lkey_join2; do
	[ "$(res_of $v 1)" = "$PAIRS" ] || mismatch "$v found $(res_of $v 1) pairs, the index self-join $PAIRS"
done
if [ -f "$WORK/mismatch" ]; then exit 2; fi
fi

# ---------------------------------------------------------------------------
# distributed
# ---------------------------------------------------------------------------
q "$C" >/dev/null <<SQL
CREATE TABLE cb_docs (id bigint, fp simhash);
SELECT create_distributed_table('cb_docs', 'id', shard_count := $SHARDS);
SQL
step load "" "INSERT INTO cb_docs SELECT id, fp FROM cb_local;"
step load_vacuum "" "VACUUM (ANALYZE) cb_docs;"
if [ "$OLD" = 1 ]; then
q "$C" >/dev/null <<SQL
CREATE TABLE cb_keys (block int, key bigint, id bigint, fp simhash);
SELECT create_distributed_table('cb_keys', 'key', colocate_with := 'none', shard_count := $SHARDS);
CREATE TABLE cb_pairs (a bigint, b bigint);
SQL
KEYS_INS="INSERT INTO cb_keys SELECT k.block, k.key, d.id, d.fp FROM cb_docs d, simhash_blocks(d.fp, $K, $M) k"
plan keys "" "$KEYS_INS"
step keys "" "$KEYS_INS;"
step keys_vacuum "" "VACUUM (ANALYZE) cb_keys;"
DKEY_SQL="SELECT count(*) FROM cb_keys a JOIN cb_keys b $JOIN_COND"
plan join "SET citus.explain_all_tasks = off" "$DKEY_SQL"
step join "" "SELECT 'res', r.* FROM ($DKEY_SQL) r;"
step pairs "" "INSERT INTO cb_pairs SELECT a.id, b.id FROM cb_keys a JOIN cb_keys b $JOIN_COND;
SELECT 'res', count(*), pg_table_size('cb_pairs') FROM cb_pairs;"
step groups "SET maintenance_work_mem = '2GB';" "SELECT 'res', count(*), count(*) FILTER (WHERE keep_id <> id), count(DISTINCT keep_id) FILTER (WHERE keep_id <> id) FROM simhash_pair_groups('SELECT a, b FROM cb_pairs', 'leader');"
[ "$(res_of join 1)" = "$PAIRS" ] || mismatch "the distributed key join found $(res_of join 1) pairs, the single-node index self-join $PAIRS"
[ "$(res_of pairs 1)" = "$PAIRS" ] || mismatch "cb_pairs holds $(res_of pairs 1) pairs, the single-node index self-join found $PAIRS"
[ "$(res_of groups 2)" = "$(res_of leader 2)" ] ||
	mismatch "simhash_pair_groups over the distributed pairs: $(res_of groups 2) rows not their own kept row, simhash_leader: $(res_of leader 2)"
if [ -f "$WORK/mismatch" ]; then exit 2; fi
fi

# the same pairs as examples/dedup_pairs.sql finds them since 0.3.0: 4 blocks (4 keys per row,
# simhash_blocks(fp, 3, 4)), each key's rows searched in memory by simhash_key_partners on the
# shard that holds the key, the rows in a pair kept with their partners; then the pairs
M4=$((K + 1))
if [ "$PARTNERS" = 1 ]; then
q "$C" >/dev/null <<SQL
CREATE TABLE cb_keys4 (block int, key bigint, id bigint, fp simhash);
SELECT create_distributed_table('cb_keys4', 'key', colocate_with := 'none', shard_count := $SHARDS);
CREATE TABLE cb_paired (key bigint, id bigint, partners bigint[]);
SELECT create_distributed_table('cb_paired', 'key', colocate_with := 'cb_keys4');
CREATE TABLE cb_pairs4 (a bigint, b bigint);
SQL
step keys4 "" "INSERT INTO cb_keys4 SELECT k.block, k.key, d.id, d.fp FROM cb_docs d, simhash_blocks(d.fp, $K, $M4) k;"
step keys4_vacuum "" "VACUUM (ANALYZE) cb_keys4;"
PARTNERS_SQL="SELECT key, id, partners FROM (SELECT key, id, simhash_key_partners(id, fp, block, $K, $M4) OVER (PARTITION BY key) AS partners FROM cb_keys4) k WHERE cardinality(partners) > 0"
plan partners "" "INSERT INTO cb_paired $PARTNERS_SQL"
step partners "SET maintenance_work_mem = '2GB';" "INSERT INTO cb_paired $PARTNERS_SQL;
SELECT 'res', count(*), citus_table_size('cb_paired') FROM cb_paired;"
step pairs4 "" "INSERT INTO cb_pairs4 SELECT id, p FROM cb_paired, unnest(partners) p WHERE id < p;
SELECT 'res', count(*) FROM cb_pairs4;"
step members4 "" "CREATE TEMP TABLE cb_members AS SELECT id FROM cb_paired; SELECT 'res', count(*), count(DISTINCT id) FROM cb_members;"
step groups4 "SET maintenance_work_mem = '2GB';" "SELECT 'res', count(*), count(*) FILTER (WHERE keep_id <> id), count(DISTINCT keep_id) FILTER (WHERE keep_id <> id) FROM simhash_pair_groups('SELECT a, b FROM cb_pairs4', 'leader');"
if [ "$OLD" = 1 ]; then
	[ "$(res_of pairs4 1)" = "$PAIRS" ] || mismatch "simhash_key_partners found $(res_of pairs4 1) pairs, the single-node index self-join $PAIRS"
	[ "$(qt "$C" -c "SELECT count(*) FROM (SELECT a, b FROM cb_pairs EXCEPT SELECT a, b FROM cb_pairs4) x")" = 0 ] ||
		mismatch "pairs of the key join missing from simhash_key_partners' pairs"
fi
[ "$(res_of groups4 2)" = "$(res_of leader 2)" ] ||
	mismatch "simhash_pair_groups over simhash_key_partners' pairs: $(res_of groups4 2) rows not their own kept row, simhash_leader: $(res_of leader 2)"
if [ -f "$WORK/mismatch" ]; then exit 2; fi
log "EXPLAIN ANALYZE of the partner search (citus.max_adaptive_executor_pool_size = 1)"
qt "$C" >"$WORK/explain4.json" <<SQL
SET citus.explain_all_tasks = on;
SET citus.max_adaptive_executor_pool_size = 1;
SET maintenance_work_mem = '2GB';
EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF, FORMAT JSON) SELECT count(*) FROM ($PARTNERS_SQL) x;
SQL
qt "$C" -c "SELECT shardid, result FROM run_command_on_shards('cb_keys4', 'SELECT count(*) FROM %s')" | sed "s/^/count4\t/" >>"$RES"
q "$C" -c "DROP TABLE cb_keys4, cb_paired" >/dev/null
fi

# the same pairs as examples/dedup_pairs.sql finds them since the packs: the rows spread by a
# bucket of the fingerprint (NB buckets, as the script chooses them), each bucket's 4 keys per
# row packed into one bytea per target (NT targets), the packs spread by target, and each
# target's packs searched by simhash_pack_partners; the rows in pairs spread back by bucket
NB=1
while [ "$NB" -lt "$(( ROWS / 20000 > 256 ? ROWS / 20000 : 256 ))" ]; do NB=$((NB * 2)); done
NDIST=$(qt "$C" -c "SELECT count(DISTINCT fp) FROM cb_local")
NT=$(( (NDIST * M4 + 499999) / 500000 > 256 ? (NDIST * M4 + 499999) / 500000 : 256 ))
rec packs "$NB" "$NT"
q "$C" >/dev/null <<SQL
CREATE TABLE cb_reps (bucket int, id bigint, fp simhash);
SELECT create_distributed_table('cb_reps', 'bucket', colocate_with := 'none', shard_count := $SHARDS);
CREATE TABLE cb_packs (target int, pack bytea);
ALTER TABLE cb_packs ALTER pack SET STORAGE EXTERNAL;
SELECT create_distributed_table('cb_packs', 'target', colocate_with := 'none', shard_count := $SHARDS);
CREATE TABLE cb_pwin (bucket int, id bigint, fpkey bigint, partners bigint[]);
SELECT create_distributed_table('cb_pwin', 'bucket', colocate_with := 'cb_reps');
CREATE TABLE cb_pairs5 (a bigint, b bigint);
SQL
step reps "" "INSERT INTO cb_reps SELECT hashint8(fp::bigint) & $((NB - 1)), id, fp FROM cb_docs;"
PACK_SQL="SELECT t.n - 1, t.pack FROM (SELECT simhash_key_pack(id, fp, $K, $M4, $NT) AS packs FROM (SELECT id, fp, bucket FROM cb_reps ORDER BY bucket) o GROUP BY bucket) s, unnest(s.packs) WITH ORDINALITY t(pack, n) WHERE t.pack IS NOT NULL"
plan packs "" "INSERT INTO cb_packs $PACK_SQL"
step packs "SET maintenance_work_mem = '2GB';" "INSERT INTO cb_packs $PACK_SQL;
SELECT 'res', count(*), sum(length(pack)) FROM cb_packs;"
PPART_SQL="SELECT hashint8(p.fp::bigint) & $((NB - 1)), p.id, p.fp::bigint, p.partners FROM (SELECT target, array_agg(pack) AS packs FROM cb_packs GROUP BY target) s, simhash_pack_partners(s.packs, $K, $M4) p"
plan pack_partners "" "INSERT INTO cb_pwin $PPART_SQL"
step pack_partners "SET maintenance_work_mem = '2GB';" "INSERT INTO cb_pwin $PPART_SQL;
SELECT 'res', count(*) FROM cb_pwin;"
step pairs5 "" "SELECT 'res', coalesce(sum(cardinality(partners)), 0) / 2 FROM cb_pwin;"
step members5 "" "CREATE UNLOGGED TABLE cb_members5 AS SELECT r.id, r.id AS ord, r.fp FROM cb_reps r WHERE EXISTS (SELECT 1 FROM cb_pwin w WHERE w.bucket = r.bucket AND w.fpkey = r.fp::bigint AND w.id = r.id);
SELECT 'res', count(*) FROM cb_members5;"
step groups5 "SET maintenance_work_mem = '2GB';" "SELECT 'res', count(*), count(*) FILTER (WHERE keep_id <> id), count(DISTINCT keep_id) FILTER (WHERE keep_id <> id) FROM simhash_pair_groups('SELECT id, p FROM cb_pwin, unnest(partners) p WHERE id < p', 'leader', 'SELECT id FROM cb_members5 ORDER BY ord, id');"
# the way before 0.3.0's id order: the pairs gathered into a table first (also what the checks compare)
step pairs5_gather "" "INSERT INTO cb_pairs5 SELECT id, p FROM cb_pwin, unnest(partners) p WHERE id < p;
SELECT 'res', count(*) FROM cb_pairs5;"
step groups5_gathered "SET maintenance_work_mem = '2GB';" "SELECT 'res', count(*), count(*) FILTER (WHERE keep_id <> id), count(DISTINCT keep_id) FILTER (WHERE keep_id <> id) FROM simhash_pair_groups('SELECT a, b FROM cb_pairs5', 'leader');"
[ "$(res_of pairs5_gather 1)" = "$(res_of pairs5 1)" ] ||
	mismatch "the partners hold $(res_of pairs5 1) pairs (half their count), $(res_of pairs5_gather 1) gathered"
[ "$(res_of groups5_gathered 2) $(res_of groups5_gathered 3)" = "$(res_of groups5 2) $(res_of groups5 3)" ] ||
	mismatch "simhash_pair_groups with the pairs read from the workers: $(res_of groups5 2) $(res_of groups5 3), from the gathered pairs: $(res_of groups5_gathered 2) $(res_of groups5_gathered 3)"
if [ "$PARTNERS" = 1 ]; then
	[ "$(res_of pairs5 1)" = "$(res_of pairs4 1)" ] || mismatch "simhash_pack_partners found $(res_of pairs5 1) pairs, simhash_key_partners $(res_of pairs4 1)"
	[ "$(qt "$C" -c "SELECT count(*) FROM (SELECT a, b FROM cb_pairs4 EXCEPT SELECT a, b FROM cb_pairs5) x")" = 0 ] ||
		mismatch "pairs of simhash_key_partners missing from simhash_pack_partners' pairs"
fi
[ "$(res_of groups5 2)" = "$(res_of leader 2)" ] ||
	mismatch "simhash_pair_groups over the packs' pairs: $(res_of groups5 2) rows not their own kept row, simhash_leader: $(res_of leader 2)"
if [ -f "$WORK/mismatch" ]; then exit 2; fi
log "EXPLAIN ANALYZE of the packing and the pack search (citus.max_adaptive_executor_pool_size = 1)"
explain_tasks() {	# name statement: EXPLAIN ANALYZE of a count over it, one task at a time per worker
	qt "$C" >"$WORK/explain_$1.json" <<SQL
SET citus.explain_all_tasks = on;
SET citus.max_adaptive_executor_pool_size = 1;
SET maintenance_work_mem = '2GB';
EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF, FORMAT JSON) SELECT count(*) FROM ($2) x;
SQL
}
explain_tasks packs "$PACK_SQL"
explain_tasks pack_partners "$PPART_SQL"

# per shard task: EXPLAIN ANALYZE, each worker running its tasks one at a time
if [ "$OLD" = 1 ]; then
log "EXPLAIN ANALYZE of the distributed join (citus.max_adaptive_executor_pool_size = 1)"
qt "$C" >"$WORK/explain.json" <<SQL
SET citus.explain_all_tasks = on;
SET citus.max_adaptive_executor_pool_size = 1;
EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF, FORMAT JSON) $DKEY_SQL;
SQL
qt "$C" -c "SELECT shardid, nodename, nodeport, table_name::text, shard_size FROM citus_shards WHERE table_name IN ('cb_docs'::regclass, 'cb_keys'::regclass)" |
	sed 's/^/shard\t/' >>"$RES"
for t in cb_docs cb_keys; do
	qt "$C" -c "SELECT shardid, result FROM run_command_on_shards('$t', 'SELECT count(*) FROM %s')" | sed "s/^/count\t/" >>"$RES"
done
fi

# the end-to-end script
log "examples/dedup_pairs.sql (report)"
t0=$(date +%s.%N)
"$PSQL" -X -p "$C" -v table=cb_docs -v radius=$K -v action=report -v report_rows=0 -f "$ROOT/examples/dedup_pairs.sql" >"$WORK/script.out" 2>"$WORK/script.err" ||
	{ cat "$WORK/script.err" >&2; die "examples/dedup_pairs.sql failed"; }
t1=$(date +%s.%N)
rec step script "$(python3 -c "print(round($t1 - $t0, 3))")" ""
grep -q "ERROR" "$WORK/script.err" && { cat "$WORK/script.err" >&2; die "examples/dedup_pairs.sql reported an error"; }
sed -n 's/^.*NOTICE: *//p' "$WORK/script.err" | sed 's/^/notice\t/' >>"$RES"
SCRIPT_DUPS=$(sed -n 's/.* holding \([0-9]*\) duplicate.*/\1/p' "$WORK/script.err" | head -1)
SCRIPT_GROUPS=$(sed -n 's/.*; \([0-9]*\) groups\{0,1\} of near-duplicates.*/\1/p' "$WORK/script.err" | head -1)
[ "$SCRIPT_GROUPS" = "$(res_of groups5 3)" ] ||
	mismatch "examples/dedup_pairs.sql reports ${SCRIPT_GROUPS:-no} groups, simhash_pair_groups over cb_pairs5 $(res_of groups5 3)"
[ "$SCRIPT_DUPS" = "$(res_of leader 2)" ] ||
	mismatch "examples/dedup_pairs.sql reports ${SCRIPT_DUPS:-no} duplicates, simhash_leader $(res_of leader 2)"
rec env finished "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
BENCH_RES=$RES BENCH_EXPLAIN=$WORK/explain.json BENCH_ROWS=$ROWS BENCH_K=$K BENCH_M=$M BENCH_OLD=$OLD BENCH_PARTNERS=$PARTNERS \
BENCH_PORTS="${PORTS[*]}" BENCH_MISMATCH=$WORK/mismatch python3 - <<'PY'
import json, os, re, sys
from collections import defaultdict

env = os.environ
K, M, ROWS = int(env["BENCH_K"]), int(env["BENCH_M"]), int(env["BENCH_ROWS"])
OLD = env["BENCH_OLD"] == "1"
PARTNERS = env["BENCH_PARTNERS"] == "1"
ports = env["BENCH_PORTS"].split()
envs, steps, plans, notices = {}, {}, defaultdict(list), []
shards, counts = {}, {}
for l in open(env["BENCH_RES"]):
    f = l.rstrip("\n").split("\t")
    if f[0] == "env":
        envs[f[1]] = f[2] if len(f) > 2 else ""
    elif f[0] == "step":
        steps[f[1]] = (float(f[2]), [int(x) for x in f[3:] if x != ""])
    elif f[0] == "plan":
        plans[f[1]].append(f[2] if len(f) > 2 else "")
    elif f[0] == "data":
        n_rows, n_distinct, rel_bytes, _ = (int(x) for x in f[1:5])
    elif f[0] == "lkeys":
        lkey_rows, lkey_bytes = int(f[1]), int(f[2])
    elif f[0] == "shard":
        shards[int(f[1])] = (f[2], int(f[3]), f[4], int(f[5]))
    elif f[0] == "count":
        counts[int(f[1])] = int(f[2])
    elif f[0] == "notice":
        notices.append(f[1])
    elif f[0] == "packs":
        n_buckets, n_targets = int(f[1]), int(f[2])

def s(x):
    return f"{x:.0f}" if x >= 1000 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"
def t(name):
    return steps[name][0]
def r(name, i=0):
    return steps[name][1][i]
def mb(b):
    return b / 1e6

print(f"Citus benchmark: all pairs within k = {K} bits, {ROWS:,} clustered rows, 3 nodes on one machine")
print(f"  command:  {envs['command']}")
if envs.get("note"):
    print(f"  note:     {envs['note']}")
print(f"  started:  {envs['started']}")
print(f"  finished: {envs['finished']}")
print(f"  machine:  {envs['machine']}")
print(f"  server:   {envs['server']}")
print(f"  versions: Citus {envs['citus']}")
print(f"  nodes:    {envs['nodes']}; 8 shards per distributed table (4 per worker)")
print(f"  settings: {envs['settings']} (every node; fsync and full_page_writes off: a benchmark, not crash-safe)")
print("  timing:   server-side clock_timestamp() around each statement (planning included), each in a")
print("            fresh connection; the dedup_pairs.sql script by the client's wall clock")
print(f"  data:     bench/dedup_bench.sh's generator (setseed(0.375), {max(1, ROWS // 5):,} centres): {n_rows:,} rows,")
print(f"            {n_distinct:,} distinct fingerprints; cb_local {mb(rel_bytes):.1f} MB, generated in {s(t('generate'))} s")
print()

lead = t("leader"); idx = t("index_join") if OLD else None
print(f"== single node (coordinator, local table, one backend, radius {K}) ==")
print(f"{'variant':44s} | {'time s':>8s} | {'pairs':>11s} | {'groups':>10s} {'in groups':>10s} | {'/ leader':>8s} {'x index':>8s}")
print("-" * 112)
def row(label, name, pairs=None, groups=None, note=""):
    x = t(name)
    g = f"{groups[0]:>10,} {groups[1]:>10,}" if groups else " " * 21
    p = f"{pairs:>11,}" if pairs is not None else " " * 11
    xi = f"{idx / x:>8.2f}" if idx else " " * 8
    print(f"{label:44s} | {s(x):>8s} | {p} | {g} | {x / lead:>8.2f} {xi}{'  ' + note if note else ''}")
row("simhash_leader() OVER (ORDER BY id)", "leader", groups=(r("leader", 0), r("leader", 1)))
row("simhash_component() OVER (ORDER BY id)", "component", groups=(r("component", 0), r("component", 1)))
if OLD:
    row("simhash index self-join", "index_join", pairs=r("index_join"), note=f"index build {s(t('index_build'))} s apart")
    row("key join, 1 core", "lkey_join0", pairs=r("lkey_join0"),
        note=f"keys: INSERT {s(t('lkeys_insert'))} s + VACUUM ANALYZE {s(t('lkeys_vacuum'))} s apart")
    row("key join, parallel (2 workers per gather)", "lkey_join2", pairs=r("lkey_join2"))
print(f"  '/ leader': time / simhash_leader's time; 'x index': the index self-join's time / this time.")
print(f"  'in groups': rows that are not their group's kept row."
      + (f" Key table: {lkey_rows:,} rows ({lkey_rows / n_rows:g} per row, simhash_blocks(fp, {K}, {M})), {mb(lkey_bytes):.0f} MB."
         if OLD else " (The index self-join and the 10-key joins: BENCH_KEY_JOIN=1.)"))
print()

if OLD:
    print(f"== distributed (coordinator + 2 workers, default Citus executor) ==")
    print(f"{'step':64s} | {'time s':>8s} | result")
    print("-" * 104)
    meth = [l.strip() for l in plans["keys"] if "INSERT/SELECT method" in l]
    dist = [
        ("load: INSERT INTO cb_docs SELECT FROM cb_local (not dedup)", "load", ""),
        ("load: VACUUM ANALYZE cb_docs (not dedup)", "load_vacuum", ""),
        ("1. keys: INSERT INTO cb_keys ... simhash_blocks(d.fp, 3, 5)", "keys", meth[0] if meth else "method: (not shown in EXPLAIN)"),
        ("   VACUUM ANALYZE cb_keys", "keys_vacuum", ""),
        ("2. pair join, count(*) on the workers", "join", f"{r('join'):,} pairs"),
        ("2'. the same join, pairs into coordinator table cb_pairs", "pairs", f"{r('pairs'):,} pairs, {mb(r('pairs', 1)):.0f} MB on the coordinator"),
        ("3. simhash_pair_groups(cb_pairs, 'leader') on the coordinator", "groups", f"{r('groups'):,} ids in pairs, {r('groups', 1):,} not their kept row, in {r('groups', 2):,} groups of >= 2 rows"),
    ]
    for label, name, res in dist:
        print(f"{label:64s} | {s(t(name)):>8s} | {res}")
    job = t("keys") + t("keys_vacuum") + t("pairs") + t("groups")
    job_label = "dedup job = 1 (with VACUUM) + 2' + 3"
    print(f"{job_label:64s} | {s(job):>8s} | "
          f"{job / lead:.2f} x simhash_leader's time, index self-join / job = {idx / job:.2f}")
    print(f"{'examples/dedup_pairs.sql -v table=cb_docs -v radius=3 (report)':64s} | {s(t('script')):>8s} | "
          f"{t('script') / lead:.2f} x simhash_leader's time (client wall clock)")
print("== distributed: the table and the script (coordinator + 2 workers) ==")
print(f"{'load: INSERT INTO cb_docs SELECT FROM cb_local (not dedup)':64s} | {s(t('load')):>8s} |")
print(f"{'examples/dedup_pairs.sql -v table=cb_docs -v radius=3 (report)':64s} | {s(t('script')):>8s} | "
      f"{t('script') / t('component'):.2f} x simhash_component's time (client wall clock)")
for n in notices:
    print(f"    NOTICE: {n}")
print()

# per worker port, the Execution Time (s) of each shard task in an EXPLAIN (ANALYZE, FORMAT JSON)
def task_times(fname):
    ex = json.load(open(fname))
    tasks = []
    def walk(node):
        if isinstance(node, dict):
            if "Tasks" in node:
                tasks.extend(node["Tasks"])
            for v in node.values():
                if isinstance(v, (dict, list)):
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
    walk(ex[0])
    per = defaultdict(list)
    for tk in tasks:
        port = re.search(r"port=(\d+)", tk.get("Node", "")).group(1)
        times = []
        def g(n):
            if isinstance(n, dict):
                if "Execution Time" in n:
                    times.append(n["Execution Time"])
                for v in n.values():
                    if isinstance(v, (dict, list)):
                        g(v)
            elif isinstance(n, list):
                for v in n:
                    g(v)
        g(tk)
        per[port].append(max(times) / 1000.0 if times else 0.0)
    return per

if PARTNERS:
    # the partner search (simhash_key_partners, 4 blocks): steps, and its shard tasks one at a time
    print(f"== distributed, by simhash_key_partners ({K + 1} blocks: {K + 1} keys per row, each key's rows searched in memory) ==")
    print(f"{'step':64s} | {'time s':>8s} | result")
    print("-" * 104)
    part4 = [
        (f"1. keys: INSERT INTO cb_keys4 ... simhash_blocks(d.fp, {K}, {K + 1})", "keys4", ""),
        ("   VACUUM ANALYZE cb_keys4", "keys4_vacuum", ""),
        ("2. simhash_key_partners OVER (PARTITION BY key) into cb_paired", "partners",
         f"{r('partners'):,} rows in pairs (per key), {mb(r('partners', 1)):.0f} MB on the workers"),
        ("2'. the pairs into coordinator table cb_pairs4", "pairs4", f"{r('pairs4'):,} pairs"),
        ("2''. the rows in pairs to the coordinator (ids)", "members4", f"{r('members4'):,} rows, {r('members4', 1):,} ids"),
    ]
    for label, name, res in part4:
        print(f"{label:64s} | {s(t(name)):>8s} | {res}")
    print(f"{'3. simhash_pair_groups(cb_pairs4, ' + chr(39) + 'leader' + chr(39) + ') on the coordinator':64s} | {s(t('groups4')):>8s} | "
          f"{r('groups4'):,} ids in pairs, {r('groups4', 1):,} not their kept row, in {r('groups4', 2):,} groups of >= 2 rows")
    job4 = t("keys4") + t("keys4_vacuum") + t("partners") + t("pairs4") + t("members4") + t("groups4")
    print(f"{'dedup job = 1 (with VACUUM) + 2 + 2' + chr(39) + ' + 2' + chr(39) * 2 + ' + 3':64s} | {s(job4):>8s} | "
          f"{job4 / t('component'):.2f} x simhash_component's time"
          + (f"; the key join's job / this = {job / job4:.2f}" if OLD else ""))
    per4 = task_times(env["BENCH_EXPLAIN"].replace("explain.json", "explain4.json"))
    tot4 = sum(sum(v) for v in per4.values())
    for port in sorted(per4):
        v = per4[port]
        print(f"  worker port {port}: {len(v)} tasks, task time sum {s(sum(v))} s, largest {s(max(v))} s")
    print(f"  partner search tasks together: {s(tot4)} s = {tot4 / t('component'):.2f} x simhash_component on one node "
          f"({s(t('component'))} s); with the keys written: {s(tot4 + t('keys4') + t('keys4_vacuum'))} s = "
          f"{(tot4 + t('keys4') + t('keys4_vacuum')) / t('component'):.2f} x")
    print()

# the packs (simhash_key_pack, simhash_pack_partners): steps, and their shard tasks one at a time
print(f"== distributed, by packed keys ({K + 1} keys per row packed per bucket, {n_buckets} buckets, {n_targets} targets; the script's method) ==")
print(f"{'step':64s} | {'time s':>8s} | result")
print("-" * 104)
part5 = [
    ("1. rows spread by bucket: INSERT INTO cb_reps SELECT FROM cb_docs", "reps", ""),
    (f"2. packs: simhash_key_pack(id, fp, {K}, {K + 1}, {n_targets}) GROUP BY bucket", "packs",
     f"{r('packs'):,} packs, {mb(r('packs', 1)):.0f} MB, spread by target"),
    ("3. simhash_pack_partners per target into cb_pwin (by bucket)", "pack_partners", f"{r('pack_partners'):,} rows in pairs (per target)"),
    ("3'. the pairs counted (on the workers)", "pairs5", f"{r('pairs5'):,} pairs"),
    ("3''. the rows in pairs (id, keep value, fingerprint) to the coordinator", "members5", f"{r('members5'):,} ids"),
    ("4. simhash_pair_groups(pairs from the workers, 'leader', id order)", "groups5",
     f"{r('groups5'):,} ids in pairs, {r('groups5', 1):,} not their kept row, in {r('groups5', 2):,} groups of >= 2 rows"),
]
for label, name, res in part5:
    print(f"{label:64s} | {s(t(name)):>8s} | {res}")
job5 = sum(t(n) for _, n, _ in part5)
print(f"{'  (before the id order: the pairs gathered into a table' :64s} | {s(t('pairs5_gather')):>8s} |")
print(f"{'   and simhash_pair_groups over it: 3' + chr(39) + ' and 4 took' :64s} | {s(t('groups5_gathered')):>8s} | "
      f"{s(t('pairs5_gather') + t('groups5_gathered'))} s against {s(t('pairs5') + t('groups5'))} s now)")
print(f"{'dedup job = 1 + 2 + 3 + 3' + chr(39) + ' + 3' + chr(39) * 2 + ' + 4':64s} | {s(job5):>8s} | "
      f"{job5 / t('component'):.2f} x simhash_component's time (goal <= 2)"
      + (f"; key partners' job / this = {job4 / job5:.2f}" if PARTNERS else ""))
tot5 = 0.0
for name in ("packs", "pack_partners"):
    per5 = task_times(env["BENCH_EXPLAIN"].replace("explain.json", f"explain_{name}.json"))
    tsum = sum(sum(v) for v in per5.values())
    tot5 += tsum
    print(f"  {name} tasks: " + "; ".join(f"worker {pt} {len(v)} tasks, sum {s(sum(v))} s, largest {s(max(v))} s"
                                         for pt, v in sorted(per5.items())) + f"; together {s(tsum)} s")
cpu5 = tot5 + t("reps")
print(f"  task time: packing and searching {s(tot5)} s; with the rows spread by bucket (its wall time, {s(t('reps'))} s): "
      f"{s(cpu5)} s = {cpu5 / t('component'):.2f} x simhash_component on one node ({s(t('component'))} s; goal <= 3)")
print(f"  projection, the task time spread evenly: {s(cpu5 / 2)} s on 2 workers (one core each), "
      f"{s(cpu5 / 4)} s on 4, {s(cpu5 / 8)} s on 8 (an extrapolation; the coordinator's steps 3', 3'', 4: "
      f"{s(t('pairs5') + t('members5') + t('groups5'))} s, do not spread)")
print(f"  (examples/dedup_pairs.sql above runs this method: {s(t('script'))} s end to end = "
      f"{t('script') / t('component'):.2f} x simhash_component)")
print()

if OLD:
    # per task
    ex = json.load(open(env["BENCH_EXPLAIN"]))
    top = ex[0]
    def walk(node, fn):
        fn(node)
        if isinstance(node, dict):
            for v in node.values():
                if isinstance(v, (dict, list)):
                    walk(v, fn)
        elif isinstance(node, list):
            for v in node:
                walk(v, fn)
    tasks = []
    def find_tasks(n):
        if isinstance(n, dict) and "Tasks" in n:
            tasks.extend(n["Tasks"])
    walk(top, find_tasks)
    if len(tasks) != 8:
        print(f"note: EXPLAIN shows {len(tasks)} tasks, expected 8")
    per = []
    for tk in tasks:
        node = tk.get("Node", "")
        port = re.search(r"port=(\d+)", node).group(1)
        shard = None
        hj = []; scans = []; ex_time = []
        def f(n):
            if isinstance(n, dict):
                if n.get("Node Type") == "Hash Join":
                    hj.append(n)
                if n.get("Node Type") == "Seq Scan":
                    scans.append(n)
                if "Execution Time" in n:
                    ex_time.append(n["Execution Time"])
                rel = n.get("Relation Name")
                if rel and shard is None:
                    m = re.search(r"_(\d+)$", rel)
                    if m:
                        scans_shard.append(int(m.group(1)))
        scans_shard = []
        walk(tk, f)
        if len(hj) != 1 or len(scans) != 2 or len(ex_time) != 1:
            print(f"cannot read task on {node}: {len(hj)} hash joins, {len(scans)} seq scans, {len(ex_time)} execution times")
            print(json.dumps(tk)[:3000])
            sys.exit(1)
        h = hj[0]
        out = h["Actual Rows"] * h.get("Actual Loops", 1)
        removed = h.get("Rows Removed by Join Filter", 0)
        nkeys = scans[0]["Actual Rows"] * scans[0].get("Actual Loops", 1)
        cand = out + removed - nkeys
        if cand % 2:
            print(f"note: odd matched-minus-self count on {node} shard {scans_shard}: {cand}")
        per.append({"port": port, "shard": scans_shard[0] if scans_shard else None, "keys": nkeys,
                    "cand": cand // 2, "pairs": out, "ms": ex_time[0]})
    total_ms = None
    if "Execution Time" in top:
        total_ms = top["Execution Time"]

    sum_pairs = sum(p["pairs"] for p in per)
    if sum_pairs != r("join"):
        print(f"MISMATCH: the tasks of EXPLAIN ANALYZE found {sum_pairs:,} pairs, the join {r('join'):,}")
        open(env["BENCH_MISMATCH"], "a").write("explain\n")

    # storage per node
    node_of = {}
    for sid, (host, port, tbl, size) in shards.items():
        node_of[sid] = str(port)
    workers = sorted({str(p) for (_, p, _, _) in shards.values()})
    W = {w: defaultdict(float) for w in workers}
    for sid, (host, port, tbl, size) in shards.items():
        w = W[str(port)]
        key = "docs" if tbl == "cb_docs" else "keys"
        w[key + "_shards"] += 1
        w[key + "_rows"] += counts.get(sid, 0)
        w[key + "_bytes"] += size
    for p in per:
        w = W[p["port"]]
        w["tasks"] += 1
        w["cand"] += p["cand"]; w["pairs"] += p["pairs"]; w["task_keys"] += p["keys"]
        w["ms"] += p["ms"]; w["max_ms"] = max(w["max_ms"], p["ms"])

    print("== per shard task (EXPLAIN ANALYZE of join 2, citus.max_adaptive_executor_pool_size = 1: each worker runs its tasks one at a time) ==")
    print(f"{'worker':8s} {'shard':>8s} | {'key rows':>12s} | {'candidates':>12s} | {'pairs':>11s} | {'task s':>7s}")
    print("-" * 72)
    for p in sorted(per, key=lambda p: (p["port"], p["shard"] or 0)):
        print(f"{p['port']:8s} {str(p['shard']):>8s} | {p['keys']:>12,} | {p['cand']:>12,} | {p['pairs']:>11,} | {p['ms'] / 1000:>7.2f}")
    print(f"  candidates = (Hash Join rows out + Rows Removed by Join Filter - key rows) / 2: the (a, b), a.id < b.id,")
    print(f"  sharing (block, key), each given simhash_hamming() (and first_shared_block when within {K}). EXPLAIN ANALYZE")
    print(f"  with TIMING OFF; task s = the task's Execution Time on its worker."
          + (f" Whole statement: {total_ms / 1000:.1f} s." if total_ms else ""))
    print()

    print("== per worker ==")
    hdr = f"{'worker':8s} | {'shards':>6s} | {'docs rows':>11s} {'MB':>6s} | {'key rows':>12s} {'MB':>7s} | {'candidates':>12s} | {'pairs':>10s} | {'sum task s':>10s} {'max task s':>10s}"
    print(hdr)
    print("-" * len(hdr))
    tot = defaultdict(float)
    for w in workers:
        x = W[w]
        for k2, v in x.items():
            tot[k2] = tot[k2] + v if k2 != "max_ms" else max(tot[k2], v)
        print(f"{w:8s} | {int(x['keys_shards']):>2d} + {int(x['docs_shards']):<2d} | {int(x['docs_rows']):>11,} {mb(x['docs_bytes']):>6.0f} | "
              f"{int(x['keys_rows']):>12,} {mb(x['keys_bytes']):>7.0f} | {int(x['cand']):>12,} | {int(x['pairs']):>10,} | "
              f"{x['ms'] / 1000:>10.1f} {x['max_ms'] / 1000:>10.1f}")
    x = tot
    print(f"{'total':8s} | {int(x['keys_shards']):>2d} + {int(x['docs_shards']):<2d} | {int(x['docs_rows']):>11,} {mb(x['docs_bytes']):>6.0f} | "
          f"{int(x['keys_rows']):>12,} {mb(x['keys_bytes']):>7.0f} | {int(x['cand']):>12,} | {int(x['pairs']):>10,} | "
          f"{x['ms'] / 1000:>10.1f} {x['max_ms'] / 1000:>10.1f}")
    print("  shards = cb_keys shards + cb_docs shards on the worker; rows counted per shard, MB from citus_shards (table + indexes + toast).")
    print()

    # interpretation, from the figures above
    print("== reading ==")
    ws = workers
    share = lambda key: ", ".join(f"{w} {100 * W[w][key] / tot[key]:.1f}%" for w in ws)
    cand_total = int(tot["cand"])
    print(f"- The work divides by shard: key rows {share('keys_rows')}; candidates {share('cand')}; task time {share('ms')}.")
    mx = max(W[w]["ms"] for w in ws)
    MS = "ms"
    print(f"- Candidates compared: {cand_total:,} for {int(tot['keys_rows']):,} key rows ({cand_total / ROWS:.2f} per document row, "
          f"{cand_total / max(1, int(tot['pairs'])):.2f} per pair found); the distance is checked only on them, each on one worker.")
    print(f"- Per worker, one task at a time: {' and '.join(f'{w} {W[w][MS] / 1000:.1f} s' for w in ws)} of task time "
          f"(largest task {tot['max_ms'] / 1000:.1f} s); the statement took {total_ms / 1000:.1f} s, i.e. the busier worker's sum "
          f"({mx / 1000:.1f} s) plus {(total_ms - mx) / 1000:.1f} s." if total_ms else "")
    pb = r("pairs") * 16
    print(f"- What reaches the coordinator: for the count, one partial count per task; for the pairs, {r('pairs'):,} (a, b) id pairs "
          f"({mb(pb):.0f} MB of two bigints; the table cb_pairs is {mb(r('pairs', 1)):.0f} MB) against {ROWS:,} rows "
          f"({mb(rel_bytes):.0f} MB of cb_local) that the window functions would have to gather there.")
    print(f"- Grouping the pairs on the coordinator (simhash_pair_groups) took {s(t('groups'))} s, "
          f"{100 * t('groups') / lead:.0f}% of simhash_leader over all rows; it is the part that does not spread over workers.")
    kr = [p["keys"] for p in per]; ts = [p["ms"] / 1000 for p in per]
    ratio = tot['ms'] / 1000 / t('lkey_join0')
    print(f"- All 8 tasks together: {tot['ms'] / 1000:.1f} s of task time, {ratio:.2f} x the {s(t('lkey_join0'))} s of the same key join "
          f"on one node and one core (the same key rows, candidates and pairs)"
          + (": within 10%, so splitting the join by shard adds little or no work." if 0.9 <= ratio <= 1.1 else "."))
    print(f"- Scaling: a task reads only its own shard (no data moves between workers during the join), the shards hold "
          f"{min(kr):,} to {max(kr):,} key rows and their tasks took {min(ts):.1f} to {max(ts):.1f} s (the machine's load averages at "
          f"start and end are in the header). The statement ended when the busier worker finished its shards, so with the 8 shards "
          f"on more machines (one core each) the join's time would be about the largest per-machine sum of task times: "
          f"~{tot['ms'] / 1000 / 4:.1f} s with 4 machines, ~{tot['ms'] / 1000 / 8:.1f} s with 8 (at most 8: one shard each; "
          f"more needs a larger shard_count). That is an extrapolation from the per-task figures, not measured here; the key "
          f"INSERT (repartition) and the grouping on the coordinator ({s(t('groups'))} s) are not part of it.")
    print()

print("== plans (EXPLAIN, COSTS OFF) ==")
for name, label in ((("index_join", "single-node index self-join"), ("lkey_join0", "single-node key join, 1 core"),
                     ("lkey_join2", "single-node key join, parallel"), ("keys", "distributed keys INSERT"),
                     ("join", "distributed pair join (tasks not shown)")) if OLD else ()) + (
                    ("packs", "distributed packing (INSERT ... SELECT)"), ("pack_partners", "distributed pack search (INSERT ... SELECT)")):
    print(f"-- {label}")
    for l in plans[name]:
        print(f"   {l}")
PY
if [ -f "$WORK/mismatch" ]; then exit 2; fi
log "done"
