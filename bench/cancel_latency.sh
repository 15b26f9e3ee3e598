#!/usr/bin/env bash
# cancel_latency.sh: how long a cancel request takes to stop a long simhash index
# build and a long merge run by VACUUM, against the time the same
# operation takes when it is not cancelled, measured in the same run.
#
# Usage:
#   BENCH_LABEL='NEW b756746' bench/cancel_latency.sh [ROWS]
#                                         (default 12,000,000 rows of random fingerprints)
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE). The user must
# be a superuser: the script reads the size of the index's files (pg_stat_file) to see how
# far the write has gone, and the loaded simhash.so (pg_read_binary_file) to show its md5.
# The server needs the simhash extension installed; the script creates and drops
# bench_cancel and bench_merge. The database's default tablespace must be pg_default.
#
# Environment:
#   BENCH_RUNS       cancelled trials per operation, default 3 (the median is reported)
#   BENCH_CANCEL_AT  share of the index write after which the cancel is sent, default 0.5
#   BENCH_LABEL      which build of the library the server runs (e.g. "OLD d7abbdc"); the
#                    script cannot tell, it only shows the md5 of the simhash.so loaded
#
# What is measured:
# - build: CREATE INDEX ... WITH (blocks = 1) with maintenance_work_mem = 2GB, so that the
#   whole index is one run whose single table is written in one pass. The uncancelled
#   build is timed first; its index size S is what the write reaches. In each trial, the
#   cancel is sent once pg_stat_progress_create_index shows "sorting and writing runs" and
#   the new index's file (found through the backend's lock on it) has reached
#   BENCH_CANCEL_AT * S. (A fixed delay after the phase starts does not do: the phase
#   begins with the in-memory sort, which takes most of it and answers cancels after every
#   radix pass, so a cancel 0.3 s in lands before any page is written.)
# - merge: bench_merge holds the same rows, indexed with blocks = 1 and pending_limit =
#   1048576 from all but the last ROWS/24 (at most 1,000,000), which are then inserted
#   into the pending list (below the limit, so no inline merge), and an eighth of the rows
#   are deleted. VACUUM's cleanup ("cleaning up indexes" in pg_stat_progress_vacuum) then
#   merges the run and the pending list into one run of 7/8 * ROWS entries (it rewrites
#   a run of which a tenth or more is dead: ndead * 10 >= nentries; deleting exactly a
#   tenth can miss that by one, as it does for 4,000,000 rows). The uncancelled VACUUM is
#   timed first, on a freshly prepared table; the bytes its merge adds to the index, M,
#   are what the write reaches. In each trial, the cancel is sent once the cleanup phase
#   is on and the index has grown by BENCH_CANCEL_AT * M since the VACUUM started. The
#   table for the trials is prepared once more and reused: a cancelled merge leaves the
#   index as it was (its half-written run is unreachable, and reclaimed by a later
#   VACUUM), so the next trial cancels the same merge again; the first trial's VACUUM
#   also does the bulk delete and the heap vacuum, later ones go from the heap scan to the
#   cleanup. Only when a merge went through in spite of the cancel (a writer that holds
#   interrupts off finishes its pass, and nothing after it checks for interrupts before
#   the cleanup ends) is the table prepared again for the next trial.
# Latency: from pg_cancel_backend() returning to the first poll that finds the backend no
# longer running the statement (the server polls pg_stat_activity every 2 ms, see
# cancel_at), median of BENCH_RUNS. Each trial also shows how far the write had gone when
# the cancel was sent and when the backend stopped, as a share of what the uncancelled
# operation wrote, and how long the rest of the write took uncancelled: a writer that holds
# interrupts off until the end of its pass stops near 100%, about that much later.
set -euo pipefail

ROWS=${1:-12000000}
RUNS=${BENCH_RUNS:-3}
AT=${BENCH_CANCEL_AT:-0.5}
LABEL=${BENCH_LABEL:-}
PENDING=$((ROWS / 24 < 1000000 ? ROWS / 24 : 1000000))
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)

