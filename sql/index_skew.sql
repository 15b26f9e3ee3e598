--
-- A merge whose tables disagree. Every table of a run holds the same
-- entries; a merge reads its sources table by table, so tables that come
-- out different mean the sources' dead marks were already inconsistent.
-- The merge must then raise the corruption error, naming the tables and
-- their counts, and leave the index as it was: never drop entries, never
-- write a run with an empty table. simhash.test_fault merge_skew_first
-- (merge_skew_later) drops, in a merge, every entry of the first (the last)
-- table it writes, as if each were dead there and live in the others.
--
SET client_min_messages = warning;
-- autovacuum off: a VACUUM of its own would flush the pending list the checks count on
CREATE TABLE skew (id int PRIMARY KEY, b bit(64), fp simhash) WITH (autovacuum_enabled = off);
INSERT INTO skew SELECT g, b, b::simhash
    FROM (SELECT g, ('x' || left(md5(g::text), 16))::bit(64) AS b FROM generate_series(1, 2500) g) r;
-- two tables: even bits in table 0, odd bits in table 1 (index suite)
CREATE INDEX skew_fp ON skew USING simhash (fp) WITH (blocks = 2, pending_limit = 100000);
INSERT INTO skew SELECT g, b, b::simhash
    FROM (SELECT g, ('x' || left(md5(g::text), 16))::bit(64) AS b FROM generate_series(2501, 3000) g) r;
-- radius 1 around each row with one bit flipped: a flipped even bit is found
-- through table 1 only, an odd one through table 0 only
CREATE TABLE skew_q AS
    SELECT s.id * 64 + k AS qid, (s.b # (1::bigint << k)::bit(64))::simhash AS fp
    FROM skew s, generate_series(0, 63) k WHERE s.id % 25 = 0;
ANALYZE skew, skew_q;

-- the index's answer and a sequential scan's, pair by pair
CREATE FUNCTION skew_check() RETURNS TABLE (index_pairs bigint, seq_pairs bigint, differ bigint)
LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
    CREATE TEMP TABLE skew_idx ON COMMIT DROP AS
        SELECT q.qid, s.id FROM skew_q q JOIN skew s ON s.fp <~> q.fp <= 1;
    SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off;
    CREATE TEMP TABLE skew_seq ON COMMIT DROP AS
        SELECT q.qid, s.id FROM skew_q q JOIN skew s ON s.fp <~> q.fp <= 1;
    RETURN QUERY SELECT (SELECT count(*) FROM skew_idx), (SELECT count(*) FROM skew_seq),
        (SELECT count(*) FROM ((TABLE skew_idx EXCEPT TABLE skew_seq)
                               UNION ALL (TABLE skew_seq EXCEPT TABLE skew_idx)) d);
    DROP TABLE skew_idx, skew_seq;
END $$;

-- the index side of the check goes through the index (a line of the plan:
-- PostgreSQL 18 marks the disabled sequential scan of skew_q in its output)
CREATE FUNCTION skew_plan_uses_index() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    l text;
    found boolean := false;
BEGIN
    SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT q.qid, s.id FROM skew_q q JOIN skew s ON s.fp <~> q.fp <= 1'
    LOOP
        found := found OR l LIKE '%Index Scan using skew_fp on skew s%';
    END LOOP;
    RETURN found;
END $$;
BEGIN;
SELECT skew_plan_uses_index();
COMMIT;
SELECT runs, entries, pending_entries FROM simhash_index_info('skew_fp');
SELECT * FROM skew_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('skew_fp');

-- the first table comes out empty: before the fix the merge took that for
-- "nothing live" and retired the 500 pending entries without a new run
SET simhash.test_fault = merge_skew_first;
VACUUM skew;
RESET simhash.test_fault;
SELECT runs, entries, pending_entries FROM simhash_index_info('skew_fp');
SELECT * FROM skew_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('skew_fp');

-- a later table comes out empty: before the fix its size went unchecked and
-- the run was swapped in with table 1 empty (half of the flipped queries
-- lost their match)
SET simhash.test_fault = merge_skew_later;
VACUUM skew;
RESET simhash.test_fault;
SELECT runs, entries, pending_entries FROM simhash_index_info('skew_fp');
SELECT * FROM skew_check();
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('skew_fp');

-- without the fault the merge goes through, and nothing was lost (how many
-- runs it leaves depends on whether recycling may already free the folds')
VACUUM skew;
SELECT entries, pending_entries FROM simhash_index_info('skew_fp');
SELECT * FROM skew_check();
SELECT run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('skew_fp');
DROP TABLE skew, skew_q;
DROP FUNCTION skew_check();
DROP FUNCTION skew_plan_uses_index();
