/* simhash--0.1.0.sql: install script of the simhash extension.
 *
 * Every object is created and referenced schema-qualified (@extschema@ or
 * pg_catalog), so a hostile search_path cannot redirect anything here.
 */

\echo Use "CREATE EXTENSION simhash" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The simhash type: 64 bits, passed by value like int8
-- ---------------------------------------------------------------------------

CREATE TYPE @extschema@.simhash;

CREATE FUNCTION @extschema@.simhash_in(pg_catalog.cstring) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_out(@extschema@.simhash) RETURNS pg_catalog.cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_recv(pg_catalog.internal) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_send(@extschema@.simhash) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.simhash (
    INPUT = @extschema@.simhash_in,
    OUTPUT = @extschema@.simhash_out,
    RECEIVE = @extschema@.simhash_recv,
    SEND = @extschema@.simhash_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE @extschema@.simhash IS '64-bit Charikar similarity fingerprint';

-- ---------------------------------------------------------------------------
-- Casts
-- ---------------------------------------------------------------------------

-- same 8 bytes: the bit pattern is kept (fingerprints >= 2^63 become negative)
CREATE CAST (@extschema@.simhash AS pg_catalog.int8) WITHOUT FUNCTION;
CREATE CAST (pg_catalog.int8 AS @extschema@.simhash) WITHOUT FUNCTION;

CREATE FUNCTION @extschema@.simhash_to_bit(@extschema@.simhash) RETURNS pg_catalog.bit
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bit_to_simhash(pg_catalog.bit) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_to_bytea(@extschema@.simhash) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bytea_to_simhash(pg_catalog.bytea) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (@extschema@.simhash AS pg_catalog.bit)
    WITH FUNCTION @extschema@.simhash_to_bit(@extschema@.simhash);
CREATE CAST (pg_catalog.bit AS @extschema@.simhash)
    WITH FUNCTION @extschema@.bit_to_simhash(pg_catalog.bit);
CREATE CAST (@extschema@.simhash AS pg_catalog.bytea)
    WITH FUNCTION @extschema@.simhash_to_bytea(@extschema@.simhash);
CREATE CAST (pg_catalog.bytea AS @extschema@.simhash)
    WITH FUNCTION @extschema@.bytea_to_simhash(pg_catalog.bytea);

-- ---------------------------------------------------------------------------
-- Ordering (unsigned 64-bit) and hashing: btree and hash operator classes
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.simhash_lt(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_le(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_eq(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_ne(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_ge(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_gt(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_cmp(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_sortsupport(pg_catalog.internal) RETURNS pg_catalog.void
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_hash(@extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_hash_extended(@extschema@.simhash, pg_catalog.int8) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);
CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);

CREATE OPERATOR CLASS @extschema@.simhash_ops
    DEFAULT FOR TYPE @extschema@.simhash USING btree AS
        OPERATOR 1 @extschema@.< ,
        OPERATOR 2 @extschema@.<= ,
        OPERATOR 3 @extschema@.= ,
        OPERATOR 4 @extschema@.>= ,
        OPERATOR 5 @extschema@.> ,
        FUNCTION 1 @extschema@.simhash_cmp(@extschema@.simhash, @extschema@.simhash),
        FUNCTION 2 @extschema@.simhash_sortsupport(pg_catalog.internal);

CREATE OPERATOR CLASS @extschema@.simhash_ops
    DEFAULT FOR TYPE @extschema@.simhash USING hash AS
        OPERATOR 1 @extschema@.= ,
        FUNCTION 1 @extschema@.simhash_hash(@extschema@.simhash),
        FUNCTION 2 @extschema@.simhash_hash_extended(@extschema@.simhash, pg_catalog.int8);

-- ---------------------------------------------------------------------------
-- Bitwise operators and bit count
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.simhash_and(@extschema@.simhash, @extschema@.simhash) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_or(@extschema@.simhash, @extschema@.simhash) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_xor(@extschema@.simhash, @extschema@.simhash) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_not(@extschema@.simhash) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR @extschema@.& (LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_and, COMMUTATOR = OPERATOR(@extschema@.&));
CREATE OPERATOR @extschema@.| (LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_or, COMMUTATOR = OPERATOR(@extschema@.|));
CREATE OPERATOR @extschema@.# (LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_xor, COMMUTATOR = OPERATOR(@extschema@.#));
CREATE OPERATOR @extschema@.~ (RIGHTARG = @extschema@.simhash, FUNCTION = @extschema@.simhash_not);

CREATE FUNCTION @extschema@.bit_count(@extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_bit_count' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.bit_count(@extschema@.simhash) IS 'number of 1 bits in a fingerprint';

-- ---------------------------------------------------------------------------
-- Hamming distance
--
-- fp <~> q returns the simhash_distance domain over int4. The comparison
-- operators between it and int2/int4/int8 carry planner support functions
-- that rewrite "fp <~> q <= k" into hamming_within(fp, q, k), which an index
-- can answer (README.md, "Why isn't my query using an index?").
-- ---------------------------------------------------------------------------

CREATE DOMAIN @extschema@.simhash_distance AS pg_catalog.int4;
COMMENT ON DOMAIN @extschema@.simhash_distance IS 'Hamming distance (0..64) returned by <~>';

CREATE FUNCTION @extschema@.hamming_distance(@extschema@.simhash, @extschema@.simhash)
    RETURNS @extschema@.simhash_distance
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.hamming_distance(@extschema@.simhash, @extschema@.simhash)
    IS 'number of bits in which two fingerprints differ';
CREATE OPERATOR @extschema@.<~> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.hamming_distance, COMMUTATOR = OPERATOR(@extschema@.<~>));

-- the same distance as plain int4, for ORDER BY fp <-> q
CREATE FUNCTION @extschema@.hamming(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE OPERATOR @extschema@.<-> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.hamming, COMMUTATOR = OPERATOR(@extschema@.<->));

-- answers the planner's index-condition and selectivity requests for hamming_within
CREATE FUNCTION @extschema@.simhash_within_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.hamming_within(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'simhash_hamming_within' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.simhash_within_support;
COMMENT ON FUNCTION @extschema@.hamming_within(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    IS 'true when two fingerprints differ in at most the given number of bits';

-- bound clamping used by the rewrite of < and <= with non-constant bounds
CREATE FUNCTION @extschema@.hamming_radius_le(pg_catalog.int8) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_radius_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.hamming_radius_lt(pg_catalog.int8) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_radius_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE FUNCTION @extschema@.simhash_distance_lt_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_distance_le_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_distance_eq_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_distance_ne_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_distance_ge_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_distance_gt_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Comparison operators between the distance domain and int2/int4/int8 (both
-- orders) and between two distances. Their functions are the built-in
-- integer comparisons; only the support function is ours. Generated here
-- rather than written out 42 times.
DO $gen$
DECLARE
    -- operator, kind, negator, restrict, join selectivity
    ops CONSTANT text[] := ARRAY[
        '<',  'lt', '>=', 'scalarltsel', 'scalarltjoinsel',
        '<=', 'le', '>',  'scalarlesel', 'scalarlejoinsel',
        '=',  'eq', '<>', 'eqsel',       'eqjoinsel',
        '<>', 'ne', '=',  'neqsel',      'neqjoinsel',
        '>=', 'ge', '<',  'scalargesel', 'scalargejoinsel',
        '>',  'gt', '<=', 'scalargtsel', 'scalargtjoinsel'];
    -- left type, right type, name part, prefix of the built-in function
    pairs CONSTANT text[] := ARRAY[
        '@extschema@.simhash_distance', 'pg_catalog.int4', 'distance_%s_int4', 'int4',
        'pg_catalog.int4', '@extschema@.simhash_distance', 'int4_%s_distance', 'int4',
        '@extschema@.simhash_distance', 'pg_catalog.int2', 'distance_%s_int2', 'int42',
        'pg_catalog.int2', '@extschema@.simhash_distance', 'int2_%s_distance', 'int24',
        '@extschema@.simhash_distance', 'pg_catalog.int8', 'distance_%s_int8', 'int48',
        'pg_catalog.int8', '@extschema@.simhash_distance', 'int8_%s_distance', 'int84',
        '@extschema@.simhash_distance', '@extschema@.simhash_distance', 'distance_%s_distance', 'int4'];
    -- the commutator of each operator
    commuted CONSTANT pg_catalog.jsonb := '{"<": ">", "<=": ">=", "=": "=", "<>": "<>", ">=": "<=", ">": "<"}';
    i int;
    j int;
    fname text;
BEGIN
    FOR i IN 0 .. 5 LOOP
        FOR j IN 0 .. 6 LOOP
            fname := pg_catalog.format(pairs[j * 4 + 3], ops[i * 5 + 2]);
            EXECUTE pg_catalog.format(
                'CREATE FUNCTION @extschema@.%I(%s, %s) RETURNS pg_catalog.bool'
                ' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF'
                ' SUPPORT @extschema@.simhash_distance_%s_support AS %L',
                fname, pairs[j * 4 + 1], pairs[j * 4 + 2], ops[i * 5 + 2],
                pairs[j * 4 + 4] || ops[i * 5 + 2]);
            EXECUTE pg_catalog.format(
                'CREATE OPERATOR @extschema@.%s (LEFTARG = %s, RIGHTARG = %s,'
                ' FUNCTION = @extschema@.%I,'
                ' COMMUTATOR = OPERATOR(@extschema@.%s), NEGATOR = OPERATOR(@extschema@.%s),'
                ' RESTRICT = pg_catalog.%s, JOIN = pg_catalog.%s)',
                ops[i * 5 + 1], pairs[j * 4 + 1], pairs[j * 4 + 2], fname,
                commuted OPERATOR(pg_catalog.->>) ops[i * 5 + 1], ops[i * 5 + 3],
                ops[i * 5 + 4], ops[i * 5 + 5]);
        END LOOP;
    END LOOP;
END
$gen$;

-- ---------------------------------------------------------------------------
-- Fingerprints
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION @extschema@.simhash(pg_catalog.text, pg_catalog.text, pg_catalog.int4)
    IS 'fingerprint of a text from words, word n-grams (features => ''words'', size => n) or character n-grams (features => ''chars'')';

CREATE FUNCTION @extschema@.simhash(tokens pg_catalog.text[]) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_tokens' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash(tokens pg_catalog.text[], weights pg_catalog.float8[])
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_weighted_tokens' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.simhash(doc pg_catalog.tsvector) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_tsvector' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.tsvector, label_weights pg_catalog.float8[])
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_tsvector_weighted' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;

-- simhash_agg(feature [, weight]): a fingerprint from (feature, weight) rows
CREATE FUNCTION @extschema@.simhash_agg_trans(pg_catalog.internal, pg_catalog.text)
    RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_agg_trans(pg_catalog.internal, pg_catalog.text, pg_catalog.float8)
    RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_agg_combine(pg_catalog.internal, pg_catalog.internal)
    RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_agg_final(pg_catalog.internal) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_agg_serialize(pg_catalog.internal) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_agg_deserialize(pg_catalog.bytea, pg_catalog.internal)
    RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE @extschema@.simhash_agg(feature pg_catalog.text) (
    SFUNC = @extschema@.simhash_agg_trans, STYPE = pg_catalog.internal,
    FINALFUNC = @extschema@.simhash_agg_final,
    COMBINEFUNC = @extschema@.simhash_agg_combine,
    SERIALFUNC = @extschema@.simhash_agg_serialize,
    DESERIALFUNC = @extschema@.simhash_agg_deserialize,
    PARALLEL = SAFE);
CREATE AGGREGATE @extschema@.simhash_agg(feature pg_catalog.text, weight pg_catalog.float8) (
    SFUNC = @extschema@.simhash_agg_trans, STYPE = pg_catalog.internal,
    FINALFUNC = @extschema@.simhash_agg_final,
    COMBINEFUNC = @extschema@.simhash_agg_combine,
    SERIALFUNC = @extschema@.simhash_agg_serialize,
    DESERIALFUNC = @extschema@.simhash_agg_deserialize,
    PARALLEL = SAFE);

-- ---------------------------------------------------------------------------
-- The simhash index access method (multi-index hashing)
--
-- hamming_ball(q, r) is the query operand: a fingerprint and a radius.
-- "fp <@ hamming_ball(q, r)" is what the index answers; the planner builds
-- it from hamming_within(fp, q, r), itself rewritten from fp <~> q <= r.
-- ---------------------------------------------------------------------------

CREATE TYPE @extschema@.hamming_ball;

CREATE FUNCTION @extschema@.hamming_ball_in(pg_catalog.cstring) RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.hamming_ball_out(@extschema@.hamming_ball) RETURNS pg_catalog.cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.hamming_ball_recv(pg_catalog.internal) RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.hamming_ball_send(@extschema@.hamming_ball) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.hamming_ball (
    INPUT = @extschema@.hamming_ball_in,
    OUTPUT = @extschema@.hamming_ball_out,
    RECEIVE = @extschema@.hamming_ball_recv,
    SEND = @extschema@.hamming_ball_send,
    INTERNALLENGTH = 16,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE @extschema@.hamming_ball IS 'a fingerprint and a radius: the fingerprints within that many bits';

CREATE FUNCTION @extschema@.hamming_ball(@extschema@.simhash, pg_catalog.int4) RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME', 'hamming_ball_make' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.hamming_ball_contains(@extschema@.simhash, @extschema@.hamming_ball)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.hamming_ball_contained(@extschema@.hamming_ball, @extschema@.simhash)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.hamming_ball_sel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal, pg_catalog.int4)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.hamming_ball_joinsel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal, pg_catalog.int2, pg_catalog.internal)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE OPERATOR @extschema@.<@ (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.hamming_ball,
    FUNCTION = @extschema@.hamming_ball_contains,
    COMMUTATOR = OPERATOR(@extschema@.@>),
    RESTRICT = @extschema@.hamming_ball_sel, JOIN = @extschema@.hamming_ball_joinsel);
CREATE OPERATOR @extschema@.@> (
    LEFTARG = @extschema@.hamming_ball, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.hamming_ball_contained,
    COMMUTATOR = OPERATOR(@extschema@.<@),
    RESTRICT = @extschema@.hamming_ball_sel, JOIN = @extschema@.hamming_ball_joinsel);

CREATE FUNCTION @extschema@.mih_handler(pg_catalog.internal) RETURNS pg_catalog.index_am_handler
    AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD simhash TYPE INDEX HANDLER @extschema@.mih_handler;
COMMENT ON ACCESS METHOD simhash IS 'multi-index hashing over blocks of 64-bit fingerprints: exact Hamming-radius search';

CREATE OPERATOR CLASS @extschema@.simhash_ops
    DEFAULT FOR TYPE @extschema@.simhash USING simhash AS
        OPERATOR 1 @extschema@.<@ (@extschema@.simhash, @extschema@.hamming_ball);

-- looking inside an index (debugging, tests)
CREATE FUNCTION @extschema@.simhash_index_info(index pg_catalog.regclass,
    OUT version pg_catalog.int4, OUT blocks pg_catalog.int4, OUT block_masks @extschema@.simhash[],
    OUT runs pg_catalog.int4, OUT run_entries pg_catalog.int8[],
    OUT pending_entries pg_catalog.int8, OUT pending_pages pg_catalog.int8,
    OUT retired pg_catalog.int4)
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_index_pages(index pg_catalog.regclass,
    OUT blkno pg_catalog.int8, OUT type pg_catalog.text, OUT "table" pg_catalog.int4,
    OUT level pg_catalog.int4, OUT items pg_catalog.int4, OUT next pg_catalog.int8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_index_verify(index pg_catalog.regclass,
    OUT runs pg_catalog.int4, OUT run_entries pg_catalog.int8,
    OUT pending_entries pg_catalog.int8, OUT heap_tuples_checked pg_catalog.int8)
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
COMMENT ON FUNCTION @extschema@.simhash_index_verify(pg_catalog.regclass)
    IS 'check a simhash index''s structure and that every live row is in it; errors on corruption';

-- grouping a whole set of rows (window functions over the partition; window.c)
CREATE FUNCTION @extschema@.simhash_component(id pg_catalog.int8, fp @extschema@.simhash,
    radius pg_catalog.int4) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_component(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4)
    IS 'window function: id of the first row (in window order) of the row''s connected component of near-duplicates within radius bits';
CREATE FUNCTION @extschema@.simhash_leader(id pg_catalog.int8, fp @extschema@.simhash,
    radius pg_catalog.int4) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_leader(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4)
    IS 'window function: id of the row''s leader in leader clustering within radius bits, rows taken in window order';
