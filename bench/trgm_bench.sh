#!/usr/bin/env bash
# trgm_bench.sh: pg_trgm side by side with simhash on the same table, for doc/reference.md's "Why not
# pg_trgm?": the index (build time, size), deduplicating the whole table, and looking up one
# document by its text.
#
# Usage: bench/trgm_bench.sh [ROWS]     (default 100000)
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE); the database needs
# the simhash extension (0.3.0 or later) installed on the server, and pg_trgm (postgresql-contrib;
# CREATE EXTENSION IF NOT EXISTS pg_trgm is run). Creates, and drops at exit, the table tb_docs.
#
# Data: dedup_verify_bench.sh's: ROWS documents of 150 words (about 1 kB) drawn from 5,000
# pseudo-words; 10% of them are copies of another document with 3 of the 150 words replaced
# (Jaccard of word 5-grams about 0.85); fp = minhash(body). Then, each timed by psql (\timing)
# and the ratio pg_trgm / simhash printed:
#   index    CREATE INDEX ... USING gin (body gin_trgm_ops) against CREATE INDEX ... USING
#            simhash (fp) (and the UPDATE that computed fp = minhash(body), which a GIN index on
#            the text does not need: also given, and the ratio against both together); sizes
#            by pg_relation_size
#   dedup    examples/dedup.sql, report mode (report_rows=0), radius 12, verify_column=body,
#            verify_threshold 0.8 (word 5-gram Jaccard), the whole table, timed end to end by
#            psql; against pg_trgm's self-join at pg_trgm.similarity_threshold 0.5:
#              SELECT a.id, b.id FROM tb_docs a JOIN tb_docs b ON a.body % b.body AND a.id < b.id
#            over the first TB_PROBES rows (default 500) as a (each probes the GIN index once;
#            all ROWS would take hours), timed, and extrapolated linearly to all ROWS (the
#            a.id < b.id condition does not make later probes cheaper: the index returns every
#            similar row and the condition filters after)
#   lookup   200 queries by text (100 copies, 100 originals, each a row's body passed as a
#            parameter), timed one by one in the server (clock_timestamp around each):
#              simhash   SELECT id FROM tb_docs WHERE fp <~> minhash($1) <= 12
#                          AND simhash_jaccard(body, $1, 'words', 5) >= 0.8
#              pg_trgm   SELECT id FROM tb_docs WHERE body % $1   (threshold 0.5)
#            median and 95th percentile in ms, rows found; with enable_seqscan = off (else
#            the planner scans the table for pg_trgm's query, slower than its index); the plans
#            are printed
# The machine's load (/proc/loadavg) is printed at the start and the end: other work on the
# machine makes the times noisy, the ratios (measured in the same run) less so.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=${1:-100000}
PROBES=${TB_PROBES:-500}
[[ "$ROWS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROWS]" >&2; exit 2; }
[[ "$PROBES" =~ ^[1-9][0-9]*$ ]] || { echo "TB_PROBES must be a positive number" >&2; exit 2; }
PSQL=(psql -X -q -v ON_ERROR_STOP=1)
export PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=1GB -c jit=off -c client_min_messages=warning"

cleanup() { "${PSQL[@]}" -c "DROP TABLE IF EXISTS tb_docs" >/dev/null 2>&1 || true; }
trap cleanup EXIT

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "-" }'; }
sql() { "${PSQL[@]}" -tA "$@"; }

echo "== trgm_bench: $ROWS rows; server: $(sql -c "SELECT version()" | cut -d, -f1)"
echo "   machine: $(nproc) cpus, load at start $(cut -d' ' -f1-3 /proc/loadavg); maintenance_work_mem 1GB"
t0=$(now)
"${PSQL[@]}" <<SQL
CREATE EXTENSION IF NOT EXISTS simhash;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DROP TABLE IF EXISTS tb_docs;
CREATE UNLOGGED TABLE tb_docs (id bigint PRIMARY KEY, body text NOT NULL, fp simhash);
-- word k of the vocabulary (k < 5000): the first 3 to 8 hex digits of md5(k)
-- originals: ids 1 .. 0.9 ROWS; copies: the rest, each of original (id % originals) + 1
INSERT INTO tb_docs (id, body)
SELECT i, (SELECT string_agg(substr(md5(k::text), 1, 3 + k % 6), ' ' ORDER BY j)
           FROM generate_series(1, 150) j,
                LATERAL (SELECT ((hashint8extended(i::bigint * 1000 + j, 1) & 65535) % 5000)::int AS k) kk)
