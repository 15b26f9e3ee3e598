-- examples/dedup.sql: remove (or flag) the near-duplicates of a table, keeping
-- one representative per group, in one transaction. Run with psql:
--
--   psql -v table=docs -v show=url,title -v verify_column=body -f examples/dedup.sql   # review
--   psql -v table=docs -v verify_column=body -v action=delete -f examples/dedup.sql
--   psql -v table=docs -v restore=all -f examples/dedup_restore.sql                 # undo
--   psql -v table=crawl.pages -v fp_column=body_fp -v radius=10 \
--        -v keep=longest -v keep_column=body -v action=delete -f examples/dedup.sql
--   psql -v table=docs -v action=flag -v flag_column=duplicate_of -f examples/dedup.sql
--
-- psql variables (all optional except table):
--   table        the table, as in SQL: docs, crawl.pages, "My Table"
--   id_column    a unique integer id column (default id)
--   fp_column    the simhash column (default fp)
--   radius       near-duplicates differ in at most this many bits, 0..64 (default 8,
--                the radius recommended for the default fingerprint: doc/reference.md)
--   method       leader (default): rows taken in the keep order, each joins the
--                first earlier representative within radius bits, so every
--                removed row is within radius bits of the row kept for it;
--                component: connected components of the near-duplicate graph
--                (chains can join rows much further apart than radius)
--   keep         which row of a group is kept: first (default: smallest
--                keep_column), last (largest keep_column: e.g. the newest by a
--                date), longest / shortest (by length(keep_column), e.g. the body)
--   keep_column  first/last: default the id column; longest/shortest: required
--                (the text column to measure); ties go to the smaller id
--   action       report (default: change nothing, print the summary and the
--                largest groups), delete, or flag
--   flag_column  for action=flag: an existing bigint column, set to the kept
--                row's id on every duplicate and to NULL on every other row
--   verify_column  a text column (the one the fingerprints were computed
--                from): the groups are formed on verified pairs: two rows
--                within the radius are near-duplicates only when their texts
--                are equal or the exact Jaccard similarity of their feature
--                sets (simhash_jaccard(a, b, verify_features, verify_size))
--                reaches verify_threshold (leader: a row tries
--                the kept rows in the keep order until one accepts it). A
--                row no candidate accepts is left alone (kept, not flagged)
--                and reported with the most similar candidate that turned it
--                down. Default: no verification
--   verify_threshold  0..1 (default 0.5)
--   verify_size  1..32 (default 5: word 5-grams, which separate near copies
--                from related texts; see doc/reference.md)
--   verify_features  the ruler: mixed (default: word verify_size-grams, and
--                character 3-grams of Han, Kana, Thai and the other scripts
--                written without spaces), words (word n-grams of every
--                script, a Han character a word) or chars
--   show         columns to show beside each row in the report, comma-separated,
--                each as in SQL (e.g. url,"Title"); default none
--   report_rows  how many rows of the report to print: all (default) or a number;
--                0 prints none (the summary line still counts them)
--   report_table a new table to keep the report in (one row per row of a
--                group: n, kept_id, id, role, bits, jaccard when verifying, the
--                show columns); it outlives the script. Default none
--   archive      on (default) or off: delete first copies every row it deletes
--                into archive_table, whole, with the kept row's id
--                (simhash_kept_id), the distance (simhash_bits), the similarity
--                (simhash_jaccard) and the time (simhash_removed_at), in the same
--                transaction; examples/dedup_restore.sql puts rows back
--   archive_table  default <table>_dedup_archive in the table's schema; created
--                LIKE the table on the first delete, appended to afterwards
--
-- Report mode prints every row of every group: n (the order), kept_id, id,
-- role (kept; duplicate, which delete would remove and flag would flag; left
-- alone, a candidate verification turned down), bits from the kept row,
-- jaccard when verifying, and the show columns. The group whose least
-- similar duplicate is least similar comes first; in a group the kept row,
-- then its duplicates from the least similar, then the rows left alone; groups
-- where every candidate was left alone come last. The summary line says how
-- many rows delete would remove.
--
-- What it guarantees: identifiers are quoted (format %I, regclass), never
-- pasted; the table is locked against concurrent writes (SHARE ROW EXCLUSIVE)
-- for the transaction; rows whose fingerprint is NULL are never deleted or
-- flagged; the row kept for a group is never deleted, so no group loses its
-- last member; running it again changes nothing (without verification the
-- kept rows are more than radius bits apart from each other; with it, no
-- two kept rows within the radius reach the threshold); on any error
-- the transaction is rolled back and nothing changes; every deleted row is
-- in the archive unless archive=off. Memory: the grouping
-- runs in memory (about 60 bytes per row, see doc/dedup.md: raise
-- maintenance_work_mem for big tables).
--
-- It stops at the first error (ON_ERROR_STOP), unless the variable
-- dedup_continue_on_error is set (the regression tests set it to check the
-- errors one after the other; the transaction is rolled back either way).
-- The variables' defaults and checks are shared with examples/dedup_pairs.sql
-- (examples/dedup_settings.sql, included below), and so is the end
-- (examples/dedup_finish.sql).
--
-- Set here, before the \ir: psql reads ON_ERROR_STOP when it reads a line, so
-- set inside the included file it would not stop this one at that file's error.
\if :{?dedup_continue_on_error}
\else
\set ON_ERROR_STOP on
\endif
-- no command tags (BEGIN, DO, ...) and no PL/pgSQL context lines: the summary, the
-- tables and an error's own message only
\set QUIET on
\set SHOW_CONTEXT never
\ir dedup_settings.sql

