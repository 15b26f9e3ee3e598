-- upgrade: ALTER EXTENSION simhash UPDATE from 0.1.0 to 0.2.0 on a database holding
-- version-1 fingerprints in a generated column, a simhash index and an expression index,
-- then to 0.3.0 and to 0.4.0 (the renamed functions, with a view, a constraint and an index
-- built on the old names); and every update path ends in the catalog a fresh install (the
-- default version's one script) makes. It drops the extension other suites may have
-- created and leaves the default version installed.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS simhash CASCADE;
RESET client_min_messages;

-- the catalog of a fresh install (simhash--<default>.sql, one script), kept to compare every
-- update path with
\set ECHO none
\ir test/regress/ext_catalog.sql
\set ECHO all
CREATE EXTENSION simhash;
SELECT extversion AS fresh_version FROM pg_extension WHERE extname = 'simhash';
CREATE TEMP TABLE fresh_catalog AS SELECT * FROM pg_temp.ext_catalog() AS c(fact);
SELECT count(*) > 200 AS catalog_read FROM fresh_catalog;
DROP EXTENSION simhash;

CREATE EXTENSION simhash VERSION '0.1.0';
-- the comparison sees a difference where there is one: 0.1.0 against the fresh install
-- (about 100 facts; the count differs by a fact or two between server versions)
SELECT count(*) > 50 AS sees_what_0_1_0_lacks FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f;

CREATE TABLE up_docs (
    id   int PRIMARY KEY,
    body text NOT NULL,
    fp   simhash GENERATED ALWAYS AS (simhash(body)) STORED
);
INSERT INTO up_docs (id, body)
SELECT i, format('document %s: the same words again and again, the same words %s, 後 %s', i % 50, i, i % 7)
FROM generate_series(1, 2000) i;
CREATE INDEX up_fp_idx ON up_docs USING simhash (fp);
CREATE INDEX up_expr_idx ON up_docs USING simhash (simhash(body));
CREATE TABLE up_v1 AS SELECT id, fp FROM up_docs;

-- 0.1.0 with the new library: still version 1, bit for bit (its functions are bound to the
-- version-1 entry points), and no fourth argument exists yet
SELECT count(*) AS v1_mismatches FROM up_docs WHERE fp <> simhash(body);
SELECT simhash('hello world hello world'::text) AS v1_value;

-- the update names every object that holds or computes simhash(text) values
ALTER EXTENSION simhash UPDATE TO '0.2.0';
SELECT extversion FROM pg_extension WHERE extname = 'simhash';

-- stored values are untouched and equal version 1 computed explicitly; the default is now 2
SELECT count(*) AS changed_rows FROM up_docs d JOIN up_v1 v USING (id) WHERE d.fp <> v.fp;
SELECT count(*) AS not_v1 FROM up_docs WHERE fp <> simhash(body, 'words', 2, 1);
SELECT simhash('hello world hello world'::text, 'words', 2, 1) AS v1_value,
       simhash('hello world hello world'::text) AS v2_value;
-- new rows get version 2 until the table is recomputed (the mixed state the WARNING is about)
INSERT INTO up_docs (id, body) VALUES (2001, 'document 1: the same words again and again, the same words 2001, 後 6');
SELECT fp = simhash(body) AS is_v2, fp = simhash(body, 'words', 2, 1) AS is_v1 FROM up_docs WHERE id = 2001;

-- recompute as doc/upgrading.md says, then the indexes answer exactly as a sequential scan
UPDATE up_docs SET body = body;
REINDEX INDEX up_expr_idx;
SELECT count(*) AS not_v2 FROM up_docs WHERE fp <> simhash(body);
SELECT (simhash_index_verify('up_fp_idx')).heap_tuples_checked AS fp_idx_rows,
       (simhash_index_verify('up_expr_idx')).heap_tuples_checked AS expr_idx_rows;
CREATE TEMP TABLE up_q AS SELECT simhash('document 7: the same words again and again, the same words 7, 後 0'::text) AS q;
-- indexed, so that with sequential scans disabled no plan node reads as disabled
-- (PostgreSQL 18 prints "Disabled: true" under such a node)
CREATE INDEX up_q_idx ON up_q (q);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE fp <~> q <= 14;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE simhash(body) <~> q <= 14;
CREATE TEMP TABLE up_idx AS SELECT id FROM up_docs, up_q WHERE fp <~> q <= 14;
CREATE TEMP TABLE up_expr AS SELECT id FROM up_docs, up_q WHERE simhash(body) <~> q <= 14;
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE up_seq AS SELECT id FROM up_docs, up_q WHERE fp <~> q <= 14;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM up_seq) AS seq_rows,
       (SELECT count(*) FROM (SELECT * FROM up_idx EXCEPT SELECT * FROM up_seq) a) +
       (SELECT count(*) FROM (SELECT * FROM up_seq EXCEPT SELECT * FROM up_idx) b) AS index_differences,
       (SELECT count(*) FROM (SELECT * FROM up_expr EXCEPT SELECT * FROM up_seq) a) +
       (SELECT count(*) FROM (SELECT * FROM up_seq EXCEPT SELECT * FROM up_expr) b) AS expr_index_differences;

