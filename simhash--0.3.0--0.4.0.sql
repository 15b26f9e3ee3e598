/* simhash--0.3.0--0.4.0.sql: update from 0.3.0 to 0.4.0.
 *
 * 0.4.0 names every function by one scheme (doc/reference.md, "Names"):
 * each starts with simhash_, except the fingerprint functions simhash(...)
 * and minhash(...) and the types' I/O functions (TYPE_in, _out, _recv,
 * _send); operator functions are named as core names its own
 * (range_contains_elem for @>, elem_contained_by_range for <@). The
 * functions are renamed in place: ALTER FUNCTION ... RENAME TO keeps their
 * OIDs, so the operators, operator classes, casts, the access method and
 * the indexes, constraints and views that use them keep working; only calls
 * by the old names stop (CHANGELOG.md, 0.4.0). simhash_key_partners, which
 * simhash_key_pack with simhash_pack_partners replaces, is dropped.
 *
 * The C symbols keep their names (a database of the same cluster still at
 * 0.3.0 calls them by the old functions); simhash--0.4.0.sql names them
 * explicitly, so that both ways to 0.4.0 end in the same catalog
 * (sql/upgrade.sql).
 */

\echo Use "ALTER EXTENSION simhash UPDATE TO '0.4.0'" to load this file. \quit

-- 0.4.0 also makes <-> (simhash, simhash) again, with the type of <~> (simhash_distance; it
-- returned int4), so that both reach a simhash index in WHERE and ORDER BY (the block "One
-- distance" below). A view or function of a user's that uses the old <-> would forbid
-- dropping it: say so, and what to do, before anything changes.
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

-- ---------------------------------------------------------------------------
-- The distance functions behind <~> and <->
-- (kept together: the planner's ORDER BY / WHERE support for them builds on
-- this block)
-- ---------------------------------------------------------------------------

ALTER FUNCTION @extschema@.hamming_distance(@extschema@.simhash, @extschema@.simhash)
    RENAME TO simhash_hamming_distance;
ALTER FUNCTION @extschema@.hamming(@extschema@.simhash, @extschema@.simhash)
    RENAME TO simhash_hamming;

-- ---------------------------------------------------------------------------
-- Radius search: the function the planner rewrites fp <~> q <= r into, its
-- bound clamps, and the index operand (src/planner/rewrite.c looks these up
-- by the new names, and by the old ones in a database at 0.3.0)
-- ---------------------------------------------------------------------------

ALTER FUNCTION @extschema@.hamming_within(@extschema@.simhash, @extschema@.simhash, pg_catalog.int4)
    RENAME TO simhash_hamming_within;
ALTER FUNCTION @extschema@.hamming_radius_le(pg_catalog.int8) RENAME TO simhash_hamming_radius_le;
ALTER FUNCTION @extschema@.hamming_radius_lt(pg_catalog.int8) RENAME TO simhash_hamming_radius_lt;

ALTER FUNCTION @extschema@.hamming_ball(@extschema@.simhash, pg_catalog.int4) RENAME TO simhash_ball;
ALTER FUNCTION @extschema@.hamming_ball_any(@extschema@.simhash, pg_catalog.int4) RENAME TO simhash_ball_any;
COMMENT ON FUNCTION @extschema@.simhash_ball_any(@extschema@.simhash, pg_catalog.int4)
    IS 'the index operand of simhash_hamming_within(fp, q, r) for any r: below 0 matches nothing, 64 and more everything';

-- the operators on hamming_ball, named as core names its own: fp <@ ball was
-- hamming_ball_contains and ball @> fp hamming_ball_contained, the reverse
ALTER FUNCTION @extschema@.hamming_ball_contains(@extschema@.simhash, @extschema@.hamming_ball)
    RENAME TO simhash_contained_by_ball;
ALTER FUNCTION @extschema@.hamming_ball_contained(@extschema@.hamming_ball, @extschema@.simhash)
    RENAME TO simhash_ball_contains;
ALTER FUNCTION @extschema@.hamming_ball_near(@extschema@.hamming_ball, @extschema@.hamming_ball)
    RENAME TO simhash_ball_near;
ALTER FUNCTION @extschema@.hamming_ball_sel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal, pg_catalog.int4)
    RENAME TO simhash_ball_sel;
