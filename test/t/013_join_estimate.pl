# Planning the self-join: the row estimate of
# "a JOIN b ON b.fp <~> a.fp <= r" must follow the data, not uniformly random
# fingerprints at radius 3 whatever the radius (the estimators once assumed
# those: 1 row estimated against 36,189 actual pairs at r = 3). On the
# clustered data of bench/dedup_bench.sh (80% of rows in clusters of about 4
# rows up to 8 bits apart, 20% random), the estimate must be within 10x of
# the actual count at r = 3 and 8, with the radius a constant, and in a
# prepared statement whose radius is a parameter (custom and generic plans).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $ROWS = 50000;
my $NC = $ROWS / 5;

my $node = PostgreSQL::Test::Cluster->new('joinest');
$node->init;
$node->append_conf('postgresql.conf', "shared_buffers = 64MB\nautovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', qq{
CREATE EXTENSION simhash;
CREATE TABLE db_t (id int8 PRIMARY KEY, fp simhash NOT NULL);
SELECT setseed(0.375);
INSERT INTO db_t
SELECT g, (CASE WHEN z < 0.2 THEN (u1 << 32) | u2
                ELSE hashint8extended(c, 42)
                     # (CASE WHEN k >= 1 THEN 1::int8 << p1 ELSE 0 END)
                     # (CASE WHEN k >= 2 THEN 1::int8 << p2 ELSE 0 END)
                     # (CASE WHEN k >= 3 THEN 1::int8 << p3 ELSE 0 END)
                     # (CASE WHEN k >= 4 THEN 1::int8 << p4 ELSE 0 END) END)::simhash
FROM (SELECT g, random() AS z, floor(random() * $NC)::int8 AS c, floor(random() * 5)::int AS k,
             floor(random() * 64)::int AS p1, floor(random() * 64)::int AS p2,
             floor(random() * 64)::int AS p3, floor(random() * 64)::int AS p4,
             floor(random() * 4294967296)::int8 AS u1, floor(random() * 4294967296)::int8 AS u2
      FROM generate_series(1, $ROWS) g OFFSET 0) r;
CREATE INDEX db_t_fp ON db_t USING simhash (fp);
ANALYZE db_t;
});

# the estimated rows of the plan's top node (a join: the Nested Loop)
sub estimate
{
	my ($sql, $setup) = @_;
	my $json = $node->safe_psql('postgres', ($setup // '') . "EXPLAIN (FORMAT JSON) $sql");
	$json =~ /"Plan Rows": (\d+)/ or die "no Plan Rows in $json";
	return $1;
}

for my $r (3, 8)
{
	my $join = "SELECT a.id, b.id FROM db_t a JOIN db_t b ON b.fp <~> a.fp <= $r AND a.id < b.id";
	my $actual = $node->safe_psql('postgres', "SELECT count(*) FROM ($join) s");
	cmp_ok($actual, '>', 1000, "r = $r: the clustered data has many pairs ($actual)");

	my $plan = $node->safe_psql('postgres', "EXPLAIN (COSTS OFF) $join");
	like($plan, qr/Index Cond: \(fp <@ simhash_ball\(a\.fp, $r\)\)/,
		"r = $r: the join probes the simhash index");

	my %cases = (
		'constant radius' => [ $join, '' ],
		'prepared, custom plan' => [
			"EXECUTE p($r)",
			"SET plan_cache_mode = force_custom_plan; PREPARE p(int) AS "
			  . "SELECT a.id, b.id FROM db_t a JOIN db_t b ON b.fp <~> a.fp <= \$1 AND a.id < b.id; "
		],
		'prepared, generic plan' => [
			"EXECUTE p($r)",
			"SET plan_cache_mode = force_generic_plan; PREPARE p(int) AS "
			  . "SELECT a.id, b.id FROM db_t a JOIN db_t b ON b.fp <~> a.fp <= \$1 AND a.id < b.id; "
		]);
	for my $case (sort keys %cases)
	{
		my ($sql, $setup) = @{ $cases{$case} };
		my $est = estimate($sql, $setup);
		my $ratio = $est / $actual;
		note("r = $r, $case: estimated $est, actual $actual");
		# a generic plan cannot know the radius: it is costed at 8, the
		# recommended one, so only r = 8 is held to the 10x bound there
		next if $case eq 'prepared, generic plan' && $r != 8;
		ok($ratio >= 0.1 && $ratio <= 10,
			sprintf("r = %d, %s: estimate %d is within 10x of the %d pairs (%.2fx)",
				$r, $case, $est, $actual, $ratio));
	}
}

$node->stop;
done_testing();
