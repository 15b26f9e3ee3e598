-- examples/dedup_restore.sql: put rows that examples/dedup.sql or
-- examples/dedup_pairs.sql deleted back into their table, from the archive
-- the delete moved them to, in one transaction. Run with psql:
--
--   psql -v table=docs -v restore=42 -f examples/dedup_restore.sql    # the rows removed for kept row 42
--   psql -v table=docs -v restore=all -f examples/dedup_restore.sql   # every archived row
--
-- psql variables:
--   table          the table, as in SQL (as for the removal scripts)
--   archive_table  the archive (default: <table>_dedup_archive beside the table,
--                  the removal scripts' default)
--   restore        all, or the id of a kept row: the rows deleted as its duplicates
--
-- Each restored row gets back every column it had, except generated columns,
-- which the table computes again; identity columns keep their archived values
-- (OVERRIDING SYSTEM VALUE). The rows leave the archive in the same
-- transaction; an archive left empty is dropped (the next delete creates it
-- again, with the table's columns as they are then). A row whose id (or any
-- unique key) is taken again by then is an error, and so is a row that an
-- exclusion constraint (the near-duplicate constraint) forbids: nothing is
-- restored. A kept row with nothing archived for it gets a warning. It stops
-- at the first error (ON_ERROR_STOP).
\if :{?dedup_continue_on_error}
\else
\set ON_ERROR_STOP on
\endif
\set QUIET on
\set SHOW_CONTEXT never
\if :{?table}
\else
\set table ''
\endif
\if :{?archive_table}
\else
\set archive_table ''
\endif
\if :{?restore}
\else
\set restore ''
\endif
-- a variable set one slip away from one of ours (-v restroe=all) is an error
\set simhash_dedup_restore on
\ir dedup_variables.sql
\unset simhash_dedup_restore

BEGIN;
SELECT set_config('simhash_dedup.table', :'table', true),
       set_config('simhash_dedup.archive_table', :'archive_table', true),
       set_config('simhash_dedup.restore', :'restore', true),
       set_config('simhash_dedup.unknown', :'simhash_dedup_unknown', true)
\gset simhash_dedup_ignored_

DO $restore$
DECLARE
  tbl_name text := current_setting('simhash_dedup.table');
  archive text := current_setting('simhash_dedup.archive_table');
  restore text := current_setting('simhash_dedup.restore');
  tbl regclass;
  arc regclass;
  cols text;
  missing text;
  cond text;
  n_in bigint;
  n_out bigint;
  n_left bigint;
  some_ids text;
  err_msg text;
  err_detail text;
  err_constraint text;
BEGIN
  IF current_setting('simhash_dedup.unknown') <> '' THEN
    RAISE EXCEPTION 'unknown variable %', current_setting('simhash_dedup.unknown')
      USING HINT = 'The variables of examples/dedup_restore.sql: table, archive_table, restore; see doc/dedup.md.';
  END IF;
  IF tbl_name = '' THEN
    RAISE EXCEPTION 'no table given'
      USING HINT = 'Run: psql -v table=NAME -v restore=all -f examples/dedup_restore.sql';
  END IF;
  tbl := tbl_name::regclass;
  IF restore ~ '^\s*all\s*$' THEN
    cond := 'true';
  ELSIF restore ~ '^\s*-?\d{1,19}\s*$' THEN
    cond := format('simhash_kept_id = %s', restore::bigint);
  ELSE
    RAISE EXCEPTION 'restore "%" is not all or the id of a kept row', restore
      USING HINT = 'The kept rows'' ids are in the archive''s column simhash_kept_id.';
  END IF;
  IF archive ~ '^\s*$' THEN
    SELECT format('%I.%I', n.nspname, left(c.relname, 49) || '_dedup_archive') INTO archive
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
  ELSE
    archive := array_to_string(array(SELECT quote_ident(x) FROM unnest(parse_ident(archive)) x), '.');
  END IF;
  arc := to_regclass(archive);
  IF arc IS NULL THEN
    RAISE EXCEPTION 'archive table % does not exist', archive
      USING HINT = 'The removal scripts create it when they delete (name it with -v archive_table=NAME).';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = arc AND attname = 'simhash_kept_id' AND NOT attisdropped) THEN
    RAISE EXCEPTION '% is not an archive of the removal scripts (it has no column simhash_kept_id)', arc;
  END IF;

  -- every stored column of the table; generated ones are computed again
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO missing
    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
     AND NOT EXISTS (SELECT 1 FROM pg_attribute b WHERE b.attrelid = arc AND b.attname = a.attname
                       AND b.attnum > 0 AND NOT b.attisdropped);
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'archive % has no column % of %', arc, missing, tbl
      USING HINT = format('The table gained the column after the delete. Add it to the archive (ALTER TABLE %s ADD COLUMN ...) with the type it has in %s: the restored rows get NULL there.', arc, tbl);
  END IF;

  EXECUTE format('LOCK TABLE %s IN EXCLUSIVE MODE', arc);
  BEGIN
    EXECUTE format('INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s WHERE %s',
                   tbl, cols, cols, arc, cond);
    GET DIAGNOSTICS n_in = ROW_COUNT;
  EXCEPTION WHEN exclusion_violation THEN
    -- the near-duplicate constraint (or another exclusion constraint) forbids a row
    GET STACKED DIAGNOSTICS err_msg = MESSAGE_TEXT, err_detail = PG_EXCEPTION_DETAIL,
                            err_constraint = CONSTRAINT_NAME;
    RAISE EXCEPTION '%', err_msg
      USING ERRCODE = 'exclusion_violation', DETAIL = err_detail,
            HINT = format('The exclusion constraint %s of %s forbids the row: an archived row is a near-duplicate of the row kept for it, which the near-duplicate constraint keeps out. Nothing was restored and the archive is unchanged. To have the rows back, drop the constraint first (ALTER TABLE %s DROP CONSTRAINT %I).',
                          quote_ident(err_constraint), tbl, tbl, err_constraint);
  END;
  EXECUTE format('DELETE FROM %s WHERE %s', arc, cond);
  GET DIAGNOSTICS n_out = ROW_COUNT;
  IF n_in <> n_out THEN
    RAISE EXCEPTION 'restored % rows but took % from the archive: nothing done', n_in, n_out;
  END IF;
  IF n_in = 0 AND cond <> 'true' THEN
    -- no such kept row: say so, and which kept rows the archive holds
    EXECUTE format('SELECT string_agg(k::text, '', '') FROM (SELECT DISTINCT simhash_kept_id AS k FROM %s ORDER BY 1 LIMIT 10) s', arc)
      INTO some_ids;
    RAISE WARNING '%', format('%s holds no row removed for kept row %s: nothing restored', arc, restore::bigint)
      USING HINT = CASE WHEN some_ids IS NULL THEN 'The archive is empty.'
                        ELSE format('The archive holds rows removed for kept rows %s%s (its column simhash_kept_id); -v restore=all puts back every row.',
                                    some_ids, CASE WHEN array_length(string_to_array(some_ids, ', '), 1) = 10 THEN ', ...' ELSE '' END) END;
  END IF;
  RAISE NOTICE '%', format('simhash dedup restore: %s row%s put back into %s from %s (%s)', n_in,
    CASE WHEN n_in = 1 THEN '' ELSE 's' END, tbl, archive,
    CASE WHEN cond = 'true' THEN 'all' ELSE format('the rows removed for kept row %s', restore::bigint) END);
  -- an archive this emptied goes: the next delete creates it again with the table's columns
  -- as they are then (an archive must hold every column of the table)
  EXECUTE format('SELECT count(*) FROM %s', arc) INTO n_left;
  IF n_left = 0 AND n_in > 0 THEN
    BEGIN
      EXECUTE format('DROP TABLE %s', arc);
      RAISE NOTICE '%', format('simhash dedup restore: %s is empty now and was dropped (the next delete creates it again)', archive);
    EXCEPTION WHEN dependent_objects_still_exist THEN
      RAISE NOTICE '%', format('simhash dedup restore: %s is empty now; kept, since other objects depend on it', archive);
    END;
  END IF;
END
$restore$;

COMMIT;
