--
-- dedup_script: the removal script examples/dedup.sql, run through psql's
-- \ir on a table and columns with hostile names (quotes, semicolons, spaces,
-- mixed case) in a schema with such a name, with a search_path that puts
-- look-alike functions first: report changes nothing; delete keeps exactly
-- the representatives, leaves NULL fingerprints alone and is idempotent; flag
-- likewise; every invalid setting is an error that leaves the table as it was.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse
\set dedup_continue_on_error 1

CREATE SCHEMA "Dedup ""Q"";";
CREATE TABLE victim (x int);
CREATE TABLE "Dedup ""Q"";"."Docs; DROP TABLE victim; --" (
  "Id ""x""" bigint PRIMARY KEY,
  "F'p; x" simhash,
  "Bo dy" text,
  "Dup Of" bigint);
-- 40 groups: a centre (id 10 * g) and members at 1..3 bits with longer
-- bodies for odd members; 20 singletons; 5 rows without a fingerprint
-- (one of them identical in body to a group's centre)
INSERT INTO "Dedup ""Q"";"."Docs; DROP TABLE victim; --"
SELECT 10 * g + j,
       (hashint8extended(g, 7) # CASE WHEN j = 0 THEN 0 ELSE (1::bigint << j) - 1 END)::simhash,
       repeat('x', 10 + (CASE WHEN j % 2 = 1 THEN 5 * j ELSE j END))
FROM generate_series(1, 40) g, generate_series(0, 3) j;
INSERT INTO "Dedup ""Q"";"."Docs; DROP TABLE victim; --"
SELECT 1000 + g, hashint8extended(1000 + g, 7)::simhash, 'single' FROM generate_series(1, 20) g;
INSERT INTO "Dedup ""Q"";"."Docs; DROP TABLE victim; --"
SELECT 2000 + g, NULL, 'no fingerprint' FROM generate_series(1, 5) g;

-- look-alikes that must not be called: the script qualifies the extension's functions
CREATE SCHEMA trap;
CREATE FUNCTION trap.simhash_leader(bigint, simhash, int) RETURNS bigint
  LANGUAGE sql WINDOW AS $$ SELECT 0::bigint $$;
CREATE FUNCTION trap.hamming(simhash, simhash) RETURNS int
  LANGUAGE sql AS $$ SELECT 99 $$;
SET search_path = trap, public;

-- copies for the flag runs
CREATE TABLE "Dedup ""Q"";"."flag Copy" AS SELECT * FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --";

\set table '"Dedup ""Q"";"."Docs; DROP TABLE victim; --"'
\set id_column 'Id "x"'
\set fp_column 'F''p; x'

-- 1. report: prints groups, changes nothing
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --";

-- 2. delete, keeping the longest body of each group
\set action delete
\set keep longest
\set keep_column 'Bo dy'
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) AS rows, count("F'p; x") AS with_fp,
       count(*) FILTER (WHERE "Id ""x""" BETWEEN 10 AND 409) AS group_rows,
       bool_and("Id ""x""" % 10 = 3) FILTER (WHERE "Id ""x""" BETWEEN 10 AND 409) AS all_longest
FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --";
-- every group kept exactly one row, the longest (member 3); NULL fingerprints all stay
SELECT count(*) FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --" WHERE "F'p; x" IS NULL;
-- no two remaining rows are within 3 bits
SELECT count(*) AS close_pairs
FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --" a
JOIN "Dedup ""Q"";"."Docs; DROP TABLE victim; --" b
  ON a."Id ""x""" < b."Id ""x""" AND public.hamming(a."F'p; x", b."F'p; x") <= 3;
-- the hostile name did nothing
SELECT count(*) FROM public.victim;

-- 3. again: idempotent, nothing to delete
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) FROM "Dedup ""Q"";"."Docs; DROP TABLE victim; --";

-- 4. flag on the copy, keeping the first id; then again: nothing changes
\set table '"Dedup ""Q"";"."flag Copy"'
\set action flag
\set flag_column 'Dup Of'
\set keep first
\set keep_column 'Id "x"'
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) FILTER (WHERE "Dup Of" IS NOT NULL) AS flagged,
       count(*) FILTER (WHERE "Dup Of" IS NOT NULL AND "Dup Of" <> "Id ""x""" - "Id ""x""" % 10) AS flagged_to_other_than_centre,
       count(*) FILTER (WHERE "F'p; x" IS NULL AND "Dup Of" IS NOT NULL) AS null_fp_flagged
FROM "Dedup ""Q"";"."flag Copy";
\set ECHO none
\ir examples/dedup.sql
\set ECHO all

-- 5. component method and radius 0 (exact duplicates only: none here)
\set method component
\set radius 0
\set action report
\set ECHO none
\ir examples/dedup.sql
\set ECHO all

-- 6. errors: each one rolls back and leaves the table as it was
\set ECHO none
\echo with radius 3
\set radius 3
\echo with method leader
\set method leader
\echo with action delete
\set action delete
\echo with radius 65
\set radius 65
\ir examples/dedup.sql
\echo with radius '3; DROP TABLE victim'
\set radius '3; DROP TABLE victim'
\ir examples/dedup.sql
\echo with radius 3
\set radius 3
\echo with method 'leader; DROP TABLE victim'
\set method 'leader; DROP TABLE victim'
\ir examples/dedup.sql
\echo with method leader
\set method leader
\echo with keep 'newest'
\set keep 'newest'
\ir examples/dedup.sql
\echo with keep longest and no keep_column
\set keep longest
\unset keep_column
\ir examples/dedup.sql
\echo with keep_column 'Id "x"'
\set keep_column 'Id "x"'
\echo with keep first
\set keep first
\echo with action 'purge'
\set action 'purge'
\ir examples/dedup.sql
\echo with action delete
\set action delete
\echo with fp_column 'Bo dy'
\set fp_column 'Bo dy'
\ir examples/dedup.sql
\echo with fp_column 'no such column'
\set fp_column 'no such column'
\ir examples/dedup.sql
\echo with fp_column 'F''p; x'
\set fp_column 'F''p; x'
\echo with action flag
\set action flag
\echo with flag_column 'Bo dy'
\set flag_column 'Bo dy'
\ir examples/dedup.sql
\echo with action delete
\set action delete
\echo with table 'no_such_table'
\set table 'no_such_table'
\ir examples/dedup.sql
\echo with table ''
\set table ''
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) FROM "Dedup ""Q"";"."flag Copy";
SELECT count(*) FROM public.victim;

RESET search_path;
DROP SCHEMA trap CASCADE;
DROP SCHEMA "Dedup ""Q"";" CASCADE;
DROP TABLE victim;
