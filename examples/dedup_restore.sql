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
-- transaction. A row whose id (or any unique key) is taken again by then is an
-- error, and nothing is restored. It stops at the first error (ON_ERROR_STOP).
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

BEGIN;
SELECT set_config('simhash_dedup.table', :'table', true),
       set_config('simhash_dedup.archive_table', :'archive_table', true),
       set_config('simhash_dedup.restore', :'restore', true)
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
BEGIN
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
    RAISE EXCEPTION 'archive % has no column % of %', arc, missing, tbl;
  END IF;

  EXECUTE format('LOCK TABLE %s IN EXCLUSIVE MODE', arc);
  EXECUTE format('INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %s WHERE %s',
                 tbl, cols, cols, arc, cond);
  GET DIAGNOSTICS n_in = ROW_COUNT;
  EXECUTE format('DELETE FROM %s WHERE %s', arc, cond);
  GET DIAGNOSTICS n_out = ROW_COUNT;
  IF n_in <> n_out THEN
    RAISE EXCEPTION 'restored % rows but took % from the archive: nothing done', n_in, n_out;
  END IF;
  RAISE NOTICE '%', format('simhash dedup restore: %s row%s put back into %s from %s (%s)', n_in,
    CASE WHEN n_in = 1 THEN '' ELSE 's' END, tbl, archive,
    CASE WHEN cond = 'true' THEN 'all' ELSE format('the rows removed for kept row %s', restore::bigint) END);
END
$restore$;

COMMIT;
