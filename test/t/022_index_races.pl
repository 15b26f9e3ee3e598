# Races between backends that change the index at the same time (issue 21),
# each replayed at its exact step: simhash.test_fault stops one backend there
# (sh_test_pause in module.c waits on an advisory lock the test holds) while
# another acts, then lets it go. See src/mih/README for the protocol these
# steps must follow.
#
# 1. The free space map hands one block to two backends. A run writer takes
#    a block for its next page and unlocks it before writing it; the map is
#    only a hint (GetFreeIndexPage searches under a share lock and records
#    the block used afterwards), so an insert needing a new pending page
#    could be given the same block. Before the fix the block still looked
#    free, the insert made it its pending tail, the writer then wrote a leaf
#    over it: the pending page's entries dropped out of the index and the
#    next insert linked a pending page from a leaf. The writer now stamps the
#    block reserved (WAL-logged) before unlocking it. Here the writer offers
#    its first block to the map again (fsm_twice) and waits while an insert
#    needs a new pending page; afterwards every row must be found, verify
#    must pass, and inserts and VACUUM must go on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('races');
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
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 5000);
CREATE INDEX t_fp ON t USING simhash (fp) WITH (pending_limit = 100000);
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 2000);
});

# Every row found by the index: an index scan at radius 64 reads every entry,
# an ordered scan returns every row; both must equal the table.
sub index_complete
{
	my ($what) = @_;
	my ($res, $qerr) = ('', '');
	$node->psql(
		'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM t),
       (SELECT count(*) FROM t WHERE fp <~> '0000000000000000' <= 64),
       (SELECT count(*) FROM (SELECT id FROM t ORDER BY fp <-> '0000000000000000') s),
       (SELECT count(*) FROM t a WHERE NOT EXISTS
          (SELECT 1 FROM t b WHERE b.fp <~> a.fp <= 0 AND b.id = a.id));
}, stdout => \$res, stderr => \$qerr);
	is($qerr, '', "$what: the index scans raise no error");
	my ($rows, $radius, $ordered, $missing) = split /\|/, $res;
	is($radius, $rows, "$what: a radius-64 index scan finds all $rows rows");
	is($ordered, $rows, "$what: an ordered index scan returns all $rows rows");
	is($missing, 0, "$what: every row's own fingerprint finds it");
	my ($ok, $err) = ('', '');
	$node->psql('postgres', "SELECT * FROM simhash_index_verify('t_fp')",
		stdout => \$ok, stderr => \$err);
	is($err, '', "$what: simhash_index_verify passes");
}

index_complete('before');

# ---- 1. one block handed to a run writer and to an insert
my $holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock(x'5348465400000004'::bigint)");

my $vacuum = $node->background_psql('postgres', on_error_stop => 0);
$vacuum->query_until(qr/started/,
	"\\echo started\nSET simhash.test_fault = fsm_twice;\nVACUUM t;\n\\echo done\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
	'the run writer stops after taking its first block');

# the pending tail was sealed empty by the flush: 1,200 rows need new pending pages
my ($rc, $out, $err) = $node->psql('postgres',
	'INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 1200)');
is($rc, 0, 'inserts needing new pending pages go on while the writer waits');
is($err, '', 'and raise no error');

$holder->query_safe("SELECT pg_advisory_unlock(x'5348465400000004'::bigint)");
$holder->quit;
pump_until($vacuum->{run}, $vacuum->{timeout}, \$vacuum->{stdout}, qr/done/);
is($vacuum->{stderr}, '', 'the writer finishes its run without error');
$vacuum->quit;

index_complete('after the writer and the insert shared a block');

# the table takes inserts and VACUUM as before
($rc, $out, $err) = $node->psql('postgres',
	'INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 3000); VACUUM t');
is($err, '', 'later inserts and VACUUM raise no error');
index_complete('after more inserts and VACUUM');

$node->stop;
done_testing();
