--
-- dedup_review: reviewing and undoing a deduplication with the removal
-- scripts (examples/dedup.sql, examples/dedup_pairs.sql) and putting rows
-- back (examples/dedup_restore.sql), on a table and columns with hostile
-- names, an identity id and a generated fingerprint column:
--   report mode lists every row of every group with the shown columns, the
--   distance and the exact similarity, least similar first, and can keep the
--   list in a table (report_table) that outlives the script;
--   delete moves the rows whole into the archive, with their kept row's id;
--   restore puts back one group, then everything, and the table is as before;
--   the id must be an integer; every bad setting is one error.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse
\set dedup_continue_on_error 1

CREATE SCHEMA "Re view; --";
CREATE TABLE "Re view; --"."Pages ""P""" (
  "Doc Id" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url text,
  "Ti,tle" text,
  body text,
  fp simhash GENERATED ALWAYS AS (minhash(body)) STORED);
-- six pages of 60 words; copies of page 1 with 1 and 3 words edited, an exact
-- copy of page 2, page 3 with 2 words edited, and page 1 with 12 edited (too
-- far: in no group)
CREATE TEMP TABLE base AS
  SELECT b, array(SELECT 'w' || (hashint4(b * 1000 + j) & 1023) FROM generate_series(1, 60) j) AS w
  FROM generate_series(1, 6) b;
INSERT INTO "Re view; --"."Pages ""P""" (url, "Ti,tle", body)
  SELECT 'https://ex.org/' || b, 'Page ' || b, array_to_string(w, ' ') FROM base ORDER BY b;
INSERT INTO "Re view; --"."Pages ""P""" (url, "Ti,tle", body)
  SELECT 'https://copy.ex.org/' || b || '-' || k, 'Page ' || b || ', ' || k || ' words edited',
         array_to_string(array(SELECT CASE WHEN k > 0 AND j % (60 / k) = 3 THEN 'edit' || j ELSE w[j] END
                               FROM generate_series(1, 60) j), ' ')
  FROM base JOIN (VALUES (1, 1), (1, 3), (2, 0), (3, 2), (1, 12)) e(bb, k) ON b = bb
  ORDER BY b, k;
CREATE TEMP TABLE before AS SELECT * FROM "Re view; --"."Pages ""P""";

\set table '"Re view; --"."Pages ""P"""'
\set id_column 'Doc Id'
\set radius 12
\set verify_column body
\set show 'url, "Ti,tle"'

-- 1. report: every row of every group, least similar first; nothing changes
\set report_table '"Re view; --"."Review ""1"""'
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT count(*) FROM "Re view; --"."Pages ""P""";
-- the report table outlives the script, with the same rows
SELECT * FROM "Re view; --"."Review ""1""" ORDER BY n;
-- a second report into the same table is refused
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\unset report_table

-- the first rows only (report_rows), and a line saying how many more there are
\set report_rows 3
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\unset report_rows

-- 2. the same report by the pair script, with a threshold that turns down the
-- copy with 3 words edited: it is listed, as left alone
\set verify_threshold 0.7
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
\unset verify_threshold

-- 3. delete: the duplicates move to the archive (default name), whole
\set action delete
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT "Doc Id", url FROM "Re view; --"."Pages ""P""" ORDER BY 1;
SELECT "Doc Id", url, "Ti,tle", fp, simhash_kept_id, simhash_bits, round(simhash_jaccard::numeric, 3) AS jaccard,
       simhash_removed_at <= now() AS removed_at_set
FROM "Re view; --"."Pages ""P""_dedup_archive" ORDER BY 1;
-- the archived rows are the deleted rows, column for column
SELECT count(*) AS archived_rows_unlike_before
FROM "Re view; --"."Pages ""P""_dedup_archive" a
WHERE NOT EXISTS (SELECT 1 FROM before b WHERE (b."Doc Id", b.url, b."Ti,tle", b.body, b.fp)
                                               = (a."Doc Id", a.url, a."Ti,tle", a.body, a.fp));

-- 4. restore the group of kept row 1, then everything: the table is as before
\set restore 1
\set ECHO none
\ir examples/dedup_restore.sql
\set ECHO all
SELECT "Doc Id", url FROM "Re view; --"."Pages ""P""" ORDER BY 1;
SELECT count(*) AS still_archived FROM "Re view; --"."Pages ""P""_dedup_archive";
\set restore all
\set ECHO none
\ir examples/dedup_restore.sql
\set ECHO all
SELECT (SELECT count(*) FROM (TABLE before EXCEPT ALL TABLE "Re view; --"."Pages ""P""") d) AS missing,
       (SELECT count(*) FROM (TABLE "Re view; --"."Pages ""P""" EXCEPT ALL TABLE before) d) AS extra;
-- a restored row keeps its identity value; new rows still get new ones
INSERT INTO "Re view; --"."Pages ""P""" (url, body) VALUES ('https://new.ex.org/', 'a new page');
SELECT "Doc Id" FROM "Re view; --"."Pages ""P""" WHERE url = 'https://new.ex.org/';
DELETE FROM "Re view; --"."Pages ""P""" WHERE url = 'https://new.ex.org/';

-- 5. the pair script into a named archive (the row verification turns down stays); restore from it
\set verify_threshold 0.7
\set archive_table '"Re view; --"."Gone; --"'
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT "Doc Id", simhash_kept_id, simhash_bits FROM "Re view; --"."Gone; --" ORDER BY 1;
\set restore all
\set ECHO none
\ir examples/dedup_restore.sql
\set ECHO all
SELECT count(*) FROM "Re view; --"."Pages ""P""";
\unset verify_threshold

