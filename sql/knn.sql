--
-- knn: ORDER BY fp <-> q [LIMIT k] from a simhash index (nearest neighbours,
-- exact). Every form is compared with a sequential scan and sort on the same
-- rows: the same distances in the same order, and the same rows wherever the
-- distance is not tied at the cut.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default
-- the plans forced with enable_* = off cost enough to be JIT-compiled, which
-- would take most of this suite's time
SET jit = off;

-- 6,000 rows: random fingerprints, near-copies of some of them (1..4 bits
-- flipped), exact duplicates (ties), a skewed group sharing its top 40 bits,
-- and NULL fingerprints
CREATE TABLE kn (id int PRIMARY KEY, lang text, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO kn SELECT g, CASE WHEN g % 3 = 0 THEN 'en' ELSE 'de' END,
                      ('x' || left(md5(g::text), 16))::bit(64)::simhash
FROM generate_series(1, 3000) g;
INSERT INTO kn SELECT 3000 + g, 'en',
       ((('x' || left(md5(g::text), 16))::bit(64)::bigint) # (1::bigint << (g % 64)) # (CASE WHEN g % 4 > 0 THEN 1::bigint << ((g * 7) % 64) ELSE 0 END))::simhash
FROM generate_series(1, 1500) g;
INSERT INTO kn SELECT 4500 + id / 2, 'fr', fp FROM kn WHERE id BETWEEN 1 AND 500 AND id % 2 = 0;
INSERT INTO kn SELECT 4750 + g, 'fr',
       ((x'0123456789' || ('x' || left(md5(g::text), 6))::bit(24))::bit(64)::bigint)::simhash
FROM generate_series(1, 1200) g;
INSERT INTO kn SELECT 5950 + g, 'nl', NULL FROM generate_series(1, 50) g;
SELECT count(*) AS rows, count(fp) AS with_fp, count(DISTINCT fp) AS distinct_fp FROM kn;
CREATE INDEX kn_fp ON kn USING simhash (fp) WITH (pending_limit = 256);
ANALYZE kn;
CREATE TABLE kn_q (qid int, q simhash);
INSERT INTO kn_q SELECT 1, fp FROM kn WHERE id = 1          -- a row of the table
UNION ALL SELECT 2, fp FROM kn WHERE id = 3001              -- a near-copy
UNION ALL SELECT 3, 'c4ca4238a0b92382'                      -- not in the table
UNION ALL SELECT 4, '0123456789000000'                      -- in the skewed group
UNION ALL SELECT 5, fp FROM kn WHERE id = 4502              -- has a duplicate
UNION ALL SELECT 6, 'ffffffffffffffff';

-- kn_check(query): the index's answer (index scans only) against the
-- sequential scan's (no index), for a query returning (id, distance) rows in
-- distance order. Equal: the distances are the same sequence, and the rows
-- closer than the last distance are the same set (at the last distance, a
-- tie, any of the tied rows may be cut off).
CREATE FUNCTION kn_check(query text, OUT rows int, OUT same bool, OUT index_used bool)
LANGUAGE plpgsql AS $fn$
DECLARE
    ix record;
    sq record;
    line text;
BEGIN
    SET LOCAL enable_seqscan = off;
    SET LOCAL enable_bitmapscan = off;
    SET LOCAL enable_sort = off;
    index_used := false;
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        index_used := index_used OR position('Index Scan using kn_fp' IN line) > 0;
    END LOOP;
    EXECUTE format('SELECT count(*)::int AS n, array_agg(d ORDER BY o) AS ds, max(d) AS last,
                           array_agg(id ORDER BY id) FILTER (WHERE d < (SELECT max(d) FROM (%s) y(id, d))) AS ids
                    FROM (SELECT id, d, row_number() OVER () AS o FROM (%s) x(id, d)) z', query, query)
        INTO ix;
    SET LOCAL enable_seqscan = on;
    SET LOCAL enable_indexscan = off;
    SET LOCAL enable_sort = on;
    EXECUTE format('SELECT count(*)::int AS n, array_agg(d ORDER BY o) AS ds, max(d) AS last,
                           array_agg(id ORDER BY id) FILTER (WHERE d < (SELECT max(d) FROM (%s) y(id, d))) AS ids
                    FROM (SELECT id, d, row_number() OVER () AS o FROM (%s) x(id, d)) z', query, query)
        INTO sq;
    rows := ix.n;
    same := ix.n = sq.n AND ix.ds IS NOT DISTINCT FROM sq.ds AND ix.ids IS NOT DISTINCT FROM sq.ids;
END
$fn$;

--
-- Plans: the index serves ORDER BY fp <-> q with LIMIT, with other conditions
-- (a filter, or a radius condition of the same scan), and prepared statements
-- with generic plans.
--
EXPLAIN (COSTS OFF)
SELECT id, fp <-> 'c4ca4238a0b92382' AS bits FROM kn ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn WHERE lang = 'en' ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn WHERE fp <~> 'c4ca4238a0b92382' <= 6 ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 10;
-- descending distance is not what the index gives: sorted
EXPLAIN (COSTS OFF)
SELECT id FROM kn ORDER BY fp <-> 'c4ca4238a0b92382' DESC LIMIT 10;
PREPARE kn_near(simhash, int) AS
    SELECT id, fp <-> $1 AS d FROM kn ORDER BY fp <-> $1 LIMIT $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE kn_near('c4ca4238a0b92382', 10);
EXECUTE kn_near('c4ca4238a0b92382', 5);
RESET plan_cache_mode;

--
-- Every query centre, k = 1, 10, 100 and 1000, and the whole table.
--
SELECT qid, k, c.*
FROM kn_q, unnest(ARRAY[1, 10, 100, 1000]) k,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn ORDER BY fp <-> %L::simhash LIMIT %s', q, q, k)) c
ORDER BY qid, k;
-- with a filter, and with a radius condition of the same scan
SELECT qid, c.*
FROM kn_q, kn_check(format('SELECT id, fp <-> %L::simhash FROM kn WHERE lang = ''en'' ORDER BY fp <-> %L::simhash LIMIT 50', q, q)) c
ORDER BY qid;
SELECT qid, r, c.*
FROM kn_q, unnest(ARRAY[0, 3, 12]) r,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn WHERE fp <~> %L <= %s ORDER BY fp <-> %L::simhash LIMIT 100', q, q, r, q)) c
ORDER BY qid, r;

-- The same, with probing keeping nothing beyond distance 0 at first, so that
-- every further bit is found by probing the steps done so far again (a
-- search of a large index keeps up to 20 bits, then 8 more at a time)
SET simhash.test_fault = knn_keep_small;
SELECT qid, k, c.*
FROM kn_q, unnest(ARRAY[1, 10, 100, 1000]) k,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn ORDER BY fp <-> %L::simhash LIMIT %s', q, q, k)) c
ORDER BY qid, k;
SELECT qid, r, c.*
FROM kn_q, unnest(ARRAY[0, 3, 12]) r,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn WHERE fp <~> %L <= %s ORDER BY fp <-> %L::simhash LIMIT 100', q, q, r, q)) c
ORDER BY qid, r;
SELECT c.* FROM kn_check('SELECT id, fp <-> ''c4ca4238a0b92382''::simhash FROM kn ORDER BY fp <-> ''c4ca4238a0b92382''::simhash') c;
RESET simhash.test_fault;

--
-- One distance: <~> and <-> are the same distance of the same type, and each
-- reaches the index in ORDER BY and in WHERE, on either side, by name too
-- (the planner support makes either the index's ordering operator, whose
-- query side EXPLAIN shows as ::simhash_order). Each form against the
-- sequential scan's answer.
--
EXPLAIN (COSTS OFF)
SELECT id FROM kn ORDER BY fp <~> 'c4ca4238a0b92382' LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn ORDER BY 'c4ca4238a0b92382' <~> fp LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn ORDER BY simhash_hamming_distance(fp, 'c4ca4238a0b92382') LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn ORDER BY simhash_hamming(fp, 'c4ca4238a0b92382') LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT id FROM kn WHERE fp <-> 'c4ca4238a0b92382' <= 8;
EXPLAIN (COSTS OFF)
SELECT id FROM kn WHERE 8 >= 'c4ca4238a0b92382' <-> fp;
EXPLAIN (COSTS OFF)
SELECT id FROM kn WHERE fp <-> 'c4ca4238a0b92382' <= 8 ORDER BY fp <~> 'c4ca4238a0b92382' LIMIT 5;
SELECT pg_typeof(fp <-> fp) AS "<->", pg_typeof(fp <~> fp) AS "<~>" FROM kn LIMIT 1;
SELECT count(*) AS rows,
       count(*) FILTER (WHERE (fp <-> 'c4ca4238a0b92382') = (fp <~> 'c4ca4238a0b92382')) AS same_distance
FROM kn;
SELECT qid, form, c.*
FROM kn_q, unnest(ARRAY['fp <~> %1$L::simhash', '%1$L::simhash <-> fp', '%1$L::simhash <~> fp',
                        'simhash_hamming_distance(fp, %1$L::simhash)', 'simhash_hamming(fp, %1$L::simhash)']) form,
     kn_check(format('SELECT id, fp <-> %1$L::simhash FROM kn ORDER BY ' || form || ' LIMIT 20', q)) c
ORDER BY qid, form;
-- a radius written with <->: the index's answer (kn_check forbids any other
-- scan) is the sequential scan's, in distance order
SELECT qid, r, c.*
FROM kn_q, unnest(ARRAY[0, 3, 12]) r,
     kn_check(format('SELECT id, fp <-> %1$L::simhash FROM kn WHERE fp <-> %1$L::simhash <= %2$s ORDER BY fp <-> %1$L::simhash LIMIT 1000', q, r)) c
ORDER BY qid, r;
-- generic plans, with the bound sent as each integer type
PREPARE kn_within(simhash, int8) AS SELECT count(*) FROM kn WHERE fp <-> $1 <= $2;
PREPARE kn_near_tilde(simhash) AS SELECT id FROM kn ORDER BY fp <~> $1 LIMIT 3;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE kn_within('c4ca4238a0b92382', 12);
EXPLAIN (COSTS OFF) EXECUTE kn_near_tilde('c4ca4238a0b92382');
EXECUTE kn_within('c4ca4238a0b92382', 12);
RESET plan_cache_mode;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM kn WHERE fp <-> 'c4ca4238a0b92382' <= 12;
RESET enable_indexscan;
RESET enable_bitmapscan;

-- Ties: the duplicates of row 4502's fingerprint come first, at distance 0
SELECT count(*) FILTER (WHERE d = 0) AS at_zero
FROM (SELECT fp <-> (SELECT fp FROM kn WHERE id = 4502) AS d FROM kn
      ORDER BY fp <-> (SELECT fp FROM kn WHERE id = 4502) LIMIT 2) x;

-- NULL fingerprints come last, as in a sequential scan; no plan drops them
SELECT c.* FROM kn_check('SELECT id, fp <-> ''c4ca4238a0b92382''::simhash FROM kn ORDER BY fp <-> ''c4ca4238a0b92382''::simhash') c;
SET enable_seqscan = off;
SET enable_sort = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE d IS NULL) AS null_distances,
       max(n) FILTER (WHERE d IS NOT NULL) < min(n) FILTER (WHERE d IS NULL) AS nulls_last
FROM (SELECT fp <-> 'c4ca4238a0b92382' AS d, row_number() OVER () AS n
      FROM (SELECT fp FROM kn ORDER BY fp <-> 'c4ca4238a0b92382') s) t;
-- count(*) needs no column: a whole-index scan could serve it as an
-- index-only scan, but this index returns no tuples; never chosen
EXPLAIN (COSTS OFF) SELECT count(*) FROM kn;
SELECT count(*) FROM kn;
-- k larger than the table: every row, NULLs included
SELECT count(*) FROM (SELECT id FROM kn ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 100000) s;
-- ORDER BY fp <-> NULL: every distance NULL, every row
SELECT count(*), count(d) FROM (SELECT fp <-> NULL AS d FROM kn ORDER BY fp <-> NULL LIMIT 100000) s;
RESET enable_seqscan;
RESET enable_sort;

--
-- The kNN join: each row's five nearest other rows, the inner side an index
-- scan per outer row (LATERAL).
--
EXPLAIN (COSTS OFF)
SELECT d.id, n.id, n.bits FROM kn d CROSS JOIN LATERAL
  (SELECT id, fp <-> d.fp AS bits FROM kn x WHERE x.id <> d.id ORDER BY x.fp <-> d.fp LIMIT 5) n
WHERE d.id <= 20;
CREATE TEMP TABLE kn_join_ix AS
SELECT d.id AS a, n.id AS b, n.bits FROM kn d CROSS JOIN LATERAL
  (SELECT id, fp <-> d.fp AS bits FROM kn x WHERE x.id <> d.id ORDER BY x.fp <-> d.fp LIMIT 5) n
WHERE d.id <= 300 OR d.id BETWEEN 4500 AND 4520;
SET enable_indexscan = off;
CREATE TEMP TABLE kn_join_seq AS
SELECT d.id AS a, n.id AS b, n.bits FROM kn d CROSS JOIN LATERAL
  (SELECT id, fp <-> d.fp AS bits FROM kn x WHERE x.id <> d.id ORDER BY x.fp <-> d.fp LIMIT 5) n
WHERE d.id <= 300 OR d.id BETWEEN 4500 AND 4520;
RESET enable_indexscan;
-- per outer row: the same distances, and the same rows below the fifth distance
SELECT count(*) AS outer_rows,
       count(*) FILTER (WHERE i.ds = s.ds AND i.ids IS NOT DISTINCT FROM s.ids) AS same
FROM (SELECT a, array_agg(bits ORDER BY bits) ds,
             array_agg(b ORDER BY b) FILTER (WHERE bits < (SELECT max(bits) FROM kn_join_ix y WHERE y.a = x.a)) ids
      FROM kn_join_ix x GROUP BY a) i
JOIN (SELECT a, array_agg(bits ORDER BY bits) ds,
             array_agg(b ORDER BY b) FILTER (WHERE bits < (SELECT max(bits) FROM kn_join_seq y WHERE y.a = x.a)) ids
      FROM kn_join_seq x GROUP BY a) s USING (a);

--
-- After inserts into the pending list and runs, and after deletes and VACUUM
--
INSERT INTO kn SELECT 10000 + g, 'en', ('x' || left(md5((g * 31)::text), 16))::bit(64)::simhash
FROM generate_series(1, 2000) g;
INSERT INTO kn SELECT 12000 + g, 'en', NULL FROM generate_series(1, 10) g;
SELECT runs > 1 AS several_runs, pending_entries > 0 AS pending FROM simhash_index_info('kn_fp');
SELECT qid, k, c.*
FROM kn_q, unnest(ARRAY[1, 10, 500]) k,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn ORDER BY fp <-> %L::simhash LIMIT %s', q, q, k)) c
ORDER BY qid, k;
DELETE FROM kn WHERE id % 5 = 0;
VACUUM kn;
SELECT qid, k, c.*
FROM kn_q, unnest(ARRAY[1, 10, 500]) k,
     kn_check(format('SELECT id, fp <-> %L::simhash FROM kn ORDER BY fp <-> %L::simhash LIMIT %s', q, q, k)) c
ORDER BY qid, k;
SELECT c.* FROM kn_check('SELECT id, fp <-> ''0123456789000000''::simhash FROM kn ORDER BY fp <-> ''0123456789000000''::simhash') c;

-- an empty table
CREATE TABLE kn_empty (id int, fp simhash);
CREATE INDEX kn_empty_fp ON kn_empty USING simhash (fp);
SET enable_seqscan = off;
SELECT id FROM kn_empty ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 3;
INSERT INTO kn_empty VALUES (1, NULL), (2, '0000000000000000'), (3, '0000000000000003');
SELECT id, fp <-> '0000000000000001' AS d FROM kn_empty ORDER BY fp <-> '0000000000000001';
-- count(*) with sequential scans disabled: PostgreSQL 18 may then read the
-- whole index as an index-only scan needing no column; every row counts
SELECT count(*) FROM kn_empty;
RESET enable_seqscan;

-- An index created on an empty table holds its first rows in the pending
-- list only, with no run: the search is complete once that list is read.
-- It used to go on enumerating block values no run held (2^(64/m) of them
-- at the end): seconds at blocks = 2, a failed allocation of gigabytes at
-- blocks = 1.
CREATE TABLE kn_pend (id int, fp simhash);
CREATE INDEX kn_pend_b1 ON kn_pend USING simhash (fp) WITH (blocks = 1);
CREATE INDEX kn_pend_b2 ON kn_pend USING simhash (fp) WITH (blocks = 2);
CREATE INDEX kn_pend_b16 ON kn_pend USING simhash (fp) WITH (blocks = 16);
INSERT INTO kn_pend SELECT g, CASE WHEN g % 25 = 0 THEN NULL
                                   ELSE ('x' || md5(g::text))::bit(64)::bigint::simhash END
FROM generate_series(1, 200) g;
SELECT index_name, (simhash_index_info(index_name::regclass)).runs,
       (simhash_index_info(index_name::regclass)).pending_entries
FROM unnest(ARRAY['kn_pend_b1', 'kn_pend_b2', 'kn_pend_b16']) index_name;
CREATE TEMP TABLE kn_pend_seq AS
  SELECT array_agg((fp <~> 'c4ca4238a0b92382')::int ORDER BY fp <-> 'c4ca4238a0b92382', id) AS d5
  FROM (SELECT id, fp FROM kn_pend ORDER BY fp <-> 'c4ca4238a0b92382', id LIMIT 5) s;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
DO $$
DECLARE idx text; d5 int[]; n bigint; nnull bigint; plan text; used boolean;
BEGIN
  FOREACH idx IN ARRAY ARRAY['kn_pend_b1', 'kn_pend_b2', 'kn_pend_b16'] LOOP
    -- leave only this index, inside a subtransaction that is rolled back
    BEGIN
      EXECUTE (SELECT string_agg(format('DROP INDEX %I', i), '; ')
               FROM unnest(ARRAY['kn_pend_b1', 'kn_pend_b2', 'kn_pend_b16']) i WHERE i <> idx);
      used := false;
      FOR plan IN EXECUTE $q$EXPLAIN (COSTS OFF)
                  SELECT fp FROM kn_pend ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 5$q$ LOOP
        used := used OR plan LIKE '%Index Scan using ' || idx || '%';
      END LOOP;
      SELECT array_agg((fp <~> 'c4ca4238a0b92382')::int) INTO d5
        FROM (SELECT fp FROM kn_pend ORDER BY fp <-> 'c4ca4238a0b92382' LIMIT 5) s;
      SELECT count(*), count(*) FILTER (WHERE fp IS NULL) INTO n, nnull
        FROM (SELECT fp FROM kn_pend ORDER BY fp <-> 'c4ca4238a0b92382') s;
      RAISE NOTICE '%: index scan %, 5 nearest %, equal to a sequential scan: %; unlimited: % rows, % NULL',
        idx, used, d5, d5 = (SELECT kn_pend_seq.d5 FROM kn_pend_seq), n, nnull;
      RAISE EXCEPTION 'rollback' USING ERRCODE = 'P0001';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END LOOP;
END $$;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE kn_pend;

-- An index built before NULL entries existed (as extension 0.1.0 built it)
-- cannot return NULL rows: the planner does not choose it for ORDER BY, and a
-- plan forced onto it stops with an error rather than a wrong answer.
SET simhash.test_fault = old_metapage;
CREATE INDEX kn_old_fp ON kn_empty USING simhash (fp);
RESET simhash.test_fault;
DROP INDEX kn_empty_fp;
EXPLAIN (COSTS OFF) SELECT id FROM kn_empty ORDER BY fp <-> '0000000000000001' LIMIT 1;
SET enable_seqscan = off;
SET enable_sort = off;
SELECT id FROM kn_empty ORDER BY fp <-> '0000000000000001' LIMIT 1;
RESET enable_seqscan;
RESET enable_sort;
-- its radius searches still work
SELECT id FROM kn_empty WHERE fp <~> '0000000000000001' <= 1 ORDER BY id;

DROP TABLE kn, kn_q, kn_empty;
DROP FUNCTION kn_check(text);
