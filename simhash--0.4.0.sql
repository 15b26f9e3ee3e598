/* simhash--0.4.0.sql: install script of the simhash extension, version 0.4.0.
 *
 * CREATE EXTENSION simhash runs this one script. It creates what the 0.1.0
 * script and the updates to 0.2.0, 0.2.1, 0.3.0 and 0.4.0 create, object for
 * object: the upgrade suite (sql/upgrade.sql) compares the catalogs of both
 * ways of installing. The update scripts stay, for databases on an older
 * version (an older version is installed by 0.1.0 and its updates).
 *
 * Names (doc/reference.md, "Names"): every function starts with simhash_,
 * except the fingerprint functions simhash(...) and minhash(...) and the
 * types' I/O functions. 0.4.0 renamed the others (simhash--0.3.0--0.4.0.sql);
 * the C symbols keep the old names, which a database still at 0.3.0 calls,
 * so functions whose C symbol differs from their name give it here.
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
CREATE FUNCTION @extschema@.simhash_from_bit(pg_catalog.bit) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'bit_to_simhash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_to_bytea(@extschema@.simhash) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_from_bytea(pg_catalog.bytea) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'bytea_to_simhash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE CAST (@extschema@.simhash AS pg_catalog.bit)
    WITH FUNCTION @extschema@.simhash_to_bit(@extschema@.simhash);
CREATE CAST (pg_catalog.bit AS @extschema@.simhash)
    WITH FUNCTION @extschema@.simhash_from_bit(pg_catalog.bit);
CREATE CAST (@extschema@.simhash AS pg_catalog.bytea)
    WITH FUNCTION @extschema@.simhash_to_bytea(@extschema@.simhash);
CREATE CAST (pg_catalog.bytea AS @extschema@.simhash)
    WITH FUNCTION @extschema@.simhash_from_bytea(pg_catalog.bytea);

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

CREATE FUNCTION @extschema@.simhash_bit_count(@extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_bit_count' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.simhash_bit_count(@extschema@.simhash) IS 'number of 1 bits in a fingerprint';

-- ---------------------------------------------------------------------------
-- Hamming distance
--
-- fp <~> q returns the simhash_distance domain over int4. The comparison
-- operators between it and int2/int4/int8 carry planner support functions
-- that rewrite "fp <~> q <= k" into simhash_hamming_within(fp, q, k), which an index
-- can answer (README.md, "Why isn't my query using an index?").
-- ---------------------------------------------------------------------------

CREATE DOMAIN @extschema@.simhash_distance AS pg_catalog.int4;
COMMENT ON DOMAIN @extschema@.simhash_distance IS 'Hamming distance (0..64) returned by <~>';

-- One distance: fp <-> q is the same distance as fp <~> q, of the same type, and users
-- write both, in WHERE and in ORDER BY: both reach a simhash index. The planner support
-- function simhash_distance_support makes a call of either
-- ((fp <-> q::simhash_order)::simhash_distance): the index's ordering operator
-- <-> (simhash, simhash_order) returns plain int4, which an ORDER BY matches to the index
-- (a sort key of a domain type cannot be), and comparisons on it are still rewritten into
-- simhash_hamming_within (src/planner/rewrite.c).
CREATE FUNCTION @extschema@.simhash_distance_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.simhash_hamming_distance(@extschema@.simhash, @extschema@.simhash)
    RETURNS @extschema@.simhash_distance
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.simhash_distance_support;
COMMENT ON FUNCTION @extschema@.simhash_hamming_distance(@extschema@.simhash, @extschema@.simhash)
    IS 'number of bits in which two fingerprints differ';
CREATE OPERATOR @extschema@.<~> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_hamming_distance, COMMUTATOR = OPERATOR(@extschema@.<~>));

-- <->, the spelling pgvector users know, is <~> under another name
CREATE OPERATOR @extschema@.<-> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_hamming_distance, COMMUTATOR = OPERATOR(@extschema@.<->));

-- the same number as plain int4, for storing it (a column of the domain would belong to
-- the extension); ORDER BY it reaches the index too
CREATE FUNCTION @extschema@.simhash_hamming(@extschema@.simhash, @extschema@.simhash) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.simhash_distance_support;
COMMENT ON FUNCTION @extschema@.simhash_hamming(@extschema@.simhash, @extschema@.simhash)
    IS 'number of bits in which two fingerprints differ, as int4';

CREATE DOMAIN @extschema@.simhash_order AS @extschema@.simhash;
COMMENT ON DOMAIN @extschema@.simhash_order
    IS 'the query fingerprint of the index''s ordering operator; the planner writes it, users need not';
CREATE FUNCTION @extschema@.simhash_order_distance(@extschema@.simhash, @extschema@.simhash_order)
    RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.simhash_order_distance(@extschema@.simhash, @extschema@.simhash_order)
    IS 'the Hamming distance as int4, the index''s ORDER BY operator';
CREATE OPERATOR @extschema@.<-> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash_order,
    FUNCTION = @extschema@.simhash_order_distance);

-- answers the planner's index-condition and selectivity requests for simhash_hamming_within
CREATE FUNCTION @extschema@.simhash_within_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.simhash_hamming_within(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'simhash_hamming_within' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.simhash_within_support;
COMMENT ON FUNCTION @extschema@.simhash_hamming_within(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    IS 'true when two fingerprints differ in at most the given number of bits';

-- bound clamping used by the rewrite of < and <= with non-constant bounds
CREATE FUNCTION @extschema@.simhash_hamming_radius_le(pg_catalog.int8) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'simhash_radius_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_hamming_radius_lt(pg_catalog.int8) RETURNS pg_catalog.int4
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
    -- left type, right type, function name (%s: the kind), prefix of the built-in function
    pairs CONSTANT text[] := ARRAY[
        '@extschema@.simhash_distance', 'pg_catalog.int4', 'simhash_distance_%s_int4', 'int4',
        'pg_catalog.int4', '@extschema@.simhash_distance', 'simhash_int4_%s_distance', 'int4',
        '@extschema@.simhash_distance', 'pg_catalog.int2', 'simhash_distance_%s_int2', 'int42',
        'pg_catalog.int2', '@extschema@.simhash_distance', 'simhash_int2_%s_distance', 'int24',
        '@extschema@.simhash_distance', 'pg_catalog.int8', 'simhash_distance_%s_int8', 'int48',
        'pg_catalog.int8', '@extschema@.simhash_distance', 'simhash_int8_%s_distance', 'int84',
        '@extschema@.simhash_distance', '@extschema@.simhash_distance', 'simhash_distance_%s_distance', 'int4'];
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
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
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
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;

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
-- simhash_ball(q, r) makes the query operand, a hamming_ball: a fingerprint
-- and a radius. "fp <@ simhash_ball(q, r)" is what the index answers; the
-- planner builds it from simhash_hamming_within(fp, q, r), itself rewritten
-- from fp <~> q <= r.
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

CREATE FUNCTION @extschema@.simhash_ball(@extschema@.simhash, pg_catalog.int4) RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME', 'hamming_ball_make_checked' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- the operators' functions named as core names its own (elem_contained_by_range for <@,
-- range_contains_elem for @>)
CREATE FUNCTION @extschema@.simhash_contained_by_ball(@extschema@.simhash, @extschema@.hamming_ball)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'hamming_ball_contains' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_ball_contains(@extschema@.hamming_ball, @extschema@.simhash)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'hamming_ball_contained' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION @extschema@.simhash_ball_sel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal, pg_catalog.int4)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'hamming_ball_sel' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_ball_joinsel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal, pg_catalog.int2, pg_catalog.internal)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'hamming_ball_joinsel' LANGUAGE C STABLE STRICT PARALLEL SAFE;

CREATE OPERATOR @extschema@.<@ (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.hamming_ball,
    FUNCTION = @extschema@.simhash_contained_by_ball,
    COMMUTATOR = OPERATOR(@extschema@.@>),
    RESTRICT = @extschema@.simhash_ball_sel, JOIN = @extschema@.simhash_ball_joinsel);
CREATE OPERATOR @extschema@.@> (
    LEFTARG = @extschema@.hamming_ball, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_ball_contains,
    COMMUTATOR = OPERATOR(@extschema@.<@),
    RESTRICT = @extschema@.simhash_ball_sel, JOIN = @extschema@.simhash_ball_joinsel);

CREATE FUNCTION @extschema@.simhash_am_handler(pg_catalog.internal) RETURNS pg_catalog.index_am_handler
    AS 'MODULE_PATHNAME', 'mih_handler' LANGUAGE C;

CREATE ACCESS METHOD simhash TYPE INDEX HANDLER @extschema@.simhash_am_handler;
COMMENT ON ACCESS METHOD simhash IS 'multi-index hashing over blocks of 64-bit fingerprints: exact Hamming-radius search';

CREATE OPERATOR CLASS @extschema@.simhash_ops
    DEFAULT FOR TYPE @extschema@.simhash USING simhash AS
        OPERATOR 1 @extschema@.<@ (@extschema@.simhash, @extschema@.hamming_ball);

-- looking inside an index (debugging, tests). simhash_index_info: run_tables says which
-- tables (blocks) each run serves: VACUUM folds one table at a time (to bound the index's
-- size), so a run may serve only some tables; entries counts each entry of the runs once.
CREATE FUNCTION @extschema@.simhash_index_info(index pg_catalog.regclass,
    OUT version pg_catalog.int4, OUT blocks pg_catalog.int4, OUT block_masks @extschema@.simhash[],
    OUT runs pg_catalog.int4, OUT run_entries pg_catalog.int8[],
    OUT pending_entries pg_catalog.int8, OUT pending_pages pg_catalog.int8,
    OUT retired pg_catalog.int4, OUT entries pg_catalog.int8, OUT run_tables pg_catalog.text[])
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
-- it takes a SHARE lock on the table, which stalls its writers: it is for the table's owner
-- (checked before the lock) and for roles a DBA grants it to, not PUBLIC
REVOKE EXECUTE ON FUNCTION @extschema@.simhash_index_verify(pg_catalog.regclass) FROM PUBLIC;

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

-- ---------------------------------------------------------------------------
-- Added in 0.2.0
-- ---------------------------------------------------------------------------

-- the text functions: version 2 unless a fourth argument names the version
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
                                    version pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION @extschema@.simhash(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4)
    IS 'fingerprint of a text by a named version of the fingerprint specification (2: the default; 1: extension 0.1.0)';

CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
    version pg_catalog.int4,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;

-- simhash_ball(q, r) takes a radius of 0..64 bits, like every radius a user gives; the planner
-- builds simhash_ball_any(q, r) for simhash_hamming_within(fp, q, r) with a radius it cannot check
CREATE FUNCTION @extschema@.simhash_ball_any(@extschema@.simhash, pg_catalog.int4)
    RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME', 'hamming_ball_make' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.simhash_ball_any(@extschema@.simhash, pg_catalog.int4)
    IS 'the index operand of simhash_hamming_within(fp, q, r) for any r: below 0 matches nothing, 64 and more everything';

-- ANALYZE also measures the share of pairs of rows within each radius (the self-join's row
-- estimate needs it; src/planner/typanalyze.c)
CREATE FUNCTION @extschema@.simhash_typanalyze(pg_catalog.internal) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE STRICT PARALLEL SAFE;  -- as core's typanalyze functions
ALTER TYPE @extschema@.simhash SET (ANALYZE = @extschema@.simhash_typanalyze);

-- Comparisons of the simhash_distance domain with integers are members of btree's integer_ops
-- family, so a btree index on a stored distance column serves them (the planner matches index
-- conditions by operator family). Their functions are the built-in integer comparisons, so the
-- family orders them as it orders integers; each type pair also gets its comparison function
-- (the built-in one, declared with the domain so the family stays complete for amvalidate).
DO $gen$
DECLARE
    -- left type, right type, function name, built-in comparison function
    pairs CONSTANT text[] := ARRAY[
        '@extschema@.simhash_distance', 'pg_catalog.int4', 'simhash_distance_cmp_int4', 'btint4cmp',
        'pg_catalog.int4', '@extschema@.simhash_distance', 'simhash_int4_cmp_distance', 'btint4cmp',
        '@extschema@.simhash_distance', '@extschema@.simhash_distance', 'simhash_distance_cmp_distance', 'btint4cmp',
        '@extschema@.simhash_distance', 'pg_catalog.int2', 'simhash_distance_cmp_int2', 'btint42cmp',
        'pg_catalog.int2', '@extschema@.simhash_distance', 'simhash_int2_cmp_distance', 'btint24cmp',
        '@extschema@.simhash_distance', 'pg_catalog.int8', 'simhash_distance_cmp_int8', 'btint48cmp',
        'pg_catalog.int8', '@extschema@.simhash_distance', 'simhash_int8_cmp_distance', 'btint84cmp'];
    j int;
BEGIN
    FOR j IN 0 .. 6 LOOP
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION @extschema@.%I(%s, %s) RETURNS pg_catalog.int4'
            ' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS %L',
            pairs[j * 4 + 3], pairs[j * 4 + 1], pairs[j * 4 + 2], pairs[j * 4 + 4]);
        EXECUTE pg_catalog.format(
            'ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD'
            ' OPERATOR 1 @extschema@.< (%1$s, %2$s), OPERATOR 2 @extschema@.<= (%1$s, %2$s),'
            ' OPERATOR 3 @extschema@.= (%1$s, %2$s), OPERATOR 4 @extschema@.>= (%1$s, %2$s),'
            ' OPERATOR 5 @extschema@.> (%1$s, %2$s),'
            ' FUNCTION 1 (%1$s, %2$s) @extschema@.%3$I(%1$s, %2$s)',
            pairs[j * 4 + 1], pairs[j * 4 + 2], pairs[j * 4 + 3]);
    END LOOP;
END
$gen$;

-- ORDER BY fp <-> q (or fp <~> q) [LIMIT k] from a simhash index: exact nearest neighbours,
-- NULL fingerprints last. The planner turns either into <-> (simhash, simhash_order), which
-- returns the distance as int4, so its results sort by btree's integer_ops.
ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    ADD OPERATOR 2 @extschema@.<-> (@extschema@.simhash, @extschema@.simhash_order) FOR ORDER BY pg_catalog.integer_ops;

-- A constraint that keeps near-duplicates out:
--   ALTER TABLE docs ADD CONSTRAINT docs_no_near_dup EXCLUDE USING simhash (simhash_ball(fp, 3) WITH &&);
-- a && b: each ball holds the other's centre (the centres are within the smaller radius);
-- commutative, as EXCLUDE needs, and "within 3 bits" when both radii are 3. The index of
-- such a constraint keeps the centres (simhash_ball_ops); the heap rechecks the radii.
CREATE FUNCTION @extschema@.simhash_ball_near(@extschema@.hamming_ball, @extschema@.hamming_ball)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'hamming_ball_near' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.simhash_ball_near(@extschema@.hamming_ball, @extschema@.hamming_ball)
    IS 'a && b: the centres are within both radii of each other';
CREATE OPERATOR @extschema@.&& (
    LEFTARG = @extschema@.hamming_ball, RIGHTARG = @extschema@.hamming_ball,
    FUNCTION = @extschema@.simhash_ball_near,
    COMMUTATOR = OPERATOR(@extschema@.&&),
    RESTRICT = @extschema@.simhash_ball_sel, JOIN = @extschema@.simhash_ball_joinsel);
CREATE OPERATOR CLASS @extschema@.simhash_ball_ops
    DEFAULT FOR TYPE @extschema@.hamming_ball USING simhash AS
        OPERATOR 3 @extschema@.&& (@extschema@.hamming_ball, @extschema@.hamming_ball);

-- Pigeonhole keys: all pairs within r bits as an equi-join on (block, key), for tables whose
-- rows are spread over machines (Citus), where a Hamming join cannot probe one index.
CREATE FUNCTION @extschema@.simhash_blocks(fp @extschema@.simhash, radius pg_catalog.int4,
    OUT block pg_catalog.int4, OUT key pg_catalog.int8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 4;
COMMENT ON FUNCTION @extschema@.simhash_blocks(@extschema@.simhash, pg_catalog.int4)
    IS 'the radius + 1 (block, key) pairs of a fingerprint: two fingerprints within radius bits share at least one';
CREATE FUNCTION @extschema@.simhash_first_shared_block(a @extschema@.simhash, b @extschema@.simhash,
    radius pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_first_shared_block(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    IS 'the first of the radius + 1 blocks on which a and b agree (NULL if none): report each pair from that block only';
-- With more blocks than radius + 1, a key is the bits of one choice of (blocks - radius) of
-- them: C(blocks, radius) keys per fingerprint, far fewer candidates per key.
CREATE FUNCTION @extschema@.simhash_blocks(fp @extschema@.simhash, radius pg_catalog.int4,
    blocks pg_catalog.int4, OUT block pg_catalog.int4, OUT key pg_catalog.int8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 10;
COMMENT ON FUNCTION @extschema@.simhash_blocks(@extschema@.simhash, pg_catalog.int4, pg_catalog.int4)
    IS 'the C(blocks, radius) (block, key) pairs of a fingerprint, a key per choice of blocks - radius of the blocks: two fingerprints within radius bits share at least one';
CREATE FUNCTION @extschema@.simhash_first_shared_block(a @extschema@.simhash, b @extschema@.simhash,
    radius pg_catalog.int4, blocks pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_first_shared_block(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4, pg_catalog.int4)
    IS 'the first key of simhash_blocks(a, radius, blocks) that b shares (NULL if none): report each pair from that key only';

-- Groups from a pair list (the pairs of near-duplicates, however found: a distributed
-- self-join on pigeonhole keys, a batch job), with the window functions' rules, ids in
-- ascending order.
CREATE FUNCTION @extschema@.simhash_pair_groups(pairs pg_catalog.text,
    method pg_catalog.text DEFAULT 'leader', OUT id pg_catalog.int8, OUT keep_id pg_catalog.int8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.simhash_pair_groups(pg_catalog.text, pg_catalog.text)
    IS 'the groups of the ids in a pair list (a query returning two id columns): leader clustering or connected components, ids taken in ascending order';

-- ---------------------------------------------------------------------------
-- Added in 0.3.0
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.simhash_jaccard(a pg_catalog.text, b pg_catalog.text)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_jaccard' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
CREATE FUNCTION @extschema@.simhash_jaccard(a pg_catalog.text, b pg_catalog.text, features pg_catalog.text)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_jaccard' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
CREATE FUNCTION @extschema@.simhash_jaccard(a pg_catalog.text, b pg_catalog.text, features pg_catalog.text,
                                            size pg_catalog.int4)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_jaccard' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
COMMENT ON FUNCTION @extschema@.simhash_jaccard(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int4)
    IS 'exact Jaccard similarity of two documents'' feature sets (fingerprint specification version 2: the features simhash(text, features, size) hashes), 0 to 1; NULL when neither has a feature';

-- simhash(x) of a varchar, char(n) or name value: PostgreSQL reads a one-argument call named
-- like a type as a cast to it whenever a cast path exists (for every string type, through
-- its text form) and no function takes the argument's type exactly, so without these
-- simhash(varchar_column) parsed the text as 16 hex digits. A char(n) value is fingerprinted
-- as its text (trailing spaces are separators to the tokeniser, as they are insignificant
-- to char(n)); a name through its text.
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.varchar) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.bpchar) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.name) RETURNS @extschema@.simhash
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS 'SELECT @extschema@.simhash($1::pg_catalog.text)';
COMMENT ON FUNCTION @extschema@.simhash(pg_catalog.varchar)
    IS 'fingerprint of a varchar as of its text (so that simhash(column) is no cast to simhash)';

CREATE FUNCTION @extschema@.simhash_containment(a pg_catalog.text, b pg_catalog.text)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_containment' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
CREATE FUNCTION @extschema@.simhash_containment(a pg_catalog.text, b pg_catalog.text, features pg_catalog.text)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_containment' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
CREATE FUNCTION @extschema@.simhash_containment(a pg_catalog.text, b pg_catalog.text, features pg_catalog.text,
                                                size pg_catalog.int4)
    RETURNS pg_catalog.float8
    AS 'MODULE_PATHNAME', 'simhash_containment' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 200;
COMMENT ON FUNCTION @extschema@.simhash_containment(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int4)
    IS 'share of the smaller document''s feature set found in the larger''s (the features simhash_jaccard compares), 0 to 1; NULL when neither has a feature, 0 when only one has';

CREATE FUNCTION @extschema@.minhash(doc pg_catalog.text)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_minhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.minhash(doc pg_catalog.text, features pg_catalog.text)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_minhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.minhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_minhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.minhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
                                    version pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_minhash_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION @extschema@.minhash(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4)
    IS 'one-permutation MinHash sketch (64 bins, 1 bit each, optimal densification) of the features simhash(text, features, size) hashes; Hamming distance about 32 (1 - Jaccard); NULL when the document has no feature';

CREATE FUNCTION @extschema@.simhash_key_pack_transfn(pg_catalog.internal, pg_catalog.int8, @extschema@.simhash,
                                                     pg_catalog.int4, pg_catalog.int4, pg_catalog.int4)
    RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'simhash_key_pack_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION @extschema@.simhash_key_pack_finalfn(pg_catalog.internal)
    RETURNS pg_catalog.bytea[]
    AS 'MODULE_PATHNAME', 'simhash_key_pack_finalfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE @extschema@.simhash_key_pack(id pg_catalog.int8, fp @extschema@.simhash, radius pg_catalog.int4,
                                              blocks pg_catalog.int4, targets pg_catalog.int4) (
    SFUNC = @extschema@.simhash_key_pack_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = @extschema@.simhash_key_pack_finalfn,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE @extschema@.simhash_key_pack(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4, pg_catalog.int4, pg_catalog.int4)
    IS 'the pigeonhole keys (simhash_blocks(fp, radius, blocks)) of the group''s rows, packed: an array of one bytea per target (NULL when no key goes there) for simhash_pack_partners';
CREATE FUNCTION @extschema@.simhash_pack_partners(packs pg_catalog.bytea[], radius pg_catalog.int4, blocks pg_catalog.int4)
    RETURNS TABLE (id pg_catalog.int8, fp @extschema@.simhash, partners pg_catalog.int8[])
    AS 'MODULE_PATHNAME', 'simhash_pack_partners' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 1000;
COMMENT ON FUNCTION @extschema@.simhash_pack_partners(pg_catalog.bytea[], pg_catalog.int4, pg_catalog.int4)
    IS 'the rows of one target''s key packs (simhash_key_pack) that are in a pair within radius whose first shared key is there, each with its partners'' ids';
CREATE FUNCTION @extschema@.simhash_pair_groups(pairs pg_catalog.text, method pg_catalog.text,
    id_order pg_catalog.text, OUT id pg_catalog.int8, OUT keep_id pg_catalog.int8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_pair_groups' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.simhash_pair_groups(pg_catalog.text, pg_catalog.text, pg_catalog.text)
    IS 'the groups of the ids in a pair list (a query returning two id columns): leader clustering or connected components, ids taken in the order of the id_order query (one id column, the first to keep first)';

-- grouping on verified pairs (window_verified.c): the window functions with a text and a threshold
CREATE TYPE @extschema@.simhash_group_member AS (keep_id pg_catalog.int8, jaccard pg_catalog.float8,
                                                 near_id pg_catalog.int8, near_jaccard pg_catalog.float8);
COMMENT ON TYPE @extschema@.simhash_group_member
    IS 'a row''s place in a verified grouping: the kept row''s id, the similarity of the accepted pair that grouped it, and, for a row kept though it had candidates, the most similar candidate turned down';
CREATE FUNCTION @extschema@.simhash_component(id pg_catalog.int8, fp @extschema@.simhash, radius pg_catalog.int4,
    verify_text pg_catalog.text, threshold pg_catalog.float8, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash_group_member
    AS 'MODULE_PATHNAME', 'simhash_component_verified' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_component(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4,
    pg_catalog.text, pg_catalog.float8, pg_catalog.text, pg_catalog.int4)
    IS 'window function: connected components of the pairs within radius bits whose texts'' Jaccard similarity (simhash_jaccard(a, b, features, size)) reaches threshold; the first row (in window order) is kept';
CREATE FUNCTION @extschema@.simhash_leader(id pg_catalog.int8, fp @extschema@.simhash, radius pg_catalog.int4,
    verify_text pg_catalog.text, threshold pg_catalog.float8, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash_group_member
    AS 'MODULE_PATHNAME', 'simhash_leader_verified' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_leader(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4,
    pg_catalog.text, pg_catalog.float8, pg_catalog.text, pg_catalog.int4)
    IS 'window function: leader clustering on verified pairs: in window order, a row joins the first earlier leader within radius bits whose text''s Jaccard similarity with its own (simhash_jaccard(a, b, features, size)) reaches threshold, or leads';
