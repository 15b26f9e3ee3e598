#!/usr/bin/env bash
# dedup_verify_bench.sh: what verification adds: to the removal scripts (verify_column), and to
# a search by text through the index (simhash_jaccard after the radius condition).
#
# Usage: bench/dedup_verify_bench.sh [ROWS]     (default 1000000)
#
# Connection: the usual libpq variables (PGHOST, PGPORT, PGUSER, PGDATABASE); the database needs
# the simhash extension (0.3.0 or later) installed on the server. Creates, and drops at exit, the
# table dvb_docs.
#
# Data: ROWS documents of 150 words (about 1 kB) drawn from 5,000 pseudo-words; 10% of them are
# copies of another document with 3 of the 150 words replaced (Jaccard of word pairs about
# 0.92, of word 5-grams about 0.85), fingerprinted with minhash(body). Then examples/dedup.sql in
# report mode at radius 8 (DVB_RADIUS; report_rows=0: the summary line, not the list of every row),
# without and with verify_column=body (threshold 0.5: the groups formed on verified pairs), each
# timed end to end by psql, and the candidates and rejections the summary line reports; the
# same for examples/dedup_pairs.sql unless DVB_PAIRS=0; then, as the baseline of the same run,
# what verification cost before the groups were formed on verified pairs: the unverified groups'
# every candidate row's text against its kept row's (timed by psql; the script with
# verification then took the unverified script's time plus about this). Verification grows
# with the documents' length (simhash_jaccard is linear in both texts). Last, the search: a simhash index on the sketches, and 500 queries by text (250 copies,
# 250 originals, each a row's body passed as a parameter), each
#   SELECT id FROM dvb_docs WHERE fp <~> minhash($1) <= 12                    (unverified)
#   ... AND simhash_jaccard(body, $1, 'words', 5) >= 0.5                      (verified)
# timed one by one in the server (clock_timestamp around each, the sketch of $1 included):
# median and 95th percentile in ms, and the rows found.
#
# Settings (environment): DVB_RADIUS=12 runs the scripts at radius 12 (the operating point README
# recommends for minhash with verification; the baseline's grouping stays at 8); DVB_PAIRS=0 skips dedup_pairs.sql; DVB_SCRIPTS=0 skips the removal
# scripts and the verification baseline (the search alone), DVB_SCRIPTS=pairs runs only dedup_pairs.sql
# (the removal path that scales), without and then with verification, so that finding the candidates
# and verifying them are timed apart, and the search; DVB_SEARCH=0 skips the search; DVB_BLOCKS=m gives dedup_pairs.sql its
# blocks (default: the script's own choice); DVB_KEEP_TABLE=1 keeps dvb_docs at exit; DVB_INDEX_WITH="blocks = 5" gives the
# search's index storage parameters; session settings (random_page_cost, ...) go in PGOPTIONS.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROWS=${1:-1000000}
RADIUS=${DVB_RADIUS:-8}
[[ "$RADIUS" =~ ^[0-9]+$ ]] && [ "$RADIUS" -le 64 ] || { echo "DVB_RADIUS must be 0..64" >&2; exit 2; }
[[ "$ROWS" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROWS]" >&2; exit 2; }
PSQL=(psql -X -q -v ON_ERROR_STOP=1)

cleanup() { [ "${DVB_KEEP_TABLE:-0}" = 1 ] || "${PSQL[@]}" -c "DROP TABLE IF EXISTS dvb_docs" >/dev/null 2>&1 || true; }
trap cleanup EXIT

echo "== dedup_verify_bench: $ROWS rows; server: $("${PSQL[@]}" -tAc "SELECT version()" | cut -d, -f1)"
echo "   machine: $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s.%N)
"${PSQL[@]}" <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP TABLE IF EXISTS dvb_docs;
CREATE UNLOGGED TABLE dvb_docs (id bigint PRIMARY KEY, body text NOT NULL, fp simhash);
-- word k of the vocabulary (k < 5000): the first 3 to 8 hex digits of md5(k)
-- originals: ids 1 .. 0.9 ROWS; copies: the rest, each of original (id % originals) + 1
INSERT INTO dvb_docs (id, body)
SELECT i, (SELECT string_agg(substr(md5(k::text), 1, 3 + k % 6), ' ' ORDER BY j)
           FROM generate_series(1, 150) j,
                LATERAL (SELECT ((hashint8extended(i::bigint * 1000 + j, 1) & 65535) % 5000)::int AS k) kk)
FROM generate_series(1, ($ROWS * 9) / 10) i;
INSERT INTO dvb_docs (id, body)
SELECT i, (SELECT array_to_string(ARRAY(
             SELECT CASE WHEN j IN (20, 70, 120) THEN 'edit' || (i % 97) ELSE w END
             FROM unnest(string_to_array(o.body, ' ')) WITH ORDINALITY u(w, j)), ' '))
FROM generate_series(($ROWS * 9) / 10 + 1, $ROWS) i
JOIN dvb_docs o ON o.id = (i % (($ROWS * 9) / 10)) + 1;
UPDATE dvb_docs SET fp = minhash(body);
VACUUM ANALYZE dvb_docs;
SQL
t1=$(date +%s.%N)
printf '   data: %s rows, %s MB of text, built and fingerprinted in %.0f s\n' "$ROWS" \
	"$("${PSQL[@]}" -tAc "SELECT round(sum(octet_length(body)) / 1e6) FROM dvb_docs")" "$(echo "$t1 - $t0" | bc)"

run() {	# label, script, extra psql variables...
	local label=$1 script=$2 out t0 t1
	shift 2
	t0=$(date +%s.%N)
	out=$(PGOPTIONS="${PGOPTIONS:-} -c simhash.progress_interval=0 -c maintenance_work_mem=3GB" \
		psql -X -q -v table=dvb_docs -v radius="$RADIUS" -v action=report -v report_rows=0 "$@" -f "$ROOT/examples/$script" 2>&1 >/dev/null)
	t1=$(date +%s.%N)
	printf '%-28s %8.1f s (%.1f us a row)   %s\n' "$label" "$(echo "$t1 - $t0" | bc)" "$(echo "($t1 - $t0) * 1000000 / $ROWS" | bc -l)" \
		"$(echo "$out" | grep -o 'holding [0-9]* duplicates\?\|[0-9]* candidates\? below it left alone\|[0-9]* blocks\? ([0-9]* keys\? each), [0-9]* pairs\?' | tr '\n' ' ')"
}
SCRIPTS=${DVB_SCRIPTS:-1}
if [ "$SCRIPTS" = 1 ]; then
run "dedup.sql" dedup.sql
run "dedup.sql, verify_column" dedup.sql -v verify_column=body -v verify_threshold=0.5
fi
if { [ "$SCRIPTS" = 1 ] && [ "${DVB_PAIRS:-1}" != 0 ]; } || [ "$SCRIPTS" = pairs ]; then
	run "dedup_pairs.sql" dedup_pairs.sql ${DVB_BLOCKS:+-v blocks="$DVB_BLOCKS"}
fi
if [ "$SCRIPTS" = pairs ] || { [ "$SCRIPTS" = 1 ] && [ "${DVB_PAIRS:-1}" != 0 ]; }; then
	run "dedup_pairs.sql, verify_column" dedup_pairs.sql -v verify_column=body -v verify_threshold=0.5 ${DVB_BLOCKS:+-v blocks="$DVB_BLOCKS"}
fi
# the baseline: verification after grouping, as the scripts did it before: each candidate row of
# the unverified groups against its kept row
[ "$SCRIPTS" = 1 ] && echo "verification after grouping (the scripts before groups formed on verified pairs), alone:"
[ "$SCRIPTS" = 1 ] && "${PSQL[@]}" <<'SQL'
SET simhash.progress_interval = 0;
SET maintenance_work_mem = '1GB';
CREATE TEMP TABLE dvb_cand AS
  SELECT id, rep FROM (SELECT id, simhash_leader(id, fp, 8) OVER (ORDER BY id) AS rep FROM dvb_docs) g
  WHERE rep <> id;
\timing on
SELECT count(*) AS candidates, count(*) FILTER (WHERE simhash_jaccard(a.body, b.body, 'words', 5) >= 0.5) AS verified
FROM dvb_cand c JOIN dvb_docs a ON a.id = c.id JOIN dvb_docs b ON b.id = c.rep;
SQL

# the search by text, through the index, without and with verification
[ "${DVB_SEARCH:-1}" = 0 ] && exit 0
"${PSQL[@]}" <<SQL
SET client_min_messages = warning;
CREATE INDEX dvb_fp ON dvb_docs USING simhash (fp)${DVB_INDEX_WITH:+ WITH ($DVB_INDEX_WITH)};
VACUUM ANALYZE dvb_docs;
CREATE TEMP TABLE dvb_q AS
  (SELECT body FROM dvb_docs WHERE id > ($ROWS * 9) / 10 ORDER BY hashint8(id) LIMIT 250)
  UNION ALL (SELECT body FROM dvb_docs WHERE id <= ($ROWS * 9) / 10 ORDER BY hashint8(id) LIMIT 250);
CREATE TEMP TABLE dvb_t (kind text, ms float8, found bigint);
DO \$\$
DECLARE
  q text;
  t0 timestamptz;
  n bigint;
BEGIN
  FOR q IN SELECT body FROM dvb_q LOOP
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM dvb_docs WHERE fp <~> minhash(\$1) <= 12' INTO n USING q;
    INSERT INTO dvb_t VALUES ('unverified', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
    t0 := clock_timestamp();
    EXECUTE 'SELECT count(*) FROM dvb_docs WHERE fp <~> minhash(\$1) <= 12
               AND simhash_jaccard(body, \$1, ''words'', 5) >= 0.5' INTO n USING q;
    INSERT INTO dvb_t VALUES ('verified', extract(epoch FROM clock_timestamp() - t0) * 1000, n);
  END LOOP;
END
\$\$;
\echo search by text, radius 12 ($ROWS rows, 500 queries; index ${DVB_INDEX_WITH:-with default storage parameters}; random_page_cost $("${PSQL[@]}" -tAc "SHOW random_page_cost")):
SELECT kind, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS median_ms,
       round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p95_ms,
       round(avg(found), 2) AS rows_found_avg, max(found) AS rows_found_max
FROM dvb_t GROUP BY kind ORDER BY kind DESC;
SQL
