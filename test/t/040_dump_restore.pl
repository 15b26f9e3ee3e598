# pg_dump and restore of a database using simhash.
#
# A database with the type, a generated fingerprint column, a simhash index
# with reloptions, an expression index and a view is dumped in custom format
# (restored with pg_restore) and in plain format (restored with psql). Each
# restored database must hold the same rows, keep the index options, use the
# indexes for radius searches, pass simhash_index_verify, and give the same
# answers as the original, through the indexes and through sequential scans;
# nearest-neighbour queries give the same rows, and a table's near-duplicate
# exclusion constraint comes back and rejects near-duplicates.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
-- documents of 40 words from a small vocabulary; every fifth a near-copy
-- of an earlier one with two words changed
CREATE FUNCTION doc(seed int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT string_agg('w' || ((seed * 7919 + i * 104729) % 997)::text, ' ' ORDER BY i)
  FROM generate_series(1, 40) i $$;
CREATE TABLE docs (
  id int PRIMARY KEY,
  body text NOT NULL,
  fp simhash GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body)
  SELECT g, CASE WHEN g % 5 = 0
                 THEN replace(replace(doc(g - 3), 'w' || ((g - 3) * 7919 % 997), 'changed'),
                              'w' || (((g - 3) * 7919 + 104729) % 997), 'again')
                 ELSE doc(g) END
  FROM generate_series(1, 3000) g;
CREATE INDEX docs_fp_idx ON docs USING simhash (fp) WITH (blocks = 8, pending_limit = 128);
CREATE INDEX docs_chars_idx ON docs USING simhash (simhash(body, 'chars', 3));
-- rows added after the build: in the pending list and in merged runs
INSERT INTO docs (id, body) SELECT g, doc(g) FROM generate_series(3001, 3500) g;
-- a table kept free of near-duplicates by an exclusion constraint
CREATE TABLE uniq (id int, fp simhash, CONSTRAINT uniq_no_near_dup EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&));
INSERT INTO uniq SELECT id, fp FROM docs WHERE id <= 3500 ON CONFLICT DO NOTHING;
CREATE VIEW near_pairs AS
  SELECT a.id AS a, b.id AS b, a.fp <~> b.fp AS bits
  FROM docs a JOIN docs b ON b.fp <~> a.fp <= 3 AND a.id < b.id;
});

my @queries = (
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT fp FROM docs WHERE id = 10) q WHERE d.fp <~> q.fp <= 3",
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT fp FROM docs WHERE id = 1234) q WHERE d.fp <~> q.fp <= 12",
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT body FROM docs WHERE id = 55) q "
	  . "WHERE simhash(d.body, 'chars', 3) <~> simhash(q.body, 'chars', 3) <= 6",
	"SELECT count(*) || ' ' || sum(bits) FROM near_pairs",
	"SELECT string_agg(id::text || ':' || d::text, ',') FROM (SELECT id, fp <-> '0123456789abcdef' AS d FROM docs ORDER BY fp <-> '0123456789abcdef', id LIMIT 10) s",
	"SELECT count(*) || ' ' || sum(id) FROM uniq");
my $index_only = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $seq_only = 'SET enable_indexscan = off; SET enable_bitmapscan = off;';

sub answers
{
	my ($db, $modes) = @_;
	return join("\n", map { $node->safe_psql($db, "$modes $_") } @queries);
}

my $want = answers('postgres', $seq_only);
note("answers:\n$want");
like($want, qr/^\d+,\d+,\d+/m, 'the queries find near-copies, so the comparisons mean something');
is(answers('postgres', $index_only), $want, 'original: the indexes answer as sequential scans do');

my $dir = PostgreSQL::Test::Utils::tempdir;
my $port = $node->port;
my $host = $node->host;
command_ok([ 'pg_dump', '-h', $host, '-p', $port, '-Fc', '-f', "$dir/db.dump", 'postgres' ],
	'pg_dump, custom format');
command_ok([ 'pg_dump', '-h', $host, '-p', $port, '-Fp', '-f', "$dir/db.sql", 'postgres' ],
	'pg_dump, plain format');

$node->safe_psql('postgres', 'CREATE DATABASE from_custom');
$node->safe_psql('postgres', 'CREATE DATABASE from_plain');
command_ok(
	[ 'pg_restore', '-h', $host, '-p', $port, '--exit-on-error', '-d', 'from_custom', "$dir/db.dump" ],
	'pg_restore of the custom dump');
command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $host, '-p', $port, '-d', 'from_plain',
	  '-f', "$dir/db.sql" ],
	'psql restore of the plain dump');

for my $db ('from_custom', 'from_plain')
{
	is( $node->safe_psql($db, 'SELECT count(*), sum(hashtext(body)), count(DISTINCT fp) FROM docs'),
		$node->safe_psql('postgres', 'SELECT count(*), sum(hashtext(body)), count(DISTINCT fp) FROM docs'),
		"$db: the same rows and fingerprints");
	is( $node->safe_psql($db,
			"SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'docs_fp_idx'"),
		'blocks=8,pending_limit=128', "$db: the index keeps its options");
	like(
		$node->safe_psql($db,
			"$index_only EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3"),
		qr/Index Scan using docs_fp_idx/, "$db: a radius search uses the index");
	like(
		$node->safe_psql($db,
			"$index_only EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash(body, 'chars', 3) <~> '0123456789abcdef' <= 3"),
		qr/Index Scan using docs_chars_idx/, "$db: so does a search on the expression");
	is($node->safe_psql($db, 'SELECT extversion FROM pg_extension WHERE extname = \'simhash\''),
		$node->safe_psql('postgres', 'SELECT extversion FROM pg_extension WHERE extname = \'simhash\''),
		"$db: the same extension version");
	for my $idx ('docs_fp_idx', 'docs_chars_idx')
	{
		is( $node->safe_psql($db, "SELECT heap_tuples_checked FROM simhash_index_verify('$idx')"),
			'3500', "$db: $idx verifies with every row");
	}
	my ($rc, $out, $err) = $node->psql($db, 'INSERT INTO uniq SELECT 100000, fp FROM uniq LIMIT 1');
	like($err, qr/conflicting key value violates exclusion constraint "uniq_no_near_dup"/,
		"$db: the near-duplicate constraint came back and rejects a near-duplicate");
	is(answers($db, $index_only), $want, "$db: index scans answer as the original does");
	is(answers($db, $seq_only), $want, "$db: and so do sequential scans");
}

$node->stop;
done_testing();
