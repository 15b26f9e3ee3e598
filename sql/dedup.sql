--
-- dedup: grouping near-duplicates of a whole set of rows with the window
-- functions simhash_component() (connected components) and simhash_leader()
-- (leader clustering), each compared with a brute-force reference written in
-- SQL on random data, clustered data with exact copies, chains and data that
-- is skewed enough to need sub-splits; order dependence, PARTITION BY, NULLs,
-- every error, and the removal script examples/dedup.sql (see dedup_script).
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

--
-- References. Positions are the rows' order (ord); both return (id, rep).
-- Components: the smallest ord reachable through pairs within k bits, by
-- propagating labels over every pair until nothing changes.
--
CREATE FUNCTION ref_components(k int) RETURNS TABLE (id bigint, rep bigint)
LANGUAGE plpgsql AS $$
DECLARE changed bigint;
BEGIN
  CREATE TEMP TABLE ref_lab ON COMMIT DROP AS
    SELECT d.id, d.ord AS lab FROM dd d WHERE d.fp IS NOT NULL;
  CREATE TEMP TABLE ref_edge ON COMMIT DROP AS
    SELECT a.id AS x, b.id AS y FROM dd a JOIN dd b
      ON a.id <> b.id AND simhash_hamming(a.fp, b.fp) <= k;
  LOOP
    UPDATE ref_lab l SET lab = m.lab
    FROM (SELECT e.x, min(o.lab) AS lab FROM ref_edge e JOIN ref_lab o ON o.id = e.y
          GROUP BY e.x) m
    WHERE l.id = m.x AND m.lab < l.lab;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
  RETURN QUERY
    SELECT d.id, r.id FROM dd d LEFT JOIN ref_lab l ON l.id = d.id LEFT JOIN dd r ON r.ord = l.lab;
  DROP TABLE ref_lab, ref_edge;
END $$;

-- Leaders: rows in ord order; each joins the first earlier leader within k
-- bits or becomes a leader.
CREATE FUNCTION ref_leaders(k int) RETURNS TABLE (id bigint, rep bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; l bigint;
BEGIN
  CREATE TEMP TABLE ref_lead (ord bigint, id bigint, fp simhash) ON COMMIT DROP;
  FOR r IN SELECT * FROM dd ORDER BY ord LOOP
    id := r.id;
    IF r.fp IS NULL THEN
      rep := NULL;
    ELSE
      SELECT x.id INTO l FROM ref_lead x WHERE simhash_hamming(x.fp, r.fp) <= k ORDER BY x.ord LIMIT 1;
      IF l IS NULL THEN
        INSERT INTO ref_lead VALUES (r.ord, r.id, r.fp);
        l := r.id;
      END IF;
      rep := l;
    END IF;
    RETURN NEXT;
  END LOOP;
  DROP TABLE ref_lead;
END $$;

-- The data under test is the view dd (id, fp, ord), ord = the window order.
-- check(k) compares both functions with their reference for radius k and
-- shows the shape of the result (groups, largest group, rows in groups).
CREATE FUNCTION check_groups(k int)
RETURNS TABLE (method text, radius int, same boolean, groups bigint, largest bigint, grouped bigint)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH got AS (SELECT d.id, simhash_component(d.id, d.fp, k) OVER (ORDER BY d.ord) AS rep FROM dd d),
       want AS (SELECT * FROM ref_components(k)),
       sizes AS (SELECT g.rep, count(*) AS n FROM got g WHERE g.rep IS NOT NULL GROUP BY g.rep)
  SELECT 'component', k,
         NOT EXISTS (SELECT 1 FROM got g FULL JOIN want w USING (id)
                     WHERE g.rep IS DISTINCT FROM w.rep OR g.id IS NULL OR w.id IS NULL),
         (SELECT count(*) FROM sizes), (SELECT max(n) FROM sizes),
         (SELECT coalesce(sum(n), 0) FROM sizes WHERE n > 1)::bigint;
  RETURN QUERY
  WITH got AS (SELECT d.id, simhash_leader(d.id, d.fp, k) OVER (ORDER BY d.ord) AS rep FROM dd d),
       want AS (SELECT * FROM ref_leaders(k)),
       sizes AS (SELECT g.rep, count(*) AS n FROM got g WHERE g.rep IS NOT NULL GROUP BY g.rep)
  SELECT 'leader', k,
         NOT EXISTS (SELECT 1 FROM got g FULL JOIN want w USING (id)
                     WHERE g.rep IS DISTINCT FROM w.rep OR g.id IS NULL OR w.id IS NULL),
         (SELECT count(*) FROM sizes), (SELECT max(n) FROM sizes),
         (SELECT coalesce(sum(n), 0) FROM sizes WHERE n > 1)::bigint;
END $$;

CREATE FUNCTION rnd_fp() RETURNS simhash LANGUAGE sql VOLATILE AS
$$ SELECT ((floor(random() * 4294967296)::bigint << 32) | floor(random() * 4294967296)::bigint)::simhash $$;
-- fp with n distinct random bits flipped
CREATE FUNCTION flip_bits(fp simhash, n int) RETURNS simhash LANGUAGE sql VOLATILE AS
$$ SELECT (fp::bigint # coalesce((SELECT bit_or(1::bigint << b)
          FROM (SELECT b FROM generate_series(0, 63) b ORDER BY random() LIMIT n) s), 0))::simhash $$;

