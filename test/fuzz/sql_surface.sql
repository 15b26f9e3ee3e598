-- sql_surface.sql: the typed fuzzer of the extension's SQL surface.
--
-- Sets up tables with simhash columns, simhash indexes of several blocks
-- values and the near-duplicate constraint, then defines fz_statements(),
-- which lists from the catalog every function, aggregate, window function,
-- operator and cast the extension owns and returns statements that call each
-- with edge values of its argument types: NULL, 0, -1, 61..65, the integer
-- limits, NaN and the infinities, empty and very large text, empty and NULL
-- arrays and elements, constants on either side of every operator; in
-- select lists, in WHERE clauses (index paths forced and not), in ORDER BY,
-- in joins and under EXPLAIN. test/t/070_sql_fuzz.pl runs them and fails on
-- a lost connection or an internal error (SQLSTATE class XX).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;

CREATE TABLE fz (id bigint PRIMARY KEY, fp simhash, b hamming_ball, body text,
                 words text[], tsv tsvector, w float8[]);
INSERT INTO fz
SELECT g,
       CASE WHEN g % 17 = 0 THEN NULL ELSE ('x' || md5((g % 400)::text))::bit(64)::bigint::simhash END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE simhash_ball(('x' || md5((g % 90)::text))::bit(64)::bigint::simhash, g % 9) END,
       CASE WHEN g % 19 = 0 THEN NULL ELSE 'document ' || (g % 300) || ' about ' || repeat('topic ', g % 5) || 'ende' END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE ARRAY['a' || g % 7, 'b' || g % 11, NULL, 'c'] END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE to_tsvector('simple', 'word' || g % 13 || ' other words here') END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE ARRAY[1.0, g % 3, 0.5, 2] END
FROM generate_series(1, 3000) g;
CREATE INDEX fz_fp ON fz USING simhash (fp);
CREATE INDEX fz_fp1 ON fz USING simhash (fp) WITH (blocks = 1, pending_limit = 64);
CREATE INDEX fz_fp16 ON fz USING simhash (fp) WITH (blocks = 16);
CREATE INDEX fz_expr ON fz USING simhash (simhash(body));
-- an index created empty, whose rows stay pending
CREATE TABLE fz_pend (id bigint, fp simhash, b hamming_ball, body text, words text[],
                      tsv tsvector, w float8[]);
CREATE INDEX fz_pend_fp2 ON fz_pend USING simhash (fp) WITH (blocks = 2, pending_limit = 100000);
INSERT INTO fz_pend SELECT * FROM fz WHERE id <= 500;
-- the near-duplicate constraint
CREATE TABLE fz_ex (id bigint, fp simhash,
                    EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&));
INSERT INTO fz_ex SELECT id, fp FROM fz WHERE id % 3 = 0 AND id < 1200 ON CONFLICT DO NOTHING;
ANALYZE fz, fz_pend, fz_ex;

