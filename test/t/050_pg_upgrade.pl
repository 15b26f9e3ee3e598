# pg_upgrade from PostgreSQL 15 to the version under test.
#
# A PostgreSQL 15 cluster (Debian's binaries in /usr/lib/postgresql/15, or
# $SIMHASH_UPGRADE_FROM) holds the extension, a generated fingerprint column,
# a simhash index with reloptions (one run, a pending list and retired
# entries), an expression index and a stored distance column with a btree
# index. pg_upgrade moves it to the version this suite runs on. The index
# files are carried over as they are (the on-disk format does not depend on
# the server version), so after the upgrade both simhash indexes must pass
# simhash_index_verify, be used by radius searches, and answer exactly as a
# sequential scan does, before and after more inserts, merges and VACUUM.
# Runs only where the server under test is newer than 15.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old_path = $ENV{SIMHASH_UPGRADE_FROM} // '/usr/lib/postgresql/15';
my $new = PostgreSQL::Test::Cluster->new('new');
my $new_major = $new->pg_version->major;
plan skip_all => "the server under test is PostgreSQL $new_major: nothing older to upgrade from"
  if $new_major <= 15;
plan skip_all => "no PostgreSQL 15 in $old_path"
  unless -x "$old_path/bin/postgres" && -f "$old_path/lib/simhash.so";

my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_path);
# pg_upgrade needs both clusters alike in data checksums, which initdb turns
# on by default from 18 on
$old->init(extra => $new_major >= 18 ? ['--data-checksums'] : []);
$old->append_conf('postgresql.conf', "autovacuum = off\n");
$old->start;
$old->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE docs (
  id int PRIMARY KEY,
  body text NOT NULL,
  fp simhash GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body)
  SELECT g, 'record ' || (g % 400) || ' of the upgrade test, part ' || (g % 7) || ' and ' || (g % 13)
  FROM generate_series(1, 4000) g;
CREATE INDEX docs_fp_idx ON docs USING simhash (fp) WITH (blocks = 8, pending_limit = 256);
CREATE INDEX docs_chars_idx ON docs USING simhash (simhash(body, 'chars', 3));
-- merges after the build: more runs, a pending list, retired entries
INSERT INTO docs (id, body) SELECT g, 'later record ' || g FROM generate_series(4001, 5000) g;
CREATE TABLE pairs AS SELECT a.id AS a, b.id AS b, a.fp <~> b.fp AS bits
  FROM docs a JOIN docs b ON b.fp <~> a.fp <= 2 AND a.id < b.id WHERE a.id <= 200;
CREATE INDEX pairs_bits ON pairs (bits);
});
# Version skew, not ours: Debian's 15.20 keeps an attribute version in every
# column's attoptions (key pg_attver, see its catalog/pg_attribute.h), which
# pg_dump skips from the minor releases made with it on; 17.6 and 18.6 came
# out before, so their pg_dump copies the key and the restore into the new
# cluster fails for every table, ours or not. Clear it in the old cluster
# first, so that what this test is about (our index files carried over) can
# be checked with the servers reachable here.
my $attver = $old->safe_psql('postgres',
	"SELECT count(*) FROM pg_attribute WHERE array_to_string(attoptions, ',') LIKE '%pg_attver=%'");
if ($attver > 0)
{
	note("clearing pg_attver from $attver columns of the old cluster (version skew, see above)");
	$old->safe_psql('postgres',
		"UPDATE pg_attribute SET attoptions = NULLIF(ARRAY(SELECT o FROM unnest(attoptions) o "
		  . "WHERE o NOT LIKE 'pg_attver=%'), '{}') WHERE array_to_string(attoptions, ',') LIKE '%pg_attver=%'");
}
my $info_before = $old->safe_psql('postgres',
	"SELECT runs, run_entries, pending_entries FROM simhash_index_info('docs_fp_idx')");
note("old cluster: docs_fp_idx has runs, run entries, pending entries: $info_before");
$old->stop;

$new->init;
my $dir = PostgreSQL::Test::Utils::tempdir;
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', "$old_path/bin", '-B', $new->config_data('--bindir'),
		'-s', $new->host, '-p', $old->port, '-P', $new->port
	],
	"pg_upgrade from 15 to $new_major");
$new->start;

my @queries = (
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT fp FROM docs WHERE id = 17) q WHERE d.fp <~> q.fp <= 4",
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT fp FROM docs WHERE id = 4500) q WHERE d.fp <~> q.fp <= 12",
	"SELECT string_agg(d.id::text, ',' ORDER BY d.id) FROM docs d, (SELECT body FROM docs WHERE id = 99) q "
	  . "WHERE simhash(d.body, 'chars', 3) <~> simhash(q.body, 'chars', 3) <= 5",
	"SELECT count(*) FROM pairs WHERE bits <= 1");
sub compare
{
	my ($label) = @_;
	my $bad = 0;
	for my $q (@queries)
	{
		my $seq = $new->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $q");
		my $idx = $new->safe_psql('postgres', "SET enable_seqscan = off; SET enable_bitmapscan = off; $q");
		$bad++ if $seq ne $idx;
	}
	is($bad, 0, "$label: index scans answer as sequential scans do");
}

is($new->safe_psql('postgres', "SHOW server_version_num") =~ /^$new_major/ ? 1 : 0,
	1, "the upgraded cluster runs PostgreSQL $new_major");
is( $new->safe_psql('postgres',
		"SELECT runs, run_entries, pending_entries FROM simhash_index_info('docs_fp_idx')"),
	$info_before, 'the index was carried over as it was');
for my $idx ('docs_fp_idx', 'docs_chars_idx')
{
	is($new->safe_psql('postgres', "SELECT heap_tuples_checked FROM simhash_index_verify('$idx')"),
		'5000', "$idx verifies after the upgrade");
}
like(
	$new->safe_psql('postgres',
		"SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '0123456789abcdef' <= 3"),
	qr/Index Scan using docs_fp_idx/, 'a radius search uses the upgraded index');
compare('after the upgrade');

# life goes on: inserts that merge, deletes, VACUUM
$new->safe_psql('postgres', q{
INSERT INTO docs (id, body) SELECT g, 'newer record ' || g FROM generate_series(5001, 6000) g;
DELETE FROM docs WHERE id % 9 = 0;
});
$new->safe_psql('postgres', 'VACUUM docs');
is($new->safe_psql('postgres', "SELECT heap_tuples_checked = (SELECT count(*) FROM docs) FROM simhash_index_verify('docs_fp_idx')"),
	't', 'it verifies after inserts, deletes and VACUUM');
compare('after inserts, deletes and VACUUM');

$new->stop;
done_testing();
