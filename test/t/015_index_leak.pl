# No page of the index is lost for good.
#
# Recycling first removes entries from the retired list (WAL-logged), then
# frees the pages they name: an error or a crash in between leaves pages
# that nothing links, run pages and pending pages alike. VACUUM must find
# and free them. PostgreSQL 15 has no injection points, so the test stops
# recycling at exactly that step with simhash.test_fault, in an INSERT (a
# merge recycles first) and in VACUUM, each followed by a crash, and stops a
# merge midway through writing its new run; then, with nothing retired
# left, every page of simhash_index_pages() is reachable from the metapage
# or free. The answers equal a sequential scan throughout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('leak');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
wal_consistency_checking = 'generic'
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 3000);
CREATE INDEX t_fp ON t USING simhash (fp) WITH (pending_limit = 64);
CREATE TABLE walflush (x int);
});

# merges in separate transactions: each retires runs and pending pages

# VACUUM, with a transaction ID used before each, until nothing is retired
# (at most a round per table and a few more)
sub settle
{
	my ($tbl, $idx) = @_;
	for (1 .. 20)
	{
		$node->safe_psql('postgres', 'SELECT txid_current()');
		$node->safe_psql('postgres', "VACUUM $tbl");
		last
		  if $node->safe_psql('postgres', "SELECT retired FROM simhash_index_info('$idx')") == 0;
	}
}

sub merges
{
	for (1 .. 6)
	{
		$node->safe_psql('postgres', 'INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 150)');
	}
}

sub info
{
	return $node->safe_psql('postgres',
		"SELECT runs || ' runs, ' || pending_pages || ' pending pages, ' || retired || ' retired' "
		  . "FROM simhash_index_info('t_fp')");
}

sub pages
{
	return $node->safe_psql('postgres',
		"SELECT string_agg(type || ' ' || n, ', ' ORDER BY type) FROM "
		  . "(SELECT type, count(*) n FROM simhash_index_pages('t_fp') GROUP BY type) s");
}

