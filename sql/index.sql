--
-- index: the simhash index access method (multi-index hashing). Plans that
-- use it, and for every query that goes through it, the same answer as a
-- sequential scan: for every radius 0..64, each blocks setting, after
-- inserts that merge the pending list into runs, deletes, VACUUM, updates,
-- VACUUM FULL, REINDEX (CONCURRENTLY), CREATE INDEX CONCURRENTLY, TRUNCATE,
-- on an unlogged table, a partial index and an expression index. Also the
-- hamming_ball type, reloptions, amvalidate and the inspection functions.
--
-- quietly: an earlier suite in the same database may have created it
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

--
-- Helpers. sh_idx_path(p) allows exactly one access path for a base table:
-- 'index' (plain index scans), 'bitmap' (bitmap scans) or 'seq'.
-- sh_idx_rows(stmt) runs any statement returning rows (a SELECT, an
-- EXECUTE) and returns how many rows it returned and an md5 digest of them
-- (as text, sorted, duplicates kept).
-- sh_idx_uses_index(stmt) tells whether its plan has a simhash index
-- condition ("Index Cond: (... <@ ...)").
--
-- sh_idx_check(stmt, path, ref) runs stmt with the given path and ref
-- (stmt itself by default) with a sequential scan only, and returns
--   n_index     rows through the index path
--   n_seq       rows through the sequential scan
--   same        the same rows, duplicates counted (an index returning a row
--               twice or missing one fails)
--   index_used  the first plan used a simhash index, the second did not
-- so that a check cannot pass by running the same plan twice. The planner
-- settings are restored afterwards.
--
CREATE FUNCTION sh_idx_path(path text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    IF path NOT IN ('index', 'bitmap', 'seq') THEN
        RAISE EXCEPTION 'unknown path %', path;
    END IF;
    PERFORM set_config('enable_seqscan', CASE WHEN path = 'seq' THEN 'on' ELSE 'off' END, true);
    PERFORM set_config('enable_indexscan', CASE WHEN path = 'index' THEN 'on' ELSE 'off' END, true);
    PERFORM set_config('enable_bitmapscan', CASE WHEN path = 'bitmap' THEN 'on' ELSE 'off' END, true);
END
$fn$;

CREATE FUNCTION sh_idx_rows(stmt text, OUT n int, OUT digest text) LANGUAGE plpgsql AS $fn$
DECLARE
    r record;
    acc text[] := '{}';
BEGIN
    IF stmt ~* '^\s*EXECUTE' THEN
        -- a prepared statement cannot be a subquery: collect its rows
        FOR r IN EXECUTE stmt LOOP
            acc := acc || r::text;
        END LOOP;
        SELECT count(*), md5(string_agg(x, ',' ORDER BY x COLLATE "C")) INTO n, digest FROM unnest(acc) x;
    ELSE
        EXECUTE format('SELECT count(*), md5(string_agg(r::text, '','' ORDER BY r::text COLLATE "C")) FROM (%s) r',
                       stmt) INTO n, digest;
    END IF;
END
$fn$;

CREATE FUNCTION sh_idx_uses_index(stmt text) RETURNS bool LANGUAGE plpgsql AS $fn$
DECLARE
    line text;
    found bool := false;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        IF line ~ 'Index Cond: .*<@' THEN
            found := true;
        END IF;
    END LOOP;
    RETURN found;
END
$fn$;

CREATE FUNCTION sh_idx_check(stmt text, path text DEFAULT 'index', ref text DEFAULT NULL,
                             OUT n_index int, OUT n_seq int, OUT same bool, OUT index_used bool)
LANGUAGE plpgsql AS $fn$
DECLARE
    saved text[] := ARRAY[current_setting('enable_seqscan'), current_setting('enable_indexscan'),
                          current_setting('enable_bitmapscan')];
    got text;
    want text;
BEGIN
    PERFORM sh_idx_path(path);
    index_used := sh_idx_uses_index(stmt);
    SELECT * INTO n_index, got FROM sh_idx_rows(stmt);
    PERFORM sh_idx_path('seq');
    index_used := index_used AND NOT sh_idx_uses_index(coalesce(ref, stmt));
    SELECT * INTO n_seq, want FROM sh_idx_rows(coalesce(ref, stmt));
    PERFORM set_config('enable_seqscan', saved[1], true);
    PERFORM set_config('enable_indexscan', saved[2], true);
    PERFORM set_config('enable_bitmapscan', saved[3], true);
    same := n_index = n_seq AND got IS NOT DISTINCT FROM want;
END
$fn$;

-- sh_idx_flip(fp, n, seed): fp with n bits flipped (positions from seed)
CREATE FUNCTION sh_idx_flip(fp simhash, n int, seed int) RETURNS simhash
LANGUAGE sql IMMUTABLE STRICT AS $fn$
    SELECT coalesce((SELECT fp # bit_or(1::int8 << ((seed * 7 + i * 13) % 64))::simhash
                     FROM generate_series(0, n - 1) i), fp)
$fn$;

--
-- Test data, 3200 rows:
--   1..2000     random fingerprints (from md5)
--   2001..3000  near-duplicates: 5 copies of each of rows 1..200, with 1, 2,
--               3, 4, 5, 0, 1, ... bits flipped (0: an exact duplicate)
--   3001..3010  no fingerprint
--   3011..3200  skewed: random with the top 16 bits zero
--
-- (autovacuum off on every table here: a VACUUM of its own would merge runs
-- at moments the expected output does not foresee)
CREATE TABLE sh_idx (id int PRIMARY KEY, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO sh_idx
    SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash FROM generate_series(1, 2000) g;
INSERT INTO sh_idx
    SELECT 2000 + g, sh_idx_flip(('x' || left(md5(((g - 1) / 5 + 1)::text), 16))::bit(64)::simhash, g % 6, g)
    FROM generate_series(1, 1000) g;
INSERT INTO sh_idx SELECT g, NULL FROM generate_series(3001, 3010) g;
INSERT INTO sh_idx
    SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash & '0000ffffffffffff'
    FROM generate_series(3011, 3200) g;
SELECT count(*) AS rows, count(fp) AS with_fp, count(DISTINCT fp) AS distinct_fp,
       count(*) FILTER (WHERE fp <~> '0000000000000000' <= 48 AND id > 3010) AS skewed
FROM sh_idx;
-- near-duplicates of row 1 are at distances 1..5
SELECT b.id, b.fp, a.fp <~> b.fp AS distance
FROM sh_idx a JOIN sh_idx b ON b.id BETWEEN 2001 AND 2005 WHERE a.id = 1 ORDER BY b.id;

-- query centres: row 1 (with its near-duplicates), a value near row 7's
-- family but in the table nowhere, a skewed value, and all ones
CREATE TABLE sh_idx_q (name text PRIMARY KEY, q simhash);
INSERT INTO sh_idx_q VALUES
    ('row1', (SELECT fp FROM sh_idx WHERE id = 1)),
    ('near7', sh_idx_flip((SELECT fp FROM sh_idx WHERE id = 7), 2, 99)),
    ('skewed', (SELECT fp FROM sh_idx WHERE id = 3100)),
    ('ones', 'ffffffffffffffff');
SELECT name, q, (SELECT count(*) FROM sh_idx WHERE fp = q) AS in_table FROM sh_idx_q ORDER BY name;

-- sh_idx_sweep(tab, paths, radii): sh_idx_check of "fp <~> q <= r" on table
-- tab for every query centre q of sh_idx_q, path and radius, summed up per
-- centre and path. The default radii are 0..24 (with 4 blocks of 16 bits
-- the probes are enumerated up to r = 19, beyond that table 0 is read
-- whole) and 32, 48, 64.
CREATE FUNCTION sh_idx_sweep(tab text, paths text[] DEFAULT '{index,bitmap}',
                             radii int[] DEFAULT '{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,32,48,64}',
                             OUT name text, OUT path text, OUT checks int, OUT all_same bool,
                             OUT index_used bool, OUT total_rows bigint)
RETURNS SETOF record LANGUAGE sql AS $fn$
    SELECT q.name, p.path, count(*)::int, bool_and(c.same), bool_and(c.index_used), sum(c.n_index)
    FROM sh_idx_q q, unnest(paths) p(path), unnest(radii) r,
         sh_idx_check(format('SELECT id FROM %I WHERE fp <~> %L <= %s', tab, q.q, r), p.path) c
    GROUP BY q.name, p.path ORDER BY q.name, p.path
$fn$;

--
-- The hamming_ball type: a fingerprint, a slash and a radius.
--
SELECT '0123456789abcdef/3'::hamming_ball AS ball,
       '0X0123456789ABCDEF/0'::hamming_ball AS prefixed,
       '0123456789abcdef/64'::hamming_ball AS r64,
       '0123456789abcdef/3'::hamming_ball::text::hamming_ball AS round_trip;
SELECT simhash_ball('0123456789abcdef', 3) AS ball,
       simhash_ball('0123456789abcdef', 0) AS r0,
       simhash_ball('0123456789abcdef', 64) AS r64,
       simhash_ball(NULL, 3) IS NULL AS null_centre,
       simhash_ball('0123456789abcdef', NULL) IS NULL AS null_radius,
       pg_typeof(simhash_ball('0123456789abcdef', 3)) AS type;
-- a radius a user gives is 0..64 bits (simhash_hamming_within(fp, q, r) takes any r)
SELECT simhash_ball('0123456789abcdef', -1);
SELECT simhash_ball('0123456789abcdef', 65);
SELECT 'ffffffffffffffff/-1'::hamming_ball;
SELECT '0123456789abcdef/99'::hamming_ball;
SELECT '0000000000000000/2147483647'::hamming_ball;
-- the planner's operand for simhash_hamming_within takes any radius
SELECT simhash_ball_any('0123456789abcdef', -5) AS negative,
       simhash_ball_any('0123456789abcdef', 100) AS beyond;
-- binary form: 8 bytes of fingerprint, 4 of radius
SELECT hamming_ball_send('0123456789abcdef/3') AS send,
       hamming_ball_send('fedcba9876543210/64') AS send_64;
-- invalid inputs: each error names the value
SELECT ''::hamming_ball;
SELECT '0123456789abcdef'::hamming_ball;
SELECT '0123456789abcdef/'::hamming_ball;
SELECT '/3'::hamming_ball;
SELECT '0123456789abcde/3'::hamming_ball;
SELECT '0123456789abcdef0/3'::hamming_ball;
SELECT '0123456789abcdeg/3'::hamming_ball;
SELECT '0123456789abcdef/3x'::hamming_ball;
SELECT '0123456789abcdef/3/4'::hamming_ball;
SELECT '0123456789abcdef/3.0'::hamming_ball;
SELECT '0123456789abcdef/2147483648'::hamming_ball;
SELECT ' 0123456789abcdef/3'::hamming_ball;

-- fp <@ ball and ball @> fp are fp <~> q <= r, for every radius -1..65 (the
-- planner's simhash_ball_any; simhash_ball itself for 0..64) and a quarter
-- of the rows and every query centre (NULL fingerprints included: all of
-- them are NULL there)
SELECT count(*) AS pairs,
       bool_and((fp <@ simhash_ball_any(q, r)) IS NOT DISTINCT FROM (fp <~> q <= r)) AS contained_agrees,
       bool_and((simhash_ball_any(q, r) @> fp) IS NOT DISTINCT FROM (fp <~> q <= r)) AS contains_agrees,
       bool_and((fp <@ simhash_ball_any(q, r)) IS NOT DISTINCT FROM simhash_hamming_within(fp, q, r)) AS within_agrees,
       bool_and(r < 0 OR r > 64 OR (fp <@ simhash_ball(q, r)) IS NOT DISTINCT FROM (fp <@ simhash_ball_any(q, r))) AS checked_agrees,
       count(*) FILTER (WHERE fp <@ simhash_ball_any(q, r)) AS matches,
       count(*) FILTER (WHERE fp IS NULL) AS null_pairs
FROM sh_idx, sh_idx_q, generate_series(-1, 65) r
WHERE id % 4 = 0 OR id BETWEEN 3001 AND 3010;

--
-- The index, default options (4 blocks). Right after a build: one run
-- holding every row (NULL fingerprints as NULL entries), no pending list;
-- pages by type.
--
CREATE INDEX sh_idx_fp ON sh_idx USING simhash (fp);
ANALYZE sh_idx;
SELECT version, blocks, block_masks, runs, run_entries, pending_entries, pending_pages, retired
FROM simhash_index_info('sh_idx_fp');
SELECT type, count(*) AS pages, sum(items) AS items, min("table") AS min_table, max("table") AS max_table
FROM simhash_index_pages('sh_idx_fp') GROUP BY type ORDER BY type;
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_idx_fp');

-- verify reports an entry written twice (test fault insert_twice: an insert
-- appends its entry to the pending list twice), which an index scan returns twice
CREATE TABLE sh_idx_twice (id int, fp simhash);
CREATE INDEX sh_idx_twice_fp ON sh_idx_twice USING simhash (fp);
INSERT INTO sh_idx_twice SELECT g, left(md5(g::text), 16)::simhash FROM generate_series(1, 10) g;
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_idx_twice_fp');
SET simhash.test_fault = insert_twice;
INSERT INTO sh_idx_twice VALUES (11, '0123456789abcdef');
RESET simhash.test_fault;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS index_scan_rows FROM sh_idx_twice WHERE fp <~> '0123456789abcdef' <= 0;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT * FROM simhash_index_verify('sh_idx_twice_fp');
DROP TABLE sh_idx_twice;

--
-- Plans: "fp <~> q <= k" is rewritten to simhash_hamming_within(), which becomes the
-- index condition "fp <@ simhash_ball(q, k)".
--
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3;
SELECT id, fp <~> 'c4ca4238a0b92382' AS distance
FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3 ORDER BY id;
-- the same forced through each path
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$, 'index');
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$, 'bitmap');
SET enable_indexscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3;
RESET enable_indexscan;

-- commuted and other spellings of the same condition
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE 'c4ca4238a0b92382' <~> fp <= 3;
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE 3 >= fp <~> 'c4ca4238a0b92382';
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' < 4;
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE simhash_hamming_within(fp, 'c4ca4238a0b92382', 3);
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE simhash_hamming_within('c4ca4238a0b92382', fp, 3);
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <@ simhash_ball('c4ca4238a0b92382', 3);
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE simhash_ball('c4ca4238a0b92382', 3) @> fp;
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <@ 'c4ca4238a0b92382/3';
-- a query value computed at run time: an InitPlan parameter
-- sh_explain_portable(): EXPLAIN text alike on every supported version
\ir test/regress/explain_portable.sql
SELECT sh_explain_portable('COSTS OFF',
    'SELECT id FROM sh_idx WHERE fp <~> (SELECT fp FROM sh_idx WHERE id = 1) <= 3') AS "QUERY PLAN";
-- all of them return the same rows, through both paths, as a sequential scan
SELECT form, path, c.*
FROM (VALUES
    (1, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    (2, $$SELECT id FROM sh_idx WHERE 'c4ca4238a0b92382' <~> fp <= 3$$),
    (3, $$SELECT id FROM sh_idx WHERE 3 >= fp <~> 'c4ca4238a0b92382'$$),
    (4, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' < 4$$),
    (5, $$SELECT id FROM sh_idx WHERE simhash_hamming_within(fp, 'c4ca4238a0b92382', 3)$$),
    (6, $$SELECT id FROM sh_idx WHERE simhash_hamming_within('c4ca4238a0b92382', fp, 3)$$),
    (7, $$SELECT id FROM sh_idx WHERE fp <@ simhash_ball('c4ca4238a0b92382', 3)$$),
    (8, $$SELECT id FROM sh_idx WHERE simhash_ball('c4ca4238a0b92382', 3) @> fp$$),
    (9, $$SELECT id FROM sh_idx WHERE fp <@ 'c4ca4238a0b92382/3'$$),
    (10, $$SELECT id FROM sh_idx WHERE fp <~> (SELECT fp FROM sh_idx WHERE id = 1) <= 3$$)) AS f(form, stmt),
    (VALUES ('index'), ('bitmap')) AS p(path),
    sh_idx_check(f.stmt, p.path) c
ORDER BY form, path;

--
-- Generic plans of prepared statements: the bound as an int4, int8 or int2
-- parameter, the query as a parameter on either side, "<" instead of "<=".
--
SET plan_cache_mode = force_generic_plan;
PREPARE sh_idx_p4(simhash, int4) AS SELECT id FROM sh_idx WHERE fp <~> $1 <= $2;
PREPARE sh_idx_p8(simhash, int8) AS SELECT id FROM sh_idx WHERE fp <~> $1 <= $2;
PREPARE sh_idx_p2(simhash, int2) AS SELECT id FROM sh_idx WHERE fp <~> $1 <= $2;
PREPARE sh_idx_pl(simhash) AS SELECT id FROM sh_idx WHERE $1 <~> fp <= 3;
PREPARE sh_idx_pg(simhash) AS SELECT id FROM sh_idx WHERE 3 >= fp <~> $1;
PREPARE sh_idx_plt(simhash) AS SELECT id FROM sh_idx WHERE fp <~> $1 < 4;
PREPARE sh_idx_pball(hamming_ball) AS SELECT id FROM sh_idx WHERE fp <@ $1;
EXPLAIN (COSTS OFF) EXECUTE sh_idx_p4('c4ca4238a0b92382', 3);
EXPLAIN (COSTS OFF) EXECUTE sh_idx_p8('c4ca4238a0b92382', 3);
EXPLAIN (COSTS OFF) EXECUTE sh_idx_p2('c4ca4238a0b92382', 3);
EXPLAIN (COSTS OFF) EXECUTE sh_idx_pl('c4ca4238a0b92382');
EXPLAIN (COSTS OFF) EXECUTE sh_idx_pg('c4ca4238a0b92382');
EXPLAIN (COSTS OFF) EXECUTE sh_idx_plt('c4ca4238a0b92382');
EXPLAIN (COSTS OFF) EXECUTE sh_idx_pball('c4ca4238a0b92382/3');
-- their answers (generic plans through the index) against a sequential scan
-- of the literal query, for several bounds including NULL, negative, 64
-- and beyond
SELECT stmt, c.*
FROM (VALUES
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', 3)$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_p8('c4ca4238a0b92382', 3)$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_p2('c4ca4238a0b92382', 3)$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', 12)$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 12$$),
    ($$EXECUTE sh_idx_p8('c4ca4238a0b92382', 40)$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 40$$),
    ($$EXECUTE sh_idx_p2('c4ca4238a0b92382', 0)$$, $$SELECT id FROM sh_idx WHERE fp = 'c4ca4238a0b92382'$$),
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', 64)$$, $$SELECT id FROM sh_idx WHERE fp IS NOT NULL$$),
    ($$EXECUTE sh_idx_p8('c4ca4238a0b92382', 9223372036854775807)$$, $$SELECT id FROM sh_idx WHERE fp IS NOT NULL$$),
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', 2147483647)$$, $$SELECT id FROM sh_idx WHERE fp IS NOT NULL$$),
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', -1)$$, $$SELECT id FROM sh_idx WHERE false$$),
    ($$EXECUTE sh_idx_p8('c4ca4238a0b92382', -9223372036854775808)$$, $$SELECT id FROM sh_idx WHERE false$$),
    ($$EXECUTE sh_idx_p2('c4ca4238a0b92382', -32768)$$, $$SELECT id FROM sh_idx WHERE false$$),
    ($$EXECUTE sh_idx_p4('c4ca4238a0b92382', NULL)$$, $$SELECT id FROM sh_idx WHERE false$$),
    ($$EXECUTE sh_idx_p8(NULL, 3)$$, $$SELECT id FROM sh_idx WHERE false$$),
    ($$EXECUTE sh_idx_pl('c4ca4238a0b92382')$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_pg('c4ca4238a0b92382')$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_plt('c4ca4238a0b92382')$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_pball('c4ca4238a0b92382/3')$$, $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3$$),
    ($$EXECUTE sh_idx_pball('c4ca4238a0b92382/0')$$, $$SELECT id FROM sh_idx WHERE fp = 'c4ca4238a0b92382'$$),
    ($$EXECUTE sh_idx_pball('c4ca4238a0b92382/64')$$, $$SELECT id FROM sh_idx WHERE fp IS NOT NULL$$),
    ($$EXECUTE sh_idx_pball(NULL)$$, $$SELECT id FROM sh_idx WHERE false$$)) AS s(stmt, ref),
    sh_idx_check(s.stmt, 'index', s.ref) c;
DEALLOCATE ALL;
RESET plan_cache_mode;

--
-- Every radius 0..64, for each query centre, through index scans and bitmap
-- scans: the same rows as a sequential scan (total: how many rows matched
-- over all radii, so that the check is not vacuous).
--
SELECT q.name, p.path, count(*) AS radii, bool_and(c.same) AS all_same,
       bool_and(c.index_used) AS index_used, sum(c.n_index) AS total_rows
FROM sh_idx_q q, (VALUES ('index'), ('bitmap')) AS p(path), generate_series(0, 64) r,
     sh_idx_check(format('SELECT id FROM sh_idx WHERE fp <~> %L <= %s', q.q, r), p.path) c
GROUP BY q.name, p.path ORDER BY q.name, p.path;
-- how many rows each radius finds around row 1 (its family at 0..5 bits)
SELECT r, count(id) FROM generate_series(0, 7) r
    LEFT JOIN sh_idx ON fp <~> 'c4ca4238a0b92382' <= r GROUP BY r ORDER BY r;

--
-- Edge cases, through the index.
--
-- a NULL query or bound: nothing. With constants the planner folds the
-- condition to false and scans nothing at all (index_used is f: no scan);
-- a NULL that reaches the index at run time is in the generic plans above.
EXPLAIN (COSTS OFF) SELECT id FROM sh_idx WHERE fp <~> NULL <= 3;
EXPLAIN (COSTS OFF) SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= NULL;
SELECT stmt, c.*
FROM (VALUES ($$SELECT id FROM sh_idx WHERE fp <~> NULL <= 3$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= NULL$$),
             ($$SELECT id FROM sh_idx WHERE fp <@ simhash_ball(NULL, 3)$$),
             ($$SELECT id FROM sh_idx WHERE fp <@ NULL::hamming_ball$$),
             ($$SELECT id FROM sh_idx WHERE simhash_hamming_within(fp, NULL, 3)$$)) AS s(stmt),
     sh_idx_check(s.stmt) c;
-- a negative radius: nothing, but the index is asked
SELECT stmt, c.*
FROM (VALUES ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= -1$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' < 0$$),
             ($$SELECT id FROM sh_idx WHERE fp <@ simhash_ball_any('c4ca4238a0b92382', -3)$$),
             ($$SELECT id FROM sh_idx WHERE simhash_hamming_within(fp, 'c4ca4238a0b92382', -2147483648)$$)) AS s(stmt),
     (VALUES ('index'), ('bitmap')) AS p(path),
     sh_idx_check(s.stmt, p.path) c ORDER BY stmt, path;
-- radius 64 and beyond: every row with a fingerprint (never the NULL ones)
SELECT stmt, c.*
FROM (VALUES ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 64$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 65$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 1000000000$$),
             ($$SELECT id FROM sh_idx WHERE fp <@ simhash_ball_any('ffffffffffffffff', 2147483647)$$)) AS s(stmt),
     (VALUES ('index'), ('bitmap')) AS p(path),
     sh_idx_check(s.stmt, p.path) c ORDER BY stmt, path;
