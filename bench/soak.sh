#!/usr/bin/env bash
# soak.sh: a long mixed workload on one simhash index (inserts, near-duplicate inserts,
# deletes, radius queries, cursors held open, autovacuum and manual VACUUM, all at once),
# then checks that the index still answers exactly, is structurally sound and has not grown
# out of proportion, and reports how long any backend waited for a buffer pin and how much
# private memory each kind of backend used.
#
# Usage:
#   bench/soak.sh                       (SOAK_SECONDS=600 by default)
#   SOAK_SECONDS=60 bench/soak.sh       a quick run
#
# Exit status: 0 when every check passes, 2 when one fails (the FAIL lines at the end say
# which), 1 when the run itself could not be done.
#
# Server: the script always runs a scratch cluster of its own (the sampler reads the
# backends' /proc entries, and the autovacuum settings are the server's): initdb (first time)
# under $SOAK_DIR (default /tmp/simhash-soak-$SOAK_PORT), port $SOAK_PORT (default 55470),
# Unix socket in $SOAK_DIR only, as the postgres OS user when run as root, with
# shared_buffers = 128MB, max_connections = 50, autovacuum = on, autovacuum_naptime = 5s,
# log_autovacuum_min_duration = 0, synchronous_commit = off, and
# shared_preload_libraries = simhash (the library is loaded once, at start). Binaries come
# from $PG_BINDIR (default: pg_config --bindir, else /usr/lib/postgresql/15/bin); the
# simhash library and extension files are whatever that installation holds (its PKGLIBDIR
# and SHAREDIR, printed with the sha256 of the simhash.so the postmaster mapped). A
# relocated copy of an installation works: PostgreSQL finds lib and share relative to its
# binaries. The database "soak" is dropped and re-created at start; the server is stopped
# at exit, the data directory and its server.log are kept.
#
# Table and index: soak(id bigserial primary key, fp simhash, origin, flips, created),
# SOAK_ROWS (200,000) rows at start: half random 64-bit fingerprints, half near-duplicates
# (a random earlier row's fp with 1..6 random bits flipped), from a fixed seed; then
# CREATE INDEX soak_fp_idx ON soak USING simhash (fp) WITH (pending_limit = 1024), so the
# pending list is merged every ~1,000 inserts; per-table autovacuum thresholds of 1,000
# inserted or 500 dead rows (scale factors 0), so autovacuum visits the table every few
# naptimes; VACUUM ANALYZE.
#
# Load (three pgbench processes, simple query protocol, SOAK_SECONDS each, started together):
#   writers (SOAK_WRITERS=2 clients), scripts and weights:
#     ins_random 4   INSERT one random fingerprint
#     ins_near   4   INSERT a near-duplicate: a random existing row's fp with 1..6 distinct
#                    random bits flipped
#     delete     2   DELETE the first row at or after a random id in the oldest 3/4 of ids
#   readers (SOAK_READERS=2 clients), equal weights: SELECT count(*) FROM soak WHERE
#     fp <~> 'q'::simhash <= r, r = 3 or 8, q = the fp of a random existing row (q3_row,
#     q8_row) or a random fingerprint (q3_rand, q8_rand); the fingerprint is fetched by a
#     first statement of the same transaction (\gset) and inlined as a literal, as a client
#     would send it. Their latency includes that fetch and max(id) (both primary key lookups).
#   cursor (SOAK_CURSORS=1 client): BEGIN; SET LOCAL enable_seqscan = off, enable_bitmapscan
#     = off; DECLARE c CURSOR FOR SELECT id FROM soak WHERE fp <~> q <= 64 (an index scan
#     reading a whole block table); FETCH 10; \sleep 3 s; FETCH 100; COMMIT.
#   SOAK_WRITE_RATE / SOAK_READ_RATE: pgbench -R for the writers / readers (0: as fast as
#   they go, the default).
# The plans of the three query forms are printed at start; each must use soak_fp_idx, or
# the run stops.
# Meanwhile: VACUUM soak every SOAK_VACUUM_EVERY (30) s from the script, each followed by a
# timeline line (VACUUM duration, rows, table and index size, runs, entries, pending entries,
# retired page chains, autovacuum count; and the writers' tps and max latency, the readers'
# tps, p95 and max latency since the previous line); autovacuum as configured above.
#
# Sampler (one python3 process holding one psql session, every SOAK_SAMPLE_MS = 150 ms):
#   - pg_stat_activity: every backend with wait_event_type = 'BufferPin' (and, for context,
#     'Lock' and 'LWLock'). A wait is the consecutive samples showing the same pid and
#     query_start waiting on the same event; its duration is reported as observed (first to
#     last sample seen waiting: a lower bound) and as at most (from the sample before it to
#     the sample after it). The BufferPin check uses the observed duration. The samples'
#     actual spacing (machine load stretches it) is reported too.
#   - /proc/<pid>/status RssAnon (private anonymous memory: the backend's own allocations,
#     not shared_buffers) of the postmaster and all its children; the maximum per backend
#     type (client backends split by application_name: soak_write, soak_read, soak_cursor,
#     soak_vacuum, soak_sampler), and, for processes alive over 2 minutes, the growth from
#     their sample 60 s after first seen to their last (a leak would show there).
#
# At the end (load stopped):
#   - correctness: SOAK_CHECK_QUERIES (50) query fingerprints (40% existing rows, 40%
#     near-duplicates of existing rows with 1..6 bits flipped, 20% random) at radii 0, 3, 8
#     and 16, each run three ways: index scan (enable_seqscan, enable_bitmapscan off),
#     bitmap scan (enable_seqscan, enable_indexscan off) and sequential scan (enable_indexscan,
#     enable_bitmapscan off); the sorted id lists must be equal, and every plan must be the
#     intended one
#   - SELECT * FROM simhash_index_verify('soak_fp_idx')
#   - pg_relation_size and simhash_index_info of soak_fp_idx, page types
#     (simhash_index_pages); then CREATE INDEX fresh ON soak USING simhash (fp) WITH
#     (pending_limit = 1024) on the same rows: size(soak_fp_idx) / size(fresh); and, for
#     information only, after one more VACUUM (no snapshot left that could need retired
#     pages): how many of soak_fp_idx's pages are free (reusable, but still in the file)
#   - rows inserted and deleted (pg_stat_user_tables), pgbench transactions, tps and latency
#     (mean, p50, p95, p99, max from pgbench's per-transaction logs) per script, VACUUMs
#     (manual and autovacuum), BufferPin waits, RssAnon per backend type, server log lines at
#     ERROR or above ("canceling autovacuum task" is expected: the manual VACUUM, verify and
#     CREATE INDEX cancel a running autovacuum of the table once they wait deadlock_timeout)
#   - PASS/FAIL: answers equal the sequential scan's; verify passes; size ratio <= 1.5
#     (SOAK_MAX_SIZE_RATIO); no BufferPin wait over 1 s (SOAK_MAX_PIN_WAIT); every pgbench
#     client ran to the end; no unexpected ERROR, FATAL or PANIC in the server log.
#
# Other settings (environment): SOAK_ROWS=200000, SOAK_PENDING_LIMIT=1024, SOAK_WRITERS=2,
# SOAK_READERS=2, SOAK_CURSORS=1, SOAK_VACUUM_EVERY=30, SOAK_SAMPLE_MS=150,
# SOAK_CHECK_QUERIES=50, SOAK_WRITE_RATE=0, SOAK_READ_RATE=0, SOAK_PORT, SOAK_DIR, PG_BINDIR;
# SOAK_NOTE: a line of text printed in the header (e.g. which build the library is).
#
# Example: PG_BINDIR=/tmp/pg/usr/lib/postgresql/15/bin bench/soak.sh | tee bench/results/soak-x.txt
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=${SOAK_SECONDS:-600}
ROWS=${SOAK_ROWS:-200000}
PENDING_LIMIT=${SOAK_PENDING_LIMIT:-1024}
WRITERS=${SOAK_WRITERS:-2}
READERS=${SOAK_READERS:-2}
CURSORS=${SOAK_CURSORS:-1}
VACUUM_EVERY=${SOAK_VACUUM_EVERY:-30}
SAMPLE_MS=${SOAK_SAMPLE_MS:-150}
CHECK_QUERIES=${SOAK_CHECK_QUERIES:-50}
WRITE_RATE=${SOAK_WRITE_RATE:-0}
READ_RATE=${SOAK_READ_RATE:-0}
MAX_SIZE_RATIO=${SOAK_MAX_SIZE_RATIO:-1.5}
MAX_PIN_WAIT=${SOAK_MAX_PIN_WAIT:-1}
SOAK_PORT=${SOAK_PORT:-55470}
SOAK_DIR=${SOAK_DIR:-/tmp/simhash-soak-$SOAK_PORT}

