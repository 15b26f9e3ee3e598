# The grouping window functions on many rows.
#
# simhash_component() and simhash_leader() must equal references computed
# another way: the pairs within the radius come from the indexed self-join
# (checked below to equal the brute-force pairs on the clustered data), components
# from label propagation over those pairs in SQL, leaders from a PL/pgSQL loop
# that probes a growing table of leaders through a simhash index. Data sets:
# random fingerprints; clustered ones (near-duplicates at 1..6 bits, exact
# copies, long chains whose ends are far apart, a skewed cluster whose top
# 40 bits are equal, NULLs); radii 3 and 6; window order by id and by a
# shuffled key; PARTITION BY. Then: a long run is cancelled promptly by
# statement_timeout and by pg_cancel_backend(); progress NOTICEs come at the
# configured interval; the memory check refuses before allocating.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('dedup');
$node->init;
$node->append_conf('postgresql.conf', "shared_buffers = 64MB\nmaintenance_work_mem = 256MB\n");
$node->start;

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION simhash;
SELECT setseed(0.125);
CREATE FUNCTION rnd_fp() RETURNS simhash LANGUAGE sql VOLATILE AS
$$ SELECT ((floor(random() * 4294967296)::bigint << 32) | floor(random() * 4294967296)::bigint)::simhash $$;
CREATE FUNCTION flip(simhash, int) RETURNS simhash LANGUAGE sql VOLATILE STRICT AS
$$ SELECT ($1::bigint # coalesce((SELECT bit_or(1::bigint << floor(random() * 64)::int)
                                  FROM generate_series(1, $2)), 0))::simhash $$;

-- random
CREATE TABLE r (id bigint PRIMARY KEY, fp simhash, shuffle float8 DEFAULT random());
INSERT INTO r (id, fp) SELECT g, rnd_fp() FROM generate_series(1, 40000) g;

-- clustered
CREATE TABLE c (id bigint PRIMARY KEY, fp simhash, shuffle float8 DEFAULT random());
INSERT INTO c (id, fp) SELECT g, rnd_fp() FROM generate_series(1, 8000) g;
INSERT INTO c (id, fp) SELECT 100000 + 10 * id + j, flip(fp, 1 + (random() * 5)::int)
  FROM c, generate_series(1, 3) j WHERE id % 4 = 0 AND id <= 8000;
INSERT INTO c (id, fp) SELECT 1000000 + id, fp FROM c WHERE id % 13 = 0;
-- 50 chains of 40 links, 2 bits apart each (ends up to 64 bits apart)
INSERT INTO c (id, fp)
  SELECT 400000 + 100 * ch + i,
         (hashint8extended(ch, 3) # (((1::bigint << (2 * (i % 32))) - 1)
                                     # CASE WHEN i >= 32 THEN -1::bigint ELSE 0 END))::simhash
  FROM generate_series(1, 50) ch, generate_series(0, 39) i;
-- a skewed cluster: top 40 bits equal
INSERT INTO c (id, fp) SELECT 500000 + g,
  (x'3c3c3c3c3c000000'::bigint | floor(random() * 16777216)::bigint)::simhash
  FROM generate_series(1, 3000) g;
INSERT INTO c (id, fp) SELECT 600000 + g, NULL FROM generate_series(1, 50) g;
CREATE INDEX ON r USING simhash (fp);
CREATE INDEX ON c USING simhash (fp);
ANALYZE r, c;

-- components from pairs found through the index, by label propagation;
-- ord is the window order (a row_number over the given key)
CREATE FUNCTION ref_components(tbl regclass, k int, orderby text)
RETURNS TABLE (id bigint, rep bigint) LANGUAGE plpgsql AS $f$
DECLARE changed bigint;
BEGIN
  EXECUTE format('CREATE TEMP TABLE rc_pos AS SELECT id, fp, row_number() OVER (ORDER BY %s) AS ord FROM %s', orderby, tbl);
  EXECUTE format('CREATE TEMP TABLE rc_edge AS SELECT a.id AS x, b.id AS y FROM %1$s a JOIN %1$s b
                  ON b.fp <~> a.fp <= %2$s AND a.id <> b.id', tbl, k);
  CREATE TEMP TABLE rc_lab AS SELECT p.id, p.ord AS lab FROM rc_pos p WHERE p.fp IS NOT NULL;
  CREATE INDEX ON rc_lab (id);
  ANALYZE rc_lab, rc_edge;
  LOOP
    UPDATE rc_lab l SET lab = m.lab
    FROM (SELECT e.x, min(o.lab) AS lab FROM rc_edge e JOIN rc_lab o ON o.id = e.y GROUP BY e.x) m
    WHERE l.id = m.x AND m.lab < l.lab;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
  RETURN QUERY SELECT p.id, q.id FROM rc_pos p LEFT JOIN rc_lab l ON l.id = p.id LEFT JOIN rc_pos q ON q.ord = l.lab;
  DROP TABLE rc_pos, rc_edge, rc_lab;
END $f$;

-- leaders by probing an indexed table of the leaders so far
CREATE FUNCTION ref_leaders(tbl regclass, k int, orderby text)
RETURNS TABLE (id bigint, rep bigint) LANGUAGE plpgsql AS $f$
DECLARE r record; l bigint;
BEGIN
  CREATE TEMP TABLE rl (ord bigint, id bigint, fp simhash);
  CREATE INDEX ON rl USING simhash (fp) WITH (pending_limit = 64);
  SET LOCAL enable_seqscan = off;
  FOR r IN EXECUTE format('SELECT id, fp, row_number() OVER (ORDER BY %s) AS ord FROM %s ORDER BY ord', orderby, tbl) LOOP
    id := r.id;
    rep := NULL;
    IF r.fp IS NOT NULL THEN
      SELECT x.id INTO l FROM rl x WHERE x.fp <~> r.fp <= k ORDER BY x.ord LIMIT 1;
      IF l IS NULL THEN
        INSERT INTO rl VALUES (r.ord, r.id, r.fp);
        l := r.id;
      END IF;
      rep := l;
    END IF;
    RETURN NEXT;
  END LOOP;
  DROP TABLE rl;
END $f$;
});

