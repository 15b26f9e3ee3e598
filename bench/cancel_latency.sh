#!/usr/bin/env bash
# cancel_latency.sh: how long a cancel request takes to stop a long simhash index
# build and a long merge run by VACUUM (issue 10, item 2), against the time the same
# operation takes when it is not cancelled, measured in the same run.
#
# Usage:
#   bench/cancel_latency.sh [ROWS]      (default 12,000,000 rows of random fingerprints)
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE). The server
# needs the simhash extension installed; the script creates and drops bench_cancel.
#
# What is measured:
# - build: CREATE INDEX ... WITH (blocks = 1) with maintenance_work_mem = 2GB, so that the
#   whole index is one run whose single table is written in one pass. The cancel is sent
#   0.3 s after pg_stat_progress_create_index shows "sorting and writing runs" (past the
#   sort, while pages are written).
# - merge: the same table indexed with blocks = 1 from half the rows, the other half
#   inserted (a second run and a pending list), 10% deleted, then VACUUM, whose cleanup
#   merges everything into one run. The cancel is sent 0.3 s after
#   pg_stat_progress_vacuum shows "cleaning up indexes".
# Latency: from pg_cancel_backend() returning to the backend no longer running the
# statement (pg_stat_activity polled every 10 ms), median of BENCH_RUNS (default 3).
set -euo pipefail

ROWS=${1:-12000000}
RUNS=${BENCH_RUNS:-3}
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)

now() { date +%s.%N; }

"${PSQL[@]}" <<SQL
CREATE EXTENSION IF NOT EXISTS simhash;
DROP TABLE IF EXISTS bench_cancel;
CREATE TABLE bench_cancel (id bigint, fp simhash);
ALTER TABLE bench_cancel SET (autovacuum_enabled = off);
INSERT INTO bench_cancel
  SELECT g, (('x' || md5(g::text))::bit(64)::bigint)::simhash FROM generate_series(1, $ROWS) g;
SQL
trap '"${PSQL[@]}" -c "DROP TABLE IF EXISTS bench_cancel" >/dev/null 2>&1 || true' EXIT

# run SQL in the background, wait until the progress condition holds, wait 0.3 s,
# cancel, print the latency in seconds
cancel_at() {
	local sql=$1 cond=$2 tag=$3
	"${PSQL[@]}" -c "SET application_name = '$tag'" -c "SET maintenance_work_mem = '2GB'" \
		-c "$sql" >/dev/null 2>&1 &
	local bg=$!
	local pid=""
	for _ in $(seq 1 6000); do
		pid=$("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$tag' AND state = 'active' AND $cond" || true)
		[ -n "$pid" ] && break
		sleep 0.01
	done
	if [ -z "$pid" ]; then
		echo "never saw the phase" >&2
		wait $bg || true
		return 1
	fi
	sleep 0.3
	"${PSQL[@]}" -c "SELECT pg_cancel_backend($pid)" >/dev/null
	local t0; t0=$(now)
	while [ -n "$("${PSQL[@]}" -c "SELECT 1 FROM pg_stat_activity WHERE pid = $pid AND state = 'active'")" ]; do
		sleep 0.01
	done
	local t1; t1=$(now)
	wait $bg || true
	echo "$t1 - $t0" | bc -l
}

timed() {
	local t0; t0=$(now)
	"${PSQL[@]}" -c "SET maintenance_work_mem = '2GB'" -c "$1" >/dev/null
	local t1; t1=$(now)
	echo "$t1 - $t0" | bc -l
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

build_sql="CREATE INDEX bench_cancel_fp ON bench_cancel USING simhash (fp) WITH (blocks = 1)"
build_cond="pid IN (SELECT pid FROM pg_stat_progress_create_index WHERE phase = 'building index: sorting and writing runs')"

build_full=$(timed "$build_sql")
"${PSQL[@]}" -c "DROP INDEX bench_cancel_fp"
build_lat=$(for _ in $(seq 1 "$RUNS"); do cancel_at "$build_sql" "$build_cond" cancel_build; done | median)

prepare_merge() {
	"${PSQL[@]}" <<SQL
DROP TABLE IF EXISTS bench_merge;
CREATE TABLE bench_merge (id bigint, fp simhash) WITH (autovacuum_enabled = off);
INSERT INTO bench_merge SELECT * FROM bench_cancel WHERE id <= $ROWS / 2;
SET maintenance_work_mem = '2GB';
CREATE INDEX bench_merge_fp ON bench_merge USING simhash (fp) WITH (blocks = 1, pending_limit = 1048576);
INSERT INTO bench_merge SELECT * FROM bench_cancel WHERE id > $ROWS / 2;
DELETE FROM bench_merge WHERE id % 10 = 0;
SQL
}
merge_cond="pid IN (SELECT pid FROM pg_stat_progress_vacuum WHERE phase = 'cleaning up indexes')"
prepare_merge
merge_full=$(timed "VACUUM bench_merge")
merge_lat=$(for _ in $(seq 1 "$RUNS"); do prepare_merge; cancel_at "VACUUM bench_merge" "$merge_cond" cancel_merge; done | median)
"${PSQL[@]}" -c "DROP TABLE IF EXISTS bench_merge"

printf '\nsimhash: cancelling long index writes (%s rows, blocks = 1)\n' "$ROWS"
printf '  server:  %s\n' "$("${PSQL[@]}" -c 'SELECT version()')"
printf '  library: %s\n' "$(git -C "$(dirname "$0")/.." log -1 --format='%h %s' 2>/dev/null | cut -c1-70)"
printf '%-28s %12s %18s %10s\n' operation "uncancelled s" "cancel latency s" ratio
printf '%-28s %12.2f %18.3f %10.3f\n' "CREATE INDEX" "$build_full" "$build_lat" "$(echo "$build_lat / $build_full" | bc -l)"
printf '%-28s %12.2f %18.3f %10.3f\n' "VACUUM (merge in cleanup)" "$merge_full" "$merge_lat" "$(echo "$merge_lat / $merge_full" | bc -l)"
printf 'ratio: cancel latency / uncancelled duration (small is good)\n'