-- every row is indexed, NULL fingerprints too (they have NULL entries, which
-- an ordered scan returns last): the index holds count(*) entries
SELECT (SELECT count(*) FROM sh_idx) AS all_rows,
       (SELECT entries FROM simhash_index_info('sh_idx_fp'))
           + (SELECT pending_entries FROM simhash_index_info('sh_idx_fp')) AS index_entries;
-- several conditions on the column: all are index conditions, every one is
-- checked; and OR: a BitmapOr of two index scans
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND fp <~> 'c4ca4238a0b92302' <= 5;
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 OR fp <~> 'c81e728d9d4c2f63' <= 5;
SELECT stmt, path, c.*
FROM (VALUES ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND fp <~> 'c4ca4238a0b92302' <= 5$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND fp <~> 'c4ca4238a0b92302' <= 1$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 3 AND fp <~> 'ffffffffffffffff' <= 3$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 20 AND fp <~> '0000000000000000' <= 30 AND fp <~> 'c4ca4238a0b92302' <= 25$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 64 AND fp <~> 'c4ca4238a0b92302' <= 2$$),
             ($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND fp <~> 'c4ca4238a0b92302' <= -1$$)) AS s(stmt),
     (VALUES ('index'), ('bitmap')) AS p(path),
     sh_idx_check(s.stmt, p.path) c ORDER BY stmt, path;
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 OR fp <~> 'c81e728d9d4c2f63' <= 5$$, 'bitmap');
-- with other conditions on the table
SELECT * FROM sh_idx_check($$SELECT id, fp FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 12 AND id % 2 = 1$$);
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 10 AND fp <~> 'c4ca4238a0b92382' > 2$$);

