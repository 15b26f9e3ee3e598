# The index under the load that corrupted it before 0.2.1: writers, a VACUUM
# loop, autovacuum, readers checked against a sequential scan, and
# immediate-stop crashes, on two indexes at once (pending_limit = 256 and
# the default), for a bounded time. On the code before the fix (a run writer
# and an insert could take the same block, replayed exactly by
# 022_index_races.pl) it found the index corrupted in its third cycle.
#
# Each table starts with $ROWS rows (random fingerprints, near-duplicates,
# 1% NULL) and its simhash index. For each cycle of $CYCLE seconds, per
# table, pgbench processes run as fast as they can
#   insert   (one client) 3,000 rows a transaction (300 origins with 9 near
#            copies each, 1% NULL), as the corrupting load's inserting
#            connection did;
#   delete   (one client) every row but the newest $ROWS ids, and a random
#            range of 300 ids among them, five times a second (so the
#            table keeps its size however long the test runs);
#   radius   (with knn, two clients)   check_radius(): one REPEATABLE READ snapshot, one query ball
#            (an existing row's fingerprint with 0-2 bits flipped, or a random
#            one), radius 0-10: an index scan, a bitmap scan and a sequential
#            scan must return the same ids;
#   knn      check_knn(): the k nearest (k 1-50) by the index and by a
#            sequential scan and sort must have the same distances;
# and one more client runs "SELECT txid_current(); VACUUM" in a loop (that load's
# second connection; the transaction id lets each VACUUM recycle what the
# previous one retired). Autovacuum runs too, with 1 s naptime and 1% scale
# factors. Every other cycle ends with pg_ctl stop -m immediate in the middle
# of the load, and the server is restarted (crash recovery).
#
# Fails on: any ERROR in any client (a check that differs raises one), a
# pgbench that did not finish cleanly in a cycle without a crash, any
# "corrupted", PANIC or signal-terminated backend in the server log, and after
# every cycle: simhash_index_verify() failing, or the index not returning
# exactly the sequential scan's answers for SIMHASH_STRESS_CHECKS (60)
# queries (radius and kNN; fewer keep the checks short when the tables grow,
# as they do without deletes).
#
# Time: SIMHASH_STRESS_SECONDS (default 120) split into cycles of
# SIMHASH_STRESS_CYCLE (default 30) seconds. Variants: the tables'
# pending_limit values SIMHASH_STRESS_PENDING_LIMITS (default "256 default"),
# and SIMHASH_STRESS_READERS, SIMHASH_STRESS_DELETES, SIMHASH_STRESS_CRASHES
# set to 0 leave out the readers, the deleters, the immediate stops (the
# corrupting load alone is READERS=0 DELETES=0 CRASHES=0). The developers' long run:
#   SIMHASH_STRESS_SECONDS=1800 prove ... test/t/023_index_stress.pl
# (doc/testing.md, says how to run one file).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $TOTAL = $ENV{SIMHASH_STRESS_SECONDS} // 120;
my $CYCLE = $ENV{SIMHASH_STRESS_CYCLE} // 30;
my $ROWS = $ENV{SIMHASH_STRESS_ROWS} // 200_000;
my $ncycles = $TOTAL > $CYCLE ? int($TOTAL / $CYCLE) : 1;
# variants of the load: SIMHASH_STRESS_PENDING_LIMITS (a list,
# "default" for the default), SIMHASH_STRESS_READERS, _DELETES, _CRASHES (0 off)
my @tables = map { [ $_ eq 'default' ? 'tdef' : "t$_", $_ eq 'default' ? undef : $_ ] }
  split ' ', ($ENV{SIMHASH_STRESS_PENDING_LIMITS} // '256 default');
my $READERS = $ENV{SIMHASH_STRESS_READERS} // 1;
my $DELETES = $ENV{SIMHASH_STRESS_DELETES} // 1;
my $CRASHES = $ENV{SIMHASH_STRESS_CRASHES} // 1;
# queries checked against a sequential scan after each cycle (at least 15)
my $CHECKS = $ENV{SIMHASH_STRESS_CHECKS} // 60;
$CHECKS = 15 if $CHECKS < 15;
note("tables @{[ map { $_->[0] } @tables ]}, readers $READERS, deletes $DELETES, crashes $CRASHES, "
	  . "$ncycles cycles of $CYCLE s");

my $node = PostgreSQL::Test::Cluster->new('stress');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_buffers = 128MB
max_connections = 40
log_statement = none
max_parallel_workers_per_gather = 0
autovacuum = on
autovacuum_naptime = 1s
autovacuum_vacuum_scale_factor = 0.01
autovacuum_vacuum_insert_scale_factor = 0.01
autovacuum_analyze_scale_factor = 0.01
synchronous_commit = off
jit = off
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
-- fp with up to k random bits flipped
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT ($1 # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                               FROM generate_series(1, $2)), 0)::simhash) $$;
-- 300 origins with 9 near copies each (1 or 2 bits away), 1% NULL; cheap,
-- so that the writer fills pending pages as fast as the corrupting load's did
CREATE FUNCTION batch() RETURNS TABLE (fp simhash) LANGUAGE sql VOLATILE
  AS $$ SELECT CASE WHEN random() < 0.01 THEN NULL
                    ELSE (o # CASE WHEN c = 0 THEN 0
                                   ELSE (1::bigint << ((g * 7 + c * 13) % 64)) |
                                        (1::bigint << ((g + c * 29) % 64)) END)::simhash END
        FROM (SELECT g, ('x' || md5(random()::text || g))::bit(64)::bigint AS o
              FROM generate_series(1, 300) g) s, generate_series(0, 9) c $$;

-- a query fingerprint: an existing row's with 0-2 bits flipped, or random
CREATE FUNCTION pick(tbl regclass) RETURNS simhash LANGUAGE plpgsql AS $$
DECLARE q simhash;
BEGIN
  IF random() < 0.2 THEN RETURN rfp(); END IF;
  EXECUTE format('SELECT fp FROM %s WHERE id >= (SELECT (random() * max(id))::bigint FROM %s)
                  AND fp IS NOT NULL ORDER BY id LIMIT 1', tbl, tbl) INTO q;
  RETURN flip(coalesce(q, rfp()), floor(random() * 3)::int);
END $$;

CREATE FUNCTION plan_for(idx boolean, bitmap boolean) RETURNS void LANGUAGE sql AS $$
  SELECT set_config('enable_seqscan', CASE WHEN idx OR bitmap THEN 'off' ELSE 'on' END, true),
         set_config('enable_indexscan', CASE WHEN idx THEN 'on' ELSE 'off' END, true),
         set_config('enable_bitmapscan', CASE WHEN bitmap THEN 'on' ELSE 'off' END, true) $$;

-- the ids within r of q by an index scan, a bitmap scan and a sequential
-- scan, in the caller's snapshot; an error if they differ
CREATE FUNCTION check_radius(tbl regclass, q simhash, r int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE a bigint[]; b bigint[]; c bigint[];
        sql text := format('SELECT array_agg(id ORDER BY id) FROM %s WHERE fp <~> $1 <= $2', tbl);
BEGIN
  PERFORM plan_for(true, false);
  EXECUTE sql INTO a USING q, r;
  PERFORM plan_for(false, true);
  EXECUTE sql INTO b USING q, r;
  PERFORM plan_for(false, false);
  EXECUTE sql INTO c USING q, r;
  PERFORM plan_for(true, true);
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RAISE EXCEPTION 'stress: % radius % around % differs: index scan %, bitmap scan %, sequential scan % rows',
      tbl, r, q, cardinality(a), cardinality(b), cardinality(c);
  END IF;
  RETURN coalesce(cardinality(c), 0);
END $$;

-- the distances of the k nearest rows by the index and by a sequential scan
CREATE FUNCTION check_knn(tbl regclass, q simhash, k int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE a int[]; c int[];
        sql text := format('SELECT array_agg(d ORDER BY n) FROM (SELECT fp <~> $1 AS d,
                              row_number() OVER () AS n FROM (SELECT fp FROM %s ORDER BY fp <-> $1
                              LIMIT $2) s) s', tbl);
BEGIN
  PERFORM plan_for(true, false);
  EXECUTE sql INTO a USING q, k;
  PERFORM plan_for(false, false);
  EXECUTE sql INTO c USING q, k;
  PERFORM plan_for(true, true);
  IF a IS DISTINCT FROM c THEN
    RAISE EXCEPTION 'stress: % % nearest to % differ: index % , sequential scan %', tbl, k, q, a, c;
  END IF;
  RETURN cardinality(c);
END $$;
});

for my $t (@tables)
{
	my ($tbl, $limit) = @$t;
	my $with = defined $limit ? "WITH (pending_limit = $limit)" : '';
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $tbl (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO $tbl (fp) SELECT fp FROM generate_series(1, $ROWS / 3000), batch();
CREATE INDEX ${tbl}_fp ON $tbl USING simhash (fp) $with;
VACUUM ANALYZE $tbl;
});
	for my $case ([ 'true, false', qr/Index Scan using ${tbl}_fp/ ],
		[ 'false, true', qr/Bitmap Index Scan on ${tbl}_fp/ ])
	{
		my $plan = $node->safe_psql('postgres',
			"BEGIN; SELECT plan_for($case->[0]); "
			  . "EXPLAIN (COSTS OFF) SELECT id FROM $tbl WHERE fp <~> '0123456789abcdef' <= 3; COMMIT");
		like($plan, $case->[1], "$tbl: the checks' plans use the index (plan_for($case->[0]))");
	}
	like(
		$node->safe_psql('postgres',
			"BEGIN; SELECT plan_for(true, false); EXPLAIN (COSTS OFF) SELECT fp FROM $tbl "
			  . "ORDER BY fp <-> '0123456789abcdef' LIMIT 5; COMMIT"),
		qr/Index Scan using ${tbl}_fp/,
		"$tbl: the kNN check uses the index");
}

my $dir = PostgreSQL::Test::Utils::tempdir;
my %script = (
	insert => "INSERT INTO :tbl (fp) SELECT fp FROM batch();\n",
	# the newest $ROWS ids stay (at most 30,000 rows go at once), and a
	# random 300 of them
	delete => "SELECT max(id) AS maxid FROM :tbl \\gset\n"
	  . "DELETE FROM :tbl WHERE id > :maxid - $ROWS - 30000 AND id <= :maxid - $ROWS;\n"
	  . "\\set lo random(:maxid - $ROWS, :maxid)\n"
	  . "DELETE FROM :tbl WHERE id >= :lo AND id < :lo + 300;\n"
	  . "\\sleep 200 ms\n",
	radius => "\\set r random(0, 10)\n"
	  . "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
	  . "SELECT check_radius(':tbl', pick(':tbl'), :r);\n"
	  . "COMMIT;\n",
	knn => "\\set k random(1, 50)\n"
	  . "BEGIN ISOLATION LEVEL REPEATABLE READ;\n"
	  . "SELECT check_knn(':tbl', pick(':tbl'), :k);\n"
	  . "COMMIT;\n",
	vacuum => "SELECT txid_current();\nVACUUM :tbl;\n");
for my $name (keys %script)
{
	PostgreSQL::Test::Utils::append_to_file("$dir/$name.sql", $script{$name});
}

# One pgbench process: its harness and output.
sub start_pgbench
{
	my ($tbl, $secs, @args) = @_;
	my $p = { out => '', err => '' };
	$p->{h} = IPC::Run::start(
		[
			'pgbench', '-n', '-T', $secs, '-D', "tbl=$tbl",
			'-h', $node->host, '-p', $node->port, @args, 'postgres'
		],
		'<', \undef, '>', \$p->{out}, '2>', \$p->{err},
		IPC::Run::timeout($secs + $PostgreSQL::Test::Utils::timeout_default));
	return $p;
}

# The answers after a cycle: verify, and $CHECKS queries (both kinds of check).
sub check_after
{
	my ($what) = @_;
	for my $t (@tables)
	{
		my $tbl = $t->[0];
		my ($rc, $out, $err) =
		  $node->psql('postgres', "SELECT heap_tuples_checked FROM simhash_index_verify('${tbl}_fp')");
		is($err, '', "$what: simhash_index_verify('${tbl}_fp') passes");
		($rc, $out, $err) = $node->psql(
			'postgres', qq{
SELECT setseed(0.5);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT sum(check_radius('$tbl', pick('$tbl'), r)) FROM generate_series(0, 9) r, generate_series(1, @{[ int($CHECKS / 15) ]});
SELECT sum(check_knn('$tbl', pick('$tbl'), k)) FROM generate_series(1, @{[ int($CHECKS / 3) ]}) k;
COMMIT;
});
		is($err, '', "$what: $tbl answers as a sequential scan does ($CHECKS queries)");
	}
}

# Client errors other than losing the server to the immediate stop.
sub client_errors
{
	my ($p) = @_;
	return join("\n", grep { /ERROR:|stress:/ } split /\n/, $p->{err});
}

my $logstart = -s $node->logfile;
my %done = (insert => 0, delete => 0, radius => 0, knn => 0, vacuum => 0);
my $t0 = time;
for my $cycle (1 .. $ncycles)
{
	my $crash = $CRASHES && ($cycle % 2 == 0);
	my @procs;
	for my $t (@tables)
	{
		my $tbl = $t->[0];
		push @procs, [ "$tbl writer", start_pgbench($tbl, $CYCLE, '-f', "$dir/insert.sql") ];
		push @procs, [ "$tbl deleter", start_pgbench($tbl, $CYCLE, '-f', "$dir/delete.sql") ]
		  if $DELETES;
		push @procs,
		  [
			"$tbl readers",
			start_pgbench(
				$tbl, $CYCLE, '-c', '2', '-j', '2',
				'-f', "$dir/radius.sql\@1", '-f', "$dir/knn.sql\@1")
		  ]
		  if $READERS;
		push @procs, [ "$tbl VACUUM loop", start_pgbench($tbl, $CYCLE, '-f', "$dir/vacuum.sql") ];
	}
	if ($crash)
	{
		# stop the server under load, somewhere in the second half of the cycle
		sleep($CYCLE * (0.5 + 0.4 * rand()));
		$node->stop('immediate');
	}
	for my $p (@procs)
	{
		my ($name, $pb) = @$p;
		$pb->{h}->finish;
		my $errors = client_errors($pb);
		is($errors, '', "cycle $cycle: $name: no client error") or diag(substr($pb->{err}, 0, 4000));
		is($pb->{h}->result(0), 0, "cycle $cycle: $name: pgbench finished cleanly")
		  or diag(substr($pb->{err}, 0, 4000))
		  unless $crash;
		# the transactions run, by script (pgbench prints them at its end)
		for my $s (keys %done)
		{
			$done{$s} += $1 if $pb->{out} =~ /SQL script \d+: \S*\/$s\.sql\n.*?- (\d+) transactions/s;
		}
		my ($one) = $name =~ /(writer|deleter|VACUUM)/;
		$done{ { writer => 'insert', deleter => 'delete', VACUUM => 'vacuum' }->{$one} } += $1
		  if $one && $pb->{out} =~ /number of transactions actually processed: (\d+)/;
	}
	$node->start if $crash;
	check_after("cycle $cycle" . ($crash ? ' (after an immediate stop and recovery)' : ''));
}
note(sprintf('%d cycles in %.0f s: %s', $ncycles, time - $t0,
	join(', ', map { "$_ $done{$_}" } sort keys %done)));
cmp_ok($done{insert}, '>', 0, 'inserts ran');
cmp_ok($done{radius} + $done{knn}, '>', 0, 'checked searches ran') if $READERS;
cmp_ok($done{vacuum}, '>', 0, 'the VACUUM loop ran');

my $log = slurp_file($node->logfile, $logstart);
my @bad = grep { /corrupted|PANIC|TRAP|terminated by signal|stress:/ } split /\n/, $log;
is(scalar(@bad), 0, 'the server log has no corruption, PANIC, failed assertion or crashed backend')
  or diag(join("\n", @bad[ 0 .. ($#bad < 20 ? $#bad : 20) ]));

$node->stop;
done_testing();
