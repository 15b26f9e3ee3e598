# The index's size under load stays within 1.5 times a fresh build of the
# same rows (the size check of bench/soak.sh, at CI size).
#
# A merge writes its new run beside the runs it replaces, which stay until no
# snapshot can reach them. Until 0.2.0, VACUUM rewrote every table of the
# index at once, so with any snapshot open across it the file had to hold the
# index twice; it then stayed at twice the size of a fresh build. VACUUM now
# folds one table at a time, and only while the pages still waiting to be
# recycled and the next fold fit in a third of the index.
#
# Each round: session A opens a snapshot and reads through the index; session
# B inserts rows (inserts merge their pending lists inline) and deletes some;
# VACUUM runs while A's snapshot is open; then A ends. After the rounds the
# index is compared with a fresh build on the same rows, page for page, and
# every answer with a sequential scan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('size');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
shared_buffers = 64MB
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 60000);
CREATE INDEX t_fp ON t USING simhash (fp) WITH (pending_limit = 1024);
});

my $scan_only = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $sa = $node->background_psql('postgres', on_error_stop => 0);
$sa->query_safe($scan_only);

my $max_pages = 0;
my $max_ratio = 0;
for my $round (1 .. 16)
{
	$sa->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
	$sa->query_safe(
		"SELECT count(*) FROM t WHERE fp <@ simhash_ball('0123456789abcdef', 12)");
	$node->safe_psql(
		'postgres', qq{
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 4000);
DELETE FROM t WHERE id % 97 = $round;
});
	$node->safe_psql('postgres', 'VACUUM t');
	$sa->query_safe('COMMIT');
	$node->safe_psql('postgres', 'SELECT txid_current()');
	my ($pages, $entries) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT pg_relation_size('t_fp') / 8192, entries + pending_entries FROM simhash_index_info('t_fp')"
	  );
	# what the entries need: 14 bytes each, m = 4 tables, about 580 to a leaf
	my $need = 4 * $entries / 580;
	$max_pages = $pages if $pages > $max_pages;
	$max_ratio = $pages / $need if $pages / $need > $max_ratio;
	note(sprintf('round %d: %d pages for %d entries (%.2f x their leaves); %s', $round, $pages,
		$entries, $pages / $need,
		$node->safe_psql('postgres',
			"SELECT format('runs %s %s, retired %s', runs, run_tables, retired) FROM simhash_index_info('t_fp')"
		)));
}
$sa->quit;

# a fresh build of the same rows
$node->safe_psql('postgres', 'CREATE INDEX t_fp_fresh ON t USING simhash (fp) WITH (pending_limit = 1024)');
my ($size, $fresh) = split /\|/,
  $node->safe_psql('postgres',
	"SELECT pg_relation_size('t_fp') / 8192, pg_relation_size('t_fp_fresh') / 8192");
my $ratio = $size / $fresh;
note(sprintf('index %d pages, fresh build %d pages: %.3f x; largest during the rounds %d pages (%.2f x the leaves its entries need)',
	$size, $fresh, $ratio, $max_pages, $max_ratio));
cmp_ok($ratio, '<=', 1.5, sprintf('the index stays within 1.5 x a fresh build (%.3f x)', $ratio));
cmp_ok($max_pages / $fresh, '<=', 1.5,
	sprintf('and did throughout the rounds (largest %.3f x the final fresh build)', $max_pages / $fresh));
$node->safe_psql('postgres', 'DROP INDEX t_fp_fresh');

# exact all along: the index answers as a sequential scan
my $bad = 0;
for my $r (0, 3, 8, 16)
{
	for my $k (1 .. 5)
	{
		my $sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM t, "
		  . "(SELECT fp AS q FROM t ORDER BY id OFFSET " . ($k * 1777) . " LIMIT 1) s "
		  . "WHERE fp <~> q <= $r";
		$bad++
		  if $node->safe_psql('postgres', "$scan_only $sql") ne
		  $node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
	}
}
is($bad, 0, 'index scans equal sequential scans at radii 0, 3, 8 and 16');
like(
	$node->safe_psql('postgres',
		"$scan_only EXPLAIN (COSTS OFF) SELECT id FROM t, (SELECT fp AS q FROM t ORDER BY id LIMIT 1) s WHERE fp <~> q <= 8"),
	qr/Index (Only )?Scan using|Bitmap Index Scan on/,
	'the compared scans are index scans');
is( $node->safe_psql('postgres',
		"SELECT heap_tuples_checked = (SELECT count(*) FROM t) FROM simhash_index_verify('t_fp')"),
	't',
	'simhash_index_verify passes');

$node->stop;
done_testing();