--
-- The self-join that finds near-duplicate pairs: a nested loop with a
-- parameterized index scan inside; the side driving the index follows the
-- filter (the filtered side is the outer one).
--
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id;
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id WHERE a.id < 100;
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id WHERE b.id > 3100;
SELECT stmt, c.*
FROM (VALUES ($$SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id$$),
             ($$SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id WHERE a.id < 100$$),
             ($$SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id WHERE b.id > 3100$$),
             ($$SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON simhash_hamming_within(a.fp, b.fp, 6) AND a.id <> b.id WHERE a.id <= 20$$)) AS s(stmt),
     sh_idx_check(s.stmt) c;
-- the pairs themselves for the first rows
SELECT a.id, b.id, a.fp <~> b.fp AS distance
FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 3 AND a.id < b.id WHERE a.id <= 2 ORDER BY a.id, b.id;

--
-- A radius of 64 cannot be helped by the index: a sequential scan.
--
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 64;
-- a large radius on random data: whatever the plan, the same rows
SELECT r, c.*
FROM (VALUES (16), (20), (24), (32)) AS v(r),
     sh_idx_check(format($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= %s$$, r), 'bitmap') c
ORDER BY r;

--
-- Partial index: used when the query implies its predicate. (PostgreSQL 15
-- also shows the predicate as a filter; 17 leaves out a filter the index's
-- predicate implies: that line is not shown.)
--
DROP INDEX sh_idx_fp;
CREATE INDEX sh_idx_fp_odd ON sh_idx USING simhash (fp) WHERE id % 2 = 1;
SELECT sh_explain_portable('COSTS OFF',
    $$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND id % 2 = 1$$,
    'Filter: \(\(id % 2\) = 1\)') AS "QUERY PLAN";
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 AND id % 2 = 1$$);
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 30 AND id % 2 = 1$$, 'bitmap');
-- not implied: no index
SELECT sh_idx_uses_index($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5$$) AS uses_index;
SELECT (simhash_index_info('sh_idx_fp_odd')).run_entries AS entries,
       (SELECT count(*) FROM sh_idx WHERE id % 2 = 1) AS odd_rows;
