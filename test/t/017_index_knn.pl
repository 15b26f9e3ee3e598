# Nearest neighbours from the simhash index (ORDER BY fp <-> q LIMIT k),
# differential: every answer compared with a sequential scan and sort of the
# same rows, for k = 1, 10, 100 and 1000 on uniform, clustered and skewed
# data (200,000 rows each, some NULL fingerprints), with the index
# (a) built on the loaded table,
# (b) built on an empty table and filled by inserts (pending list and runs),
# (c) after deleting a tenth of the rows and VACUUM (dead entries, table
#     folds: runs serving some tables).
# Equal means: the same sequence of distances, and the same rows closer than
# the k-th distance (rows tied at the k-th distance may be cut off either way).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $ROWS = 200_000;
my $node = PostgreSQL::Test::Cluster->new('knn');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
jit = off
shared_buffers = 128MB
max_parallel_workers_per_gather = 0
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION flip(fp simhash, n int, seed int) RETURNS simhash LANGUAGE sql IMMUTABLE AS $$
  SELECT (fp::bigint # (SELECT coalesce(bit_or(1::bigint << ((seed * 7 + i * 13) % 64)), 0)
                        FROM generate_series(1, n) i))::simhash $$;
-- knn_same(tbl, q, k): does the index answer ORDER BY fp <-> q LIMIT k as a
-- sequential scan and sort does?
CREATE FUNCTION knn_same(tbl text, q simhash, k int) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
    query text := format('SELECT id, fp <-> %L::simhash AS d FROM %I ORDER BY fp <-> %L::simhash LIMIT %s',
                         q, tbl, q, k);
    summary text := 'SELECT count(*)::int AS n, array_agg(d ORDER BY o) AS ds,
                            array_agg(id ORDER BY id) FILTER (WHERE d < (SELECT max(d) FROM (%1$s) y)) AS ids
                     FROM (SELECT id, d, row_number() OVER () AS o FROM (%1$s) x) z';
    ix record;
    sq record;
    line text;
    used bool := false;
BEGIN
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_bitmapscan = off;
    SET LOCAL enable_sort = off;
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        used := used OR line ~ 'Index Scan using';
    END LOOP;
    IF NOT used THEN
        RETURN 'index not used';
    END IF;
    EXECUTE format(summary, query) INTO ix;
    SET LOCAL enable_seqscan = on;
    SET LOCAL enable_indexscan = off;
    SET LOCAL enable_sort = on;
    EXECUTE format(summary, query) INTO sq;
    IF ix.n = sq.n AND ix.ds IS NOT DISTINCT FROM sq.ds AND ix.ids IS NOT DISTINCT FROM sq.ids THEN
        RETURN 'same';
    END IF;
    RETURN format('differs: index %s rows, distances %s; seq %s rows, distances %s',
                  ix.n, ix.ds[1:12], sq.n, sq.ds[1:12]);
END
$fn$;
});

# the three data sets, in src_<kind> (id, fp)
my %gen = (
	uniform => qq{
SELECT g, CASE WHEN g % 997 = 0 THEN NULL
          ELSE ('x' || md5('u' || g))::bit(64)::bigint::simhash END
FROM generate_series(1, $ROWS) g},
	# 20,000 origins, each with 9 near-copies 1..6 bits away
	clustered => qq{
SELECT g, CASE WHEN g % 997 = 0 THEN NULL
          WHEN g % 10 = 1 THEN ('x' || md5('c' || (g / 10)))::bit(64)::bigint::simhash
          ELSE flip(('x' || md5('c' || (g / 10)))::bit(64)::bigint::simhash, 1 + g % 6, g) END
FROM generate_series(1, $ROWS) g},
	# the top 32 bits from 50 values, the rest random
	skewed => qq{
SELECT g, CASE WHEN g % 997 = 0 THEN NULL
          ELSE ((('x' || md5('s' || (g % 50)))::bit(32) || ('x' || md5('r' || g))::bit(32))::bit(64)::bigint)::simhash END
FROM generate_series(1, $ROWS) g},
);

my $bad = 0;
my $checked = 0;

