--
-- type: the simhash type itself. Text and binary forms, casts, unsigned
-- ordering, btree and hash operator classes, joins, bitwise operators.
--
-- quietly: an earlier suite in the same database may have created it
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

--
-- Text input: exactly 16 hex digits in either case, optionally prefixed with
-- 0x or 0X. Output is always 16 lowercase digits, leading zeros kept.
--
SELECT v AS input, v::simhash AS output
FROM (VALUES ('0123456789abcdef'),
             ('0123456789ABCDEF'),
             ('0x0123456789AbCdEf'),
             ('0X0123456789abcdef'),
             ('0000000000000000'),
             ('00000000000000ff'),
             ('0x000000000000000F'),
             ('8000000000000000'),
             ('ffffffffffffffff'),
             ('FFFFFFFFFFFFFFFF')) AS t(v);

-- text -> simhash -> text is the lowercased 16 digits without the prefix
SELECT count(*) AS n,
       bool_and(v::simhash::text = lower(right(v, 16))) AS round_trip
FROM (SELECT lpad(to_hex(g * 7919 + g), 16, '0') FROM generate_series(0, 999) g
      UNION ALL
      SELECT '0x' || upper(lpad(to_hex(g * 104729), 16, '0')) FROM generate_series(0, 999) g
      UNION ALL
      SELECT left(md5(g::text), 16) FROM generate_series(0, 999) g) AS t(v);

SELECT NULL::simhash IS NULL AS null_in_null_out;

--
-- Every malformed form is rejected, naming the offending value.
--
-- empty (invalid_text_representation)
SELECT ''::simhash;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- 15 and 17 digits
SELECT '0123456789abcde'::simhash;
SELECT '0123456789abcdef0'::simhash;
-- prefix alone, prefix with 15 and 17 digits, doubled prefix, prefix without 0
SELECT '0x'::simhash;
SELECT '0x0123456789abcde'::simhash;
SELECT '0x0123456789abcdef0'::simhash;
SELECT '0x0x0123456789abcdef'::simhash;
SELECT 'x0123456789abcdef'::simhash;
-- a non-hex digit (g), a full-width digit
SELECT '0123456789abcdeg'::simhash;
SELECT '０123456789abcdef'::simhash;
-- white space around or inside
SELECT ' 0123456789abcdef'::simhash;
SELECT '0123456789abcdef '::simhash;
SELECT '01234567 89abcdef'::simhash;
SELECT '0x 0123456789abcdef'::simhash;
-- signs are not part of the syntax
SELECT '-123456789abcdef'::simhash;
SELECT '+123456789abcdef'::simhash;
SELECT '-0123456789abcdef'::simhash;
SELECT '0x-123456789abcdef'::simhash;

--
-- Binary send format: the 8 bytes, most significant first; the same bytes
-- as the bytea cast.
--
SELECT v, simhash_send(v) AS sent, simhash_send(v) = v::bytea AS same_as_bytea
FROM (VALUES ('0123456789abcdef'::simhash), ('ffffffffffffffff'),
             ('0000000000000001'), ('8000000000000000')) AS t(v);

--
-- Casts to and from int8 keep the bit pattern: values with the top bit set
-- become negative.
--
SELECT v, v::int8 AS as_int8, v::int8::simhash = v AS round_trip
FROM (VALUES ('0000000000000000'::simhash), ('0000000000000001'),
             ('7fffffffffffffff'), ('8000000000000000'),
             ('fffffffffffffffe'), ('ffffffffffffffff')) AS t(v);
SELECT (-1)::int8::simhash AS minus_one,
       (-9223372036854775808)::int8::simhash AS int8_min,
       9223372036854775807::int8::simhash AS int8_max,
       255::int8::simhash AS small;
-- only int8 converts: there is no cast from or to int4
SELECT 1::int4::simhash;
SELECT '0000000000000001'::simhash::int4;

--
-- Casts to and from bit(64): most significant bit first.
--
SELECT '0123456789abcdef'::simhash::bit(64) AS bits;
SELECT '8000000000000001'::simhash::bit(64) AS bits;
SELECT B'0000000100100011010001010110011110001001101010111100110111101111'::simhash AS from_bits;
SELECT ('x' || v)::bit(64)::simhash::text = v AS via_hex_bits
FROM (VALUES ('0123456789abcdef'), ('ffffffffffffffff'), ('8000000000000000')) AS t(v);
-- any length other than 64 is an error naming the length
SELECT repeat('1', 63)::bit(63)::simhash;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT repeat('1', 65)::bit(65)::simhash;
SELECT B''::simhash;
-- simhash -> bit(n) goes through bit(64) and then PostgreSQL's own length
-- coercion, which truncates or zero-pads on the right for explicit casts
SELECT 'ffffffffffffffff'::simhash::bit(63) AS bit63,
       'ffffffffffffffff'::simhash::bit(65) AS bit65;

