--
-- security: the install script and the planner support functions cannot be
-- redirected through search_path. Hostile look-alike functions and operators
-- (which raise an exception when called) are placed first on the session's
-- search_path and in the target schema itself; the extension must install,
-- work, and never call them.
--
\set VERBOSITY default
-- start without the extension (earlier suites in this database created it)
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS simhash CASCADE;
RESET client_min_messages;

CREATE SCHEMA evil;
CREATE SCHEMA sh_target;

-- traps: each raises an exception naming itself when called
CREATE FUNCTION evil.format(text, VARIADIC text[]) RETURNS text
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.format'; END$$;
CREATE FUNCTION evil.int4_op(int4, int4) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil int4 operator'; END$$;
CREATE FUNCTION evil.int4le(int4, int4) RETURNS bool
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.int4le'; END$$;
CREATE FUNCTION evil.text_op(text, text) RETURNS text
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil text operator'; END$$;
CREATE FUNCTION evil.jsonb_op(jsonb, text) RETURNS text
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil jsonb operator'; END$$;
-- the operators the script's generator block computes with (* + || ->>) and
-- the comparison its operators are built on
CREATE OPERATOR evil.* (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil.int4_op);
CREATE OPERATOR evil.+ (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil.int4_op);
CREATE OPERATOR evil.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_op);
CREATE OPERATOR evil.->> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = evil.jsonb_op);
CREATE OPERATOR evil.<= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil.int4le);
-- the same look-alikes in the schema the extension is installed into
CREATE FUNCTION sh_target.format(text, VARIADIC text[]) RETURNS text
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: sh_target.format'; END$$;
CREATE FUNCTION sh_target.int4_op(int4, int4) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: sh_target int4 operator'; END$$;
CREATE FUNCTION sh_target.text_op(text, text) RETURNS text
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: sh_target text operator'; END$$;
CREATE OPERATOR sh_target.* (LEFTARG = int4, RIGHTARG = int4, FUNCTION = sh_target.int4_op);
CREATE OPERATOR sh_target.+ (LEFTARG = int4, RIGHTARG = int4, FUNCTION = sh_target.int4_op);
CREATE OPERATOR sh_target.|| (LEFTARG = text, RIGHTARG = text, FUNCTION = sh_target.text_op);

-- the traps work: with evil ahead of pg_catalog they are what unqualified
-- names find
SET search_path = evil, pg_catalog, public;
SELECT format('%s', 'x'::text);
SELECT 2 * 3;
SELECT 'a'::text || 'b'::text;
SELECT 1 <= 2;

--
-- Install with that search_path: nothing hostile is called.
--
CREATE EXTENSION simhash SCHEMA sh_target;
RESET search_path;
SELECT e.extname, n.nspname, e.extrelocatable
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'simhash';
-- every member object that lives in a schema is in sh_target
SELECT classid::regclass AS catalog,
       bool_and((pg_identify_object(classid, objid, 0)).schema = 'sh_target') AS all_in_sh_target
FROM pg_depend WHERE refclassid = 'pg_extension'::regclass
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'simhash') AND deptype = 'e'
  AND (pg_identify_object(classid, objid, 0)).schema IS NOT NULL
GROUP BY classid ORDER BY classid::regclass::text COLLATE "C";
-- the 42 generated comparison functions are bound to the right built-ins and
-- support functions
SELECT count(*) AS comparison_functions,
       count(*) FILTER (WHERE p.prosrc = CASE
           WHEN p.proname LIKE 'simhash\_distance\_%\_int2' THEN 'int42' || split_part(p.proname, '_', 3)
           WHEN p.proname LIKE 'simhash\_int2\_%\_distance' THEN 'int24' || split_part(p.proname, '_', 3)
           WHEN p.proname LIKE 'simhash\_distance\_%\_int8' THEN 'int48' || split_part(p.proname, '_', 3)
           WHEN p.proname LIKE 'simhash\_int8\_%\_distance' THEN 'int84' || split_part(p.proname, '_', 3)
           ELSE 'int4' || split_part(p.proname, '_', 3) END) AS right_builtin,
       count(*) FILTER (WHERE p.prosupport = ('sh_target.simhash_distance_'
                                              || split_part(p.proname, '_', 3) || '_support')::regproc) AS right_support
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = 'sh_target'::regnamespace AND l.lanname = 'internal' AND p.prokind = 'f'
  AND p.proname NOT LIKE 'simhash\_%\_cmp\_%';