DROP INDEX sh_idx_fp_odd;

--
-- Options. blocks (1..16, default 4) is frozen into the metapage at build;
-- the bits of block j are those i with i mod blocks = j. Each setting gives
-- the same rows as a sequential scan for radii 0..10 and 64, for every
-- query centre, through both paths.
--
CREATE INDEX sh_idx_b ON sh_idx USING simhash (fp) WITH (blocks = 1);
SELECT blocks, block_masks, runs, run_entries FROM simhash_index_info('sh_idx_b');
SELECT count(*) AS checks, bool_and(c.same) AS all_same, bool_and(c.index_used) AS index_used,
       sum(c.n_index) AS total_rows
FROM sh_idx_q q, (VALUES ('index'), ('bitmap')) AS p(path),
     (SELECT generate_series(0, 10) UNION ALL SELECT 64) AS r(r),
     sh_idx_check(format('SELECT id FROM sh_idx WHERE fp <~> %L <= %s', q.q, r.r), p.path) c;
DROP INDEX sh_idx_b;

CREATE INDEX sh_idx_b ON sh_idx USING simhash (fp) WITH (blocks = 3);
SELECT blocks, block_masks, runs, run_entries FROM simhash_index_info('sh_idx_b');
SELECT count(*) AS checks, bool_and(c.same) AS all_same, bool_and(c.index_used) AS index_used,
       sum(c.n_index) AS total_rows