now() { date +%s.%N; }
calc() { echo "$1" | bc -l; }

# SQL: the total size of the files of a relation, given its path relative to the data
# directory (all 1 GB segments; missing ones count 0)
fsize() {
	echo "(SELECT coalesce(sum((pg_stat_file($1 || CASE WHEN s = 0 THEN '' ELSE '.' || s END, true)).size), 0)::bigint FROM generate_series(0, 63) s)"
}

"${PSQL[@]}" <<SQL
CREATE EXTENSION IF NOT EXISTS simhash;
DROP TABLE IF EXISTS bench_cancel;
DROP TABLE IF EXISTS bench_merge;
CREATE TABLE bench_cancel (id bigint, fp simhash);
ALTER TABLE bench_cancel SET (autovacuum_enabled = off);
INSERT INTO bench_cancel
  SELECT g, (('x' || md5(g::text))::bit(64)::bigint)::simhash FROM generate_series(1, $ROWS) g;
SQL
trap '"${PSQL[@]}" -c "DROP TABLE IF EXISTS bench_cancel" -c "DROP TABLE IF EXISTS bench_merge" >/dev/null 2>&1 || true' EXIT

# The watching is done by the server, in one session (a DO block polling every 2 ms;
# pg_stat_clear_snapshot() makes each poll see the current pg_stat_activity), so that
# the timing does not depend on starting a psql per poll.
#
# timed SQL TAG POLL PHASE: run SQL in the background as application_name TAG and sample
# it until it ends; POLL is a query returning (phase, bytes written so far) for the
# backend a.pid. Prints: total seconds (as the client saw it), seconds PHASE was seen,
# seconds from the write passing 1% of its final size to its reaching the final size,
# bytes written at the end
timed() {
	local sql=$1 tag=$2 poll=$3 phase=$4 t0 t1 out
	t0=$(now)
	"${PSQL[@]}" -c "SET application_name = '$tag'" -c "SET maintenance_work_mem = '2GB'" \
		-c "$sql" >/dev/null &
	local bg=$!
	out=$("${PSQL[@]}" <<SQL
CREATE TEMP TABLE samples (t float8, phase text, bytes bigint);
DO \$do\$
DECLARE
	pid_ int;
	deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT a.pid INTO pid_ FROM pg_stat_activity a
			WHERE a.application_name = '$tag' AND a.state = 'active' AND a.query = \$q\$$sql\$q\$;
		EXIT WHEN pid_ IS NOT NULL OR clock_timestamp() > deadline;
		PERFORM pg_sleep(0.002);
	END LOOP;
	LOOP
		PERFORM pg_stat_clear_snapshot();
		INSERT INTO samples SELECT extract(epoch FROM clock_timestamp()), s.* FROM ($poll) s;
		EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = pid_ AND a.state = 'active');
		PERFORM pg_sleep(0.002);
	END LOOP;
END
\$do\$;
WITH f AS (SELECT max(bytes) AS fin FROM samples)
SELECT format('%s %s %s',
	coalesce((SELECT max(t) - min(t) FROM samples WHERE phase = '$phase'), 0),
	coalesce((SELECT min(t) FROM samples, f WHERE bytes >= fin) - (SELECT min(t) FROM samples, f WHERE bytes > fin / 100), 0),
	coalesce(fin, 0)) FROM f;
SQL
)
	wait $bg
	t1=$(now)
	echo "$(calc "$t1 - $t0") $out"
}