sub check_knn
{
	my ($kind, $tbl, $state) = @_;
	# centres: rows of the table, near-copies of rows, and random values
	my @centres = split /\n/, $node->safe_psql(
		'postgres', qq{
(SELECT fp::text FROM $tbl WHERE fp IS NOT NULL ORDER BY id LIMIT 4 OFFSET 1234)
UNION ALL (SELECT flip(fp, 3, id)::text FROM $tbl WHERE fp IS NOT NULL ORDER BY id LIMIT 2 OFFSET 777)
UNION ALL SELECT ('x' || md5('q' || g))::bit(64)::bigint::simhash::text FROM generate_series(1, 2) g});
	my $sql = join("\nUNION ALL ",
		map {
			my $q = $_;
			map { "SELECT '$q $_', knn_same('$tbl', '$q', $_)" } (1, 10, 100, 1000)
		} @centres);
	my $fails = 0;
	for my $row (split /\n/, $node->safe_psql('postgres', $sql))
	{
		my ($what, $result) = split /\|/, $row, 2;
		$checked++;
		next if $result eq 'same';
		$fails++;
		diag("$kind ($state), centre and k $what: $result");
	}
	is($fails, 0, "$kind ($state): " . (4 * scalar(@centres)) . " nearest-neighbour answers equal a sequential scan");
	$bad += $fails;
	# every row, NULL fingerprints last
	my ($n, $all, $nulls_last) = split /\|/, $node->safe_psql(
		'postgres', qq{
SET enable_seqscan = off; SET enable_sort = off; SET enable_bitmapscan = off;
SELECT count(*), (SELECT count(*) FROM $tbl),
       max(o) FILTER (WHERE d IS NOT NULL) < min(o) FILTER (WHERE d IS NULL)
FROM (SELECT fp <-> '$centres[0]' AS d, row_number() OVER () AS o
      FROM (SELECT fp FROM $tbl ORDER BY fp <-> '$centres[0]') s) t});
	like(
		$node->safe_psql(
			'postgres', qq{
SET enable_seqscan = off; SET enable_sort = off; SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT fp FROM $tbl ORDER BY fp <-> '$centres[0]'}),
		qr/Index (Only )?Scan using/,
		"$kind ($state): the unlimited ordered scan is an index scan");
	is($n, $all, "$kind ($state): an unlimited ordered scan returns all $all rows");
	is($nulls_last, 't', "$kind ($state): NULL fingerprints come last");
}

for my $kind (qw(uniform clustered skewed))
{
	my $t0 = time;
	$node->safe_psql('postgres', "CREATE TABLE src_$kind (id int, fp simhash)");
	$node->safe_psql('postgres', "INSERT INTO src_$kind $gen{$kind}");

	# (a) built on the loaded table
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE a_$kind AS SELECT * FROM src_$kind;
CREATE INDEX a_${kind}_fp ON a_$kind USING simhash (fp);
ANALYZE a_$kind;
});
	check_knn($kind, "a_$kind", 'built on the table');
	$node->safe_psql('postgres', "DROP TABLE a_$kind");

	# (b) built on an empty table, filled by inserts
	$node->safe_psql('postgres',
		"CREATE TABLE b_$kind (id int, fp simhash); CREATE INDEX b_${kind}_fp ON b_$kind USING simhash (fp)");
	for (my $from = 1; $from <= $ROWS; $from += 25_000)
	{
		my $to = $from + 24_999;
		$node->safe_psql('postgres',
			"INSERT INTO b_$kind SELECT * FROM src_$kind WHERE id BETWEEN $from AND $to");
	}
	$node->safe_psql('postgres', "ANALYZE b_$kind");
	note("$kind (b): " . $node->safe_psql('postgres',
		"SELECT format('runs %s %s, pending %s', runs, run_entries, pending_entries) FROM simhash_index_info('b_${kind}_fp')"));
	check_knn($kind, "b_$kind", 'inserts into an index built empty');

	# (c) a tenth deleted, then VACUUM rounds (dead entries, table folds)
	$node->safe_psql('postgres', "DELETE FROM b_$kind WHERE id % 10 = 3");
	for (1 .. 3)
	{
		$node->safe_psql('postgres', 'SELECT txid_current()');
		$node->safe_psql('postgres', "VACUUM b_$kind");
	}
	note("$kind (c): " . $node->safe_psql('postgres',
		"SELECT format('runs %s, tables %s', runs, run_tables) FROM simhash_index_info('b_${kind}_fp')"));
	check_knn($kind, "b_$kind", 'after deletes and VACUUM');
	$node->safe_psql('postgres', "DROP TABLE b_$kind, src_$kind");
	note(sprintf('%s done in %.0f s', $kind, time - $t0));
}
is($bad, 0, "all $checked nearest-neighbour answers equal a sequential scan");

$node->stop;
done_testing();
