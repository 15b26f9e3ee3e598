-- examples/dedup_settings.sql: the settings the two removal scripts share
-- (examples/dedup.sql, by the window functions; examples/dedup_pairs.sql, by
-- pigeonhole pairs, for distributed tables). Not run on its own: each script
-- includes it with \ir. It gives the psql variables their defaults, opens the
-- transaction, passes the variables to the server as transaction-local
-- settings (psql quotes them as literals, :'var'), and checks them (the
-- functions pg_temp.simhash_dedup_check_vars(), _check_columns(),
-- _check_report() and _check_archive(), called in that order by a DO block)
-- and leaves their conclusions as further settings for the script:
--   simhash_dedup.relation     the table, as regclass text
--   simhash_dedup.ext_schema   the extension's schema (functions are called qualified)
--   simhash_dedup.keep_column  the column that decides which row is kept
--   simhash_dedup.keep_expr    what is compared: the column, or length(column::text)
--   simhash_dedup.keep_dir     ASC or DESC (NULLs last either way; ties to the smaller id)
--   simhash_dedup.keep_type    the type of keep_expr
--   simhash_dedup.verify_column  the text column to verify candidates against ('' = none)
--   simhash_dedup.show         the shown columns (show) as the review selects them ('' = none)
--   simhash_dedup.report_table the review table to create (report_table), quoted ('' = none)
--   simhash_dedup.report_rows  how many review rows report mode prints ('' = all)
--   simhash_dedup.review       true when the review is to be built (printed or kept)
--   simhash_dedup.archive_table the archive for deleted rows, quoted ('' = no archive)
-- and the functions pg_temp.simhash_dedup_summary(), the line both print,
-- pg_temp.simhash_dedup_decide_verified(), the decision of a grouping on
-- verified pairs, pg_temp.simhash_dedup_review(),
-- every member of every group with the shown columns, and
-- pg_temp.simhash_dedup_archive(), the rows about to be deleted, copied whole.
-- Both scripts leave their decision in pg_temp.simhash_dedup_decided (id,
-- keep_id, bits, jaccard, acted: false for a candidate verification left
-- alone) and end with examples/dedup_finish.sql.
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
\if :{?verify_features}
\else
\set verify_features mixed
\endif
\if :{?show}
\else
\set show ''
\endif
\if :{?report_table}
\else
\set report_table ''
\endif
\if :{?report_rows}
\else
\set report_rows all
\endif
\if :{?archive}
\else
\set archive on
\endif
\if :{?archive_table}
\else
\set archive_table ''
\endif
-- a variable set one slip away from one of ours (-v actoin=delete) is an error,
-- not a default silently used: simhash_dedup_unknown lists them
\ir dedup_variables.sql

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
       set_config('simhash_dedup.verify_size', :'verify_size', true),
       set_config('simhash_dedup.verify_features', :'verify_features', true),
       set_config('simhash_dedup.show', :'show', true),
       set_config('simhash_dedup.report_table', :'report_table', true),
       set_config('simhash_dedup.report_rows', :'report_rows', true),
       set_config('simhash_dedup.archive', :'archive', true),
       set_config('simhash_dedup.archive_table', :'archive_table', true),
       set_config('simhash_dedup.unknown', :'simhash_dedup_unknown', true)
\gset simhash_dedup_ignored_

-- the verification ruler in words: what simhash_jaccard(a, b, verify_features, verify_size) compares
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_ruler() RETURNS text LANGUAGE sql AS $ruler$
  SELECT CASE current_setting('simhash_dedup.verify_features')
    WHEN 'mixed' THEN format('word %s-grams, Han/Kana/Thai character 3-grams', current_setting('simhash_dedup.verify_size')::int)
    WHEN 'chars' THEN format('character %s-grams', current_setting('simhash_dedup.verify_size')::int)
    ELSE format('word %s-grams', current_setting('simhash_dedup.verify_size')::int) END
