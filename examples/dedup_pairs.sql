-- examples/dedup_pairs.sql: remove (or flag) the near-duplicates of a table,
-- keeping one row per group, by finding the pairs within the radius as an
-- search of each pigeonhole key's rows (simhash_key_pack, simhash_pack_partners)
-- instead of the window functions. Written for Citus distributed tables, where it keeps the rows
-- on the workers: only the pairs (and their ids) reach the coordinator. It
-- works on a plain table too, where the key join can run as a parallel hash
-- join. Run with psql, with the variables of examples/dedup.sql:
--
--   psql -v table=docs -v radius=3 -f examples/dedup_pairs.sql                  # report only
--   psql -v table=docs -v radius=3 -v keep=longest -v keep_column=body \
--        -v action=delete -f examples/dedup_pairs.sql
--
-- psql variables: table, id_column, fp_column, radius, method, keep,
-- keep_column, action, flag_column, verify_column, verify_threshold,
-- verify_size, verify_features, show, report_rows, report_table, archive, archive_table as in
-- examples/dedup.sql (the same rules, the same groups, the same
-- groups formed on verified pairs), and
--   blocks       the number of blocks m (radius + 1 .. 64) the keys are cut
--                from; default: the m with the least work for the table's
--                number of distinct fingerprints (see below)
--
-- How (each step a statement that Citus runs on the workers, unless said):
--   1. the rows with a fingerprint, as (fp, id, keep value), are spread by
--      a bucket of the fingerprint (a hash of it); rows with the same
--      fingerprint are one group whatever the radius, so each fingerprint's
--      first row in the keep order stands for all of them (and exact copies
--      cost nothing below);
--   2. each distinct fingerprint's C(m, radius) keys, packed per bucket
--      into one bytea per target (simhash_key_pack: a key's target is a
--      hash of it), and the packs spread by target: a few thousand rows
--      where a row per key made millions;
--   3. each target's packs searched in memory (simhash_pack_partners: the
--      rows of each key compared, each pair once, in its first shared key),
--      shard-local; the rows in pairs with their partners are spread back
--      by bucket; the rows in them with their keep value go to the
--      coordinator;
--   4. on the coordinator: simhash_pair_groups reads the pairs as the
--      workers send them and takes the ids in the keep order (the window
--      functions' rules: the same groups as examples/dedup.sql);
--   5. every row with its kept row, spread back like the table, and the
--      delete or flag, shard by shard.
-- Work per distinct fingerprint: C(m, r) keys, each sharing its key with
-- about n / 2^(64 (m - r) / m) of n random fingerprints, searched in memory by
-- multi-index hashing, where fewer, larger keys cost less than more, smaller
-- ones: the script takes the fewest keys (m = r + 1) while a key's expected
-- rows stay under 100,000, more blocks beyond (r = 3: 4 keys to billions of
-- rows; r = 8: 9 keys to about 13M distinct fingerprints, then 45).
--
-- Guarantees, as examples/dedup.sql: identifiers quoted; the table locked
-- against concurrent writes (SHARE ROW EXCLUSIVE) for the transaction; NULL
-- fingerprints never touched; the kept row of a group never deleted; a second
-- run changes nothing; on any error nothing changes. The work tables are
-- temporary on a plain table; on a distributed table they are distributed
-- tables named simhash_dedup_*_<backend pid> in the table's schema, created
-- and dropped in the transaction (the role needs CREATE there).
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
\if :{?blocks}
\else
\set blocks ''
\endif
SELECT set_config('simhash_dedup.blocks', :'blocks', true) \gset simhash_dedup_ignored_

-- The steps of the list above, one function each, called in order by the DO
-- block below; each takes the work tables it reads and writes (so its
-- signature says what it touches) and reads the rest from the settings when
-- called. They run on the coordinator, as the block does; the statements
-- they send are the block's, unchanged. Defined in the transaction, as the
-- helpers of examples/dedup_settings.sql are, once its checks have passed:
-- after a failed check (psql's ERROR is then set by the statement above) the
-- transaction is aborted, and each definition would only add an error of
-- its own.
\if :ERROR
\else
-- The work tables: temporary ones on a plain table, on a hash-distributed
-- Citus table distributed tables named after the backend in the table's
-- schema; named, created and distributed here, apart from the steps,
-- because Citus distributes a table in a transaction only before any
-- statement touches the shards. Refuses the other Citus table kinds.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_work(tbl regclass, OUT distributed bool,
    OUT w_rows text, OUT w_reps text, OUT w_keys text, OUT w_win text, OUT w_groups text, OUT w_drop text)
LANGUAGE plpgsql AS $work$
DECLARE
  ext text := quote_ident(current_setting('simhash_dedup.ext_schema'));
  id_col text := current_setting('simhash_dedup.id_column');
  keep_type text := current_setting('simhash_dedup.keep_type');
  id_type text;
  part_method text;
  dist_col text;
  schema_name text;
BEGIN
  distributed := false;
  -- (examples/dedup_settings.sql checked that the id is an integer)
  SELECT format_type(a.atttypid, a.atttypmod), n.nspname INTO id_type, schema_name
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE a.attrelid = tbl AND a.attname = id_col;

  -- a Citus table? (hash-distributed: work on the workers; other Citus kinds: refuse)
  IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
    EXECUTE 'SELECT partmethod::text, column_to_column_name(logicalrelid, partkey)
               FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1'
      INTO part_method, dist_col USING tbl;
    IF part_method IS NOT NULL AND part_method <> 'h' THEN
      RAISE EXCEPTION '% is a Citus table that is not hash-distributed', tbl
        USING HINT = 'Reference and single-shard tables live on one node: use examples/dedup.sql.';
    END IF;
    distributed := part_method = 'h';
  END IF;

  IF distributed THEN
    w_rows := format('%I.%I', schema_name, 'simhash_dedup_rows_' || pg_backend_pid());
    w_reps := format('%I.%I', schema_name, 'simhash_dedup_reps_' || pg_backend_pid());
    w_keys := format('%I.%I', schema_name, 'simhash_dedup_keys_' || pg_backend_pid());
    w_win := format('%I.%I', schema_name, 'simhash_dedup_paired_' || pg_backend_pid());
    w_groups := format('%I.%I', schema_name, 'simhash_dedup_kept_' || pg_backend_pid());
    w_drop := format('%I.%I', schema_name, 'simhash_dedup_drop_' || pg_backend_pid());
  ELSE
    w_rows := 'pg_temp.simhash_dedup_rows';
    w_reps := 'pg_temp.simhash_dedup_reps';
    w_keys := 'pg_temp.simhash_dedup_keys';
    w_win := 'pg_temp.simhash_dedup_paired';
    w_groups := 'pg_temp.simhash_dedup_kept';
    w_drop := 'pg_temp.simhash_dedup_drop';
  END IF;
  PERFORM set_config('simhash_dedup.drop_table', w_drop, true),
          set_config('simhash_dedup.work_tables',
                     CASE WHEN distributed THEN concat_ws(', ', w_rows, w_reps, w_keys, w_win, w_groups, w_drop) ELSE '' END, true);

  -- the work tables, all created before any statement touches the shards
  -- (Citus distributes a table in a transaction only before parallel work)
  EXECUTE format('CREATE %s TABLE %s (bucket int, fpkey bigint, id bigint, ord %s, fp %s.simhash) %s',
                 CASE WHEN distributed THEN '' ELSE 'TEMP' END, w_rows, keep_type, ext,
                 CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  EXECUTE format('CREATE %s TABLE %s (LIKE %s) %s', CASE WHEN distributed THEN '' ELSE 'TEMP' END,
                 w_reps, w_rows, CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  -- packs are hashes and ids: not worth compressing
  EXECUTE format('CREATE %s TABLE %s (target int, pack bytea) %s',
                 CASE WHEN distributed THEN '' ELSE 'TEMP' END, w_keys,
                 CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  EXECUTE format('ALTER TABLE %s ALTER pack SET STORAGE EXTERNAL', w_keys);
  EXECUTE format('CREATE %s TABLE %s (bucket int, id bigint, fpkey bigint, partners bigint[]) %s',
                 CASE WHEN distributed THEN '' ELSE 'TEMP' END, w_win,
                 CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  EXECUTE format('CREATE %s TABLE %s (bucket int, fpkey bigint, keep_id bigint, keep_fp %s.simhash) %s',
                 CASE WHEN distributed THEN '' ELSE 'TEMP' END, w_groups, ext,
                 CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  EXECUTE format('CREATE %s TABLE %s (id %s, keep_id bigint, bits int) %s',
                 CASE WHEN distributed THEN '' ELSE 'TEMP' END, w_drop, id_type,
                 CASE WHEN distributed THEN '' ELSE 'ON COMMIT DROP' END);
  IF distributed THEN
    EXECUTE 'SELECT create_distributed_table($1, ''bucket'', colocate_with := ''none'')' USING w_rows::regclass;
    EXECUTE 'SELECT create_distributed_table($1, ''bucket'', colocate_with := $2)' USING w_reps::regclass, w_rows;
    EXECUTE 'SELECT create_distributed_table($1, ''bucket'', colocate_with := $2)' USING w_groups::regclass, w_rows;
    EXECUTE 'SELECT create_distributed_table($1, ''bucket'', colocate_with := $2)' USING w_win::regclass, w_rows;
    EXECUTE 'SELECT create_distributed_table($1, ''target'', colocate_with := ''none'')' USING w_keys::regclass;
    -- the rows to act on, placed like the table when it is spread by the id,
    -- else copied to every node (a reference table) to join with any shard
    IF dist_col = id_col THEN
      EXECUTE 'SELECT create_distributed_table($1, ''id'', colocate_with := $2)' USING w_drop::regclass, tbl::text;
    ELSE
      EXECUTE 'SELECT create_reference_table($1)' USING w_drop::regclass;
    END IF;
  END IF;
END
$work$;

-- 1. the rows with a fingerprint into w_rows, and each fingerprint's first
-- row in the keep order into w_reps. Returns the counts the summary reports
-- and the number of buckets, which steps 3 and 4 spread by again.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_rows(tbl regclass, distributed bool, w_rows text, w_reps text,
    OUT n_rows bigint, OUT n_fp bigint, OUT n_distinct bigint, OUT n_buckets bigint)
LANGUAGE plpgsql AS $rows$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  fp_col text := current_setting('simhash_dedup.fp_column');
  keep_expr text := current_setting('simhash_dedup.keep_expr');
  ord text := format('ord %s NULLS LAST, id', current_setting('simhash_dedup.keep_dir'));
BEGIN
  EXECUTE format('SELECT count(*) FROM %s', tbl) INTO n_rows;
  -- buckets (a power of two) of about 20,000 rows: the groups keys are
  -- packed in; on Citus at least 256, so that they spread evenly over the shards
  n_buckets := 1;
  WHILE n_buckets < greatest(n_rows / 20000, CASE WHEN distributed THEN 256 ELSE 1 END) LOOP
    n_buckets := n_buckets * 2;
  END LOOP;
  EXECUTE format('INSERT INTO %s SELECT hashint8(%2$I::bigint) & %6$s, %2$I::bigint, %3$I, %4$s, %2$I
                  FROM %5$s WHERE %2$I IS NOT NULL',
                 w_rows, fp_col, id_col, keep_expr, tbl, n_buckets - 1);
  GET DIAGNOSTICS n_fp = ROW_COUNT;
  EXECUTE format('INSERT INTO %s SELECT DISTINCT ON (bucket, fpkey) * FROM %s ORDER BY bucket, fpkey, %s',
                 w_reps, w_rows, ord);
  GET DIAGNOSTICS n_distinct = ROW_COUNT;
END
$rows$;

-- 2. the number of blocks m and each distinct fingerprint's keys, packed
-- per bucket into w_keys by target. Separate from step 3 because it is the
-- one that chooses m (given, or computed from the number of distinct
-- fingerprints), which step 3 and the summary use: returns m and the keys
-- per fingerprint, C(m, radius).
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_keys(distributed bool, n_distinct bigint, w_reps text, w_keys text,
    OUT m int, OUT keys_per_fp numeric)
LANGUAGE plpgsql AS $keys$
DECLARE
  ext text := quote_ident(current_setting('simhash_dedup.ext_schema'));
  radius int := current_setting('simhash_dedup.radius')::int;
  blocks_text text := current_setting('simhash_dedup.blocks');
  n_targets bigint;
BEGIN
  -- the number of blocks: given, or the fewest keys whose expected rows
  -- per key among random fingerprints stay under 100,000 (measured, 2M rows
  -- on Citus at radius 8: 9 keys 33.5 s, 45 keys 51.1 s, 165 keys 88.4 s)
  IF blocks_text <> '' THEN
    IF blocks_text !~ '^\s*\d{1,2}\s*$' THEN
      RAISE EXCEPTION 'blocks "%" is not a number of blocks from radius + 1 = % to 64', blocks_text, radius + 1;
    END IF;
    m := blocks_text::int;  -- simhash_blocks checks the range
  ELSE
    FOR mm IN radius + 1 .. 64 LOOP
      keys_per_fp := 1;
      FOR i IN 1 .. radius LOOP
        keys_per_fp := keys_per_fp * (mm - radius + i) / i;
      END LOOP;
      EXIT WHEN round(keys_per_fp) > 10000;
      m := mm;
      EXIT WHEN greatest(n_distinct, 1) / power(2::numeric, 64.0 * (mm - radius) / mm) <= 100000;
    END LOOP;
  END IF;
  keys_per_fp := 1;
  FOR i IN 1 .. radius LOOP
    keys_per_fp := keys_per_fp * (m - radius + i) / i;
  END LOOP;
  -- targets of at most about 500,000 keys (30 MB searched at once); on
  -- Citus at least 256, so that they spread evenly over the shards
  n_targets := greatest(ceil(n_distinct * keys_per_fp / 500000),
                        CASE WHEN distributed THEN 256 ELSE 1 END);
  -- (sorted by bucket: the aggregate packs one bucket at a time; hashed it
  -- would hold the keys of all the shard's buckets at once)
  EXECUTE format('INSERT INTO %s
                  SELECT t.n - 1, t.pack
                  FROM (SELECT %s.simhash_key_pack(id, fp, %s, %s, %s) AS packs
                        FROM (SELECT id, fp, bucket FROM %s ORDER BY bucket) o GROUP BY bucket) s,
                       unnest(s.packs) WITH ORDINALITY t(pack, n)
                  WHERE t.pack IS NOT NULL',
                 w_keys, ext, radius, m, n_targets, w_reps);
END
$keys$;

-- 3. the pairs within the radius, each once: every target's keys searched
-- in memory, on the shard that holds the target; kept in w_win are the
-- rows in a pair, with their partners, spread by bucket again. Returns the
-- number of pairs.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_find(n_buckets bigint, m int, w_keys text, w_win text)
RETURNS bigint LANGUAGE plpgsql AS $find$
DECLARE
  ext text := quote_ident(current_setting('simhash_dedup.ext_schema'));
  radius int := current_setting('simhash_dedup.radius')::int;
  n_pairs bigint;
BEGIN
  EXECUTE format('INSERT INTO %1$s
                  SELECT hashint8(p.fp::bigint) & %2$s, p.id, p.fp::bigint, p.partners
                  FROM (SELECT target, array_agg(pack) AS packs FROM %3$s GROUP BY target) s,
                       %4$s.simhash_pack_partners(s.packs, %5$s, %6$s) p',
                 w_win, n_buckets - 1, w_keys, ext, radius, m);
  -- (each pair is in the partners of both its rows, on the one target that found it)
  EXECUTE format('SELECT coalesce(sum(cardinality(partners)), 0) / 2 FROM %s', w_win) INTO n_pairs;
  RETURN n_pairs;
END
$find$;

-- 4v. with verify_column, grouping on verified pairs, on the coordinator:
-- the rows with a candidate (a fingerprint in a pair, or shared with
-- another row), their text fetched by id (on Citus, from the workers),
-- grouped by the same window function as examples/dedup.sql in the same
-- order; a row without a candidate is a group of its own there too, so the
-- groups are the same (two statements, each a join on the bucket that
-- Citus runs shard by shard; a row of a shared fingerprint in a pair comes
-- twice). The rows to act on go into w_drop. Separate from step 4, which
-- groups the pairs without texts. Returns the rows left alone and the rows
-- to act on.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_verified(tbl regclass, w_rows text, w_win text, w_drop text,
    OUT n_rejected bigint, OUT n_dups bigint)
LANGUAGE plpgsql AS $verified$
DECLARE
  ext text := quote_ident(current_setting('simhash_dedup.ext_schema'));
  id_col text := current_setting('simhash_dedup.id_column');
  radius int := current_setting('simhash_dedup.radius')::int;
  method text := current_setting('simhash_dedup.method');
  verify_col text := current_setting('simhash_dedup.verify_column');
  verify_thr float8 := current_setting('simhash_dedup.verify_threshold')::float8;
BEGIN
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_cand ON COMMIT DROP AS
                  SELECT r.id, r.ord, r.fp FROM %1$s r
                  JOIN (SELECT DISTINCT bucket, fpkey FROM %2$s) w USING (bucket, fpkey)',
                 w_rows, w_win);
  EXECUTE format('INSERT INTO pg_temp.simhash_dedup_cand
                  SELECT r.id, r.ord, r.fp FROM %1$s r
                  JOIN (SELECT bucket, fpkey FROM %1$s GROUP BY bucket, fpkey HAVING count(*) > 1) s
                    USING (bucket, fpkey)',
                 w_rows);
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_text ON COMMIT DROP AS
                  SELECT c.id, t.%2$I::text AS body
                  FROM (SELECT DISTINCT id FROM pg_temp.simhash_dedup_cand) c JOIN %1$s t ON t.%3$I = c.id',
                 tbl, verify_col, id_col);
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_members ON COMMIT DROP AS
                  SELECT c.id, c.fp,
                         %1$s.%2$I(c.id, c.fp, %3$s, b.body, %4$s, %7$L, %5$s) OVER (ORDER BY %6$s) AS m
                  FROM (SELECT DISTINCT ON (id) * FROM pg_temp.simhash_dedup_cand) c
                  LEFT JOIN pg_temp.simhash_dedup_text b USING (id)',
                 ext, CASE method WHEN 'leader' THEN 'simhash_leader' ELSE 'simhash_component' END,
                 radius, verify_thr, current_setting('simhash_dedup.verify_size')::int,
                 format('c.ord %s NULLS LAST, c.id', current_setting('simhash_dedup.keep_dir')),
                 current_setting('simhash_dedup.verify_features'));
  n_rejected := pg_temp.simhash_dedup_decide_verified(ext);
  EXECUTE format('INSERT INTO %s SELECT id, keep_id, bits FROM pg_temp.simhash_dedup_decided WHERE acted',
                 w_drop);
  GET DIAGNOSTICS n_dups = ROW_COUNT;
END
$verified$;

-- 4. without verification, on the coordinator: the ids in pairs with their
-- keep value, and the groups of the pairs, read straight from the workers,
-- the ids taken in the keep order, into w_groups; 5. every row that is not
-- kept, with its kept row, into w_drop, and the decision. Returns the rows
-- to act on.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_groups(n_buckets bigint, w_rows text, w_reps text, w_win text,
                                                             w_groups text, w_drop text)
RETURNS bigint LANGUAGE plpgsql AS $groups$
DECLARE
  ext text := quote_ident(current_setting('simhash_dedup.ext_schema'));
  method text := current_setting('simhash_dedup.method');
  ord text := format('ord %s NULLS LAST, id', current_setting('simhash_dedup.keep_dir'));
  n_dups bigint;
BEGIN
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_members ON COMMIT DROP AS
                  SELECT r.id, r.ord, r.fpkey FROM %s r
                  WHERE EXISTS (SELECT 1 FROM %s w WHERE w.bucket = r.bucket AND w.fpkey = r.fpkey)',
                 w_reps, w_win);
  EXECUTE format('INSERT INTO %s
                  SELECT hashint8(r.fpkey) & %s, r.fpkey, k.id, k.fpkey::%s.simhash
                  FROM %s.simhash_pair_groups(%L, %L, %L) g
                  JOIN pg_temp.simhash_dedup_members r ON r.id = g.id
                  JOIN pg_temp.simhash_dedup_members k ON k.id = g.keep_id
                  WHERE g.keep_id <> g.id',
                 w_groups, n_buckets - 1, ext, ext,
                 format('SELECT id, p FROM %s, unnest(partners) p WHERE id < p', w_win), method,
                 format('SELECT id FROM pg_temp.simhash_dedup_members ORDER BY %s', ord));

  -- 5. every row that is not kept, with its kept row: the rows of a
  -- fingerprint follow the row standing for it
  EXECUTE format('INSERT INTO %s
                  SELECT r.id, coalesce(g.keep_id, p.id), %s.simhash_hamming(r.fp, coalesce(g.keep_fp, p.fp))
                  FROM %s r JOIN %s p USING (bucket, fpkey) LEFT JOIN %s g USING (bucket, fpkey)
                  WHERE coalesce(g.keep_id, p.id) <> r.id',
                 w_drop, ext, w_rows, w_reps, w_groups);
  GET DIAGNOSTICS n_dups = ROW_COUNT;
  -- the decision, on the coordinator (the same as examples/dedup.sql's)
  EXECUTE format('CREATE TEMP TABLE simhash_dedup_decided ON COMMIT DROP AS
                  SELECT id::bigint AS id, keep_id, bits, NULL::float8 AS jaccard, true AS acted FROM %s', w_drop);
  RETURN n_dups;
END
$groups$;

-- The action on the rows of w_drop: delete (archived first, unless
-- archive=off, and the counts compared) or flag, shard by shard; nothing
-- in report mode. Separate from the grouping, which is the same for every
-- action. Returns the rows deleted or updated.
CREATE OR REPLACE FUNCTION pg_temp.simhash_dedup_pairs_act(tbl regclass, w_drop text)
RETURNS bigint LANGUAGE plpgsql AS $act$
DECLARE
  id_col text := current_setting('simhash_dedup.id_column');
  fp_col text := current_setting('simhash_dedup.fp_column');
  action text := current_setting('simhash_dedup.action');
  flag_col text := current_setting('simhash_dedup.flag_column');
  n_changed bigint := 0;
  n_more bigint;
  n_archived bigint;
BEGIN
  IF action = 'delete' THEN
    IF current_setting('simhash_dedup.archive_table') <> '' THEN
      n_archived := pg_temp.simhash_dedup_archive(tbl);
    END IF;
    EXECUTE format('DELETE FROM %s t USING %s d WHERE t.%I = d.id', tbl, w_drop, id_col);
    GET DIAGNOSTICS n_changed = ROW_COUNT;
    IF n_archived IS NOT NULL AND n_archived <> n_changed THEN
      RAISE EXCEPTION 'archived % rows but deleted %: nothing done', n_archived, n_changed;
    END IF;
  ELSIF action = 'flag' THEN
    -- rows with a fingerprint that are kept: flag NULL; the others: their kept row
    EXECUTE format('UPDATE %1$s t SET %2$I = NULL
                    WHERE t.%3$I IS NOT NULL AND t.%2$I IS NOT NULL
                      AND NOT EXISTS (SELECT 1 FROM %4$s d WHERE d.id = t.%5$I)',
                   tbl, flag_col, fp_col, w_drop, id_col);
    GET DIAGNOSTICS n_changed = ROW_COUNT;
    EXECUTE format('UPDATE %1$s t SET %2$I = d.keep_id FROM %3$s d
                    WHERE t.%4$I = d.id AND t.%2$I IS DISTINCT FROM d.keep_id',
                   tbl, flag_col, w_drop, id_col);
    GET DIAGNOSTICS n_more = ROW_COUNT;
    n_changed := n_changed + n_more;
  END IF;
  RETURN n_changed;
END
$act$;
\endif

-- The steps in order, then the summary. The step functions are called as
-- assignments (plain expressions, not queries), so the statements they send
-- run as the block's own did, not inside a query of the block's.
DO $pairs$
DECLARE
  tbl regclass := current_setting('simhash_dedup.relation')::regclass;
  radius int := current_setting('simhash_dedup.radius')::int;
  work record;
  fps record;
  blocks record;
  verified record;
  n_pairs bigint; n_groups bigint; n_dups bigint; n_rejected bigint; n_changed bigint;
BEGIN
  IF radius > 63 THEN
    RAISE EXCEPTION 'radius 64 makes every row a near-duplicate of every other: there are no keys to join on'
      USING HINT = 'Use examples/dedup.sql.';
  END IF;
  work := pg_temp.simhash_dedup_pairs_work(tbl);

  -- no concurrent writes while the groups are computed and acted on
  EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
  PERFORM pg_temp.simhash_dedup_check_ids(tbl, current_setting('simhash_dedup.id_column'));

  fps := pg_temp.simhash_dedup_pairs_rows(tbl, work.distributed, work.w_rows, work.w_reps);
  blocks := pg_temp.simhash_dedup_pairs_keys(work.distributed, fps.n_distinct, work.w_reps, work.w_keys);
  n_pairs := pg_temp.simhash_dedup_pairs_find(fps.n_buckets, blocks.m, work.w_keys, work.w_win);
  IF current_setting('simhash_dedup.verify_column') <> '' THEN
    verified := pg_temp.simhash_dedup_pairs_verified(tbl, work.w_rows, work.w_win, work.w_drop);
    n_rejected := verified.n_rejected;
    n_dups := verified.n_dups;
  ELSE
    n_dups := pg_temp.simhash_dedup_pairs_groups(fps.n_buckets, work.w_rows, work.w_reps, work.w_win,
                                                 work.w_groups, work.w_drop);
  END IF;
  EXECUTE format('SELECT count(DISTINCT keep_id) FROM %s', work.w_drop) INTO n_groups;
  IF current_setting('simhash_dedup.review')::bool THEN
    PERFORM pg_temp.simhash_dedup_review(tbl);
  END IF;
  n_changed := pg_temp.simhash_dedup_pairs_act(tbl, work.w_drop);

  RAISE NOTICE '%', pg_temp.simhash_dedup_summary(tbl, fps.n_rows, fps.n_fp, n_groups, n_dups, n_changed, n_rejected);
  RAISE NOTICE 'by pairs: % distinct fingerprint%, % block% (% key% each), % pair% within % bits%',
    fps.n_distinct, CASE WHEN fps.n_distinct = 1 THEN '' ELSE 's' END, blocks.m, CASE WHEN blocks.m = 1 THEN '' ELSE 's' END,
    round(blocks.keys_per_fp), CASE WHEN round(blocks.keys_per_fp) = 1 THEN '' ELSE 's' END,
    n_pairs, CASE WHEN n_pairs = 1 THEN '' ELSE 's' END,
    radius, CASE WHEN work.distributed THEN ', on the workers of ' || tbl::text ELSE '' END;
END
$pairs$;

-- the distributed work tables go with the transaction (temporary ones drop at commit)
SELECT current_setting('simhash_dedup.work_tables') AS simhash_dedup_work \gset
SELECT :'simhash_dedup_work' <> '' AS simhash_dedup_distributed \gset
\if :simhash_dedup_distributed
DROP TABLE :simhash_dedup_work;
\endif

\ir dedup_finish.sql