--
-- Casts to and from bytea: 8 bytes, big-endian.
--
SELECT '0123456789abcdef'::simhash::bytea AS bytes,
       '\x0102030405060708'::bytea::simhash AS from_bytes,
       '\xffffffffffffffff'::bytea::simhash AS all_ones,
       octet_length('0000000000000000'::simhash::bytea) AS len;
SELECT count(*) AS n, bool_and(left(md5(g::text), 16)::simhash::bytea::simhash
                               = left(md5(g::text), 16)::simhash) AS round_trip
FROM generate_series(1, 100) g;
-- any other length is an error naming it
SELECT '\x01020304050607'::bytea::simhash;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT '\x010203040506070809'::bytea::simhash;
SELECT ''::bytea::simhash;

--
-- Comparison operators order by the unsigned value: 8000... > 7fff...,
-- ffff... is the largest.
--
SELECT a, b, a < b AS lt, a <= b AS le, a = b AS eq, a <> b AS ne, a >= b AS ge, a > b AS gt
FROM (VALUES ('0000000000000001'::simhash, '0000000000000002'::simhash),
             ('7fffffffffffffff', '8000000000000000'),
             ('0000000000000000', 'ffffffffffffffff'),
             ('ffffffffffffffff', 'fffffffffffffffe'),
             ('8000000000000000', '8000000000000000')) AS t(a, b);
SELECT '0000000000000001'::simhash = NULL AS eq_null;

CREATE TABLE sh_type_vals (id int, fp simhash);
INSERT INTO sh_type_vals VALUES
    (1, 'ffffffffffffffff'), (2, '0000000000000000'), (3, '8000000000000000'),
    (4, '7fffffffffffffff'), (5, '00000000000000ff'), (6, 'c000000000000000'),
    (7, '0000000100000000'), (8, 'fffffffffffffffe'), (9, NULL), (10, '8000000000000001');
-- ORDER BY fp is unsigned, i.e. the order of the hex text
SELECT id, fp, fp::int8 AS signed FROM sh_type_vals ORDER BY fp;
SELECT array_agg(fp ORDER BY fp)::text[]
       = array_agg(fp::text ORDER BY fp::text COLLATE "C") AS order_is_text_order,
       array_agg(fp ORDER BY fp) = array_agg(fp ORDER BY fp::int8) AS order_is_signed_order
FROM sh_type_vals WHERE fp IS NOT NULL;

-- the btree operator class is used for range scans, with the same order
CREATE INDEX sh_type_vals_fp ON sh_type_vals (fp);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, fp FROM sh_type_vals WHERE fp > '7fffffffffffffff' ORDER BY fp;
SELECT id, fp FROM sh_type_vals WHERE fp > '7fffffffffffffff' ORDER BY fp;
SELECT id, fp FROM sh_type_vals WHERE fp BETWEEN '00000000000000ff' AND '8000000000000000' ORDER BY fp DESC;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- the btree and hash operator classes pass the access methods' own validation
SELECT c.opcname, a.amname, amvalidate(c.oid)
FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
WHERE c.opcintype = 'simhash'::regtype AND a.amname IN ('btree', 'hash') ORDER BY a.amname;

--
-- UNIQUE, DISTINCT, GROUP BY
--
CREATE TABLE sh_type_uniq (fp simhash UNIQUE);
INSERT INTO sh_type_uniq VALUES ('0123456789abcdef'), ('8123456789abcdef');
INSERT INTO sh_type_uniq VALUES ('0x0123456789ABCDEF');
SELECT * FROM sh_type_uniq ORDER BY fp;
DROP TABLE sh_type_uniq;

CREATE TABLE sh_type_dup AS
    SELECT g AS id, left(md5((g % 7)::text), 16)::simhash AS fp FROM generate_series(1, 70) g;