$ruler$;

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
         ELSE format(', grouped on verified pairs: Jaccard similarity of %s (%s) at least %s; %s candidate%s below it left alone',
                     quote_ident(current_setting('simhash_dedup.verify_column')),
                     pg_temp.simhash_dedup_ruler(),
                     current_setting('simhash_dedup.verify_threshold')::float8,
                     n_rejected, CASE WHEN n_rejected = 1 THEN '' ELSE 's' END) END,
    n_dups, CASE WHEN n_dups = 1 THEN '' ELSE 's' END,
    CASE current_setting('simhash_dedup.action')
      WHEN 'delete' THEN format('%s row%s deleted%s', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END,
        CASE WHEN current_setting('simhash_dedup.archive_table') = '' THEN ', not archived (archive=off)'
             ELSE format(', moved to %s (examples/dedup_restore.sql puts them back)',
                         current_setting('simhash_dedup.archive_table')) END)
      WHEN 'flag' THEN format('%s row%s updated', n_changed, CASE WHEN n_changed = 1 THEN '' ELSE 's' END)
      ELSE format('report only, nothing changed (action=delete would remove %s row%s)',
                  n_dups, CASE WHEN n_dups = 1 THEN '' ELSE 's' END) END)
$summary$;

-- Verification happens while the groups form: both scripts fill
-- pg_temp.simhash_dedup_members (id, fp, m) with the text form of the window
-- functions (simhash_leader or simhash_component with the verify column and
-- the threshold: a candidate pair joins a group only when the Jaccard
-- similarity of its two texts reaches the threshold; equal texts always do),
-- and this turns their answers into the decision: every row grouped under
-- another (acted on, with the similarity of the pair that grouped it), and
-- every row kept though it had candidates and has no duplicate of its own
-- (left alone), shown in the group of the most similar candidate that turned
-- it down, with that pair's distance and similarity. Rows not in members
-- had no candidate. Returns the number left alone.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_decide_verified(ext text)
RETURNS bigint LANGUAGE plpgsql AS $decide$
DECLARE
  n bigint;
BEGIN
  EXECUTE format(
    'CREATE TEMP TABLE simhash_dedup_decided ON COMMIT DROP AS
     WITH g AS (SELECT id, fp, (m).keep_id AS keep_id, (m).jaccard AS jaccard, (m).near_id AS near_id,
                       (m).near_jaccard AS near_jaccard
                FROM pg_temp.simhash_dedup_members WHERE (m).keep_id IS NOT NULL)
     SELECT g.id, g.keep_id, %1$s.simhash_hamming(g.fp, k.fp) AS bits, g.jaccard, true AS acted
       FROM g JOIN g k ON k.id = g.keep_id
      WHERE g.keep_id <> g.id
     UNION ALL
     SELECT g.id, c.keep_id, %1$s.simhash_hamming(g.fp, c.fp), g.near_jaccard, false
       FROM g JOIN g c ON c.id = g.near_id
      WHERE g.keep_id = g.id AND NOT EXISTS (SELECT 1 FROM g x WHERE x.keep_id = g.id AND x.id <> g.id)',
    ext);
  SELECT count(*) INTO n FROM pg_temp.simhash_dedup_decided WHERE NOT acted;
  RETURN n;
END
$decide$;

-- Review: every row of every group (its kept row, the rows that would go,
-- and the candidates verification left alone), with the distance in bits to
-- the kept row, the exact similarity when verifying, and the shown columns,
-- into pg_temp.simhash_dedup_review, numbered (column n) so that the group
-- whose least similar member would go comes first and, within a group, the
-- kept row, then the rows that would go from the least similar, then the rows
-- verification left alone from the most similar; groups with nothing to
-- remove (every candidate left alone) come last. The shown columns are
-- fetched by id (on Citus, from the workers), as verification does. With
-- report_table, the same rows go into that new table too. Returns the rows.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_review(tbl regclass)
RETURNS bigint LANGUAGE plpgsql AS $review$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  show text := current_setting('simhash_dedup.show');
  report_table text := current_setting('simhash_dedup.report_table');
  verify bool := current_setting('simhash_dedup.verify_column') <> '';
  gone text := CASE current_setting('simhash_dedup.action') WHEN 'flag' THEN 'flagged'
                    WHEN 'delete' THEN 'deleted' ELSE 'duplicate' END;
  n bigint;
