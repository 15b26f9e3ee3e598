--
-- The retired list's entries name what they retired by block and serial
-- (on-disk version 3): recycling and VACUUM check the first page an entry
-- names as every other link is checked, so an entry whose block now holds
-- another run frees nothing of it. simhash.test_fault retired_wrong_head
-- makes a merge record, for each run it retires whole, the header block of a
-- run that stays (as if the block had been freed and taken by that run) with
-- the retired run's serial; v2_metapage builds an index as 0.3.0 did
-- (version 2: entries without serials, read as before until REINDEX).
--
SET client_min_messages = warning;

-- the error a statement raises, block numbers masked, or 'ok' (VACUUM, which
-- cannot run in a function, reports its SQLSTATE alone: VERBOSITY sqlstate)
CREATE FUNCTION rt_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'block [0-9]+', 'block N', 'g');
END $$;

-- index against sequential scan: radius 2 around every 50th row
CREATE FUNCTION rt_check(tab regclass) RETURNS TABLE (index_pairs bigint, seq_pairs bigint, differ bigint)
LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
    EXECUTE format('CREATE TEMP TABLE rt_idx ON COMMIT DROP AS
        SELECT a.id AS q, b.id FROM %s a JOIN %s b ON b.fp <~> a.fp <= 2 WHERE a.id %% 50 = 0', tab, tab);
    SET LOCAL enable_seqscan = on; SET LOCAL enable_indexscan = off;
    EXECUTE format('CREATE TEMP TABLE rt_seq ON COMMIT DROP AS
        SELECT a.id AS q, b.id FROM %s a JOIN %s b ON b.fp <~> a.fp <= 2 WHERE a.id %% 50 = 0', tab, tab);
    RETURN QUERY SELECT (SELECT count(*) FROM rt_idx), (SELECT count(*) FROM rt_seq),
        (SELECT count(*) FROM ((TABLE rt_idx EXCEPT TABLE rt_seq)
                               UNION ALL (TABLE rt_seq EXCEPT TABLE rt_idx)) d);
    DROP TABLE rt_idx, rt_seq;
END $$;

-- the index side of rt_check goes through the index
CREATE FUNCTION rt_plan_uses_index(tab regclass) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    l text;
    found boolean := false;
BEGIN
    SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
    FOR l IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT a.id, b.id FROM %s a JOIN %s b
                             ON b.fp <~> a.fp <= 2 WHERE a.id %% 50 = 0', tab, tab)
    LOOP
        found := found OR l LIKE '%Index Scan using%';
    END LOOP;
    RETURN found;
END $$;

-- 2,000 rows in one run, then 600 inserted through a pending list of 64:
-- flushes and merges of the small runs retire runs whole while the big one stays
CREATE FUNCTION rt_load(tab text, fault text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %I (id int PRIMARY KEY, fp simhash) WITH (autovacuum_enabled = off)', tab);
    EXECUTE format($q$INSERT INTO %I SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
                      FROM generate_series(1, 2000) g$q$, tab);
    PERFORM set_config('simhash.test_fault', fault, true);
    EXECUTE format('CREATE INDEX %I ON %I USING simhash (fp) WITH (blocks = 2, pending_limit = 64)',
                   tab || '_fp', tab);
    PERFORM set_config('simhash.test_fault', 'none', true);
END $$;

CREATE FUNCTION rt_insert_more(tab text, fault text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simhash.test_fault', fault, true);
    EXECUTE format($q$INSERT INTO %I SELECT g, ('x' || left(md5(g::text), 16))::bit(64)::simhash
                      FROM generate_series(2001, 2600) g$q$, tab);
    PERFORM set_config('simhash.test_fault', 'none', true);
END $$;

-- 1. version 3: the wrong entries are caught, nothing of the run that stays is freed
SELECT rt_load('rt3', 'none');
SELECT rt_insert_more('rt3', 'retired_wrong_head');
SELECT version, runs, run_entries, retired FROM simhash_index_info('rt3_fp');
-- the stamps must be older than every snapshot before recycling frees anything
SELECT txid_current() > 0 AS xid_consumed;
\set VERBOSITY sqlstate
VACUUM rt3;
\set VERBOSITY default
-- the entries were taken off the list before the check: the list is empty
SELECT retired FROM simhash_index_info('rt3_fp');
BEGIN;
SELECT rt_plan_uses_index('rt3');
COMMIT;
SELECT * FROM rt_check('rt3');
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('rt3_fp');
-- the retired runs' pages, left unfreed, are reclaimed by the next VACUUM:
-- afterwards every run header page is a listed run's
\set VERBOSITY sqlstate
VACUUM rt3;
\set VERBOSITY default
SELECT runs, (SELECT count(*) FROM simhash_index_pages('rt3_fp') WHERE type = 'run header') AS header_pages
FROM simhash_index_info('rt3_fp');
SELECT * FROM rt_check('rt3');
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('rt3_fp');

-- 2. version 2 (built as 0.3.0 built it) without the fault: read and
-- written as before (merges, recycling, VACUUM's reclaim), version kept
SELECT rt_load('rt2', 'v2_metapage');
SELECT rt_insert_more('rt2', 'none');
SELECT version, runs, run_entries, retired FROM simhash_index_info('rt2_fp');
SELECT txid_current() > 0 AS xid_consumed;
\set VERBOSITY sqlstate
VACUUM rt2;
\set VERBOSITY default
\set VERBOSITY sqlstate
VACUUM rt2;
\set VERBOSITY default
SELECT version, retired, entries FROM simhash_index_info('rt2_fp');
SELECT * FROM rt_check('rt2');
SELECT runs, run_entries, pending_entries, heap_tuples_checked FROM simhash_index_verify('rt2_fp');
REINDEX INDEX rt2_fp;
SELECT version FROM simhash_index_info('rt2_fp');

-- 3. what the serial prevents: the same wrong entries on a version 2 index,
-- whose entries carry none, pass the type check and free the run that stays;
-- the index is then corrupted (a negative control for part 1)
SELECT rt_load('rt2w', 'v2_metapage');
SELECT rt_insert_more('rt2w', 'retired_wrong_head');
SELECT txid_current() > 0 AS xid_consumed;
\set VERBOSITY sqlstate
VACUUM rt2w;
\set VERBOSITY default
SELECT rt_try('SELECT simhash_index_verify(''rt2w_fp'')');
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT rt_try('SELECT count(*) FROM rt2w a JOIN rt2w b ON b.fp <~> a.fp <= 2 WHERE a.id % 50 = 0');
RESET enable_seqscan; RESET enable_bitmapscan;

DROP TABLE rt3, rt2, rt2w;
DROP FUNCTION rt_try(text), rt_check(regclass), rt_plan_uses_index(regclass),
    rt_load(text, text), rt_insert_more(text, text);
