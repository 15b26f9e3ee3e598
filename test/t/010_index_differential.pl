# Differential test of the simhash index access method: the index must return
# exactly the rows a sequential scan returns, for every radius, on three data
# sets of 200,000 rows generated deterministically inside SQL:
#
#   uniform    independent random 64-bit fingerprints;
#   clustered  2,000 centres, each row a centre with 0..6 random bits flipped
#              (about 1/7 of the rows are exact copies of their centre);
#   skewed     clustered, but 20% of the rows have their top 16 bits zero and
#              1% share one single fingerprint (a key spanning several leaves).
#
# Every data set has a NULL fingerprint every 1009th row (never returned).
#
# Scenarios, each compared in full:
#   (a) CREATE INDEX on the filled table, with maintenance_work_mem = 1MB so the
#       build writes several sorted chunks and merges them;
#   (b) CREATE INDEX on an empty table (pending_limit = 1000), then 200,000 rows
#       inserted in 20 batches: about 200 pending-list flushes and merges;
#   (c) (b) after deleting ~30% of the rows and VACUUM (dead entries marked,
#       runs rewritten);
#   (d) (c) after 50,000 more inserts, updates of fingerprints and deletes,
#       without VACUUM: the pending list is non-empty, the heap holds dead rows;
#   and on the skewed data, (a) again with blocks = 2 and blocks = 8.
#
# The comparison. Each data set has 200 query fingerprints: 64 taken from the
# table, 64 copies of table rows with 1..12 bits flipped, 64 random ones, and
# 8 special ones (all zeros, all ones, cluster centres, the shared skewed
# fingerprint, a near copy and the complement of it). The sequential-scan
# answer is computed once per scenario, from a distance histogram per query
# (count, sum(id), sum(hashint4(id)) per distance) accumulated over radii.
# The index answer is computed by one index scan per (query, radius) with
# enable_seqscan = off, in two passes that run concurrently: bitmap scans
# only, and plain index scans only. The plan of each pass is checked to be
# the one intended, with no heap-side Filter: the query is fp <@
# simhash_ball_any(q, r) itself (the operand for any radius, -1 and 65
# included), so nothing but the index decides which rows come back
# (fp <~> q <= r would keep a Filter above a bitmap scan that hides extra
# rows).
#
# Which (query, radius) pairs. One query per scenario (in turn one from the
# table, a random one, a near copy) at every radius 0..64, and -1, 65, 1000.
# All the others at every radius up to 20 whose answer holds at most 3,000
# rows. Every radius of every query is not affordable: the answers of one
# query at radii 0..64 add up to about 33 x 200,000 rows, about two seconds of
# index scans per query and pass. The capped radii cover both search
# strategies (probing block values at small radii; reading a table whole,
# which this size of index chooses from r = 8 with 4 blocks), the full sweeps
# the large answers of every radius.
#
# Any mismatch fails with the data set, scenario, scan kind, query, radius and
# both answers (row count and checksums). After each scenario that changed the
# index, simhash_index_verify() must find it sound and every live row in it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

my $t_start = time;
my $ROWS = 200_000;    # per data set, initial
my $MORE = 50_000;     # inserted in scenario (d)
my $CAP = 3000;        # capped checks: answers of at most this many rows
my $RMAX = 20;         # ... and radii at most this
my $ncompare = 0;

my $node = PostgreSQL::Test::Cluster->new('diff');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_buffers = 256MB
work_mem = 64MB
maintenance_work_mem = 64MB
# the scenarios decide when VACUUM runs
autovacuum = off
log_statement = none
max_parallel_workers_per_gather = 2
});
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;

-- XOR of k pseudo-random single-bit masks chosen by seed (k = 0: none)
CREATE FUNCTION flipmask(seed bigint, k int) RETURNS simhash
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT coalesce(bit_xor(1::bigint << (hashint8extended(seed, 100 + j) & 63)::int), 0)::simhash
        FROM generate_series(1, k) j $$;