BEGIN
  EXECUTE format(
    'CREATE TEMP TABLE simhash_dedup_review ON COMMIT DROP AS
     WITH m AS (SELECT keep_id, id, CASE WHEN acted THEN %1$L ELSE ''left alone'' END AS role, bits, jaccard
                FROM pg_temp.simhash_dedup_decided
                UNION ALL
                SELECT DISTINCT keep_id, keep_id, ''kept'', 0, NULL::float8 FROM pg_temp.simhash_dedup_decided),
          o AS (SELECT m.*,
                       -- the group by its least similar row that would go; groups of
                       -- candidates all left alone after every other
                       coalesce(min(coalesce(jaccard, 1)) FILTER (WHERE role = %1$L) OVER w, 2) AS g_jaccard,
                       max(bits) FILTER (WHERE role = %1$L) OVER w AS g_bits
                FROM m WINDOW w AS (PARTITION BY keep_id))
     SELECT row_number() OVER (ORDER BY g_jaccard, g_bits DESC NULLS LAST, o.keep_id,
                                        -- the kept row, the rows that go (least similar
                                        -- first), the rows left alone (most similar first)
                                        CASE o.role WHEN ''kept'' THEN 0 WHEN %1$L THEN 1 ELSE 2 END,
                                        CASE WHEN o.role = %1$L THEN coalesce(o.jaccard, 1) ELSE -o.jaccard END,
                                        o.bits DESC, o.id) AS n,
            o.keep_id AS kept_id, o.id, o.role, o.bits%2$s%3$s
     FROM o JOIN %4$s t ON t.%5$I = o.id',
    gone, CASE WHEN verify THEN ', round(o.jaccard::numeric, 3) AS jaccard' ELSE '' END,
    CASE WHEN show = '' THEN '' ELSE ', ' || show END,
    tbl, id_col);
  GET DIAGNOSTICS n = ROW_COUNT;
  IF report_table <> '' THEN
    EXECUTE format('CREATE TABLE %s AS SELECT * FROM pg_temp.simhash_dedup_review ORDER BY n', report_table);
  END IF;
  RETURN n;
END
$review$;

-- Archive: before the script deletes, every row it is about to delete is
-- copied whole into the archive table (created LIKE the table the first
-- time), with the id of the row kept for it (simhash_kept_id), the distance
-- (simhash_bits), the similarity when verifying (simhash_jaccard) and the
-- time of the run (simhash_removed_at). Same transaction as the delete, and
-- the table is locked against writes, so the copy is what is deleted (the
-- scripts check the counts). examples/dedup_restore.sql puts rows back.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_archive(tbl regclass)
RETURNS bigint LANGUAGE plpgsql AS $archive$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  archive text := current_setting('simhash_dedup.archive_table');
  cols text;
  n bigint;
BEGIN
  IF to_regclass(archive) IS NULL THEN
    EXECUTE format('CREATE TABLE %s (LIKE %s)', archive, tbl);
    EXECUTE format('ALTER TABLE %s ADD COLUMN simhash_kept_id bigint, ADD COLUMN simhash_bits int,
                    ADD COLUMN simhash_jaccard float8, ADD COLUMN simhash_removed_at timestamptz', archive);
  END IF;
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped;
  EXECUTE format('INSERT INTO %1$s (%2$s, simhash_kept_id, simhash_bits, simhash_jaccard, simhash_removed_at)
                  SELECT %3$s, d.keep_id, d.bits, d.jaccard, now()
                  FROM %4$s t JOIN pg_temp.simhash_dedup_decided d ON t.%5$I = d.id
                  WHERE d.acted',
                 archive, cols,
                 (SELECT string_agg('t.' || quote_ident(a.attname), ', ' ORDER BY a.attnum)
                    FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped),
                 tbl, id_col);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN n;
END
$archive$;

-- The ids must be unique: the groups name rows by id, and the delete or
-- flag acts by id, on rows without a fingerprint too (a row without one
-- that shared an id with a removed row would go with it). Checked over the
-- whole table, after the scripts lock it, unless a unique index on the id
-- alone says so.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_check_ids(tbl regclass, id_col text)
RETURNS void LANGUAGE plpgsql AS $ids$
DECLARE
  dup_id bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
              WHERE i.indrelid = tbl AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL
                AND i.indexprs IS NULL AND a.attname = id_col) THEN
    RETURN;
  END IF;
  EXECUTE format('SELECT %1$I FROM %2$s WHERE %1$I IS NOT NULL GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 1',
                 id_col, tbl) INTO dup_id;
  IF dup_id IS NOT NULL THEN
    RAISE EXCEPTION 'id % occurs more than once in %', dup_id, tbl
      USING HINT = 'The rows are deleted or flagged by id: every row needs a unique id (a unique index on the id column skips this check).';
  END IF;