-- and the 7 btree comparison functions of the distance domain (integer_ops)
-- are the built-in ones, members of that family for the right type pairs
SELECT p.proname, p.prosrc, pg_get_function_identity_arguments(p.oid) AS args,
       EXISTS (SELECT 1 FROM pg_amproc ap JOIN pg_opfamily f ON f.oid = ap.amprocfamily
               WHERE ap.amproc = p.oid AND f.opfname = 'integer_ops'
                 AND ap.amproclefttype = p.proargtypes[0] AND ap.amprocrighttype = p.proargtypes[1]) AS member
FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = 'sh_target'::regnamespace AND l.lanname = 'internal' AND p.proname LIKE 'simhash\_%\_cmp\_%'
ORDER BY 1;

--
-- It works with the hostile search_path in place (schema-qualified access),
-- and the planner support calls its own functions, never look-alikes of
-- them that come first on the path.
--
CREATE FUNCTION evil.simhash_hamming_within(sh_target.simhash, sh_target.simhash, int4) RETURNS bool
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.simhash_hamming_within'; END$$;
CREATE FUNCTION evil.simhash_hamming_radius_le(int8) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.simhash_hamming_radius_le'; END$$;
CREATE FUNCTION evil.simhash_hamming_radius_lt(int8) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.simhash_hamming_radius_lt'; END$$;
-- and their names before 0.4.0, which the library falls back to in a database at 0.3.0
CREATE FUNCTION evil.hamming_within(sh_target.simhash, sh_target.simhash, int4) RETURNS bool
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.hamming_within'; END$$;
CREATE FUNCTION evil.hamming_radius_le(int8) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.hamming_radius_le'; END$$;
CREATE FUNCTION evil.hamming_radius_lt(int8) RETURNS int4
    LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'hijacked: evil.hamming_radius_lt'; END$$;
CREATE TABLE public.sh_sec (id int, fp sh_target.simhash, k int8);
INSERT INTO public.sh_sec
    SELECT g, sh_target.simhash(('document ' || g)::text), g % 5 FROM generate_series(1, 50) g;
SET search_path = evil, pg_catalog, public;
SELECT sh_target.simhash('hello world'::text) AS fingerprint,
       '0000000000000000'::sh_target.simhash OPERATOR(sh_target.<~>) 'ffffffffffffffff' AS distance;
-- the comparison operator qualified: rewritten into sh_target's functions
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM sh_sec
WHERE fp OPERATOR(sh_target.<~>) sh_target.simhash('document 7'::text) OPERATOR(sh_target.<=) 3;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM sh_sec
WHERE fp OPERATOR(sh_target.<~>) sh_target.simhash('document 7'::text) OPERATOR(sh_target.<) k;
SELECT count(*) AS within_20
FROM sh_sec
WHERE fp OPERATOR(sh_target.<~>) sh_target.simhash('document 7'::text) OPERATOR(sh_target.<=) 20;
SELECT count(*) AS below_k
FROM sh_sec
WHERE fp OPERATOR(sh_target.<~>) sh_target.simhash('document 7'::text) OPERATOR(sh_target.<) k;
-- with sh_target on the path (after evil) the ordinary spelling is rewritten
-- into sh_target's functions too
SET search_path = evil, sh_target, pg_catalog, public;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM sh_sec WHERE fp <~> simhash('document 7'::text) >= k;
SELECT count(*) FROM sh_sec WHERE fp <~> simhash('document 7'::text) >= k;
SELECT count(*) FROM sh_sec WHERE fp <~> simhash('document 7'::text) < k;
SELECT count(*) FROM sh_sec WHERE fp <~> simhash('document 7'::text) = 0;
-- the reference answers, computed without the rewrite
RESET search_path;
SELECT count(*) FILTER (WHERE (fp OPERATOR(sh_target.<->) sh_target.simhash('document 7'::text)) <= 20) AS within_20,
       count(*) FILTER (WHERE (fp OPERATOR(sh_target.<->) sh_target.simhash('document 7'::text)) < k) AS below_k,
       count(*) FILTER (WHERE (fp OPERATOR(sh_target.<->) sh_target.simhash('document 7'::text)) >= k) AS at_least_k,
       count(*) FILTER (WHERE (fp OPERATOR(sh_target.<->) sh_target.simhash('document 7'::text)) = 0) AS equal