FROM sh_idx_q q, (VALUES ('index'), ('bitmap')) AS p(path),
     (SELECT generate_series(0, 10) UNION ALL SELECT 64) AS r(r),
     sh_idx_check(format('SELECT id FROM sh_idx WHERE fp <~> %L <= %s', q.q, r.r), p.path) c;
DROP INDEX sh_idx_b;

CREATE INDEX sh_idx_b ON sh_idx USING simhash (fp) WITH (blocks = 8);
SELECT blocks, block_masks, runs, run_entries FROM simhash_index_info('sh_idx_b');
SELECT count(*) AS checks, bool_and(c.same) AS all_same, bool_and(c.index_used) AS index_used,
       sum(c.n_index) AS total_rows
FROM sh_idx_q q, (VALUES ('index'), ('bitmap')) AS p(path),
     (SELECT generate_series(0, 10) UNION ALL SELECT 64) AS r(r),
     sh_idx_check(format('SELECT id FROM sh_idx WHERE fp <~> %L <= %s', q.q, r.r), p.path) c;
DROP INDEX sh_idx_b;

CREATE INDEX sh_idx_b ON sh_idx USING simhash (fp) WITH (blocks = 16);
SELECT blocks, block_masks, runs, run_entries FROM simhash_index_info('sh_idx_b');
SELECT count(*) AS checks, bool_and(c.same) AS all_same, bool_and(c.index_used) AS index_used,
       sum(c.n_index) AS total_rows
FROM sh_idx_q q, (VALUES ('index'), ('bitmap')) AS p(path),
     (SELECT generate_series(0, 10) UNION ALL SELECT 64) AS r(r),
     sh_idx_check(format('SELECT id FROM sh_idx WHERE fp <~> %L <= %s', q.q, r.r), p.path) c;

-- ALTER INDEX SET (blocks) changes the catalog only; REINDEX applies it
ALTER INDEX sh_idx_b SET (blocks = 2);
SELECT c.reloptions, i.blocks FROM pg_class c, simhash_index_info(c.oid) i WHERE c.relname = 'sh_idx_b';
REINDEX INDEX sh_idx_b;
SELECT c.reloptions, i.blocks, i.block_masks FROM pg_class c, simhash_index_info(c.oid) i WHERE c.relname = 'sh_idx_b';
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 7$$);
DROP INDEX sh_idx_b;

-- out of range, unknown and malformed options
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (blocks = 0);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (blocks = 17);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (blocks = -1);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (pending_limit = 10);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (pending_limit = 63);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (pending_limit = 1048577);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (blocks = 'four');
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (fillfactor = 90);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) WITH (bloks = 4);
-- what the access method does not do
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp, id);
CREATE UNIQUE INDEX sh_idx_bad ON sh_idx USING simhash (fp);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (fp) INCLUDE (id);
CREATE INDEX sh_idx_bad ON sh_idx USING simhash (id);
-- nothing was created
SELECT count(*) AS simhash_indexes FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE a.amname = 'simhash' AND c.relname LIKE 'sh\_idx%';

--
-- Inserts: they go to the pending list, which is merged into runs. With a
-- small pending_limit the pending pages are merged as they fill, into runs
-- of similar size (a run much larger than the new one stays apart).
--
CREATE INDEX sh_idx_fp ON sh_idx USING simhash (fp) WITH (pending_limit = 64);
SELECT c.reloptions, i.runs, i.pending_entries FROM pg_class c, simhash_index_info(c.oid) i
WHERE c.relname = 'sh_idx_fp';
INSERT INTO sh_idx
    SELECT g, sh_idx_flip(('x' || left(md5((g % 300 + 1)::text), 16))::bit(64)::simhash, g % 4, g)
    FROM generate_series(3201, 4500) g;
-- two runs or more and a pending list; every fingerprint counted once
SELECT runs >= 2 AS several_runs, pending_entries > 0 AS pending,
       entries + pending_entries AS entries,
       (SELECT count(*) FROM sh_idx) AS all_rows
FROM simhash_index_info('sh_idx_fp');
SELECT (i.runs, i.entries, i.pending_entries)
           = (v.runs, v.run_entries, v.pending_entries) AS verify_agrees,
       v.heap_tuples_checked
FROM simhash_index_info('sh_idx_fp') i, simhash_index_verify('sh_idx_fp') v;
SELECT * FROM sh_idx_sweep('sh_idx');
-- near-duplicate pairs involving the new rows (in the pending list and runs)
SELECT * FROM sh_idx_check($$SELECT a.id, b.id FROM sh_idx a JOIN sh_idx b ON b.fp <~> a.fp <= 2 AND a.id < b.id WHERE b.id > 4200$$);

-- A scan keeps the runs it started with: a cursor reads 10 of its rows, the
-- same transaction inserts enough to merge, the cursor finishes. The replaced
-- pages wait (retired) until no snapshot that could reach them is left; a
-- merge after the cursor's transaction, once another transaction ID has been
-- used, frees them (what that merge itself retires waits in turn).
CREATE FUNCTION sh_idx_cursor_across_merge(OUT n_cursor int, OUT n_seq int, OUT same bool,
                                           OUT merged bool, OUT retired_during bool)
LANGUAGE plpgsql AS $fn$
DECLARE
    cur refcursor;
    got int[] := '{}';
    id int;
    before int[];
    want int[];
BEGIN
    SELECT ARRAY[runs, entries::int, pending_entries::int]
        INTO before FROM simhash_index_info('sh_idx_fp');
    PERFORM sh_idx_path('index');
    OPEN cur FOR SELECT s.id FROM sh_idx s WHERE fp <~> 'c4ca4238a0b92382' <= 22;
    FOR i IN 1 .. 10 LOOP
        FETCH cur INTO id;
        got := got || id;
    END LOOP;
    INSERT INTO sh_idx SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
        FROM generate_series(4501, 6000) g;
    SELECT ARRAY[runs, entries::int, pending_entries::int] <> before,
           retired > 0
        INTO merged, retired_during FROM simhash_index_info('sh_idx_fp');
    LOOP
        FETCH cur INTO id;
        EXIT WHEN NOT FOUND;
        got := got || id;
    END LOOP;
    CLOSE cur;
    PERFORM sh_idx_path('seq');
    SELECT array_agg(s.id ORDER BY s.id) INTO want FROM sh_idx s
        WHERE fp <~> 'c4ca4238a0b92382' <= 22 AND s.id <= 4500;
    n_cursor := cardinality(got);
    n_seq := cardinality(want);
    same := (SELECT array_agg(x ORDER BY x) FROM unnest(got) x) = want;
END
$fn$;
SELECT * FROM sh_idx_cursor_across_merge();
SELECT retired AS retired_during_n FROM simhash_index_info('sh_idx_fp') \gset
SELECT txid_current() > 0 AS xid_used;
INSERT INTO sh_idx SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
    FROM generate_series(6001, 6600) g;
SELECT retired < :retired_during_n AS freed_after_cursor,
       (SELECT count(*) > 0 FROM simhash_index_pages('sh_idx_fp') WHERE type = 'free') AS free_pages