-- a version that does not exist
SELECT simhash('x'::text, 'words', 2, 3);
SELECT * FROM simhash_features('x'::text, 'words', 2, 0);

-- 0.2.0 to 0.2.1 changes no SQL object; 0.2.1 to 0.3.0 adds simhash_jaccard
ALTER EXTENSION simhash UPDATE TO '0.3.0';
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
SELECT count(*) FROM up_docs WHERE fp <~> (SELECT fp FROM up_docs ORDER BY id LIMIT 1) <= 3;
SELECT simhash_jaccard('a b c d', 'a b c x');

-- 0.3.0 with the new library, which looks the planner's functions up by their 0.4.0 names
-- and falls back to the old ones: fp <~> q <= r and hamming_within still become index
-- conditions (hamming_within, hamming_radius_le/lt, hamming_ball, hamming_ball_any)
CREATE TEMP TABLE up_qb AS SELECT q, 14::bigint AS lim FROM up_q;
CREATE INDEX up_qb_idx ON up_qb (q, lim);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE fp <~> q <= 14;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_qb WHERE fp <~> q < lim;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_qb WHERE fp <~> q <= lim;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE hamming_within(fp, q, 14);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS v030_within FROM up_docs, up_q WHERE fp <~> q <= 14;
-- what a user built on the 0.3.0 names: a view calling them, an exclusion constraint on
-- hamming_ball(fp, r) with &&, a cast from bytea, an expression index on bit_count
CREATE VIEW up_near AS
    SELECT id, hamming_distance(fp, '0123456789abcdef') AS bits, bit_count(fp) AS ones,
           hamming_within(fp, '0123456789abcdef', 30) AS near,
           fp <@ hamming_ball('0123456789abcdef', 30) AS in_ball,
           hamming_ball('0123456789abcdef', 30) @> fp AS ball_holds,
           hamming(fp, '0123456789abcdef') AS dist, fp::bit(64)::simhash = fp AS bit_round_trip
    FROM up_docs;
CREATE TABLE up_uniq (id int, fp simhash,
    CONSTRAINT up_uniq_no_near_dup EXCLUDE USING simhash (hamming_ball(fp, 3) WITH &&));
INSERT INTO up_uniq VALUES (1, '0000000000000000'), (2, '00000000000000ff');
CREATE INDEX up_ones_idx ON up_docs (bit_count(fp));
CREATE TEMP TABLE up_near_v030 AS SELECT * FROM up_near;
-- a view on simhash_key_partners, which 0.4.0 drops without CASCADE, stops the update
CREATE VIEW up_partners AS SELECT simhash_key_partners(1, fp, 0, 3, 4) OVER () AS p FROM up_uniq;
\set VERBOSITY terse
ALTER EXTENSION simhash UPDATE TO '0.4.0';
\set VERBOSITY default
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
DROP VIEW up_partners;

-- 0.3.0 to 0.4.0 renames the functions in place: the view, the constraint, the casts and
-- the indexes keep working and now read with the new names; the old names are gone
ALTER EXTENSION simhash UPDATE TO '0.4.0';
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
SELECT count(*) AS view_differences
FROM ((SELECT * FROM up_near EXCEPT SELECT * FROM up_near_v030)
      UNION ALL (SELECT * FROM up_near_v030 EXCEPT SELECT * FROM up_near)) d;
-- the function names the view's definition reads with (its layout differs between versions)
SELECT array(SELECT DISTINCT m[1] FROM regexp_matches(pg_get_viewdef('up_near'::regclass), '([a-z_]+)\(', 'g') m
             ORDER BY 1) AS view_calls;
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'up_uniq_no_near_dup';
SELECT pg_get_indexdef('up_ones_idx'::regclass);
INSERT INTO up_uniq VALUES (3, '0000000000000003');
INSERT INTO up_uniq VALUES (4, 'ffff000000000000');
SELECT '\x0123456789abcdef'::bytea::simhash AS from_bytea, B'1010'::bit(64)::simhash AS from_bit;
SELECT amname, amhandler FROM pg_am WHERE amname = 'simhash';
SELECT hamming_within(fp, q, 3) FROM up_docs, up_q LIMIT 1;
SELECT bit_count('00000000000000ff'::simhash);
SELECT simhash_key_partners(1, '0000000000000000'::simhash, 0, 3, 4) OVER ();
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE fp <~> q <= 14;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_qb WHERE fp <~> q < lim;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_qb WHERE fp <~> q <= lim;
EXPLAIN (COSTS OFF) SELECT id FROM up_docs, up_q WHERE simhash_hamming_within(fp, q, 14);
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS v040_within FROM up_docs, up_q WHERE fp <~> q <= 14;