-- the fingerprint of row i of a data set, deterministic
CREATE FUNCTION gen_fp(kind text, i bigint) RETURNS simhash
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
  SELECT CASE
    WHEN i % 1009 = 0 THEN NULL
    WHEN kind = 'uniform' THEN hashint8extended(i, 1)::simhash
    WHEN kind = 'skewed' AND (hashint8extended(i, 6) & 65535) % 100 = 0
      THEN '0000a5a5f00f1234'::simhash
    WHEN kind = 'skewed' AND (hashint8extended(i, 5) & 65535) % 5 = 0
      THEN (hashint8extended((hashint8extended(i, 2) & 65535) % 2000, 3)::simhash
            # flipmask(i, ((hashint8extended(i, 4) & 65535) % 7)::int)) & '0000ffffffffffff'::simhash
    ELSE hashint8extended((hashint8extended(i, 2) & 65535) % 2000, 3)::simhash
         # flipmask(i, ((hashint8extended(i, 4) & 65535) % 7)::int)
  END $$;
});

# ---------------------------------------------------------------------------
# helpers

sub info
{
	my ($idx) = @_;
	return $node->safe_psql('postgres',
		"SELECT format('blocks=%s runs=%s run_entries=%s pending_entries=%s pending_pages=%s retired=%s', "
		  . "blocks, runs, run_entries, pending_entries, pending_pages, retired) "
		  . "FROM simhash_index_info('$idx')");
}

# entries the index holds (runs, dead ones included, plus the pending list)
sub index_entries
{
	my ($idx) = @_;
	return $node->safe_psql('postgres',
		"SELECT entries + pending_entries "
		  . "FROM simhash_index_info('$idx')");
}

# simhash_index_verify(): the structure is sound and every live row indexed
sub verify
{
	my ($idx, $tbl, $label) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres',
		"SELECT heap_tuples_checked = (SELECT count(*) FROM $tbl) FROM simhash_index_verify('$idx')",
		stdout => \$out, stderr => \$err);
	is($rc, 0, "$label: simhash_index_verify() finds $idx sound") or diag($err);
	is($out, 't', "$label: simhash_index_verify() checked every live row");
	return;
}

sub page_types_sane
{
	my ($idx, $label) = @_;
	my $bad = $node->safe_psql('postgres',
		"SELECT count(*) FROM simhash_index_pages('$idx') WHERE type NOT IN "
		  . "('meta', 'pending', 'run header', 'leaf', 'inner', 'free', 'new')");
	is($bad, 0, "$label: every page of $idx has a known type");
}

