--
-- index_cache: what a backend remembers of the index's runs between scans
-- (simhash.index_cache_size, src/mih/mih_cache.c): run headers, leaf
-- directories, and filters of the block values small runs hold. Radius
-- searches, one per query point, in one session, compared with a
-- sequential scan: with the cache on, with it so small that summaries are
-- dropped while scans use them, and off; after merges replaced the runs it
-- remembers, after TRUNCATE and REINDEX (new files, serials from the start),
-- after deletes and VACUUM, and for a cursor whose run is dropped between
-- two fetches. The data has long stretches of one block value in every
-- table (the leaf search guesses a position from the values' spread), and
-- the cache must read fewer index pages than without it.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

-- 1..30000 random; 30001..36000 the top 16 bits from 4 values and the
-- rest random; 36001..40000 random top 16 bits, then 0, then 5 values:
-- tables 0 and 3 get long stretches of one value, tables 1 and 2 one value
CREATE TABLE sh_cache (id int, fp simhash) WITH (autovacuum_enabled = false);
CREATE FUNCTION sh_cache_fp(g int) RETURNS simhash LANGUAGE sql IMMUTABLE AS $fn$
    SELECT CASE
        WHEN g <= 30000 THEN ('x' || left(md5(g::text), 16))::bit(64)::simhash
        WHEN g <= 36000 THEN (('x' || left(md5(g::text), 16))::bit(64)::simhash & '0000ffffffffffff')
                             # ((g % 4)::int8 << 48)::simhash
        ELSE (('x' || left(md5(g::text), 16))::bit(64)::simhash & 'ffff000000000000')
             # (g % 5)::int8::simhash
    END
$fn$;
INSERT INTO sh_cache SELECT g, sh_cache_fp(g) FROM generate_series(1, 36000) g;
CREATE INDEX sh_cache_fp_idx ON sh_cache USING simhash (fp) WITH (pending_limit = 64);
-- then small runs, which get filters
INSERT INTO sh_cache SELECT g, sh_cache_fp(g) FROM generate_series(36001, 40000) g;
SELECT runs, run_entries[1] AS largest, pending_entries FROM simhash_index_info('sh_cache_fp_idx');

-- query points: stored rows, rows with 1..4 bits flipped, and fingerprints
-- near no row; the stored rows spread over the whole table, a quarter of
-- them in the stretches of one value (ids above 30,000)
CREATE TABLE sh_cache_q (qid int, fp simhash);
INSERT INTO sh_cache_q
    SELECT g, sh_cache_fp(g * 997 % 40000 + 1) # ((1::int8 << (g % 64)) * (g % 2))::simhash
              # CASE WHEN g % 5 = 0 THEN ((7::int8 << (g % 61)))::simhash ELSE '0000000000000000'::simhash END
    FROM generate_series(1, 40) g;
INSERT INTO sh_cache_q SELECT 1000 + g, ('x' || left(md5('q' || g), 16))::bit(64)::simhash
    FROM generate_series(1, 10) g;

-- the matches of every query point at radii 0, 3, 8 and 12 as pairs,
-- through the index (a nested loop of index scans: one scan, many rescans)
-- or a sequential scan
CREATE FUNCTION sh_cache_pairs(path text) RETURNS TABLE (qid int, r int, id int)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM set_config('enable_seqscan', (path = 'seq')::text, true);
    PERFORM set_config('enable_indexscan', (path = 'index')::text, true);
    PERFORM set_config('enable_bitmapscan', (path = 'bitmap')::text, true);
    -- planned at each call (a cached plan would keep the first call's path)
    RETURN QUERY EXECUTE 'SELECT q.qid, rr.r, t.id FROM sh_cache_q q, unnest(''{0,3,8,12}''::int[]) rr(r),
        LATERAL (SELECT s.id FROM sh_cache s WHERE s.fp <~> q.fp <= rr.r) t';
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
END
$fn$;

-- pairs the index path returns and the sequential scan does not, and the
-- other way round, duplicates counted; and how many there are
CREATE FUNCTION sh_cache_check(path text DEFAULT 'index', OUT pairs bigint, OUT extra bigint,
                               OUT missing bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    CREATE TEMP TABLE sh_cache_got AS SELECT * FROM sh_cache_pairs(path);
    CREATE TEMP TABLE sh_cache_want AS SELECT * FROM sh_cache_pairs('seq');
    SELECT count(*) INTO pairs FROM sh_cache_want;
    SELECT count(*) INTO extra FROM (SELECT * FROM sh_cache_got EXCEPT ALL SELECT * FROM sh_cache_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM sh_cache_want EXCEPT ALL SELECT * FROM sh_cache_got) x;
    DROP TABLE sh_cache_got, sh_cache_want;
END
$fn$;

-- the index scan's shared buffer hits for one query
CREATE FUNCTION sh_cache_hits(q simhash, r int, tbl text DEFAULT 'sh_cache') RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    plan json;
BEGIN
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) '
                   'SELECT id FROM %I WHERE fp <~> %L::simhash <= %s', tbl, q, r) INTO plan;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint;
END
$fn$;

-- the plan: a nested loop of index scans, rescanned per query point and
-- radius (the lines only: PostgreSQL 18 also marks the disabled seq scan)
SET enable_seqscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE sh_cache_plan (line text);
DO $$
DECLARE
    l text;
BEGIN
    FOR l IN EXPLAIN (COSTS OFF) SELECT q.qid, t.id FROM sh_cache_q q,
        LATERAL (SELECT s.id FROM sh_cache s WHERE s.fp <~> q.fp <= 3) t
    LOOP
        INSERT INTO sh_cache_plan VALUES (l);
    END LOOP;
END
$$;
SELECT line FROM sh_cache_plan WHERE line !~ 'Disabled';
DROP TABLE sh_cache_plan;
RESET enable_seqscan;
RESET enable_bitmapscan;

SHOW simhash.index_cache_size;
SELECT * FROM sh_cache_check();
-- again: summaries built, filters of the small runs paid for by now
SELECT * FROM sh_cache_check();
SELECT * FROM sh_cache_check('bitmap');

-- fewer pages with the cache: no run headers, no inner pages, and the small
-- runs' filters skip the probes none of their entries can match
SELECT sh_cache_hits('0123456789abcdef', 3) AS hits_warm \gset
SET simhash.index_cache_size = 0;
SELECT sh_cache_hits('0123456789abcdef', 3) AS hits_off \gset
RESET simhash.index_cache_size;
SELECT :hits_warm < :hits_off AS fewer_pages, :hits_off - :hits_warm >= 3 * 4 AS saves_a_page_per_table;

-- a search that comes back empty is remembered (mih_cache_run_empty): the
-- same ball again reads no leaf of the runs and skips the pending entries
-- already checked; a row inserted since (at the end of the pending list, or
-- merged into a new run) is still found, and so are matches that were there.
-- Each query point twice in a row (a nested loop over the points, then the
-- two copies), at radius 3 and then 2 (searched anew: see below)
INSERT INTO sh_cache SELECT 50000 + qid, fp # '0000000000000001' FROM sh_cache_q WHERE qid % 4 = 0;
SELECT pending_entries > 0 AS matches_pending FROM simhash_index_info('sh_cache_fp_idx');
-- each query point's radii in the order given (the VALUES list refers to
-- the point, so the points are the outer side of the nested loop)
CREATE FUNCTION sh_cache_twice(path text, radii int[]) RETURNS TABLE (qid int, k int, r int, id int)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM set_config('enable_seqscan', (path = 'seq')::text, true);
    PERFORM set_config('enable_indexscan', (path = 'index')::text, true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    RETURN QUERY EXECUTE format('SELECT q.qid, rr.k, rr.r, t.id FROM sh_cache_q q,
        LATERAL (VALUES %s) rr(k, r),
        LATERAL (SELECT s.id FROM sh_cache s WHERE s.fp <~> q.fp <= rr.r) t',
        (SELECT string_agg(format('(%s, %s + 0 * q.qid)', u.n, u.v), ', ' ORDER BY u.n)
         FROM unnest(radii) WITH ORDINALITY u(v, n)));
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
END
$fn$;
-- (the sequential side once; the index side twice, as ever: the second
-- pass meets what the first remembered)
CREATE FUNCTION sh_cache_twice_check(radii int[], OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    CREATE TEMP TABLE sh_cache_twice_want AS SELECT * FROM sh_cache_twice('seq', radii);
    SELECT count(*) INTO pairs FROM sh_cache_twice_want;
    SELECT count(*) INTO extra FROM (SELECT * FROM sh_cache_twice('index', radii) EXCEPT ALL
                                     SELECT * FROM sh_cache_twice_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM sh_cache_twice_want EXCEPT ALL
                                       SELECT * FROM sh_cache_twice('index', radii)) x;
    DROP TABLE sh_cache_twice_want;
END
$fn$;
SELECT * FROM sh_cache_twice_check('{3,3,2}');
-- (a point 6 bits from a row, all of them in blocks 1-3 and in the top 22
-- bits of the rest of block 0's: the run's screen, below, sees 32 bits of
-- the rest, which cannot rule the row out, so the run is read the first time)
SELECT fp # 'ee00000000000000' AS memo_q FROM sh_cache WHERE id = 1 \gset
SELECT sh_cache_hits(:'memo_q', 3) AS hits_first \gset
SELECT sh_cache_hits(:'memo_q', 3) AS hits_again \gset
SELECT :hits_again < :hits_first AS fewer_pages_again;
-- a row inside that ball now, on the pending list, then merged into a run
INSERT INTO sh_cache VALUES (60001, 'fedcba9876543213');
SELECT count(*) AS found_pending FROM sh_cache WHERE fp <~> 'fedcba9876543210' <= 3;
SELECT count(*) AS found_pending_again FROM sh_cache WHERE fp <~> 'fedcba9876543210' <= 3;
INSERT INTO sh_cache SELECT g, sh_cache_fp(g - 60000) # '000000ff00000000' FROM generate_series(60002, 60200) g;
SELECT count(*) AS found_in_run FROM sh_cache WHERE fp <~> 'fedcba9876543210' <= 3;
DELETE FROM sh_cache WHERE id > 50000;

-- so small that summaries are dropped while a scan of the nested loop uses
-- them: the scan keeps its own until it moves on
SET simhash.index_cache_size = '64kB';
SELECT * FROM sh_cache_check();
SELECT * FROM sh_cache_check();
SET simhash.index_cache_size = 0;
SELECT * FROM sh_cache_check();
RESET simhash.index_cache_size;
-- out of range (the SQLSTATE only: PostgreSQL 15 words the range without units)
\set VERBOSITY sqlstate
SET simhash.index_cache_size = -1;
\set VERBOSITY default

-- merges replace the runs this backend remembers
SELECT sh_cache_check() IS NOT NULL AS warmed;
INSERT INTO sh_cache SELECT g, sh_cache_fp(g - 40000) # 'ff00000000000000' FROM generate_series(40001, 44000) g;
SELECT runs > 1 AS several_runs FROM simhash_index_info('sh_cache_fp_idx');
SELECT * FROM sh_cache_check();

-- a cursor keeps its run while the run is merged away and its summary
-- dropped by another scan in the same backend
CREATE FUNCTION sh_cache_cursor(OUT n_cursor int, OUT n_seq int, OUT same bool, OUT merged bool)
LANGUAGE plpgsql AS $fn$
DECLARE
    cur refcursor;
    got int[] := '{}';
    x int;
    before text;
    want int[];
BEGIN
    SELECT run_entries::text INTO before FROM simhash_index_info('sh_cache_fp_idx');
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    OPEN cur FOR SELECT s.id FROM sh_cache s WHERE fp <~> '0123456789abcdef' <= 24;
    FOR i IN 1 .. 5 LOOP
        FETCH cur INTO x;
        got := got || x;
    END LOOP;
    INSERT INTO sh_cache SELECT g, sh_cache_fp(g - 44000) # '00ff000000000000'
        FROM generate_series(44001, 46000) g;
    -- a new scan sees the new run list and drops what it no longer lists
    PERFORM count(*) FROM sh_cache WHERE fp <~> '0123456789abcdef' <= 3;
    SELECT run_entries::text <> before INTO merged FROM simhash_index_info('sh_cache_fp_idx');
    LOOP
        FETCH cur INTO x;
        EXIT WHEN NOT FOUND;
        got := got || x;
    END LOOP;
    CLOSE cur;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    SELECT array_agg(s.id ORDER BY s.id) INTO want FROM sh_cache s
        WHERE fp <~> '0123456789abcdef' <= 24 AND s.id <= 44000;
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    n_cursor := cardinality(got);
    n_seq := cardinality(want);
    same := (SELECT array_agg(v ORDER BY v) FROM unnest(got) v) = want;
END
$fn$;
SELECT * FROM sh_cache_cursor();
SELECT * FROM sh_cache_check();

-- deletes and VACUUM, which folds tables into new runs
DELETE FROM sh_cache WHERE id % 3 = 0;
SELECT * FROM sh_cache_check();
VACUUM sh_cache;
SELECT * FROM sh_cache_check();
-- runs that serve only some tables now (a fold moved a table of every run
-- into a new run): what such a run reports depends on the radius (an entry
-- is reported by the first table whose block is near enough, which may be
-- in another run), so a search that found nothing in it at one radius says
-- nothing of another radius; each radius from 12 down to 0, twice (and
-- below, a case that probes at radius 4)
SELECT bool_or(t <> '{0,1,2,3}') AS partial_runs FROM simhash_index_info('sh_cache_fp_idx'), unnest(run_tables) t;
SELECT * FROM sh_cache_twice_check('{12,12,8,8,5,5,3,3,2,2,1,1,0,0}');
DROP FUNCTION sh_cache_twice_check(int[]), sh_cache_twice(text, int[]);

-- REINDEX and TRUNCATE give the index a new file whose serials start
-- again: nothing remembered of the old one may be used
REINDEX INDEX sh_cache_fp_idx;
SELECT * FROM sh_cache_check();
TRUNCATE sh_cache;
INSERT INTO sh_cache SELECT g, sh_cache_fp(40001 - g) FROM generate_series(1, 36000) g;
SELECT * FROM sh_cache_check();

-- A folded index large enough that radius 4 probes rather than reads table
-- 0 whole: query points one bit (in block 0) from a row. Radius 4 gives
-- table 0 one bit, so the row is table 0's, in the run that took table 0
-- from every run; radius 3 gives it none, so the row is table 1's, in a run
-- that no longer serves table 0 and reported nothing at radius 4. Each
-- point's radii from 6 down to 1 in one nested loop: every row is found.
CREATE TABLE sh_fold (id int, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO sh_fold SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash FROM generate_series(1, 100000) g;
CREATE INDEX sh_fold_idx ON sh_fold USING simhash (fp) WITH (pending_limit = 64);
INSERT INTO sh_fold SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash FROM generate_series(100001, 104000) g;
DELETE FROM sh_fold WHERE id % 3 = 0;
VACUUM sh_fold;
SELECT run_tables[1:2] AS first_runs_tables FROM simhash_index_info('sh_fold_idx');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS searches, count(*) FILTER (WHERE n = 1) AS found
FROM (SELECT id, fp # '0000000000000001' AS q FROM sh_fold WHERE id % 1000 = 1) p,
     LATERAL (VALUES (6 + 0 * p.id), (5), (4), (3), (2), (1)) rr(r),
     LATERAL (SELECT count(*) AS n FROM sh_fold s WHERE s.fp <~> p.q <= rr.r) c;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE sh_fold;

-- Position indexes of large runs (src/mih/mih_cache_pos.c): once a backend
-- has read about a table's worth of a run of more than 32,768 entries, a
-- probe goes straight to the line where its value's entries start, reads no
-- page for a value the run lacks, and follows a value's entries across
-- leaves. 40,000 rows, every fingerprint's low nibble set (so every block
-- value has its lowest bit set: with the interleaved masks, bit j is block
-- j's lowest), 2,000 of them one fingerprint (its entries span leaves in
-- every table); one run.
CREATE TABLE sh_pos (id int, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO sh_pos SELECT g, CASE WHEN g % 20 = 0 THEN '123456789abcdeff'::simhash
    ELSE ('x' || left(md5('p' || g), 16))::bit(64)::simhash | '000000000000000f' END
    FROM generate_series(1, 40000) g;
CREATE INDEX sh_pos_idx ON sh_pos USING simhash (fp);
SELECT runs, run_entries FROM simhash_index_info('sh_pos_idx');
CREATE TABLE sh_pos_q (qid int, fp simhash);
INSERT INTO sh_pos_q SELECT id, fp # (((id % 3 > 0)::int::int8) << (id % 64))::simhash
    FROM sh_pos WHERE id % 631 = 1 AND id % 20 <> 0;
INSERT INTO sh_pos_q VALUES (-1, '123456789abcdeff'), (-2, '123456789abcdef0'),
    (-3, '023456789abcdeff'), (-4, '123456789abcdefe');
-- each query point of qtbl within each radius of the rows of tbl, through
-- the index or sequentially, and the two compared
CREATE FUNCTION sh_near_pairs(tbl text, qtbl text, radii int[], idx bool)
RETURNS TABLE (qid int, r int, id int) LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM set_config('enable_seqscan', (NOT idx)::text, true);
    PERFORM set_config('enable_indexscan', idx::text, true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    RETURN QUERY EXECUTE format('SELECT q.qid, rr.r, t.id FROM %I q, unnest(%L::int[]) rr(r),
        LATERAL (SELECT s.id FROM %I s WHERE s.fp <~> q.fp <= rr.r) t', qtbl, radii, tbl);
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
END
$fn$;
CREATE FUNCTION sh_near_check(tbl text, qtbl text, radii int[],
                              OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    CREATE TEMP TABLE sh_near_want AS SELECT * FROM sh_near_pairs(tbl, qtbl, radii, false);
    CREATE TEMP TABLE sh_near_got AS SELECT * FROM sh_near_pairs(tbl, qtbl, radii, true);
    SELECT count(*) INTO pairs FROM sh_near_want;
    SELECT count(*) INTO extra FROM (SELECT * FROM sh_near_got EXCEPT ALL SELECT * FROM sh_near_want) x;
    SELECT count(*) INTO missing FROM (SELECT * FROM sh_near_want EXCEPT ALL SELECT * FROM sh_near_got) x;
    DROP TABLE sh_near_got, sh_near_want;
END
$fn$;
CREATE FUNCTION sh_pos_check(OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE sql AS $fn$ SELECT * FROM sh_near_check('sh_pos', 'sh_pos_q', '{0,2,3,4,6,9}') $fn$;
-- the first pass pays for the position indexes, which the rest of it uses
SELECT * FROM sh_pos_check();
SELECT * FROM sh_pos_check();
-- the copies, found whole across the leaves they span (distance 0, and 4
-- from a point whose block values no entry has: radius 4 probes table 0
-- one bit away)
SELECT r, count(*) FILTER (WHERE qid = -1) AS copies, count(*) FILTER (WHERE qid = -2) AS from_absent
FROM sh_near_pairs('sh_pos', 'sh_pos_q', '{0,3,4}', true) WHERE qid IN (-1, -2) GROUP BY r ORDER BY r;
-- nearest neighbours probe through the position indexes too: the distances
-- of each point's 10 and 2,100 nearest rows (past the copies) as a
-- sequential scan finds them
CREATE FUNCTION sh_pos_knn(idx bool, k int) RETURNS TABLE (qid int, d simhash_distance[])
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM set_config('enable_seqscan', (NOT idx)::text, true);
    PERFORM set_config('enable_indexscan', idx::text, true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    PERFORM set_config('enable_sort', (NOT idx)::text, true);
    RETURN QUERY EXECUTE format('SELECT q.qid, (SELECT array_agg(x.d) FROM (SELECT s.fp <-> q.fp AS d
        FROM sh_pos s ORDER BY s.fp <-> q.fp LIMIT %s) x) FROM sh_pos_q q', k);
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('enable_bitmapscan', 'on', true);
    PERFORM set_config('enable_sort', 'on', true);
END
$fn$;
SELECT count(*) AS points, count(*) FILTER (WHERE i.d = s.d) AS same_10_nearest
FROM sh_pos_knn(true, 10) i JOIN sh_pos_knn(false, 10) s USING (qid);
SELECT count(*) AS points, count(*) FILTER (WHERE i.d = s.d) AS same_2100_nearest
FROM sh_pos_knn(true, 2100) i JOIN sh_pos_knn(false, 2100) s USING (qid) WHERE qid < 0;
-- a radius-3 search whose four probe values no entry has: the metapage is
-- the only page read (with the directory alone it read one leaf per table)
SELECT sh_cache_hits('123456789abcdef0', 3, 'sh_pos') AS hits_absent,
       sh_cache_hits('123456789abcdeff', 0, 'sh_pos') > 4 AS copies_span_leaves;
SET simhash.index_cache_size = 0;
SELECT sh_cache_hits('123456789abcdef0', 3, 'sh_pos') AS hits_absent_without_cache;
-- no room for a position index (1 MB for this run) beside the directories:
-- searched through the directory as before
SET simhash.index_cache_size = '512kB';
SELECT * FROM sh_pos_check();
RESET simhash.index_cache_size;
-- 8-bit blocks (256 values: a value's entries fill many leaves) and 3
-- blocks (more than 16 bits: no position index)
DROP INDEX sh_pos_idx;
CREATE INDEX sh_pos_idx ON sh_pos USING simhash (fp) WITH (blocks = 8);
SELECT * FROM sh_pos_check();
SELECT * FROM sh_pos_check();
DROP INDEX sh_pos_idx;
CREATE INDEX sh_pos_idx ON sh_pos USING simhash (fp) WITH (blocks = 3);
SELECT * FROM sh_pos_check();
SELECT * FROM sh_pos_check();
DROP FUNCTION sh_pos_check(), sh_pos_knn(bool, int);
DROP TABLE sh_pos, sh_pos_q;

-- Full pending pages searched by their summaries (src/mih/mih_cache_pend.c):
-- 3,000 rows, all pending (five full pages and the tail), 60 of them one
-- fingerprint; once a backend has read a full page eight times, a search
-- with few probes (up to radius 6 here) looks its probe values up there
-- instead of reading every entry. Each query point at radii 0 to 8, against
-- one sequential pass; again after deletes, and after VACUUM.
CREATE TABLE sh_pend (id int, fp simhash) WITH (autovacuum_enabled = false);
CREATE INDEX sh_pend_idx ON sh_pend USING simhash (fp) WITH (pending_limit = 10000);
INSERT INTO sh_pend SELECT g, CASE WHEN g % 50 = 0 THEN 'fedcba9876543210'::simhash
    ELSE ('x' || left(md5('e' || g), 16))::bit(64)::simhash END FROM generate_series(1, 3000) g;
SELECT runs, pending_entries, pending_pages FROM simhash_index_info('sh_pend_idx');
CREATE TABLE sh_pend_q AS SELECT id AS qid, fp # (((id % 3 > 0)::int::int8) << (id % 64))::simhash AS fp
    FROM sh_pend WHERE id % 37 = 1;
INSERT INTO sh_pend_q VALUES (-1, 'fedcba9876543210'), (-2, 'fedcba9876543211'), (-3, 'fedcba98765432ff');
-- points a bit away from a row in each of blocks 0, 1 and 2 (bit j is block
-- j's lowest): at radius 3 only table 3 finds the row
INSERT INTO sh_pend_q SELECT -1000 - id, fp # '0000000000000007' FROM sh_pend WHERE id % 37 = 2;
CREATE FUNCTION sh_pend_check(OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE sql AS $fn$ SELECT * FROM sh_near_check('sh_pend', 'sh_pend_q', '{0,1,2,3,4,5,6,7,8}') $fn$;
SELECT * FROM sh_pend_check();
SELECT * FROM sh_pend_check();
SELECT r, count(*) FILTER (WHERE qid = -1) AS copies, count(*) FILTER (WHERE qid = -3) AS from_7_bits
FROM sh_near_pairs('sh_pend', 'sh_pend_q', '{0,7,8}', true) WHERE qid IN (-1, -3) GROUP BY r ORDER BY r;
-- a row appended to the tail, and the tail filled into a full page
INSERT INTO sh_pend VALUES (4001, 'fedcba9876543213');
SELECT * FROM sh_pend_check();
INSERT INTO sh_pend SELECT g, ('x' || left(md5('e' || g), 16))::bit(64)::simhash FROM generate_series(4002, 4600) g;
SELECT pending_pages FROM simhash_index_info('sh_pend_idx');
SELECT * FROM sh_pend_check();
DELETE FROM sh_pend WHERE id % 7 = 0;
SELECT * FROM sh_pend_check();
VACUUM sh_pend;
SELECT * FROM sh_pend_check();
DROP FUNCTION sh_pend_check();
DROP TABLE sh_pend, sh_pend_q;

-- Screens of runs (src/mih/mih_cache_screen.c): once a backend's searches
-- of a run with one ball and few probes would have read about a table's
-- leaves (at least eight searches), it keeps each table's entries by block
-- value with 32 bits of the rest of the fingerprint, if the cache has room,
-- and skips unread a run none of whose entries can be within the radius.
-- 20,000 rows in one run, then more through a pending list of 1,024.
CREATE TABLE sh_scr (id int, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO sh_scr SELECT g, ('x' || left(md5('s' || g), 16))::bit(64)::simhash FROM generate_series(1, 20000) g;
CREATE INDEX sh_scr_idx ON sh_scr USING simhash (fp) WITH (pending_limit = 1024);
INSERT INTO sh_scr SELECT g, ('x' || left(md5('s' || g), 16))::bit(64)::simhash FROM generate_series(20001, 27000) g;
SELECT runs, run_entries, pending_entries FROM simhash_index_info('sh_scr_idx');
-- rows, rows with up to 3 bits flipped (in the small runs too), points one
-- bit off in each of blocks 0-2 (only table 3 finds the row), and points
-- near no row
CREATE TABLE sh_scr_q AS SELECT id AS qid, fp # (((id % 8)::int8) << (id % 61))::simhash AS fp
    FROM sh_scr WHERE id % 877 = 5;
INSERT INTO sh_scr_q SELECT -id, fp # '0000000000000007' FROM sh_scr WHERE id % 919 = 6;
INSERT INTO sh_scr_q SELECT 100000 + g, ('x' || left(md5('n' || g), 16))::bit(64)::simhash
    FROM generate_series(1, 10) g;
CREATE FUNCTION sh_scr_check(OUT pairs bigint, OUT extra bigint, OUT missing bigint)
LANGUAGE sql AS $fn$ SELECT * FROM sh_near_check('sh_scr', 'sh_scr_q', '{0,1,2,3,4,5}') $fn$;
-- the first pass builds the screens, the second has them throughout
SELECT * FROM sh_scr_check();
SELECT * FROM sh_scr_check();
-- a search near no row reads the metapage and at most the pending pages:
-- no page of any run; without the cache, leaves of every run
SELECT sh_cache_hits('0f1e2d3c4b5a6978', 3, 'sh_scr') AS hits_screened \gset
SET simhash.index_cache_size = 0;
SELECT sh_cache_hits('0f1e2d3c4b5a6979', 3, 'sh_scr') AS hits_off \gset
RESET simhash.index_cache_size;
SELECT :hits_screened <= 1 + pending_pages AS runs_unread, :hits_off >= :hits_screened + 4 * runs AS off_reads_runs
FROM simhash_index_info('sh_scr_idx');
-- no room for screens (a new backend, so none is built yet): searched as before
\c
SET simhash.index_cache_size = '128kB';
SELECT * FROM sh_scr_check();
SELECT sh_cache_hits('0f1e2d3c4b5a6978', 3, 'sh_scr') > :hits_screened AS runs_read_without_room;
RESET simhash.index_cache_size;
-- a build stopped halfway (an error or a cancel) leaves no screen: the
-- run is searched as before, in a new backend
\c
SET simhash.test_fault = screen_midway;
\set VERBOSITY terse
SELECT * FROM sh_scr_check();
\set VERBOSITY default
RESET simhash.test_fault;
SELECT * FROM sh_scr_check();
-- dead entries stay in a screen (they only take matches away); VACUUM
-- folds tables into new runs, some serving only some tables
DELETE FROM sh_scr WHERE id % 5 = 0;
SELECT * FROM sh_scr_check();
VACUUM sh_scr;
SELECT bool_or(t <> '{0,1,2,3}') AS partial_runs FROM simhash_index_info('sh_scr_idx'), unnest(run_tables) t;
SELECT * FROM sh_scr_check();
SELECT * FROM sh_scr_check();
DROP FUNCTION sh_scr_check(), sh_near_check(text, text, int[]), sh_near_pairs(text, text, int[], bool);
DROP TABLE sh_scr, sh_scr_q;

DROP FUNCTION sh_cache_cursor(), sh_cache_hits(simhash, int, text), sh_cache_check(text),
              sh_cache_pairs(text), sh_cache_fp(int);
DROP TABLE sh_cache, sh_cache_q;
