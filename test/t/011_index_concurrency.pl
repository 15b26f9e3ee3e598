# Concurrency of the simhash index access method.
#
# For $SECONDS seconds, pgbench clients insert rows (random fingerprints,
# near-duplicates of existing rows, NULLs, batches that fill the pending list
# at once), update fingerprints, delete rows (by key, and near-duplicates found
# through the index), and search through plain index scans and bitmap scans,
# while a separate session runs VACUUM every second. The index has a small
# pending list (pending_limit = 256), so merges, VACUUM's rewrites and page
# recycling happen all the time under the searches.
#
# Two scripts check answers while all this goes on, each inside one
# REPEATABLE READ transaction (one snapshot for all its queries):
#   check_ball()  an index scan, a bitmap scan and a sequential scan of the
#                 same ball must return the same rows;
#   slow_scan()   a plain index scan read through a cursor with pauses (so
#                 merges retire and recycle pages under it) must return only
#                 rows inside the ball, and exactly the sequential scan's.
# Either raises an error on a difference, which fails pgbench.
#
# Required: pgbench and the VACUUM loop exit 0 with no failed transaction, the
# server log has no ERROR (nor PANIC, FATAL, assertion failure), the index's
# scans are counted in pg_stat_user_indexes; afterwards the index answers
# exactly what a sequential scan answers for 300 queries at every radius 0..12
# (plus radius 64 for a few), through index scans and bitmap scans,
# simhash_index_info() is sane and simhash_index_verify() finds the structure
# sound and every live row indexed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $t_start = time;
my $SECONDS = 40;
my $NBASE = 60_000;

my $node = PostgreSQL::Test::Cluster->new('conc');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_buffers = 64MB
# pgbench would flood the log with statements
log_statement = none
log_lock_waits = on
deadlock_timeout = 1s
max_parallel_workers_per_gather = 0
# count the calls of check_ball()
track_functions = 'all'
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
-- a uniformly random fingerprint
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
-- fp with up to k random bits flipped (a near-duplicate)
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT ($1 # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                               FROM generate_series(1, $2)), 0)::simhash) $$;

CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash, src text)
  WITH (autovacuum_enabled = off);   -- the VACUUM loop below does it
INSERT INTO t (fp, src) SELECT rfp(), 'random' FROM generate_series(1, 40000);
INSERT INTO t (fp, src) SELECT flip(fp, 1 + (id % 6)::int), 'near' FROM t WHERE id % 3 = 0;
INSERT INTO t (fp, src) SELECT rfp() & '0000ffffffffffff', 'skewed' FROM generate_series(1, 5000);
INSERT INTO t (fp, src) SELECT NULL, 'null' FROM generate_series(1, 1000);
INSERT INTO t (fp, src) SELECT '00000000c0ffee00', 'dup' FROM generate_series(1, 1000);
CREATE INDEX t_fp_idx ON t USING simhash (fp) WITH (pending_limit = 256);
ANALYZE t;