END
$ids$;

-- The checks of the variables, in the order they have always run (so a run
-- with several bad values reports the same one first), split by what they
-- check: each returns what it concluded, and the DO block at the end passes
-- it on as settings. First the variables checked without the table's
-- columns: misspelt names, the table (which must exist), radius, method,
-- action and keep, and the keep column (the id unless given; longest and
-- shortest need one). Returns the table and the keep column.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_check_vars(OUT tbl regclass, OUT keep_col text)
LANGUAGE plpgsql AS $vars$
DECLARE
  tbl_name text := current_setting('simhash_dedup.table');
  id_col text := current_setting('simhash_dedup.id_column');
  radius_text text := current_setting('simhash_dedup.radius');
  method text := current_setting('simhash_dedup.method');
  keep text := current_setting('simhash_dedup.keep');
  action text := current_setting('simhash_dedup.action');
BEGIN
  keep_col := current_setting('simhash_dedup.keep_column');
  IF current_setting('simhash_dedup.unknown') <> '' THEN
    RAISE EXCEPTION 'unknown variable %', current_setting('simhash_dedup.unknown')
      USING HINT = 'The variables of examples/dedup.sql and examples/dedup_pairs.sql: table, id_column, fp_column, radius, method, keep, keep_column, action, flag_column, verify_column, verify_threshold, verify_size, verify_features, show, report_table, report_rows, archive, archive_table, and blocks (dedup_pairs.sql); see doc/dedup.md.';
  END IF;
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
END
$vars$;

-- Then the columns the grouping reads: the id, fingerprint and keep columns
-- exist, the extension is installed, the fingerprint is a simhash, the flag
-- column a bigint, the verify column a text (with the other verification
-- values beside it), the id an integer. Separate from the checks above,
-- which need no column of the table. Returns the extension's schema.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_check_columns(tbl regclass, keep_col text)
RETURNS text LANGUAGE plpgsql AS $columns$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  fp_col text := current_setting('simhash_dedup.fp_column');
  action text := current_setting('simhash_dedup.action');
  flag_col text := current_setting('simhash_dedup.flag_column');
  verify_col text := current_setting('simhash_dedup.verify_column');
  verify_thr text := current_setting('simhash_dedup.verify_threshold');
  verify_size text := current_setting('simhash_dedup.verify_size');
  verify_features text := current_setting('simhash_dedup.verify_features');
  ext_schema text;
  col text;
  typ text;
BEGIN
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
  IF verify_features NOT IN ('mixed', 'words', 'chars') THEN
    RAISE EXCEPTION 'verify_features "%" is not a simhash_jaccard feature mode', verify_features
      USING HINT = 'Use mixed (word n-grams, character 3-grams of Han, Kana, Thai: the default), words (word n-grams) or chars (character n-grams).';
  END IF;

  -- the id: an integer (the scripts keep ids as bigint)
  SELECT format_type(a.atttypid, NULL) INTO typ FROM pg_attribute a
   WHERE a.attrelid = tbl AND a.attname = id_col AND a.attnum > 0 AND NOT a.attisdropped;
  IF typ NOT IN ('bigint', 'integer', 'smallint') THEN
    RAISE EXCEPTION 'id_column % of % is of type %, not an integer', quote_ident(id_col), tbl, typ
      USING HINT = format('The scripts need a unique integer id. To add one: ALTER TABLE %s ADD COLUMN dedup_id bigint GENERATED ALWAYS AS IDENTITY; then -v id_column=dedup_id', tbl);
  END IF;
  RETURN ext_schema;
END
$columns$;

-- Then the report's variables: show (column names as in SQL, parsed and
-- checked against the table and the review's own columns), report_table (a
-- new table) and report_rows (all or a number). Separate because they shape
-- only the review, not the grouping. Returns each as the review uses it:
-- show as the review selects it (t."col", ...), report_table quoted, and
-- report_rows a number ('' = all).
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_check_report(tbl regclass, OUT show text,
                                                             OUT report_table text, OUT report_rows text)
LANGUAGE plpgsql AS $report$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  show_cols text[];
  rel_parts text[];
  col text;
