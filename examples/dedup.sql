-- examples/dedup.sql: remove (or flag) the near-duplicates of a table, keeping
-- one representative per group, in one transaction. Run with psql:
--
--   psql -v table=docs -v action=delete -f examples/dedup.sql
--   psql -v table=crawl.pages -v fp_column=body_fp -v radius=10 \
--        -v keep=longest -v keep_column=body -v action=delete -f examples/dedup.sql
--   psql -v table=docs -v action=flag -v flag_column=duplicate_of -f examples/dedup.sql
--
-- psql variables (all optional except table):
--   table        the table, as in SQL: docs, crawl.pages, "My Table"
--   id_column    a unique integer id column (default id)
--   fp_column    the simhash column (default fp)
--   radius       near-duplicates differ in at most this many bits, 0..64 (default 8,
--                the radius recommended for the default fingerprint: README.md)
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
--                from): every row about to be removed or flagged is compared
--                with its kept row by the exact Jaccard similarity of their
--                word verify_size-gram sets (simhash_jaccard(a, b, 'words',
--                verify_size)); below verify_threshold it is left alone (kept,
--                and not flagged). Default: no verification
--   verify_threshold  0..1 (default 0.5)
--   verify_size  1..32 (default 5: word 5-grams, which separate near copies
--                from related texts; see README.md)
--
-- What it guarantees: identifiers are quoted (format %I, regclass), never
-- pasted; the table is locked against concurrent writes (SHARE ROW EXCLUSIVE)
-- for the transaction; rows whose fingerprint is NULL are never deleted or
-- flagged; the row kept for a group is never deleted, so no group loses its
-- last member; running it again changes nothing (the kept rows are more than
-- radius bits apart from each other, so they form no group); on any error
-- the transaction is rolled back and nothing changes. Memory: the grouping
-- runs in memory (about 60 bytes per row, see README.md: raise
-- maintenance_work_mem for big tables).
--
-- It stops at the first error (ON_ERROR_STOP), unless the variable
-- dedup_continue_on_error is set (the regression tests set it to check the
-- errors one after the other; the transaction is rolled back either way).
-- The variables' defaults and checks are shared with examples/dedup_pairs.sql:
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
BEGIN
  -- no concurrent writes while the groups are computed and acted on
  EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);

  -- every row with its representative (NULL for a NULL fingerprint)
  EXECUTE format(
    'CREATE TEMP TABLE simhash_dedup_groups ON COMMIT DROP AS
       SELECT %1$I::bigint AS id, %2$I AS fp, %7$I.%3$I(%1$I, %2$I, %4$s) OVER (ORDER BY %5$s) AS rep
       FROM %6$s',
    id_col, fp_col, fn, radius, ord, tbl, ext_schema);
  -- how far each row is from the row kept for it (for the report below)
  EXECUTE format('ALTER TABLE pg_temp.simhash_dedup_groups ADD COLUMN bits int;
                  UPDATE pg_temp.simhash_dedup_groups g SET bits = %1$I.hamming(g.fp, r.fp)
                  FROM pg_temp.simhash_dedup_groups r WHERE r.id = g.rep', ext_schema);
  -- verification: a candidate below the threshold stays, as a row of its own
  IF verify_col <> '' THEN
    PERFORM pg_temp.simhash_dedup_verify(tbl, id_col, verify_col, quote_ident(ext_schema),
      'SELECT id, rep AS keep_id FROM pg_temp.simhash_dedup_groups WHERE rep <> id');
    ALTER TABLE pg_temp.simhash_dedup_groups ADD COLUMN jaccard float8;
    UPDATE pg_temp.simhash_dedup_groups g SET jaccard = v.jaccard
      FROM pg_temp.simhash_dedup_verified v WHERE v.id = g.id;
    UPDATE pg_temp.simhash_dedup_groups SET rep = id, bits = 0
     WHERE rep <> id AND NOT coalesce(jaccard >= verify_thr, false);
    GET DIAGNOSTICS n_rejected = ROW_COUNT;
  END IF;
  SELECT count(*), count(fp), count(DISTINCT rep) FILTER (WHERE rep <> id),
         count(*) FILTER (WHERE rep <> id)
    INTO n_rows, n_fp, n_groups, n_dups FROM pg_temp.simhash_dedup_groups;

  IF action = 'delete' THEN
    EXECUTE format('DELETE FROM %s t USING pg_temp.simhash_dedup_groups g
                    WHERE t.%I = g.id AND g.rep <> g.id', tbl, id_col);
    GET DIAGNOSTICS n_changed = ROW_COUNT;
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

-- the largest groups: kept row, size, farthest member
SELECT rep AS kept_id, count(*) AS size, max(bits) AS max_bits_from_kept
FROM pg_temp.simhash_dedup_groups
WHERE rep IS NOT NULL
GROUP BY rep HAVING count(*) > 1
ORDER BY size DESC, kept_id
LIMIT 10;

COMMIT;
