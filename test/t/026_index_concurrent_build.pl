# CREATE INDEX CONCURRENTLY and REINDEX INDEX CONCURRENTLY of a simhash
# index while inserts, deletes and merges go on (src/mih/README, "CREATE
# INDEX CONCURRENTLY and REINDEX CONCURRENTLY").
#
# Both build the index from a snapshot, let inserts into it, then run
# validate_index: our bulk delete is called with a callback that collects
# every TID it is asked about, and every visible row whose TID was not
# collected is inserted again. Bulk delete must therefore present every
# entry once at least, wherever it is meanwhile: in a run's first table, in
# a run a merge wrote during its pass, on the pending list. An entry it
# forgot would come back as a second entry for its row (an index scan then
# returns the row twice); an entry lost by a merge during the build would
# leave its row unfound. With pending_limit = 64 the inserts flush and merge
# all through both statements. Afterwards, with the workload stopped, every
# radius query through the index (the plan is checked) must return exactly
# the rows, with their multiplicity, that a sequential scan returns, a
# radius-64 scan must count every row with a fingerprint once, and
# simhash_index_verify must pass.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $t_start = time;

my $node = PostgreSQL::Test::Cluster->new('cic');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
log_statement = none
max_parallel_maintenance_workers = 0
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 30000);
-- copies of fingerprints, so that radius queries find several rows
INSERT INTO t (fp) SELECT fp FROM t WHERE id % 10 = 0;
INSERT INTO t (fp) SELECT NULL FROM generate_series(1, 100);
});

# The workload, until stopped: inserts (new fingerprints, copies, NULLs) and
# deletes, four sessions. The inserts flush the small pending list inline.
my $dir = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$dir/insert.sql", q{
\set a random(1, 30000)
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 8);
INSERT INTO t (fp) SELECT fp FROM t WHERE id = :a;
INSERT INTO t (fp) SELECT NULL WHERE :a % 50 = 0;
});
PostgreSQL::Test::Utils::append_to_file("$dir/delete.sql", q{
\set a random(1, 40000)
DELETE FROM t WHERE id >= :a AND id < :a + 3;
});
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '4', '-j', '2', '-T', '120',
		'-h', $node->host, '-p', $node->port,
		'-f', "$dir/insert.sql\@3", '-f', "$dir/delete.sql\@1", 'postgres'
	],
	'<', \undef, '>', \$bench_out, '2>', \$bench_err,
	IPC::Run::timeout(120 + $PostgreSQL::Test::Utils::timeout_default));

# the highest id so far: rows above it were inserted after this point
sub max_id
{
	return $node->safe_psql('postgres', 'SELECT max(id) FROM t');
}

# let the workload start
ok($node->poll_query_until('postgres', 'SELECT max(id) > 33100 FROM t'),
	'the workload inserts');

my $before_cic = max_id();
$node->safe_psql('postgres',
	'CREATE INDEX CONCURRENTLY t_fp ON t USING simhash (fp) WITH (pending_limit = 64)');
my $after_cic = max_id();
cmp_ok($after_cic, '>', $before_cic, 'rows went in during CREATE INDEX CONCURRENTLY');
is( $node->safe_psql(
		'postgres', q{SELECT indisvalid AND indisready FROM pg_index WHERE indexrelid = 't_fp'::regclass}),
	't',
	'the concurrently built index is valid');

# bulk delete and merges of the built index (folds too), the workload on
$node->safe_psql('postgres', 'VACUUM t');

my $before_reindex = max_id();
$node->safe_psql('postgres', 'REINDEX INDEX CONCURRENTLY t_fp');
my $after_reindex = max_id();
cmp_ok($after_reindex, '>', $before_reindex, 'rows went in during REINDEX INDEX CONCURRENTLY');

# the workload still ran after both statements: they ran wholly inside it
ok($node->poll_query_until('postgres', "SELECT max(id) > $after_reindex + 100 FROM t"),
	'the workload went on after REINDEX');
# (pgbench stopped by SIGINT prints no summary: the ids above show its work)
$bench->signal('INT');
$bench->finish;
unlike($bench_err, qr/ERROR/, 'the workload raised no error') or diag($bench_err);

my $info = $node->safe_psql('postgres',
	q{SELECT runs, entries, pending_entries FROM simhash_index_info('t_fp')});
note("after REINDEX CONCURRENTLY and the workload: runs|entries|pending = $info");

# Radius queries around 300 rows' fingerprints, some with bits flipped:
# the index's rows with their multiplicity against a sequential scan's.
$node->safe_psql(
	'postgres', q{
CREATE TABLE q AS
  SELECT row_number() OVER () AS qid, fp, r
  FROM (SELECT fp FROM t WHERE fp IS NOT NULL ORDER BY md5(id::text) LIMIT 300) s,
       (VALUES (0), (3), (6)) v(r);
ANALYZE t, q;
});
my $plan = $node->safe_psql(
	'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT q.qid, t.id FROM q JOIN t ON t.fp <~> q.fp <= q.r;
});
like($plan, qr/Index Scan using t_fp on t/, 'the radius queries use the index')
  or diag($plan);
my $cmp = $node->safe_psql(
	'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TABLE by_index AS SELECT q.qid, t.id FROM q JOIN t ON t.fp <~> q.fp <= q.r;
RESET enable_seqscan; RESET enable_bitmapscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
CREATE TABLE by_seq AS SELECT q.qid, t.id FROM q JOIN t ON t.fp <~> q.fp <= q.r;
SELECT (SELECT count(*) FROM by_index), (SELECT count(*) FROM by_seq),
       (SELECT count(*) FROM (TABLE by_index EXCEPT ALL TABLE by_seq) a),
       (SELECT count(*) FROM (TABLE by_seq EXCEPT ALL TABLE by_index) b);
});
my ($n_index, $n_seq, $extra, $missing) = split /\|/, $cmp;
cmp_ok($n_seq, '>=', 900, "every query finds at least its own row ($n_seq pairs)");
is($extra, 0, 'no row comes back through the index more often than from the table');
is($missing, 0, 'every row the table matches comes back through the index');

# every row with a fingerprint once, by a radius-64 scan and an ordered one
my $all = $node->safe_psql(
	'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM t WHERE fp IS NOT NULL),
       (SELECT count(*) FROM t WHERE fp <~> '0000000000000000' <= 64),
       (SELECT count(*) FROM t), (SELECT count(*) FROM (SELECT id FROM t ORDER BY fp <-> '0000000000000000') s);
});
my ($rows, $radius, $allrows, $ordered) = split /\|/, $all;
is($radius, $rows, "a radius-64 index scan counts every row with a fingerprint once ($rows)");
is($ordered, $allrows, "an ordered index scan returns every row once ($allrows)");

my ($out, $err) = ('', '');
$node->psql('postgres', q{SELECT heap_tuples_checked FROM simhash_index_verify('t_fp')},
	stdout => \$out, stderr => \$err);
is($err, '', 'simhash_index_verify passes');
is($out, $allrows, 'verify checked every row of the table');

$node->stop;
note(sprintf('026 took %.1f s', time - $t_start));
done_testing();