ALTER FUNCTION @extschema@.hamming_ball_joinsel(pg_catalog.internal, pg_catalog.oid, pg_catalog.internal,
                                                pg_catalog.int2, pg_catalog.internal)
    RENAME TO simhash_ball_joinsel;

-- ---------------------------------------------------------------------------
-- The access method's handler, the bit count, the casts from bit and bytea
-- ---------------------------------------------------------------------------

ALTER FUNCTION @extschema@.mih_handler(pg_catalog.internal) RENAME TO simhash_am_handler;
-- bit_count(simhash) overloaded core's bit_count(bit) and bit_count(bytea)
ALTER FUNCTION @extschema@.bit_count(@extschema@.simhash) RENAME TO simhash_bit_count;
ALTER FUNCTION @extschema@.bit_to_simhash(pg_catalog.bit) RENAME TO simhash_from_bit;
ALTER FUNCTION @extschema@.bytea_to_simhash(pg_catalog.bytea) RENAME TO simhash_from_bytea;

-- ---------------------------------------------------------------------------
-- The comparisons between the simhash_distance domain and integers (the
-- functions of their operators: distance_lt_int4 becomes
-- simhash_distance_lt_int4) and the btree comparison functions of those
-- type pairs in integer_ops (btcmp_distance_int8 becomes
-- simhash_distance_cmp_int8)
-- ---------------------------------------------------------------------------

ALTER FUNCTION @extschema@.distance_lt_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_lt_int4;
ALTER FUNCTION @extschema@.distance_le_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_le_int4;
ALTER FUNCTION @extschema@.distance_eq_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_eq_int4;
ALTER FUNCTION @extschema@.distance_ne_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_ne_int4;
ALTER FUNCTION @extschema@.distance_ge_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_ge_int4;
ALTER FUNCTION @extschema@.distance_gt_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_gt_int4;

ALTER FUNCTION @extschema@.int4_lt_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_lt_distance;
ALTER FUNCTION @extschema@.int4_le_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_le_distance;
ALTER FUNCTION @extschema@.int4_eq_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_eq_distance;
ALTER FUNCTION @extschema@.int4_ne_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_ne_distance;
ALTER FUNCTION @extschema@.int4_ge_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_ge_distance;
ALTER FUNCTION @extschema@.int4_gt_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_gt_distance;

ALTER FUNCTION @extschema@.distance_lt_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_lt_int2;
ALTER FUNCTION @extschema@.distance_le_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_le_int2;
ALTER FUNCTION @extschema@.distance_eq_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_eq_int2;
ALTER FUNCTION @extschema@.distance_ne_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_ne_int2;
ALTER FUNCTION @extschema@.distance_ge_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_ge_int2;
ALTER FUNCTION @extschema@.distance_gt_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_gt_int2;

ALTER FUNCTION @extschema@.int2_lt_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_lt_distance;
ALTER FUNCTION @extschema@.int2_le_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_le_distance;
ALTER FUNCTION @extschema@.int2_eq_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_eq_distance;
ALTER FUNCTION @extschema@.int2_ne_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_ne_distance;
ALTER FUNCTION @extschema@.int2_ge_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_ge_distance;
ALTER FUNCTION @extschema@.int2_gt_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_gt_distance;

ALTER FUNCTION @extschema@.distance_lt_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_lt_int8;
ALTER FUNCTION @extschema@.distance_le_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_le_int8;
ALTER FUNCTION @extschema@.distance_eq_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_eq_int8;
ALTER FUNCTION @extschema@.distance_ne_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_ne_int8;
ALTER FUNCTION @extschema@.distance_ge_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_ge_int8;
ALTER FUNCTION @extschema@.distance_gt_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_gt_int8;

