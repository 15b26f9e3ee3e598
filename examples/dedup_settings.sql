-- examples/dedup_settings.sql: the settings the two removal scripts share
-- (examples/dedup.sql, by the window functions; examples/dedup_pairs.sql, by
-- pigeonhole pairs, for distributed tables). Not run on its own: each script
-- includes it with \ir. It gives the psql variables their defaults, opens the
-- transaction, passes the variables to the server as transaction-local
-- settings (psql quotes them as literals, :'var'), and checks them in a DO
-- block that leaves its conclusions as further settings for the script:
--   simhash_dedup.relation     the table, as regclass text
--   simhash_dedup.ext_schema   the extension's schema (functions are called qualified)
--   simhash_dedup.keep_column  the column that decides which row is kept
--   simhash_dedup.keep_expr    what is compared: the column, or length(column::text)
--   simhash_dedup.keep_dir     ASC or DESC (NULLs last either way; ties to the smaller id)
--   simhash_dedup.keep_type    the type of keep_expr
--   simhash_dedup.verify_column  the text column to verify candidates against ('' = none)
-- and the functions pg_temp.simhash_dedup_summary(), the line both print, and
-- pg_temp.simhash_dedup_verify(), the exact Jaccard similarity of each row
-- about to be removed or flagged with its kept row.
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
\if :{?verify_column}
\else
\set verify_column ''
\endif
\if :{?verify_threshold}
\else
\set verify_threshold 0.5
\endif
\if :{?verify_size}
\else
\set verify_size 5
\endif

BEGIN;
SELECT set_config('simhash_dedup.table', :'table', true),
       set_config('simhash_dedup.id_column', :'id_column', true),
       set_config('simhash_dedup.fp_column', :'fp_column', true),
       set_config('simhash_dedup.radius', :'radius', true),
       set_config('simhash_dedup.method', :'method', true),
       set_config('simhash_dedup.keep', :'keep', true),
       set_config('simhash_dedup.keep_column', :'keep_column', true),
       set_config('simhash_dedup.action', :'action', true),
       set_config('simhash_dedup.flag_column', :'flag_column', true),
       set_config('simhash_dedup.verify_column', :'verify_column', true),
       set_config('simhash_dedup.verify_threshold', :'verify_threshold', true),
       set_config('simhash_dedup.verify_size', :'verify_size', true)
\gset simhash_dedup_ignored_

-- the summary line both scripts print
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_summary(tbl regclass, n_rows bigint, n_fp bigint,
                                                        n_groups bigint, n_dups bigint, n_changed bigint,
                                                        n_rejected bigint DEFAULT NULL)
RETURNS text LANGUAGE sql AS $summary$
  SELECT format('simhash dedup of %s: %s row%s, %s with a fingerprint; %s group%s of near-duplicates (%s within %s bits%s) holding %s duplicate%s; %s',
    tbl, n_rows, CASE WHEN n_rows = 1 THEN '' ELSE 's' END, n_fp,
    n_groups, CASE WHEN n_groups = 1 THEN '' ELSE 's' END,
    current_setting('simhash_dedup.method'), current_setting('simhash_dedup.radius')::int,
    CASE WHEN n_rejected IS NULL THEN ''
         ELSE format(', each verified: Jaccard similarity of %s (word %s-grams) with its kept row at least %s; %s candidate%s below it left alone',
                     quote_ident(current_setting('simhash_dedup.verify_column')),
                     current_setting('simhash_dedup.verify_size'),
                     current_setting('simhash_dedup.verify_threshold')::float8,
                     n_rejected, CASE WHEN n_rejected = 1 THEN '' ELSE 's' END) END,
    n_dups, CASE WHEN n_dups = 1 THEN '' ELSE 's' END,
    CASE current_setting('simhash_dedup.action')
      WHEN 'delete' THEN format('%s row%s deleted', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END)
      WHEN 'flag' THEN format('%s row%s updated', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END)
      ELSE 'report only, nothing changed' END)
$summary$;

-- Verification: for each candidate (id, keep_id) the candidates query gives,
-- the exact Jaccard similarity (simhash_jaccard) of the two rows' text in the
-- verify column, into pg_temp.simhash_dedup_verified (id, keep_id, jaccard).
-- In three statements that each join the table only on its id, so that on a
-- Citus table the rows' text is fetched from the workers by id (the
-- candidates' text, then their kept rows' text) and compared on the
-- coordinator; on a plain table the same statements are simple joins.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_verify(tbl regclass, id_col text, v_col text, ext text,
                                                       candidates text)
RETURNS bigint LANGUAGE plpgsql AS $verify$
DECLARE
  n bigint;
