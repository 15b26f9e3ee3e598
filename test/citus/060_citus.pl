# simhash on Citus distributed tables: a coordinator and two workers on this
# machine. Every answer is compared with the same rows in a plain
# table on the coordinator.
#
# - CREATE EXTENSION simhash on the coordinator reaches the workers; a table
#   with a generated simhash column is distributed; CREATE INDEX USING
#   simhash reaches every shard; rows come in by INSERT and COPY.
# - fp <~> q <= r (literal and prepared) runs on every shard through its
#   simhash index (EXPLAIN shows index scans in the task plans); exact.
# - ORDER BY fp <-> q LIMIT k: each shard answers from its index and the
#   coordinator merges; exact.
# - All pairs within r computed on the workers: a (block, key, id, fp) table
#   distributed by key, its self-join on (block, key) shard-local; the pairs
#   equal the single-node self-join's, and simhash_pair_groups makes of them
#   the groups the window functions make on one node.
# - The window functions on a distributed table: what happens is checked.
# - examples/dedup_pairs.sql on random, clustered and skewed data (a table
#   distributed by its id and one distributed by another column) makes the
#   groups examples/dedup.sql makes on a local copy, and the pairs by
#   pigeonhole keys equal the single-node self-join's.
# - The removal scripts' review, archive and restore on a distributed table:
#   the review table lists every duplicate with its text from the workers, a
#   delete moves exactly the deleted rows into the archive, and restore puts
#   the table back as it was.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => "Citus is not installed ($pkglibdir/citus.so missing): tools/citus.sh builds it"
  unless -f "$pkglibdir/citus.so";

my @nodes;
for my $name (qw(coordinator worker1 worker2))
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf(
		'postgresql.conf', q{
shared_preload_libraries = 'citus'
max_connections = 60
max_worker_processes = 16
citus.log_distributed_deadlock_detection = off
citus.shard_count = 8
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	push @nodes, $node;
}
my ($coord, @workers) = @nodes;
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ")");
for my $w (@workers)
{
	$coord->safe_psql('postgres', "SELECT citus_add_node('" . $w->host . "', " . $w->port . ")");
}
is($coord->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'a coordinator and two workers');

# ---- the extension reaches the workers
$coord->safe_psql('postgres', 'CREATE EXTENSION simhash');
for my $w (@workers)
{
	is( $w->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'simhash'"),
		$coord->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'simhash'"),
		'CREATE EXTENSION simhash reached ' . $w->name);
}

