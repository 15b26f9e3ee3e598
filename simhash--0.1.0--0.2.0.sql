/* simhash--0.1.0--0.2.0.sql: update from 0.1.0 to 0.2.0.
 *
 * Fingerprint specification version 2 becomes the default of the text
 * functions: each distinct feature counts once, and Han variant characters
 * are folded (README.md, "Fingerprint specification"). Version 1 stays
 * reachable, bit for bit, as simhash(doc, features, size, 1).
 *
 * Fingerprints stored by 0.1.0 (generated columns, expression indexes,
 * materialized views) are version 1 and are not recomputed here: that would
 * rewrite tables inside ALTER EXTENSION. Each object that depends on a
 * function whose result changes is named in a WARNING, with what to do.
 *
 * Also: hamming_ball(q, r) takes a radius of 0..64 (hamming_ball_any, new,
 * is the planner's operand for any radius), and simhash_index_verify is no
 * longer granted to PUBLIC; ANALYZE of a simhash column also measures the
 * share of pairs of rows within each radius, for the self-join's estimate.
 */

\echo Use "ALTER EXTENSION simhash UPDATE TO '0.2.0'" to load this file. \quit

DO $warn$
DECLARE
    dependents pg_catalog.text;
BEGIN
    SELECT pg_catalog.string_agg(DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid), ', ')
    INTO dependents
    FROM pg_catalog.pg_depend d
    WHERE d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND d.refobjid IN ('@extschema@.simhash(pg_catalog.text)'::pg_catalog.regprocedure,
                         '@extschema@.simhash(pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
                         '@extschema@.simhash(pg_catalog.text, pg_catalog.text, pg_catalog.int4)'::pg_catalog.regprocedure)
      AND d.deptype = 'n';
    IF dependents IS NOT NULL THEN
        RAISE WARNING 'simhash(text) now computes fingerprint specification version 2; these objects hold or compute version 1 fingerprints: %', dependents
            USING HINT = 'Recompute them: UPDATE the table (SET doc = doc) to regenerate a stored generated column, REINDEX an expression index, REFRESH a materialized view. Or keep version 1 explicitly with simhash(doc, ''words'', 2, 1). See README.md, "Upgrading".';
    END IF;
END
$warn$;

-- the text functions: version 2 unless a fourth argument names the version
CREATE OR REPLACE FUNCTION @extschema@.simhash(doc pg_catalog.text) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE OR REPLACE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text) RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE OR REPLACE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
CREATE FUNCTION @extschema@.simhash(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
                                    version pg_catalog.int4)
    RETURNS @extschema@.simhash
    AS 'MODULE_PATHNAME', 'simhash_text_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION @extschema@.simhash(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.int4)
    IS 'fingerprint of a text by a named version of the fingerprint specification (2: the default; 1: extension 0.1.0)';