FROM simhash_index_info('sh_idx_fp');
SELECT * FROM sh_idx_sweep('sh_idx', '{index}');

--
-- DELETE and VACUUM: dead entries are never returned, neither before VACUUM
-- (the heap says they are dead) nor after (marked dead in the index, or
-- dropped by a merge), also when new rows reuse the freed heap slots.
--
DELETE FROM sh_idx WHERE id % 3 = 0;
SELECT * FROM sh_idx_sweep('sh_idx', '{index}');
VACUUM sh_idx;
-- VACUUM merged the pending list and the dead entries away
SELECT pending_entries,
       entries + pending_entries AS entries,
       (SELECT count(*) FROM sh_idx) AS all_rows
FROM simhash_index_info('sh_idx_fp');
SELECT run_entries::int8 AS verify_entries, heap_tuples_checked FROM simhash_index_verify('sh_idx_fp');
-- new rows in the freed slots, and the heap tuples those slots held before
-- are not found again
INSERT INTO sh_idx SELECT g + 10000, sh_idx_flip(fp, 1, g) FROM sh_idx s(g) WHERE g % 3 = 1 AND g <= 3000;
SELECT * FROM sh_idx_sweep('sh_idx');

-- VACUUM folds one table at a time: table j of every run serving it becomes
-- a run serving table j alone, and the next table is folded only once the
-- pages the last fold replaced can be reused, so the index never needs room
-- for two copies of itself. A page is reusable once a transaction ID was
-- consumed after it was replaced and no snapshot older than that is held:
-- each round of sh_idx_alone() (waits, at most a minute, until no other
-- session of this database holds a snapshot, e.g. an autovacuum worker's
-- ANALYZE, which once made this fold a table late), txid_current() and
-- VACUUM folds one table.
CREATE FUNCTION sh_idx_alone() RETURNS bool LANGUAGE plpgsql AS $fn$
BEGIN
  FOR i IN 1..600 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF NOT EXISTS (SELECT 1 FROM pg_stat_activity
                   WHERE datname = current_database() AND pid <> pg_backend_pid()
                     AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END
$fn$;
SELECT runs, run_tables FROM simhash_index_info('sh_idx_fp');
SELECT sh_idx_alone() AS alone, txid_current() IS NOT NULL AS xid;
VACUUM sh_idx;
SELECT runs, run_tables FROM simhash_index_info('sh_idx_fp');
SELECT * FROM sh_idx_sweep('sh_idx', '{index}');
SELECT sh_idx_alone() AS alone, txid_current() IS NOT NULL AS xid;
VACUUM sh_idx;
SELECT sh_idx_alone() AS alone, txid_current() IS NOT NULL AS xid;
VACUUM sh_idx;
SELECT runs, run_tables FROM simhash_index_info('sh_idx_fp');
SELECT * FROM sh_idx_sweep('sh_idx', '{index}');
SELECT sh_idx_alone() AS alone, txid_current() IS NOT NULL AS xid;
VACUUM sh_idx;
-- every table folded: a run per table, each holding every entry once
SELECT runs, run_tables, entries + pending_entries = (SELECT count(*) FROM sh_idx) AS each_once,
       (SELECT bool_and(e = entries) FROM unnest(run_entries) e) AS all_equal
FROM simhash_index_info('sh_idx_fp');
SELECT runs, run_entries = (SELECT entries FROM simhash_index_info('sh_idx_fp')) AS run_entries_once
FROM simhash_index_verify('sh_idx_fp');
SELECT * FROM sh_idx_sweep('sh_idx');
-- nothing left worth folding: VACUUM changes nothing
SELECT sh_idx_alone() AS alone, txid_current() IS NOT NULL AS xid;
VACUUM sh_idx;
SELECT runs, run_tables FROM simhash_index_info('sh_idx_fp');

-- a few deletes in a large run: VACUUM marks them dead in place (the run
-- keeps its size, dead entries included) rather than rewriting it
SELECT runs AS runs_before, entries AS entries_before
FROM simhash_index_info('sh_idx_fp') \gset
DELETE FROM sh_idx WHERE id % 50 = 1;
VACUUM sh_idx;
SELECT runs = :runs_before AS same_runs,
       entries = :entries_before AS same_entries,
       (SELECT count(*) FROM sh_idx) < :entries_before AS fewer_rows
FROM simhash_index_info('sh_idx_fp');
INSERT INTO sh_idx SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
    FROM generate_series(20001, 20040) g;
SELECT * FROM sh_idx_sweep('sh_idx');

--
-- UPDATE of fingerprints: the new value is found, the old one is not.
--
UPDATE sh_idx SET fp = ~ fp WHERE id BETWEEN 2001 AND 2100;
UPDATE sh_idx SET fp = NULL WHERE id BETWEEN 1 AND 20;
UPDATE sh_idx SET fp = 'c4ca4238a0b92382' WHERE id BETWEEN 3001 AND 3005;
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 5 ORDER BY id;
SELECT id FROM sh_idx WHERE fp <~> ~ 'c4ca4238a0b92382'::simhash <= 5 ORDER BY id;
SELECT * FROM sh_idx_sweep('sh_idx');

--
-- VACUUM FULL, REINDEX, REINDEX CONCURRENTLY and CREATE INDEX CONCURRENTLY
-- build the index again: one run, the options kept.
--
VACUUM FULL sh_idx;
SELECT runs, pending_entries, entries AS entries,
       (SELECT count(*) FROM sh_idx) AS all_rows
FROM simhash_index_info('sh_idx_fp');
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 6$$);
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'ffffffffffffffff' <= 24$$, 'bitmap');
REINDEX INDEX sh_idx_fp;
SELECT runs, pending_entries, entries AS entries
FROM simhash_index_info('sh_idx_fp');
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 6$$);
REINDEX INDEX CONCURRENTLY sh_idx_fp;
SELECT c.reloptions, i.runs, i.pending_entries, i.entries AS entries
FROM pg_class c, simhash_index_info(c.oid) i WHERE c.relname = 'sh_idx_fp';
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 6$$);
REINDEX TABLE sh_idx;
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 6$$, 'bitmap');
DROP INDEX sh_idx_fp;
CREATE INDEX CONCURRENTLY sh_idx_fp ON sh_idx USING simhash (fp) WITH (blocks = 5);
SELECT i.indisvalid, i.indisready, s.blocks, s.runs, s.entries AS entries
FROM pg_index i, simhash_index_info(i.indexrelid) s WHERE i.indexrelid = 'sh_idx_fp'::regclass;
SELECT * FROM sh_idx_sweep('sh_idx', '{index}', (SELECT array_agg(r) FROM generate_series(0, 64) r));

--
-- TRUNCATE: an empty index again, which then takes new rows.
--
TRUNCATE sh_idx;
SELECT runs, run_entries, pending_entries, pending_pages FROM simhash_index_info('sh_idx_fp');
SELECT type, count(*) FROM simhash_index_pages('sh_idx_fp') GROUP BY type ORDER BY type;
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 64$$);
INSERT INTO sh_idx VALUES (1, 'c4ca4238a0b92382'), (2, 'c4ca4238a0b92383'), (3, NULL), (4, ~ 'c4ca4238a0b92382'::simhash);
SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= 1 ORDER BY id;
SELECT r, c.* FROM generate_series(0, 64, 16) r,
     sh_idx_check(format($$SELECT id FROM sh_idx WHERE fp <~> 'c4ca4238a0b92382' <= %s$$, r)) c ORDER BY r;

