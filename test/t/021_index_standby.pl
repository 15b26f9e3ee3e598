# The simhash index on a streaming standby, and unlogged simhash indexes.
#
# Every page change of the index is WAL-logged (GenericXLog, and
# log_newpage_range after CREATE INDEX), so a standby replaying the WAL must
# hold the same index as the primary and answer the same. The nodes run with
# wal_consistency_checking = 'generic': the standby compares every page it
# replays with the full-page image the primary logged with the record, and
# stops with "inconsistent page found" on any difference.
#
# Recycling: the primary frees pages merges replaced once no snapshot it
# knows of can reach them; a standby query is protected by
# hot_standby_feedback; without it, its scan starts again from the current
# metapage, or (past simhash.standby_scan_restarts) is cancelled cleanly
# (section 3b). simhash_index_verify() runs on the standby too.
#
# Unlogged tables: their index lives in the main fork, reset from the INIT
# fork (written by ambuildempty) after a crash, and must work afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $t_start = time;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q{
wal_consistency_checking = 'generic'
autovacuum = off
shared_buffers = 32MB
max_connections = 20
log_statement = none
});
$primary->start;
$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT ($1::bigint # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                                         FROM generate_series(1, $2)), 0))::simhash $$;
CREATE TABLE qs (qid serial PRIMARY KEY, center simhash NOT NULL, r int NOT NULL);
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
is($standby->safe_psql('postgres', 'SHOW wal_consistency_checking'),
	'generic', 'the standby checks every replayed generic WAL record against a page image');

# simhash_index_verify() is part of the extension: its absence is a failure
is($primary->safe_psql('postgres', "SELECT to_regproc('simhash_index_verify') IS NOT NULL"),
	't', 'simhash_index_verify() exists');

# ---- helpers

# Wait until the standby has replayed everything the primary wrote, failing
# at once (instead of after the long default timeout) if replay stopped.
sub catchup
{
	my ($label) = @_;
	my $lsn = $primary->lsn('insert');
	my $deadline = time + 180;
	while (time < $deadline)
	{
		my $log = slurp_file($standby->logfile);
		if ($log =~ /(.*(?:inconsistent page found|PANIC|startup process .* exited|TRAP:).*)/)
		{
			fail("$label: standby replays the WAL");
			diag("standby log: $1");
			diag(join("\n", grep { /FATAL|PANIC|inconsistent|CONTEXT|TRAP/ } split /\n/, $log));
			done_testing();
			exit 1;
		}
		my ($ret, $out) =
		  $standby->psql('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
		if ($ret == 0 && $out eq 't')
		{
			pass("$label: standby replayed up to $lsn");
			return;
		}
		sleep(0.2);
	}
	fail("$label: standby replays the WAL (timed out)");
}

my %modes = (
	index => 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;',
	bitmap => 'SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = on;',
	seq => 'SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;');

# centres: rows of the table, near-duplicates of rows, random; radii 0..12
sub make_queries
{
	my ($node, $tbl, $ncenters) = @_;
	my $partnered = int($ncenters * 0.3);
	my $rows = int($ncenters * 0.3);
	my $near = int($ncenters * 0.25);
	my $rand = $ncenters - $partnered - $rows - $near;
	# some centres are rows with another row within 6 bits, so that queries
	# with several matches do not depend on the share of random rows; they
	# come from a random pool of rows, checked through the index (a broken
	# index finds fewer, and the count of such queries falls)
	$node->safe_psql(
		'postgres', qq{
TRUNCATE qs;
WITH c AS (
  (SELECT p.fp AS center FROM (SELECT fp FROM $tbl WHERE fp IS NOT NULL ORDER BY random() LIMIT 1500) p
   WHERE (SELECT count(*) FROM $tbl x WHERE x.fp <@ simhash_ball(p.fp, 6)) > 1 LIMIT $partnered)
  UNION ALL
  (SELECT fp AS center FROM $tbl WHERE fp IS NOT NULL ORDER BY random() LIMIT $rows)
  UNION ALL
  (SELECT flip(fp, 1 + (random() * 5)::int) FROM $tbl WHERE fp IS NOT NULL ORDER BY random() LIMIT $near)
  UNION ALL
  SELECT rfp() FROM generate_series(1, $rand))
INSERT INTO qs (center, r) SELECT center, r FROM c, generate_series(0, 12) r ORDER BY center, r;
ANALYZE qs;
});
}

sub answers
{
	my ($node, $mode, $tbl, $idx) = @_;
	my $sql = qq{
SELECT q.qid, q.center, q.r, count(m.id), coalesce(sum(m.id), 0),
       md5(coalesce(string_agg(m.id::text, ',' ORDER BY m.id), ''))
FROM qs q LEFT JOIN LATERAL
     (SELECT x.id FROM $tbl x WHERE x.fp <@ simhash_ball(q.center, q.r)) m ON true
GROUP BY q.qid ORDER BY q.qid};
	my $plan = $node->safe_psql('postgres', "$modes{$mode} EXPLAIN (COSTS OFF) $sql");
	my $uses =
	    $mode eq 'index' ? $plan =~ /Index Scan using $idx/
	  : $mode eq 'bitmap' ? $plan =~ /Bitmap Index Scan on $idx/
	  : $plan !~ /$idx/;
	ok($uses, $node->name . ": plan on $tbl for the $mode path uses the intended access path")
	  or diag($plan);
	return [ split /\n/, $node->safe_psql('postgres', "$modes{$mode} $sql") ];
}

sub compare_answers
{
	my ($label, $got, $want) = @_;
	my @bad;
	for my $i (0 .. $#$want)
	{
		push @bad, "want: $want->[$i]\n  got: " . ($got->[$i] // '(none)')
		  if ($got->[$i] // '') ne $want->[$i];
	}
	push @bad, "extra rows" if @$got != @$want;
	is(scalar(@bad), 0, "$label: same answers for " . scalar(@$want) . ' queries')
	  or diag(join("\n", @bad[ 0 .. ($#bad < 7 ? $#bad : 7) ]));
}

sub verify
{
	my ($node, $label, $tbl, $idx) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT *, (SELECT count(*) FROM $tbl) FROM simhash_index_verify('$idx')");
	is($ret, 0, "$label: simhash_index_verify($idx) succeeds") or diag($err);
	my @f = split /\|/, $out;
	is($f[3], $f[4], "$label: verify checked every live row of $tbl")
	  if $ret == 0;
}

# The standby answers what the primary answers: index and bitmap scans on the
# standby, index scans on the primary, all equal to a sequential scan on the
# primary; radius 64 returns every fingerprint on the standby.
sub compare_nodes
{
	my ($label, $tbl, $idx, $ncenters) = @_;
	verify($primary, "$label, primary", $tbl, $idx);
	make_queries($primary, $tbl, $ncenters);
	catchup("$label ($tbl)");
	# on the standby verify takes only what recovery allows (AccessShareLock)
	verify($standby, "$label, standby", $tbl, $idx);
	my $want = answers($primary, 'seq', $tbl, $idx);
	compare_answers("$label, $tbl, primary index scan", answers($primary, 'index', $tbl, $idx), $want);
	compare_answers("$label, $tbl, standby index scan", answers($standby, 'index', $tbl, $idx), $want);
	compare_answers("$label, $tbl, standby bitmap scan", answers($standby, 'bitmap', $tbl, $idx), $want);
	my $multi = grep { (split /\|/)[3] > 1 } @$want;
	cmp_ok($multi, q{>}, $ncenters, "$label, $tbl: $multi queries with several matches");

	my $all = $primary->safe_psql('postgres', "SELECT count(fp) FROM $tbl");
	is( $standby->safe_psql(
			'postgres',
			"$modes{index} SELECT count(*) FROM $tbl WHERE fp <@ simhash_ball('fedcba9876543210', 64)"),
		$all,
		"$label, $tbl: radius 64 on the standby returns all $all fingerprints");
	my $pi = $primary->safe_psql('postgres', "SELECT * FROM simhash_index_info('$idx')");
	is($standby->safe_psql('postgres', "SELECT * FROM simhash_index_info('$idx')"),
		$pi, "$label, $tbl: the standby's metapage equals the primary's ($pi)");
}

# ---- 1. CREATE INDEX on existing rows: built without WAL, then
# log_newpage_range. maintenance_work_mem = 1MB holds ~75k entries, so 150k
# rows make several sorted chunks that are merged (and freed) in the build.
$primary->safe_psql(
	'postgres', q{
CREATE TABLE b (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO b (fp) SELECT rfp() FROM generate_series(1, 100000);
INSERT INTO b (fp) SELECT flip(fp, 1 + (id % 5)::int) FROM b WHERE id % 2 = 0;
INSERT INTO b (fp) SELECT NULL FROM generate_series(1, 50);
SET maintenance_work_mem = '1MB';
CREATE INDEX b_fp_idx ON b USING simhash (fp);
-- a small build (one chunk) with other options
CREATE TABLE s (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO s (fp) SELECT rfp() FROM generate_series(1, 3000);
INSERT INTO s (fp) SELECT flip(fp, 1 + (id % 7)::int) FROM s;
CREATE INDEX s_fp_idx ON s USING simhash (fp) WITH (blocks = 8, pending_limit = 64);
});
compare_nodes('after CREATE INDEX', 'b', 'b_fp_idx', 20);
compare_nodes('after CREATE INDEX', 's', 's_fp_idx', 30);

# verify on the standby checks the heap against the index: an entry it
# forgets (simhash.test_fault = verify_forget) is a row without its entry
{
	my ($ret, $out, $err) = $standby->psql('postgres',
		"SET simhash.test_fault = verify_forget; SELECT * FROM simhash_index_verify('b_fp_idx')");
	like($err, qr/simhash index "b_fp_idx" is corrupted.*\n.*has no index entry/,
		'standby: simhash_index_verify finds a heap row without its entry');
}

# ---- 2. an index built empty and filled by inserts: pending list, merges
# from inserts (concurrent sessions and batches), deletes, VACUUM (dead
# entries, merges, page recycling), inserts into recycled pages
$primary->safe_psql(
	'postgres', q{
CREATE TABLE e (id bigserial PRIMARY KEY, fp simhash);
CREATE INDEX e_fp_idx ON e USING simhash (fp) WITH (pending_limit = 256);
INSERT INTO e (fp) SELECT rfp() FROM generate_series(1, 2000);
});
$primary->pgbench(
	'-n -c 2 -j 2 -t 1500',
	0,
	[qr/processed: 3000/],
	[qr/^$/],
	'single-row inserts from two sessions',
	{
		'001_ins' => q{
\set k random(0, 9)
\set base random(1, 2000)
INSERT INTO e (fp) VALUES (CASE WHEN :k < 4 THEN rfp()
  ELSE flip((SELECT fp FROM e WHERE id = :base), :k - 3) END);
}
	});
$primary->safe_psql(
	'postgres', q{
INSERT INTO e (fp) SELECT flip(fp, 1 + (id % 4)::int) FROM e WHERE id % 3 = 0;
INSERT INTO e (fp) SELECT NULL FROM generate_series(1, 30);
DO $$ BEGIN FOR i IN 1..1500 LOOP INSERT INTO e (fp) VALUES (rfp()); END LOOP; END $$;
DELETE FROM e WHERE id % 5 = 1;
VACUUM e;
DO $$ BEGIN FOR i IN 1..2000 LOOP INSERT INTO e (fp) VALUES (rfp()); END LOOP; END $$;
DELETE FROM e WHERE id % 7 = 2;
VACUUM e;
DO $$ BEGIN FOR i IN 1..700 LOOP INSERT INTO e (fp) VALUES (rfp()); END LOOP; END $$;
});
note('e after the workload: ' . $primary->safe_psql('postgres', "SELECT * FROM simhash_index_info('e_fp_idx')"));
compare_nodes('after inserts, deletes and VACUUM', 'e', 'e_fp_idx', 40);

# the same on the big table built by CREATE INDEX: its one big run is
# rewritten when VACUUM finds it 10% dead
$primary->safe_psql(
	'postgres', q{
DO $$ BEGIN FOR i IN 1..3000 LOOP INSERT INTO b (fp) VALUES (rfp()); END LOOP; END $$;
DELETE FROM b WHERE id % 9 = 4;
VACUUM b;
INSERT INTO b (fp) SELECT rfp() FROM generate_series(1, 2000);
DELETE FROM s WHERE id % 4 = 0;
VACUUM s;
DO $$ BEGIN FOR i IN 1..1000 LOOP INSERT INTO s (fp) VALUES (rfp()); END LOOP; END $$;
});
note('b after the workload: ' . $primary->safe_psql('postgres', "SELECT * FROM simhash_index_info('b_fp_idx')"));
compare_nodes('after inserts, deletes and VACUUM', 'b', 'b_fp_idx', 20);
compare_nodes('after inserts, deletes and VACUUM', 's', 's_fp_idx', 30);

# ---- 3. a scan open across merges, on the primary and on the standby
# On the primary retired pages are freed only once no snapshot that could
# have read the metapage before the merge is still running (a transaction ID
# horizon, src/mih/README "Freeing"). The standby's queries are in that
# horizon only with hot_standby_feedback: replay must not let a scan read
# pages freed and reused under it. A cursor reads part of the index, the primary merges runs (which
# retires, frees and reuses their pages), the standby replays that, then the
# cursor reads the rest: on the primary it must return exactly the rows of its
# snapshot; on the standby either that or a clean cancellation.
{
	for my $node ($primary, $standby)
	{
		my $label = 'scan open on the ' . $node->name . ' across merges';
		# a few runs of different sizes, and a pending list
		$primary->safe_psql('postgres',
			'DO $$ BEGIN FOR i IN 1..1500 LOOP INSERT INTO e (fp) VALUES (rfp()); END LOOP; END $$');
		catchup("$label: set-up");
		note("$label: index when the cursor opens: "
			  . $node->safe_psql('postgres', "SELECT * FROM simhash_index_info('e_fp_idx')"));

		my $bg = $node->background_psql('postgres', on_error_stop => 0);
		$bg->query_safe("$modes{index} BEGIN ISOLATION LEVEL REPEATABLE READ;");
		my $expected = $bg->query_safe('SELECT count(fp) FROM e');
		my $plan = $bg->query_safe(
			"EXPLAIN (COSTS OFF) SELECT id FROM e WHERE fp <@ simhash_ball('0000000000000000', 64)");
		like($plan, qr/Index Scan using e_fp_idx/, "$label: the cursor reads the index")
		  or diag($plan);
		$bg->query_safe("DECLARE c CURSOR FOR "
			  . "SELECT id FROM e WHERE fp <@ simhash_ball('0000000000000000', 64)");
		my @first = split /\n/, $bg->query_safe('FETCH 10 FROM c');

		# merges on the primary: the runs and pending pages the cursor has
		# not read yet are retired, and (on the primary only once the cursor
		# is closed) freed and reused
		$primary->safe_psql('postgres',
			'DO $$ BEGIN FOR i IN 1..4000 LOOP INSERT INTO e (fp) VALUES (rfp()); END LOOP; END $$');
		note("$label: primary index after the merges: "
			  . $primary->safe_psql('postgres', "SELECT * FROM simhash_index_info('e_fp_idx')"));
		catchup("$label: merges");

		my ($rest, $ret) = $bg->query('FETCH ALL FROM c');
		{
			# Without hot_standby_feedback the primary does not know standby
			# snapshots, and generic WAL raises no recovery conflict: a
			# standby query overtaken by page recycling starts again from
			# the current metapage without returning a row twice (section
			# 3b makes that certain, and the cancellation past the restarts)
			is($ret, 0, "$label: the cursor reads on without error")
			  or diag($bg->{stderr});
			my @ids = (@first, split /\n/, $rest);
			my %seen;
			my $dups = grep { $seen{$_}++ } @ids;
			is(scalar(@ids), $expected,
				"$label: the cursor returns every row of its snapshot ($expected)");
			is($dups, 0, "$label: and no row twice");
		}
		$bg->query('COMMIT') if $ret == 0;
		$bg->quit;
	}
}

# ---- 3b. recycling on the primary and queries on the standby
# The primary frees retired pages once no snapshot it knows of can reach
# them. It knows a standby's snapshots only through hot_standby_feedback:
# without it, a standby scan whose pages were freed starts again from the
# current metapage and returns exactly the rows of its snapshot, or, with
# simhash.standby_scan_restarts = 0 (or past that many restarts), is
# cancelled cleanly; with it, the pages wait for the query, which reads on
# exactly.
SKIP:
{
	skip 'background_psql is not available', 15
	  unless PostgreSQL::Test::Cluster->can('background_psql');

	# inserts in separate transactions: each merges, and recycles first what
	# earlier ones retired once no snapshot the primary knows of can reach
	# it. (No VACUUM here: the heap's own records would cancel the standby
	# query through an ordinary recovery conflict.)
	my $churn = sub {
		for (1 .. 12)
		{
			$primary->safe_psql('postgres',
				'INSERT INTO e (fp) SELECT rfp() FROM generate_series(1, 600)');
		}
		catchup('recycling churn');
	};
	my $open_cursor = sub {
		my ($set) = @_;
		my $bg = $standby->background_psql('postgres', on_error_stop => 0);
		$bg->query_safe($set) if $set;
		$bg->query_safe("$modes{index} BEGIN ISOLATION LEVEL REPEATABLE READ;");
		my $expected = $bg->query_safe('SELECT count(fp) FROM e');
		my $xmin = $bg->query_safe('SELECT txid_snapshot_xmin(txid_current_snapshot())');
		$bg->query_safe("DECLARE c CURSOR FOR "
			  . "SELECT id FROM e WHERE fp <@ simhash_ball('0000000000000000', 64)");
		my @first = split /\n/, $bg->query_safe('FETCH 10 FROM c');
		return ($bg, $expected, $xmin, \@first);
	};

	# without feedback, no restart allowed: the cancellation
	my ($bg, $expected, $xmin, $first) = $open_cursor->('SET simhash.standby_scan_restarts = 0;');
	$churn->();
	my ($rest, $ret) = $bg->query('FETCH ALL FROM c');
	isnt($ret, 0, 'no feedback: the primary recycled pages a standby query still needed');
	like($bg->{stderr},
		qr/canceling statement: simhash index "e_fp_idx" was reorganised under it/,
		'no feedback, no restarts: the standby query is cancelled with a clear error');
	like($bg->{stderr}, qr/hot_standby_feedback/, 'no feedback: the hint names the remedy');
	# ending the session ends its failed transaction (PostgreSQL 17's
	# BackgroundPsql does not return from a query after an error)
	$bg->quit;

	# without feedback, by default: the scan starts again and returns the
	# rows of its snapshot, none twice (the first ten were returned before
	# the pages went)
	my $slog_offset = -s $standby->logfile;
	($bg, $expected, $xmin, $first) = $open_cursor->();
	$churn->();
	($rest, $ret) = $bg->query('FETCH ALL FROM c');
	is($ret, 0, 'no feedback: the standby query reads on') or diag($bg->{stderr});
	{
		my @ids = (@$first, split /\n/, $rest);
		my %seen;
		my $dups = grep { $seen{$_}++ } @ids;
		is(scalar(@ids) . " rows, $dups twice", "$expected rows, 0 twice",
			'no feedback: the restarted standby scan returns exactly the rows of its snapshot');
	}
	like(slurp_file($standby->logfile, $slog_offset),
		qr/simhash index "e_fp_idx": a scan on this standby starts again/,
		'no feedback: the scan started again (logged)');
	$bg->query('COMMIT');
	$bg->quit;

	# the same for an ordered (kNN) scan, whose pages go between its first
	# rows and the rest (a bitmap scan reads the whole index for its first
	# row: 027_index_standby_load.pl has its restarts)
	for my $case ([ 'kNN', "SELECT id FROM e ORDER BY fp <-> '0123456789abcdef'", 'count(*)' ])
	{
		my ($what, $sql, $count) = @$case;
		$slog_offset = -s $standby->logfile;
		$bg = $standby->background_psql('postgres', on_error_stop => 0);
		# the least work_mem: the search reads table 0 in bands of about
		# 10,000 entries, so the rest of e is read after the churn
		$bg->query_safe("SET work_mem = '64kB'; $modes{index} BEGIN ISOLATION LEVEL REPEATABLE READ;");
		my $n = $bg->query_safe("SELECT $count FROM e");
		my $plan = $bg->query_safe("EXPLAIN (COSTS OFF) $sql");
		like($plan, qr/Index Scan using e_fp_idx/, "no feedback, $what: the query reads the index")
		  or diag($plan);
		$bg->query_safe("DECLARE c CURSOR FOR $sql");
		my @got = split /\n/, $bg->query_safe('FETCH 10 FROM c');
		$churn->();
		($rest, $ret) = $bg->query('FETCH ALL FROM c');
		is($ret, 0, "no feedback, $what: the standby query reads on") or diag($bg->{stderr});
		push @got, split /\n/, $rest;
		my %seen;
		my $dups = grep { $seen{$_}++ } @got;
		is(scalar(@got) . " rows, $dups twice", "$n rows, 0 twice",
			"no feedback, $what: exactly the rows of its snapshot");
		like(slurp_file($standby->logfile, $slog_offset), qr/a scan on this standby starts again/,
			"no feedback, $what: the scan started again (logged)");
		$bg->query('COMMIT');
		$bg->quit;
	}

	# with feedback
	$standby->append_conf('postgresql.conf',
		"hot_standby_feedback = on\nwal_receiver_status_interval = 1s\n");
	$standby->reload;
	($bg, $expected, $xmin, $first) = $open_cursor->();
	ok( $primary->poll_query_until(
			'postgres',
			"SELECT coalesce(bool_and(backend_xmin::text::bigint <= $xmin), false) "
			  . "FROM pg_stat_replication"),
		'feedback: the primary holds the standby query\'s xmin');
	$churn->();
	my $held = $primary->safe_psql('postgres', "SELECT retired FROM simhash_index_info('e_fp_idx')");
	cmp_ok($held, '>', 0, "feedback: the primary keeps what the query may read ($held retired)");
	($rest, $ret) = $bg->query('FETCH ALL FROM c');
	is($ret, 0, 'feedback: the standby query reads on') or diag($bg->{stderr});
	my @ids = (@$first, split /\n/, $rest);
	my %seen;
	my $dups = grep { $seen{$_}++ } @ids;
	is(scalar(@ids) . " rows, $dups twice", "$expected rows, 0 twice",
		'feedback: the standby query returns exactly the rows of its snapshot');
	$bg->query('COMMIT');
	$bg->quit;

	# once the query is gone, the primary recycles what it held
	$primary->poll_query_until('postgres',
		"SELECT coalesce(bool_and(backend_xmin IS NULL OR backend_xmin::text::bigint > $xmin), true) "
		  . "FROM pg_stat_replication");
	for (1 .. 2)
	{
		$primary->safe_psql('postgres', 'SELECT txid_current()');
		$primary->safe_psql('postgres', 'VACUUM e');
	}
	my $after = $primary->safe_psql('postgres', "SELECT retired FROM simhash_index_info('e_fp_idx')");
	cmp_ok($after, '<', $held, "feedback: recycled once the query ended ($after retired)");
	$standby->append_conf('postgresql.conf', "hot_standby_feedback = off\n");
	$standby->reload;
}

# ---- 4. unlogged tables: after a crash their index is reset from the INIT
# fork and works
$primary->safe_psql(
	'postgres', q{
-- index built on existing rows (no WAL at all)
CREATE UNLOGGED TABLE u (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO u (fp) SELECT rfp() FROM generate_series(1, 3000);
INSERT INTO u (fp) SELECT flip(fp, 1 + (id % 5)::int) FROM u;
CREATE INDEX u_fp_idx ON u USING simhash (fp) WITH (pending_limit = 256);
-- index built empty (ambuildempty writes the INIT fork), filled by inserts
CREATE UNLOGGED TABLE u2 (id bigserial PRIMARY KEY, fp simhash);
CREATE INDEX u2_fp_idx ON u2 USING simhash (fp) WITH (pending_limit = 64);
DO $$ BEGIN FOR i IN 1..2000 LOOP INSERT INTO u2 (fp) VALUES (rfp()); END LOOP; END $$;
INSERT INTO u2 (fp) SELECT flip(fp, 2) FROM u2;
});

sub check_local
{
	my ($label, $tbl, $idx, $ncenters) = @_;
	verify($primary, $label, $tbl, $idx);
	make_queries($primary, $tbl, $ncenters);
	my $want = answers($primary, 'seq', $tbl, $idx);
	compare_answers("$label, $tbl, index scan", answers($primary, 'index', $tbl, $idx), $want);
	compare_answers("$label, $tbl, bitmap scan", answers($primary, 'bitmap', $tbl, $idx), $want);
	my $all = $primary->safe_psql('postgres', "SELECT count(fp) FROM $tbl");
	is( $primary->safe_psql(
			'postgres',
			"$modes{index} SELECT count(*) FROM $tbl WHERE fp <@ simhash_ball('fedcba9876543210', 64)"),
		$all,
		"$label, $tbl: radius 64 returns all $all fingerprints");
}

check_local('unlogged, before the crash', 'u', 'u_fp_idx', 20);
check_local('unlogged, before the crash', 'u2', 'u2_fp_idx', 20);

my $log_offset = -s $primary->logfile;
$primary->stop('immediate');
$primary->start;
my $plog = slurp_file($primary->logfile, $log_offset);
like($plog, qr/redo starts at|redo done at|database system was not properly shut down/,
	'primary went through crash recovery');
unlike($plog, qr/inconsistent page found/, 'primary crash recovery: no consistency check failure');

for my $t ([ 'u', 'u_fp_idx' ], [ 'u2', 'u2_fp_idx' ])
{
	my ($tbl, $idx) = @$t;
	is($primary->safe_psql('postgres', "SELECT count(*) FROM $tbl"),
		0, "unlogged $tbl is empty after the crash");
	is( $primary->safe_psql(
			'postgres', "SELECT runs, pending_entries FROM simhash_index_info('$idx')"),
		'0|0',
		"$idx is reset to an empty index");
	is( $primary->safe_psql(
			'postgres',
			"$modes{index} SELECT count(*) FROM $tbl WHERE fp <@ simhash_ball('fedcba9876543210', 64)"),
		0,
		"$idx answers nothing");
	$primary->safe_psql(
		'postgres', qq{
DO \$\$ BEGIN FOR i IN 1..1500 LOOP INSERT INTO $tbl (fp) VALUES (rfp()); END LOOP; END \$\$;
INSERT INTO $tbl (fp) SELECT flip(fp, 1 + (id % 4)::int) FROM $tbl;
DELETE FROM $tbl WHERE id % 6 = 0;
VACUUM $tbl;
INSERT INTO $tbl (fp) SELECT rfp() FROM generate_series(1, 500);
});
	check_local('unlogged, after the crash', $tbl, $idx, 20);
}

# the standby followed the primary through its crash: same answers still
compare_nodes('after the primary crashed', 'e', 'e_fp_idx', 30);

# ---- the standby never found a replayed page differing from its image
my $slog = slurp_file($standby->logfile);
unlike($slog, qr/inconsistent page found/, 'standby log: no WAL consistency check failure');
unlike($slog, qr/PANIC|TRAP:/, 'standby log: no PANIC or assertion failure');

$standby->stop;
$primary->stop;
note(sprintf('021_index_standby ran %.0f s', time - $t_start));
done_testing();
