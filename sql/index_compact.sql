--
-- index_compact: compact leaves (src/mih/mih_leaf.h). A run whose block
-- values repeat writes each value once per group of a leaf, an entry's
-- other bits, and its TID packed as wide as the leaf needs: more entries a
-- page than the 582 of a plain leaf. Every path that reads leaves, compared
-- with a sequential scan: radius searches by probes and by reading a table
-- whole, nearest neighbours, NULL fingerprints, VACUUM's dead marks, merges
-- of compact runs; simhash_index_verify checks them; an index of on-disk
-- version 1 (as older releases wrote it) keeps writing plain leaves.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

-- 36,000 rows (more than 32,768: a backend places each value's entries
-- rather than filtering probes) whose top 24 bits are zero, so each 16-bit
-- block has 10 random bits (about 35 rows a block value), 360 copies of one
-- fingerprint whose entries span leaves, and 360 NULL fingerprints
CREATE TABLE sh_cl (id int, fp simhash) WITH (autovacuum_enabled = false);
CREATE FUNCTION sh_cl_fp(g int) RETURNS simhash LANGUAGE sql IMMUTABLE AS $fn$
    SELECT CASE WHEN g % 100 = 7 THEN '000000123456789a'::simhash
                WHEN g % 100 = 8 THEN NULL
                ELSE ('x' || left(md5('c' || g), 16))::bit(64)::simhash & '000000ffffffffff' END
$fn$;
INSERT INTO sh_cl SELECT g, sh_cl_fp(g) FROM generate_series(1, 36000) g;
CREATE INDEX sh_cl_idx ON sh_cl USING simhash (fp) WITH (pending_limit = 256);
SELECT version, runs, run_entries FROM simhash_index_info('sh_cl_idx');
-- leaves by format (level 1: compact), and how many entries the fullest holds
SELECT level, count(*) AS leaves, sum(items) AS entries, max(items) > 582 AS more_than_plain
FROM simhash_index_pages('sh_cl_idx') WHERE type = 'leaf' GROUP BY level ORDER BY level;

-- query points: stored rows, rows with one or two bits flipped anywhere
-- (the zero top bits too), the copies, and points near no row: about 120,
-- 860 searches a pass, where a backend builds the run's table of places
-- once it has looked up as many leaves as the run has (164 here, at least
-- one a table a search: mih_cache_pos.c)
CREATE TABLE sh_cl_q (qid int, fp simhash);
INSERT INTO sh_cl_q SELECT id, fp # ((1::int8 << (id % 64)) | ((id % 3)::int8 << (id % 61)))::simhash
    FROM sh_cl WHERE id % 293 = 1;
INSERT INTO sh_cl_q VALUES (-1, '000000123456789a'), (-2, '000000123456789b'),
    (-3, 'ffffff0000000000'), (-4, '0000001234567000');

-- plans through the index, or sequential scans and sorts (for this transaction)
CREATE FUNCTION sh_cl_plan(idx bool) RETURNS void LANGUAGE sql AS $fn$
    SELECT set_config('enable_seqscan', (NOT idx)::text, true),
           set_config('enable_indexscan', idx::text, true),
           set_config('enable_bitmapscan', 'off', true),
           set_config('enable_sort', (NOT idx)::text, true)
$fn$;
CREATE FUNCTION sh_cl_pairs(radii int[], idx bool) RETURNS TABLE (qid int, r int, id int)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM sh_cl_plan(idx);
    RETURN QUERY SELECT q.qid, rr.r, t.id FROM sh_cl_q q, unnest(radii) rr(r),
        LATERAL (SELECT s.id FROM sh_cl s WHERE s.fp <~> q.fp <= rr.r) t
    -- radius 40 from a point 24 bits from every row: more probes than a
    -- search makes, so table 0 is read whole
    UNION ALL SELECT -3, 40, s.id FROM sh_cl s WHERE s.fp <~> 'ffffff0000000000' <= 40;
END
$fn$;
CREATE FUNCTION sh_cl_check(OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    CREATE TEMP TABLE sh_cl_want AS SELECT * FROM sh_cl_pairs('{0,1,2,3,4,6,9}', false);
    CREATE TEMP TABLE sh_cl_got AS SELECT * FROM sh_cl_pairs('{0,1,2,3,4,6,9}', true);
    SELECT count(*) INTO pairs FROM sh_cl_want;
    SELECT count(*) INTO extra FROM (SELECT * FROM sh_cl_got EXCEPT ALL SELECT * FROM sh_cl_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM sh_cl_want EXCEPT ALL SELECT * FROM sh_cl_got) x;
    DROP TABLE sh_cl_got, sh_cl_want;
END
$fn$;
-- nearest neighbours: each point's k nearest distances, NULL last, as a
-- sequential scan orders them
CREATE FUNCTION sh_cl_knn(idx bool, k int) RETURNS TABLE (qid int, d int[])
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM sh_cl_plan(idx);
    RETURN QUERY EXECUTE format('SELECT q.qid, (SELECT array_agg(coalesce(x.d, -1)) FROM (SELECT s.fp <-> q.fp AS d
        FROM sh_cl s ORDER BY s.fp <-> q.fp LIMIT %s) x) FROM sh_cl_q q', k);