--
-- An index built on an empty table: a metapage only; queried empty, then
-- filled by inserts (the pending list alone, then runs).
--
CREATE TABLE sh_idx_empty (id int, fp simhash) WITH (autovacuum_enabled = false);
CREATE INDEX sh_idx_empty_fp ON sh_idx_empty USING simhash (fp) WITH (pending_limit = 64);
SELECT runs, run_entries, pending_entries, pending_pages FROM simhash_index_info('sh_idx_empty_fp');
SELECT type, count(*) FROM simhash_index_pages('sh_idx_empty_fp') GROUP BY type ORDER BY type;
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx_empty WHERE fp <~> 'c4ca4238a0b92382' <= 3$$);
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx_empty WHERE fp <~> 'c4ca4238a0b92382' <= 64$$, 'bitmap');
INSERT INTO sh_idx_empty SELECT id, q FROM sh_idx_q, generate_series(1, 3) id ORDER BY name, id;
INSERT INTO sh_idx_empty VALUES (100, NULL);
SELECT runs, pending_entries, pending_pages FROM simhash_index_info('sh_idx_empty_fp');
SELECT r, c.* FROM generate_series(0, 64, 8) r,
     sh_idx_check(format($$SELECT id, fp FROM sh_idx_empty WHERE fp <~> 'c4ca4238a0b92382' <= %s$$, r)) c ORDER BY r;
INSERT INTO sh_idx_empty SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
    FROM generate_series(1001, 2500) g;
SELECT runs >= 1 AS has_runs, entries + pending_entries AS entries,
       (SELECT count(*) FROM sh_idx_empty) AS all_rows
FROM simhash_index_info('sh_idx_empty_fp');
SELECT * FROM sh_idx_sweep('sh_idx_empty', '{index}');
DROP TABLE sh_idx_empty;

--
-- An UNLOGGED table: the index is unlogged too and works the same.
--
CREATE UNLOGGED TABLE sh_idx_unlogged (id int, fp simhash) WITH (autovacuum_enabled = false);
INSERT INTO sh_idx_unlogged SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
    FROM generate_series(1, 1500) g;
CREATE INDEX sh_idx_unlogged_fp ON sh_idx_unlogged USING simhash (fp) WITH (pending_limit = 64, blocks = 6);
SELECT relpersistence FROM pg_class WHERE relname = 'sh_idx_unlogged_fp';
INSERT INTO sh_idx_unlogged SELECT g, sh_idx_flip(('x' || left(md5((g - 1500)::text), 16))::bit(64)::simhash, g % 5, g)
    FROM generate_series(1501, 2400) g;
SELECT blocks, runs, entries + pending_entries AS entries
FROM simhash_index_info('sh_idx_unlogged_fp');
SELECT * FROM sh_idx_sweep('sh_idx_unlogged');
TRUNCATE sh_idx_unlogged;
SELECT runs, pending_entries FROM simhash_index_info('sh_idx_unlogged_fp');
INSERT INTO sh_idx_unlogged VALUES (1, 'c4ca4238a0b92382');
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx_unlogged WHERE fp <~> 'c4ca4238a0b92383' <= 1$$);
DROP TABLE sh_idx_unlogged;

--
-- An expression index on the fingerprint of a text, used by the literal
-- query and by a generic plan with the text as a parameter. 300 documents
-- of 60 words, each with 4 variants that change one word.
--
CREATE TABLE sh_idx_docs WITH (autovacuum_enabled = false) AS
    SELECT k * 10 + v AS id,
           (SELECT string_agg(CASE WHEN w = (k * 7 + v * 11) % 60 + 1 AND v > 0 THEN 'changed' || v
                                   ELSE left(md5(k || '-' || w), 6) END, ' ' ORDER BY w)
            FROM generate_series(1, 60) w) AS body
    FROM generate_series(1, 300) k, generate_series(0, 4) v;
CREATE INDEX sh_idx_docs_fp ON sh_idx_docs USING simhash (simhash(body));
ANALYZE sh_idx_docs;
SELECT body AS doc10 FROM sh_idx_docs WHERE id = 10 \gset
EXPLAIN (COSTS OFF)
SELECT id FROM sh_idx_docs WHERE simhash(body) <~> simhash(:'doc10'::text) <= 3;
SELECT id, simhash(body) <~> simhash(:'doc10'::text) AS distance
FROM sh_idx_docs WHERE simhash(body) <~> simhash(:'doc10'::text) <= 3 ORDER BY id;
SET plan_cache_mode = force_generic_plan;
PREPARE sh_idx_doc(text, int) AS SELECT id FROM sh_idx_docs WHERE simhash(body) <~> simhash($1) <= $2;
EXPLAIN (COSTS OFF) EXECUTE sh_idx_doc('anything', 3);
SELECT r, c.*
FROM generate_series(0, 12, 3) r,
     sh_idx_check(format('EXECUTE sh_idx_doc(%L, %s)', :'doc10', r), 'index',
                  format('SELECT id FROM sh_idx_docs WHERE simhash(body) <~> simhash(%L::text) <= %s', :'doc10', r)) c
ORDER BY r;
DEALLOCATE sh_idx_doc;
RESET plan_cache_mode;
-- near-duplicate pairs of the whole corpus through the expression index
SELECT * FROM sh_idx_check($$SELECT a.id, b.id FROM sh_idx_docs a JOIN sh_idx_docs b
                             ON simhash(b.body) <~> simhash(a.body) <= 3 AND a.id < b.id WHERE a.id < 200$$);
DROP TABLE sh_idx_docs;

--
-- amvalidate: the operator class is valid; classes with a wrong operator,
-- a wrong indexed type or no operator are not, with a reason for each.
--
SELECT opc.opcname, opc.opcintype::regtype, amvalidate(opc.oid)
FROM pg_opclass opc WHERE opc.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'simhash')
ORDER BY opc.opcname;
SELECT amop.amopstrategy, amop.amopopr::regoperator, amop.amoppurpose
FROM pg_amop amop JOIN pg_opclass opc ON opc.opcfamily = amop.amopfamily
WHERE opc.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'simhash')
ORDER BY amop.amopstrategy;
CREATE SCHEMA sh_idx_bogus;
CREATE OPERATOR CLASS sh_idx_bogus.wrong_operator FOR TYPE simhash USING simhash AS
    OPERATOR 1 = (simhash, simhash);
CREATE OPERATOR CLASS sh_idx_bogus.wrong_type FOR TYPE int8 USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball);
CREATE OPERATOR CLASS sh_idx_bogus.no_operator FOR TYPE simhash USING simhash AS
    STORAGE simhash;