-- The answer for one ball by an index scan, a bitmap scan and a sequential
-- scan, in the caller's snapshot; an error if they differ.
CREATE FUNCTION check_ball(q simhash, r int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  a bigint; b bigint; c bigint;
  sa bigint; sb bigint; sc bigint;
BEGIN
  IF q IS NULL THEN RETURN 0; END IF;
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  EXECUTE 'SELECT count(*), coalesce(sum(id), 0) FROM t WHERE fp <@ simhash_ball($1, $2)'
    INTO a, sa USING q, r;
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  EXECUTE 'SELECT count(*), coalesce(sum(id), 0) FROM t WHERE fp <@ simhash_ball($1, $2)'
    INTO b, sb USING q, r;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  EXECUTE 'SELECT count(*), coalesce(sum(id), 0) FROM t WHERE (fp <-> $1) <= $2'
    INTO c, sc USING q, r;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  IF a <> c OR b <> c OR sa <> sc OR sb <> sc THEN
    RAISE EXCEPTION 'index and sequential scan differ for %/%: index scan % rows (sum %), bitmap scan % rows (sum %), seq scan % rows (sum %)',
      q, r, a, sa, b, sb, c, sc;
  END IF;
  RETURN c;
END $$;

-- A slow plain index scan: fetch the rows of a ball a few at a time with
-- pauses (merges, VACUUM and page recycling go on meanwhile), check every row
-- is in the ball and that the whole answer is the sequential scan's in the
-- caller's snapshot.
CREATE FUNCTION slow_scan(q simhash, r int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  cur refcursor;
  rec record;
  n bigint := 0; s bigint := 0;
  c bigint; sc bigint;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  OPEN cur FOR EXECUTE 'SELECT id, fp FROM t WHERE fp <@ simhash_ball($1, $2)' USING q, r;
  LOOP
    FETCH cur INTO rec;
    EXIT WHEN NOT FOUND;
    IF (rec.fp <-> q) > r THEN
      RAISE EXCEPTION 'slow index scan of %/% returned row % with fingerprint %', q, r, rec.id, rec.fp;
    END IF;
    n := n + 1;
    s := s + rec.id;
    IF n % 300 = 0 THEN PERFORM pg_sleep(0.005); END IF;
  END LOOP;
  CLOSE cur;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  EXECUTE 'SELECT count(*), coalesce(sum(id), 0) FROM t WHERE (fp <-> $1) <= $2' INTO c, sc USING q, r;
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  IF n <> c OR s <> sc THEN
    RAISE EXCEPTION 'slow index scan of %/%: % rows (sum %), seq scan % rows (sum %)', q, r, n, s, c, sc;
  END IF;
  RETURN n;
END $$;
});

# the plans check_ball relies on
for my $case (
	[ 'enable_bitmapscan = off', qr/Index Scan using t_fp_idx/ ],
	[ 'enable_indexscan = off', qr/Bitmap Index Scan on t_fp_idx/ ])
{
	my $plan = $node->safe_psql('postgres',
		"SET enable_seqscan = off; SET $case->[0]; "
		  . "EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE fp <@ simhash_ball('0123456789abcdef', 3)");
	like($plan, $case->[1], "with $case->[0] the search uses the index");
}
note('before: '
	  . $node->safe_psql('postgres', 'SELECT row_to_json(i) FROM simhash_index_info(\'t_fp_idx\') i'));

# ---------------------------------------------------------------------------
# the workload

# random fingerprint from two pgbench variables
my $rq = '((:hi::bigint << 32) | :lo::bigint)::simhash';
my $vars = qq{\\set hi random(-2147483648, 2147483647)
\\set lo random(0, 4294967295)
\\set base random(1, $NBASE)
\\set r random(0, 12)
};
my %scripts = (
	# five rows: random, near-duplicates of an existing row, or NULL
	'011_insert@6' => $vars . q{
\set k random(0, 9)
RESET ALL;
INSERT INTO t (fp, src)
  SELECT CASE WHEN :k < 4 THEN rfp()
              WHEN :k < 9 THEN flip((SELECT fp FROM t WHERE id = :base), 1 + :k % 4)
              ELSE NULL END, 'pgbench'
  FROM generate_series(1, 5);
},
	# a batch that fills most of the pending list at once
	'011_bulk@1' => q{
RESET ALL;
INSERT INTO t (fp, src) SELECT rfp(), 'bulk' FROM generate_series(1, 100);
},
	# radius searches through plain index scans
	'011_query_index@4' => $vars . qq{
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexscan = on;
SELECT count(*) FROM t WHERE fp <~> (SELECT fp FROM t WHERE id = :base) <= 3;
SELECT count(*) FROM t WHERE fp <~> $rq <= :r;
SELECT id FROM t WHERE fp <~> '00000000c0ffee00' <= 1 LIMIT 10;
},
	# the same through bitmap scans
	'011_query_bitmap@4' => $vars . qq{
SET enable_seqscan = off;
SET enable_bitmapscan = on;
SET enable_indexscan = off;
SELECT count(*) FROM t WHERE fp <~> (SELECT fp FROM t WHERE id = :base) <= 3;
SELECT count(*) FROM t WHERE fp <~> $rq <= :r;
},
	# index, bitmap and sequential scan agree within one snapshot
	'011_check@2' => $vars . qq{
RESET ALL;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_ball((SELECT fp FROM t WHERE id = :base), :r);
SELECT check_ball($rq, :r);
COMMIT;
},
	# a slow scan through the index while everything else goes on
	'011_slow_scan@1' => $vars . qq{
RESET ALL;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT slow_scan($rq, 24);
COMMIT;
},
	# deletes: a few rows by key, and near-duplicates found through the index
	'011_delete@2' => $vars . q{
\set a random(1, 100000)
RESET ALL;
DELETE FROM t WHERE id >= :a AND id < :a + 4;
DELETE FROM t WHERE id IN (SELECT id FROM t
  WHERE fp <~> (SELECT fp FROM t WHERE id = :base) <= 2 AND id <> :base LIMIT 2);
},
	# a new fingerprint for an existing row (a new index entry, the old one dead)
	'011_update@1' => $vars . q{
RESET ALL;
UPDATE t SET fp = flip(fp, 2) WHERE id = :base;
},);

