# Crash safety of the simhash index access method.
#
# Several cycles of: concurrent sessions insert random fingerprints and
# near-duplicates (and in some cycles delete rows and VACUUM) into a table with
# a simhash index whose small pending list makes merges and page recycling
# frequent; the server is stopped in immediate mode while they run (a crash);
# after crash recovery the index must answer exactly what a sequential scan
# answers, through index scans and bitmap scans, for many queries at radii
# 0..12, radius 64 must return every non-NULL fingerprint, and
# simhash_index_verify() must find the structure sound. Recovery runs with
# wal_consistency_checking = 'generic', so every replayed page is also compared
# with the full-page image the server logged with it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $t_start = time;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
wal_level = replica
max_wal_senders = 0
autovacuum = off
shared_buffers = 16MB
max_connections = 30
wal_consistency_checking = 'generic'
# pgbench would flood the log with statements
log_statement = none
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
-- a uniformly random fingerprint
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
-- fp with up to k random bits flipped (a near-duplicate)
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT ($1::bigint # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                                         FROM generate_series(1, $2)), 0))::simhash $$;
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash, src text);
-- random rows, near-duplicates of them, a skewed group (upper 40 bits zero), NULLs
INSERT INTO t (fp, src) SELECT rfp(), 'random' FROM generate_series(1, 6000);
INSERT INTO t (fp, src) SELECT flip(fp, 1 + (id % 6)::int), 'near' FROM t WHERE id % 2 = 0;
INSERT INTO t (fp, src) SELECT (rfp()::bigint & x'0000000000ffffff'::bigint)::simhash, 'skewed'
  FROM generate_series(1, 500);
INSERT INTO t (fp, src) SELECT NULL, 'null' FROM generate_series(1, 100);
CREATE INDEX t_fp_idx ON t USING simhash (fp) WITH (pending_limit = 256);
});

# simhash_index_verify() is part of the extension: its absence is a failure
is($node->safe_psql('postgres', "SELECT to_regproc('simhash_index_verify') IS NOT NULL"),
	't', 'simhash_index_verify() exists');

my $nbase = $node->safe_psql('postgres', 'SELECT max(id) FROM t');

# ---- pgbench scripts
my $dir = PostgreSQL::Test::Utils::tempdir;
sub write_script
{
	my ($name, $text) = @_;
	open my $fh, '>', "$dir/$name" or die "cannot write $dir/$name: $!";
	print $fh $text;
	close $fh;
	return "$dir/$name";
}
# one row: a random fingerprint (40%) or a near-duplicate of an older row
my $ins = write_script(
	'ins.sql', q{
\set k random(0, 9)
\set base random(1, :nbase)
INSERT INTO t (fp, src) VALUES (CASE WHEN :k < 4 THEN rfp()
  ELSE flip((SELECT fp FROM t WHERE id = :base), :k - 3) END, 'pgbench');
});
# a batch (fills the pending list quickly)
my $bulk = write_script(
	'bulk.sql', q{
INSERT INTO t (fp, src) SELECT rfp(), 'bulk' FROM generate_series(1, 40);
});
# searches (they pin the metapage, so recycling has to wait for them)
my $query = write_script(
	'query.sql', q{
\set hi random(-2147483648, 2147483647)
\set lo random(0, 4294967295)
\set r random(0, 12)
\set base random(1, :nbase)
SELECT count(*) FROM t WHERE fp <@ simhash_ball(((:hi::bigint << 32) | :lo::bigint)::simhash, :r);
SELECT count(*) FROM t WHERE fp <@ simhash_ball((SELECT fp FROM t WHERE id = :base), :r);
});
# deletes and VACUUM (dead entries, merges from VACUUM, page recycling)
my $maint = write_script(
	'maint.sql', q{
\set a random(1, :maxid)
DELETE FROM t WHERE id BETWEEN :a AND :a + 20;
VACUUM t;
\sleep 200 ms
});

sub start_pgbench
{
	my ($clients, $vars, @files) = @_;
	my ($out, $err) = ('', '');
	my @cmd = (
		'pgbench', '-n', '-c', $clients, '-j', $clients, '-T', '600',
		'-h', $node->host, '-p', $node->port,
		(map { ('-D', $_) } @$vars),
		(map { ('-f', $_) } @files), 'postgres');
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(900));
	return { h => $h, out => \$out, err => \$err, cmd => "@cmd" };
}

