--
-- distance: Hamming distance. <~> (returning the simhash_distance domain),
-- <-> (plain int4), simhash_hamming_distance(), simhash_hamming() and simhash_hamming_within().
--
-- quietly: an earlier suite in the same database may have created it
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

--
-- Known distances: all four spellings agree, commute, and equal the number of
-- one bits of the XOR.
--
SELECT a, b, a <~> b AS "<~>", a <-> b AS "<->", simhash_hamming_distance(a, b) AS simhash_hamming_distance,
       simhash_hamming(a, b) AS hamming, b <~> a AS commuted, simhash_bit_count(a # b) AS xor_bits
FROM (VALUES ('0000000000000000'::simhash, '0000000000000000'::simhash),
             ('0123456789abcdef', '0123456789abcdef'),
             ('0000000000000000', '0000000000000001'),
             ('8000000000000000', '0000000000000001'),
             ('ffffffffffffffff', '7fffffffffffffff'),
             ('0f0f0f0f0f0f0f0f', '00ff00ff00ff00ff'),
             ('0000000000000000', '7fffffffffffffff'),
             ('0000000000000000', 'ffffffffffffffff'),
             ('0123456789abcdef', 'fedcba9876543210')) AS t(a, b);

-- the same over many pairs, with the whole range reached
CREATE TABLE sh_dist_pairs AS
    SELECT g AS id, left(md5(g::text), 16)::simhash AS a,
           left(md5((g + 7)::text), 16)::simhash AS b
    FROM generate_series(1, 300) g;
INSERT INTO sh_dist_pairs VALUES
    (301, '0000000000000000', '0000000000000000'),
    (302, '0000000000000000', 'ffffffffffffffff'),
    (303, 'aaaaaaaaaaaaaaaa', '5555555555555555');
SELECT count(*) AS n,
       bool_and(a <~> b = a <-> b) AS same_as_int4_operator,
       bool_and(a <~> b = simhash_hamming_distance(a, b)) AS same_as_function,
       bool_and(a <-> b = simhash_hamming(a, b)) AS same_as_int4_function,
       bool_and(a <~> b = b <~> a AND a <-> b = b <-> a) AS commutes,
       bool_and(a <~> b = simhash_bit_count(a # b)) AS counts_xor_bits,
       bool_and(a <~> a = 0) AS zero_to_itself,
       bool_and(a <~> ~ a = 64) AS all_to_complement,
       min(a <~> b), max(a <~> b)
FROM sh_dist_pairs;

--
-- Result types: <~> returns the simhash_distance domain over int4, <-> plain
-- int4. The domain behaves as an int4 in expressions.
--
SELECT pg_typeof('0000000000000000'::simhash <~> 'ffffffffffffffff') AS "<~>",
       pg_typeof(simhash_hamming_distance('0000000000000000', 'ffffffffffffffff')) AS simhash_hamming_distance,
       pg_typeof('0000000000000000'::simhash <-> 'ffffffffffffffff') AS "<->",
       pg_typeof(simhash_hamming('0000000000000000', 'ffffffffffffffff')) AS hamming,
       pg_typeof(simhash_hamming_within('0000000000000000', 'ffffffffffffffff', 3)) AS simhash_hamming_within;
-- clients see int4 for both (the row description carries the domain's base type)
SELECT '0000000000000000'::simhash <~> 'ffffffffffffffff' AS "<~>",
       '0000000000000000'::simhash <-> 'ffffffffffffffff' AS "<->" \gdesc
SELECT t.typname, t.typtype, t.typbasetype::regtype AS base_type
FROM pg_type t WHERE t.typname = 'simhash_distance';

-- arithmetic, casts, greatest/least, coalesce, CASE: int4 values and types
SELECT (a <~> b) + 1 AS plus_one, pg_typeof((a <~> b) + 1) AS plus_type,
       (a <~> b) * 2 AS times_two, (a <~> b) / 3 AS div_three,
       (a <~> b)::float8 / 128 AS as_float8, pg_typeof((a <~> b)::float8) AS float_type,
       (a <~> b)::text AS as_text, (a <~> b)::int8 AS as_int8, (a <~> b)::numeric AS as_numeric,
       greatest(a <~> b, 40) AS greatest, pg_typeof(greatest(a <~> b, 40)) AS greatest_type,
       least(a <~> b, 40) AS least,
       CASE WHEN a <~> b > 32 THEN 'far' ELSE 'near' END AS kind
FROM (VALUES ('0000000000000000'::simhash, 'ffffffffffffffff'::simhash),
             ('0000000000000000', '000000000000000f')) AS t(a, b);
SELECT coalesce(NULL::simhash <~> '0000000000000000', 99) AS coalesce_null,
       coalesce('0000000000000000'::simhash <~> '0000000000000003', 99) AS coalesce_value,
       pg_typeof(coalesce(NULL::simhash <~> '0000000000000000', 99)) AS coalesce_type;

-- aggregates and GROUP BY on the distance
SELECT sum(a <~> b) = sum(simhash_bit_count(a # b)) AS sum_matches, pg_typeof(sum(a <~> b)) AS sum_type,
       avg(a <~> b) = avg(simhash_bit_count(a # b)) AS avg_matches,
       max(a <~> b) AS max, min(a <~> b) AS min
FROM sh_dist_pairs;
SELECT a <~> b AS d, count(*)
FROM sh_dist_pairs WHERE id > 300 OR id <= 10
GROUP BY a <~> b ORDER BY d;
-- GROUP BY on the distance gives the same groups as GROUP BY on the int4 distance
SELECT count(*) AS groups, sum(n) AS rows
FROM (SELECT a <~> b AS d, count(*) AS n FROM sh_dist_pairs GROUP BY 1) s;
SELECT count(*) AS groups, sum(n) AS rows
FROM (SELECT a <-> b AS d, count(*) AS n FROM sh_dist_pairs GROUP BY 1) s;
-- ORDER BY either distance (ties broken by id)
SELECT id, a <~> b AS d FROM sh_dist_pairs ORDER BY a <~> b, id LIMIT 5;
SELECT id, a <-> b AS d FROM sh_dist_pairs ORDER BY a <-> b DESC, id LIMIT 5;
-- comparisons in the select list give booleans, as for int4
SELECT a <~> b <= 3 AS le3, a <~> b = 64 AS eq64, 64 = a <~> b AS eq64_commuted,
       a <~> b > 32::int8 AS gt32_int8, a <~> b < 2::int2 AS lt2_int2
FROM (VALUES ('0000000000000000'::simhash, 'ffffffffffffffff'::simhash),
             ('0000000000000000', '0000000000000001')) AS t(a, b);

--
-- simhash_hamming_within(a, b, r) is "distance <= r": a negative radius matches
-- nothing, 64 and more match everything.
--
SELECT a <~> b AS d, r, simhash_hamming_within(a, b, r) AS within, (a <~> b)::int4 <= r AS expected
FROM (VALUES ('0123456789abcdef'::simhash, '0123456789abcdef'::simhash),
             ('0000000000000000', '7fffffffffffffff'),
             ('0000000000000000', 'ffffffffffffffff')) AS t(a, b),
     (VALUES (-2147483648), (-1), (0), (1), (62), (63), (64), (1000), (2147483647)) AS r(r)
ORDER BY d, r;
SELECT count(*) AS checked, bool_and(simhash_hamming_within(a, b, r) = (a <~> b <= r)) AS all_agree
FROM sh_dist_pairs, generate_series(-2, 66) r;

-- the clamps the planner rewrite uses for non-constant bounds: -1..64
SELECT b, simhash_hamming_radius_le(b) AS le, simhash_hamming_radius_lt(b) AS lt
FROM (VALUES (-9223372036854775808), (-2), (-1), (0), (1), (3), (63), (64), (65), (66),
             (2147483648), (9223372036854775807)) AS t(b)
ORDER BY b;

--
-- Stored distances (no rewrite possible) compare like integers through the
-- extension's own comparison operators, for every operator and every bound
-- type in both orders: each is bound to the right built-in function.
--
CREATE TABLE sh_dist_grid (d simhash_distance, e simhash_distance, k2 int2, k4 int4, k8 int8);
INSERT INTO sh_dist_grid
    SELECT d, v4, v2, v4, v8
    FROM unnest(ARRAY[-2147483648, -1, 0, 1, 3, 63, 64, 65, 2147483647, NULL]) AS dv(d),
         unnest(ARRAY[-9223372036854775808, -2147483648, -32768, -1, 0, 1, 2, 3, 4, 63, 64, 65,
                      32767, 2147483647, 9223372036854775807, NULL]) AS kv(v8),
         LATERAL (SELECT CASE WHEN v8 BETWEEN -2147483648 AND 2147483647 THEN v8::int4 END AS v4,
                         CASE WHEN v8 BETWEEN -32768 AND 32767 THEN v8::int2 END AS v2) AS c;
CREATE FUNCTION sh_dist_opcheck(l text, r text)
RETURNS TABLE (comparison text, operators int, checked int8, mismatches int8) LANGUAGE plpgsql AS $fn$
DECLARE
    op text;
    n int8;
    bad int8;
    -- the same comparison on plain integers
    lref text := CASE WHEN l IN ('d', 'e') THEN l || '::int4' ELSE l END;
    rref text := CASE WHEN r IN ('d', 'e') THEN r || '::int4' ELSE r END;
    ltype regtype := CASE l WHEN 'k2' THEN 'int2' WHEN 'k4' THEN 'int4' WHEN 'k8' THEN 'int8'
                            ELSE 'simhash_distance' END;
    rtype regtype := CASE r WHEN 'k2' THEN 'int2' WHEN 'k4' THEN 'int4' WHEN 'k8' THEN 'int8'
                            ELSE 'simhash_distance' END;
BEGIN
    comparison := l || ' op ' || r;
    operators := 0;
    checked := 0;
    mismatches := 0;
    FOREACH op IN ARRAY ARRAY['<', '<=', '=', '<>', '>=', '>'] LOOP
        -- the operator that the comparison resolves to is the extension's
        IF EXISTS (SELECT 1 FROM pg_operator o
                   WHERE o.oprname = op
                     AND o.oprleft = ltype AND o.oprright = rtype
                     AND o.oprnamespace = (SELECT extnamespace FROM pg_extension WHERE extname = 'simhash')) THEN
            operators := operators + 1;
        END IF;
        EXECUTE format('SELECT count(*), count(*) FILTER (WHERE (%1$s %2$s %3$s) IS DISTINCT FROM (%4$s %2$s %5$s)) FROM sh_dist_grid',
                       l, op, r, lref, rref) INTO n, bad;
        checked := checked + n;
        mismatches := mismatches + bad;
    END LOOP;
    RETURN NEXT;
END
$fn$;
SELECT c.* FROM (VALUES ('d', 'k2'), ('d', 'k4'), ('d', 'k8'), ('k2', 'd'), ('k4', 'd'), ('k8', 'd'),
                        ('d', 'e')) AS p(l, r),
     LATERAL sh_dist_opcheck(p.l, p.r) AS c;
-- and they are not rewritten (a stored distance is not a distance computation)
EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM sh_dist_grid WHERE d < k8 AND k2 >= d AND d <> e;
DROP FUNCTION sh_dist_opcheck(text, text);
DROP TABLE sh_dist_grid;

--
-- NULL in, NULL out (all are strict).
--
SELECT NULL::simhash <~> '0000000000000000' AS "null <~>",
       '0000000000000000'::simhash <~> NULL AS "<~> null",
       NULL::simhash <-> '0000000000000000' AS "null <->",
       simhash_hamming_distance(NULL, '0000000000000000') AS simhash_hamming_distance,
       simhash_hamming(NULL, NULL) AS hamming,
       simhash_hamming_within(NULL, '0000000000000000', 3) AS within_null_fp,
       simhash_hamming_within('0000000000000000', '0000000000000000', NULL) AS within_null_radius,
       (NULL::simhash <~> '0000000000000000') <= 3 AS null_le;

--
-- Pitfall (documented): + and - bind tighter than any user-defined operator
-- such as <~> (while comparisons bind looser, so "fp <~> q <= 3" is fine).
-- "fp <~> q + 1" parses as "fp <~> (q + 1)".
--
-- with an untyped literal the + makes it an integer, which fails to parse
SELECT '0000000000000000'::simhash <~> 'ffffffffffffffff' + 1;
-- with a typed value there is no simhash + integer
SELECT '0000000000000000'::simhash <~> 'ffffffffffffffff'::simhash + 1;
-- parentheses give what was meant
SELECT ('0000000000000000'::simhash <~> 'ffffffffffffffff') + 1 AS parenthesised;

DROP TABLE sh_dist_pairs;

--
-- A stored distance column: comparisons between
-- simhash_distance and integers belong to btree's integer_ops family, so a
-- btree index on the column serves them, with the same answers as a
-- sequential scan, and the family stays complete (amvalidate).
--
CREATE TABLE sh_dist_col AS
    SELECT g AS id, (g % 65)::simhash_distance AS d FROM generate_series(1, 6500) g;
CREATE INDEX sh_dist_col_d ON sh_dist_col (d);
-- (an index on id too, so that with sequential scans off no node is disabled:
-- PostgreSQL 18 prints "Disabled: true" under such a node)
CREATE INDEX sh_dist_col_id ON sh_dist_col (id);
ANALYZE sh_dist_col;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sh_dist_col WHERE d <= 3;
EXPLAIN (COSTS OFF) SELECT id FROM sh_dist_col WHERE d = 3::int2;
EXPLAIN (COSTS OFF) SELECT id FROM sh_dist_col WHERE 60::int8 < d;
EXPLAIN (COSTS OFF) SELECT a.id FROM sh_dist_col a JOIN sh_dist_col b ON a.d = b.d WHERE b.id = 7;
SELECT count(*) FILTER (WHERE d <= 3) AS le3, count(*) FILTER (WHERE d = 3::int2) AS eq3,
       count(*) FILTER (WHERE 60::int8 < d) AS gt60
FROM sh_dist_col;
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FILTER (WHERE d <= 3) AS le3, count(*) FILTER (WHERE d = 3::int2) AS eq3,
       count(*) FILTER (WHERE 60::int8 < d) AS gt60
FROM sh_dist_col;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT c.opcname, amvalidate(c.oid) FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
WHERE a.amname = 'btree' AND c.opcname IN ('int2_ops', 'int4_ops', 'int8_ops') ORDER BY 1;
DROP TABLE sh_dist_col;