BEGIN
  show := current_setting('simhash_dedup.show');
  report_table := current_setting('simhash_dedup.report_table');
  report_rows := current_setting('simhash_dedup.report_rows');
  -- show: column names, comma-separated, each as in SQL ("Title", url)
  IF show !~ '^\s*$' THEN
    SELECT array_agg(CASE WHEN m[1] ~ '^"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"')
                          ELSE lower(m[1]) END ORDER BY ord)
      INTO show_cols
      FROM regexp_matches(show, '\s*("(?:[^"]|"")*"|[^,"\s][^,]*?)\s*(?:,|$)', 'g') WITH ORDINALITY r(m, ord);
    IF show_cols IS NULL THEN
      RAISE EXCEPTION 'show "%" is not a list of column names separated by commas', show;
    END IF;
    FOREACH col IN ARRAY show_cols LOOP
      IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col
                       AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'table % has no column % (show)', tbl, quote_ident(col);
      END IF;
      IF col IN ('n', 'kept_id', 'id', 'role', 'bits', 'jaccard') AND col <> id_col THEN
        RAISE EXCEPTION 'show column % has the name of a column of the review (n, kept_id, id, role, bits, jaccard)', quote_ident(col)
          USING HINT = 'Show it through a view that renames it.';
      END IF;
    END LOOP;
    -- as the review selects them: t."col", ...
    show := coalesce(array_to_string(array(SELECT 't.' || quote_ident(c) FROM unnest(show_cols) c WHERE c <> id_col), ', '), '');
  ELSE
    show := '';
  END IF;

  -- report_table: a new table's name, as in SQL
  IF report_table !~ '^\s*$' THEN
    rel_parts := parse_ident(report_table);
    report_table := array_to_string(array(SELECT quote_ident(x) FROM unnest(rel_parts) x), '.');
    IF to_regclass(report_table) IS NOT NULL THEN
      RAISE EXCEPTION 'report_table % already exists', report_table
        USING HINT = 'Drop it, or name another table.';
    END IF;
  ELSE
    report_table := '';
  END IF;

  -- report_rows: how many rows of the review report mode prints
  IF report_rows ~ '^\s*all\s*$' THEN
    report_rows := '';
  ELSIF report_rows ~ '^\s*\d{1,18}\s*$' THEN
    report_rows := trim(report_rows);
  ELSE
    RAISE EXCEPTION 'report_rows "%" is not all or a number of rows', report_rows;
  END IF;
END
$report$;

-- Last the archive of deleted rows: on by default, as <table>_dedup_archive
-- beside the table. Separate because it is the one check that compares two
-- tables (an archive from an earlier run must hold every column of the table,
-- and the table must not have the archive's own column names), and the only
-- one whose error carries a generated ALTER TABLE. Returns the archive
-- table, quoted ('' = archive=off).
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_check_archive(tbl regclass)
RETURNS text LANGUAGE plpgsql AS $checkarchive$
DECLARE
  action text := current_setting('simhash_dedup.action');
  archive text := current_setting('simhash_dedup.archive');
  archive_table text := current_setting('simhash_dedup.archive_table');
  rel_parts text[];
  col text;
  typ text;
BEGIN
  IF archive NOT IN ('on', 'off') THEN
    RAISE EXCEPTION 'archive "%" is not on or off', archive;
  END IF;
  IF archive = 'off' THEN
    archive_table := '';
  ELSE
    IF archive_table ~ '^\s*$' THEN
      SELECT format('%I.%I', n.nspname, left(c.relname, 49) || '_dedup_archive') INTO archive_table
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    ELSE
      rel_parts := parse_ident(archive_table);
      archive_table := array_to_string(array(SELECT quote_ident(x) FROM unnest(rel_parts) x), '.');
    END IF;
    IF to_regclass(archive_table) = tbl THEN
      RAISE EXCEPTION 'archive_table % is the table itself', archive_table;
    END IF;
    -- an archive from an earlier run must hold every column of the table, and ours
    IF action = 'delete' AND to_regclass(archive_table) IS NOT NULL THEN
      -- in the table's column order, then ours (an anti join may return them in any order)
      SELECT string_agg(quote_ident(c), ', ' ORDER BY o) INTO col
        FROM (SELECT a.attname::text, a.attnum::int FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
              UNION ALL SELECT c, 10000 + k FROM unnest(ARRAY['simhash_kept_id', 'simhash_bits', 'simhash_jaccard', 'simhash_removed_at'])
                                   WITH ORDINALITY u(c, k)) w(c, o)
       WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = to_regclass(archive_table)
                           AND a.attname = w.c AND a.attnum > 0 AND NOT a.attisdropped);
      IF col IS NOT NULL THEN
        -- what adds them: the table's columns with their types (a generated column is a
        -- plain one in the archive), then ours
        SELECT string_agg(format('ADD COLUMN %I %s', c, t), ', ' ORDER BY o) INTO typ
          FROM (SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnum::int
                  FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
                UNION ALL SELECT c, t, 10000 + k
                  FROM unnest(ARRAY['simhash_kept_id', 'simhash_bits', 'simhash_jaccard', 'simhash_removed_at'],
                              ARRAY['bigint', 'integer', 'double precision', 'timestamp with time zone'])
                       WITH ORDINALITY u(c, t, k)) w(c, t, o)
         WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = to_regclass(archive_table)
                             AND a.attname = w.c AND a.attnum > 0 AND NOT a.attisdropped);
        RAISE EXCEPTION 'archive_table % lacks the columns %', archive_table, col
          USING HINT = format('The archive was created before the table gained them. Add them (ALTER TABLE %s %s), or put its rows back first (psql -v table=%s -v restore=all -f examples/dedup_restore.sql drops the archive it empties), or name another archive (-v archive_table=NAME): the script creates it.',
                              archive_table, typ, tbl);
      END IF;
    END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
               AND a.attname IN ('simhash_kept_id', 'simhash_bits', 'simhash_jaccard', 'simhash_removed_at'))
     AND archive_table <> '' AND action = 'delete' THEN
    RAISE EXCEPTION 'table % has a column named like the archive''s own (simhash_kept_id, simhash_bits, simhash_jaccard, simhash_removed_at)', tbl
      USING HINT = 'Run with -v archive=off, or rename the column.';
  END IF;
  RETURN archive_table;
