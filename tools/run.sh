#!/usr/bin/env bash
# run.sh: the two entry points of this repository, for a fresh Debian 12 machine as root.
#
#   bash tools/run.sh demo [DIR]   install what is missing, build and install the extension,
#                                  start a scratch PostgreSQL, fingerprint a real corpus and
#                                  print its near-duplicate pairs and groups (default corpus:
#                                  Debian's /usr/share/doc/*/copyright and
#                                  /usr/share/common-licenses/*; DIR replaces it with every
#                                  regular file under DIR); SIMHASH_DEMO_KEEP=1 leaves the
#                                  server running at the end
#   bash tools/run.sh test         the same set-up, then every test suite, on PostgreSQL 15
#                                  and then on the versions in $SIMHASH_PG_MATRIX (default 17 18,
#                                  built from source once: tools/pg_matrix.sh); exits non-zero
#                                  on any failure (this is what .ci/run calls)
#   bash tools/run.sh tap FILE...  the same set-up, then only the TAP files named (paths such as
#                                  test/t/023_index_stress.pl), on PostgreSQL 15; for long runs:
#                                  SIMHASH_STRESS_SECONDS=1800 bash tools/run.sh tap test/t/023_index_stress.pl
#
# Both are idempotent. The scratch server lives in $SIMHASH_RUN_DIR (default /tmp/simhash-run),
# listens on port $SIMHASH_PORT (default 54329, Unix socket only) and is stopped at exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=15
PGBIN=/usr/lib/postgresql/$PG_MAJOR/bin
RUN_DIR=${SIMHASH_RUN_DIR:-/tmp/simhash-run}
PORT=${SIMHASH_PORT:-54329}
DB=simhash_demo

log() { printf '\n==> %s\n' "$*"; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "run.sh: run as root (it installs packages and runs PostgreSQL as the postgres user)" >&2
		exit 1
	fi
}

# Debian packages everything here needs: server and PGXS, xxHash headers, TAP modules,
# fuzzing (clang with libFuzzer runtime), valgrind, and python3 with xxhash + Unicode data
# for the reference implementation of the fingerprint specification; git, dpkg-dev,
# debhelper and postgresql-server-dev-all to build the Debian package (tools/package.sh).
PACKAGES=(postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR postgresql-contrib
	libxxhash-dev libipc-run-perl make gcc clang libclang-rt-dev valgrind
	python3 python3-xxhash unicode-data manpages-dev
	git dpkg-dev debhelper postgresql-server-dev-all sqlsmith)

# Install the packages named that are missing, and upgrade none that is installed: apt-get
# install --no-upgrade leaves installed packages named alone, and a dry run first shows which
# installed packages the missing ones' dependencies would upgrade. A PostgreSQL package among
# them (a running server's binaries) stops it, unless SIMHASH_ALLOW_UPGRADES=1; the others are
# named (tools/apt.sh, which tools/pg_matrix.sh and tools/citus.sh use too).
install_packages() {
	bash "$ROOT/tools/apt.sh" "${PACKAGES[@]}"
}

build() {
	log "building and installing the extension (-Werror; about 40 s)"
	make -C "$ROOT" -s clean
	make -C "$ROOT" -s COPT='-Werror'
	make -C "$ROOT" -s install
}

pg() { runuser -u postgres -- "$@"; }

start_server() {
	mkdir -p "$RUN_DIR"
	chown postgres "$RUN_DIR"
	if [ -f "$RUN_DIR/data/postmaster.pid" ]; then
		pg "$PGBIN/pg_ctl" -D "$RUN_DIR/data" -m fast stop >/dev/null 2>&1 || true
	fi
	if [ ! -f "$RUN_DIR/data/PG_VERSION" ]; then
		log "creating a scratch cluster in $RUN_DIR/data"
		pg "$PGBIN/initdb" -D "$RUN_DIR/data" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	fi
	log "starting PostgreSQL on port $PORT (socket in $RUN_DIR)"
	pg "$PGBIN/pg_ctl" -D "$RUN_DIR/data" -l "$RUN_DIR/server.log" -w \
		-o "-p $PORT -k $RUN_DIR -c listen_addresses=''" start >/dev/null
	trap stop_server EXIT
	export PGHOST=$RUN_DIR PGPORT=$PORT PGUSER=postgres
}

stop_server() {
	pg "$PGBIN/pg_ctl" -D "$RUN_DIR/data" -m fast stop >/dev/null 2>&1 || true
}

psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