my $bad = 0;
sub compare
{
	my ($label) = @_;
	for my $r (0, 4, 10)
	{
		my $sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM t, "
		  . "(SELECT fp AS q FROM t ORDER BY id OFFSET 1234 LIMIT 1) s WHERE fp <~> q <= $r";
		my $idx = $node->safe_psql('postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off; $sql");
		my $seq = $node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
		if ($idx ne $seq)
		{
			$bad++;
			diag("$label: radius $r: the index differs from a sequential scan");
		}
	}
}

# 1. an INSERT whose merge recycles fails between the list and the frees
merges();
note('before the fault: ' . info() . '; pages: ' . pages());
my ($rc, $out, $err) = $node->psql('postgres',
	"SET simhash.test_fault = recycle_before_free; "
	  . "INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 150)");
like($err, qr/simhash.test_fault: recycling stopped before freeing/,
	'an insert\'s recycling stopped between the retired list and the frees');
compare('after the failed insert');
# a commit that wrote WAL flushes it, the list's change included, before the
# crash (a transaction that only took an ID commits without a flush)
$node->safe_psql('postgres', 'INSERT INTO walflush VALUES (1)');
note('after the first fault: ' . info() . '; pages: ' . pages());
$node->stop('immediate');
$node->start;
compare('after the crash');

# 2. the same in VACUUM's own recycling, then a crash
merges();
$node->safe_psql('postgres', 'SELECT txid_current()');
($rc, $out, $err) = $node->psql('postgres',
	"SET simhash.test_fault = recycle_before_free; VACUUM t");
like($err, qr/simhash.test_fault: recycling stopped before freeing/,
	'VACUUM\'s recycling stopped between the retired list and the frees');
$node->safe_psql('postgres', 'INSERT INTO walflush VALUES (2)');
$node->stop('immediate');
$node->start;
compare('after the second crash');
note('after the faults: ' . info() . '; pages: ' . pages());

# 3. a merge stops midway, after writing four pages of its new run (and
# reserving the next one)
($rc, $out, $err) = $node->psql('postgres',
	"SET simhash.test_fault = merge_midway; "
	  . "INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 150)");
like($err, qr/simhash.test_fault: merge stopped after writing 4 pages/,
	'a merge stopped midway through writing its run');
compare('after the merge stopped midway');

# 4. VACUUM, with a transaction ID used before each (recycling needs the
# horizon to pass what was retired), until nothing is retired: each VACUUM
# folds one table and leaves what it replaced retired, so this takes a round
# per table and one more
settle('t', 't_fp');
note('after VACUUM: ' . info() . '; pages: ' . pages());
my ($retired, $runs, $pending_pages, $pending_seen, $headers_seen, $list_seen) = split /\|/,
  $node->safe_psql('postgres', q{
SELECT i.retired, i.runs, i.pending_pages,
       count(*) FILTER (WHERE p.type = 'pending'),
       count(*) FILTER (WHERE p.type = 'run header'),
       count(*) FILTER (WHERE p.type = 'retired list')
FROM simhash_index_info('t_fp') i, simhash_index_pages('t_fp') p
GROUP BY i.retired, i.runs, i.pending_pages});
is($retired, 0, 'nothing is left retired');
is($pending_seen, $pending_pages,
	"every pending page is on the pending list ($pending_pages), none leaked");
is($headers_seen, $runs, "every run header is a run's ($runs)");
is($list_seen, 0, 'no page of the retired list is left');
# every leaf entry belongs to a run on the list: each table it serves holds it
my ($leaf_items, $want_items) = split /\|/, $node->safe_psql('postgres', q{
SELECT (SELECT sum(items) FROM simhash_index_pages('t_fp') WHERE type = 'leaf'),
       (SELECT sum(e * cardinality(string_to_array(t, ','))) FROM simhash_index_info('t_fp') i,
               unnest(i.run_entries, i.run_tables) u(e, t))});
is($leaf_items, $want_items, "no leaf outside the runs ($want_items entries in all tables)");
compare('after VACUUM');
is($bad, 0, 'index scans equal sequential scans throughout');
is( $node->safe_psql('postgres',
		"SELECT heap_tuples_checked = (SELECT count(*) FROM t) FROM simhash_index_verify('t_fp')"),
	't',
	'simhash_index_verify passes');

# 5. a build beyond maintenance_work_mem: the same index
# as one built in memory, page for page give or take a few, and the same
# answers
$node->safe_psql('postgres', q{
CREATE TABLE b (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO b (fp) SELECT rfp() FROM generate_series(1, 500000);
});
my %size;
my $diff = 0;
for my $mem ('1GB', '1MB')
{
	$node->safe_psql('postgres', "SET maintenance_work_mem = '$mem'; "
		  . "CREATE INDEX b_fp ON b USING simhash (fp)");
	$size{$mem} = $node->safe_psql('postgres',
		"SELECT pg_relation_size('b_fp') / current_setting('block_size')::int");
	is( $node->safe_psql('postgres',
			"SELECT runs || ' ' || heap_tuples_checked FROM simhash_index_verify('b_fp')"),
		'1 500000', "built with maintenance_work_mem = $mem: one run with every row, verified");
	for my $q (1 .. 6)
	{
		my $sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM b, "
		  . "(SELECT fp AS q FROM b WHERE id = " . ($q * 70001) . ") s WHERE fp <~> q <= 12";
		my $seq = $node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
		my $idx = $node->safe_psql('postgres',
			"SET enable_seqscan = off; SET enable_bitmapscan = off; $sql");
		$diff++ if $idx ne $seq;
	}
	$node->safe_psql('postgres', 'DROP INDEX b_fp');
}
note("index pages: $size{'1GB'} built in memory, $size{'1MB'} with 1MB");
cmp_ok(abs($size{'1MB'} - $size{'1GB'}), '<=', 4,
	'a build beyond maintenance_work_mem is no larger than one in memory');
is($diff, 0, 'both builds answer as a sequential scan does (radius 12)');

# 6. an index whose metapage was written by extension 0.1.0 (without the
# retired list's stamps and chain): the first merge brings it up to date,
# and it stays exact through merges, recycling and VACUUM
$node->safe_psql('postgres', q{
CREATE TABLE o (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO o (fp) SELECT rfp() FROM generate_series(1, 2000);
SET simhash.test_fault = old_metapage;
CREATE INDEX o_fp ON o USING simhash (fp) WITH (pending_limit = 64);
});
for (1 .. 5)
{
	$node->safe_psql('postgres', 'INSERT INTO o (fp) SELECT rfp() FROM generate_series(1, 300)');
}
$node->safe_psql('postgres', 'DELETE FROM o WHERE id % 5 = 0');
$node->safe_psql('postgres', 'INSERT INTO walflush VALUES (3)');
$node->stop('immediate');
$node->start;
settle('o', 'o_fp');
my $odiff = 0;
for my $r (0, 5, 12)
{
	my $sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM o, "
	  . "(SELECT fp AS q FROM o ORDER BY id OFFSET 777 LIMIT 1) s WHERE fp <~> q <= $r";
	$odiff++ if $node->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $sql")
	  ne $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
}
is($odiff, 0, 'an index with a 0.1.0 metapage answers as a sequential scan after merges, a crash and VACUUM');
is( $node->safe_psql('postgres',
		"SELECT v.heap_tuples_checked = (SELECT count(fp) FROM o) AND i.retired = 0 "
		  . "FROM simhash_index_verify('o_fp') v, simhash_index_info('o_fp') i"),
	't',
	'and it verifies, with nothing left retired');

$node->stop;
done_testing();