FROM sh_sec;
-- Limitation (PostgreSQL's operator resolution, not a hijack): with the
-- extension's schema off the path, an unqualified comparison can only find
-- the built-in int4 one, so there is no rewrite (the answer stays right)
SET search_path = pg_catalog, public;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id FROM sh_sec WHERE fp OPERATOR(sh_target.<~>) sh_target.simhash('document 7'::text) <= 3;
RESET search_path;
DROP TABLE sh_sec;
DROP FUNCTION evil.simhash_hamming_within(sh_target.simhash, sh_target.simhash, int4),
              evil.hamming_within(sh_target.simhash, sh_target.simhash, int4);

--
-- The extension cannot be moved, and drops cleanly: only the look-alikes
-- stay behind in sh_target.
--
ALTER EXTENSION simhash SET SCHEMA public;
DROP EXTENSION simhash;
SELECT (SELECT count(*) FROM pg_proc WHERE pronamespace = 'sh_target'::regnamespace) AS functions_left,
       (SELECT count(*) FROM pg_operator WHERE oprnamespace = 'sh_target'::regnamespace) AS operators_left,
       (SELECT count(*) FROM pg_type WHERE typnamespace = 'sh_target'::regnamespace) AS types_left;

--
-- A schema name that needs quoting (upper case, a space) works too: the
-- statements the script generates quote it.
--
CREATE SCHEMA "Sim Hash";
CREATE EXTENSION simhash SCHEMA "Sim Hash";
SET search_path = "Sim Hash", public;
SELECT simhash('hello world'::text) AS fingerprint;
CREATE TABLE public.sh_sec_q (fp "Sim Hash".simhash);
INSERT INTO sh_sec_q SELECT simhash(('document ' || g)::text) FROM generate_series(1, 20) g;
EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM sh_sec_q WHERE fp <~> simhash('document 3'::text) < 10::int8;
SELECT count(*) FROM sh_sec_q WHERE fp <~> simhash('document 3'::text) < 10::int8;
SELECT count(*) FROM sh_sec_q WHERE (fp <~> simhash('document 3'::text))::int4 < 10;
DROP TABLE sh_sec_q;
RESET search_path;
DROP EXTENSION simhash;
DROP SCHEMA "Sim Hash";

DROP FUNCTION evil.simhash_hamming_radius_le(int8), evil.simhash_hamming_radius_lt(int8),
              evil.hamming_radius_le(int8), evil.hamming_radius_lt(int8);
DROP OPERATOR evil.*(int4, int4), evil.+(int4, int4), evil.||(text, text),
              evil.->>(jsonb, text), evil.<=(int4, int4),
              sh_target.*(int4, int4), sh_target.+(int4, int4), sh_target.||(text, text);
DROP FUNCTION evil.format(text, VARIADIC text[]), evil.int4_op(int4, int4), evil.int4le(int4, int4),
              evil.text_op(text, text), evil.jsonb_op(jsonb, text),
              sh_target.format(text, VARIADIC text[]), sh_target.int4_op(int4, int4),
              sh_target.text_op(text, text);
DROP SCHEMA evil, sh_target;