# Emit COPY text rows (path, name, body) for every regular, readable text file given on
# stdin (NUL-separated). name is what the demo prints: the package of a
# /usr/share/doc/<package>/copyright file, common-licenses/<file>, or the path under the
# directory given as the first argument.
corpus_copy() {
	python3 -c '
import os, sys
base = sys.argv[1] if len(sys.argv) > 1 else ""
def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
def name(path):
    parts = path.split("/")
    if base:
        return os.path.relpath(path, base)
    if path.startswith("/usr/share/doc/") and len(parts) == 6 and parts[5] == "copyright":
        return parts[4]
    if path.startswith("/usr/share/common-licenses/"):
        return "common-licenses/" + parts[-1]
    return path
for path in sys.stdin.read().split("\0"):
    if not path:
        continue
    try:
        with open(path, "rb") as f:
            data = f.read()
        body = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        continue
    if "\0" in body:
        continue
    sys.stdout.write(esc(path) + "\t" + esc(name(path)) + "\t" + esc(body) + "\n")
' "$@"
}

demo() {
	local dir=${1:-}
	log "loading the corpus"
	psql -X -q -d postgres -c "SET client_min_messages = warning" \
		-c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
	psql_db <<'SQL'
CREATE EXTENSION simhash;
-- name: what the demo prints for a document (the package of a copyright file, or
-- the path under DIR); fp: the recommended sketch, minhash(body)
CREATE TABLE docs (
    id   bigserial PRIMARY KEY,
    path text NOT NULL,
    name text NOT NULL,
    body text NOT NULL,
    fp   simhash GENERATED ALWAYS AS (minhash(body)) STORED
);
SQL
	if [ -n "$dir" ]; then
		find "$dir" -type f -print0
	else
		{ find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f -print0
		  find /usr/share/common-licenses -type f -print0; }
	fi | corpus_copy "$dir" | psql_db -c "\\copy docs (path, name, body) FROM STDIN"
	psql_db <<'SQL'
CREATE INDEX docs_fp_idx ON docs USING simhash (fp);
ANALYZE docs;
\pset footer off
\pset tuples_only on
SELECT format('%s documents, %s MB of text, %s without a fingerprint (no words)',
              count(*), round(sum(octet_length(body)) / 1e6, 1), count(*) - count(fp)) FROM docs;
SQL

	log "near-duplicate pairs: fingerprints within 12 bits, then the exact similarity of their texts"
	echo "(fp is minhash(body); the pairs come from the self-join b.fp <~> a.fp <= 12, a nested loop"
	echo " over the simhash index; jaccard is simhash_jaccard(a.body, b.body, 'words', 5): the share"
	echo " of word 5-grams the two texts have in common)"
	psql_db -At -c "EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM docs a JOIN docs b ON b.fp <~> a.fp <= 12 AND a.id < b.id" | sed 's/^/    /'
	psql_db <<'SQL'
\pset footer off
CREATE TEMP TABLE pairs AS
    SELECT a.id AS a, b.id AS b, a.fp <~> b.fp AS bits,
           round(simhash_jaccard(a.body, b.body, 'words', 5)::numeric, 3) AS jaccard
    FROM docs a JOIN docs b ON b.fp <~> a.fp <= 12 AND a.id < b.id;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE jaccard >= 0.8) AS "jaccard >= 0.8",
       count(*) FILTER (WHERE jaccard >= 0.5 AND jaccard < 0.8) AS "0.5 to 0.8",
       count(*) FILTER (WHERE jaccard < 0.5) AS "below 0.5"
FROM pairs;
\echo Copyright files are mostly licence text: two packages under the same licence share half of
\echo their word 5-grams or more without being copies of each other. So the removal below acts
\echo only on pairs at 0.8 or more. A sample: the 6 least similar pairs at or above 0.8, the 6 most
\echo and the 6 least similar between 0.5 and 0.8 (left alone):
(SELECT x.name AS a, y.name AS b, p.bits, p.jaccard
 FROM pairs p JOIN docs x ON x.id = p.a JOIN docs y ON y.id = p.b
 WHERE p.jaccard >= 0.8 ORDER BY p.jaccard, p.bits DESC, x.name, y.name LIMIT 6)
UNION ALL
(SELECT x.name, y.name, p.bits, p.jaccard
 FROM pairs p JOIN docs x ON x.id = p.a JOIN docs y ON y.id = p.b
 WHERE p.jaccard >= 0.5 AND p.jaccard < 0.8 ORDER BY p.jaccard DESC, p.bits, x.name, y.name LIMIT 6)
UNION ALL
(SELECT x.name, y.name, p.bits, p.jaccard
 FROM pairs p JOIN docs x ON x.id = p.a JOIN docs y ON y.id = p.b
 WHERE p.jaccard >= 0.5 AND p.jaccard < 0.8 ORDER BY p.jaccard, p.bits DESC, x.name, y.name LIMIT 6);
