-- simhash 0.3.0 -> 0.4.0
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.4.0'" to load this file. \quit

-- BEGIN one distance
-- fp <-> q becomes the same distance as fp <~> q, of the same type (simhash_distance), and
-- both reach a simhash index in WHERE and in ORDER BY (simhash--0.4.0.sql says how). The old
-- <-> returned int4; it is dropped and made again, which a view or function of a user's that
-- uses it would forbid: say so, and what to do, before anything changes.
DO $check$
DECLARE
    users text;
BEGIN
    SELECT pg_catalog.string_agg(COALESCE(
               (SELECT 'view ' || r.ev_class::pg_catalog.regclass::pg_catalog.text
                  FROM pg_catalog.pg_rewrite r
                 WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND r.oid = d.objid),
               pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)), ', ')
      INTO users
      FROM pg_catalog.pg_depend d
     WHERE d.refclassid = 'pg_catalog.pg_operator'::pg_catalog.regclass
       AND d.refobjid = '@extschema@.<->(@extschema@.simhash, @extschema@.simhash)'::pg_catalog.regoperator
       AND d.deptype = 'n'
       AND d.classid <> 'pg_catalog.pg_amop'::pg_catalog.regclass
       AND d.classid <> 'pg_catalog.pg_operator'::pg_catalog.regclass;
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'simhash 0.4.0 changes the result type of operator <-> (simhash, simhash) from integer to simhash_distance, and these objects use it: %', users
            USING HINT = 'Drop them, run ALTER EXTENSION simhash UPDATE again and create them again '
                         '(their definitions read the same), or leave the extension at 0.3.0.';
    END IF;
END
$check$;

ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    DROP OPERATOR 2 (@extschema@.simhash, @extschema@.simhash);
DROP OPERATOR @extschema@.<-> (@extschema@.simhash, @extschema@.simhash);
DROP FUNCTION @extschema@.hamming(@extschema@.simhash, @extschema@.simhash);

CREATE FUNCTION @extschema@.simhash_distance_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION @extschema@.hamming_distance(@extschema@.simhash, @extschema@.simhash)
    SUPPORT @extschema@.simhash_distance_support;
CREATE FUNCTION @extschema@.hamming(@extschema@.simhash, @extschema@.simhash)
    RETURNS @extschema@.simhash_distance
    AS 'MODULE_PATHNAME', 'simhash_hamming_distance' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF
    SUPPORT @extschema@.simhash_distance_support;
COMMENT ON FUNCTION @extschema@.hamming(@extschema@.simhash, @extschema@.simhash)
    IS 'number of bits in which two fingerprints differ (the function of <->)';
CREATE OPERATOR @extschema@.<-> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.hamming, COMMUTATOR = OPERATOR(@extschema@.<->));
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
ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    ADD OPERATOR 2 @extschema@.<-> (@extschema@.simhash, @extschema@.simhash_order) FOR ORDER BY pg_catalog.integer_ops;
-- END one distance
