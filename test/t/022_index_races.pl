# Races between backends that change the index at the same time,
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
#
# 2. Bulk delete beside flushing inserts. Bulk delete held
#    the merge lock for its whole pass, so inserts could not flush and the
#    pending list, which every search reads whole, grew for as long as VACUUM
#    ran. It now holds it only to flag the runs and, at the end, to visit the
#    runs written meanwhile and the pending list. Here VACUUM stops before
#    its first mark (vacuum_pause) while 8,000 rows go in, 250 a
#    transaction, with pending_limit = 256: the pending list must stay under
#    two flushes' worth, merges must replace runs VACUUM is marking and
#    recycling free their pages (VACUUM leaves such a run, a DEBUG1 line says
#    so, and marks the run that replaced it at the end); afterwards no deleted row may be found, every other row must be,
#    and verify must pass.
#
# 3. A merge of a run bulk delete is marking. A merge reads a run's tables
#    one after the other; bulk delete, no longer excluding merges, may mark
#    entries dead in between, and a merge that dropped every entry it read as
#    dead wrote a run whose tables held different entries (the stress test
#    found it: "Run at block N table 1 holds 155426 entries, expected
#    122036"). A merge of a flagged run now drops exactly the entries dead
#    when it began, in every table, and a run writer refuses tables of
#    different sizes. Here the merge stops after its first table
#    (merge_pause) while bulk delete marks every table of its runs; the
#    merge must finish without error (before the fix: "a new run's tables
#    would hold different entries (3328 and 2390)"), verify must pass and
#    no deleted row may be found.
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


# A table of 3,000 rows inserted 250 at a time into an index with
# pending_limit = 256 (several runs), a third of them deleted, their
# fingerprints kept in ${name}_deleted.
sub table_with_deletes
{
	my ($name) = @_;
	$node->safe_psql('postgres',
		"CREATE TABLE $name (id bigserial PRIMARY KEY, fp simhash); "
		  . "CREATE INDEX ${name}_fp ON $name USING simhash (fp) WITH (pending_limit = 256)");
	for my $i (1 .. 12)
	{
		$node->safe_psql('postgres',
			"INSERT INTO $name (fp) SELECT rfp() FROM generate_series(1, 250)");
	}
	$node->safe_psql('postgres',
		"CREATE TABLE ${name}_deleted AS SELECT fp FROM $name WHERE id % 3 = 0; "
		  . "DELETE FROM $name WHERE id % 3 = 0");
}

# ---- 2. bulk delete while inserts flush, merge and recycle
table_with_deletes('u');
my $runs_before = $node->safe_psql('postgres', "SELECT runs FROM simhash_index_info('u_fp')");

$holder = $node->background_psql('postgres');
$holder->query_safe("SELECT pg_advisory_lock(x'5348465400000006'::bigint)");
my $logstart = -s $node->logfile;
$vacuum = $node->background_psql('postgres', on_error_stop => 0);
$vacuum->query_until(qr/started/,
	"\\echo started\nSET simhash.test_fault = vacuum_pause;\nSET log_min_messages = debug1;\nVACUUM u;\n\\echo done\n");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
	'bulk delete stops before marking');
my $maxpending = 0;
for my $i (1 .. 32)
{
	$node->safe_psql('postgres',
		'INSERT INTO u (fp) SELECT rfp() FROM generate_series(1, 250); SELECT txid_current()');
	my $p = $node->safe_psql('postgres', "SELECT pending_entries FROM simhash_index_info('u_fp')");
	$maxpending = $p if $p > $maxpending;
}
cmp_ok($maxpending, '<', 512,
	"while bulk delete runs, inserts flush: at most $maxpending entries pending (limit 256)");
$holder->query_safe("SELECT pg_advisory_unlock(x'5348465400000006'::bigint)");
$holder->quit;
pump_until($vacuum->{run}, $vacuum->{timeout}, \$vacuum->{stdout}, qr/done/);
is($vacuum->{stderr}, '', 'bulk delete finishes without error');
$vacuum->quit;
like(slurp_file($node->logfile, $logstart), qr/simhash bulk delete: a run was replaced and its pages freed meanwhile/,
	'a run bulk delete was marking was merged and recycled meanwhile (started with ' . $runs_before . ' runs)');