SQL

	log "groups: what examples/dedup.sql would remove (report mode: nothing is changed)"
	echo "(psql -v table=docs -v radius=12 -v verify_column=body -v verify_threshold=0.8"
	echo "      -v keep=longest -v keep_column=body -v report_rows=0 -v report_table=review"
	echo "      -f examples/dedup.sql: groups form on pairs whose jaccard is at least 0.8, each keeping"
	echo " its longest document; a candidate that no kept document accepts is left alone)"
	(cd "$ROOT/examples" && psql -X -d "$DB" -v table=docs -v radius=12 -v verify_column=body \
		-v verify_threshold=0.8 -v keep=longest -v keep_column=body -v report_rows=0 \
		-v report_table=review -f dedup.sql 2>&1 | sed -e 's/^psql:dedup.sql:[0-9]*: //')
	psql_db <<'SQL'
\pset footer off
\echo The 15 groups with the most duplicates: the kept document, then every duplicate (the first 10
\echo of a larger group, and how many more), least similar first; <- in the column least marks
\echo the least similar when its jaccard is below 1:
SELECT CASE WHEN g.role = 'kept' THEN g.dups::text ELSE '' END AS duplicates,
       CASE WHEN g.role = 'kept' THEN d.name ELSE '' END AS kept,
       CASE WHEN g.role = 'kept' THEN '' ELSE d.name END AS duplicate,
       CASE WHEN g.role = 'kept' THEN NULL ELSE g.bits END AS bits, g.jaccard,
       CASE WHEN g.k = 2 AND g.dups > 1 AND g.jaccard < 1 THEN '<-' ELSE '' END AS least
FROM (SELECT r.*, count(*) FILTER (WHERE r.role = 'duplicate') OVER (PARTITION BY r.kept_id) AS dups,
             row_number() OVER (PARTITION BY r.kept_id ORDER BY r.n) AS k
      FROM review r WHERE r.role IN ('kept', 'duplicate')) g
JOIN docs d ON d.id = g.id
WHERE g.kept_id IN (SELECT kept_id FROM review WHERE role = 'duplicate'
                    GROUP BY kept_id ORDER BY count(*) DESC, kept_id LIMIT 15)
  AND g.k <= 11
ORDER BY g.dups DESC, g.kept_id, g.k;
SELECT format('(%s more duplicates of these groups not shown; every row of every group is in the table review)', count(*))
FROM (SELECT r.kept_id, row_number() OVER (PARTITION BY r.kept_id ORDER BY r.n) AS k
      FROM review r WHERE r.role IN ('kept', 'duplicate')
        AND r.kept_id IN (SELECT kept_id FROM review WHERE role = 'duplicate'
                          GROUP BY kept_id ORDER BY count(*) DESC, kept_id LIMIT 15)) x
WHERE k > 11 HAVING count(*) > 0 \g (tuples_only=on)
\echo The least similar duplicates of all groups (what a reviewer checks first):
SELECT k.name AS kept, d.name AS duplicate, r.bits, r.jaccard
FROM review r JOIN docs d ON d.id = r.id JOIN docs k ON k.id = r.kept_id
WHERE r.role = 'duplicate' ORDER BY r.jaccard, r.bits DESC, r.n LIMIT 8;
\echo The most similar candidates verification left alone (within 12 bits, jaccard below 0.8):
SELECT k.name AS kept, d.name AS candidate, r.bits, r.jaccard
FROM review r JOIN docs d ON d.id = r.id JOIN docs k ON k.id = r.kept_id
WHERE r.role = 'left alone' ORDER BY r.jaccard DESC, r.bits, r.n LIMIT 8;
SQL
	echo
	if [ "${SIMHASH_DEMO_KEEP:-0}" = 1 ]; then
		trap - EXIT
		echo "The demo's server keeps running (SIMHASH_DEMO_KEEP=1). Try the scripts on its table:"
		echo "  cd $ROOT && psql -h $RUN_DIR -p $PORT -U postgres -d $DB -v table=docs -v radius=12 \\"
		echo "      -v verify_column=body -v verify_threshold=0.8 -v keep=longest -v keep_column=body \\"
		echo "      -v show=name -f examples/dedup.sql"
		echo "Stop it with:"
		echo "  runuser -u postgres -- $PGBIN/pg_ctl -D $RUN_DIR/data stop"
	else
		echo "The demo's server is stopped now (SIMHASH_DEMO_KEEP=1 keeps it running, to try the scripts on it)."
	fi
	echo "On your own table: the Quick start's docs (README.md: id, body, and mh = minhash(body)), from $ROOT:"
	echo "  psql -d simhash_try -v table=docs -v fp_column=mh -v radius=12 -v verify_column=body \\"
	echo "       -v verify_threshold=0.8 -v keep=longest -v keep_column=body -v show=body \\"
	echo "       -f examples/dedup.sql                   # review: every group, as above; changes nothing"
	echo "  ... the same with -v action=delete           # remove; the rows go to docs_dedup_archive"
	echo "  psql -d simhash_try -v table=docs -v restore=all -f examples/dedup_restore.sql   # undo"
	echo "(another table: its name, its minhash column as fp_column, its text column as verify_column"
	echo " and keep_column, and the columns to show)"
}