FROM generate_series(1, ($ROWS * 9) / 10) i;
INSERT INTO tb_docs (id, body)
SELECT i, (SELECT array_to_string(ARRAY(
             SELECT CASE WHEN j IN (20, 70, 120) THEN 'edit' || (i % 97) ELSE w END
             FROM unnest(string_to_array(o.body, ' ')) WITH ORDINALITY u(w, j)), ' '))
FROM generate_series(($ROWS * 9) / 10 + 1, $ROWS) i
JOIN tb_docs o ON o.id = (i % (($ROWS * 9) / 10)) + 1;
VACUUM ANALYZE tb_docs;
SQL
t1=$(now)
printf '   data: %s rows, %s MB of text, built in %.0f s\n' "$ROWS" \
	"$(sql -c "SELECT round(sum(octet_length(body)) / 1e6) FROM tb_docs")" "$(secs "$t0" "$t1")"

echo
echo "== index"
t0=$(now); sql -c "UPDATE tb_docs SET fp = minhash(body)" >/dev/null; sql -c "VACUUM ANALYZE tb_docs" >/dev/null; t1=$(now)
fp_s=$(secs "$t0" "$t1")
t0=$(now); sql -c "CREATE INDEX tb_fp ON tb_docs USING simhash (fp)" >/dev/null; t1=$(now)
sh_s=$(secs "$t0" "$t1")
t0=$(now); sql -c "CREATE INDEX tb_trgm ON tb_docs USING gin (body gin_trgm_ops)" >/dev/null; t1=$(now)
gin_s=$(secs "$t0" "$t1")
sql -c "VACUUM ANALYZE tb_docs" >/dev/null
sh_mb=$(sql -c "SELECT round(pg_relation_size('tb_fp') / 1e6, 1)")
gin_mb=$(sql -c "SELECT round(pg_relation_size('tb_trgm') / 1e6, 1)")
printf '   %-52s %8.2f s\n' "simhash: UPDATE tb_docs SET fp = minhash(body) (+ VACUUM)" "$fp_s"
printf '   %-52s %8.2f s  %7s MB\n' "simhash: CREATE INDEX USING simhash (fp)" "$sh_s" "$sh_mb"
printf '   %-52s %8.2f s  %7s MB\n' "pg_trgm: CREATE INDEX USING gin (body gin_trgm_ops)" "$gin_s" "$gin_mb"
echo "   ratio pg_trgm / simhash: build $(ratio "$gin_s" "$sh_s")x (against fingerprints + index: $(ratio "$gin_s" "$(echo "$fp_s + $sh_s" | bc)")x), size $(ratio "$gin_mb" "$sh_mb")x"

echo
echo "== deduplicating the table"
t0=$(now)
out=$(PGOPTIONS="$PGOPTIONS -c simhash.progress_interval=0 -c client_min_messages=notice" psql -X -q -v ON_ERROR_STOP=1 -v table=tb_docs \
	-v fp_column=fp -v radius=12 -v verify_column=body -v verify_threshold=0.8 -v action=report \
	-v report_rows=0 -f "$ROOT/examples/dedup.sql" 2>&1 >/dev/null)
t1=$(now)
dd_s=$(secs "$t0" "$t1")
printf '   %-52s %8.2f s\n' "simhash: examples/dedup.sql, radius 12, verified 0.8" "$dd_s"
echo "     its summary: $(echo "$out" | sed -n 's/.*NOTICE: *//p')"
t0=$(now)
pairs=$(sql -c "SET pg_trgm.similarity_threshold = 0.5" \
	-c "SELECT count(*) FROM (SELECT a.id, b.id FROM tb_docs a JOIN tb_docs b ON a.body % b.body AND a.id < b.id WHERE a.id <= $PROBES) s")