--
-- 1. Clustered data: 300 centres, each with 0..4 near-duplicates at 1..5
-- bits, exact copies, random rows, NULL fingerprints; window order by id,
-- then by descending id (leaders depend on the order, components only
-- through which row represents them).
--
SELECT setseed(0.25);
CREATE TABLE dd_data (id bigint PRIMARY KEY, fp simhash);
INSERT INTO dd_data SELECT g, rnd_fp() FROM generate_series(1, 300) g;
INSERT INTO dd_data
  SELECT 1000 + 10 * c.id + j, flip_bits(c.fp, 1 + (random() * 4)::int)
  FROM dd_data c, generate_series(1, 4) j WHERE j <= c.id % 5;
INSERT INTO dd_data SELECT 5000 + id, fp FROM dd_data WHERE id % 7 = 0;
INSERT INTO dd_data SELECT 9000 + g, rnd_fp() FROM generate_series(1, 200) g;
INSERT INTO dd_data SELECT 9500 + g, NULL FROM generate_series(1, 5) g;
SELECT count(*), count(fp), count(DISTINCT fp) FROM dd_data;

CREATE VIEW dd AS SELECT id, fp, row_number() OVER (ORDER BY id) AS ord FROM dd_data;
SELECT c.* FROM generate_series(0, 6) k, check_groups(k) c;
SELECT c.* FROM check_groups(12) c;

CREATE OR REPLACE VIEW dd AS SELECT id, fp, row_number() OVER (ORDER BY id DESC) AS ord FROM dd_data;
SELECT c.* FROM (VALUES (3), (5)) v(k), check_groups(v.k) c;

-- the representative of a component is its first row in the window's order
SELECT count(*) AS components,
       count(*) FILTER (WHERE rep_asc = min_id) AS first_by_id,
       count(*) FILTER (WHERE rep_desc = max_id) AS first_by_id_desc
FROM (SELECT min(rep_asc) AS rep_asc, min(rep_desc) AS rep_desc, min(id) AS min_id, max(id) AS max_id
      FROM (SELECT id, simhash_component(id, fp, 3) OVER (ORDER BY id) AS rep_asc,
                   simhash_component(id, fp, 3) OVER (ORDER BY id DESC) AS rep_desc
            FROM dd_data WHERE fp IS NOT NULL) s
      GROUP BY rep_asc) g;