DO $dedup$
DECLARE
  tbl regclass := current_setting('simhash_dedup.relation')::regclass;
  ext_schema text := current_setting('simhash_dedup.ext_schema');
  id_col text := current_setting('simhash_dedup.id_column');
  fp_col text := current_setting('simhash_dedup.fp_column');
  radius int := current_setting('simhash_dedup.radius')::int;
  action text := current_setting('simhash_dedup.action');
  flag_col text := current_setting('simhash_dedup.flag_column');
  verify_col text := current_setting('simhash_dedup.verify_column');
  verify_thr float8 := current_setting('simhash_dedup.verify_threshold')::float8;
  n_rejected bigint;
  fn text := CASE current_setting('simhash_dedup.method')
               WHEN 'leader' THEN 'simhash_leader' ELSE 'simhash_component' END;
  ord text := format('%s %s NULLS LAST, %I', current_setting('simhash_dedup.keep_expr'),
                     current_setting('simhash_dedup.keep_dir'), current_setting('simhash_dedup.id_column'));
  n_rows bigint;
  n_fp bigint;
  n_groups bigint;
  n_dups bigint;
  n_changed bigint := 0;
  n_archived bigint;
BEGIN
  -- no concurrent writes while the groups are computed and acted on
  EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
  PERFORM pg_temp.simhash_dedup_check_ids(tbl, current_setting('simhash_dedup.id_column'));

  IF verify_col <> '' THEN
    -- every row with its unverified component: only the rows of a component
    -- of two or more have a candidate, and a verified group never crosses
    -- components, so the rows of each are grouped on verified pairs apart
    -- (PARTITION BY): the sort and the window hold their texts, not every
    -- row's, and each component is verified in memory
    EXECUTE format(
      'CREATE TEMP TABLE simhash_dedup_comp ON COMMIT DROP AS
         SELECT %1$I::bigint AS id, %2$I AS fp, %6$I.simhash_component(%1$I, %2$I, %3$s) OVER (ORDER BY %4$s) AS comp
         FROM %5$s',
      id_col, fp_col, radius, ord, tbl, ext_schema);
    -- every row of those components with its place in the groups formed on
    -- verified pairs: a candidate pair joins a group only when the Jaccard
    -- similarity of the two rows' text reaches the threshold (rows with
    -- equal text always do)
    EXECUTE format(
      'CREATE TEMP TABLE simhash_dedup_members ON COMMIT DROP AS
         SELECT %1$I::bigint AS id, %2$I AS fp,
                %7$I.%3$I(%1$I, %2$I, %4$s, %8$I::text, %9$s, %11$L, %10$s)
                  OVER (PARTITION BY simhash_dedup_comp ORDER BY %5$s) AS m
         FROM (SELECT t.*, c.comp AS simhash_dedup_comp FROM %6$s t
               JOIN pg_temp.simhash_dedup_comp c ON c.id = t.%1$I
               WHERE c.comp IN (SELECT comp FROM pg_temp.simhash_dedup_comp WHERE comp <> id)) t',
      id_col, fp_col, fn, radius, ord, tbl, ext_schema, verify_col, verify_thr,
      current_setting('simhash_dedup.verify_size')::int,
      current_setting('simhash_dedup.verify_features'));
    n_rejected := pg_temp.simhash_dedup_decide_verified(quote_ident(ext_schema));
    CREATE TEMP TABLE simhash_dedup_groups ON COMMIT DROP AS
      SELECT c.id, c.fp, CASE WHEN c.fp IS NOT NULL THEN coalesce((m.m).keep_id, c.id) END AS rep
      FROM pg_temp.simhash_dedup_comp c LEFT JOIN pg_temp.simhash_dedup_members m USING (id);
  ELSE
    -- every row with its representative (NULL for a NULL fingerprint)
    EXECUTE format(
      'CREATE TEMP TABLE simhash_dedup_groups ON COMMIT DROP AS
         SELECT %1$I::bigint AS id, %2$I AS fp, %7$I.%3$I(%1$I, %2$I, %4$s) OVER (ORDER BY %5$s) AS rep
         FROM %6$s',
      id_col, fp_col, fn, radius, ord, tbl, ext_schema);
    -- the decision: every row within the radius of its kept row, to be acted on
    EXECUTE format(
      'CREATE TEMP TABLE simhash_dedup_decided ON COMMIT DROP AS
         SELECT g.id, g.rep AS keep_id, %1$I.simhash_hamming(g.fp, r.fp) AS bits, NULL::float8 AS jaccard, true AS acted
         FROM pg_temp.simhash_dedup_groups g JOIN pg_temp.simhash_dedup_groups r ON r.id = g.rep
         WHERE g.rep <> g.id', ext_schema);
  END IF;
  SELECT count(*), count(fp), count(DISTINCT rep) FILTER (WHERE rep <> id),
         count(*) FILTER (WHERE rep <> id)
    INTO n_rows, n_fp, n_groups, n_dups FROM pg_temp.simhash_dedup_groups;
  IF current_setting('simhash_dedup.review')::bool THEN
    PERFORM pg_temp.simhash_dedup_review(tbl);
  END IF;

  IF action = 'delete' THEN
    IF current_setting('simhash_dedup.archive_table') <> '' THEN
      n_archived := pg_temp.simhash_dedup_archive(tbl);
    END IF;
    EXECUTE format('DELETE FROM %s t USING pg_temp.simhash_dedup_decided d
                    WHERE t.%I = d.id AND d.acted', tbl, id_col);
    GET DIAGNOSTICS n_changed = ROW_COUNT;
    IF n_archived IS NOT NULL AND n_archived <> n_changed THEN
      RAISE EXCEPTION 'archived % rows but deleted %: nothing done', n_archived, n_changed;
    END IF;
  ELSIF action = 'flag' THEN
    EXECUTE format('UPDATE %1$s t SET %2$I = CASE WHEN g.rep <> g.id THEN g.rep END
                    FROM pg_temp.simhash_dedup_groups g
                    WHERE t.%3$I = g.id AND g.rep IS NOT NULL
                      AND t.%2$I IS DISTINCT FROM CASE WHEN g.rep <> g.id THEN g.rep END',
                   tbl, flag_col, id_col);
    GET DIAGNOSTICS n_changed = ROW_COUNT;
  END IF;

  RAISE NOTICE '%', pg_temp.simhash_dedup_summary(tbl, n_rows, n_fp, n_groups, n_dups, n_changed, n_rejected);
END
$dedup$;

\ir dedup_finish.sql
