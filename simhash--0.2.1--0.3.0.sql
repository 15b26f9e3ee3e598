/* simhash--0.2.1--0.3.0.sql: update from 0.2.1 to 0.3.0.
 *
 * 0.3.0 adds simhash_jaccard, the exact Jaccard similarity of two documents'
 * feature sets under fingerprint specification version 2: the verification
 * step after a fingerprint search (README.md, "Verifying candidates"),
 * simhash_containment, the share of the smaller set in the larger, and
 * minhash, a one-permutation MinHash sketch of the same features in the 64
 * bits of a simhash (README.md, "MinHash specification").
 */

\echo Use "ALTER EXTENSION simhash UPDATE TO '0.3.0'" to load this file. \quit

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

CREATE FUNCTION @extschema@.simhash_key_partners(id pg_catalog.int8, fp @extschema@.simhash, block pg_catalog.int4,
                                                 radius pg_catalog.int4, blocks pg_catalog.int4)
    RETURNS pg_catalog.int8[]
    AS 'MODULE_PATHNAME', 'simhash_key_partners' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.simhash_key_partners(pg_catalog.int8, @extschema@.simhash, pg_catalog.int4, pg_catalog.int4, pg_catalog.int4)
    IS 'window function over the rows of one pigeonhole key (PARTITION BY key from simhash_blocks(fp, radius, blocks)): the ids of the row''s partners in the pairs within radius whose first shared key it is';

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