--
-- 2. Chains: each link is 2 bits from the one before, so the ends are far
-- apart. Within 3 bits a chain is one component, but leaders cut it.
--
CREATE TABLE dd_chain (id bigint PRIMARY KEY, fp simhash);
INSERT INTO dd_chain
  SELECT c * 100 + i, (('x' || md5(c::text))::bit(64)::bigint # ((1::bigint << (2 * i)) - 1))::simhash
  FROM generate_series(0, 2) c, generate_series(0, 12) i;
SELECT simhash_hamming(a.fp, b.fp) AS first_to_last FROM dd_chain a, dd_chain b WHERE a.id = 0 AND b.id = 12;
SELECT id, simhash_component(id, fp, 3) OVER (ORDER BY id) AS component,
       simhash_leader(id, fp, 3) OVER (ORDER BY id) AS leader,
       simhash_leader(id, fp, 3) OVER (ORDER BY id DESC) AS leader_desc
FROM dd_chain WHERE id < 100 ORDER BY id;
CREATE OR REPLACE VIEW dd AS SELECT id, fp, row_number() OVER (ORDER BY id) AS ord FROM dd_chain;
SELECT c.* FROM (VALUES (2), (3), (4), (64)) v(k), check_groups(v.k) c;

--
-- 3. Skewed data: 400 fingerprints equal in their top 40 bits, so one key
-- of every table holds them all and is split again on its remaining bits
-- (sub-splits in the DEBUG line), plus random rows.
--
CREATE TABLE dd_skew (id bigint PRIMARY KEY, fp simhash);
INSERT INTO dd_skew
  SELECT g, ((x'5555555555000000'::bigint) | (floor(random() * 16777216)::bigint))::simhash
  FROM generate_series(1, 400) g;
INSERT INTO dd_skew SELECT 1000 + g, rnd_fp() FROM generate_series(1, 400) g;
CREATE OR REPLACE VIEW dd AS SELECT id, fp, row_number() OVER (ORDER BY id) AS ord FROM dd_skew;
SET client_min_messages = debug1;
SELECT count(DISTINCT c) FROM (SELECT simhash_component(id, fp, 3) OVER () AS c FROM dd_skew) s;
SELECT count(DISTINCT c) FROM (SELECT simhash_leader(id, fp, 12) OVER () AS c FROM dd_skew) s;
RESET client_min_messages;
SELECT c.* FROM (VALUES (3), (8)) v(k), check_groups(v.k) c;

--
-- 4. PARTITION BY groups each partition on its own; the answers equal a
-- separate run per partition.
--
SELECT count(*) AS rows,
       count(*) FILTER (WHERE p.rep IS NOT DISTINCT FROM s.rep) AS same_as_separate
FROM (SELECT id, simhash_leader(id, fp, 4) OVER (PARTITION BY id % 3 ORDER BY id) AS rep FROM dd_data) p
JOIN (SELECT id, simhash_leader(id, fp, 4) OVER (ORDER BY id) AS rep FROM dd_data WHERE id % 3 = 0
      UNION ALL
      SELECT id, simhash_leader(id, fp, 4) OVER (ORDER BY id) AS rep FROM dd_data WHERE id % 3 = 1
      UNION ALL
      SELECT id, simhash_leader(id, fp, 4) OVER (ORDER BY id) AS rep FROM dd_data WHERE id % 3 = 2) s
USING (id);

--
-- 5. Edge cases and errors.
--
-- empty input: no rows, no call
SELECT simhash_component(id, fp, 3) OVER () FROM dd_data WHERE false;
-- one row, and only NULL fingerprints
SELECT simhash_leader(7, 'ffffffffffffffff'::simhash, 3) OVER ();
SELECT id, simhash_component(id, fp, 3) OVER () FROM dd_data WHERE fp IS NULL ORDER BY id;
-- a NULL radius gives NULL for every row
SELECT count(*), count(c) FROM (SELECT simhash_component(id, fp, NULL) OVER () AS c FROM dd_data) s;
-- a parameter is a valid radius (prepared statements, PL/pgSQL variables)
PREPARE grp(int) AS
  SELECT count(DISTINCT c) FROM (SELECT simhash_leader(id, fp, $1) OVER (ORDER BY id) AS c FROM dd_data) s;
EXECUTE grp(3);
DEALLOCATE grp;
-- ids of other integer types are taken
SELECT simhash_component(id::int, fp, 3) OVER (ORDER BY id) FROM dd_data ORDER BY id LIMIT 1;
-- errors
SELECT simhash_component(id, fp, -1) OVER () FROM dd_data;
SELECT simhash_leader(id, fp, 65) OVER () FROM dd_data;
SELECT simhash_leader(id, fp, (id % 3)::int) OVER () FROM dd_data;
SELECT simhash_component(CASE WHEN id = 42 THEN NULL ELSE id END, fp, 3) OVER () FROM dd_data;
SELECT simhash_component(id / 2, fp, 3) OVER () FROM dd_data;
-- a NULL id on a row without a fingerprint is no error (that row has no group)
SELECT count(*), count(c) FROM (SELECT simhash_component(CASE WHEN fp IS NULL THEN NULL ELSE id END, fp, 3) OVER () AS c FROM dd_data) s;
-- the memory estimate must fit in maintenance_work_mem
SET maintenance_work_mem = '1MB';
-- (the column is used: an unused window function result is not computed at all)
SELECT count(c) FROM (SELECT simhash_component(g, g::bigint::simhash, 3) OVER () AS c FROM generate_series(1, 20000) g) s;
SET maintenance_work_mem = '2MB';
SELECT count(c) FROM (SELECT simhash_component(g, g::bigint::simhash, 3) OVER () AS c FROM generate_series(1, 20000) g) s;
-- leader clustering also keeps the pairs (16 bytes each with their sort buffer): 499500 here
SELECT count(c) FROM (SELECT simhash_leader(g, g::bigint::simhash, 64) OVER () AS c FROM generate_series(1, 1000) g) s;
RESET maintenance_work_mem;
SELECT count(DISTINCT c) FROM (SELECT simhash_leader(g, g::bigint::simhash, 64) OVER () AS c FROM generate_series(1, 1000) g) s;
-- not an aggregate, not a plain function
SELECT simhash_leader(1, 'ffffffffffffffff'::simhash, 3);

DROP VIEW dd;
DROP TABLE dd_data, dd_chain, dd_skew;
DROP FUNCTION check_groups(int), ref_components(int), ref_leaders(int), rnd_fp(), flip_bits(simhash, int);