-- 6. archive=off: deleted, and the summary says nothing was kept
CREATE TABLE "Re view; --".plain AS SELECT "Doc Id", fp FROM before;
\set table '"Re view; --".plain'
\unset archive_table
\unset verify_column
\unset show
\set archive off
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT to_regclass('"Re view; --".plain_dedup_archive') IS NULL AS no_archive;
\unset archive

-- 7. errors: each one the only message, and nothing changes
\set table '"Re view; --"."Pages ""P"""'
\set ECHO none
\echo with id_column url
\set id_column url
\ir examples/dedup.sql
\set id_column 'Doc Id'
\echo with show 'url, nope'
\set show 'url, nope'
\ir examples/dedup.sql
\echo with show role, a column of the review
ALTER TABLE "Re view; --".plain ADD COLUMN role text;
\set table '"Re view; --".plain'
\set show 'role'
\ir examples/dedup_pairs.sql
\set table '"Re view; --"."Pages ""P"""'
\set show url
\echo with report_table of an existing table
\set report_table '"Re view; --"."Review ""1"""'
\ir examples/dedup.sql
\unset report_table
\echo with report_rows 'some'
\set report_rows 'some'
\ir examples/dedup.sql
\unset report_rows
\echo with archive maybe
\set archive maybe
\ir examples/dedup.sql
\set archive on
\echo with archive_table an existing table of other columns
\set archive_table '"Re view; --".plain'
\ir examples/dedup.sql
\echo with archive_table the table itself
\set archive_table '"Re view; --"."Pages ""P"""'
\ir examples/dedup.sql
\unset archive_table
\echo restore with restore 'x'
\set restore 'x'
\ir examples/dedup_restore.sql
\echo restore with no archive
\set restore all
\set archive_table '"Re view; --".nothing_here'
\ir examples/dedup_restore.sql
\echo restore with an archive that is not one
\set archive_table '"Re view; --".plain'
\ir examples/dedup_restore.sql
\set ECHO all
SELECT count(*) FROM "Re view; --"."Pages ""P""";
SELECT count(*) FROM "Re view; --".plain;

DROP SCHEMA "Re view; --" CASCADE;

-- The first hour's traps, each with the message that gets a user out of it
-- (README.md, Quick start). Hints shown.
\set VERBOSITY default
\unset id_column
\unset fp_column
\unset radius
\unset method
\unset keep
\unset keep_column
\unset action
\unset flag_column
\unset verify_column
\unset verify_threshold
\unset verify_size
\unset verify_features
\unset show
\unset report_table
\unset report_rows
\unset archive
\unset archive_table
\unset restore
CREATE TABLE qs_docs (
  id bigserial PRIMARY KEY,
  body text NOT NULL,
  fp simhash GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO qs_docs (body) VALUES
  ('The quick brown fox jumps over the lazy dog near the river bank'),
  ('The quick brown fox jumps over the lazy dog near the river bank!'),
  ('An entirely different sentence about databases and indexes'),
  ('An entirely different sentence about databases and indexes.');
CREATE TEMP TABLE qs_before AS SELECT * FROM qs_docs;
\set table qs_docs
-- the scripts' own lines are not echoed; their messages and the queries' results are
\set ECHO none
\echo a misspelled variable is an error naming the variable it is near, and nothing changes
\set actoin delete
\ir examples/dedup.sql
\set verify_colum body
\ir examples/dedup_pairs.sql
\unset actoin
\unset verify_colum
SELECT count(*) AS rows_left FROM qs_docs;
\set restroe all
\ir examples/dedup_restore.sql
\unset restroe
\echo delete, restore all, a new column, delete again: the restore dropped the archive it emptied
\set action delete
\ir examples/dedup.sql
\set restore all
\ir examples/dedup_restore.sql
SELECT to_regclass('qs_docs_dedup_archive') IS NULL AS archive_dropped;
ALTER TABLE qs_docs ADD COLUMN mh simhash GENERATED ALWAYS AS (minhash(body)) STORED;
\ir examples/dedup.sql
SELECT count(*) AS archived FROM qs_docs_dedup_archive;
\echo an archive that still holds rows and lacks a column: the hint says how to add it
ALTER TABLE qs_docs ADD COLUMN lang text;
\ir examples/dedup.sql
\echo restoring with a column the archive lacks: the hint says how to add it
\set restore all
\ir examples/dedup_restore.sql
ALTER TABLE qs_docs DROP COLUMN lang;
\echo restoring a kept id with nothing archived: a warning naming the kept ids there are
\set restore 999
\ir examples/dedup_restore.sql
SELECT count(*) AS archived FROM qs_docs_dedup_archive;
\echo restoring into a table whose near-duplicate constraint forbids the rows: a hint, nothing restored
ALTER TABLE qs_docs ADD CONSTRAINT qs_no_near_dup EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&);
\set restore all
\ir examples/dedup_restore.sql
SELECT count(*) AS archived FROM qs_docs_dedup_archive;
ALTER TABLE qs_docs DROP CONSTRAINT qs_no_near_dup;
\ir examples/dedup_restore.sql
SELECT (SELECT array_agg(q ORDER BY id) FROM (SELECT id, body, fp FROM qs_docs) q) =
       (SELECT array_agg(q ORDER BY id) FROM (SELECT id, body, fp FROM qs_before) q) AS restored_as_before;
\unset action
\unset restore
\set ECHO all
DROP TABLE qs_docs;