ALTER FUNCTION @extschema@.int8_lt_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_lt_distance;
ALTER FUNCTION @extschema@.int8_le_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_le_distance;
ALTER FUNCTION @extschema@.int8_eq_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_eq_distance;
ALTER FUNCTION @extschema@.int8_ne_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_ne_distance;
ALTER FUNCTION @extschema@.int8_ge_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_ge_distance;
ALTER FUNCTION @extschema@.int8_gt_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_gt_distance;

ALTER FUNCTION @extschema@.distance_lt_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_lt_distance;
ALTER FUNCTION @extschema@.distance_le_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_le_distance;
ALTER FUNCTION @extschema@.distance_eq_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_eq_distance;
ALTER FUNCTION @extschema@.distance_ne_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_ne_distance;
ALTER FUNCTION @extschema@.distance_ge_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_ge_distance;
ALTER FUNCTION @extschema@.distance_gt_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_gt_distance;

ALTER FUNCTION @extschema@.btcmp_distance_int4(@extschema@.simhash_distance, pg_catalog.int4) RENAME TO simhash_distance_cmp_int4;
ALTER FUNCTION @extschema@.btcmp_int4_distance(pg_catalog.int4, @extschema@.simhash_distance) RENAME TO simhash_int4_cmp_distance;
ALTER FUNCTION @extschema@.btcmp_distance_int2(@extschema@.simhash_distance, pg_catalog.int2) RENAME TO simhash_distance_cmp_int2;
ALTER FUNCTION @extschema@.btcmp_int2_distance(pg_catalog.int2, @extschema@.simhash_distance) RENAME TO simhash_int2_cmp_distance;
ALTER FUNCTION @extschema@.btcmp_distance_int8(@extschema@.simhash_distance, pg_catalog.int8) RENAME TO simhash_distance_cmp_int8;
ALTER FUNCTION @extschema@.btcmp_int8_distance(pg_catalog.int8, @extschema@.simhash_distance) RENAME TO simhash_int8_cmp_distance;
ALTER FUNCTION @extschema@.btcmp_distance_distance(@extschema@.simhash_distance, @extschema@.simhash_distance) RENAME TO simhash_distance_cmp_distance;

-- ---------------------------------------------------------------------------
-- Dropped: simhash_key_partners (simhash_key_pack with simhash_pack_partners
-- finds the same pairs, examples/dedup_pairs.sql). No CASCADE: a view (or a
-- BEGIN ATOMIC function) of the database's own that calls it stops the
-- update, and the error says which.
-- ---------------------------------------------------------------------------

DROP FUNCTION @extschema@.simhash_key_partners(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4,
                                               pg_catalog.int4, pg_catalog.int4);

-- ---------------------------------------------------------------------------
-- One distance: <-> becomes <~> under another name (simhash_hamming_distance,
-- returning simhash_distance), whose planner support makes it the index's
-- ordering operator <-> (simhash, simhash_order), which returns int4
-- (simhash--0.4.0.sql says why); simhash_hamming keeps returning int4.
-- ---------------------------------------------------------------------------

ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    DROP OPERATOR 2 (@extschema@.simhash, @extschema@.simhash);
DROP OPERATOR @extschema@.<-> (@extschema@.simhash, @extschema@.simhash);

CREATE FUNCTION @extschema@.simhash_distance_support(pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
ALTER FUNCTION @extschema@.simhash_hamming_distance(@extschema@.simhash, @extschema@.simhash)
    SUPPORT @extschema@.simhash_distance_support;
CREATE OPERATOR @extschema@.<-> (
    LEFTARG = @extschema@.simhash, RIGHTARG = @extschema@.simhash,
    FUNCTION = @extschema@.simhash_hamming_distance, COMMUTATOR = OPERATOR(@extschema@.<->));
-- simhash_hamming stays int4, for storing the number; no operator is its now
ALTER FUNCTION @extschema@.simhash_hamming(@extschema@.simhash, @extschema@.simhash)
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
ALTER OPERATOR FAMILY @extschema@.simhash_ops USING simhash
    ADD OPERATOR 2 @extschema@.<-> (@extschema@.simhash, @extschema@.simhash_order) FOR ORDER BY pg_catalog.integer_ops;
