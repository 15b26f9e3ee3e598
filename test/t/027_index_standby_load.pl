# Readers on a streaming standby under the write load of a busy primary,
# with hot_standby_feedback = off (PostgreSQL's default).
#
# Without feedback the primary recycles pages that merges retired as soon as
# no snapshot of its own can reach them (src/mih/README, "Freeing"); a
# standby query may still be walking them. Such a scan starts again from the
# current metapage (at most simhash.standby_scan_restarts times) instead of
# failing; the cancellation ("was reorganised under it") is the last resort.
# PostgreSQL's own recovery conflicts (the heap's pruning and VACUUM records)
# cancel standby queries too: this test counts both, for readers that use
# the index and for "baseline" readers running the same checks by
# sequential scans only, over the same period.
#
# Primary (pgbench, as fast as they can): two clients inserting 3,000 rows a
# transaction, one deleting all but the newest $ROWS ids and a random range
# of 300, one running "SELECT txid_current(); VACUUM" in a loop; the index
# has pending_limit = 256, so it merges (and recycles) all the time.
# Standby: two index readers (a radius check: index scan, bitmap scan and
# sequential scan in one snapshot; a 10-NN check: index and sequential scan
# with sort) and two baseline readers (the same checks, every scan
# sequential). A check that differs raises an error, which fails the test.
#
# Asserts: no wrong answer; the checks' plans use the index; the index
# readers' "reorganised" cancellations are no more than the baseline
# readers' recovery-conflict cancellations plus a margin of one per 30
# seconds (the restart makes zero the usual count; see the note at the end);
# simhash_index_verify() on the standby, during the load (passes, or is
# cancelled as a scan would be; never reports corruption) and after it
# (passes, every row checked).
#
# Time: SIMHASH_STANDBY_SECONDS (default 25) of load. The measurement run:
#   SIMHASH_STANDBY_SECONDS=300 prove ... test/t/027_index_standby_load.pl
# and SIMHASH_STANDBY_RESTARTS=0 measures the behaviour without restarts.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time sleep);

my $t_start = time;
my $SECS = $ENV{SIMHASH_STANDBY_SECONDS} // 25;
my $ROWS = $ENV{SIMHASH_STANDBY_ROWS} // 60_000;
my $RESTARTS = $ENV{SIMHASH_STANDBY_RESTARTS};

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf(
	'postgresql.conf', q{
autovacuum = off
shared_buffers = 64MB
max_connections = 30
log_statement = none
synchronous_commit = off
jit = off
max_parallel_workers_per_gather = 0
max_wal_size = 2GB
});
$primary->start;
$primary->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('standby')");
$primary->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
CREATE FUNCTION rfp() RETURNS simhash LANGUAGE sql VOLATILE
  AS $$ SELECT (('x' || md5(random()::text || clock_timestamp()::text))::bit(64)::bigint)::simhash $$;
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT
  AS $$ SELECT ($1 # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                               FROM generate_series(1, $2)), 0)::simhash) $$;
-- 300 origins with 9 near copies each, 1% NULL
CREATE FUNCTION batch() RETURNS TABLE (fp simhash) LANGUAGE sql VOLATILE
  AS $$ SELECT CASE WHEN random() < 0.01 THEN NULL
                    ELSE (o # CASE WHEN c = 0 THEN 0
                                   ELSE (1::bigint << ((g * 7 + c * 13) % 64)) |
                                        (1::bigint << ((g + c * 29) % 64)) END)::simhash END
        FROM (SELECT g, ('x' || md5(random()::text || g))::bit(64)::bigint AS o
              FROM generate_series(1, 300) g) s, generate_series(0, 9) c $$;
-- a query fingerprint: an existing row's with 0-2 bits flipped, or random
CREATE FUNCTION pick() RETURNS simhash LANGUAGE plpgsql AS $$
DECLARE q simhash;
BEGIN
  IF random() < 0.2 THEN RETURN rfp(); END IF;
  SELECT fp INTO q FROM t WHERE id >= (SELECT (random() * max(id))::bigint FROM t)
    AND fp IS NOT NULL ORDER BY id LIMIT 1;
  RETURN flip(coalesce(q, rfp()), floor(random() * 3)::int);
END $$;
CREATE FUNCTION plan_for(idx boolean, bitmap boolean) RETURNS void LANGUAGE sql AS $$
  SELECT set_config('enable_seqscan', CASE WHEN idx OR bitmap THEN 'off' ELSE 'on' END, true),
         set_config('enable_indexscan', CASE WHEN idx THEN 'on' ELSE 'off' END, true),
         set_config('enable_bitmapscan', CASE WHEN bitmap THEN 'on' ELSE 'off' END, true) $$;
-- The ids within r of q three times in the statement's snapshot (STABLE: its
-- queries share the calling statement's, so a check is one statement and
-- its session is never idle in a transaction, which a recovery conflict
-- would end): by an index scan, a bitmap scan and a sequential scan, or
-- (use_index false, the baseline) by three sequential scans. An error if
-- they differ.
CREATE FUNCTION check_radius(q simhash, r int, use_index boolean) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE a bigint[]; b bigint[]; c bigint[];
        sql text := 'SELECT array_agg(id ORDER BY id) FROM t WHERE fp <~> $1 <= $2';