# ---- a distributed table with a generated fingerprint, its simhash index on every shard
$coord->safe_psql(
	'postgres', q{
CREATE TABLE docs (id bigint PRIMARY KEY, body text,
                   fp simhash GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('docs', 'id', shard_count := 8);
CREATE INDEX docs_fp_idx ON docs USING simhash (fp);
-- 20,000 documents: 4,000 originals, each with 4 variants (a word or two changed)
INSERT INTO docs (id, body)
SELECT g, 'story ' || (g / 5) || ' ' ||
          (SELECT string_agg(md5(((g / 5) * 100 + w)::text), ' ') FROM generate_series(1, 40) w) ||
          CASE WHEN g % 5 = 0 THEN '' ELSE ' edit' || (g % 5) END
FROM generate_series(1, 20000) g;
});
my $copy = join("\n",
	map { "$_\tcopied document $_ " . join(' ', map { "w$_" } (1 .. 30)) } (20001 .. 20200));
$coord->safe_psql('postgres', "COPY docs (id, body) FROM STDIN;\n$copy\n\\.\n");
# the same rows in a plain table on the coordinator
$coord->safe_psql('postgres',
	'CREATE TABLE docs_local AS SELECT id, body, fp FROM docs; CREATE INDEX ON docs_local USING simhash (fp); ANALYZE docs_local; ANALYZE docs;'
);
is($coord->safe_psql('postgres', 'SELECT count(*), count(fp) FROM docs'),
	'20200|20200', 'INSERT and COPY through the coordinator');
my $shards_with_index = 0;
for my $w (@workers)
{
	# shards are hidden from catalog queries unless asked for
	$shards_with_index += $w->safe_psql(
		'postgres', q{
SET citus.override_table_visibility = off;
SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'simhash' AND c.relname ~ '^docs_fp_idx_[0-9]+$'});
}
is($shards_with_index, 8, 'the simhash index is on all 8 shards');

# ---- radius searches on every shard, through the index
my @centres = split /\n/, $coord->safe_psql('postgres',
	'SELECT fp::text FROM docs_local WHERE id IN (5, 777, 12345, 20050) ORDER BY id');
push @centres, 'c4ca4238a0b92382';
my $bad = 0;
for my $q (@centres)
{
	for my $r (0, 3, 8, 16)
	{
		my $dist = $coord->safe_psql('postgres',
			"SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM docs WHERE fp <~> '$q' <= $r");
		my $local = $coord->safe_psql('postgres',
			"SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM docs_local WHERE fp <~> '$q' <= $r");
		$bad++ if $dist ne $local;
	}
}
is($bad, 0, 'fp <~> q <= r on the distributed table equals the single-node answer (5 centres, 4 radii)');
my $explain = $coord->safe_psql('postgres',
	"SET citus.explain_all_tasks = on; EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> '$centres[0]' <= 3");
my $index_tasks = () = $explain =~ /Index Scan using docs_fp_idx_\d+ on docs_\d+/g;
is($index_tasks, 8, 'EXPLAIN shows an index scan on each of the 8 shards');
like($explain, qr/Index Cond: \(fp <@ '[0-9a-f]{16}\/3'::hamming_ball\)/, 'with the ball as index condition');

# prepared, past the generic-plan threshold
my $prepared = $coord->safe_psql(
	'postgres', qq{
PREPARE near(simhash, int) AS SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM docs WHERE fp <~> \$1 <= \$2;
EXECUTE near('$centres[1]', 3); EXECUTE near('$centres[1]', 3); EXECUTE near('$centres[1]', 3);
EXECUTE near('$centres[1]', 3); EXECUTE near('$centres[1]', 3); EXECUTE near('$centres[1]', 3);
EXECUTE near('$centres[1]', 8);
});
my @p = split /\n/, $prepared;
is( $p[-1],
	$coord->safe_psql('postgres',
		"SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM docs_local WHERE fp <~> '$centres[1]' <= 8"),
	'a prepared radius search, seventh execution, equals the single-node answer');

# ---- nearest neighbours: each shard from its index, merged on the coordinator
$bad = 0;
for my $q (@centres)
{
	for my $k (1, 10, 100)
	{
		my $d = $coord->safe_psql('postgres',
			"SELECT string_agg(d::text, ',') FROM (SELECT fp <-> '$q' AS d FROM docs ORDER BY fp <-> '$q' LIMIT $k) s");
		my $l = $coord->safe_psql('postgres',
			"SELECT string_agg(d::text, ',') FROM (SELECT fp <-> '$q' AS d FROM docs_local ORDER BY fp <-> '$q' LIMIT $k) s"
		);
		$bad++ if $d ne $l;
	}
}
is($bad, 0, 'ORDER BY fp <-> q LIMIT k on the distributed table gives the single-node distances (k = 1, 10, 100)');
$explain = $coord->safe_psql('postgres',
	"SET citus.explain_all_tasks = on; EXPLAIN (COSTS OFF) SELECT id FROM docs ORDER BY fp <-> '$centres[0]' LIMIT 10");
my $ordered_tasks = () = $explain =~ /Index Scan using docs_fp_idx_\d+ on docs_\d+/g;
is($ordered_tasks, 8, 'each shard answers the ordered query from its index');
like($explain, qr/Order By: \(fp <-> /, 'as an ordered index scan');

# ---- all pairs within 3 bits, on the workers
$coord->safe_psql(
	'postgres', q{
CREATE TABLE doc_keys (block int, key bigint, id bigint, fp simhash);
SELECT create_distributed_table('doc_keys', 'key', shard_count := 8, colocate_with := 'none');
INSERT INTO doc_keys SELECT k.block, k.key, d.id, d.fp FROM docs d, simhash_blocks(d.fp, 3) k;
ANALYZE doc_keys;
});
my $pairs_sql = q{
SELECT a.id, b.id FROM doc_keys a JOIN doc_keys b
  ON a.key = b.key AND a.block = b.block AND a.id < b.id
WHERE a.fp <~> b.fp <= 3 AND simhash_first_shared_block(a.fp, b.fp, 3) = a.block};
my $dist_pairs = $coord->safe_psql('postgres',
	"SELECT count(*), coalesce(sum(hashtext(x.a::text || '-' || x.b::text)::bigint), 0) FROM ($pairs_sql) x(a, b)");
my $local_pairs = $coord->safe_psql(
	'postgres', q{
SELECT count(*), coalesce(sum(hashtext(a.id::text || '-' || b.id::text)::bigint), 0)
FROM docs_local a JOIN docs_local b ON b.fp <~> a.fp <= 3 AND a.id < b.id});
is($dist_pairs, $local_pairs, "the distributed pairs equal the single-node self-join's ($local_pairs: count, checksum)");
cmp_ok((split /\|/, $local_pairs)[0], '>', 10000, 'and there are many of them');
# groups from the distributed pairs (gathered on the coordinator) equal the
# window functions' groups over the same rows on one node
for my $method ('leader', 'component')
{
	my $fn = $method eq 'leader' ? 'simhash_leader' : 'simhash_component';
	my $diff = $coord->safe_psql(
		'postgres', qq{
CREATE TEMP TABLE pairs_$method (a bigint, b bigint);
INSERT INTO pairs_$method $pairs_sql;
WITH g AS (SELECT * FROM simhash_pair_groups('SELECT * FROM pairs_$method', '$method')),
     w AS (SELECT id, $fn(id, fp, 3) OVER (ORDER BY id) AS keep FROM docs_local)
SELECT count(*) FILTER (WHERE coalesce(g.keep_id, w.id) <> w.keep) FROM w LEFT JOIN g USING (id)});
	is($diff, 0, "$method groups from the distributed pairs equal $fn over the single-node rows");
}
$explain = $coord->safe_psql('postgres', "EXPLAIN (COSTS OFF) $pairs_sql");
unlike($explain, qr/repartition|Repartition|MapMergeJob/i, 'the self-join on the key runs shard-local, no repartitioning');
like($explain, qr/Task Count: 8/, 'one task per shard');

# ---- the window functions on a distributed table
my ($rc, $out, $err) = $coord->psql('postgres',
	'SELECT count(DISTINCT keep) FROM (SELECT simhash_leader(id, fp, 3) OVER (ORDER BY id) AS keep FROM docs) s');
if ($rc == 0)
{
	is( $out,
		$coord->safe_psql('postgres',
			'SELECT count(DISTINCT keep) FROM (SELECT simhash_leader(id, fp, 3) OVER (ORDER BY id) AS keep FROM docs_local) s'
		),
		'simhash_leader over a distributed table: the single-node groups');
}
else
{
	like($err, qr/ERROR/, "simhash_leader over a distributed table fails: $err");
}

# ---- examples/dedup.sql on a distributed table, against a local copy
$coord->safe_psql(
	'postgres', q{
CREATE TABLE d2 (id bigint PRIMARY KEY, body text, fp simhash);
SELECT create_distributed_table('d2', 'id', shard_count := 8);
INSERT INTO d2 SELECT id, body, fp FROM docs_local WHERE id <= 3000;
CREATE TABLE d2_local AS SELECT * FROM d2;
ALTER TABLE d2_local ADD PRIMARY KEY (id);
});
my $script = $ENV{TESTDIR} ? "$ENV{TESTDIR}/src/examples/dedup.sql" : 'examples/dedup.sql';
$script = "$ENV{PWD}/examples/dedup.sql" unless -f $script;
for my $t ('d2', 'd2_local')
{
	my ($drc, $dout, $derr) = $coord->psql('postgres', undef,
		extra_params => [ '-v', "table=$t", '-v', 'radius=3', '-v', 'keep=longest',
			'-v', 'keep_column=body', '-v', 'action=delete', '-f', $script ]);
	is($drc, 0, "examples/dedup.sql deletes the near-duplicates of $t") or diag($derr);
}
is( $coord->safe_psql('postgres', 'SELECT count(*), sum(id) FROM d2'),
	$coord->safe_psql('postgres', 'SELECT count(*), sum(id) FROM d2_local'),
	'the distributed table keeps the same rows as the local copy');
cmp_ok($coord->safe_psql('postgres', 'SELECT count(*) FROM d2'), '<', 3000, 'and some rows were removed');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM d2_dedup_archive'),
	$coord->safe_psql('postgres', 'SELECT 3000 - count(*) FROM d2'),
	'the rows deleted from the distributed table are in its archive');

# ---- review, archive and restore on a distributed table, by examples/dedup_pairs.sql
$coord->safe_psql(
	'postgres', q{
CREATE TABLE d3 (id bigint PRIMARY KEY, body text, fp simhash);
SELECT create_distributed_table('d3', 'id', shard_count := 8);
INSERT INTO d3 SELECT id, body, fp FROM docs_local WHERE id <= 3000;
CREATE TABLE d3_before AS SELECT * FROM d3;
});
(my $pairs_review_script = $script) =~ s/dedup\.sql$/dedup_pairs.sql/;
(my $restore_script = $script) =~ s/dedup\.sql$/dedup_restore.sql/;
my ($rrc, $rout, $rerr) = $coord->psql('postgres', undef,
	extra_params => [ '-v', 'table=d3', '-v', 'radius=3', '-v', 'verify_column=body', '-v', 'show=body',
		'-v', 'report_rows=0', '-v', 'report_table=d3_review', '-f', $pairs_review_script ]);
is($rrc, 0, 'report with a review table on a distributed table') or diag($rerr);
my ($dups) = $rerr =~ /holding (\d+) duplicates?;/;
cmp_ok($dups // 0, '>', 0, 'the report finds duplicates');
is( $coord->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE role = 'duplicate'),
       count(*) FILTER (WHERE r.body IS DISTINCT FROM d.body)
FROM d3_review r JOIN d3_before d USING (id)}),
	"$dups|0", 'the review table lists every duplicate, with its text fetched from the workers');