-- Edge values by type: an expression, and whether it reads a column of fz.
CREATE TABLE fz_val (typ regtype, expr text, col boolean DEFAULT false);
INSERT INTO fz_val (typ, expr, col) VALUES
  ('simhash', 'NULL::simhash', false), ('simhash', $$'0000000000000000'::simhash$$, false),
  ('simhash', $$'ffffffffffffffff'::simhash$$, false), ('simhash', $$'8000000000000001'::simhash$$, false),
  ('simhash', $$'0123456789abcdef'::simhash$$, false), ('simhash', 'fp', true),
  ('simhash', '(SELECT fp FROM fz WHERE id = 2)', false),
  ('hamming_ball', 'NULL::hamming_ball', false), ('hamming_ball', $$'0123456789abcdef/0'::hamming_ball$$, false),
  ('hamming_ball', $$'ffffffffffffffff/64'::hamming_ball$$, false), ('hamming_ball', $$'8000000000000001/3'::hamming_ball$$, false),
  ('hamming_ball', 'b', true), ('hamming_ball', 'simhash_ball(fp, 3)', true),
  ('hamming_ball', $$'0123456789abcdef/62'::hamming_ball$$, false), ('hamming_ball', 'simhash_ball(fp, 62)', true),
  ('hamming_ball', 'simhash_ball(NULL, 3)', false),
  ('simhash_distance', 'NULL::simhash_distance', false), ('simhash_distance', $$(fp <~> '0123456789abcdef')$$, true),
  ('simhash_distance', $$('0000000000000000'::simhash <~> 'ffffffffffffffff')$$, false),
  ('integer', 'NULL::integer', false), ('integer', '0', false), ('integer', '-1', false), ('integer', '3', false),
  ('integer', '61', false), ('integer', '62', false), ('integer', '63', false),
  ('integer', '64', false), ('integer', '65', false), ('integer', '2147483647', false),
  ('integer', '(-2147483647 - 1)', false), ('integer', '(id % 9)::integer', true),
  ('smallint', 'NULL::smallint', false), ('smallint', '0::smallint', false), ('smallint', '(-1)::smallint', false),
  ('smallint', '64::smallint', false), ('smallint', '32767::smallint', false), ('smallint', '(-32768)::smallint', false),
  ('bigint', 'NULL::bigint', false), ('bigint', '0::bigint', false), ('bigint', '(-1)::bigint', false),
  ('bigint', '64::bigint', false), ('bigint', '65::bigint', false), ('bigint', '9223372036854775807', false),
  ('bigint', '(-9223372036854775807 - 1)', false), ('bigint', 'id', true),
  ('text', 'NULL::text', false), ('text', $$''::text$$, false), ('text', $$'a'::text$$, false),
  ('text', 'body', true), ('text', $$repeat('word ', 60000)$$, false), ('text', $$repeat('x', 300000)$$, false),
  ('text', $$'words'::text$$, false), ('text', $$'chars'::text$$, false), ('text', $$'words:3'::text$$, false),
  ('text', E'''\u4e2d\u6587\u6587\u672c \u0442\u0435\u043a\u0441\u0442 \u0645\u062a\u0646 \U0001F600''::text', false),
  ('text', $$'SELECT 1, 2'::text$$, false), ('text', $$'leader'::text$$, false),
  ('text', $$'SELECT 2 UNION ALL SELECT 1'::text$$, false),
  ('text[]', 'NULL::text[]', false),
  ('text[]', $$'{}'::text[]$$, false), ('text[]', $$'{NULL}'::text[]$$, false),
  ('text[]', $$'{a,b,a,""}'::text[]$$, false), ('text[]', 'words', true),
  ('text[]', $$array_fill('x'::text, ARRAY[100000])$$, false),
  ('tsvector', 'NULL::tsvector', false), ('tsvector', $$''::tsvector$$, false),
  ('tsvector', $$'a:1 b:2,3 c'::tsvector$$, false), ('tsvector', 'tsv', true),
  ('double precision', 'NULL::float8', false), ('double precision', '0::float8', false),
  ('double precision', '(-1)::float8', false), ('double precision', $$'NaN'::float8$$, false),
  ('double precision', $$'Infinity'::float8$$, false), ('double precision', $$'-Infinity'::float8$$, false),
  ('double precision', '1e308::float8', false),
  ('double precision[]', 'NULL::float8[]', false), ('double precision[]', $$'{}'::float8[]$$, false),
  ('double precision[]', $$'{NaN,1}'::float8[]$$, false), ('double precision[]', $$'{Infinity,-1,0}'::float8[]$$, false),
  ('double precision[]', $$'{1,NULL,2,3}'::float8[]$$, false), ('double precision[]', 'w', true),
  ('bit', 'NULL::bit', false), ('bit', $$B''$$, false), ('bit', $$B'1'$$, false),
  ('bit', $$repeat('1', 64)::bit(64)$$, false), ('bit', $$repeat('1', 65)::bit(65)$$, false),
  ('bytea', 'NULL::bytea', false), ('bytea', $$''::bytea$$, false), ('bytea', $$'\x00'::bytea$$, false),
  ('bytea', $$'\x0123456789abcdef'::bytea$$, false), ('bytea', $$'\x0123456789abcdef01'::bytea$$, false),
  -- key packs (simhash_pack_partners): none, empty, valid (one key, and the packs of the
  -- table at radius 3 and 0), truncated, another version, a block out of range, 2-D
  ('bytea[]', 'NULL::bytea[]', false), ('bytea[]', $$'{}'::bytea[]$$, false),
  ('bytea[]', $$ARRAY[NULL]::bytea[]$$, false),
  ('bytea[]', $$ARRAY['\x53484b310003000400000001000000000000000100000000000000010001'::bytea]$$, false),
  ('bytea[]', $$(SELECT simhash_key_pack(id, fp, 3, 4, 2) FROM fz)$$, false),
  ('bytea[]', $$(SELECT simhash_key_pack(id, fp, 0, 1, 1) FROM fz)$$, false),
  ('bytea[]', $$ARRAY['\x53484b3100030004000000020000000000000001'::bytea]$$, false),
  ('bytea[]', $$ARRAY['\x53484b320003000400000000'::bytea, NULL]$$, false),
  ('bytea[]', $$ARRAY['\x53484b31000300040000000100000000000000010000000000000001ffff'::bytea]$$, false),
  ('bytea[]', $$ARRAY[ARRAY['\x00'::bytea], ARRAY['\x01'::bytea]]$$, false),
  ('regclass', 'NULL::regclass', false), ('regclass', $$'fz'::regclass$$, false),
  ('regclass', $$'fz_fp'::regclass$$, false), ('regclass', $$'fz_fp1'::regclass$$, false),
  ('regclass', $$'fz_pend_fp2'::regclass$$, false), ('regclass', $$'fz_pkey'::regclass$$, false),
  ('regclass', '0::regclass', false), ('regclass', '1::regclass', false),
  ('cstring', 'NULL::cstring', false), ('cstring', $$''::cstring$$, false),
  ('cstring', $$'0123456789abcdef'::cstring$$, false), ('cstring', $$'0123456789abcdef/3'::cstring$$, false),
  ('cstring', $$'zz/-1'::cstring$$, false), ('cstring', $$repeat('f', 5000)::cstring$$, false);

-- The statements: each is one line; a line may set planner options with SET LOCAL
-- inside its own transaction ("forced": index paths forced).
CREATE FUNCTION fz_statements(per_object int DEFAULT 150) RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  f record; o record; c record;
  args text[];
  combos text[];
  vals text[];
  anycol boolean;
  call text;
  n int;
  forced CONSTANT text := 'BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; ';
BEGIN
  PERFORM setseed(0.4242);
  -- functions, aggregates, window functions: owned by the extension, callable
  -- from SQL (no internal argument or result)
  FOR f IN
    SELECT p.oid, p.proname, p.prokind, p.proretset, p.prorettype,
           p.proargtypes::regtype[] AS types, p.pronargs
    FROM pg_proc p
    JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
    WHERE p.prorettype <> 'internal'::regtype
      AND NOT ('internal'::regtype = ANY (p.proargtypes::regtype[]))
      AND p.pronargs > 0
    ORDER BY p.oid
  LOOP
    -- up to per_object argument combinations, drawn from the edge values
    FOR n IN 1 .. per_object LOOP
      args := ARRAY[]::text[];
      anycol := false;
      FOR i IN 1 .. f.pronargs LOOP
        -- proargtypes is an oidvector, indexed from 0
        SELECT v.expr, v.col INTO c FROM fz_val v
        WHERE v.typ = f.types[array_lower(f.types, 1) + i - 1] ORDER BY random() LIMIT 1;
        IF NOT FOUND THEN
          args := NULL;
          EXIT;
        END IF;
        args := args || c.expr;
        anycol := anycol OR c.col;
      END LOOP;
      EXIT WHEN args IS NULL;
      call := format('%s(%s)', f.oid::regproc, array_to_string(args, ', '));
      IF f.prokind = 'w' THEN
        RETURN NEXT format('SELECT %s OVER (ORDER BY id) FROM fz ORDER BY id LIMIT 50;', call);
        RETURN NEXT format('SELECT %s OVER (PARTITION BY id %% 7 ORDER BY id) FROM fz;', call);
        RETURN NEXT format('SELECT count(*) FROM (SELECT %s OVER (ORDER BY fp) FROM fz_pend) s;', call);
      ELSIF f.prokind = 'a' THEN
        RETURN NEXT format('SELECT %s FROM fz;', call);
        RETURN NEXT format('SELECT id %% 5, %s FROM fz GROUP BY 1;', call);
      ELSIF anycol THEN
        RETURN NEXT format('SELECT %s FROM fz WHERE id <= 3;', call);
        IF f.prorettype = 'boolean'::regtype AND NOT f.proretset THEN
          RETURN NEXT format('SELECT count(*) FROM fz WHERE %s;', call);
          RETURN NEXT forced || format('SELECT count(*) FROM fz WHERE %s; COMMIT;', call);
          RETURN NEXT forced || format('EXPLAIN SELECT * FROM fz WHERE %s; COMMIT;', call);
          RETURN NEXT forced || format('SELECT count(*) FROM fz_pend WHERE %s; COMMIT;', call);
        END IF;
      ELSE
        RETURN NEXT format('SELECT %s;', call);
      END IF;
    END LOOP;
  END LOOP;

  -- operators: each side any edge value of its type (constants on either side)
  FOR o IN
    SELECT op.oid, op.oprname, op.oprleft::regtype AS l, op.oprright::regtype AS r,
           op.oprresult::regtype AS res
    FROM pg_operator op
    JOIN pg_depend d ON d.classid = 'pg_operator'::regclass AND d.objid = op.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
    ORDER BY op.oid
  LOOP
    FOR n IN 1 .. per_object LOOP
      vals := ARRAY[]::text[];
      anycol := false;
      IF o.l <> 0 THEN
        SELECT v.expr, v.col INTO c FROM fz_val v WHERE v.typ = o.l ORDER BY random() LIMIT 1;
        EXIT WHEN NOT FOUND;
        vals := vals || c.expr;
        anycol := c.col;
      END IF;
      SELECT v.expr, v.col INTO c FROM fz_val v WHERE v.typ = o.r ORDER BY random() LIMIT 1;
      EXIT WHEN NOT FOUND;
      vals := vals || c.expr;
      anycol := anycol OR c.col;
      call := CASE WHEN o.l <> 0
                   THEN format('(%s OPERATOR(%s.%s) %s)', vals[1], 'public', o.oprname, vals[2])
                   ELSE format('(OPERATOR(%s.%s) %s)', 'public', o.oprname, vals[1]) END;
      IF NOT anycol THEN
        RETURN NEXT format('SELECT %s;', call);
      END IF;
      RETURN NEXT format('SELECT %s FROM fz WHERE id <= 3;', call);
      IF o.res = 'boolean'::regtype THEN
        RETURN NEXT format('SELECT count(*) FROM fz WHERE %s;', call);
        RETURN NEXT forced || format('SELECT count(*) FROM fz WHERE %s; COMMIT;', call);
        RETURN NEXT forced || format('EXPLAIN SELECT id FROM fz WHERE %s; COMMIT;', call);
        RETURN NEXT forced || format('SELECT count(*) FROM fz_pend WHERE %s; COMMIT;', call);
        RETURN NEXT forced || format('SELECT count(*) FROM fz_ex WHERE %s; COMMIT;', call);
        -- a join: a column on the left comes from one table, on the right from the other
        IF o.l <> 0 AND anycol THEN
          RETURN NEXT forced || format('SELECT count(*) FROM fz a JOIN fz_pend c ON (%s OPERATOR(public.%s) %s); COMMIT;',
                                       regexp_replace(vals[1], '\m(fp|b|id)\M', 'a.\1', 'g'), o.oprname,
                                       regexp_replace(vals[2], '\m(fp|b|id)\M', 'c.\1', 'g'));
        END IF;
      ELSE
        -- an ordering operator: ORDER BY, with a LIMIT and without
        RETURN NEXT forced || format('SELECT id FROM fz ORDER BY %s LIMIT 7; COMMIT;', call);
        RETURN NEXT forced || format('SELECT count(*) FROM (SELECT id FROM fz_pend ORDER BY %s) s; COMMIT;', call);
        RETURN NEXT forced || format('EXPLAIN SELECT id FROM fz ORDER BY %s LIMIT 7; COMMIT;', call);
      END IF;
    END LOOP;
  END LOOP;

  -- casts to and from the extension's types, and every typed literal via text
  FOR c IN
    SELECT DISTINCT v.expr, cs.casttarget::regtype AS target
    FROM pg_cast cs JOIN fz_val v ON v.typ = cs.castsource
    WHERE cs.castsource IN ('simhash'::regtype, 'hamming_ball'::regtype, 'simhash_distance'::regtype)
       OR cs.casttarget IN ('simhash'::regtype, 'hamming_ball'::regtype, 'simhash_distance'::regtype)
  LOOP
    RETURN NEXT format('SELECT (%s)::%s FROM fz WHERE id <= 3;', c.expr, c.target);
  END LOOP;
  FOR c IN SELECT expr FROM fz_val WHERE typ = 'text'::regtype OR typ = 'cstring'::regtype LOOP
    RETURN NEXT format('SELECT (%s)::text::simhash;', c.expr);
    RETURN NEXT format('SELECT (%s)::text::hamming_ball;', c.expr);
    RETURN NEXT format('SELECT (%s)::text::simhash_distance;', c.expr);
  END LOOP;
END $fn$;
RESET client_min_messages;