# the freed TIDs are reused by new rows: an entry left live for a deleted row
# would now name a new row with another fingerprint, found by the deleted
# row's fingerprint
$node->safe_psql('postgres', 'INSERT INTO u (fp) SELECT rfp() FROM generate_series(1, 3000)');
my $res = $node->safe_psql(
	'postgres', q{
CREATE TEMP TABLE q AS (SELECT fp FROM u ORDER BY id LIMIT 200) UNION ALL SELECT fp FROM u_deleted;
SET enable_seqscan = off; SET enable_bitmapscan = off;
CREATE TEMP TABLE by_index AS SELECT q.fp AS q, u.id FROM q JOIN u ON u.fp <~> q.fp <= 6;
RESET enable_seqscan; SET enable_indexscan = off;
CREATE TEMP TABLE by_seq AS SELECT q.fp AS q, u.id FROM q JOIN u ON (u.fp <-> q.fp) <= 6;
SELECT (SELECT count(*) FROM by_seq),
       (SELECT count(*) FROM (SELECT * FROM by_index EXCEPT SELECT * FROM by_seq) a),
       (SELECT count(*) FROM (SELECT * FROM by_seq EXCEPT SELECT * FROM by_index) b),
       (SELECT count(*) FROM u WHERE fp <~> '0000000000000000' <= 64),
       (SELECT count(*) FROM u);
});
my ($rows, $extra, $missed, $all, $count) = split /\|/, $res;
cmp_ok($rows, '>=', 200, 'after bulk delete beside merges: the queries find rows');
is($extra, 0, 'no row found that a sequential scan does not find (no dead entry left live)');
is($missed, 0, 'no row missed');
is($all, $count, "a radius-64 scan finds all $count rows");
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM simhash_index_verify('u_fp')");
is($err, '', 'simhash_index_verify passes');

# ---- 3. bulk delete marks the runs a merge is reading
table_with_deletes('v');

my $waiters = sub {
	my ($n, $what) = @_;
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) >= $n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"),
		$what);
};
$holder = $node->background_psql('postgres');
$holder->query_safe(
	"SELECT pg_advisory_lock(x'5348465400000006'::bigint), pg_advisory_lock(x'5348465400000007'::bigint)");
$vacuum = $node->background_psql('postgres', on_error_stop => 0);
$vacuum->query_until(qr/started/,
	"\\echo started\nSET simhash.test_fault = vacuum_pause;\nVACUUM v;\n\\echo done\n");
$waiters->(1, 'bulk delete stops before marking');
my $inserter = $node->background_psql('postgres', on_error_stop => 0);
$inserter->query_until(qr/started/,
	"\\echo started\nSET simhash.test_fault = merge_pause;\n"
	  . "DO \$\$ BEGIN FOR i IN 1 .. 40 LOOP INSERT INTO v (fp) SELECT rfp() FROM generate_series(1, 250); END LOOP; END \$\$;\n"
	  . "\\echo done\n");
$waiters->(2, 'an insert merges a flagged run and stops after its first table');
$holder->query_safe("SELECT pg_advisory_unlock(x'5348465400000006'::bigint)");
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'page' AND NOT granted"),
	'bulk delete marks every table meanwhile, then waits for the merge lock');
$holder->query_safe("SELECT pg_advisory_unlock(x'5348465400000007'::bigint)");
$holder->quit;
pump_until($inserter->{run}, $inserter->{timeout}, \$inserter->{stdout}, qr/done/);
is($inserter->{stderr}, '', 'the merge and the inserts finish without error');
$inserter->quit;
pump_until($vacuum->{run}, $vacuum->{timeout}, \$vacuum->{stdout}, qr/done/);
is($vacuum->{stderr}, '', 'bulk delete finishes without error');
$vacuum->quit;
($rc, $out, $err) = $node->psql('postgres', "SELECT * FROM simhash_index_verify('v_fp')");
is($err, '', "simhash_index_verify passes: the merged run's tables hold the same entries");
$node->safe_psql('postgres', 'INSERT INTO v (fp) SELECT rfp() FROM generate_series(1, 3000)');
$res = $node->safe_psql(
	'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM v_deleted d JOIN v ON v.fp <~> d.fp <= 0),
       (SELECT count(*) FROM v WHERE fp <~> '0000000000000000' <= 64),
       (SELECT count(*) FROM v);
});
my ($found_deleted, $all_v, $count_v) = split /\|/, $res;
is($found_deleted, 0, "no deleted row's fingerprint finds a row");
is($all_v, $count_v, "a radius-64 scan finds all $count_v rows");
$node->stop;
done_testing();
