# An open cursor must not stop the index's maintenance.
#
# Session A opens a cursor on an index scan and reads one row, then keeps its
# transaction open. Meanwhile session B inserts 50,000 rows into a table whose
# small pending list (pending_limit = 256) makes inserts merge about two
# hundred times, deletes some rows and runs VACUUM. None of that may wait for
# A, nor stop merging because A might still read pages merges replaced:
# - the pending list stays short (merging goes on), whatever A holds;
# - VACUUM finishes, under a statement_timeout that would end a wait for A's
#   buffer pins (the wait the deadlock detector cannot see);
# - A can then take a lock that a concurrent VACUUM also wants (ANALYZE)
#   without both waiting on each other until lock_timeout;
# - A's cursor reads on and returns exactly the rows of its snapshot;
# - once A ends, VACUUM recycles every page the merges retired.
# Every index answer is compared with a sequential scan on the same data.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('recycle');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
autovacuum = off
shared_buffers = 32MB
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 2000);
CREATE INDEX t_fp ON t USING simhash (fp) WITH (pending_limit = 256);
});

my $scan_only = 'SET enable_seqscan = off; SET enable_bitmapscan = off;';
my $all = "fp <@ simhash_ball('0000000000000000', 64)";

sub info
{
	my %i;
	@i{qw(runs pending retired)} = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT runs, pending_entries, retired FROM simhash_index_info('t_fp')");
	return \%i;
}

# ---- session A: a cursor on an index scan, one row read
my $sa = $node->background_psql('postgres', on_error_stop => 0);
$sa->query_safe($scan_only);
like(
	$sa->query_safe("EXPLAIN (COSTS OFF) SELECT id FROM t WHERE $all"),
	qr/Index Scan using t_fp/,
	'the cursor reads the index');
$sa->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
my $expected = $sa->query_safe('SELECT string_agg(id::text, \',\' ORDER BY id) FROM t');
$sa->query_safe("DECLARE c CURSOR FOR SELECT id FROM t WHERE $all");
my @first = split /\n/, $sa->query_safe('FETCH 1 FROM c');
is(scalar(@first), 1, 'the cursor has read one row');

# ---- session B: 50,000 inserts in 100 transactions, merging all the while
my $max_pending = 0;
for my $batch (1 .. 100)
{
	$node->safe_psql('postgres', 'INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 500)');
	my $i = info();
	$max_pending = $i->{pending} if $i->{pending} > $max_pending;
}
my $after = info();
note("index after the inserts: $after->{runs} runs, $after->{pending} pending entries, "
	  . "$after->{retired} retired, largest pending list $max_pending");
cmp_ok($max_pending, '<=', 4 * 256,
	'merging goes on while the cursor is open: the pending list stays short');

# VACUUM must not wait for the cursor's pins (with dead rows, so that bulk
# delete marks entries on the pages the cursor may hold)
$node->safe_psql('postgres', 'DELETE FROM t WHERE id % 10 = 3 AND id > 2000');
my ($rc, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '20s'; VACUUM t;");
is($rc, 0, 'VACUUM finishes while the cursor is open') or diag($err);
my $vac = info();
note("index after VACUUM: $vac->{runs} runs, $vac->{pending} pending entries, "
	  . "$vac->{retired} retired");

# the undetectable deadlock: B's VACUUM runs while A asks for a lock VACUUM
# conflicts with; neither may wait for the other
my $sb = $node->background_psql('postgres', on_error_stop => 0);
my $bpid = $sb->query_safe('SELECT pg_backend_pid()');
$node->safe_psql('postgres', 'INSERT INTO t (fp) SELECT rfp() FROM generate_series(1, 2000)');
$sb->query_until(qr/started/, "\\echo started\nSET statement_timeout = '20s';\nVACUUM t;\n");
# B's VACUUM must hold its table lock before A asks for it (or be done): if A
# got there first, B would rightly wait for A's transaction, which is not
# what this checks
ok( $node->poll_query_until(
		'postgres', qq{
SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $bpid AND relation = 't'::regclass
                 AND mode = 'ShareUpdateExclusiveLock' AND granted)
    OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $bpid AND state = 'idle'
                 AND query LIKE 'VACUUM t%')}),
	'the concurrent VACUUM has its table lock (or is done)');
my (undef, $ret) = $sa->query("SET lock_timeout = '20s'; ANALYZE t;");
is($ret, 0, 'the cursor\'s session takes a lock VACUUM also wants, without a hang')
  or diag($sa->{stderr});
$sb->query_safe('SELECT 1');    # waits for its VACUUM to end
is($sb->{stderr} // '', '', 'the concurrent VACUUM ended without error') or diag($sb->{stderr});
$sb->quit;

# A's cursor reads on: every row of its snapshot, once
my ($rest, $ret2) = $sa->query('FETCH ALL FROM c');
is($ret2, 0, 'the cursor reads on without error') or diag($sa->{stderr});
my @ids = sort { $a <=> $b } (@first, split /\n/, $rest);
is(join(',', @ids), $expected, 'the cursor returns exactly the rows of its snapshot');
$sa->query_safe('COMMIT');
$sa->quit;

# with A gone, VACUUM recycles what the merges retired. Each VACUUM also
# folds a table (retiring what that replaced), so it takes a round per table
# (4) and one more; a transaction ID is used before each, as recycling needs
# the horizon to pass what was retired
my $rounds = 0;
while ($rounds < 8)
{
	$rounds++;
	$node->safe_psql('postgres', 'SELECT txid_current()');
	$node->safe_psql('postgres', 'VACUUM t');
	last if info()->{retired} == 0;
}
is(info()->{retired}, 0,
	"nothing is left retired once no snapshot can see old runs ($rounds VACUUM rounds)");
my $free = $node->safe_psql('postgres',
	"SELECT count(*) FROM simhash_index_pages('t_fp') WHERE type = 'free'");
cmp_ok($free, '>', 0, "retired pages were recycled ($free free pages)");

# answers equal a sequential scan
my $bad = 0;
for my $r (0, 3, 8, 16)
{
	for my $q (1 .. 5)
	{
		my $sql = "SELECT string_agg(id::text, ',' ORDER BY id) FROM t, "
		  . "(SELECT fp AS q FROM t ORDER BY id OFFSET " . ($q * 997) . " LIMIT 1) s "
		  . "WHERE fp <~> q <= $r";
		my $idx = $node->safe_psql('postgres', "$scan_only $sql");
		my $seq = $node->safe_psql('postgres',
			"SET enable_indexscan = off; SET enable_bitmapscan = off; $sql");
		$bad++ if $idx ne $seq;
	}
}
is($bad, 0, 'index scans equal sequential scans at radii 0, 3, 8 and 16');
is( $node->safe_psql('postgres',
		'SELECT heap_tuples_checked = (SELECT count(*) FROM t) FROM simhash_index_verify(\'t_fp\')'),
	't',
	'simhash_index_verify passes');

$node->stop;
done_testing();