BEGIN
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_cand ON COMMIT DROP AS
                  SELECT c.id::bigint AS id, c.keep_id::bigint AS keep_id, t.%2$I::text AS body
                  FROM (%3$s) c JOIN %1$s t ON t.%4$I = c.id',
                 tbl, v_col, candidates, id_col);
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_keepbody ON COMMIT DROP AS
                  SELECT t.%2$I::bigint AS id, t.%3$I::text AS body FROM %1$s t
                  WHERE t.%2$I IN (SELECT keep_id FROM pg_temp.simhash_dedup_cand)',
                 tbl, id_col, v_col);
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_verified ON COMMIT DROP AS
                  SELECT c.id, c.keep_id, %s.simhash_jaccard(c.body, k.body, ''words'', %s) AS jaccard
                  FROM pg_temp.simhash_dedup_cand c JOIN pg_temp.simhash_dedup_keepbody k ON k.id = c.keep_id',
                 ext, current_setting('simhash_dedup.verify_size')::int);
  GET DIAGNOSTICS n = ROW_COUNT;
  DROP TABLE pg_temp.simhash_dedup_cand, pg_temp.simhash_dedup_keepbody;
  RETURN n;
END
$verify$;

DO $settings$
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
  verify_col text := current_setting('simhash_dedup.verify_column');
  verify_thr text := current_setting('simhash_dedup.verify_threshold');
  verify_size text := current_setting('simhash_dedup.verify_size');
  tbl regclass;
  ext_schema text;
  col text;
  typ text;
BEGIN
  IF tbl_name = '' THEN
    RAISE EXCEPTION 'no table given'
      USING HINT = 'Run: psql -v table=NAME -f examples/dedup.sql';
  END IF;
  tbl := tbl_name::regclass;  -- parses quoting and schemas; errors if missing
  IF radius_text !~ '^\s*\d{1,2}\s*$' OR radius_text::int > 64 THEN
    RAISE EXCEPTION 'radius "%" is not a number of bits from 0 to 64', radius_text;
  END IF;
  IF method NOT IN ('leader', 'component') THEN
    RAISE EXCEPTION 'method "%" is not leader or component', method;
  END IF;
  IF action NOT IN ('report', 'delete', 'flag') THEN
    RAISE EXCEPTION 'action "%" is not report, delete or flag', action;
  END IF;
  IF keep NOT IN ('first', 'last', 'longest', 'shortest') THEN
    RAISE EXCEPTION 'keep "%" is not first, last, longest or shortest', keep;
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

  -- verification: a text column, a threshold from 0 to 1
  IF verify_col <> '' THEN
    SELECT format_type(a.atttypid, NULL) INTO typ FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = verify_col AND a.attnum > 0 AND NOT a.attisdropped;
    IF typ IS NULL THEN
      RAISE EXCEPTION 'table % has no column % (verify_column)', tbl, quote_ident(verify_col);
    END IF;
    IF typ NOT IN ('text', 'character varying', 'character') THEN
      RAISE EXCEPTION 'verify_column % of % is of type %, not text', quote_ident(verify_col), tbl, typ
        USING HINT = 'verify_column names the text the fingerprints were computed from.';
    END IF;
  END IF;
  IF verify_thr !~ '^\s*(0(\.\d*)?|1(\.0*)?|\.\d+)\s*$' THEN
    RAISE EXCEPTION 'verify_threshold "%" is not a Jaccard similarity from 0 to 1', verify_thr;
  END IF;
  IF verify_size !~ '^\s*\d{1,2}\s*$' OR verify_size::int NOT BETWEEN 1 AND 32 THEN
    RAISE EXCEPTION 'verify_size "%" is not a number of words from 1 to 32', verify_size;
  END IF;

  -- the keep column's type, with its collation when it is not the type's own (the order of
  -- its values must be the column's)
  SELECT format_type(a.atttypid, a.atttypmod) ||
         CASE WHEN a.attcollation <> t.typcollation
              THEN format(' COLLATE %I.%I', cn.nspname, c.collname) ELSE '' END
    INTO typ
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_collation c ON c.oid = a.attcollation
    LEFT JOIN pg_namespace cn ON cn.oid = c.collnamespace
   WHERE a.attrelid = tbl AND a.attname = keep_col;
  PERFORM set_config('simhash_dedup.relation', tbl::text, true),
          set_config('simhash_dedup.ext_schema', ext_schema, true),
          set_config('simhash_dedup.keep_column', keep_col, true),
          set_config('simhash_dedup.keep_expr',
                     CASE WHEN keep IN ('longest', 'shortest') THEN format('length(%I::text)', keep_col)
                          ELSE format('%I', keep_col) END, true),
          set_config('simhash_dedup.keep_dir', CASE WHEN keep IN ('first', 'shortest') THEN 'ASC' ELSE 'DESC' END, true),
          set_config('simhash_dedup.keep_type', CASE WHEN keep IN ('longest', 'shortest') THEN 'integer' ELSE typ END, true);
END
$settings$;