if [ -z "${PG_BINDIR:-}" ]; then
	PG_BINDIR=$(pg_config --bindir 2>/dev/null || true)
	[ -x "$PG_BINDIR/initdb" ] || PG_BINDIR=/usr/lib/postgresql/15/bin
fi
PSQL=$PG_BINDIR/psql
PGBENCH=$PG_BINDIR/pgbench
[ -x "$PSQL" ] || PSQL=$(command -v psql || true)
[ -x "$PGBENCH" ] || PGBENCH=$(command -v pgbench || true)

die() { echo "soak: $*" >&2; exit 1; }
isint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
isnum() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
for v in DURATION ROWS PENDING_LIMIT WRITERS READERS CURSORS VACUUM_EVERY SAMPLE_MS CHECK_QUERIES SOAK_PORT; do
	isint "${!v}" || die "$v must be a positive integer (got '${!v}')"
done
for v in WRITE_RATE READ_RATE MAX_SIZE_RATIO MAX_PIN_WAIT; do
	isnum "${!v}" || die "$v must be a number (got '${!v}')"
done
[ "$ROWS" -ge 1000 ] || die "SOAK_ROWS must be at least 1000"
[ -x "$PG_BINDIR/initdb" ] && [ -x "$PG_BINDIR/pg_ctl" ] || die "no initdb/pg_ctl in $PG_BINDIR"
[ -n "$PSQL" ] && [ -x "$PSQL" ] || die "psql is needed"
[ -n "$PGBENCH" ] && [ -x "$PGBENCH" ] || die "pgbench is needed"
command -v python3 >/dev/null || die "python3 is needed"

log() { echo "[$(date '+%H:%M:%S')] $*" >&2; }

# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------
STARTED=0
WORK=$(mktemp -d /tmp/soak-work.XXXXXX)
chmod 755 "$WORK"
BG_PIDS=()
as_owner() {
	if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cleanup() {
	local rc=$?
	touch "$WORK/stop" 2>/dev/null || true
	local p
	for p in "${BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${BG_PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	if [ "$STARTED" = 1 ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$SOAK_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

OWNER=postgres
[ "$(id -u)" = 0 ] || OWNER=$(id -un)
mkdir -p "$SOAK_DIR"
if [ "$(id -u)" = 0 ]; then chown postgres "$SOAK_DIR"; fi
if [ ! -f "$SOAK_DIR/data/PG_VERSION" ]; then
	log "creating a scratch cluster in $SOAK_DIR/data"
	as_owner "$PG_BINDIR/initdb" -D "$SOAK_DIR/data" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	echo "include_if_exists = 'soak.conf'" | as_owner tee -a "$SOAK_DIR/data/postgresql.conf" >/dev/null
fi
if as_owner "$PG_BINDIR/pg_ctl" -D "$SOAK_DIR/data" status >/dev/null 2>&1; then
	die "a server is already running in $SOAK_DIR/data; stop it or set SOAK_DIR/SOAK_PORT"
fi
grep -q "include_if_exists = 'soak.conf'" "$SOAK_DIR/data/postgresql.conf" ||
	die "$SOAK_DIR/data was not created by this script (no include of soak.conf)"
as_owner tee "$SOAK_DIR/data/soak.conf" >/dev/null <<CONF
# written by bench/soak.sh at every start
port = $SOAK_PORT
unix_socket_directories = '$SOAK_DIR'
listen_addresses = ''
shared_buffers = 128MB
max_connections = 50
shared_preload_libraries = 'simhash'
synchronous_commit = off
max_wal_size = 2GB
autovacuum = on
autovacuum_naptime = 5s
log_autovacuum_min_duration = 0
log_lock_waits = on
log_line_prefix = '%m [%p] %b %a: '
max_parallel_workers_per_gather = 0
jit = off
CONF
as_owner rm -f "$SOAK_DIR/server.log"
log "starting the scratch server on port $SOAK_PORT (socket in $SOAK_DIR, binaries in $PG_BINDIR)"
as_owner "$PG_BINDIR/pg_ctl" -D "$SOAK_DIR/data" -l "$SOAK_DIR/server.log" -w -t 120 start >/dev/null ||
	die "the server did not start; see $SOAK_DIR/server.log"
STARTED=1
export PGHOST=$SOAK_DIR PGPORT=$SOAK_PORT PGUSER=$OWNER PGDATABASE=postgres
unset PGOPTIONS PGSERVICE PGHOSTADDR 2>/dev/null || true
PM_PID=$(head -1 "$SOAK_DIR/data/postmaster.pid")

psql_b() { "$PSQL" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_t() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' "$@"; }

psql_b -c "DROP DATABASE IF EXISTS soak" -c "CREATE DATABASE soak" >/dev/null
export PGDATABASE=soak
psql_b -c "CREATE EXTENSION simhash" >/dev/null || die "CREATE EXTENSION simhash failed"

# ---------------------------------------------------------------------------
# environment
# ---------------------------------------------------------------------------
PKGLIBDIR=$(psql_t -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
SHAREDIR=$(psql_t -c "SELECT setting FROM pg_config WHERE name = 'SHAREDIR'")
MAPPED=$(grep -o '/[^ ]*simhash\.so' "/proc/$PM_PID/maps" 2>/dev/null | head -1 || true)
[ -n "$MAPPED" ] || MAPPED="$PKGLIBDIR/simhash.so (not seen in /proc/$PM_PID/maps)"
LIBSHA=$(sha256sum "${MAPPED%% *}" 2>/dev/null | cut -c1-16 || echo '?')
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//' || true)
GITREV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
CMDLINE=""
while IFS= read -r v; do CMDLINE+="$v=$(printf '%q' "${!v}") "; done < <(compgen -e | grep -E '^(SOAK_[A-Z_]+|PG_BINDIR)$' | sort)
CMDLINE+="bench/soak.sh"

echo "simhash index soak test"
echo "  command:   $CMDLINE"
echo "  started:   $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  machine:   ${CPU:-$(uname -m)} ($(nproc) cpus visible), $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB RAM"
echo "  server:    $(psql_t -c "SELECT version()")"
echo "  binaries:  $PG_BINDIR; PKGLIBDIR $PKGLIBDIR; SHAREDIR $SHAREDIR"
echo "  library:   $MAPPED (mapped by the postmaster), sha256 $LIBSHA, $(date -u -r "${MAPPED%% *}" '+%Y-%m-%d %H:%M:%S UTC' 2>/dev/null || echo '?'); extension $(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'")"
echo "  script:    bench/soak.sh of checkout $GITREV ($ROOT)"
[ -z "${SOAK_NOTE:-}" ] || echo "  note:      $SOAK_NOTE"
echo "  settings:  $(psql_t -c "SELECT string_agg(name || ' = ' || current_setting(name), ', ' ORDER BY o) FROM unnest(ARRAY['shared_buffers', 'max_connections', 'maintenance_work_mem', 'work_mem', 'synchronous_commit', 'autovacuum', 'autovacuum_naptime', 'autovacuum_vacuum_cost_delay', 'autovacuum_max_workers', 'deadlock_timeout', 'max_parallel_workers_per_gather']) WITH ORDINALITY u(name, o)")"
echo "  load:      $DURATION s; $WRITERS writer(s)$( [ "$WRITE_RATE" != 0 ] && echo " at $WRITE_RATE tps"), $READERS reader(s)$( [ "$READ_RATE" != 0 ] && echo " at $READ_RATE tps"), $CURSORS cursor client(s); VACUUM every $VACUUM_EVERY s; sampler every $SAMPLE_MS ms"

# ---------------------------------------------------------------------------
# table and index
# ---------------------------------------------------------------------------
HALF=$((ROWS / 2))
REST=$((ROWS - HALF))
RANDFP="((floor(random() * 4294967296)::int8 << 32) | floor(random() * 4294967296)::int8)::simhash"
log "loading $ROWS rows"
T_LOAD=$(date +%s.%N)
psql_b <<SQL
SET client_min_messages = warning;
CREATE TABLE soak (
    id bigserial PRIMARY KEY,
    fp simhash NOT NULL,
    origin bigint,          -- the row this one is a near-duplicate of
    flips int,              -- bits flipped from it
    created timestamptz NOT NULL DEFAULT now()
);
SELECT setseed(0.4242) \g /dev/null
INSERT INTO soak (fp) SELECT $RANDFP FROM generate_series(1, $HALF);
INSERT INTO soak (fp, origin, flips)
SELECT o.fp # (SELECT bit_or(1::int8 << p)
               FROM (SELECT p FROM generate_series(0, 63) p ORDER BY random() + 0 * x.g LIMIT x.k) z)::simhash,
       o.id, x.k
FROM (SELECT g, 1 + floor(random() * $HALF)::int8 AS src, 1 + floor(random() * 6)::int AS k
      FROM generate_series(1, $REST) g) x
JOIN soak o ON o.id = x.src
ORDER BY x.g;
CREATE INDEX soak_fp_idx ON soak USING simhash (fp) WITH (pending_limit = $PENDING_LIMIT);
ALTER TABLE soak SET (autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0,
                      autovacuum_vacuum_threshold = 500, autovacuum_vacuum_scale_factor = 0,
                      autovacuum_analyze_threshold = 5000, autovacuum_analyze_scale_factor = 0);
VACUUM ANALYZE soak;
SQL
echo
echo "== start =="
echo "loaded $(psql_t -c "SELECT count(*) FROM soak") rows in $(printf '%.1f' "$(echo "$(date +%s.%N) - $T_LOAD" | bc -l)") s (index built by CREATE INDEX); table $(psql_t -c "SELECT pg_size_pretty(pg_relation_size('soak'))"), soak_fp_idx $(psql_t -c "SELECT pg_size_pretty(pg_relation_size('soak_fp_idx'))")"
echo "near-duplicates at start: $(psql_t -c "SELECT count(*) FILTER (WHERE (s.fp <~> o.fp) = s.flips) || ' of ' || count(*) || ' at exactly their flips (1..6) from their origin row; origins ' || count(DISTINCT s.origin) || ' distinct' FROM soak s JOIN soak o ON o.id = s.origin")"
echo "table options: $(psql_t -c "SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'soak'::regclass")"
echo "index options: $(psql_t -c "SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'soak_fp_idx'::regclass")"

# ---------------------------------------------------------------------------
# pgbench scripts
# ---------------------------------------------------------------------------
cat >"$WORK/ins_random.sql" <<SQL
INSERT INTO soak (fp) VALUES ($RANDFP);
SQL
cat >"$WORK/ins_near.sql" <<'SQL'
SELECT coalesce(max(id), 1) AS maxid FROM soak \gset
\set rid random(1, :maxid)
\set nflip random(1, 6)
INSERT INTO soak (fp, origin, flips)
SELECT s.fp # m.mask::simhash, s.id, :nflip
FROM (SELECT id, fp FROM soak WHERE id >= :rid ORDER BY id LIMIT 1) s,
     (SELECT bit_or(1::int8 << p) AS mask
      FROM (SELECT p FROM generate_series(0, 63) p ORDER BY random() LIMIT :nflip) z) m;
SQL
cat >"$WORK/delete.sql" <<'SQL'
SELECT coalesce(max(id), 4) AS maxid FROM soak \gset
\set rid random(1, :maxid * 3 / 4)
DELETE FROM soak WHERE id = (SELECT id FROM soak WHERE id >= :rid ORDER BY id LIMIT 1);
SQL
for r in 3 8; do
	cat >"$WORK/q${r}_row.sql" <<SQL
SELECT coalesce(max(id), 1) AS maxid FROM soak \gset
\set rid random(1, :maxid)
SELECT coalesce((SELECT fp FROM soak WHERE id >= :rid ORDER BY id LIMIT 1), '0000000000000000') AS q \gset
SELECT count(*) FROM soak WHERE fp <~> ':q'::simhash <= $r;
SQL
	cat >"$WORK/q${r}_rand.sql" <<SQL
SELECT $RANDFP AS q \gset
SELECT count(*) FROM soak WHERE fp <~> ':q'::simhash <= $r;
SQL
done
cat >"$WORK/cursor.sql" <<SQL
SELECT $RANDFP AS q \gset
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
DECLARE c CURSOR FOR SELECT id FROM soak WHERE fp <~> ':q'::simhash <= 64;
FETCH 10 FROM c;
\sleep 3 s
FETCH 100 FROM c;
COMMIT;
SQL

# ---------------------------------------------------------------------------
# plans
# ---------------------------------------------------------------------------
Q_ROW=$(psql_t -c "SELECT fp FROM soak WHERE id = $((ROWS / 3))")
Q_RAND=$(psql_t -c "SELECT $RANDFP")
echo
echo "== plans at start (each must use soak_fp_idx) =="
plan_check() {	# title, SQL (EXPLAIN output is printed and checked)
	local out
	out=$(psql_t -c "$2" 2>&1) || die "EXPLAIN failed: $out"
	echo "-- $1"
	echo "$out" | grep -v '^\(BEGIN\|SET\|ROLLBACK\)$' | sed 's/^/   /'
	echo "$out" | grep -q 'soak_fp_idx' || die "the plan of '$1' does not use soak_fp_idx"
}
plan_check "readers, r = 3, q = an existing row's fp" "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM soak WHERE fp <~> '$Q_ROW'::simhash <= 3"
plan_check "readers, r = 8, q = a random fp" "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM soak WHERE fp <~> '$Q_RAND'::simhash <= 8"
plan_check "cursor, r = 64 (enable_seqscan, enable_bitmapscan off)" "BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM soak WHERE fp <~> '$Q_RAND'::simhash <= 64; ROLLBACK;"

# ---------------------------------------------------------------------------
# sampler: pg_stat_activity waits and /proc RssAnon
# ---------------------------------------------------------------------------
cat >"$WORK/sampler.py" <<'PY'
import json, os, subprocess, sys, time

psql, pm_pid, interval_ms, out_path, stop_path, ready_path = sys.argv[1:7]
pm_pid = int(pm_pid)
interval = int(interval_ms) / 1000.0
TRACK = ("BufferPin", "Lock", "LWLock")
env = dict(os.environ, PGAPPNAME="soak_sampler")
p = subprocess.Popen([psql, "-X", "-q", "-At", "-F", "\t"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)
Q = ("SELECT extract(epoch FROM clock_timestamp()), pid, coalesce(backend_type, ''), "
     "coalesce(application_name, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), "
     "coalesce(extract(epoch FROM query_start)::text, ''), coalesce(state, ''), "
     "left(regexp_replace(coalesce(query, ''), '\\s+', ' ', 'g'), 90) FROM pg_stat_activity;\n"
     "\\echo __END__\n")

labels = {}         # pid -> label
mem = {}            # pid -> dict(first_t, first, t60, rss60, last_t, last, max, label)
episodes = []       # closed waits
active = {}         # key -> episode
events = {}         # "type:event" -> samples (non-idle backends)
gaps = []
prev_t = None
samples = 0

def label_of(btype, app):
    if btype == "client backend":
        return f"client backend ({app or '-'})"
    return btype or "?"

def children():
    out = [pm_pid]
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
            if int(s[s.rindex(")") + 2:].split()[1]) == pm_pid:
                out.append(int(d))
        except (OSError, ValueError):
            pass
    return out

def rss_anon(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None

def cmd_label(pid):
    if pid == pm_pid:
        return "postmaster"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            c = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    c = c[len("postgres: "):] if c.startswith("postgres: ") else c
    return "(title) " + " ".join(c.split()[:2])

def close(key, end_t):
    e = active.pop(key)
    e["after"] = end_t
    episodes.append(e)

ready = False
while not os.path.exists(stop_path):
    tick = time.time()
    try:
        p.stdin.write(Q)
        rows = []
        while True:
            line = p.stdout.readline()
            if line == "":
                raise EOFError
            line = line.rstrip("\n")
            if line == "__END__":
                break
            rows.append(line.split("\t"))
    except (EOFError, BrokenPipeError):
        break
    now = None
    seen = set()
    for r in rows:
        if len(r) < 9:
            continue
        t, pid, btype, app, wtype, wev, qstart, state, query = r[:9]
        now = float(t)
        pid = int(pid)
        labels[pid] = label_of(btype, app)
        if wtype and state != "idle" and wtype not in ("Activity", "Client"):
            events[f"{wtype}:{wev}"] = events.get(f"{wtype}:{wev}", 0) + 1
        if wtype in TRACK:
            key = (pid, qstart, wtype, wev)
            seen.add(key)
            if key in active:
                active[key]["last"] = now
                active[key]["n"] += 1
            else:
                active[key] = dict(pid=pid, label=labels[pid], type=wtype, event=wev, query=query,
                                   first=now, last=now, n=1, before=prev_t if prev_t else now)
    if now is None:
        now = time.time()
    for key in [k for k in active if k not in seen]:
        close(key, now)
    if prev_t is not None:
        gaps.append(now - prev_t)
    prev_t = now
    samples += 1
    for pid in children():
        v = rss_anon(pid)
        if v is None:
            continue
        lab = labels.get(pid) or cmd_label(pid)
        m = mem.get(pid)
        if m is None:
            m = mem[pid] = dict(first_t=now, first=v, t60=None, rss60=None, last_t=now, last=v, max=v, label=lab)
        m["last_t"], m["last"], m["max"] = now, v, max(m["max"], v)
        if pid in labels:
            m["label"] = labels[pid]
        if m["t60"] is None and now - m["first_t"] >= 60:
            m["t60"], m["rss60"] = now, v
    if not ready:
        open(ready_path, "w").close()
        ready = True
    time.sleep(max(0.0, tick + interval - time.time()))

end = prev_t or time.time()
for key in list(active):
    close(key, end)
try:
    p.stdin.close()
    p.wait(timeout=10)
except Exception:
    p.kill()
with open(out_path, "w") as f:
    json.dump(dict(samples=samples, gaps=gaps, episodes=episodes, events=events,
                   mem={str(k): v for k, v in mem.items()}), f)
PY

# ---------------------------------------------------------------------------
# VACUUM loop and timeline
# ---------------------------------------------------------------------------
TL_SQL="SELECT (SELECT count(*) FROM soak), pg_relation_size('soak'), pg_relation_size('soak_fp_idx'),
 i.runs, i.entries, i.pending_entries, i.retired,
 s.autovacuum_count, s.vacuum_count, s.autoanalyze_count
 FROM simhash_index_info('soak_fp_idx') i, pg_stat_user_tables s WHERE s.relid = 'soak'::regclass"
timeline() {	# elapsed, what, seconds, rc
	local st
	st=$(psql_t -c "$TL_SQL" 2>/dev/null || echo "?")
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$st" >>"$WORK/timeline.tsv"
}
vacuum_loop() {
	local next=$((T0 + VACUUM_EVERY)) t1 t2 rc
	while [ ! -e "$WORK/stop" ]; do
		if [ "$(date +%s)" -ge "$next" ]; then
			t1=$(date +%s.%N)
			rc=0
			PGAPPNAME=soak_vacuum "$PSQL" -X -q -c "VACUUM soak" >/dev/null 2>>"$WORK/vacuum.err" || rc=$?
			t2=$(date +%s.%N)
			timeline "$(echo "$t1 - $T0" | bc -l)" VACUUM "$(echo "$t2 - $t1" | bc -l)" "$rc"
			next=$((next + VACUUM_EVERY))
		fi
		sleep 0.5
	done
}

# ---------------------------------------------------------------------------
# the soak
# ---------------------------------------------------------------------------
read -r INS0 DEL0 AV0 V0 AA0 < <(psql_t -c "SELECT n_tup_ins, n_tup_del, autovacuum_count, vacuum_count, autoanalyze_count FROM pg_stat_user_tables WHERE relid = 'soak'::regclass" | tr '\t' ' ')
COUNT0=$(psql_t -c "SELECT count(*) FROM soak")
SIZE0=$(psql_t -c "SELECT pg_relation_size('soak_fp_idx')")

python3 "$WORK/sampler.py" "$PSQL" "$PM_PID" "$SAMPLE_MS" "$WORK/sampler.json" "$WORK/stop" "$WORK/sampler.ready" &
BG_PIDS+=($!)
SAMPLER_PID=$!
for _ in $(seq 1 100); do [ -e "$WORK/sampler.ready" ] && break; sleep 0.1; done
[ -e "$WORK/sampler.ready" ] || die "the sampler did not start"

rate() { [ "$1" = 0 ] || echo "-R $1"; }
log "soak: $DURATION s"
T0=$(date +%s)
: >"$WORK/timeline.tsv"
timeline 0 start 0 0
# shellcheck disable=SC2046
PGAPPNAME=soak_write "$PGBENCH" -n -c "$WRITERS" -j 1 -T "$DURATION" $(rate "$WRITE_RATE") -l --log-prefix="$WORK/log_write" \
	-f "$WORK/ins_random.sql@4" -f "$WORK/ins_near.sql@4" -f "$WORK/delete.sql@2" >"$WORK/pgb_write.out" 2>&1 &
PGB_W=$!
BG_PIDS+=("$PGB_W")
# shellcheck disable=SC2046
PGAPPNAME=soak_read "$PGBENCH" -n -c "$READERS" -j 1 -T "$DURATION" $(rate "$READ_RATE") -l --log-prefix="$WORK/log_read" \
	-f "$WORK/q3_row.sql@1" -f "$WORK/q3_rand.sql@1" -f "$WORK/q8_row.sql@1" -f "$WORK/q8_rand.sql@1" >"$WORK/pgb_read.out" 2>&1 &
PGB_R=$!
BG_PIDS+=("$PGB_R")
PGAPPNAME=soak_cursor "$PGBENCH" -n -c "$CURSORS" -j 1 -T "$DURATION" -l --log-prefix="$WORK/log_cursor" \
	-f "$WORK/cursor.sql" >"$WORK/pgb_cursor.out" 2>&1 &
PGB_C=$!
BG_PIDS+=("$PGB_C")
vacuum_loop &
VAC_PID=$!
BG_PIDS+=("$VAC_PID")

RC_W=0; RC_R=0; RC_C=0
wait $PGB_W || RC_W=$?
wait $PGB_R || RC_R=$?
wait $PGB_C || RC_C=$?
T_END=$(date +%s)
touch "$WORK/stop"
wait $VAC_PID || true
wait $SAMPLER_PID || true
BG_PIDS=()
log "load stopped after $((T_END - T0)) s; checking"
timeline "$((T_END - T0))" end 0 0
sleep 1	# the pgbench backends' statistics reach pg_stat at their exit

read -r INS1 DEL1 AV1 V1 AA1 < <(psql_t -c "SELECT n_tup_ins, n_tup_del, autovacuum_count, vacuum_count, autoanalyze_count FROM pg_stat_user_tables WHERE relid = 'soak'::regclass" | tr '\t' ' ')
COUNT1=$(psql_t -c "SELECT count(*) FROM soak")

# ---------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------
log "comparing index answers with a sequential scan"
psql_b <<SQL >/dev/null
SET client_min_messages = warning;
DROP TABLE IF EXISTS soak_q, soak_res;
CREATE TABLE soak_q (qno int PRIMARY KEY, kind text, q simhash);
CREATE TABLE soak_res (variant text, qno int, r int, n int, ids_md5 text, plan_ok bool, plan text);
INSERT INTO soak_q
SELECT g,
       CASE WHEN g % 5 IN (1, 2) THEN 'row' WHEN g % 5 IN (3, 4) THEN 'near' ELSE 'random' END,
       CASE WHEN g % 5 IN (1, 2) THEN s.fp
            WHEN g % 5 IN (3, 4) THEN s.fp # (SELECT bit_or(1::int8 << p)
                FROM (SELECT p FROM generate_series(0, 63) p ORDER BY random() + 0 * g LIMIT 1 + (g % 6)) z)::simhash
            ELSE $RANDFP END
FROM (SELECT g, 1 + floor(random() * (SELECT max(id) FROM soak))::int8 AS rid
      FROM generate_series(1, $CHECK_QUERIES) g) x
CROSS JOIN LATERAL (SELECT fp FROM soak WHERE id >= x.rid ORDER BY id LIMIT 1) s;
CREATE FUNCTION soak_check(variant text) RETURNS void LANGUAGE plpgsql AS \$f\$
DECLARE
    qr record;
    rr int;
    sql text;
    ids bigint[];
    pl text;
    l text;
    want text;
BEGIN
    IF variant = 'index' THEN
        PERFORM set_config('enable_seqscan', 'off', true);
        PERFORM set_config('enable_bitmapscan', 'off', true);
        want := '%Index Scan using soak_fp_idx%';
    ELSIF variant = 'bitmap' THEN
        PERFORM set_config('enable_seqscan', 'off', true);
        PERFORM set_config('enable_indexscan', 'off', true);
        want := '%Bitmap Index Scan on soak_fp_idx%';
    ELSE
        PERFORM set_config('enable_indexscan', 'off', true);
        PERFORM set_config('enable_bitmapscan', 'off', true);
        want := '%Seq Scan on soak%';
    END IF;
    FOR qr IN SELECT * FROM soak_q ORDER BY qno LOOP
        FOREACH rr IN ARRAY ARRAY[0, 3, 8, 16] LOOP
            sql := format('SELECT id FROM soak WHERE fp <~> %L::simhash <= %s', qr.q, rr);
            pl := '';
            FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || sql LOOP
                pl := pl || l || E'\n';
            END LOOP;
            EXECUTE format('SELECT array_agg(id ORDER BY id) FROM (%s) s', sql) INTO ids;
            INSERT INTO soak_res VALUES (variant, qr.qno, rr, coalesce(cardinality(ids), 0),
                md5(coalesce(ids::text, '')), pl LIKE want AND (variant <> 'seq' OR pl NOT LIKE '%soak_fp_idx%'), pl);
        END LOOP;
    END LOOP;
END
\$f\$;
SQL
for v in index bitmap seq; do
	PGAPPNAME=soak_check psql_b -c "BEGIN" -c "SELECT soak_check('$v')" -c "COMMIT" >/dev/null
done
echo
echo "== after $((T_END - T0)) s of load =="
echo
echo "-- answers: $CHECK_QUERIES query fingerprints ($(psql_t -c "SELECT string_agg(n || ' ' || kind, ', ') FROM (SELECT kind, count(*) n FROM soak_q GROUP BY kind ORDER BY kind DESC) s")) x radii 0, 3, 8, 16"
psql_b -P footer=off <<'SQL'
SELECT r AS radius, count(*) AS queries, round(avg(s.n), 1) AS "matches/query (seq)",
       count(*) FILTER (WHERE i.ids_md5 = s.ids_md5) AS "index scan equal",
       count(*) FILTER (WHERE b.ids_md5 = s.ids_md5) AS "bitmap scan equal",
       count(*) FILTER (WHERE i.plan_ok AND b.plan_ok AND s.plan_ok) AS "plans as intended"
FROM soak_res s JOIN soak_res i USING (qno, r) JOIN soak_res b USING (qno, r)
WHERE s.variant = 'seq' AND i.variant = 'index' AND b.variant = 'bitmap'
GROUP BY r ORDER BY r;
SQL
MISMATCH=$(psql_t -c "SELECT count(*) FROM soak_res s JOIN soak_res o USING (qno, r) WHERE s.variant = 'seq' AND o.variant <> 'seq' AND o.ids_md5 <> s.ids_md5")
BADPLAN=$(psql_t -c "SELECT count(*) FROM soak_res WHERE NOT plan_ok")
COMPARED=$(psql_t -c "SELECT count(*) FROM soak_res WHERE variant <> 'seq'")
echo "plans (first query, r = 8):"
for v in index bitmap seq; do
	psql_t -c "SELECT plan FROM soak_res WHERE variant = '$v' AND r = 8 ORDER BY qno LIMIT 1" | sed '/^$/d; s/^/   /'
done
if [ "$MISMATCH" != 0 ]; then
	echo "MISMATCHES (index or bitmap answer != seq scan answer):"
	psql_b -c "SELECT o.variant, qno, r, q.kind, q.q, o.n AS n_index, s.n AS n_seq FROM soak_res s JOIN soak_res o USING (qno, r) JOIN soak_q q USING (qno) WHERE s.variant = 'seq' AND o.variant <> 'seq' AND o.ids_md5 <> s.ids_md5 ORDER BY qno, r LIMIT 40"
fi
if [ "$BADPLAN" != 0 ]; then
	echo "UNINTENDED PLANS:"
	psql_t -c "SELECT variant || ' q' || qno || ' r=' || r || E':\n' || plan FROM soak_res WHERE NOT plan_ok LIMIT 5"
fi

log "simhash_index_verify"
echo
echo "-- simhash_index_verify('soak_fp_idx')"
VERIFY_OK=1
if ! VERIFY_OUT=$(psql_b -P footer=off -c "SELECT * FROM simhash_index_verify('soak_fp_idx')" 2>&1); then VERIFY_OK=0; fi
echo "$VERIFY_OUT"

log "index size, fresh index"
echo
echo "-- soak_fp_idx after the load, and a fresh index on the same rows"
LIVE_SIZE=$(psql_t -c "SELECT pg_relation_size('soak_fp_idx')")
psql_b -P footer=off -c "SELECT 'soak_fp_idx' AS index, * FROM simhash_index_info('soak_fp_idx')"
echo "page types of soak_fp_idx: $(psql_t -c "SELECT string_agg(type || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT type, count(*) n FROM simhash_index_pages('soak_fp_idx') GROUP BY type) s")"
T1=$(date +%s.%N)
psql_b -c "SET client_min_messages = warning" -c "DROP INDEX IF EXISTS fresh" \
	-c "CREATE INDEX fresh ON soak USING simhash (fp) WITH (pending_limit = $PENDING_LIMIT)" >/dev/null
FRESH_SECS=$(echo "$(date +%s.%N) - $T1" | bc -l)
FRESH_SIZE=$(psql_t -c "SELECT pg_relation_size('fresh')")
psql_b -P footer=off -c "SELECT 'fresh' AS index, * FROM simhash_index_info('fresh')"
echo "page types of fresh: $(psql_t -c "SELECT string_agg(type || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT type, count(*) n FROM simhash_index_pages('fresh') GROUP BY type) s")"
psql_b -c "DROP INDEX fresh" >/dev/null
RATIO=$(python3 -c "print(f'{$LIVE_SIZE / $FRESH_SIZE:.3f}')")
echo "size: soak_fp_idx $((LIVE_SIZE / 8192)) pages ($(python3 -c "print(f'{$LIVE_SIZE / 1048576:.1f}')") MiB; $(python3 -c "print(f'{$SIZE0 / 1048576:.1f}')") MiB at start), fresh $((FRESH_SIZE / 8192)) pages ($(python3 -c "print(f'{$FRESH_SIZE / 1048576:.1f}')") MiB, built in $(printf '%.1f' "$FRESH_SECS") s); ratio $RATIO"
psql_b -c "VACUUM soak" >/dev/null
read -r USED_PAGES ALL_PAGES < <(psql_t -c "SELECT count(*) FILTER (WHERE type <> 'free'), count(*) FROM simhash_index_pages('soak_fp_idx')" | tr '\t' ' ')
echo "for information, after one more VACUUM (load stopped, no old snapshot left): $(psql_t -c "SELECT 'runs ' || runs || ', run entries ' || array_to_string(run_entries, '+') || ' (tables ' || array_to_string(run_tables, ' ') || '), entries ' || entries || ', pending ' || pending_entries || ', retired ' || retired FROM simhash_index_info('soak_fp_idx')"); page types: $(psql_t -c "SELECT string_agg(type || ' ' || n, ', ' ORDER BY n DESC) FROM (SELECT type, count(*) n FROM simhash_index_pages('soak_fp_idx') GROUP BY type) s"); $ALL_PAGES pages, of which $USED_PAGES in use = $(python3 -c "print(f'{$USED_PAGES * 8192 / $FRESH_SIZE:.3f}')") x fresh"

# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------
NVAC=$(awk -F'\t' '$2 == "VACUUM"' "$WORK/timeline.tsv" | wc -l)
NVAC_FAIL=$(awk -F'\t' '$2 == "VACUUM" && $4 != 0' "$WORK/timeline.tsv" | wc -l)
cat >"$WORK/report.py" <<'PY'
import bisect, glob, json, math, os, re, sys
from array import array

work, duration, logfile, t0 = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
max_pin = float(sys.argv[5])
facts = {}

def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    f, c = math.floor(k), math.ceil(k)
    return xs[f] + (xs[c] - xs[f]) * (k - f)

# timeline edges (seconds after the start of the load), for per-interval figures
tl = []
with open(os.path.join(work, "timeline.tsv")) as f:
    for line in f:
        tl.append(line.rstrip("\n").split("\t"))
edges = [float(x[0]) for x in tl]
t0 = float(t0)
nb = len(edges)
bin_n = {g: [0] * nb for g in ("write", "read")}
bin_max = {g: [0.0] * nb for g in ("write", "read")}
bin_lat = [array("d") for _ in range(nb)]

# pgbench
groups = [("write", ["ins_random", "ins_near", "delete"]),
          ("read", ["q3_row", "q3_rand", "q8_row", "q8_rand"]),
          ("cursor", ["cursor"])]
print()
print(f"-- pgbench: transactions, tps over {duration:.0f} s, latency in ms (from the per-transaction logs)")
hdr = f"{'client':<7} {'script':<11} | {'xacts':>8} {'tps':>8} | {'mean':>8} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>9} | {'failed':>6}"
print(hdr)
print("-" * len(hdr))
for g, names in groups:
    per = {i: array("d") for i in range(len(names))}
    bad = {i: 0 for i in range(len(names))}
    for fn in glob.glob(os.path.join(work, f"log_{g}.*")):
        with open(fn) as f:
            for line in f:
                x = line.split()
                if len(x) < 6:
                    continue
                s = int(x[3])
                if x[2] in ("failed", "skipped"):
                    bad[s] = bad.get(s, 0) + 1
                    continue
                lat = int(x[2]) / 1000.0
                per.setdefault(s, array("d")).append(lat)
                if g in bin_n and nb:
                    b = min(nb - 1, bisect.bisect_left(edges, int(x[4]) + int(x[5]) / 1e6 - t0))
                    bin_n[g][b] += 1
                    bin_max[g][b] = max(bin_max[g][b], lat)
                    if g == "read":
                        bin_lat[b].append(lat)
    for i, name in enumerate(names):
        xs = per.get(i, [])
        mean = sum(xs) / len(xs) if xs else float("nan")
        print(f"{g:<7} {name:<11} | {len(xs):>8} {len(xs) / duration:>8.1f} | {mean:>8.2f} {pct(xs, .5):>8.2f} "
              f"{pct(xs, .95):>8.2f} {pct(xs, .99):>8.2f} {max(xs) if xs else float('nan'):>9.2f} | {bad.get(i, 0):>6}")
    del per
    with open(os.path.join(work, f"pgb_{g}.out")) as f:
        out = f.read()
    aborted = re.findall(r"^.*(?:aborted|error|ERROR).*$", out, re.M)
    facts[f"pgb_{g}_problems"] = len(aborted)
    for a in aborted[:5]:
        print(f"   pgbench {g}: {a.strip()[:160]}")

# timeline
print()
print("-- timeline: a line after each manual VACUUM (t = its start; 'took' includes waiting for a running")
print("   autovacuum); sizes in MiB; av/vac/aan = autovacuums, manual VACUUMs, autoanalyzes so far;")
print("   tps and latency (ms) of the transactions that ended since the previous line")
hdr = (f"{'t s':>5} {'event':<6} {'took s':>6} | {'rows':>8} {'table':>6} {'index':>6} | {'runs':>4} {'entries':>11} "
       f"{'pending':>7} {'retired':>7} | {'av':>3} {'vac':>3} {'aan':>3} | {'w tps':>6} {'w max':>6} {'r tps':>5} {'r p95':>5} {'r max':>6}")
print(hdr)
print("-" * len(hdr))
for i, x in enumerate(tl):
    if len(x) < 14:
        print(f"{float(x[0]):>5.0f} {x[1]:<6} (no stats: {' '.join(x[4:])})")
        continue
    took = "" if x[1] != "VACUUM" else f"{float(x[2]):.2f}" + ("" if x[3] == "0" else f" rc={x[3]}")
    span = edges[i] - edges[i - 1] if i > 0 else 0
    if span > 0:
        rates = (f"{bin_n['write'][i] / span:>6.0f} {bin_max['write'][i]:>6.0f} {bin_n['read'][i] / span:>5.0f} "
                 f"{pct(bin_lat[i], .95):>5.1f} {bin_max['read'][i]:>6.0f}")
    else:
        rates = ""
    print(f"{float(x[0]):>5.0f} {x[1]:<6} {took:>6} | {int(x[4]):>8} {int(x[5]) / 1048576:>6.1f} {int(x[6]) / 1048576:>6.1f} | "
          f"{x[7]:>4} {x[8]:>11} {x[9]:>7} {x[10]:>7} | {x[11]:>3} {x[12]:>3} {x[13]:>3} | {rates}")
del bin_lat

# sampler
with open(os.path.join(work, "sampler.json")) as f:
    s = json.load(f)
gaps = s["gaps"]
print()
print(f"-- sampler: {s['samples']} samples of pg_stat_activity and /proc; spacing mean {1000 * sum(gaps) / max(1, len(gaps)):.0f} ms, "
      f"p99 {1000 * pct(gaps, .99):.0f} ms, max {1000 * max(gaps or [0]):.0f} ms")
eps = s["episodes"]
def dur(e):
    return e["last"] - e["first"]
def upper(e):
    return e["after"] - e["before"]
pins = [e for e in eps if e["type"] == "BufferPin"]
print(f"BufferPin waits: {len(pins)} seen in {sum(e['n'] for e in pins)} samples")
if pins:
    print(f"   longest (observed = first to last sample seen waiting; at most = sample before to sample after):")
    for e in sorted(pins, key=lambda e: (dur(e), upper(e)), reverse=True)[:10]:
        print(f"   {dur(e):6.2f} s observed, at most {upper(e):5.2f} s, {e['n']:>3} samples: pid {e['pid']} {e['label']}: {e['query'][:70]}")
max_pin_obs = max([dur(e) for e in pins], default=0.0)
max_pin_up = max([upper(e) for e in pins], default=0.0)
facts["pin_max_observed"] = f"{max_pin_obs:.3f}"
facts["pin_max_upper"] = f"{max_pin_up:.3f}"
facts["pin_waits"] = len(pins)
facts["pin_over"] = sum(1 for e in pins if dur(e) > max_pin)
for typ in ("Lock", "LWLock"):
    xs = [e for e in eps if e["type"] == typ]
    if xs:
        e = max(xs, key=dur)
        print(f"{typ} waits: {len(xs)} seen; longest {dur(e):.2f} s observed (at most {upper(e):.2f} s): "
              f"{e['event']}, pid {e['pid']} {e['label']}: {e['query'][:60]}")
ev = sorted(s["events"].items(), key=lambda kv: -kv[1])
print("wait events of active backends, in samples: " + (", ".join(f"{k} {v}" for k, v in ev[:14]) or "none"))

print()
print("-- private memory: RssAnon (/proc/<pid>/status) per backend type, max over all samples and processes")
hdr = f"{'backend type':<34} | {'procs':>5} {'max MiB':>8} {'median of max':>13} | {'max growth after 60 s':>21}"
print(hdr)
print("-" * len(hdr))
by = {}
for pid, m in s["mem"].items():
    by.setdefault(m["label"], []).append(m)
order = sorted(by, key=lambda k: -max(m["max"] for m in by[k]))
for k in order:
    ms = by[k]
    long = [m for m in ms if m["rss60"] is not None and m["last_t"] - m["first_t"] >= 120]
    growth = max([(m["last"] - m["rss60"]) / 1024 for m in long], default=None)
    g = f"{growth:+.1f} MiB ({len(long)} procs)" if growth is not None else "n/a"
    print(f"{k:<34} | {len(ms):>5} {max(m['max'] for m in ms) / 1024:>8.1f} {pct([m['max'] for m in ms], .5) / 1024:>13.1f} | {g:>21}")

# server log
print()
lines = []
try:
    with open(logfile, errors="replace") as f:
        lines = f.readlines()
except OSError as e:
    print(f"-- server log: cannot read {logfile}: {e}")
pat = re.compile(r"\b(ERROR|FATAL|PANIC|WARNING):\s+(.*)")
expected = ("canceling autovacuum task",)
kinds = {}
unexpected = 0
for i, l in enumerate(lines):
    m = pat.search(l)
    if not m:
        continue
    msg = f"{m.group(1)}: {m.group(2).strip()}"
    msg = re.sub(r"\d+", "N", msg)[:140]
    exp = any(x in l for x in expected) or m.group(1) == "WARNING"
    if m.group(1) in ("ERROR", "FATAL", "PANIC") and not exp:
        unexpected += 1
    kinds.setdefault((msg, exp), []).append(i)
autovac = sum(1 for l in lines if 'automatic vacuum of table "soak.public.soak"' in l)
autoan = sum(1 for l in lines if 'automatic analyze of table "soak.public.soak"' in l)
print(f"-- server log ({len(lines)} lines): automatic vacuum of soak {autovac}, automatic analyze {autoan}; "
      f"ERROR/FATAL/PANIC/WARNING lines by message:")
if not kinds:
    print("   none")
for (msg, exp), idx in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
    print(f"   {len(idx):>5} x {msg}" + ("   (expected)" if exp else "   <-- unexpected"))
    if not exp:
        for j in idx[:3]:
            for l in lines[max(0, j - 1):j + 3]:
                print("         " + l.rstrip()[:200])
last_idx = [l.strip() for l in lines if 'index "soak_fp_idx"' in l]
if last_idx:
    print("   last autovacuum line for soak_fp_idx: " + re.sub(r"\s+", " ", last_idx[-1])[:160])
facts["log_unexpected"] = unexpected
facts["autovac_log"] = autovac

with open(os.path.join(work, "facts.tsv"), "w") as f:
    for k, v in facts.items():
        f.write(f"{k}\t{v}\n")
PY
python3 "$WORK/report.py" "$WORK" "$DURATION" "$SOAK_DIR/server.log" "$T0" "$MAX_PIN_WAIT"
fact() { awk -F'\t' -v k="$1" '$1 == k {print $2}' "$WORK/facts.tsv"; }

echo
echo "-- totals"
echo "rows: $COUNT0 at start, $COUNT1 at end; inserted $((INS1 - INS0)), deleted $((DEL1 - DEL0)) (pg_stat_user_tables; start + inserted - deleted = $((COUNT0 + INS1 - INS0 - DEL1 + DEL0)))"
echo "VACUUMs on soak during the load: $NVAC manual (every $VACUUM_EVERY s, $NVAC_FAIL failed), $((AV1 - AV0)) autovacuum ($(fact autovac_log) logged in all, including the checks), $((AA1 - AA0)) autoanalyze; vacuum_count $((V1 - V0))"
echo "pgbench exit status: writers $RC_W, readers $RC_R, cursor $RC_C"
if [ -s "$WORK/vacuum.err" ]; then
	echo "manual VACUUM errors:"
	sed 's/^/   /' "$WORK/vacuum.err" | head -10
fi

echo
echo "== result =="
FAILS=0
check() {	# ok(0/1), text
	if [ "$1" = 1 ]; then echo "PASS  $2"; else echo "FAIL  $2"; FAILS=$((FAILS + 1)); fi
}
check "$([ "$MISMATCH" = 0 ] && [ "$BADPLAN" = 0 ] && echo 1 || echo 0)" \
	"answers equal the sequential scan's: $COMPARED index/bitmap answers compared, $MISMATCH differ, $BADPLAN unintended plans"
check "$VERIFY_OK" "simhash_index_verify('soak_fp_idx') $([ "$VERIFY_OK" = 1 ] && echo passes || echo "failed: $(echo "$VERIFY_OUT" | head -1)")"
check "$(python3 -c "print(1 if $RATIO <= $MAX_SIZE_RATIO else 0)")" "size(soak_fp_idx) / size(fresh) <= $MAX_SIZE_RATIO: $RATIO ($((LIVE_SIZE / 8192)) / $((FRESH_SIZE / 8192)) pages)"
check "$([ "$(fact pin_over)" = 0 ] && echo 1 || echo 0)" \
	"no BufferPin wait over $MAX_PIN_WAIT s: $(fact pin_waits) waits seen, longest $(fact pin_max_observed) s observed (at most $(fact pin_max_upper) s)"
check "$([ "$RC_W$RC_R$RC_C" = 000 ] && [ "$(fact pgb_write_problems)$(fact pgb_read_problems)$(fact pgb_cursor_problems)" = 000 ] && echo 1 || echo 0)" \
	"every pgbench client ran to the end without errors (exit status $RC_W/$RC_R/$RC_C)"
check "$([ "$(fact log_unexpected)" = 0 ] && echo 1 || echo 0)" \
	"no unexpected ERROR/FATAL/PANIC in the server log ($(fact log_unexpected) lines)"

echo
echo "-- pgbench summaries"
for g in write read cursor; do
	echo "[$g]"
	grep -v '^\(pgbench (\|progress:\)' "$WORK/pgb_$g.out" | sed 's/^/   /'
done
echo
echo "total run time: $(( $(date +%s) - ${T_LOAD%.*} )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$FAILS" = 0 ] || exit 2
