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
CREATE FUNCTION trap.simhash_hamming(simhash, simhash) RETURNS int
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
  ON a."Id ""x""" < b."Id ""x""" AND public.simhash_hamming(a."F'p; x", b."F'p; x") <= 3;
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

-- verification (verify_column, verify_threshold): a row within the radius of its kept row is
-- removed or flagged only when the exact Jaccard similarity of their texts (simhash_jaccard)
-- reaches the threshold; in both scripts. Row 2 is row 1 with one word added (word 5-grams,
-- the default verify_size: Jaccard 5/6); row 3 has a fingerprint 2 bits from row 1 and an unrelated text; row 5 is row
-- 4's text exactly, with a fingerprint 1 bit away.
\unset id_column
\unset fp_column
\unset keep
\unset keep_column
\unset method
\unset verify_column
\unset verify_threshold
\unset verify_size
CREATE TABLE vdocs (id bigint PRIMARY KEY, fp simhash, body text, dup_of bigint);
INSERT INTO vdocs VALUES
  (1, '0000000000000000', 'the quick brown fox jumps over the lazy dog', NULL),
  (2, '0000000000000001', 'the quick brown fox jumps over the lazy dog today', NULL),
  (3, '0000000000000003', 'an entirely different text about something else', NULL),
  (4, 'ff00000000000000', 'a note that was copied exactly', NULL),
  (5, 'ff00000000000001', 'a note that was copied exactly', NULL),
  (6, NULL, 'no fingerprint', NULL);
CREATE TABLE vdocs_copy AS SELECT * FROM vdocs;
\set table vdocs
\set radius 3
\set action flag
\set flag_column dup_of
-- without verification: 2, 3 and 5 are flagged
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT id, dup_of FROM vdocs ORDER BY id;
-- with it: 3 is left alone
\set verify_column body
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT id, dup_of FROM vdocs ORDER BY id;
-- a higher threshold leaves 2 alone too; 5 (identical text, Jaccard 1) stays flagged
\set verify_threshold 0.95
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT id, dup_of FROM vdocs ORDER BY id;
-- the pair script: the same flags, and delete removes exactly the verified rows
\set table vdocs_copy
\set verify_threshold 0.5
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT id, dup_of FROM vdocs_copy ORDER BY id;
\set action delete
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT id FROM vdocs_copy ORDER BY id;
-- bad settings, each an error that changes nothing
\set action delete
\set table vdocs
\set verify_column nope
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\set verify_column fp
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\set verify_column body
\set verify_threshold 1.5
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\set verify_threshold 'high'
\set ECHO none
\ir examples/dedup_pairs.sql
\set ECHO all
\set verify_threshold 0.5
\set verify_size 0
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\set verify_size 5
\set verify_features sentences
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
\unset verify_features
SELECT count(*) FROM vdocs;
DROP TABLE vdocs, vdocs_copy;

-- the ruler (verify_features): a man page in simplified Chinese and its traditional translation
-- with Taiwan wording (默认/預設, 文件/檔案) share 60% of their features by the default 'mixed'
-- (Han character 3-grams, word 5-grams) and 45% by word 5-grams, which read Han text in
-- 5-character grams: grouped by default, left alone with verify_features=words
CREATE TABLE zdocs (id bigint PRIMARY KEY, fp simhash, body text, dup_of bigint);
INSERT INTO zdocs VALUES
  (1, '0f00000000000000', 'ls 命令列出目录内容。默认情况下按名称排序，使用颜色区分文件类型，选项 -l 使用长格式列出文件的权限、大小和修改时间', NULL),
  (2, '0f00000000000003', 'ls 命令列出目錄內容。預設情況下按名稱排序，使用顏色區分檔案類型，選項 -l 使用長格式列出檔案的權限、大小和修改時間', NULL);
\set table zdocs
\set action flag
\set flag_column dup_of
\set verify_column body
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT id, dup_of FROM zdocs ORDER BY id;
\set verify_features words
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT id, dup_of FROM zdocs ORDER BY id;
\unset verify_features
\unset flag_column
DROP TABLE zdocs;

-- a row without a fingerprint that shares its id with a near-duplicate:
-- removing by id would take it too, so both scripts refuse a table whose
-- ids repeat (unless a unique index on the id vouches for them)
CREATE TABLE dupid (id int, fp simhash, body text);
INSERT INTO dupid VALUES (1, '0000000000000000', 'a'), (2, '0000000000000001', 'b'),
                         (2, NULL, 'no fingerprint'), (3, 'ffff0000ffff0000', 'c');
\unset verify_column
\unset verify_threshold
\unset verify_size
\set table dupid
\set action delete
\set radius 3
\set ECHO none
\ir examples/dedup.sql
\ir examples/dedup_pairs.sql
\set ECHO all
SELECT * FROM dupid ORDER BY id, body;
-- with the second id 2 moved and a unique index: removed, the row without
-- a fingerprint kept
UPDATE dupid SET id = 4 WHERE fp IS NULL;
CREATE UNIQUE INDEX ON dupid (id);
\set ECHO none
\ir examples/dedup.sql
\set ECHO all
SELECT * FROM dupid ORDER BY id;
DROP TABLE dupid, dupid_dedup_archive;