CREATE OR REPLACE FUNCTION @extschema@.simhash_features(doc pg_catalog.text,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE OR REPLACE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE OR REPLACE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;
CREATE FUNCTION @extschema@.simhash_features(doc pg_catalog.text, features pg_catalog.text, size pg_catalog.int4,
    version pg_catalog.int4,
    OUT feature pg_catalog.text, OUT weight pg_catalog.float8, OUT hash @extschema@.simhash)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_v2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100 ROWS 100;

-- hamming_ball(q, r) takes a radius of 0..64 bits, like every radius a user gives; the planner
-- builds hamming_ball_any(q, r) for hamming_within(fp, q, r) with a radius it cannot check
CREATE OR REPLACE FUNCTION @extschema@.hamming_ball(@extschema@.simhash, pg_catalog.int4)
    RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME', 'hamming_ball_make_checked' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.hamming_ball_any(@extschema@.simhash, pg_catalog.int4)
    RETURNS @extschema@.hamming_ball
    AS 'MODULE_PATHNAME', 'hamming_ball_make' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.hamming_ball_any(@extschema@.simhash, pg_catalog.int4)
    IS 'the index operand of hamming_within(fp, q, r) for any r: below 0 matches nothing, 64 and more everything';

-- simhash_index_verify takes a SHARE lock on the table, which stalls its writers: it is for
-- the table's owner (checked before the lock) and for roles a DBA grants it to, not PUBLIC
REVOKE EXECUTE ON FUNCTION @extschema@.simhash_index_verify(pg_catalog.regclass) FROM PUBLIC;

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
    -- left type, right type, name part, built-in comparison function
    pairs CONSTANT text[] := ARRAY[
        '@extschema@.simhash_distance', 'pg_catalog.int4', 'distance_int4', 'btint4cmp',
        'pg_catalog.int4', '@extschema@.simhash_distance', 'int4_distance', 'btint4cmp',
        '@extschema@.simhash_distance', '@extschema@.simhash_distance', 'distance_distance', 'btint4cmp',
        '@extschema@.simhash_distance', 'pg_catalog.int2', 'distance_int2', 'btint42cmp',
        'pg_catalog.int2', '@extschema@.simhash_distance', 'int2_distance', 'btint24cmp',
        '@extschema@.simhash_distance', 'pg_catalog.int8', 'distance_int8', 'btint48cmp',
        'pg_catalog.int8', '@extschema@.simhash_distance', 'int8_distance', 'btint84cmp'];
    j int;
BEGIN
    FOR j IN 0 .. 6 LOOP
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION @extschema@.%I(%s, %s) RETURNS pg_catalog.int4'
            ' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS %L',
            'btcmp_' || pairs[j * 4 + 3], pairs[j * 4 + 1], pairs[j * 4 + 2], pairs[j * 4 + 4]);
        EXECUTE pg_catalog.format(
            'ALTER OPERATOR FAMILY pg_catalog.integer_ops USING btree ADD'
            ' OPERATOR 1 @extschema@.< (%1$s, %2$s), OPERATOR 2 @extschema@.<= (%1$s, %2$s),'
            ' OPERATOR 3 @extschema@.= (%1$s, %2$s), OPERATOR 4 @extschema@.>= (%1$s, %2$s),'
            ' OPERATOR 5 @extschema@.> (%1$s, %2$s),'
            ' FUNCTION 1 (%1$s, %2$s) @extschema@.%3$I(%1$s, %2$s)',
            pairs[j * 4 + 1], pairs[j * 4 + 2], 'btcmp_' || pairs[j * 4 + 3]);
    END LOOP;
END
$gen$;

-- simhash_index_info: run_tables says which tables (blocks) each run serves. VACUUM folds
-- one table at a time (to bound the index's size), so a run may serve only some tables;
-- entries counts each entry of the runs once (run_entries no longer sums to it).
DROP FUNCTION @extschema@.simhash_index_info(pg_catalog.regclass);
CREATE FUNCTION @extschema@.simhash_index_info(index pg_catalog.regclass,
    OUT version pg_catalog.int4, OUT blocks pg_catalog.int4, OUT block_masks @extschema@.simhash[],
    OUT runs pg_catalog.int4, OUT run_entries pg_catalog.int8[],
    OUT pending_entries pg_catalog.int8, OUT pending_pages pg_catalog.int8,
    OUT retired pg_catalog.int4, OUT entries pg_catalog.int8, OUT run_tables pg_catalog.text[])
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;

-- ORDER BY fp <-> q [LIMIT k] from a simhash index: exact nearest neighbours, NULL
-- fingerprints last. <-> (simhash, simhash) returns the distance as int4, so its results sort
-- by btree's integer_ops. Indexes built before this need a REINDEX to serve ordered scans.
ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    ADD OPERATOR 2 @extschema@.<-> (@extschema@.simhash, @extschema@.simhash) FOR ORDER BY pg_catalog.integer_ops;

-- A constraint that keeps near-duplicates out:
--   ALTER TABLE docs ADD CONSTRAINT docs_no_near_dup EXCLUDE USING simhash (hamming_ball(fp, 3) WITH &&);
-- a && b: each ball holds the other's centre (the centres are within the smaller radius);
-- commutative, as EXCLUDE needs, and "within 3 bits" when both radii are 3. The index of
-- such a constraint keeps the centres (simhash_ball_ops); the heap rechecks the radii.
CREATE FUNCTION @extschema@.hamming_ball_near(@extschema@.hamming_ball, @extschema@.hamming_ball)
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION @extschema@.hamming_ball_near(@extschema@.hamming_ball, @extschema@.hamming_ball)
    IS 'a && b: the centres are within both radii of each other';
CREATE OPERATOR @extschema@.&& (
    LEFTARG = @extschema@.hamming_ball, RIGHTARG = @extschema@.hamming_ball,
    FUNCTION = @extschema@.hamming_ball_near,
    COMMUTATOR = OPERATOR(@extschema@.&&),
    RESTRICT = @extschema@.hamming_ball_sel, JOIN = @extschema@.hamming_ball_joinsel);
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