# Start psql on a script in the background; returns a handle for finish_psql.
sub start_psql
{
	my ($sql) = @_;
	my $r = { sql => $sql, out => '', err => '' };
	$r->{h} = IPC::Run::start(
		[
			$node->installed_command('psql'), '-XAtq', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'), '-f', '-'
		],
		'<', \$r->{sql}, '>', \$r->{out}, '2>', \$r->{err},
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	return $r;
}

sub finish_psql
{
	my ($r) = @_;
	$r->{h}->finish;
	return ($r->{h}->result(0), $r->{out}, $r->{err});
}

# The index answer of every (query, radius) in table checks, in one pass:
# the rows where it differs from the sequential scan's. With $explain, the
# plan of the index side alone (without the comparison).
sub pass_sql
{
	my ($tbl, $mode, $explain) = @_;
	my $bitmap = $mode eq 'bitmap' ? 'on' : 'off';
	my $plain = $mode eq 'bitmap' ? 'off' : 'on';
	my $sql = qq{
SET enable_seqscan = off;
SET enable_bitmapscan = $bitmap;
SET enable_indexscan = $plain;
SET max_parallel_workers_per_gather = 0;
};
	my $lateral = qq{
FROM checks c
CROSS JOIN LATERAL (
  SELECT count(*) AS n, coalesce(sum(id), 0) AS s1, coalesce(sum(hashint4(id)), 0) AS s2
  FROM $tbl WHERE fp <@ simhash_ball_any(c.fp, c.r)) x};
	return $sql . "EXPLAIN (COSTS OFF) SELECT c.qid, x.n $lateral;" if $explain;
	return $sql . qq{
SELECT c.qid, c.fp, c.r, c.n, x.n, c.s1, x.s1, c.s2, x.s2 $lateral
WHERE (x.n, x.s1, x.s2) IS DISTINCT FROM (c.n, c.s1, c.s2)
ORDER BY c.qid, c.r;
};
}

# Compare index and sequential scan for every check of table qs_$kind on $tbl.
sub compare
{
	my ($kind, $tbl, $idx, $label, $same_rows) = @_;
	my $t0 = time;

	# One query is checked at every radius: in turn one from the table, a
	# random one and a near copy of a table row. The sequential scan's
	# answers: distance histograms accumulated per radius (kept when the rows
	# are those of the previous comparison).
	my $sweep = (1, 129, 65)[ $ncompare++ % 3 ];
	$node->safe_psql('postgres', "UPDATE qs_$kind SET sweep = (qid = $sweep)")
	  unless $same_rows;
	$node->safe_psql(
		'postgres', qq{
SET enable_indexscan = off;
SET enable_bitmapscan = off;
DROP TABLE IF EXISTS checks;
CREATE UNLOGGED TABLE checks AS
WITH hist AS (
  SELECT q.qid, (t.fp <-> q.fp) AS d, count(*) AS n, sum(t.id) AS s1, sum(hashint4(t.id)) AS s2
  FROM qs_$kind q JOIN $tbl t ON (t.fp <-> q.fp) <= $RMAX
  WHERE NOT q.sweep GROUP BY 1, 2
  UNION ALL
  SELECT q.qid, (t.fp <-> q.fp), count(*), sum(t.id), sum(hashint4(t.id))
  FROM qs_$kind q JOIN $tbl t ON t.fp IS NOT NULL
  WHERE q.sweep GROUP BY 1, 2),
radii AS (
  SELECT q.qid, q.fp, q.sweep, r FROM qs_$kind q, generate_series(0, $RMAX) r WHERE NOT q.sweep
  UNION ALL
  SELECT q.qid, q.fp, q.sweep, r FROM qs_$kind q,
    (SELECT generate_series(-1, 65) UNION ALL SELECT 1000) g(r) WHERE q.sweep),
res AS (
  SELECT x.qid, x.fp, x.sweep, x.r, coalesce(sum(h.n), 0)::bigint AS n,
         coalesce(sum(h.s1), 0)::bigint AS s1, coalesce(sum(h.s2), 0)::bigint AS s2
  FROM radii x LEFT JOIN hist h ON h.qid = x.qid AND h.d <= x.r
  GROUP BY 1, 2, 3, 4)
SELECT * FROM res WHERE sweep OR n <= $CAP;
ANALYZE checks;
}) unless $same_rows;
	my ($nchecks, $nsweep, $rows, $max_r) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT count(*), count(*) FILTER (WHERE sweep), sum(n), "
		  . "max(r) FILTER (WHERE NOT sweep AND r <= 64) FROM checks");
	my $t_seq = time - $t0;

	# the plans: the index, no sequential scan of the table, no Filter
	for my $mode ('bitmap', 'index')
	{
		my $plan = $node->safe_psql('postgres', pass_sql($tbl, $mode, 1));
		my $want =
		  $mode eq 'bitmap'
		  ? qr/Bitmap Index Scan on $idx\b/
		  : qr/(?<!Bitmap )Index Scan using $idx\b/;
		like($plan, $want, "$label [$mode]: plan uses $idx");
		unlike($plan, qr/Seq Scan on $tbl\b|Filter:/,
			"$label [$mode]: no sequential scan of $tbl and no Filter in the plan");
	}

	# the two index passes at once (two cores)
	my %run;
	$run{$_} = start_psql(pass_sql($tbl, $_, 0)) for ('bitmap', 'index');
	for my $mode ('bitmap', 'index')
	{
		my ($rc, $out, $err) = finish_psql($run{$mode});
		is($rc, 0, "$label [$mode]: pass ran without error")
		  or diag("stderr: $err");
		my @bad = grep { length } split /\n/, $out;
		my $shown = 0;
		for my $line (@bad)
		{
			last if ++$shown > 10;
			my ($qid, $fp, $r, $sn, $in, $ss1, $is1, $ss2, $is2) = split /\|/, $line;
			fail("$label [$mode]: query $qid ($fp) radius $r: index $in rows, "
				  . "seq scan $sn rows (sum(id) $is1 vs $ss1, sum(hashint4(id)) $is2 vs $ss2)");
		}
		is(scalar(@bad), 0,
			"$label [$mode]: index = seq scan for $nchecks (query, radius) pairs "
			  . "($nsweep in full sweeps, capped radii up to $max_r, $rows rows)");
	}
	# progress on stderr, so a long run is not silent without prove -v
	diag(sprintf("progress: %s: seq %.1f s, total %.1f s", $label, $t_seq, time - $t0));
	return;
}