# VACUUM every second in its own session, for as long as the workload runs
my $vacdir = PostgreSQL::Test::Utils::tempdir;
my $vacscript = "$vacdir/vacuum.sql";
PostgreSQL::Test::Utils::append_to_file($vacscript, "VACUUM t;\n\\sleep 1 s\n");
my ($vac_out, $vac_err) = ('', '');
my $vac = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '1', '-T', $SECONDS + 2,
		'-h', $node->host, '-p', $node->port, '-f', $vacscript, 'postgres'
	],
	'<', \undef, '>', \$vac_out, '2>', \$vac_err,
	IPC::Run::timeout($SECONDS + $PostgreSQL::Test::Utils::timeout_default));

my $t_bench = time;
$node->pgbench(
	"--no-vacuum --client=3 --jobs=3 --time=$SECONDS",
	0,
	[
		qr{number of transactions actually processed: [1-9]\d*},
		qr{number of failed transactions: 0 }
	],
	[qr{^$}],
	'concurrent inserts, updates, deletes and searches run without error',
	\%scripts);
note(sprintf('pgbench ran %.1f s', time - $t_bench));

$vac->finish;
is($vac->result(0), 0, 'the VACUUM loop ran without error') or diag($vac_err);
my ($nvac) = $vac_out =~ /number of transactions actually processed: (\d+)/;
cmp_ok($nvac // 0, '>=', $SECONDS / 3, 'VACUUM ran repeatedly during the workload');
note('VACUUM loop: ' . ($nvac // 'no summary') . ' runs');

# what ran (the statistics of pgbench's sessions arrive as they exit)
ok( $node->poll_query_until(
		'postgres',
		"SELECT (SELECT count(*) FROM pg_stat_user_functions WHERE calls > 10 "
		  . "AND funcname IN ('check_ball', 'slow_scan')) = 2"),
	'the snapshot checks and slow scans ran during the workload');
# index AMs count their scans for pg_stat_*_indexes (pgstat_count_index_scan)
cmp_ok($node->safe_psql('postgres',
		"SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 't_fp_idx'"),
	'>', 0, 'pg_stat_user_indexes.idx_scan counts the scans of t_fp_idx');
note('workload: '
	  . $node->safe_psql(
		'postgres', q{
SELECT format('%s check_ball() calls, %s slow_scan() calls, %s scans of t_fp_idx, %s rows inserted, %s updated, %s deleted',
  (SELECT calls FROM pg_stat_user_functions WHERE funcname = 'check_ball'),
  (SELECT calls FROM pg_stat_user_functions WHERE funcname = 'slow_scan'),
  (SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 't_fp_idx'),
  n_tup_ins, n_tup_upd, n_tup_del) FROM pg_stat_user_tables WHERE relname = 't'
}));

my $info = $node->safe_psql('postgres',
	"SELECT row_to_json(i) FROM simhash_index_info('t_fp_idx') i");
note("after the workload: $info");
note('table: '
	  . $node->safe_psql('postgres',
		"SELECT format('%s rows, %s with a fingerprint, max id %s', count(*), count(fp), max(id)) FROM t"));

# ---------------------------------------------------------------------------
# the index against a sequential scan, for many queries and radii 0..12

$node->safe_psql(
	'postgres', qq{
CREATE TABLE qs (qid int, fp simhash, sweep bool);
-- from the table, near copies of table rows, random, special
INSERT INTO qs SELECT row_number() OVER (), fp, false
  FROM (SELECT fp FROM t WHERE fp IS NOT NULL ORDER BY hashint8(id) LIMIT 100) s;
INSERT INTO qs SELECT 100 + row_number() OVER (), flip(fp, 1 + (id % 8)::int), false
  FROM (SELECT id, fp FROM t WHERE fp IS NOT NULL ORDER BY hashint8(id + 7) LIMIT 100) s;
INSERT INTO qs SELECT 200 + g, rfp(), false FROM generate_series(1, 96) g;
INSERT INTO qs VALUES (297, '00000000c0ffee00', false), (298, '00000000c0ffee01', false),
  (299, '0000000000000000', false), (300, 'ffffffffffffffff', false);
UPDATE qs SET sweep = true WHERE qid IN (1, 101, 201);
CREATE TABLE checks AS
WITH hist AS (
  SELECT q.qid, (t.fp <-> q.fp) AS d, count(*) AS n, sum(t.id) AS s1, sum(hashint8(t.id)) AS s2
  FROM qs q JOIN t ON (t.fp <-> q.fp) <= 12 GROUP BY 1, 2),
radii AS (
  SELECT qid, fp, r FROM qs, generate_series(0, 12) r
  UNION ALL
  SELECT qid, fp, 64 FROM qs WHERE sweep)
SELECT x.qid, x.fp, x.r,
       CASE WHEN x.r = 64 THEN (SELECT count(fp) FROM t) ELSE coalesce(sum(h.n), 0) END AS n,
       CASE WHEN x.r = 64 THEN (SELECT sum(id) FROM t WHERE fp IS NOT NULL) ELSE coalesce(sum(h.s1), 0) END AS s1,
       CASE WHEN x.r = 64 THEN (SELECT sum(hashint8(id)) FROM t WHERE fp IS NOT NULL) ELSE coalesce(sum(h.s2), 0) END AS s2
FROM radii x LEFT JOIN hist h ON h.qid = x.qid AND h.d <= x.r
GROUP BY 1, 2, 3;
});
my ($nchecks, $nrows) = split /\|/,
  $node->safe_psql('postgres', 'SELECT count(*), sum(n) FROM checks');

for my $mode ('index', 'bitmap')
{
	my $settings =
	  $mode eq 'bitmap'
	  ? 'SET enable_indexscan = off; SET enable_bitmapscan = on;'
	  : 'SET enable_indexscan = on; SET enable_bitmapscan = off;';
	my $lateral = q{
FROM checks c CROSS JOIN LATERAL (
  SELECT count(*) AS n, coalesce(sum(id), 0) AS s1, coalesce(sum(hashint8(id)), 0) AS s2
  FROM t WHERE fp <@ simhash_ball_any(c.fp, c.r)) x};
	my $plan = $node->safe_psql('postgres',
		"SET enable_seqscan = off; $settings EXPLAIN (COSTS OFF) SELECT x.n $lateral");
	like($plan,
		$mode eq 'bitmap' ? qr/Bitmap Index Scan on t_fp_idx/ : qr/Index Scan using t_fp_idx/,
		"final comparison [$mode]: the plan uses the index");
	unlike($plan, qr/Seq Scan on t\b|Filter:/, "final comparison [$mode]: no Filter");
	my $out = $node->safe_psql(
		'postgres', qq{
SET enable_seqscan = off; $settings
SELECT c.qid, c.fp, c.r, c.n, x.n $lateral
WHERE (x.n, x.s1, x.s2) IS DISTINCT FROM (c.n, c.s1, c.s2)
ORDER BY c.qid, c.r;
});
	my @bad = grep { length } split /\n/, $out;
	my $shown = 0;
	for my $line (@bad)
	{
		last if ++$shown > 10;
		my ($qid, $fp, $r, $sn, $in) = split /\|/, $line;
		fail("final comparison [$mode]: query $qid ($fp) radius $r: index $in rows, seq scan $sn rows");
	}
	is(scalar(@bad), 0,
		"final comparison [$mode]: index = seq scan for $nchecks (query, radius) pairs ($nrows rows)");
}

# ---------------------------------------------------------------------------
# the structure

my ($blocks, $runs, $entries, $pending, $ppages, $retired) = split /\|/,
  $node->safe_psql('postgres',
	"SELECT blocks, runs, entries, "
	  . "pending_entries, pending_pages, retired FROM simhash_index_info('t_fp_idx')");
my $live = $node->safe_psql('postgres', 'SELECT count(fp) FROM t');
is($blocks, 4, 'info: blocks as built');
ok($runs >= 1 && $runs <= 24, "info: $runs runs (a size-tiered handful)");
cmp_ok($entries + $pending, '>=', $live,
	"info: $entries run entries + $pending pending entries cover the $live live rows");
ok($pending >= 0 && $pending <= $ppages * 600,
	"info: $pending pending entries fit on $ppages pending pages");
ok($retired >= 0 && $retired <= 48, "info: $retired retired runs");

# VACUUM once more with nothing else running: dead entries marked, merged.
# Each VACUUM folds a table and leaves what that replaced retired until a
# transaction ID is used after it, so rounds of both until nothing is left
# (a round per table and one more)
for (1 .. 8)
{
	$node->safe_psql('postgres', 'SELECT txid_current()');
	$node->safe_psql('postgres', 'VACUUM t');
	last
	  if $node->safe_psql('postgres', "SELECT retired FROM simhash_index_info('t_fp_idx')") == 0;
}
note('after a last VACUUM: '
	  . $node->safe_psql('postgres', "SELECT row_to_json(i) FROM simhash_index_info('t_fp_idx') i"));
my ($ventries, $vpending, $vretired) = split /\|/,
  $node->safe_psql('postgres',
	"SELECT entries, pending_entries, retired "
	  . "FROM simhash_index_info('t_fp_idx')");
cmp_ok($ventries + $vpending, '>=', $live, 'after VACUUM: no live row lost');
is($vretired, 0, 'after VACUUM with no scan running: every retired run recycled');
my ($verify_ok, $verify_out, $verify_err) = (0, '', '');
$verify_ok = $node->psql('postgres',
	"SELECT heap_tuples_checked FROM simhash_index_verify('t_fp_idx')",
	stdout => \$verify_out, stderr => \$verify_err);
is($verify_ok, 0, 'simhash_index_verify() finds the index sound') or diag($verify_err);
is($verify_out, $node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	'simhash_index_verify() checked every live row (NULL fingerprints included)');

# no error of any kind in the server log
my $log = slurp_file($node->logfile);
my @errors = grep { /\b(ERROR|PANIC|FATAL|TRAP):/ } split /\n/, $log;
is(scalar(@errors), 0, 'no error in the server log')
  or diag(join("\n", @errors[ 0 .. ($#errors < 20 ? $#errors : 19) ]));

$node->stop;
note(sprintf('total %.1f s', time - $t_start));
done_testing();
