# The near-duplicate exclusion constraint under concurrency:
# EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&) must be race-free.
#
# 1. Two sessions insert near-duplicates at the same moment: the second waits
#    for the first; if the first commits, the second fails with 23P01 (or,
#    with ON CONFLICT DO NOTHING, inserts nothing); if the first rolls back,
#    the second's row goes in.
# 2. Four pgbench clients insert 24,000 candidates, each once, in an order
#    that puts near-duplicates of the same origin side by side (3,000 origins
#    far apart, each with seven copies 1 bit away, so any two candidates of
#    an origin are within 2 bits). Afterwards no two rows are within 3 bits
#    (a sequential self-join), and exactly one row per origin was accepted,
#    as a serial replay of the same candidates accepts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('exclude');
$node->init;
$node->append_conf('postgresql.conf', "max_connections = 20\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE t (id serial, cand int, fp simhash,
                CONSTRAINT t_no_near_dup EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&));
});

# ---- 1. two sessions at the same moment
my $a = $node->background_psql('postgres', on_error_stop => 0);
my $b = $node->background_psql('postgres', on_error_stop => 0);

$a->query_safe('BEGIN');
$a->query_safe("INSERT INTO t (cand, fp) VALUES (-1, '0123456789abcdef')");
# B's near-duplicate waits for A
$b->query_until(qr/started/,
	"\\echo started\nINSERT INTO t (cand, fp) VALUES (-2, '0123456789abcdee');\n\\echo done\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO t%'"
	),
	'the second insert waits for the first transaction');
$a->query_safe('COMMIT');
# B then fails: wait for its output
$b->{timeout}->start(60) if $b->{timeout};
pump_until($b->{run}, $b->{timeout}, \$b->{stdout}, qr/done/);
like($b->{stderr}, qr/conflicting key value violates exclusion constraint "t_no_near_dup"/,
	'once the first commits, the second fails with the exclusion error');
$b->quit;
$b = $node->background_psql('postgres', on_error_stop => 0);

$a->query_safe('BEGIN');
$a->query_safe("INSERT INTO t (cand, fp) VALUES (-3, 'fedcba9876543210')");
$b->query_until(qr/started/,
	"\\echo started\nINSERT INTO t (cand, fp) VALUES (-4, 'fedcba9876543211') ON CONFLICT DO NOTHING;\n\\echo done\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO t%'"
	),
	'a near-duplicate with ON CONFLICT DO NOTHING waits too');
$a->query_safe('ROLLBACK');
pump_until($b->{run}, $b->{timeout}, \$b->{stdout}, qr/done/);
is($b->{stderr}, '', 'once the first rolls back, the second goes in without error');
$a->quit;
$b->quit;
is( $node->safe_psql('postgres', 'SELECT string_agg(cand::text, \',\' ORDER BY cand) FROM t'),
	'-4,-1', 'exactly one of each pair is in the table');
$node->safe_psql('postgres', 'TRUNCATE t');

# ---- 2. pgbench clients inserting near-duplicates
$node->safe_psql(
	'postgres', q{
CREATE TABLE cand (id int PRIMARY KEY, origin int, fp simhash);
INSERT INTO cand
SELECT g, g / 8,
       CASE WHEN g % 8 = 0 THEN o ELSE (o::bigint # (1::bigint << ((g * 5) % 64)))::simhash END
FROM generate_series(0, 23999) g,
     LATERAL (SELECT ('x' || md5('origin' || (g / 8)))::bit(64)::bigint::simhash AS o) x;
CREATE SEQUENCE cand_seq MINVALUE 0 START 0;
});
# origins are far apart, so the answer does not depend on the order
is( $node->safe_psql(
		'postgres',
		'SELECT count(*) FROM cand a JOIN cand b ON a.origin < b.origin AND a.fp <~> b.fp <= 3'),
	'0', 'candidates of different origins are more than 3 bits apart');

$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=6000',
	0,
	[qr{processed: 24000/24000}],
	[qr{^$}],
	'four clients insert every candidate once, near-duplicates side by side',
	{
		'018_insert' => q{
INSERT INTO t (cand, fp) SELECT id, fp FROM cand WHERE id = (SELECT nextval('cand_seq')) ON CONFLICT DO NOTHING;
}
	});

my ($rows, $origins, $multi) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(*), count(DISTINCT c.origin),
       (SELECT count(*) FROM (SELECT c2.origin FROM t JOIN cand c2 ON c2.id = t.cand
                              GROUP BY c2.origin HAVING count(*) > 1) m)
FROM t JOIN cand c ON c.id = t.cand});
is($multi, 0, 'no origin has two rows');
is($origins, 3000, 'every origin has a row');
is($rows, 3000, 'so 3,000 rows were accepted');
$node->safe_psql('postgres', 'SET enable_indexscan = off; SET enable_bitmapscan = off');
is( $node->safe_psql(
		'postgres',
		'SET enable_indexscan = off; SET enable_bitmapscan = off; '
		  . 'SELECT count(*) FROM t a JOIN t b ON a.id < b.id WHERE a.fp <~> b.fp <= 3'),
	'0',
	'no two rows within 3 bits (sequential self-join)');

# the serial replay: the same candidates, one session, in a shuffled order
$node->safe_psql(
	'postgres', q{
CREATE TABLE s (cand int, fp simhash, EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&));
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT id, fp FROM cand ORDER BY md5(id::text) LOOP
        INSERT INTO s VALUES (c.id, c.fp) ON CONFLICT DO NOTHING;
    END LOOP;
END $$;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM s'), $rows,
	'a serial replay accepts as many rows');
is( $node->safe_psql(
		'postgres',
		"SELECT heap_tuples_checked = (SELECT count(*) FROM t) FROM simhash_index_verify('t_no_near_dup')"),
	't',
	'the constraint\'s index verifies');

$node->stop;
done_testing();
