--
-- operands: the ball operators (<@, @>, &&) with a constant, a parameter, a
-- column, an expression or NULL on either side, planned with and without
-- the indexes. The planner's estimators once read whichever operand was a
-- constant as a ball: '...'::simhash <@ simhash_ball(fp, 3) crashed the
-- server at planning. Every form must plan, and the index paths
-- must return what a sequential scan returns.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;

CREATE TABLE op_t (id int PRIMARY KEY, fp simhash, b hamming_ball);
INSERT INTO op_t
SELECT g,
       CASE WHEN g % 50 = 0 THEN NULL
            ELSE (('x' || md5(g::text))::bit(64)::bigint # (CASE WHEN g % 3 = 0 THEN 0 ELSE 1 END))::simhash END,
       CASE WHEN g % 40 = 0 THEN NULL
            ELSE simhash_ball((('x' || md5((g % 97)::text))::bit(64)::bigint)::simhash, g % 9) END
FROM generate_series(1, 2000) g;
-- near copies of one fingerprint, so that constant queries match rows
INSERT INTO op_t
SELECT 3000 + g, ('0123456789abcdef'::simhash::bigint # (1::bigint << g))::simhash,
       simhash_ball('0123456789abcdef', g % 5)
FROM generate_series(0, 20) g;
CREATE INDEX op_t_fp ON op_t USING simhash (fp);
CREATE INDEX op_t_ball ON op_t USING simhash (simhash_ball(fp, 3) simhash_ball_ops);
ANALYZE op_t;

-- Each form, counted by a sequential scan and with the index paths forced
-- (the planner falls back to a sequential scan where no index applies);
-- "differs" must be false everywhere.
CREATE FUNCTION op_count(cond text, forced boolean, p1 simhash DEFAULT NULL,
                         p2 hamming_ball DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  PERFORM set_config('enable_seqscan', CASE WHEN forced THEN 'off' ELSE 'on' END, true);
  PERFORM set_config('enable_indexscan', CASE WHEN forced THEN 'on' ELSE 'off' END, true);
  PERFORM set_config('enable_bitmapscan', CASE WHEN forced THEN 'on' ELSE 'off' END, true);
  EXECUTE 'EXPLAIN SELECT count(*) FROM op_t WHERE ' || cond USING p1, p2;
  EXECUTE 'SELECT count(*) FROM op_t WHERE ' || cond INTO n USING p1, p2;
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  RETURN n;
END $$;

WITH forms(cond) AS (VALUES
  -- simhash <@ ball and ball @> simhash: each side a column, an expression, a constant, a parameter or NULL
  ('fp <@ b'), ('b @> fp'),
  ('fp <@ simhash_ball(fp, 3)'), ('simhash_ball(fp, 3) @> fp'),
  ($q$fp <@ '0123456789abcdef/3'::hamming_ball$q$), ($q$'0123456789abcdef/3'::hamming_ball @> fp$q$),
  ($q$fp <@ simhash_ball('0123456789abcdef', 4)$q$), ($q$simhash_ball('0123456789abcdef', 4) @> fp$q$),
  ($q$'0123456789abcdef'::simhash <@ simhash_ball(fp, 3)$q$), ($q$simhash_ball(fp, 3) @> '0123456789abcdef'::simhash$q$),
  ($q$'0123456789abcdef'::simhash <@ b$q$), ($q$b @> '0123456789abcdef'::simhash$q$),
  ($q$'0123456789abcdef'::simhash <@ simhash_ball(fp, id % 5)$q$),
  ('$1 <@ b'), ('b @> $1'), ('$1 <@ simhash_ball(fp, 3)'), ('simhash_ball(fp, 3) @> $1'),
  ('fp <@ $2'), ('$2 @> fp'), ('fp <@ simhash_ball($1, 3)'), ('simhash_ball($1, 3) @> fp'),
  ('NULL::simhash <@ b'), ('b @> NULL::simhash'), ('fp <@ NULL::hamming_ball'), ('NULL::hamming_ball @> fp'),
  ('fp <@ simhash_ball(NULL, 3)'), ('fp <@ simhash_ball(fp, NULL)'),
  ($q$'0123456789abcdef'::simhash <@ '0123456789abcdef/0'::hamming_ball$q$),
  -- ball && ball: the constraint's operator, either side
  ($q$simhash_ball(fp, 3) && '0123456789abcdef/3'::hamming_ball$q$),
  ($q$'0123456789abcdef/3'::hamming_ball && simhash_ball(fp, 3)$q$),
  ('simhash_ball(fp, 3) && b'), ('b && simhash_ball(fp, 3)'), ('b && b'),
  ($q$b && '0123456789abcdef/2'::hamming_ball$q$), ($q$'0123456789abcdef/2'::hamming_ball && b$q$),
  ('simhash_ball(fp, 3) && $2'), ('$2 && simhash_ball(fp, 3)'), ('$2 && b'),
  ('simhash_ball(fp, 3) && NULL::hamming_ball'), ('NULL::hamming_ball && b'))
SELECT cond, op_count(cond, false, '0123456789abcdef', '0123456789abcdef/3') AS seq_rows,
       op_count(cond, true, '0123456789abcdef', '0123456789abcdef/3')
         IS DISTINCT FROM op_count(cond, false, '0123456789abcdef', '0123456789abcdef/3') AS differs
FROM forms;

-- generic plans: the parameters are unknown to the estimators
SET plan_cache_mode = force_generic_plan;
PREPARE op_p1(simhash) AS SELECT count(*) FROM op_t WHERE $1 <@ simhash_ball(fp, 3);
PREPARE op_p2(hamming_ball) AS SELECT count(*) FROM op_t WHERE $1 @> fp;
PREPARE op_p3(simhash, int) AS SELECT count(*) FROM op_t WHERE simhash_ball(fp, $2) @> $1;
PREPARE op_p4(hamming_ball) AS SELECT count(*) FROM op_t WHERE $1 && simhash_ball(fp, 3);
EXECUTE op_p1('0123456789abcdef');
EXECUTE op_p2('0123456789abcdef/3');
EXECUTE op_p3('0123456789abcdef', 3);
EXECUTE op_p4('0123456789abcdef/3');
EXECUTE op_p1(NULL);
RESET plan_cache_mode;

-- joins, either side driving
SELECT count(*) FROM op_t a JOIN op_t c ON a.fp <@ c.b;
SELECT count(*) FROM op_t a JOIN op_t c ON c.b @> a.fp;
SELECT count(*) FROM op_t a JOIN op_t c ON simhash_ball(a.fp, 2) && c.b AND a.id < c.id;

DROP TABLE op_t;
DROP FUNCTION op_count(text, boolean, simhash, hamming_ball);