SELECT amvalidate(oid) AS wrong_operator FROM pg_opclass
WHERE opcnamespace = 'sh_idx_bogus'::regnamespace AND opcname = 'wrong_operator';
SELECT amvalidate(oid) AS wrong_type FROM pg_opclass
WHERE opcnamespace = 'sh_idx_bogus'::regnamespace AND opcname = 'wrong_type';
SELECT amvalidate(oid) AS no_operator FROM pg_opclass
WHERE opcnamespace = 'sh_idx_bogus'::regnamespace AND opcname = 'no_operator';
-- what the access method refuses outright: a strategy number past 3, a
-- support function
CREATE OPERATOR CLASS sh_idx_bogus.wrong_strategy FOR TYPE simhash USING simhash AS
    OPERATOR 4 <@ (simhash, hamming_ball);
CREATE OPERATOR CLASS sh_idx_bogus.with_function FOR TYPE simhash USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball), FUNCTION 1 simhash_cmp(simhash, simhash);
-- strategy 2 is ORDER BY fp <-> q (integer distance); amvalidate refuses
-- a search operator there, and an ordering operator as strategy 1
CREATE OPERATOR CLASS sh_idx_bogus.search_as_order FOR TYPE simhash USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball), OPERATOR 2 @> (hamming_ball, simhash);
CREATE OPERATOR CLASS sh_idx_bogus.order_as_search FOR TYPE simhash USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball), OPERATOR 1 <-> (simhash, simhash) FOR ORDER BY integer_ops;
CREATE OPERATOR CLASS sh_idx_bogus.ordering FOR TYPE simhash USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball), OPERATOR 2 <-> (simhash, simhash_order) FOR ORDER BY integer_ops;
-- the distance users write returns simhash_distance, not an integer: not an ordering operator
CREATE OPERATOR CLASS sh_idx_bogus.ordering_by_domain FOR TYPE simhash USING simhash AS
    OPERATOR 1 <@ (simhash, hamming_ball), OPERATOR 2 <-> (simhash, simhash) FOR ORDER BY integer_ops;
SELECT opcname, amvalidate(oid) FROM pg_opclass
WHERE opcnamespace = 'sh_idx_bogus'::regnamespace AND opcname IN ('search_as_order', 'order_as_search', 'ordering', 'ordering_by_domain')
ORDER BY opcname;
\set VERBOSITY terse
DROP SCHEMA sh_idx_bogus CASCADE;
\set VERBOSITY default

--
-- The inspection functions on a small index: 2000 entries, 2 blocks, so
-- 2 tables of 4 leaves each (581 entries a leaf) under one inner page.
--
CREATE TABLE sh_idx_small WITH (autovacuum_enabled = false) AS
    SELECT g AS id, ('x' || left(md5(g::text), 16))::bit(64)::simhash AS fp FROM generate_series(1, 2000) g;
CREATE INDEX sh_idx_small_fp ON sh_idx_small USING simhash (fp) WITH (blocks = 2);
SELECT version, blocks, block_masks, runs, run_entries, pending_entries, pending_pages, retired
FROM simhash_index_info('sh_idx_small_fp');
SELECT type, "table", level, count(*) AS pages, sum(items) AS items, count(next) AS with_next
FROM simhash_index_pages('sh_idx_small_fp') GROUP BY type, "table", level ORDER BY type, "table", level;
-- leaves of each table are chained: every leaf but the last has a next
SELECT bool_and(next IS NOT NULL) FILTER (WHERE items = (SELECT max(items) FROM simhash_index_pages('sh_idx_small_fp') WHERE type = 'leaf')) AS full_leaves_chained
FROM simhash_index_pages('sh_idx_small_fp') WHERE type = 'leaf';
INSERT INTO sh_idx_small VALUES (2001, '0123456789abcdef'), (2002, NULL);
SELECT pending_entries, pending_pages FROM simhash_index_info('sh_idx_small_fp');
SELECT type, count(*) AS pages, sum(items) AS items FROM simhash_index_pages('sh_idx_small_fp')
WHERE type = 'pending' GROUP BY type;
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_idx_small_fp');
-- not a simhash index, or not an index at all
CREATE INDEX sh_idx_small_btree ON sh_idx_small (fp);
SELECT * FROM simhash_index_info('sh_idx_small_btree');
SELECT * FROM simhash_index_pages('sh_idx_small_btree');
SELECT * FROM simhash_index_verify('sh_idx_small_btree');
SELECT * FROM simhash_index_info('sh_idx_small');
SELECT * FROM simhash_index_info(NULL);
DROP TABLE sh_idx_small;

--
-- Regressions: many conditions on the column (once limited to 8), a pending
-- list below one page merges at its limit, and an operator class amvalidate
-- rejects gets a clear error instead of a crash.
--
CREATE TABLE sh_idx_many WITH (autovacuum_enabled = false) AS
    SELECT g AS id, ('x' || left(md5(g::text), 16))::bit(64)::simhash AS fp FROM generate_series(1, 3000) g;
CREATE INDEX sh_idx_many_fp ON sh_idx_many USING simhash (fp) WITH (pending_limit = 64);
ANALYZE sh_idx_many;
SELECT * FROM sh_idx_check($$SELECT id FROM sh_idx_many WHERE fp <~> 'c4ca4238a0b92382' <= 3
    AND fp <~> 'c4ca4238a0b92382' <= 4 AND fp <~> 'c4ca4238a0b92382' <= 5
    AND fp <~> 'c4ca4238a0b92382' <= 6 AND fp <~> 'c4ca4238a0b92382' <= 7
    AND fp <~> 'c4ca4238a0b92382' <= 8 AND fp <~> 'c4ca4238a0b92382' <= 9
    AND fp <~> 'c4ca4238a0b92382' <= 10 AND fp <~> 'c4ca4238a0b92382' <= 11
    AND fp <~> 'c4c0000000000000' <= 40$$, 'index', NULL);
INSERT INTO sh_idx_many SELECT 3000 + g, ('x' || left(md5((3000 + g)::text), 16))::bit(64)::simhash
FROM generate_series(1, 100) g;
-- 100 inserts past a limit of 64: one merge made a run of them
SELECT runs, run_entries, pending_entries FROM simhash_index_info('sh_idx_many_fp');
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('sh_idx_many_fp');
DROP TABLE sh_idx_many;
SELECT '0123456789abcdef/+3'::hamming_ball;
SELECT '0123456789abcdef/ 3'::hamming_ball;
SELECT '0123456789abcdef/-3'::hamming_ball;
CREATE SCHEMA sh_idx_bogus2;
CREATE OPERATOR CLASS sh_idx_bogus2.eq_op FOR TYPE simhash USING simhash AS
    OPERATOR 1 = (simhash, simhash);
CREATE TABLE sh_idx_bog (fp simhash);
INSERT INTO sh_idx_bog VALUES ('0123456789abcdef');
CREATE INDEX sh_idx_bog_fp ON sh_idx_bog USING simhash (fp sh_idx_bogus2.eq_op);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM sh_idx_bog WHERE fp = '0123456789abcdef';
SELECT * FROM sh_idx_bog WHERE fp = '0123456789abcdef';
RESET enable_seqscan;
DROP TABLE sh_idx_bog;
DROP SCHEMA sh_idx_bogus2 CASCADE;

DROP FUNCTION sh_idx_cursor_across_merge(), sh_idx_alone();
DROP FUNCTION sh_idx_check(text, text, text), sh_idx_uses_index(text), sh_idx_rows(text),
              sh_idx_path(text), sh_idx_flip(simhash, int, int);
DROP TABLE sh_idx, sh_idx_q;