# cancel_at SQL TAG COND WATCH: run SQL in the background as application_name TAG; when
# the query COND returns (pid, bytes written so far), cancel that backend, then run WATCH
# (the backend's pid is pid_; returns the bytes written, no row once the backend no longer
# runs the statement) until it stops. Prints the latency in seconds (from
# pg_cancel_backend() returning to the first poll that finds the backend idle), the bytes
# written when the cancel was sent and the most seen before the backend stopped
cancel_at() {
	local sql=$1 tag=$2 cond=$3 watch=$4 out
	"${PSQL[@]}" -c "SET application_name = '$tag'" -c "SET maintenance_work_mem = '2GB'" \
		-c "$sql" >/dev/null 2>&1 &
	local bg=$!
	out=$("${PSQL[@]}" <<SQL
CREATE TEMP TABLE result (latency float8, at bigint, stop bigint);
DO \$do\$
DECLARE
	pid_ int;
	sz bigint;
	at_ bigint;
	stop_ bigint;
	t0 timestamptz;
	seen bool := false;
	deadline timestamptz := clock_timestamp() + interval '10 min';
BEGIN
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT c.* INTO pid_, sz FROM ($cond) c;
		EXIT WHEN pid_ IS NOT NULL;
		-- the statement ended before the cancel point, or never started
		IF EXISTS (SELECT FROM pg_stat_activity a WHERE a.application_name = '$tag' AND a.state = 'active'
				   AND a.query = \$q\$$sql\$q\$) THEN
			seen := true;
		ELSIF seen OR clock_timestamp() > deadline THEN
			RETURN;
		END IF;
		PERFORM pg_sleep(0.002);
	END LOOP;
	at_ := sz;
	stop_ := sz;
	PERFORM pg_cancel_backend(pid_);
	t0 := clock_timestamp();
	LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT w.* INTO sz FROM ($watch) w;
		EXIT WHEN NOT FOUND;
		stop_ := greatest(stop_, sz);
		PERFORM pg_sleep(0.002);
	END LOOP;
	INSERT INTO result VALUES (extract(epoch FROM clock_timestamp() - t0), at_, stop_);
END
\$do\$;
SELECT format('%s %s %s', latency, at, stop) FROM result;
SQL
)
	if wait $bg; then
		echo "$tag: the statement was not cancelled (it finished first)" >&2
	fi
	if [ -z "$out" ]; then
		echo "$tag: never saw the write reach the cancel point" >&2
		return 1
	fi
	echo "$out"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

db=$("${PSQL[@]}" -c "SELECT oid FROM pg_database WHERE datname = current_database()")

# ---- build ----
build_sql="CREATE INDEX bench_cancel_fp ON bench_cancel USING simhash (fp) WITH (blocks = 1)"
build_phase="building index: sorting and writing runs"
# the index being built: not visible in pg_class yet (and index_relid is 0 for a plain
# CREATE INDEX), but locked AccessExclusive by the backend; a new relation's file is
# named by its OID
build_file="'base/$db/' || (SELECT l.relation FROM pg_locks l WHERE l.pid = p.pid AND l.locktype = 'relation' AND l.database = $db AND l.mode = 'AccessExclusiveLock' AND l.relation <> p.relid LIMIT 1)"
build_poll="SELECT p.phase, $(fsize "$build_file") FROM pg_stat_activity a JOIN pg_stat_progress_create_index p USING (pid) WHERE a.application_name = 'full_build' AND a.state = 'active'"
read -r build_full build_phase_s build_write_s build_written <<<"$(timed "$build_sql" full_build "$build_poll" "$build_phase")"
[ -n "${BENCH_DEBUG:-}" ] && echo "uncancelled build: $build_full $build_phase_s $build_write_s $build_written" >&2
build_size=$("${PSQL[@]}" -c "SELECT pg_relation_size('bench_cancel_fp')")
"${PSQL[@]}" -c "DROP INDEX bench_cancel_fp"
build_target=$(calc "scale=0; $AT * $build_size / 1")
build_cond="SELECT a.pid, $(fsize "$build_file") FROM pg_stat_activity a JOIN pg_stat_progress_create_index p USING (pid) WHERE a.application_name = 'cancel_build' AND a.state = 'active' AND p.phase = '$build_phase' AND $(fsize "$build_file") >= $build_target"
build_watch="SELECT coalesce($(fsize "$build_file"), 0) FROM pg_stat_activity a LEFT JOIN pg_stat_progress_create_index p USING (pid) WHERE a.pid = pid_ AND a.state = 'active'"
build_trials=()
for i in $(seq 1 "$RUNS"); do
	build_trials+=("$(cancel_at "$build_sql" cancel_build "$build_cond" "$build_watch")")
done

# ---- merge ----
prepare_merge() {
	"${PSQL[@]}" <<SQL
DROP TABLE IF EXISTS bench_merge;
CREATE TABLE bench_merge WITH (autovacuum_enabled = off) AS
  SELECT * FROM bench_cancel WHERE id <= $ROWS - $PENDING;
SET maintenance_work_mem = '2GB';
CREATE INDEX bench_merge_fp ON bench_merge USING simhash (fp) WITH (blocks = 1, pending_limit = 1048576);
INSERT INTO bench_merge SELECT * FROM bench_cancel WHERE id > $ROWS - $PENDING;
DELETE FROM bench_merge WHERE id % 8 = 0;
SQL
}
merge_info() { "${PSQL[@]}" -c "SELECT format('runs %s %s, pending entries %s, retired %s', runs, run_entries, pending_entries, retired) FROM simhash_index_info('bench_merge_fp')"; }
# what a merge changes (the retired count can change without one)
merge_state() { "${PSQL[@]}" -c "SELECT format('%s %s %s', runs, run_entries, pending_entries) FROM simhash_index_info('bench_merge_fp')"; }
merge_phase="cleaning up indexes"

# uncancelled, on a fresh table: how long, and how many bytes the merge adds to the index
prepare_merge
merge_before=$(merge_info)
merge_path=$("${PSQL[@]}" -c "SELECT pg_relation_filepath('bench_merge_fp')")
merge_size="$(fsize "'$merge_path'")"
base=$("${PSQL[@]}" -c "SELECT $merge_size")
merge_poll="SELECT p.phase, $merge_size - $base FROM pg_stat_activity a JOIN pg_stat_progress_vacuum p USING (pid) WHERE a.application_name = 'full_merge' AND a.state = 'active'"
read -r merge_full merge_phase_s merge_write_s merge_written <<<"$(timed "VACUUM bench_merge" full_merge "$merge_poll" "$merge_phase")"
[ -n "${BENCH_DEBUG:-}" ] && echo "uncancelled VACUUM: $merge_full $merge_phase_s $merge_write_s $merge_written" >&2
merge_final=$(merge_info)

# the trials: a table prepared again is reused as long as the cancelled VACUUM leaves the
# index unmerged; when the merge went through in spite of the cancel, it is prepared again
prepare_merge
merge_prepared=$(merge_state)
merge_trials=()
merge_after=()
for i in $(seq 1 "$RUNS"); do
	fresh=reused
	if [ "$i" -eq 1 ]; then
		fresh=fresh
	elif [ "$(merge_state)" != "$merge_prepared" ]; then
		prepare_merge
		fresh=fresh
	fi
	merge_path=$("${PSQL[@]}" -c "SELECT pg_relation_filepath('bench_merge_fp')")
	merge_size="$(fsize "'$merge_path'")"
	base=$("${PSQL[@]}" -c "SELECT $merge_size")
	target=$(calc "scale=0; ($base + $AT * $merge_written) / 1")
	cond="SELECT a.pid, $merge_size - $base FROM pg_stat_activity a JOIN pg_stat_progress_vacuum p USING (pid) WHERE a.application_name = 'cancel_merge' AND a.state = 'active' AND p.phase = '$merge_phase' AND $merge_size >= $target"
	watch="SELECT $merge_size - $base FROM pg_stat_activity a WHERE a.pid = pid_ AND a.state = 'active'"
	read -r lat at stop <<<"$(cancel_at "VACUUM bench_merge" cancel_merge "$cond" "$watch")"
	stop=$("${PSQL[@]}" -c "SELECT greatest($stop, $merge_size - $base)")
	if [ "$(merge_state)" = "$merge_prepared" ]; then merged=no; else merged=yes; fi
	merge_trials+=("$lat $at $stop $fresh $merged")
	merge_after+=("$(merge_info)")
done

build_lat=$(for t in "${build_trials[@]}"; do echo "${t%% *}"; done | median)
merge_lat=$(for t in "${merge_trials[@]}"; do echo "${t%% *}"; done | median)

printf '\nsimhash: cancelling long index writes (%s rows, blocks = 1)\n' "$ROWS"
printf '  server:  %s\n' "$("${PSQL[@]}" -c 'SELECT version()')"
printf '  library: %s\n' "${LABEL:-(BENCH_LABEL not set)}"
printf '  loaded:  %s\n' "$("${PSQL[@]}" -c "SELECT d.setting || '/simhash.so md5 ' || md5(pg_read_binary_file(d.setting || '/simhash.so')) || ', extension ' || (SELECT extversion FROM pg_extension WHERE extname = 'simhash') FROM pg_config d WHERE d.name = 'PKGLIBDIR'")"
script_rev=$(git -C "$(dirname "$0")/.." log -1 --format='%h %s' 2>/dev/null | cut -c1-60 || true)
git -C "$(dirname "$0")" diff --quiet HEAD -- "$(basename "$0")" 2>/dev/null ||
	script_rev="$script_rev (this script modified)"
printf '  script:  %s\n' "$script_rev"
printf '%-28s %12s %18s %10s\n' operation "uncancelled s" "cancel latency s" ratio
printf '%-28s %12.2f %18.3f %10.3f\n' "CREATE INDEX" "$build_full" "$build_lat" "$(calc "$build_lat / $build_full")"
printf '%-28s %12.2f %18.3f %10.3f\n' "VACUUM (merge in cleanup)" "$merge_full" "$merge_lat" "$(calc "$merge_lat / $merge_full")"
printf 'ratio: cancel latency / uncancelled duration (small is good)\n'
printf '\nuncancelled, as the server saw them (polled every 2 ms):\n'
printf '  CREATE INDEX: phase "%s" %.2f s, index file growing %.2f s, %s bytes\n' \
	"$build_phase" "$build_phase_s" "$build_write_s" "$build_size"
printf '  VACUUM:       phase "%s" %.2f s, index file growing %.2f s, %s bytes\n' \
	"$merge_phase" "$merge_phase_s" "$merge_write_s" "$merge_written"
printf 'trials (cancel sent at %s of the write; written = share of the uncancelled bytes;\n' "$AT"
printf '        left = uncancelled write time still ahead when the cancel was sent, at the same pace):\n'
for t in "${build_trials[@]}"; do
	read -r lat at stop <<<"$t"
	printf '  CREATE INDEX  latency %6.3f s  left %6.3f s  written at cancel %5.1f%%, when stopped %5.1f%%\n' \
		"$lat" "$(calc "(1 - $at / $build_size) * $build_write_s")" \
		"$(calc "100 * $at / $build_size")" "$(calc "100 * $stop / $build_size")"
done
i=0
for t in "${merge_trials[@]}"; do
	read -r lat at stop fresh merged <<<"$t"
	printf '  VACUUM        latency %6.3f s  left %6.3f s  written at cancel %5.1f%%, when stopped %5.1f%%\n' \
		"$lat" "$(calc "(1 - $at / $merge_written) * $merge_write_s")" \
		"$(calc "100 * $at / $merge_written")" "$(calc "100 * $stop / $merge_written")"
	printf '                (%s table) merge went through anyway: %s; index after: %s\n' "$fresh" "$merged" "${merge_after[$i]}"
	i=$((i + 1))
done
printf 'merge index before VACUUM: %s\n' "$merge_before"
printf 'merge index after the uncancelled VACUUM: %s\n' "$merge_final"