END
$checkarchive$;

-- The checks in their order (each function above raises its own errors),
-- then their conclusions as the settings the scripts read.
DO $settings$
DECLARE
  keep text := current_setting('simhash_dedup.keep');
  action text := current_setting('simhash_dedup.action');
  vars record;
  report record;
  ext_schema text;
  archive_table text;
  typ text;
BEGIN
  vars := pg_temp.simhash_dedup_check_vars();
  ext_schema := pg_temp.simhash_dedup_check_columns(vars.tbl, vars.keep_col);
  report := pg_temp.simhash_dedup_check_report(vars.tbl);
  archive_table := pg_temp.simhash_dedup_check_archive(vars.tbl);

  -- the keep column's type, with its collation when it is not the type's own (the order of
  -- its values must be the column's)
  SELECT format_type(a.atttypid, a.atttypmod) ||
         CASE WHEN a.attcollation <> t.typcollation
              THEN format(' COLLATE %I.%I', cn.nspname, c.collname) ELSE '' END
    INTO typ
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_collation c ON c.oid = a.attcollation
    LEFT JOIN pg_namespace cn ON cn.oid = c.collnamespace
   WHERE a.attrelid = vars.tbl AND a.attname = vars.keep_col;
  PERFORM set_config('simhash_dedup.show', report.show, true),
          set_config('simhash_dedup.report_rows', report.report_rows, true),
          -- the review is built when it is printed or kept
          set_config('simhash_dedup.review',
                     (action = 'report' AND report.report_rows <> '0' OR report.report_table <> '')::text, true),
          set_config('simhash_dedup.report_table', report.report_table, true),
          set_config('simhash_dedup.archive_table', archive_table, true),
          set_config('simhash_dedup.relation', vars.tbl::text, true),
          set_config('simhash_dedup.ext_schema', ext_schema, true),
          set_config('simhash_dedup.keep_column', vars.keep_col, true),
          set_config('simhash_dedup.keep_expr',
                     CASE WHEN keep IN ('longest', 'shortest') THEN format('length(%I::text)', vars.keep_col)
                          ELSE format('%I', vars.keep_col) END, true),
          set_config('simhash_dedup.keep_dir', CASE WHEN keep IN ('first', 'shortest') THEN 'ASC' ELSE 'DESC' END, true),
          set_config('simhash_dedup.keep_type', CASE WHEN keep IN ('longest', 'shortest') THEN 'integer' ELSE typ END, true);
END
$settings$;