t1=$(now)
sj_s=$(secs "$t0" "$t1")
sj_all=$(echo "$sj_s * $ROWS / $PROBES" | bc -l)
printf '   %-52s %8.2f s   %s pairs with a.id <= %s\n' "pg_trgm: self-join, % at 0.5, first $PROBES rows as a" "$sj_s" "$pairs" "$PROBES"
printf '   %-52s %8.0f s   (%.1f h; linear in the rows probed)\n' "pg_trgm: self-join, all $ROWS rows, extrapolated" "$sj_all" "$(echo "$sj_all / 3600" | bc -l)"
echo "   the self-join's plan: $(sql -c "SET pg_trgm.similarity_threshold = 0.5" -c "EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM tb_docs a JOIN tb_docs b ON a.body % b.body AND a.id < b.id WHERE a.id <= $PROBES" | sed 's/^ *//' | tr '\n' ';' | sed 's/;/; /g')"
echo "   ratio pg_trgm / simhash: measured $PROBES probes against all $ROWS rows $(ratio "$sj_s" "$dd_s")x; all rows (extrapolated) $(ratio "$sj_all" "$dd_s")x"

echo
echo "== lookup by text (200 queries: 100 copies, 100 originals)"
"${PSQL[@]}" <<SQL
SET pg_trgm.similarity_threshold = 0.5;
CREATE TEMP TABLE tb_q AS
  (SELECT body FROM tb_docs WHERE id > ($ROWS * 9) / 10 ORDER BY hashint8(id) LIMIT 100)
  UNION ALL (SELECT body FROM tb_docs WHERE id <= ($ROWS * 9) / 10 ORDER BY hashint8(id) LIMIT 100);
CREATE TEMP TABLE tb_t (kind text, ms float8, found bigint);
-- without this the planner scans pg_trgm's table sequentially (about 1 s a query at 5,000 rows)
SET enable_seqscan = off;
CREATE FUNCTION pg_temp.plan(q text, p text) RETURNS SETOF text LANGUAGE plpgsql AS \$\$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q USING p LOOP RETURN NEXT '   ' || left(l, 100); END LOOP;
END \$\$;
\pset tuples_only on
\echo '   plans (enable_seqscan = off for both), the first query:'
SELECT pg_temp.plan('SELECT id FROM tb_docs WHERE fp <~> minhash(\$1) <= 12 AND simhash_jaccard(body, \$1, ''words'', 5) >= 0.8', body) FROM (SELECT body FROM tb_q LIMIT 1) q;
SELECT pg_temp.plan('SELECT id FROM tb_docs WHERE body % \$1', body) FROM (SELECT body FROM tb_q LIMIT 1) q;
\pset tuples_only off
DO \$\$
DECLARE
  q text;
  t0 timestamptz;
  n bigint;
BEGIN
  FOR q IN SELECT body FROM tb_q LOOP
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM tb_docs WHERE fp <~> minhash(\$1) <= 12
               AND simhash_jaccard(body, \$1, ''words'', 5) >= 0.8' INTO n USING q;
    INSERT INTO tb_t VALUES ('simhash', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM tb_docs WHERE body % \$1' INTO n USING q;
    INSERT INTO tb_t VALUES ('pg_trgm', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
  END LOOP;
END
\$\$;
SELECT kind, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS median_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p95_ms,
       round(avg(found), 2) AS rows_found_avg, max(found) AS rows_found_max
FROM tb_t GROUP BY kind ORDER BY kind DESC;
SELECT 'ratio pg_trgm / simhash, median: ' || round((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM tb_t WHERE kind = 'pg_trgm')::numeric
       / nullif((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM tb_t WHERE kind = 'simhash'), 0)::numeric) || 'x' AS ratio;
SQL
echo
echo "   load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