sub compare
{
	my ($tbl, $fn, $k, $orderby, $partition) = @_;
	my $ref = $fn eq 'simhash_component' ? 'ref_components' : 'ref_leaders';
	my $over = $partition ? "PARTITION BY $partition ORDER BY $orderby" : "ORDER BY $orderby";
	my $want_sql = "SELECT * FROM $ref('$tbl', $k, '$orderby')";
	if ($partition)
	{
		# a reference per partition, over a view of each
		my @parts = split /\n/,
		  $node->safe_psql('postgres', "SELECT DISTINCT $partition FROM $tbl ORDER BY 1");
		$want_sql = join(' UNION ALL ', map {
			$node->safe_psql('postgres',
				"CREATE OR REPLACE VIEW part_$_ AS SELECT * FROM $tbl WHERE $partition = $_");
			  "SELECT * FROM $ref('part_$_', $k, '$orderby')"
		} @parts);
	}
	my $res = $node->safe_psql(
		'postgres', qq{
CREATE TEMP TABLE got AS SELECT id, $fn(id, fp, $k) OVER ($over) AS rep FROM $tbl;
CREATE TEMP TABLE want AS $want_sql;
SELECT (SELECT count(*) FROM got), (SELECT count(*) FROM want),
       (SELECT count(*) FROM got g FULL JOIN want w USING (id)
        WHERE g.rep IS DISTINCT FROM w.rep OR g.id IS NULL OR w.id IS NULL),
       (SELECT count(DISTINCT rep) FROM got WHERE rep IS NOT NULL),
       (SELECT count(*) FROM got WHERE rep <> id);
});
	my ($ngot, $nwant, $ndiff, $ngroups, $nmembers) = split /\|/, $res;
	my $label = "$fn($tbl, $k) over ($over)";
	is($ndiff, 0, "$label: same as the reference for all $ngot rows ($ngroups groups, $nmembers rows joined another)");
	cmp_ok($nmembers, '>', 0, "$label: some rows are grouped") if $tbl eq 'c';
	return ($ngroups, $nmembers);
}

# The references above take their pairs from the index. Tie them to ground
# truth: on the clustered table, the index self-join finds exactly the pairs
# that comparing every row with every other row finds (about 2 x 10^8
# comparisons in C through a nested loop with index and bitmap scans off).
$node->safe_psql(
	'postgres', q{
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TABLE bf_c AS
  SELECT a.id AS x, b.id AS y, simhash_hamming(a.fp, b.fp) AS d
  FROM c a JOIN c b ON a.id < b.id AND simhash_hamming_within(a.fp, b.fp, 6);
});
for my $k (3, 6)
{
	my $plan = $node->safe_psql('postgres', qq{
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM c a JOIN c b ON b.fp <~> a.fp <= $k AND a.id < b.id});
	like($plan, qr/Nested Loop.*Index Scan using c_fp_idx on c b/s,
		"the self-join within $k bits is a nested loop over the simhash index");
	my $res = $node->safe_psql(
		'postgres', qq{
SET enable_seqscan = off;
CREATE TEMP TABLE ix AS
  SELECT a.id AS x, b.id AS y FROM c a JOIN c b ON b.fp <~> a.fp <= $k AND a.id < b.id;
SELECT (SELECT count(*) FROM ix),
       (SELECT count(*) FROM ix FULL JOIN (SELECT x, y FROM bf_c WHERE d <= $k) bf USING (x, y)
        WHERE ix.x IS NULL OR bf.x IS NULL),
       (SELECT count(*) FROM (SELECT FROM ix GROUP BY x, y HAVING count(*) > 1) dup);
});
	my ($npairs, $ndiff, $ndup) = split /\|/, $res;
	cmp_ok($npairs, '>', 1000, "clustered data: the index self-join finds $npairs pairs within $k bits");
	is($ndiff, 0, "and they are exactly the brute-force pairs within $k bits");
	is($ndup, 0, "each pair once");
}