BEGIN
  PERFORM plan_for(use_index, false);
  EXECUTE sql INTO a USING q, r;
  PERFORM plan_for(false, use_index);
  EXECUTE sql INTO b USING q, r;
  PERFORM plan_for(false, false);
  EXECUTE sql INTO c USING q, r;
  PERFORM plan_for(true, true);
  IF a IS DISTINCT FROM c OR b IS DISTINCT FROM c THEN
    RAISE EXCEPTION 'standby load: radius % around % differs: index scan %, bitmap scan %, sequential scan % rows',
      r, q, cardinality(a), cardinality(b), cardinality(c);
  END IF;
  RETURN coalesce(cardinality(c), 0);
END $$;
-- the distances of the k nearest rows, by the index (or a sequential scan
-- and sort, the baseline) and by a sequential scan and sort
CREATE FUNCTION check_knn(q simhash, k int, use_index boolean) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE a int[]; c int[];
        sql text := 'SELECT array_agg(d ORDER BY n) FROM (SELECT fp <~> $1 AS d,
                       row_number() OVER () AS n FROM (SELECT fp FROM t ORDER BY fp <-> $1
                       LIMIT $2) s) s';
BEGIN
  PERFORM plan_for(use_index, false);
  EXECUTE sql INTO a USING q, k;
  PERFORM plan_for(false, false);
  EXECUTE sql INTO c USING q, k;
  PERFORM plan_for(true, true);
  IF a IS DISTINCT FROM c THEN
    RAISE EXCEPTION 'standby load: % nearest to % differ: index %, sequential scan %', k, q, a, c;
  END IF;
  RETURN cardinality(c);