# ---------------------------------------------------------------------------
# the data sets

for my $kind ('uniform', 'clustered', 'skewed')
{
	my $t_kind = time;
	my $total = $ROWS + $MORE + 100;

	$node->safe_psql(
		'postgres', qq{
CREATE TABLE src_$kind AS
  SELECT i::int AS id, gen_fp('$kind', i) AS fp FROM generate_series(1, $total) i;
CREATE INDEX ON src_$kind (id);
-- the queries: from the table, near copies, random, special
CREATE TABLE qs_$kind (qid int, fp simhash, sweep bool);
INSERT INTO qs_$kind
  SELECT g, coalesce(gen_fp('$kind', 1 + (g * 7919) % $ROWS), gen_fp('$kind', 2 + (g * 7919) % $ROWS)), false
  FROM generate_series(1, 64) g;
INSERT INTO qs_$kind
  SELECT 64 + g, coalesce(gen_fp('$kind', 1 + (g * 104729) % $ROWS), gen_fp('$kind', 2 + (g * 104729) % $ROWS))
                 # flipmask(g + 5000, 1 + g % 12), false
  FROM generate_series(1, 64) g;
INSERT INTO qs_$kind
  SELECT 128 + g, hashint8extended(g, 77)::simhash, false FROM generate_series(1, 64) g;
INSERT INTO qs_$kind VALUES
  (193, '0000000000000000', false), (194, 'ffffffffffffffff', false),
  (195, '8000000000000001', false),
  (196, hashint8extended(17, 3)::simhash, false),
  (197, hashint8extended(1999, 3)::simhash # '0000100000000400', false),
  (198, '0000a5a5f00f1234', false), (199, '0000a5a5f00f1234'::simhash # '0100000000000003', false),
  (200, ~ '0000a5a5f00f1234'::simhash, false);
ANALYZE qs_$kind;
});
	is( $node->safe_psql('postgres',
			"SELECT count(*), count(fp), count(DISTINCT fp) > 1000 FROM src_$kind WHERE id <= $ROWS"),
		"$ROWS|" . ($ROWS - int($ROWS / 1009)) . '|t',
		"$kind: $ROWS rows generated");
	if ($kind eq 'skewed')
	{
		note('skewed: '
			  . $node->safe_psql('postgres',
				"SELECT format('%s rows with the top 16 bits zero, %s sharing one fingerprint', "
				  . "count(*) FILTER (WHERE fp & 'ffff000000000000' = '0000000000000000'), "
				  . "count(*) FILTER (WHERE fp = '0000a5a5f00f1234')) FROM src_$kind WHERE id <= $ROWS"));
	}

	# (a) build on a filled table, in several chunks merged at the end
	my $ta = "t_${kind}_a";
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $ta (id int PRIMARY KEY, fp simhash);
INSERT INTO $ta SELECT id, fp FROM src_$kind WHERE id <= $ROWS ORDER BY id;
VACUUM ANALYZE $ta;
SET maintenance_work_mem = '1MB';
CREATE INDEX ${ta}_fp ON $ta USING simhash (fp);
});
	note("$kind (a) after CREATE INDEX: " . info("${ta}_fp"));
	is(index_entries("${ta}_fp"), $ROWS,
		"$kind (a): the index holds one entry per row (NULL fingerprints as NULL entries)");
	verify("${ta}_fp", $ta, "$kind (a)");
	compare($kind, $ta, "${ta}_fp", "$kind (a) fresh build");

	if ($kind eq 'skewed')
	{
		for my $m (2, 8)
		{
			$node->safe_psql(
				'postgres', qq{
DROP INDEX ${ta}_fp;
CREATE INDEX ${ta}_fp ON $ta USING simhash (fp) WITH (blocks = $m);
});
			note("$kind blocks = $m: " . info("${ta}_fp"));
			is($node->safe_psql('postgres', "SELECT blocks FROM simhash_index_info('${ta}_fp')"),
				$m, "$kind: index built with blocks = $m");
			compare($kind, $ta, "${ta}_fp", "$kind blocks = $m fresh build", 1);
		}
	}
	$node->safe_psql('postgres', "DROP TABLE $ta");

	# (b) index on an empty table, rows inserted in batches
	my $tb = "t_${kind}_b";
	my $ib = "${tb}_fp";
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $tb (id int PRIMARY KEY, fp simhash);
CREATE INDEX $ib ON $tb USING simhash (fp) WITH (pending_limit = 1000);
});
	my $batch = $ROWS / 20;
	for my $b (0 .. 19)
	{
		my ($lo, $hi) = ($b * $batch + 1, ($b + 1) * $batch);
		$node->safe_psql('postgres',
			"INSERT INTO $tb SELECT id, fp FROM src_$kind WHERE id BETWEEN $lo AND $hi ORDER BY id");
		note("$kind (b) after batch " . ($b + 1) . ": " . info($ib))
		  if $b == 0 || $b == 4 || $b == 19;
	}
	$node->safe_psql('postgres', "ANALYZE $tb");
	is(index_entries($ib), $ROWS,
		"$kind (b): after the inserts the index holds one entry per row");
	cmp_ok($node->safe_psql('postgres', "SELECT runs FROM simhash_index_info('$ib')"),
		'<=', 20, "$kind (b): size-tiered merging keeps the run count small");
	page_types_sane($ib, "$kind (b)");
	verify($ib, $tb, "$kind (b)");
	compare($kind, $tb, $ib, "$kind (b) built by inserts");

	# (c) delete ~30% and VACUUM
	my $deleted = $node->safe_psql(
		'postgres', qq{
WITH d AS (DELETE FROM $tb WHERE (hashint4(id) & 1023) % 10 < 3 RETURNING 1) SELECT count(*) FROM d;
});
	$node->safe_psql('postgres', "VACUUM ANALYZE $tb");
	note("$kind (c) deleted $deleted rows, after VACUUM: " . info($ib));
	my $live = $node->safe_psql('postgres', "SELECT count(*) FROM $tb");
	my $entries = index_entries($ib);
	ok($entries >= $live && $entries <= $ROWS,
		"$kind (c): after VACUUM the index holds $entries entries for $live live rows");
	page_types_sane($ib, "$kind (c)");
	verify($ib, $tb, "$kind (c)");
	compare($kind, $tb, $ib, "$kind (c) after DELETE + VACUUM");

	# (d) more inserts, updates and deletes, no VACUUM
	for my $b (0 .. 9)
	{
		my $lo = $ROWS + $b * ($MORE / 10) + 1;
		my $hi = $ROWS + ($b + 1) * ($MORE / 10);
		$node->safe_psql('postgres',
			"INSERT INTO $tb SELECT id, fp FROM src_$kind WHERE id BETWEEN $lo AND $hi ORDER BY id");
	}
	$node->safe_psql(
		'postgres', qq{
UPDATE $tb SET fp = gen_fp('$kind', id + 1000000) WHERE id % 97 = 0;
UPDATE $tb SET fp = NULL WHERE id % 991 = 0;
UPDATE $tb SET fp = '0000a5a5f00f1234' WHERE id % 983 = 0;
DELETE FROM $tb WHERE id % 89 = 0;
INSERT INTO $tb SELECT id, fp FROM src_$kind WHERE id > $ROWS + $MORE;
ANALYZE $tb;
});
	my $dinfo = info($ib);
	note("$kind (d) after more inserts, updates, deletes: $dinfo");
	cmp_ok($node->safe_psql('postgres', "SELECT pending_entries FROM simhash_index_info('$ib')"),
		'>', 0, "$kind (d): the pending list is not empty");
	page_types_sane($ib, "$kind (d)");
	verify($ib, $tb, "$kind (d)");
	compare($kind, $tb, $ib, "$kind (d) inserts without VACUUM");

	$node->safe_psql('postgres', "DROP TABLE $tb, src_$kind");
	diag(sprintf("progress: %s data set done in %.1f s", $kind, time - $t_kind));
}

# no error of any kind in the server log (index corruption, assertion)
my @errors = grep { /\b(ERROR|PANIC|FATAL|TRAP):/ } split /\n/, slurp_file($node->logfile);
is(scalar(@errors), 0, 'no error in the server log')
  or diag(join("\n", @errors[ 0 .. ($#errors < 20 ? $#errors : 19) ]));

$node->stop;
note(sprintf('total %.1f s', time - $t_start));
done_testing();
