# A radius search either probes the index's tables or reads table 0 whole,
# whichever mih_search_cost finds cheaper; the planner prices the index scan
# by the same figures (src/mih/mih_probe.c). Here, on 200,000 random
# fingerprints, at radii 4 to 14 and random_page_cost 1.1 and 4: the scan's
# DEBUG2 line names its choice and both costs, and the choice must be the
# cheaper one; both choices must occur (the radius where the search turns to
# reading table 0 must come later with cheaper random reads, as the formula
# says); each search must count what a sequential scan counts; and the
# planner must keep the index at every one of these radii when it may choose
# a sequential scan (pricing a read of table 0 as probing once made it pick a
# sequential scan of the heap, 40 times slower).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('choice');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT ('x' || md5(g::text))::bit(64)::bigint::simhash FROM generate_series(1, 200000) g;
CREATE INDEX t_fp ON t USING simhash (fp);
VACUUM ANALYZE t;
});
# a stored row with two bits flipped: every radius finds at least that row
my $q = $node->safe_psql('postgres',
	q{SELECT (fp::int8 # 5)::simhash FROM t WHERE id = 4242});

my %first_full;
my %modes;
foreach my $rpc ('1.1', '4')
{
	foreach my $r (4, 6, 8, 10, 12, 14)
	{
		my ($rc, $out, $err) = $node->psql(
			'postgres', qq{
SET random_page_cost = $rpc;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SET client_min_messages = debug2;
SELECT count(*) FROM t WHERE fp <~> '$q' <= $r;
});
		is($rc, 0, "random_page_cost $rpc, radius $r: the index scan runs");
		my ($mode, $probe, $full) = $err =~
		  /simhash radius search, radius $r: (probes|reads table 0 whole) \(probing costs ([\d.]+), reading table 0 ([\d.]+)\)/;
		ok(defined $mode, "random_page_cost $rpc, radius $r: the scan reports its choice")
		  or diag($err);
		next unless defined $mode;
		$modes{$mode}++;
		is($mode, $probe <= $full ? 'probes' : 'reads table 0 whole',
			"random_page_cost $rpc, radius $r: it $mode, the cheaper ($probe against $full)");
		$first_full{$rpc} //= $r if $mode ne 'probes';

		my $seq = $node->safe_psql(
			'postgres', qq{
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM t WHERE fp <~> '$q' <= $r;
});
		cmp_ok($out, '>', 0, "random_page_cost $rpc, radius $r: the search finds rows");
		is($out, $seq, "random_page_cost $rpc, radius $r: the index counts what a sequential scan counts");

		my $plan = $node->safe_psql(
			'postgres', qq{
SET random_page_cost = $rpc;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE fp <~> '$q' <= $r;
});
		like($plan, qr/t_fp/, "random_page_cost $rpc, radius $r: the planner keeps the index")
		  or diag($plan);
	}
}
ok($modes{'probes'} && $modes{'reads table 0 whole'}, 'both choices occur')
  or diag(explain \%modes);
ok(defined $first_full{'4'}, 'with random_page_cost 4 a wide radius reads table 0');
cmp_ok($first_full{'1.1'} // 99, '>', $first_full{'4'} // 0,
	'cheaper random reads probe to a wider radius ('
	  . ($first_full{'1.1'} // 'none') . ' against '
	  . ($first_full{'4'} // 'none') . ')');

$node->stop;
done_testing();