($rrc, $rout, $rerr) = $coord->psql('postgres', undef,
	extra_params => [ '-v', 'table=d3', '-v', 'radius=3', '-v', 'verify_column=body', '-v', 'action=delete',
		'-f', $pairs_review_script ]);
is($rrc, 0, 'delete with the archive on a distributed table') or diag($rerr);
is( $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM d3_dedup_archive),
       (SELECT count(*) FROM (SELECT id, body, fp FROM d3_dedup_archive
                              EXCEPT SELECT * FROM (TABLE d3_before EXCEPT TABLE d3) gone) x)}),
	"$dups|0", 'the archive holds exactly the deleted rows');
($rrc, $rout, $rerr) = $coord->psql('postgres', undef,
	extra_params => [ '-v', 'table=d3', '-v', 'restore=all', '-f', $restore_script ]);
is($rrc, 0, 'restore into a distributed table') or diag($rerr);
is( $coord->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (TABLE d3_before EXCEPT ALL TABLE d3) a),
       (SELECT count(*) FROM (TABLE d3 EXCEPT ALL TABLE d3_before) b),
       to_regclass('d3_dedup_archive') IS NULL}),
	'0|0|t', 'after restore the distributed table is as before, and the archive it emptied is dropped');

# ---- random, clustered and skewed data: pairs and the removal script by pairs
# Each data set: 12,000 rows in a distributed table and the same rows in a
# local copy. Pairs within r by the key join on the workers (more blocks than
# r + 1) equal the local self-join; examples/dedup_pairs.sql flags the
# distributed table, examples/dedup.sql the local copy, and the flags agree.
my %datasets = (
	# random 64-bit fingerprints: near pairs only by chance
	random => q{hashint8extended(g, 5)::simhash},
	# as bench/dedup_bench.sh: 80% in clusters of ~5 around 2,400 centres (0..4 bits
	# flipped), 20% random
	clustered => q{(CASE WHEN g % 5 = 0 THEN hashint8extended(g, 9)
	             ELSE hashint8extended((g * 7919) % 2400, 42)
	                  # (CASE WHEN g % 7 > 0 THEN 1::bigint << ((g * 13) % 64) ELSE 0 END)
	                  # (CASE WHEN g % 3 > 0 THEN 1::bigint << ((g * 29) % 64) ELSE 0 END)
	                  # (CASE WHEN g % 4 = 1 THEN 1::bigint << ((g * 37) % 64) ELSE 0 END)
	                  # (CASE WHEN g % 11 = 2 THEN 1::bigint << ((g * 43) % 64) ELSE 0 END) END)::simhash},
	# as bench/index_bench.sh, small: 150 centres, 0..6 bits flipped, a fifth of the
	# rows with the top 16 bits cleared; many exact copies
	skewed => q{((hashint8extended(g % 150, 42)
	              # (CASE WHEN g % 7 > 1 THEN 1::bigint << ((g * 13) % 64) ELSE 0 END)
	              # (CASE WHEN g % 5 > 2 THEN 1::bigint << ((g * 31) % 64) ELSE 0 END)
	              # (CASE WHEN g % 9 > 6 THEN 7::bigint << ((g * 17) % 61) ELSE 0 END))
	             & CASE WHEN g % 5 = 0 THEN x'0000ffffffffffff'::bigint ELSE -1 END)::simhash},
);
my $pairs_script = $script;
$pairs_script =~ s/dedup\.sql$/dedup_pairs.sql/;
for my $ds (sort keys %datasets)
{
	# the skewed table is distributed by another column than its id
	my $dist = $ds eq 'skewed' ? 'site' : 'id';
	$coord->safe_psql(
		'postgres', qq{
CREATE TABLE ds_$ds (id bigint, site int, fp simhash, body text, dup_of bigint);
SELECT create_distributed_table('ds_$ds', '$dist');
INSERT INTO ds_$ds SELECT g, g % 17, $datasets{$ds}, repeat('x', (g * 7) % 13) FROM generate_series(1, 12000) g;
CREATE TABLE ds_${ds}_local AS SELECT * FROM ds_$ds;
});
	for my $r (3, 8)
	{
		my $m = $r + 2;
		my $dist_pairs = $coord->safe_psql(
			'postgres', qq{
CREATE TABLE keys_${ds}_$r (block int, key bigint, id bigint, fp simhash);
SELECT create_distributed_table('keys_${ds}_$r', 'key', colocate_with := 'none');
INSERT INTO keys_${ds}_$r SELECT k.block, k.key, d.id, d.fp FROM ds_$ds d, simhash_blocks(d.fp, $r, $m) k;
SELECT count(*), coalesce(sum(hashtext(a.id::text || '-' || b.id::text)::bigint), 0)
FROM keys_${ds}_$r a JOIN keys_${ds}_$r b ON a.key = b.key AND a.block = b.block AND a.id < b.id
WHERE a.fp <~> b.fp <= $r AND simhash_first_shared_block(a.fp, b.fp, $r, $m) = a.block;
});
		$dist_pairs = (split /\n/, $dist_pairs)[-1];    # after create_distributed_table's empty row
		my $local_pairs = $coord->safe_psql(
			'postgres', qq{
SELECT count(*), coalesce(sum(hashtext(a.id::text || '-' || b.id::text)::bigint), 0)
FROM ds_${ds}_local a JOIN ds_${ds}_local b ON a.id < b.id AND a.fp <~> b.fp <= $r});
		is($dist_pairs, $local_pairs, "$ds, r = $r: pairs by keys on the workers ($m blocks) equal the local self-join ($local_pairs)");

		for my $run (['leader', 'first', 'id'], ['component', 'longest', 'body'])
		{
			my ($method, $keep, $keep_column) = @$run;
			my @vars = ('-v', "radius=$r", '-v', "method=$method", '-v', "keep=$keep", '-v', "keep_column=$keep_column",
				'-v', 'action=flag', '-v', 'flag_column=dup_of');
			my ($prc, $pout, $perr) = $coord->psql('postgres', undef,
				extra_params => [ '-v', "table=ds_$ds", @vars, '-f', $pairs_script ]);
			is($prc, 0, "$ds, r = $r, $method: examples/dedup_pairs.sql runs on the distributed table") or diag($perr);
			my ($lrc, $lout, $lerr) = $coord->psql('postgres', undef,
				extra_params => [ '-v', "table=ds_${ds}_local", @vars, '-f', $script ]);
			is($lrc, 0, "$ds, r = $r, $method: examples/dedup.sql runs on the local copy") or diag($lerr);
			my $cmp = $coord->safe_psql(
				'postgres', qq{
SELECT count(*) FILTER (WHERE l.dup_of IS NOT NULL), count(*) FILTER (WHERE d.dup_of IS DISTINCT FROM l.dup_of)
FROM ds_$ds d JOIN ds_${ds}_local l USING (id)});
			my ($flagged, $differ) = split /\|/, $cmp;
			is($differ, 0, "$ds, r = $r, $method, keep $keep: the same groups on the workers as on one node ($flagged rows flagged)");
			if ($perr =~ /by pairs: (\d+) distinct fingerprints?, (\d+) blocks? \((\d+) keys? each\), (\d+) pairs?/)
			{
				note("$ds, r = $r, $method: $1 distinct fingerprints, $2 blocks, $3 keys each, $4 pairs");
			}
		}
		next unless $r == 8;
		# verification, on copies (the flags above are checked below): the rows with a
		# candidate grouped on verified pairs on the coordinator, their texts fetched from the
		# workers by id; the same decisions on the workers as on one node, and no row flagged
		# whose text differs from its kept row's (the bodies are runs of x: Jaccard 1 or 0)
		$coord->safe_psql(
			'postgres', qq{
CREATE TABLE ds_${ds}_v (LIKE ds_$ds);
SELECT create_distributed_table('ds_${ds}_v', '$dist');
INSERT INTO ds_${ds}_v SELECT * FROM ds_$ds;
CREATE TABLE ds_${ds}_vlocal AS SELECT * FROM ds_${ds}_local;
});
		my @vvars = ('-v', "radius=$r", '-v', 'action=flag', '-v', 'flag_column=dup_of',
			'-v', 'verify_column=body', '-v', 'verify_threshold=0.5');
		my ($vrc, $vout, $verr) = $coord->psql('postgres', undef,
			extra_params => [ '-v', "table=ds_${ds}_v", @vvars, '-f', $pairs_script ]);
		is($vrc, 0, "$ds, r = $r: examples/dedup_pairs.sql with verify_column runs on the distributed table")
		  or diag($verr);
		# the random set has no pair within the radius, so nothing to verify
		like($verr, qr/grouped on verified pairs: .* [1-9]\d* candidates? below it left alone/,
			"$ds, r = $r: verification leaves candidates alone on the distributed table")
		  if $ds ne 'random';
		my ($wrc, $wout, $werr) = $coord->psql('postgres', undef,
			extra_params => [ '-v', "table=ds_${ds}_vlocal", @vvars, '-f', $script ]);
		is($wrc, 0, "$ds, r = $r: examples/dedup.sql with verify_column runs on the local copy") or diag($werr);
		my ($vflagged, $vdiffer, $vwrong) = split /\|/, $coord->safe_psql(
			'postgres', qq{
SELECT count(*) FILTER (WHERE l.dup_of IS NOT NULL), count(*) FILTER (WHERE d.dup_of IS DISTINCT FROM l.dup_of),
       count(*) FILTER (WHERE l.dup_of IS NOT NULL AND l.body IS DISTINCT FROM k.body)
FROM ds_${ds}_v d JOIN ds_${ds}_vlocal l USING (id) LEFT JOIN ds_${ds}_vlocal k ON k.id = l.dup_of});
		is($vdiffer, 0, "$ds, r = $r, verified: the same flags on the workers as on one node ($vflagged rows flagged)");
		is($vwrong, 0, "$ds, r = $r, verified: no row flagged whose text differs from its kept row's");
	}
	# the work tables are gone
	is($coord->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash\\_dedup\\_%'"),
		'0', "$ds: the script's work tables are dropped");
}
# what must be true for the comparisons to mean something: groups in each set
cmp_ok($coord->safe_psql('postgres', 'SELECT count(*) FROM ds_clustered_local WHERE dup_of IS NOT NULL'),
	'>', 1000, 'clustered: many rows are duplicates');
cmp_ok($coord->safe_psql('postgres', 'SELECT count(*) FROM ds_skewed_local WHERE dup_of IS NOT NULL'),
	'>', 5000, 'skewed: most rows are duplicates');

# delete on the distributed table keeps the rows the local script keeps
for my $t ('ds_clustered', 'ds_clustered_local')
{
	my $s = $t =~ /local/ ? $script : $pairs_script;
	my ($drc, $dout, $derr) = $coord->psql('postgres', undef,
		extra_params => [ '-v', "table=$t", '-v', 'radius=3', '-v', 'keep=longest', '-v', 'keep_column=body',
			'-v', 'action=delete', '-f', $s ]);
	is($drc, 0, "delete on $t") or diag($derr);
}
is( $coord->safe_psql('postgres', 'SELECT count(*), sum(id) FROM ds_clustered'),
	$coord->safe_psql('postgres', 'SELECT count(*), sum(id) FROM ds_clustered_local'),
	'examples/dedup_pairs.sql deletes from the distributed table the rows examples/dedup.sql deletes locally');

# the script's plan keeps rows on the workers: the key self-join is one task per shard
$explain = $coord->safe_psql('postgres', q{EXPLAIN (COSTS OFF)
SELECT a.id FROM keys_clustered_3 a JOIN keys_clustered_3 b ON a.key = b.key AND a.block = b.block AND a.id < b.id
WHERE a.fp <~> b.fp <= 3});
like($explain, qr/Task Count: 8/, 'the key self-join: one task per shard');

# window functions partitioned by the distribution column run on the workers
$explain = $coord->safe_psql('postgres', q{EXPLAIN (COSTS OFF)
SELECT id, simhash_leader(id, fp, 8) OVER (PARTITION BY site ORDER BY id) FROM ds_skewed});
like($explain, qr/Task Count: 8.*WindowAgg/s, 'simhash_leader PARTITION BY the distribution column runs in the shard tasks');
is( $coord->safe_psql('postgres', q{SELECT count(*) FROM (SELECT id, simhash_leader(id, fp, 8) OVER (PARTITION BY site ORDER BY id) AS k FROM ds_skewed) s WHERE k <> id}),
	$coord->safe_psql('postgres', q{SELECT count(*) FROM (SELECT id, simhash_leader(id, fp, 8) OVER (PARTITION BY site ORDER BY id) AS k FROM ds_skewed_local) s WHERE k <> id}),
	'and gives the single-node groups per partition');

$_->stop for @nodes;
done_testing();