for my $k (3, 6)
{
	compare('r', 'simhash_component', $k, 'id');
	compare('r', 'simhash_leader', $k, 'id');
	compare('c', 'simhash_component', $k, 'id');
	compare('c', 'simhash_leader', $k, 'id');
	compare('c', 'simhash_leader', $k, 'shuffle, id');
}
compare('c', 'simhash_component', 3, 'shuffle, id');
compare('c', 'simhash_leader', 3, 'id', 'id % 3');

# chains: one component each at radius 3, but cut into many leader groups
my $chains = $node->safe_psql(
	'postgres', q{
SELECT count(DISTINCT comp), count(DISTINCT lead)
FROM (SELECT id, simhash_component(id, fp, 3) OVER (ORDER BY id) AS comp,
             simhash_leader(id, fp, 3) OVER (ORDER BY id) AS lead
      FROM c WHERE id BETWEEN 400000 AND 499999) s});
my ($ncomp, $nlead) = split /\|/, $chains;
is($ncomp, 50, 'each chain is one connected component');
cmp_ok($nlead, '>=', 50 * 10, "leaders cut the chains ($nlead groups)");

# ---- cancellation: a run that would take minutes (radius 24 on random data
# compares nearly every pair) stops promptly
$node->safe_psql('postgres',
	'CREATE TABLE big AS SELECT g AS id, rnd_fp() AS fp FROM generate_series(1, 300000) g');
my $t0 = time;
my ($ret, $out, $err) = $node->psql(
	'postgres', q{
SET statement_timeout = '1s';
SELECT count(DISTINCT c) FROM (SELECT simhash_component(id, fp, 24) OVER () AS c FROM big) s});
my $elapsed = time - $t0;
like($err, qr/canceling statement due to statement timeout/, 'statement_timeout cancels a grouping run');
cmp_ok($elapsed, '<', 20, sprintf('and promptly (%.1f s for a 1 s timeout)', $elapsed));

# pg_cancel_backend from another session
my $bg = $node->background_psql('postgres');
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
$bg->query_until(qr/started/, q{
\echo started
SELECT count(DISTINCT c) FROM (SELECT simhash_component(id, fp, 24) OVER () AS c FROM big) s;
});
sleep(2);
is($node->safe_psql('postgres', "SELECT state FROM pg_stat_activity WHERE pid = $pid"),
	'active', 'the grouping run is still running after 2 s');
$t0 = time;
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
my $gone = 0;
for (1 .. 200)
{
	if ($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND state = 'active'") eq '0')
	{
		$gone = 1;
		last;
	}
	Time::HiRes::sleep(0.1);
}
ok($gone, sprintf('pg_cancel_backend stops a grouping run (%.1f s)', time - $t0));
eval { $bg->quit; };    # its psql has seen the cancel error

# ---- progress NOTICEs at the configured interval
($ret, $out, $err) = $node->psql(
	'postgres', q{
SET simhash.progress_interval = '50ms';
SELECT count(DISTINCT c) FROM (SELECT simhash_leader(id, fp, 12) OVER (ORDER BY id) AS c FROM big WHERE id <= 60000) s});
is($ret, 0, 'a run with progress reports succeeds');
like($err, qr/NOTICE:  simhash_leader: finding pairs, table \d+ of \d+, \d+ pairs so far/,
	'progress NOTICEs while finding pairs');
like($err, qr/NOTICE:  simhash_leader: done, \d+ pairs within 12 bits/, 'a final NOTICE');
($ret, $out, $err) = $node->psql(
	'postgres', q{
SET simhash.progress_interval = 0;
SELECT count(DISTINCT c) FROM (SELECT simhash_leader(id, fp, 12) OVER (ORDER BY id) AS c FROM big WHERE id <= 60000) s});
unlike($err, qr/NOTICE/, 'no NOTICE with simhash.progress_interval = 0');

# ---- the memory check refuses before allocating
($ret, $out, $err) = $node->psql(
	'postgres', q{
SET maintenance_work_mem = '8MB';
SELECT count(c) FROM (SELECT simhash_component(id, fp, 3) OVER () AS c FROM big) s});
like($err, qr/simhash_component needs about \d+ MB of memory for 300000 rows, more than maintenance_work_mem \(8192 kB\)/,
	'too little maintenance_work_mem: a clear error');
# leader clustering keeps its pairs: a radius that joins nearly everything
# runs out of maintenance_work_mem while collecting them, with a clear error
($ret, $out, $err) = $node->psql(
	'postgres', q{
SELECT count(c) FROM (SELECT simhash_leader(id, fp, 24) OVER () AS c FROM big) s});
like($err, qr/simhash_leader needs about \d+ MB of memory for 300000 rows and more than \d+ pairs, more than maintenance_work_mem/,
	'too many pairs for leader clustering: a clear error');

$node->stop;
done_testing();