END $$;
});
$primary->safe_psql(
	'postgres', qq{
CREATE TABLE t (id bigserial PRIMARY KEY, fp simhash);
INSERT INTO t (fp) SELECT fp FROM generate_series(1, $ROWS / 3000), batch();
CREATE INDEX t_fp ON t USING simhash (fp) WITH (pending_limit = 256);
VACUUM ANALYZE t;
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf(
	'postgresql.conf', qq{
primary_slot_name = 'standby'
hot_standby_feedback = off
max_connections = 30
jit = off
max_parallel_workers_per_gather = 0
});
$standby->append_conf('postgresql.conf', "simhash.standby_scan_restarts = $RESTARTS\n")
  if defined $RESTARTS;
$standby->start;
$primary->wait_for_catchup($standby, 'replay');
is($standby->safe_psql('postgres', 'SHOW hot_standby_feedback'),
	'off', 'the standby sends no feedback (the default)');

for my $case ([ 'true, false', qr/Index Scan using t_fp/, 'index scan' ],
	[ 'false, true', qr/Bitmap Index Scan on t_fp/, 'bitmap scan' ])
{
	my $plan = $standby->safe_psql('postgres',
		"BEGIN; SELECT plan_for($case->[0]); "
		  . "EXPLAIN (COSTS OFF) SELECT id FROM t WHERE fp <~> '0123456789abcdef' <= 3; COMMIT");
	like($plan, $case->[1], "standby: the radius check's $case->[2] uses the index");
}
like(
	$standby->safe_psql('postgres',
		"BEGIN; SELECT plan_for(true, false); EXPLAIN (COSTS OFF) SELECT fp FROM t "
		  . "ORDER BY fp <-> '0123456789abcdef' LIMIT 10; COMMIT"),
	qr/Index Scan using t_fp/,
	'standby: the kNN check uses the index');
unlike(
	$standby->safe_psql('postgres',
		"BEGIN; SELECT plan_for(false, false); EXPLAIN (COSTS OFF) SELECT fp FROM t "
		  . "ORDER BY fp <-> '0123456789abcdef' LIMIT 10; COMMIT"),
	qr/t_fp/,
	'standby: the baseline kNN check does not');

my $dir = PostgreSQL::Test::Utils::tempdir;
my %script = (
	insert => "INSERT INTO t (fp) SELECT fp FROM batch();\n",
	delete => "SELECT max(id) AS maxid FROM t \\gset\n"
	  . "DELETE FROM t WHERE id > :maxid - $ROWS - 30000 AND id <= :maxid - $ROWS;\n"
	  . "\\set lo random(:maxid - $ROWS, :maxid)\n"
	  . "DELETE FROM t WHERE id >= :lo AND id < :lo + 300;\n"
	  . "\\sleep 200 ms\n",
	vacuum => "SELECT txid_current();\nVACUUM t;\n",
	radius_index => "\\set r random(0, 10)\nSELECT check_radius(pick(), :r, true);\n",
	knn_index => "SELECT check_knn(pick(), 10, true);\n",
	radius_seq => "\\set r random(0, 10)\nSELECT check_radius(pick(), :r, false);\n",
	knn_seq => "SELECT check_knn(pick(), 10, false);\n");
for my $name (keys %script)
{
	PostgreSQL::Test::Utils::append_to_file("$dir/$name.sql", $script{$name});
}

# One pgbench process on a node: its harness and output. Errors are printed
# one by one (--verbose-errors); serialization failures (SQLSTATE 40001, the
# code of both kinds of cancellation) are counted and the client goes on.
sub start_pgbench
{
	my ($node, @args) = @_;
	my $p = { out => '', err => '' };
	$p->{h} = IPC::Run::start(
		[
			'pgbench', '-n', '-T', $SECS, '--verbose-errors', '--failures-detailed',
			'-h', $node->host, '-p', $node->port, @args, 'postgres'
		],
		'<', \undef, '>', \$p->{out}, '2>', \$p->{err},
		IPC::Run::timeout($SECS + $PostgreSQL::Test::Utils::timeout_default));
	return $p;
}

my $slog_start = -s $standby->logfile;
my %procs = (
	writers => start_pgbench($primary, '-c', '2', '-j', '2', '-f', "$dir/insert.sql"),
	deleter => start_pgbench($primary, '-f', "$dir/delete.sql"),
	vacuum => start_pgbench($primary, '-f', "$dir/vacuum.sql"),
	index_readers => start_pgbench(
		$standby, '-c', '2', '-j', '2', '-f', "$dir/radius_index.sql\@1",
		'-f', "$dir/knn_index.sql\@1"),
	baseline_readers => start_pgbench(
		$standby, '-c', '2', '-j', '2', '-f', "$dir/radius_seq.sql\@1",
		'-f', "$dir/knn_seq.sql\@1"));

# verify on the standby in the middle of the load: replay changes the index
# meanwhile; it passes, or is cancelled as a scan would be
sleep($SECS / 2);
my ($vret, $vout, $verr) = $standby->psql('postgres',
	"SELECT runs, heap_tuples_checked FROM simhash_index_verify('t_fp')");
ok($vret == 0 || $verr =~ /was reorganised while it was verified/,
	'standby, under load: simhash_index_verify passes or is cancelled, never reports corruption')
  or diag($verr);
note('standby, under load: verify ' . ($vret == 0 ? "passed ($vout)" : "was cancelled: $verr"));

my (%tx, %cancel);
for my $name (sort keys %procs)
{
	my $p = $procs{$name};
	$p->{h}->finish;
	is($p->{h}->result(0), 0, "$name: pgbench finished cleanly")
	  or diag(substr($p->{err}, 0, 4000));
	my @errors = grep { /ERROR:/ } split /\n/, $p->{err};
	my $reorganised = grep { /was reorganised under it/ } @errors;
	my $conflict = grep { /conflict with recovery/ } @errors;
	my @other = grep { !/was reorganised under it|conflict with recovery/ } @errors;
	is(scalar(@other), 0, "$name: no error but cancellations (no wrong answer)")
	  or diag(join("\n", @other[ 0 .. ($#other < 10 ? $#other : 10) ]));
	($tx{$name}) = $p->{out} =~ /number of transactions actually processed: (\d+)/;
	$tx{$name} //= 0;
	$cancel{$name} = [ $reorganised, $conflict ];
}
my $slog = slurp_file($standby->logfile, $slog_start);
my $restarts = () = $slog =~ /a scan on this standby starts again/g;

for my $r (qw(index_readers baseline_readers))
{
	cmp_ok($tx{$r}, '>', 10, "$r: checks ran ($tx{$r})");
}
my $seconds = time - $t_start;
my $summary = sprintf(
	"%d s of load: index readers %d checks, %d cancelled as reorganised, %d by recovery conflicts; "
	  . "baseline readers %d checks, %d cancelled by recovery conflicts; %d scan restarts; "
	  . "writers %d transactions, VACUUM loop %d",
	$SECS, $tx{index_readers}, @{ $cancel{index_readers} },
	$tx{baseline_readers}, $cancel{baseline_readers}[1], $restarts,
	$tx{writers}, $tx{vacuum});
note($summary);
diag($summary) if $ENV{SIMHASH_STANDBY_REPORT};
is($cancel{baseline_readers}[0], 0, 'baseline readers: never cancelled as reorganised');

# Ours at most the baseline's. PostgreSQL's own cancellations of a short
# query are rare at the default max_standby_streaming_delay (replay waits for
# it), so the baseline is mostly zero; the margin of one per 30 s is for a
# scan overtaken more often than the restarts allow, which the 5-minute
# measurement (README.md) did not see.
my $margin = 1 + int($SECS / 30);
cmp_ok(
	$cancel{index_readers}[0],
	'<=',
	$cancel{baseline_readers}[1] + $cancel{index_readers}[1] + $margin,
	'index readers: cancelled as reorganised no more often than recovery conflicts cancel the baseline (margin '
	  . $margin . ')')
  unless defined $RESTARTS && $RESTARTS == 0;

# after the load: verify on the standby checks the whole index and every row
$primary->wait_for_catchup($standby, 'replay');
my ($nruns, $checked) = split /\|/,
  $standby->safe_psql('postgres', "SELECT runs, heap_tuples_checked FROM simhash_index_verify('t_fp')");
my $live = $standby->safe_psql('postgres', 'SELECT count(*) FROM t');
is($checked, $live, "standby, replay caught up: simhash_index_verify checks all $live rows ($nruns runs)");
is($standby->safe_psql('postgres', 'SELECT sum(check_radius(pick(), r, true)) >= 0 FROM generate_series(0, 10) r'),
	't', 'standby, replay caught up: the index answers as a sequential scan');

unlike($slog, qr/PANIC|TRAP:|corrupted/, 'standby log: no PANIC, failed assertion or corruption');

$standby->stop;
$primary->stop;
note(sprintf('027_index_standby_load ran %.0f s', time - $t_start));
done_testing();
