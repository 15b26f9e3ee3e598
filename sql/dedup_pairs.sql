--
-- dedup_pairs: the removal script by pigeonhole pairs, examples/dedup_pairs.sql,
-- on a plain table. It must make exactly the groups of examples/dedup.sql
-- (the window functions) for every method, keep rule and radius: both scripts
-- flag copies of one table and the flags are compared. The data has exact
-- copies of a fingerprint with different keep values (the script lets one row
-- stand for them), chains (where leader and component differ), ties in the
-- keep column, NULL keep values and NULL fingerprints. Then: delete and a
-- second run, hostile names with look-alike functions on the search_path,
-- and the errors.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse
\set dedup_continue_on_error 1

CREATE TABLE dp (id int PRIMARY KEY, fp simhash, body text, seen timestamptz, dup_of bigint);
-- 150 clusters: a centre, members 1..5 bits away, exact copies of the centre
-- and of a member; bodies of a few lengths (ties), some NULL
INSERT INTO dp (id, fp, body, seen)
SELECT 100 * c + j,
       (hashint8extended(c, 11) # CASE j WHEN 0 THEN 0 WHEN 1 THEN 0 WHEN 2 THEN 1 WHEN 3 THEN 3
                                         WHEN 4 THEN 3 WHEN 5 THEN 31 ELSE (1::bigint << (c % 60)) | 7 END)::simhash,
       CASE WHEN (c + j) % 7 = 0 THEN NULL ELSE repeat('w', 10 + (c * j) % 4) END,
       timestamptz '2026-01-01' + ((c * 7 + j * 3) % 11) * interval '1 day'
FROM generate_series(1, 150) c, generate_series(0, 6) j;
-- chains: links of 3 bits, ends far apart
INSERT INTO dp (id, fp, body, seen)
SELECT 90000 + k, ((1::bigint << (3 * k)) - 1)::simhash, repeat('c', k), timestamptz '2026-02-01'
FROM generate_series(1, 12) k;
-- singletons and NULL fingerprints
INSERT INTO dp (id, fp, body, seen)
SELECT 95000 + g, hashint8extended(g, 99)::simhash, 'single', NULL FROM generate_series(1, 100) g;
INSERT INTO dp (id, fp, body) SELECT 99000 + g, NULL, 'none' FROM generate_series(1, 5) g;
SELECT count(*), count(fp), count(DISTINCT fp) FROM dp;
-- a keep column whose collation is not the database's: ICU's root order puts 'a' before
-- 'B', C and C.UTF-8 put it after; the kept row must follow the column's order
ALTER TABLE dp ADD COLUMN title text COLLATE "und-x-icu";
UPDATE dp SET title = CASE WHEN id % 2 = 0 THEN 'B' ELSE 'a' END || (id % 5);

-- both scripts flag a copy each; the flags must be equal
CREATE TABLE dp_w (LIKE dp INCLUDING ALL);
CREATE TABLE dp_p (LIKE dp INCLUDING ALL);
CREATE TABLE diffs (config text, rows_flagged bigint, differing bigint);
\set table dp_w
\set action flag
\set flag_column dup_of

\set radius 3
\set method leader
\set keep first
\set cfg 'r3 leader first'
\ir test/regress/dedup_compare.sql
\set radius 8
\set cfg 'r8 leader first'
\ir test/regress/dedup_compare.sql
\set method component
\set cfg 'r8 component first'
\ir test/regress/dedup_compare.sql
\set method leader
\set keep longest
\set keep_column body
\set cfg 'r8 leader longest body'
\ir test/regress/dedup_compare.sql
\set keep shortest
\set radius 5
\set cfg 'r5 leader shortest body'
\ir test/regress/dedup_compare.sql
\set keep last
\set keep_column seen
\set method component
\set cfg 'r5 component last seen'
\ir test/regress/dedup_compare.sql
\set radius 0
\set method leader
\set cfg 'r0 leader last seen'
\ir test/regress/dedup_compare.sql
\set radius 8
\set keep first
\set keep_column title
\set cfg 'r8 leader first title (ICU collation)'
\ir test/regress/dedup_compare.sql
\unset keep_column
\set blocks 9
\set cfg 'r8 leader first, 9 blocks given'
\ir test/regress/dedup_compare.sql
\unset blocks
SELECT * FROM diffs;

-- delete, keeping the longest body; a second run deletes nothing
\set table dp_p
\set action delete
\set method leader
\set keep longest
\set keep_column body
\set radius 8
\set ECHO none
\ir examples/dedup_pairs.sql
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT count(*), count(fp) FROM dp_p;
SELECT count(*) AS close_pairs FROM dp_p a JOIN dp_p b ON a.id < b.id AND a.fp <~> b.fp <= 8;

-- hostile names, look-alike functions first on the search_path
CREATE SCHEMA "Pairs ""Q"";";
CREATE TABLE "Pairs ""Q"";"."Docs; --" ("Id ""x""" bigint, "F'p" simhash, "Bo dy" text);
INSERT INTO "Pairs ""Q"";"."Docs; --" SELECT id, fp, body FROM dp;
CREATE SCHEMA trap;
CREATE FUNCTION trap.simhash_hamming(simhash, simhash) RETURNS int LANGUAGE sql AS $$ SELECT 99 $$;
CREATE FUNCTION trap.simhash_blocks(simhash, int, int, OUT block int, OUT key bigint) RETURNS SETOF record
  LANGUAGE sql AS $$ SELECT 0, 0::bigint $$;
SET search_path = trap, public;
\set table '"Pairs ""Q"";"."Docs; --"'
\set id_column 'Id "x"'
\set fp_column 'F''p'
\set keep_column 'Bo dy'
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT count(*) = (SELECT count(*) FROM public.dp_p) AS same_rows_kept,
       count(*) FILTER (WHERE "Id ""x""" NOT IN (SELECT id FROM public.dp_p)) AS others
FROM "Pairs ""Q"";"."Docs; --";
RESET search_path;

-- errors: each rolls back
\set table dp_w
\set id_column id
\set fp_column fp
\set keep_column body
\set ECHO none
\echo with radius 64
\set radius 64
\ir examples/dedup_pairs.sql
\echo with radius 3 and blocks 3
\set radius 3
\set blocks 3
\ir examples/dedup_pairs.sql
\echo with blocks 'x'
\set blocks 'x'
\ir examples/dedup_pairs.sql
\unset blocks
\echo with id_column body
\set id_column body
\ir examples/dedup_pairs.sql
\echo with method 'nearest'
\set id_column id
\set method 'nearest'
\ir examples/dedup_pairs.sql
\unset method
\set ECHO all
-- a table without a unique index on the id, and one id on two rows: the
-- script checks, and refuses before it acts
CREATE TABLE dp_dupid AS SELECT * FROM dp_w;
INSERT INTO dp_dupid SELECT (SELECT max(id) FROM dp_w), fp # '0000000000000100', body, seen, NULL
FROM dp_w WHERE id = (SELECT min(id) FROM dp_w WHERE fp IS NOT NULL);
SELECT max(id) AS twice FROM dp_w;
\set table dp_dupid
\set action delete
\set ECHO none
\echo with an id on two rows
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT count(*) FROM dp_w;
SELECT count(*) - (SELECT count(*) FROM dp_w) AS dp_dupid_rows_beyond_dp_w FROM dp_dupid;

DROP SCHEMA trap CASCADE;
DROP SCHEMA "Pairs ""Q"";" CASCADE;
DROP TABLE dp, dp_w, dp_p, dp_dupid, diffs;
