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
\if :{?dedup_continue_on_error}
\else
\set ON_ERROR_STOP on
\endif
\if :{?table}
\else
\set table ''
\endif
\if :{?id_column}
\else
\set id_column id
\endif
\if :{?fp_column}
\else
\set fp_column fp
\endif
\if :{?radius}
\else
\set radius 8
\endif
\if :{?method}
\else
\set method leader
\endif
\if :{?keep}
\else
\set keep first
\endif
\if :{?keep_column}
\else
\set keep_column ''
\endif
\if :{?action}
\else
\set action report
\endif
\if :{?flag_column}
\else
\set flag_column ''
\endif

BEGIN;
-- the settings travel to the DO block as transaction-local settings: psql
-- quotes them as literals (:'var'), and the block reads them as plain values
SELECT set_config('simhash_dedup.table', :'table', true),
       set_config('simhash_dedup.id_column', :'id_column', true),
       set_config('simhash_dedup.fp_column', :'fp_column', true),
       set_config('simhash_dedup.radius', :'radius', true),
       set_config('simhash_dedup.method', :'method', true),
       set_config('simhash_dedup.keep', :'keep', true),
       set_config('simhash_dedup.keep_column', :'keep_column', true),
       set_config('simhash_dedup.action', :'action', true),
       set_config('simhash_dedup.flag_column', :'flag_column', true)
\gset simhash_dedup_ignored_

DO $dedup$
DECLARE
  tbl_name text := current_setting('simhash_dedup.table');
  id_col text := current_setting('simhash_dedup.id_column');
  fp_col text := current_setting('simhash_dedup.fp_column');
  radius_text text := current_setting('simhash_dedup.radius');
  method text := current_setting('simhash_dedup.method');
  keep text := current_setting('simhash_dedup.keep');
  keep_col text := current_setting('simhash_dedup.keep_column');
  action text := current_setting('simhash_dedup.action');
  flag_col text := current_setting('simhash_dedup.flag_column');
  tbl regclass;
  ext_schema text;
  col text;
  radius int;
  fn text;
  ord text;
  typ text;
  n_rows bigint;
  n_fp bigint;
  n_groups bigint;
  n_dups bigint;
  n_changed bigint := 0;
BEGIN
  IF tbl_name = '' THEN
    RAISE EXCEPTION 'no table given'
      USING HINT = 'Run: psql -v table=NAME -f examples/dedup.sql';
  END IF;
  tbl := tbl_name::regclass;  -- parses quoting and schemas; errors if missing
  IF radius_text !~ '^\s*\d{1,2}\s*$' OR radius_text::int > 64 THEN
    RAISE EXCEPTION 'radius "%" is not a number of bits from 0 to 64', radius_text;
  END IF;
  radius := radius_text::int;
  fn := CASE method WHEN 'leader' THEN 'simhash_leader' WHEN 'component' THEN 'simhash_component' END;
  IF fn IS NULL THEN
    RAISE EXCEPTION 'method "%" is not leader or component', method;
  END IF;
  IF action NOT IN ('report', 'delete', 'flag') THEN
    RAISE EXCEPTION 'action "%" is not report, delete or flag', action;
  END IF;

  -- first/last default to the id; longest/shortest need the text column to measure
  IF keep_col = '' THEN
    IF keep IN ('longest', 'shortest') THEN
      RAISE EXCEPTION 'keep=% needs keep_column, the column whose length decides', keep
        USING HINT = 'For example: psql -v keep=' || keep || ' -v keep_column=body ...';
    END IF;
    keep_col := id_col;
  END IF;

  -- the columns must exist, with the right types
  FOR typ, col IN
    SELECT format_type(a.atttypid, NULL), c.name FROM unnest(ARRAY[id_col, fp_col, keep_col]) c(name)
    LEFT JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = c.name AND a.attnum > 0 AND NOT a.attisdropped
  LOOP
    IF typ IS NULL THEN
      RAISE EXCEPTION 'table % has no column %', tbl, quote_ident(col);
    END IF;
  END LOOP;
  -- the extension's functions are called schema-qualified, whatever search_path says
  SELECT n.nspname INTO ext_schema FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
   WHERE e.extname = 'simhash';
  IF ext_schema IS NULL THEN
    RAISE EXCEPTION 'extension simhash is not installed in this database';
  END IF;
  SELECT t.typname INTO typ FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
   WHERE a.attrelid = tbl AND a.attname = fp_col;
  IF typ <> 'simhash' THEN
    RAISE EXCEPTION 'column % of % is of type %, not simhash', quote_ident(fp_col), tbl, typ;
  END IF;
  IF action = 'flag' THEN
    SELECT format_type(a.atttypid, NULL) INTO typ FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = flag_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF typ IS NULL OR typ <> 'bigint' THEN
      RAISE EXCEPTION 'action flag needs an existing bigint column flag_column (got "%"%)',
        flag_col, CASE WHEN typ IS NULL THEN '' ELSE ' of type ' || typ END;
    END IF;
  END IF;

  ord := CASE keep
    WHEN 'first' THEN format('%I ASC NULLS LAST, %I', keep_col, id_col)
    WHEN 'last' THEN format('%I DESC NULLS LAST, %I', keep_col, id_col)
    WHEN 'longest' THEN format('length(%I::text) DESC NULLS LAST, %I', keep_col, id_col)
    WHEN 'shortest' THEN format('length(%I::text) ASC NULLS LAST, %I', keep_col, id_col)
  END;
  IF ord IS NULL THEN
    RAISE EXCEPTION 'keep "%" is not first, last, longest or shortest', keep;
  END IF;

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

  RAISE NOTICE 'simhash dedup of %: % row%, % with a fingerprint; % group% of near-duplicates (% within % bits) holding % duplicate%; %',
    tbl, n_rows, CASE WHEN n_rows = 1 THEN '' ELSE 's' END, n_fp,
    n_groups, CASE WHEN n_groups = 1 THEN '' ELSE 's' END, method, radius,
    n_dups, CASE WHEN n_dups = 1 THEN '' ELSE 's' END,
    CASE action
      WHEN 'delete' THEN format('%s row%s deleted', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END)
      WHEN 'flag' THEN format('%s row%s updated', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END)
      ELSE 'report only, nothing changed' END;
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
