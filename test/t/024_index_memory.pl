# Memory the index's maintenance takes stays within the setting users set
# (bulk delete, simhash_index_verify, ordered scans and
# the grouping window functions' argument expressions).
#
# Bulk delete asks VACUUM's callback in table 0 and keeps the dead TIDs in a
# set that the other tables look up. That set is kept within
# maintenance_work_mem: past it, it is dropped (a DEBUG1 line says so) and
# every table asks the callback itself. Here 200,000 of 300,000 rows are
# deleted and VACUUMed with maintenance_work_mem = 1MB (about 40,000 TIDs fit):
# the set must be dropped, and the index must still answer exactly what a
# sequential scan answers and pass simhash_index_verify; with the default
# 64MB the set fits and is kept. simhash_index_verify likewise keeps the
# index's entries in a hash table within maintenance_work_mem and moves them
# to a Bloom filter of that size past it: both ways it passes a sound index.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('memory');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
log_min_messages = debug1
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT ('x' || md5(g::text))::bit(64)::bigint::simhash FROM generate_series(1, 300000) g;
CREATE INDEX t_fp ON t USING simhash (fp);
});

sub exact
{
	my ($what) = @_;
	my $res = $node->safe_psql(
		'postgres', q{
CREATE TEMP TABLE q AS SELECT fp FROM t WHERE id % 997 = 0 LIMIT 40;
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE by_index AS SELECT q.fp AS q, t.id FROM q JOIN t ON t.fp <~> q.fp <= 12;
RESET enable_seqscan; SET enable_indexscan = off;
CREATE TEMP TABLE by_seq AS SELECT q.fp AS q, t.id FROM q JOIN t ON (t.fp <-> q.fp) <= 12;
SELECT (SELECT count(*) FROM by_seq),
       (SELECT count(*) FROM (SELECT * FROM by_index EXCEPT SELECT * FROM by_seq) a) +
       (SELECT count(*) FROM (SELECT * FROM by_seq EXCEPT SELECT * FROM by_index) b);
});
	my ($rows, $diff) = split /\|/, $res;
	cmp_ok($rows, '>', 0, "$what: the queries find rows");
	is($diff, 0, "$what: the index answers as a sequential scan does");
	my ($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM simhash_index_verify('t_fp')");
	is($err, '', "$what: simhash_index_verify passes");
}

my $msg = qr/simhash bulk delete: \d+ dead TIDs passed maintenance_work_mem/;

# the set fits: kept
my $logstart = -s $node->logfile;
$node->safe_psql('postgres', 'DELETE FROM t WHERE id % 30 = 0; VACUUM t');
unlike(slurp_file($node->logfile, $logstart), $msg, 'with 64MB, 10,000 dead TIDs stay in the set');
exact('after VACUUM with the set kept');

# the set outgrows 1MB: dropped, the callback asked by every table
$logstart = -s $node->logfile;
$node->safe_psql('postgres',
	"DELETE FROM t WHERE id % 3 <> 0; SET maintenance_work_mem = '1MB'; VACUUM t");
like(slurp_file($node->logfile, $logstart), $msg,
	'with maintenance_work_mem = 1MB, the dead-TID set is dropped once it passes 1MB');
exact('after VACUUM past the budget');

# verify keeps the entries for its heap check in a hash table within
# maintenance_work_mem, and in a Bloom filter of that size past it
my $vmsg = qr/simhash_index_verify: \d+ entries passed maintenance_work_mem/;
$logstart = -s $node->logfile;
my ($rc, $out, $err) = $node->psql('postgres', "SELECT heap_tuples_checked FROM simhash_index_verify('t_fp')");
is($err, '', 'verify with 64MB passes');
unlike(slurp_file($node->logfile, $logstart), $vmsg, 'with 64MB, verify keeps the entries in its hash table');
$logstart = -s $node->logfile;
($rc, $out, $err) = $node->psql('postgres',
	"SET maintenance_work_mem = '1MB'; SELECT heap_tuples_checked FROM simhash_index_verify('t_fp')");
is($err, '', 'verify with 1MB passes');
is($out, $node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	'verify with 1MB checks every live heap tuple');
like(slurp_file($node->logfile, $logstart), $vmsg,
	'with maintenance_work_mem = 1MB, verify moves to a Bloom filter');

# both ways, a missing entry is found (the test makes verify forget one)
for my $mem ('64MB', '1MB')
{
	($rc, $out, $err) = $node->psql('postgres',
		"SET maintenance_work_mem = '$mem'; SET simhash.test_fault = verify_forget; "
		  . "SELECT * FROM simhash_index_verify('t_fp')");
	like($err, qr/Heap tuple \(\d+,\d+\) has no index entry/,
		"with $mem, verify reports a heap tuple whose entry is missing");
}

# An ordered scan (ORDER BY fp <-> q) keeps the run entries it has found and
# not yet returned within work_mem: past it, it finds by probing only as far
# as fits and reads table 0 in bands, each pass taking what work_mem holds
# after where the last stopped (a DEBUG2 line at the end of the scan says how
# many passes and how many entries it held at most). 64kB holds 10,922 TIDs;
# the table has 60,000 random fingerprints, 20,000 copies of one (a band that
# ends inside one distance), 2,000 NULL and 500 rows still pending. Whole
# orderings, with and without a radius, must be what a sequential scan and
# sort give; a LIMIT 10 reads table 0 at most once.
$node->safe_psql(
	'postgres', q{
CREATE TABLE k (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO k (fp) SELECT ('x' || md5(g::text))::bit(64)::bigint::simhash FROM generate_series(1, 60000) g;
INSERT INTO k (fp) SELECT '0123456789abcdef'::simhash FROM generate_series(1, 20000);
INSERT INTO k (fp) SELECT NULL FROM generate_series(1, 2000);
CREATE INDEX k_fp ON k USING simhash (fp);
INSERT INTO k (fp) SELECT ('x' || md5('p' || g))::bit(64)::bigint::simhash FROM generate_series(1, 500) g;
ANALYZE k;
});

sub ordered
{
	my ($q, $where, $label) = @_;
	my $sql = "SELECT id, fp <-> '$q' FROM k $where ORDER BY fp <-> '$q'";
	my $plan = $node->safe_psql('postgres',
		"SET enable_seqscan = off; SET enable_sort = off; EXPLAIN (COSTS OFF) $sql");
	like($plan, qr/Index Scan using k_fp/, "$label: an index scan");
	$logstart = -s $node->logfile;
	my $by_index = $node->safe_psql('postgres',
		"SET work_mem = '64kB'; SET log_min_messages = debug2; SET enable_seqscan = off; SET enable_sort = off; $sql");
	my ($passes, $held) = slurp_file($node->logfile, $logstart) =~
	  /simhash nearest-neighbour search: (\d+) passes over table 0, at most (\d+) run entries held/;
	my $by_seq = $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
	my @rows = map { [ split /\|/ ] } split /\n/, $by_index;
	my $inorder = 1;
	for my $i (1 .. $#rows)
	{
		my ($a, $b) = ($rows[$i - 1][1], $rows[$i][1]);
		# NULL distances come last
		$inorder = 0 if $a eq '' && $b ne '';
		$inorder = 0 if $a ne '' && $b ne '' && $b < $a;
	}
	ok($inorder, "$label: the index returns rows in distance order, NULL last");
	is(join("\n", sort split /\n/, $by_index), join("\n", sort split /\n/, $by_seq),
		"$label: the same " . scalar(@rows) . " rows and distances as a sequential scan");
	return ($passes // -1, $held // -1);
}

my ($passes, $held) = ordered('0123456789abcdef', '', 'whole ordering from the copied fingerprint');
cmp_ok($passes, '>', 5, "whole ordering: table 0 read in bands ($passes passes)");
ok($held > 0 && $held <= 10922, "whole ordering: at most $held run entries held, within 64kB");
($passes, $held) = ordered('fedcba9876543210', '', 'whole ordering from elsewhere');
ok($held > 0 && $held <= 10922, "whole ordering from elsewhere: at most $held run entries held");
($passes, $held) = ordered('0123456789abcdef', "WHERE fp <~> '0123456789abcdef' <= 24", 'within a radius');
ok($held > 0 && $held <= 10922, "within a radius: at most $held run entries held");
$logstart = -s $node->logfile;
$node->safe_psql('postgres',
	"SET work_mem = '64kB'; SET log_min_messages = debug2; "
	  . "SELECT id FROM k ORDER BY fp <-> 'fedcba9876543210' LIMIT 10");
($passes) = slurp_file($node->logfile, $logstart) =~ /nearest-neighbour search: (\d+) passes/;
ok(defined $passes && $passes <= 1, "LIMIT 10: table 0 read at most once (" . ($passes // '?') . ")");

# The grouping window functions read the whole partition in one call; what
# their argument expressions allocate (simhash(body) detoasts each body) is
# freed row by row, not kept until the partition ends. 2,000 bodies of 48 kB
# (96 MB detoasted in all): reading them keeps well under 4 MB.
$node->safe_psql(
	'postgres', q{
CREATE TABLE docs (id bigint PRIMARY KEY, body text);
ALTER TABLE docs ALTER body SET STORAGE EXTERNAL;
INSERT INTO docs SELECT g, 'doc ' || g || ' ' || repeat(md5(g::text) || ' ', 1500) FROM generate_series(1, 2000) g;
});
for my $fn ('simhash_leader', 'simhash_component')
{
	$logstart = -s $node->logfile;
	($rc, $out, $err) = $node->psql('postgres',
		"SET log_min_messages = debug2; SELECT count(DISTINCT g) FROM "
		  . "(SELECT $fn(id, simhash(body), 3) OVER (ORDER BY id) AS g FROM docs) s");
	is($err, '', "$fn over 2,000 bodies of 48 kB runs");
	my ($kept) = slurp_file($node->logfile, $logstart) =~ /$fn: reading 2000 rows kept (\d+) bytes/;
	ok(defined $kept && $kept < 4 * 1024 * 1024,
		"$fn: reading the rows kept " . ($kept // '?') . ' bytes, not the 96 MB of bodies');
}

$node->stop;
done_testing();