# Each suite: name, then the command. Failures are counted, not fatal, so every suite runs.
# Exit status 3 means the suite could not run on this machine (skipped, said in the summary).
PASSED=0
FAILED=0
FAILED_NAMES=()
SKIPPED_NAMES=()
suite() {
	local name=$1 rc=0 out reason
	shift
	log "suite: $name"
	# the suite's output passes through as it comes, and is kept for a skip's reason (the
	# line a skipped suite prints with "SKIPPED: ")
	out=$(mktemp)
	{ "$@" 2>&1 | tee "$out"; } || rc=$?
	reason=$(grep -m1 -o 'SKIPPED: .*' "$out" | sed 's/^SKIPPED: //' || true)
	rm -f "$out"
	if [ $rc -eq 0 ]; then
		PASSED=$((PASSED + 1))
	elif [ $rc -eq 3 ]; then
		SKIPPED_NAMES+=("$name (${reason:-no reason given})")
	else
		FAILED=$((FAILED + 1))
		FAILED_NAMES+=("$name")
	fi
}

regress() {
	if make -C "$ROOT" -s installcheck; then
		return 0
	fi
	[ -f "$ROOT/regression.diffs" ] && cat "$ROOT/regression.diffs"
	return 1
}

# TAP suites run as postgres (initdb refuses root) from a copy of the tree that user can read.
tap() {
	local dir=$RUN_DIR/tap
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a "$ROOT/." "$dir/src"
	chown -R postgres "$dir"
	# the files named (tools/run.sh tap FILE...), else every one
	local tests=()
	for f in "$@"; do tests+=("$dir/src/$f"); done
	# two files at a time (each starts its own servers on free ports): the
	# machine has 2 cores and the suites wait on I/O and fsync much of the time
	pg env $(env | grep -E '^SIMHASH_STRESS_[A-Z_]+=' | tr '\n' ' ') \
		make -C "$dir/src" -s tapcheck TAP_TESTDIR="$dir" PROVE_FLAGS='--timer -j2' \
		${tests[0]:+PROVE_TESTS="${tests[*]}"}
	local rc=$?
	if [ $rc -ne 0 ]; then
		for f in "$dir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && { echo "---- $f (tail)"; tail -n 40 "$f"; }
		done
	fi
	return $rc
}

run_tests() {
	suite "pg_regress" regress
	# every block of README.md's Quick start, verbatim and in order, on a fresh database
	suite "Quick start (README.md)" bash "$ROOT/test/quickstart.sh"
	suite "TAP" tap
	suite "reference vectors" python3 "$ROOT/test/reference/check_vectors.py"
	suite "fuzz and valgrind" bash "$ROOT/test/run_fuzz.sh" "${SIMHASH_FUZZ_SECONDS:-30}"
	suite "Debian package" bash "$ROOT/tools/package.sh"
	suite "PGXN META.json" python3 "$ROOT/tools/check_meta.py"
	# a coordinator and two workers; builds Citus from its release source when not installed
	suite "Citus (TAP)" bash "$ROOT/tools/citus.sh" test
	# the other PostgreSQL versions, built from source (tools/pg_matrix.sh)
	for major in ${SIMHASH_PG_MATRIX:-17 18}; do
		suite "pg_regress (PostgreSQL $major)" bash "$ROOT/tools/pg_matrix.sh" regress "$major"
		suite "TAP (PostgreSQL $major)" bash "$ROOT/tools/pg_matrix.sh" tap "$major"
	done
	log "summary"
	[ ${#FAILED_NAMES[@]} -gt 0 ] && echo "failed suites: ${FAILED_NAMES[*]}"
	if [ ${#SKIPPED_NAMES[@]} -gt 0 ]; then
		echo "SKIPPED (cannot run here):"
		printf '  %s\n' "${SKIPPED_NAMES[@]}"
	fi
	echo "suites: $PASSED passed, $FAILED failed, ${#SKIPPED_NAMES[@]} skipped"
	[ "$FAILED" -eq 0 ]
}

main() {
	local cmd=${1:-}
	shift || true
	case "$cmd" in
		demo | test | tap) ;;
		*)
			echo "usage: bash tools/run.sh demo [DIR] | test | tap FILE..." >&2
			exit 2
			;;
	esac
	need_root
	install_packages
	build
	start_server
	if [ "$cmd" = demo ]; then
		demo "$@"
	elif [ "$cmd" = tap ]; then
		tap "$@"
	else
		run_tests
	fi
}

main "$@"