DROP VIEW up_near;
DROP TABLE up_docs, up_v1, up_uniq;

-- every update path ends in the catalog of a fresh install: the facts either side lacks
-- (none expected), from 0.1.0 (just above), 0.2.0, 0.2.1 and 0.3.0
SELECT 'from 0.1.0' AS path, f.fact AS missing, u.fact AS extra
FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f(fact)
FULL JOIN (SELECT * FROM pg_temp.ext_catalog() EXCEPT SELECT * FROM fresh_catalog) u(fact) ON false;
SET client_min_messages = warning;
DROP EXTENSION simhash CASCADE;
RESET client_min_messages;
CREATE EXTENSION simhash VERSION '0.2.0';
ALTER EXTENSION simhash UPDATE;
SELECT 'from 0.2.0' AS path, f.fact AS missing, u.fact AS extra
FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f(fact)
FULL JOIN (SELECT * FROM pg_temp.ext_catalog() EXCEPT SELECT * FROM fresh_catalog) u(fact) ON false;
DROP EXTENSION simhash;
CREATE EXTENSION simhash VERSION '0.2.1';
ALTER EXTENSION simhash UPDATE;
SELECT 'from 0.2.1' AS path, f.fact AS missing, u.fact AS extra
FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f(fact)
FULL JOIN (SELECT * FROM pg_temp.ext_catalog() EXCEPT SELECT * FROM fresh_catalog) u(fact) ON false;
DROP EXTENSION simhash;
-- 0.3.0, which 0.1.0 and its updates now install, differs from 0.4.0 in every renamed name
CREATE EXTENSION simhash VERSION '0.3.0';
SELECT count(*) > 65 AS sees_the_renames FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f;
ALTER EXTENSION simhash UPDATE;
SELECT 'from 0.3.0' AS path, f.fact AS missing, u.fact AS extra
FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f(fact)
FULL JOIN (SELECT * FROM pg_temp.ext_catalog() EXCEPT SELECT * FROM fresh_catalog) u(fact) ON false;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';

-- 0.3.0 to 0.4.0 makes <-> (simhash, simhash) again with the type of <~> (simhash_distance,
-- was integer): an object of the user's that uses the old one stops the update before it
-- changes anything, naming the object and what to do; without it, the update goes through
-- and ORDER BY fp <~> q uses the index
DROP EXTENSION simhash;
CREATE EXTENSION simhash VERSION '0.3.0';
CREATE TABLE up_near (id int, fp simhash);
INSERT INTO up_near SELECT g, left(md5(g::text), 16)::simhash FROM generate_series(1, 500) g;
CREATE INDEX up_near_fp ON up_near USING simhash (fp);
CREATE VIEW up_near_d AS SELECT id, fp <-> '0123456789abcdef' AS d FROM up_near;
SELECT pg_typeof(d) AS d_at_030 FROM up_near_d LIMIT 1;
-- (the message and its hint; PostgreSQL 18 adds the script's text as context)
\set VERBOSITY default
\set SHOW_CONTEXT never
ALTER EXTENSION simhash UPDATE TO '0.4.0';
\set SHOW_CONTEXT errors
\set VERBOSITY terse
SELECT extversion AS still FROM pg_extension WHERE extname = 'simhash';
DROP VIEW up_near_d;
ALTER EXTENSION simhash UPDATE TO '0.4.0';
CREATE VIEW up_near_d AS SELECT id, fp <-> '0123456789abcdef' AS d FROM up_near;
SELECT pg_typeof(d) AS d_at_040 FROM up_near_d LIMIT 1;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM up_near ORDER BY fp <~> '0123456789abcdef' LIMIT 3;
EXPLAIN (COSTS OFF) SELECT id FROM up_near WHERE fp <-> '0123456789abcdef' <= 20;
RESET enable_seqscan;
SELECT 'from 0.3.0' AS path, f.fact AS missing, u.fact AS extra
FROM (SELECT * FROM fresh_catalog EXCEPT SELECT * FROM pg_temp.ext_catalog()) f(fact)
FULL JOIN (SELECT * FROM pg_temp.ext_catalog() EXCEPT SELECT * FROM fresh_catalog) u(fact) ON false;
DROP VIEW up_near_d;
DROP TABLE up_near;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