END
$fn$;
CREATE FUNCTION sh_cl_knn_check(OUT points bigint, OUT same_10 bigint, OUT same_400 bigint)
LANGUAGE sql AS $fn$
    SELECT count(*), count(*) FILTER (WHERE a.d = b.d),
           (SELECT count(*) FILTER (WHERE c.d = e.d) FROM sh_cl_knn(true, 400) c
            JOIN sh_cl_knn(false, 400) e USING (qid) WHERE c.qid % 7 = 1 OR c.qid < 0)
    FROM sh_cl_knn(true, 10) a JOIN sh_cl_knn(false, 10) b USING (qid)
$fn$;

SELECT * FROM sh_cl_check();
-- twice: the second pass uses what the backend remembers of the run
SELECT * FROM sh_cl_check();
SELECT * FROM sh_cl_knn_check();
-- without what a backend remembers: every leaf found by a descent of the run's tree
SET simhash.index_cache_size = 0;
SELECT * FROM sh_cl_check();
SELECT * FROM sh_cl_knn_check();
RESET simhash.index_cache_size;
-- every row, NULL fingerprints last
SET enable_seqscan = off;
SET enable_sort = off;
SELECT count(*) AS all_rows, count(*) FILTER (WHERE d IS NULL) AS nulls,
       bool_and(d IS NULL) FILTER (WHERE n > 35640) AS nulls_last
FROM (SELECT fp <-> '0000000000000000' AS d, row_number() OVER () AS n
      FROM (SELECT fp FROM sh_cl ORDER BY fp <-> '0000000000000000') o) x;
RESET enable_seqscan;
RESET enable_sort;
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_cl_idx');

-- VACUUM marks dead entries inside compact leaves
DELETE FROM sh_cl WHERE id % 3 = 0;
VACUUM sh_cl;
SELECT * FROM sh_cl_check();
SELECT * FROM sh_cl_knn_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_cl_idx');

-- more rows: pending pages, merged with the compact run into new ones
INSERT INTO sh_cl SELECT g, sh_cl_fp(g) FROM generate_series(36001, 42000) g;
SELECT runs > 1 AS several_runs, pending_entries < 256 AS pending_merged FROM simhash_index_info('sh_cl_idx');
SELECT * FROM sh_cl_check();
SELECT * FROM sh_cl_knn_check();
VACUUM sh_cl;
SELECT runs, pending_entries FROM simhash_index_info('sh_cl_idx');
SELECT * FROM sh_cl_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_cl_idx');

-- the same rows in plain leaves, where they take more pages: an index of
-- on-disk version 1, as releases before compact leaves wrote it (the
-- test fault writes that metapage); its merges write plain leaves too
SET simhash.test_fault = old_metapage;
CREATE INDEX sh_cl_v1 ON sh_cl USING simhash (fp) WITH (pending_limit = 256);
RESET simhash.test_fault;
SELECT version FROM simhash_index_info('sh_cl_v1');
INSERT INTO sh_cl SELECT g, sh_cl_fp(g) FROM generate_series(42001, 44000) g;
SELECT i.indexrelid::regclass AS index, p.level, count(*) AS leaves
FROM pg_index i, simhash_index_pages(i.indexrelid::regclass) p
WHERE i.indrelid = 'sh_cl'::regclass AND p.type = 'leaf' GROUP BY 1, 2 ORDER BY 1, 2;
DROP INDEX sh_cl_idx;
SELECT * FROM sh_cl_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_cl_v1');
-- REINDEX writes the current version, with compact leaves: fewer of them
CREATE TEMP TABLE sh_cl_v1_leaves AS
    SELECT count(*) AS n FROM simhash_index_pages('sh_cl_v1') WHERE type = 'leaf';
REINDEX INDEX sh_cl_v1;
SELECT version FROM simhash_index_info('sh_cl_v1');
SELECT count(*) FILTER (WHERE level = 1) > 0 AS has_compact_leaves,
       count(*) < 0.8 * (SELECT n FROM sh_cl_v1_leaves) AS fewer_leaves
FROM simhash_index_pages('sh_cl_v1') WHERE type = 'leaf';
SELECT * FROM sh_cl_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_cl_v1');

-- 8 blocks: 8-bit tables, 256 values, a value's entries fill several leaves
-- (36,000 live rows: their places are tabled too)
DROP INDEX sh_cl_v1;
INSERT INTO sh_cl SELECT g, sh_cl_fp(g) FROM generate_series(44001, 50000) g;
CREATE INDEX sh_cl_b8 ON sh_cl USING simhash (fp) WITH (blocks = 8);
SELECT count(*) FILTER (WHERE level = 1) AS compact_leaves, count(*) FILTER (WHERE level = 0) AS plain_leaves
FROM simhash_index_pages('sh_cl_b8') WHERE type = 'leaf';
SELECT * FROM sh_cl_check();
SELECT * FROM sh_cl_knn_check();

-- a table of places stopped by an error between two leaves while a scan
-- builds it (a cancel is such an error) is dropped, not kept half made:
-- values it had not reached yet would read as absent from the run
REINDEX INDEX sh_cl_b8;
SET simhash.test_fault = places_midway;
DO $$
BEGIN
    PERFORM sh_cl_pairs('{0,1,2,3}', true);
    RAISE NOTICE 'the fault did not fire';
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'stopped: %', SQLERRM ~ 'table of places stopped';
END
$$;
RESET simhash.test_fault;
SELECT * FROM sh_cl_check();

DROP TABLE sh_cl, sh_cl_q;
DROP FUNCTION sh_cl_fp(int), sh_cl_plan(bool), sh_cl_pairs(int[], bool), sh_cl_check(), sh_cl_knn(bool, int),
    sh_cl_knn_check();