sub finish_pgbench
{
	my ($pb) = @_;
	eval { $pb->{h}->finish; };
	eval { $pb->{h}->kill_kill; } if $@;
	my $err = ${ $pb->{err} };
	my ($tx) = ${ $pb->{out} } =~ /number of transactions actually processed: (\d+)/;
	note("pgbench (@{[ $pb->{cmd} =~ m{-f \S*/(\w+)\.sql}g ]}): "
		  . ($tx // 'no summary (crashed)') . '; stderr: '
		  . join(' / ', (split /\n/, $err)[ 0 .. 2 ]));
	# the crash makes every client fail; other errors would be unexpected
	my @bad = grep {
		/ERROR/
		  && !/terminating connection|server closed the connection|connection to server|
			   could not send data|no connection to the server|the database system is/x
	} split /\n/, $err;
	return @bad;
}

# ---- comparing index answers with sequential-scan answers

my %modes = (
	index => 'SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = on;',
	bitmap => 'SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = on;',
	seq => 'SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;');

# 40 centres: rows of the table, near-duplicates of rows, random; radii 0..12
sub make_queries
{
	my ($node, $tbl, $pool_filter) = @_;
	$pool_filter //= 'true';
	# 15 of the centres are rows that have another row within 6 bits, so that
	# some queries have several matches whatever the share of random rows the
	# sessions added (it depends on the machine's speed); they are drawn from
	# a random pool of rows (restricted by $pool_filter) and checked through
	# the index: a broken index finds fewer, and the check below fails
	$node->safe_psql(
		'postgres', qq{
DROP TABLE IF EXISTS qs;
CREATE TABLE qs (qid serial PRIMARY KEY, center simhash NOT NULL, r int NOT NULL);
WITH c AS (
  (SELECT p.fp AS center FROM (SELECT fp FROM $tbl WHERE fp IS NOT NULL AND $pool_filter
                     ORDER BY random() LIMIT 2000) p
   WHERE (SELECT count(*) FROM $tbl x WHERE x.fp <@ simhash_ball(p.fp, 6)) > 1 LIMIT 15)
  UNION ALL
  (SELECT fp AS center FROM $tbl WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
  UNION ALL
  (SELECT flip(fp, 1 + (random() * 5)::int) FROM $tbl WHERE fp IS NOT NULL ORDER BY random() LIMIT 10)
  UNION ALL
  SELECT rfp() FROM generate_series(1, 5))
INSERT INTO qs (center, r) SELECT center, r FROM c, generate_series(0, 12) r ORDER BY center, r;
ANALYZE qs;
});
}

sub answer_sql
{
	my ($tbl) = @_;
	return qq{
SELECT q.qid, q.center, q.r, count(m.id), coalesce(sum(m.id), 0),
       md5(coalesce(string_agg(m.id::text, ',' ORDER BY m.id), ''))
FROM qs q LEFT JOIN LATERAL
     (SELECT x.id FROM $tbl x WHERE x.fp <@ simhash_ball(q.center, q.r)) m ON true
GROUP BY q.qid ORDER BY q.qid};
}

sub answers
{
	my ($node, $mode, $tbl, $idx) = @_;
	my $sql = answer_sql($tbl);
	my $plan = $node->safe_psql('postgres', "$modes{$mode} EXPLAIN (COSTS OFF) $sql");
	my $uses =
	    $mode eq 'index' ? $plan =~ /Index Scan using $idx/
	  : $mode eq 'bitmap' ? $plan =~ /Bitmap Index Scan on $idx/
	  : $plan !~ /$idx/;
	ok($uses, "plan on $tbl for the $mode path uses the intended access path")
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

sub check_index
{
	my ($label, $tbl, $idx, $min_multi, $pool_filter) = @_;
	$min_multi //= 60;

	{
		my ($ret, $out, $err) = $node->psql('postgres',
			"SELECT *, (SELECT count(*) FROM $tbl) FROM simhash_index_verify('$idx')");
		is($ret, 0, "$label: simhash_index_verify succeeds") or diag($err);
		my @f = split /\|/, $out;
		is($f[3], $f[4], "$label: verify checked every live row")
		  if $ret == 0;
	}

	make_queries($node, $tbl, $pool_filter);
	my $seq = answers($node, 'seq', $tbl, $idx);
	my $ix = answers($node, 'index', $tbl, $idx);
	my $bm = answers($node, 'bitmap', $tbl, $idx);
	compare_answers("$label, index scan", $ix, $seq);
	compare_answers("$label, bitmap scan", $bm, $seq);

	# the queries are not vacuous: most centres have matches, some several
	my ($nonempty, $multi) = (0, 0);
	for (@$seq)
	{
		my @f = split /\|/;
		$nonempty++ if $f[3] > 0;
		$multi++ if $f[3] > 1;
	}
	cmp_ok($multi, '>', $min_multi, "$label: queries with several matches ($nonempty non-empty, $multi several)");

	# radius 64 returns every row that has a fingerprint
	my $all = $node->safe_psql('postgres', "SELECT count(fp) FROM $tbl");
	for my $mode ('index', 'bitmap')
	{
		is( $node->safe_psql(
				'postgres',
				"$modes{$mode} SELECT count(*) FROM $tbl "
				  . "WHERE fp <@ simhash_ball('0123456789abcdef', 64)"),
			$all,
			"$label: radius 64 via $mode scan returns all $all fingerprints");
	}
}

check_index('before any crash', 't', 't_fp_idx', 60, "src = 'near'");

# ---- the crash cycles
my $ncycles = 4;
for my $cycle (1 .. $ncycles)
{
	my $label = "cycle $cycle";
	my ($tbl, $idx) = ('t', 't_fp_idx');
	my $maxid = $node->safe_psql('postgres', "SELECT max(id) FROM $tbl");
	my $with_vacuum = ($cycle % 2 == 0);

	my @pb = (start_pgbench(3, ["nbase=$nbase"], "$ins\@10", "$bulk\@1", "$query\@3"));
	push @pb, start_pgbench(1, ["maxid=$maxid"], $maint) if $with_vacuum;

	sleep(1.5);
	# a checkpoint while sessions write: recovery then starts from a redo
	# point in the middle of the activity, after full-page images
	$node->safe_psql('postgres', 'CHECKPOINT') if $cycle >= 3;
	sleep(1.0 + $cycle);
	if ($cycle == 3)
	{
		# a VACUUM that completes just before the crash
		$node->safe_psql('postgres',
			"DELETE FROM $tbl WHERE id % 17 = 3 AND id > $maxid - 5000; VACUUM $tbl");
	}
	my $info = $node->safe_psql('postgres', "SELECT * FROM simhash_index_info('$idx')");
	note("$label: index just before the crash: $info");

	my $log_offset = -s $node->logfile;
	$node->stop('immediate');
	my @bad;
	push @bad, finish_pgbench($_) for @pb;
	is(scalar(@bad), 0, "$label: sessions saw no error other than the crash")
	  or diag(join("\n", @bad));

	$node->start;
	my $log = slurp_file($node->logfile, $log_offset);
	like($log, qr/redo starts at/, "$label: crash recovery replayed WAL");
	unlike($log, qr/inconsistent page found/,
		"$label: no WAL consistency check failure during recovery");
	unlike($log, qr/PANIC|TRAP:|server process .* was terminated by signal/,
		"$label: no PANIC or assertion failure");

	my $inserted = $node->safe_psql('postgres', "SELECT count(*) FROM $tbl WHERE id > $maxid");
	cmp_ok($inserted, '>', 500, "$label: the sessions inserted rows ($inserted survive)");
	note("$label: after recovery: "
		  . $node->safe_psql('postgres', "SELECT * FROM simhash_index_info('$idx')"));

	check_index("$label, after crash recovery", 't', 't_fp_idx', 60, "src = 'near'");

	if ($cycle == 3)
	{
		# and VACUUM works on the recovered index (reclaims what the crash orphaned)
		$node->safe_psql('postgres', "DELETE FROM $tbl WHERE id % 23 = 5; VACUUM $tbl");
		check_index("$label, after VACUUM of the recovered index", 't', 't_fp_idx', 60, "src = 'near'");
	}
}

# ---- a crash in the middle of VACUUM's index pass
# VACUUM marks dead entries page by page (one WAL record per page): table 0
# of the runs serving it first, then the other tables. A crash part-way leaves
# an entry marked dead in some tables and live in others, within a run or,
# once VACUUM has folded tables (runs serving some tables only), across runs.
# The heap tuples stay dead (their line pointers are freed only after a
# complete index pass), so the next VACUUM can finish the job; meanwhile the
# recovered index must still answer correctly, pass its verifier, and merge
# those runs correctly (a merge of a run the crash left flagged passes the
# flag on, so the next bulk delete asks VACUUM's callback for every table).
sub vacuum_crash_case
{
	my ($label, $tbl, $prefold) = @_;
	my $idx = "${tbl}_fp_idx";
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $tbl (id bigint, fp simhash);
INSERT INTO $tbl SELECT g, rfp() FROM generate_series(1, 6000) g;
INSERT INTO $tbl SELECT id + 6000, flip(fp, 1 + (id % 6)::int) FROM $tbl;
CREATE INDEX $idx ON $tbl USING simhash (fp) WITH (pending_limit = 8192);
});
	if ($prefold)
	{
		# runs serving some tables only: a second run, then two folds
		$node->safe_psql('postgres',
			"INSERT INTO $tbl SELECT 50000 + g, rfp() FROM generate_series(1, 3000) g");
		for (1 .. 2)
		{
			$node->safe_psql('postgres', 'SELECT txid_current()');
			$node->safe_psql('postgres', "VACUUM $tbl");
		}
		my $tables = $node->safe_psql('postgres',
			"SELECT run_tables FROM simhash_index_info('$idx')");
		note("$label: runs before the crash: $tables");
		like($tables, qr/"\d,\d"/, "$label: some runs serve only some tables");
	}
	$node->safe_psql('postgres', "DELETE FROM $tbl WHERE id % 3 = 0");
	my ($out, $err) = ('', '');
	# a slow VACUUM: every page read or dirtied waits a little
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-h', $node->host, '-p', $node->port, '-d', 'postgres',
			'-c', "SET vacuum_cost_delay = '100ms'",
			'-c', 'SET vacuum_cost_limit = 1',
			'-c', "VACUUM $tbl"
		],
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(300));
	ok( $node->poll_query_until(
			'postgres',
			qq{SELECT phase = 'vacuuming indexes' FROM pg_stat_progress_vacuum
			  WHERE relid = '$tbl'::regclass}),
		"$label: VACUUM reached its index pass");
	# about 20 leaves per table, some 100 ms each: table 0 is done, the
	# last table not begun
	sleep(3.5);
	is( $node->safe_psql(
			'postgres',
			qq{SELECT phase FROM pg_stat_progress_vacuum WHERE relid = '$tbl'::regclass}),
		'vacuuming indexes',
		"$label: VACUUM still in its index pass at the crash");
	my $log_offset = -s $node->logfile;
	$node->stop('immediate');
	eval { $h->finish; };
	$node->start;
	unlike(slurp_file($node->logfile, $log_offset), qr/inconsistent page found/,
		"$label: no WAL consistency check failure during recovery");
	note("$label: after recovery: "
		  . $node->safe_psql('postgres', "SELECT * FROM simhash_index_info('$idx')"));
	check_index("$label, after recovery", $tbl, $idx, 5);

	# enough inserts for a merge that takes the half-vacuumed run in (runs
	# serving every table), then VACUUM rounds that fold every table
	$node->safe_psql('postgres',
		"INSERT INTO $tbl SELECT 100000 + g, rfp() FROM generate_series(1, 8300) g");
	my $info = $node->safe_psql('postgres',
		"SELECT runs, run_entries, run_tables FROM simhash_index_info('$idx')");
	note("$label: after a merge: $info");
	check_index("$label, after a merge of that run", $tbl, $idx, 5);

	for (1 .. 5)
	{
		$node->safe_psql('postgres', 'SELECT txid_current()');
		$node->safe_psql('postgres', "VACUUM $tbl");
	}
	note("$label: after VACUUM: "
		  . $node->safe_psql('postgres',
			"SELECT runs, run_entries, run_tables FROM simhash_index_info('$idx')"));
	check_index("$label, after complete VACUUMs", $tbl, $idx, 5);

	# the freed heap slots take new rows: no stale entry may answer for them
	$node->safe_psql('postgres',
		"INSERT INTO $tbl SELECT 200000 + g, rfp() FROM generate_series(1, 4000) g");
	check_index("$label, after new rows in freed slots", $tbl, $idx, 5);
}

vacuum_crash_case('crash during the index pass of VACUUM', 'v', 0);
vacuum_crash_case('crash during the index pass of VACUUM, runs serving some tables', 'vf', 1);

# the log must hold no consistency failure from any recovery
unlike(slurp_file($node->logfile), qr/inconsistent page found/,
	'server log: no WAL consistency check failure at all');

$node->stop;
note(sprintf('020_index_crash ran %.0f s', time - $t_start));
done_testing();