SELECT count(DISTINCT fp) AS n_distinct FROM sh_type_dup;
SELECT fp, count(*) FROM sh_type_dup GROUP BY fp ORDER BY fp;
-- the same with a hash aggregate and with a sort-based one
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT DISTINCT fp FROM sh_type_dup;
SELECT count(*) FROM (SELECT DISTINCT fp FROM sh_type_dup) s;
RESET enable_sort;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT fp, count(*) FROM sh_type_dup GROUP BY fp;
SELECT count(*), sum(n) FROM (SELECT fp, count(*) AS n FROM sh_type_dup GROUP BY fp) s;
RESET enable_hashagg;

--
-- Hash join and merge join on simhash equality give the same rows.
--
CREATE TABLE sh_type_l AS
    SELECT g AS id, left(md5(g::text), 16)::simhash AS fp FROM generate_series(1, 50) g;
CREATE TABLE sh_type_r AS
    SELECT g AS id, left(md5((g * 2)::text), 16)::simhash AS fp FROM generate_series(1, 50) g;
ANALYZE sh_type_l, sh_type_r;
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT l.id, r.id FROM sh_type_l l JOIN sh_type_r r ON l.fp = r.fp;
SELECT l.id AS lid, r.id AS rid, l.fp FROM sh_type_l l JOIN sh_type_r r ON l.fp = r.fp ORDER BY l.id;
RESET enable_mergejoin;
SET enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT l.id, r.id FROM sh_type_l l JOIN sh_type_r r ON l.fp = r.fp;
SELECT l.id AS lid, r.id AS rid, l.fp FROM sh_type_l l JOIN sh_type_r r ON l.fp = r.fp ORDER BY l.id;
RESET enable_hashjoin;
RESET enable_nestloop;

--
-- Hash operator class: a hash index answers equality.
--
CREATE INDEX sh_type_l_hash ON sh_type_l USING hash (fp);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sh_type_l WHERE fp = 'c4ca4238a0b92382';
SELECT id FROM sh_type_l WHERE fp = 'c4ca4238a0b92382';
SELECT id FROM sh_type_l WHERE fp = '0000000000000000';
RESET enable_seqscan;
RESET enable_bitmapscan;
-- the extended hash function with seed 0 agrees with the plain one in the
-- low 32 bits (PostgreSQL requires it), and a seed changes it
SELECT bool_and((simhash_hash_extended(fp, 0) & 4294967295) = (simhash_hash(fp)::int8 & 4294967295))
           AS extended_matches,
       bool_and(simhash_hash_extended(fp, 0) <> simhash_hash_extended(fp, 1)) AS seed_matters
FROM sh_type_l;
-- equal values hash equally whatever their text form was
SELECT simhash_hash('0xABCDEF0123456789') = simhash_hash('abcdef0123456789') AS same_hash;

DROP TABLE sh_type_vals, sh_type_dup, sh_type_l, sh_type_r;

--
-- Bitwise operators and simhash_bit_count.
--
SELECT 'ff00ff00ff00ff00'::simhash & '0ff00ff00ff00ff0' AS "and",
       'ff00ff00ff00ff00'::simhash | '0ff00ff00ff00ff0' AS "or",
       'ff00ff00ff00ff00'::simhash # '0ff00ff00ff00ff0' AS "xor",
       ~ '0f0f0f0f0f0f0f0f'::simhash AS "not",
       ~ '0000000000000000'::simhash AS not_zero;
-- identities over many values
SELECT bool_and(a # a = '0000000000000000') AS xor_self,
       bool_and(~ ~ a = a) AS not_not,
       bool_and((a & b) | (a # b) = (a | b)) AS and_xor_or,
       bool_and(a # b = b # a) AS xor_commutes,
       bool_and(simhash_bit_count(a) + simhash_bit_count(~ a) = 64) AS count_complement,
       bool_and(simhash_bit_count(a) = length(replace(a::bit(64)::text, '0', ''))) AS count_is_ones
FROM (SELECT left(md5(g::text), 16)::simhash, left(md5((g + 1000)::text), 16)::simhash
      FROM generate_series(1, 200) g) AS t(a, b);
SELECT simhash_bit_count('0000000000000000'::simhash) AS zero,
       simhash_bit_count('ffffffffffffffff'::simhash) AS all_ones,
       simhash_bit_count('8000000000000001'::simhash) AS two,
       simhash_bit_count('0123456789abcdef'::simhash) AS mixed;
-- simhash_bit_count takes only a simhash, so an untyped literal is one (before 0.4.0 it was
-- bit_count, an overload of core's, and the call was ambiguous between bit, bytea and simhash);
-- bit_count is core's alone
SELECT simhash_bit_count('ffffffffffffffff');
SELECT bit_count('ffffffffffffffff'::simhash);
