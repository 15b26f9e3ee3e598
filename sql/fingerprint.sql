--
-- fingerprint: simhash() from text (words, word shingles, character
-- n-grams), from token arrays (optionally weighted), from tsvector (optionally
-- with label weights), simhash_agg() and simhash_features(); the rules of
-- doc/specification.md ("Fingerprint specification") that can be checked by equalities, and the errors.
-- (Exact vectors of the specification are pinned in the vectors suite; the
-- few literal values here were checked against an independent XXH3-64
-- computation.)
--
-- quietly: an earlier suite in the same database may have created it
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

--
-- Features of a document. Words: maximal runs of letters and digits, case
-- folded; weight = number of occurrences, in order of first occurrence; hash
-- = XXH3-64 of the feature's UTF-8 bytes.
--
SELECT * FROM simhash_features('The quick brown fox jumps over the lazy dog. The dog sleeps.', 'words', 1);
-- the default: word pairs (2-shingles)
SELECT * FROM simhash_features('The quick brown fox jumps.');
-- word shingles: size consecutive words joined by one space
SELECT * FROM simhash_features('The quick brown fox jumps', features => 'words', size => 3);
-- fewer words than the size: one feature with all of them
SELECT * FROM simhash_features('one, two!', features => 'words', size => 3);
-- character n-grams (3 by default) of the normalised text, where every run of
-- separators is one space and none is kept at either end ("lo " and " wo")
SELECT feature, length(feature) AS len, weight, hash
FROM simhash_features('  Hello, World!  ', features => 'chars');
SELECT * FROM simhash_features('abab', features => 'chars', size => 1);
-- fewer characters than the size: one feature
SELECT * FROM simhash_features('Hi!', features => 'chars', size => 5);

-- a fingerprint is the bitwise majority of its features' hashes (ties give 0):
-- 'the quick brown fox' has four features of weight one
SELECT simhash('The quick brown fox', 'words', 1) AS fp,
       simhash('The quick brown fox', 'words', 1) = simhash(ARRAY['the', 'quick', 'brown', 'fox']) AS same_as_tokens,
       simhash('The quick brown fox'::text) = simhash(ARRAY['the quick', 'quick brown', 'brown fox']) AS default_pairs;
-- one feature: the fingerprint is its hash
SELECT simhash('fox'::text) AS fp, hash FROM simhash_features('fox');
-- two features: bits set in both hashes only (a tie is 0)
SELECT simhash('hello world', 'words', 1) AS fp,
       (SELECT bool_and(hash & simhash('hello world', 'words', 1) = simhash('hello world', 'words', 1))
        FROM simhash_features('hello world', 'words', 1)) AS subset_of_each,
       '9555e8555c62dcfd'::simhash & 'd6476c25083d69be' AS and_of_hashes;

--
-- Defaults and named arguments: words with size 2; chars with size 3.
--
SELECT simhash(d) = simhash(d, 'words') AS default_is_words,
       simhash(d, 'words') = simhash(d, 'words', 2) AS words_default_size_2,
       simhash(d, features => 'words', size => 2) = simhash(d) AS named,
       simhash(doc => d, size => 2, features => 'words') = simhash(d, 'words', 2) AS named_any_order,
       simhash(d, 'chars') = simhash(d, 'chars', 3) AS chars_default_size_3,
       simhash(d, features => 'chars') = simhash(d, 'chars', 3) AS named_chars,
       simhash(d) <> simhash(d, 'words', 1) AS unigrams_differ,
       simhash(d) <> simhash(d, 'chars') AS chars_differ,
       simhash(d, 'chars', 3) <> simhash(d, 'chars', 4) AS sizes_differ
FROM (VALUES ('It was the best of times, it was the worst of times, it was the age of wisdom'::text)) AS t(d);
-- the same defaults for simhash_features
SELECT (SELECT array_agg(feature) FROM simhash_features('a b c d')) =
       (SELECT array_agg(feature) FROM simhash_features('a b c d', 'words', 2)) AS words_default,
       (SELECT array_agg(feature) FROM simhash_features('a b c d', 'chars')) =
       (SELECT array_agg(feature) FROM simhash_features('a b c d', features => 'chars', size => 3)) AS chars_default;
-- sizes 1 and 32 are the limits
SELECT simhash('a b c'::text, 'words', 32) = simhash('a b c'::text, 'words', 3) AS size_32_ok,
       simhash('abc'::text, 'chars', 1) IS NOT NULL AS size_1_ok;
-- size needs features: there is no simhash(doc, size)
SELECT simhash('a b c'::text, size => 2);

--
-- Errors: unknown feature mode (exact, lowercase names), size out of range.
-- (SQLSTATE 22023 is invalid_parameter_value, 2202E array_subscript_error,
-- 22004 null_value_not_allowed, 22003 numeric_value_out_of_range.)
--
SELECT simhash('abc'::text, 'bogus');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash('abc'::text, 'WORDS');
SELECT simhash('abc'::text, '');
SELECT simhash('abc'::text, features => 'Chars', size => 3);
-- a document passed as the mode: the message quotes 40 bytes of it, cut at a character
SELECT simhash('abc'::text, repeat('ünknown ', 100000));
SELECT simhash('abc'::text, 'words', 0);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash('abc'::text, 'words', 33);
SELECT simhash('abc'::text, 'chars', -1);
SELECT simhash('abc'::text, 'chars', 33);
SELECT * FROM simhash_features('abc', 'bogus');
SELECT * FROM simhash_features('abc', 'words', 0);
-- checked even when the document has no features
SELECT simhash(''::text, 'bogus');
SELECT simhash(''::text, 'chars', 0);

--
-- NULL in, NULL out; no features, no fingerprint (NULL, not 0).
--
SELECT simhash(NULL::text) AS null_doc, simhash('a'::text, NULL) AS null_mode,
       simhash('a'::text, 'words', NULL) AS null_size, simhash(NULL::text[]) AS null_array,
       simhash(ARRAY['a'], NULL) AS null_weights, simhash(NULL::tsvector) AS null_tsvector,
       simhash(to_tsvector('simple', 'a'), NULL) AS null_label_weights;
SELECT count(*) AS features_of_null FROM simhash_features(NULL);
SELECT what,
       simhash(d) IS NULL AS words_null, simhash(d, 'words', 3) IS NULL AS shingles_null,
       simhash(d, 'chars') IS NULL AS chars_null, simhash(d, 'chars', 1) IS NULL AS char1_null,
       (SELECT count(*) FROM simhash_features(d)) AS features
FROM (VALUES ('empty', ''::text), ('spaces', '   '), ('tab and newline', E' \t\n '),
             ('punctuation', '.,;:!? -- ...'), ('other punctuation', '¿¡«»'),
             ('ignorables only', U&'\00AD\200B\2060'),
             ('ignorables and separators', U&' \00AD . \FE0F ')) AS t(what, d);

--
-- Pitfall: simhash('literal') is the type's input function (a cast), not a
-- fingerprint. Untyped literals must be cast to text.
--
SELECT simhash('');
SELECT simhash('hello world');
-- a literal that happens to be 16 hex digits is taken as a fingerprint
SELECT simhash('0123456789abcdef') AS cast_not_fingerprint,
       simhash('0123456789abcdef'::text) AS fingerprint;
-- with a second argument or a named one it is a function call again
SELECT simhash('hello world', 'words') = simhash('hello world'::text) AS two_args,
       simhash(doc => 'hello world') = simhash('hello world'::text) AS named_arg;

--
-- Normalisation: NFKC, then simple case folding, independent of locale.
--
SELECT a, b, simhash(a) = simhash(b) AS same_words, simhash(a, 'chars') = simhash(b, 'chars') AS same_chars
FROM (VALUES ('ＡＢＣ'::text, 'abc'::text),               -- full width letters (NFKC)
             ('HELLO World', 'hello world'),            -- case
             ('café', U&'cafe\0301'),                   -- composed vs decomposed é
             ('ﬁne', 'fine'),                           -- ligature (NFKC)
             ('x²', 'x2'),                              -- superscript digit (NFKC)
             ('ΣΟΦΟΣ', 'σοφος'),                        -- final sigma folds to sigma
             ('Straße', 'STRASSE'),                     -- simple folding keeps ß
             ('Straße', 'strasse'),
             ('naïve', 'naive')) AS t(a, b);             -- marks are kept
-- what the features are in those cases
SELECT feature, weight FROM simhash_features('ＡＢＣ abc ﬁne x² ΣΟΦΟΣ Straße STRASSE café ' || U&'cafe\0301', 'words', 1);
-- ignorable code points (soft hyphen, zero width space, word joiner) never
-- split a word; combining marks extend it
SELECT feature FROM simhash_features(U&'co\00ADoper\200Bation wo\2060rd e\0301t\0301e\0301', 'words', 1);

--
-- Scripts without spaces: each Han, Hiragana, Katakana (or Thai...) letter is
-- a token of its own, as is every Other Symbol (emoji, ©). Hangul and Latin
-- letters make words.
--
SELECT * FROM simhash_features('東京タワーは高い', 'words', 1);
SELECT feature FROM simhash_features('abc東京def 123 한국어 텍스트 สวัสดี 😀© x', 'words', 1);
-- shingles across single-character tokens
SELECT feature FROM simhash_features('東京タワー', 'words', 2);

--
-- simhash_agg over simhash_features gives simhash() of the document, and so
-- does simhash(array of features repeated by weight), for every mode and size.
--
CREATE TABLE sh_fp_docs (id int PRIMARY KEY, body text);
INSERT INTO sh_fp_docs VALUES
    (1, 'The quick brown fox jumps over the lazy dog. The dog sleeps; the fox does not.'),
    (2, 'It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness'),
    (3, 'ＡＢＣ Straße café ' || U&'cafe\0301' || ' ﬁne ΣΟΦΟΣ naïve'),
    (4, '東京タワーは高い。東京は大きい。'),
    (5, 'x'),
    (6, 'a b'),
    (7, repeat('lorem ipsum dolor sit amet ', 300) || '😀'),
    (8, '123 456 123 456 123'),
    (9, ''),
    (10, '!!! ???');
SELECT m.features, m.size, count(*) AS docs,
       count(simhash(d.body, m.features, m.size)) AS with_fingerprint,
       bool_and((SELECT simhash_agg(f.feature, f.weight) FROM simhash_features(d.body, m.features, m.size) f)
                IS NOT DISTINCT FROM simhash(d.body, m.features, m.size)) AS agg_matches,
       bool_and((SELECT simhash(array_agg(f.feature)) FROM simhash_features(d.body, m.features, m.size) f,
                        generate_series(1, f.weight::int))
                IS NOT DISTINCT FROM simhash(d.body, m.features, m.size)) AS array_matches,
       bool_and((SELECT simhash(array_agg(f.feature), array_agg(f.weight)) FROM simhash_features(d.body, m.features, m.size) f)
                IS NOT DISTINCT FROM simhash(d.body, m.features, m.size)) AS weighted_array_matches
FROM sh_fp_docs d,
     (VALUES ('words', 1), ('words', 2), ('words', 3), ('words', 32),
             ('chars', 1), ('chars', 3), ('chars', 5), ('chars', 32)) AS m(features, size)
GROUP BY m.features, m.size ORDER BY m.features, m.size;
-- the features' hashes are the hashes of the one-token arrays
SELECT count(*) AS features, bool_and(f.hash = simhash(ARRAY[f.feature])) AS hash_is_token_fingerprint
FROM sh_fp_docs d, simhash_features(d.body, 'words', 2) f;

--
-- simhash(text[]): every non-NULL element is a feature of weight 1, hashed as
-- given (no normalisation); order does not matter; NULLs are skipped.
--
SELECT simhash(ARRAY['the', 'quick', 'brown', 'fox']) = simhash(ARRAY['fox', 'brown', 'the', 'quick']) AS order_free,
       simhash(ARRAY['a', NULL, 'b', NULL]) = simhash(ARRAY['a', 'b']) AS nulls_skipped,
       simhash(ARRAY['The']) <> simhash(ARRAY['the']) AS no_case_folding,
       simhash(ARRAY['ＡＢＣ']) <> simhash(ARRAY['abc']) AS no_nfkc,
       simhash(ARRAY['hello world']) <> simhash('hello world', 'words', 1) AS no_tokenising,
       simhash(ARRAY[['a', 'b'], ['c', 'd']]) = simhash(ARRAY['a', 'b', 'c', 'd']) AS multidimensional;
SELECT (SELECT simhash_agg(t) FROM unnest(a) t) IS NOT DISTINCT FROM simhash(a) AS agg_matches, a
FROM (VALUES (ARRAY['a', 'b', 'c']), (ARRAY['x', 'x', 'y']), (ARRAY['a', NULL, 'b']),
             (ARRAY['']), (ARRAY['😀', 'ß', 'e' || U&'\0301'])) AS t(a);
-- the empty string is a feature (its hash); no non-NULL element is NULL
SELECT simhash(ARRAY['']) AS empty_string_token, simhash('{}'::text[]) AS no_tokens,
       simhash(ARRAY[NULL, NULL]::text[]) AS only_nulls;

--
-- simhash(text[], float8[]): weighted tokens; equal to simhash_agg with the
-- same weights; weight 2 counts like two occurrences; weight 0 like none.
--
SELECT simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 1, 1]::float8[]) = simhash(ARRAY['a', 'b', 'c']) AS unit_weights,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[2, 1, 3]::float8[]) = simhash(ARRAY['a', 'a', 'b', 'c', 'c', 'c']) AS integer_weights,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 0, 1]::float8[]) = simhash(ARRAY['a', 'c']) AS zero_weight,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[0.5, 0.5, 0.5]) = simhash(ARRAY['a', 'b', 'c']) AS scale_free,
       simhash(ARRAY['a', NULL, 'c'], ARRAY[1, NULL, 2]::float8[]) = simhash(ARRAY['a', 'c', 'c']) AS null_token_skipped;
SELECT t, w, simhash(t, w) AS fp,
       (SELECT simhash_agg(x.t, x.w) FROM unnest(t, w) AS x(t, w)) IS NOT DISTINCT FROM simhash(t, w) AS agg_matches
FROM (VALUES (ARRAY['alpha', 'beta', 'gamma'], ARRAY[0.25, 1.5, 3]::float8[]),
             (ARRAY['alpha', 'beta', 'gamma'], ARRAY[10, 0.001, 0.001]::float8[]),
             (ARRAY['alpha', 'beta'], ARRAY[1e-300, 1e-300]::float8[]),
             (ARRAY['alpha'], ARRAY[1e300]::float8[])) AS v(t, w);
-- no positive weight: NULL
SELECT simhash(ARRAY['a', 'b'], ARRAY[0, 0]::float8[]) AS all_zero,
       simhash(ARRAY['a', 'b'], ARRAY[-0.0, 0]::float8[]) AS negative_zero,
       simhash('{}'::text[], '{}'::float8[]) AS empty;
-- errors: lengths differ, weights not finite or negative, NULL weight
SELECT simhash(ARRAY['a', 'b'], ARRAY[1]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash(ARRAY['a'], ARRAY[1, 2]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, -1]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, -1e-300]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, 'NaN']::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, 'Infinity']::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, '-Infinity']::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, NULL]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- a NULL weight is an error even where the other weights are zero
SELECT simhash(ARRAY['a', 'b'], ARRAY[0, NULL]::float8[]);
-- finite weights whose sum overflows
SELECT simhash(ARRAY['a', 'b'], ARRAY[1e308, 1e308]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE

--
-- simhash_agg: rows with a NULL feature or NULL weight are skipped; no rows
-- or no positive weight gives NULL; bad weights are errors.
--
SELECT simhash_agg(f) AS no_rows, simhash_agg(f, 1) AS no_rows_weighted
FROM (SELECT 'a'::text WHERE false) AS t(f);
SELECT simhash_agg(f) = simhash(ARRAY['a', 'b']) AS null_feature_skipped,
       simhash_agg(f, w) = simhash(ARRAY['a']) AS null_weight_skipped
FROM (VALUES ('a', 1::float8), (NULL, 1), ('b', NULL)) AS t(f, w);
SELECT simhash_agg(f, w) AS zero_weights FROM (VALUES ('a', 0::float8), ('b', 0)) AS t(f, w);
SELECT simhash_agg(f, w) FROM (VALUES ('a', 1::float8), ('b', -2)) AS t(f, w);
SELECT simhash_agg(f, w) FROM (VALUES ('a', 1::float8), ('b', 'NaN')) AS t(f, w);
SELECT simhash_agg(f, w) FROM (VALUES ('a', 1::float8), ('b', 'Infinity')) AS t(f, w);
-- one fingerprint per group
SELECT id, simhash_agg(f.feature, f.weight) = simhash(body) AS matches
FROM sh_fp_docs d, simhash_features(d.body) f
GROUP BY id, body ORDER BY id;

--
-- tsvector: each lexeme is a feature weighted by its number of positions (1
-- without positions); label weights {D, C, B, A} weigh each position.
--
SELECT * FROM unnest(to_tsvector('english', 'The cats sat on the mat with other cats'));
SELECT simhash(v) AS fp,
       simhash(v) = (SELECT simhash_agg(lexeme, coalesce(cardinality(positions), 1)) FROM unnest(v)) AS agg_matches,
       simhash(v) = simhash(ARRAY['cat', 'cat', 'mat', 'sat']) AS token_array_matches
FROM (VALUES (to_tsvector('english', 'The cats sat on the mat with other cats'))) AS t(v);
SELECT count(*) AS docs,
       bool_and(simhash(v) IS NOT DISTINCT FROM
                (SELECT simhash_agg(lexeme, coalesce(cardinality(positions), 1)) FROM unnest(v))) AS agg_matches,
       bool_and(simhash(strip(v)) IS NOT DISTINCT FROM simhash(array_to_tsvector(tsvector_to_array(v)))) AS stripped_counts_once,
       bool_and(simhash(strip(v)) IS NOT DISTINCT FROM simhash(tsvector_to_array(v))) AS stripped_is_lexeme_array
FROM (SELECT to_tsvector('simple', body) FROM sh_fp_docs) AS t(v);
-- lexemes without positions count once; no lexemes: NULL
SELECT simhash('a b c'::tsvector) = simhash(ARRAY['a', 'b', 'c']) AS no_positions,
       simhash('a:1,2,3 b:4'::tsvector) = simhash(ARRAY['a', 'a', 'a', 'b']) AS positions_count,
       simhash(''::tsvector) AS empty,
       simhash(to_tsvector('english', 'the of and a')) AS only_stop_words;
-- label weights: {1,1,1,1} is the unweighted fingerprint; each position
-- counts the weight of its label
SELECT simhash(v, ARRAY[1, 1, 1, 1]) = simhash(v) AS unit_labels,
       simhash(v, ARRAY[0.1, 0.2, 0.4, 1.0]) = (
           SELECT simhash_agg(lexeme, (SELECT sum(CASE l WHEN 'A' THEN 1.0 WHEN 'B' THEN 0.4
                                                          WHEN 'C' THEN 0.2 ELSE 0.1 END)
                                       FROM unnest(weights) l))
           FROM unnest(v)) AS labels_match_agg,
       simhash(v, ARRAY[0, 0, 0, 1]) = simhash(setweight(to_tsvector('english', 'Fast cars'), 'A')) AS only_a,
       simhash(v, ARRAY[0, 0, 0, 1]) <> simhash(v) AS labels_matter,
       simhash(v, ARRAY[1, 0, 0, 0]) = simhash(to_tsvector('english', 'racing on slow roads with slow cars')) AS only_d
FROM (VALUES (setweight(to_tsvector('english', 'Fast cars'), 'A')
              || to_tsvector('english', 'racing on slow roads with slow cars'))) AS t(v);
-- a lexeme without positions counts as one D
SELECT simhash('a b'::tsvector, ARRAY[2, 0, 0, 0]) = simhash('a b'::tsvector) AS d_weight,
       simhash('a b'::tsvector, ARRAY[0, 1, 1, 1]) AS d_zero,
       simhash('a:1A b:2B'::tsvector, ARRAY[0, 0, 0, 0]) AS all_zero;
-- errors: not 4 elements, NULL, negative, not finite
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 1, 1]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 1, 1, 1, 1]::float8[]);
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 1, NULL, 1]::float8[]);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 1, -1, 1]::float8[]);
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 'NaN', 1, 1]::float8[]);
SELECT simhash('a:1 b:2'::tsvector, ARRAY[1, 1, 1, 'Infinity']::float8[]);

--
-- In a generated column and an expression index.
--
CREATE TABLE sh_fp_gen (id int PRIMARY KEY, body text,
                        fp simhash GENERATED ALWAYS AS (simhash(body)) STORED,
                        fp3 simhash GENERATED ALWAYS AS (simhash(body, 'chars', 4)) STORED);
INSERT INTO sh_fp_gen (id, body) SELECT id, body FROM sh_fp_docs;
INSERT INTO sh_fp_gen (id, body)
    SELECT 100 + g, 'document number ' || g || ' about ' || md5(g::text) FROM generate_series(1, 500) g;
SELECT count(*) AS rows, count(fp) AS with_fp,
       bool_and(fp IS NOT DISTINCT FROM simhash(body)) AS fp_matches,
       bool_and(fp3 IS NOT DISTINCT FROM simhash(body, 'chars', 4)) AS fp3_matches
FROM sh_fp_gen;
UPDATE sh_fp_gen SET body = 'the lazy dog' WHERE id = 1;
SELECT fp = simhash('the lazy dog'::text) AS recomputed FROM sh_fp_gen WHERE id = 1;
CREATE INDEX sh_fp_gen_expr ON sh_fp_gen (simhash(body));
CREATE INDEX sh_fp_gen_expr3 ON sh_fp_gen (simhash(body, 'chars', 4));
ANALYZE sh_fp_gen;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sh_fp_gen WHERE simhash(body) = simhash('The lazy DOG!'::text);
SELECT id FROM sh_fp_gen WHERE simhash(body) = simhash('The lazy DOG!'::text);
EXPLAIN (COSTS OFF) SELECT id FROM sh_fp_gen WHERE simhash(body, 'chars', 4) = simhash('document number 7 about ' || md5('7'), 'chars', 4);
SELECT id FROM sh_fp_gen WHERE simhash(body, 'chars', 4) = simhash('document number 7 about ' || md5('7'), 'chars', 4);
RESET enable_seqscan;
DROP TABLE sh_fp_gen;

--
-- Every function of the extension is IMMUTABLE and PARALLEL SAFE (needed for
-- generated columns, indexes and parallel plans): this lists the exceptions.
-- (Selectivity estimators and an index access method handler, which are
-- never called on data, are left out: PostgreSQL's own are not immutable.)
--
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
WHERE (p.provolatile <> 'i' OR p.proparallel <> 's')
  AND p.prorettype <> 'index_am_handler'::regtype
  -- index inspection functions read the index's current state, and
  -- simhash_pair_groups runs the query it is given: volatile by design
  AND p.proname NOT IN ('simhash_index_info', 'simhash_index_pages', 'simhash_index_verify',
                        'simhash_pair_groups')
  -- ANALYZE's routine for the type: STABLE like PostgreSQL's own
  AND p.oid <> 'simhash_typanalyze(internal)'::regprocedure
  AND p.oid NOT IN (SELECT oprrest FROM pg_operator UNION ALL SELECT oprjoin FROM pg_operator);
-- (and that list covered the fingerprint functions and aggregates)
SELECT p.prokind, count(*)
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash'
WHERE p.proname IN ('simhash', 'simhash_agg', 'simhash_features')
GROUP BY p.prokind ORDER BY p.prokind;

--
-- A parallel aggregate (partial states serialised, combined) gives the same
-- fingerprints as a serial one.
--
CREATE TABLE sh_fp_feat AS
    SELECT g % 10 AS doc, md5(g::text) AS feature, (g % 7)::float8 AS weight
    FROM generate_series(1, 20000) g;
ANALYZE sh_fp_feat;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE sh_fp_serial AS
    SELECT doc, simhash_agg(feature) AS unweighted, simhash_agg(feature, weight) AS weighted
    FROM sh_fp_feat GROUP BY doc
    UNION ALL
    SELECT -1, simhash_agg(feature), simhash_agg(feature, weight) FROM sh_fp_feat;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) SELECT simhash_agg(feature), simhash_agg(feature, weight) FROM sh_fp_feat;
SELECT s.unweighted = p.u AS unweighted_matches, s.weighted = p.w AS weighted_matches
FROM (SELECT simhash_agg(feature) AS u, simhash_agg(feature, weight) AS w FROM sh_fp_feat) p,
     sh_fp_serial s WHERE s.doc = -1;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT doc, simhash_agg(feature, weight) FROM sh_fp_feat GROUP BY doc;
SELECT count(*) AS docs, bool_and(s.unweighted = p.u) AS unweighted_matches,
       bool_and(s.weighted = p.w) AS weighted_matches
FROM (SELECT doc, simhash_agg(feature) AS u, simhash_agg(feature, weight) AS w
      FROM sh_fp_feat GROUP BY doc) p
JOIN sh_fp_serial s USING (doc);
RESET enable_hashagg;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
DROP TABLE sh_fp_feat, sh_fp_serial, sh_fp_docs;

--
-- simhash(column) of every core string type fingerprints the text: PostgreSQL reads a
-- one-argument call named like a type as a cast when no function takes the argument's type
-- exactly, so simhash(varchar_column) once parsed the text as 16 hex digits. A generated
-- column, an expression index and a prepared statement of varchar, char(n) and name, each
-- equal to simhash(x::text), also for a body that is 16 hex digits.
--
CREATE TABLE sh_strtypes (id int,
  v varchar(200), c char(40), n name,
  fv simhash GENERATED ALWAYS AS (simhash(v)) STORED,
  fc simhash GENERATED ALWAYS AS (simhash(c)) STORED,
  fn simhash GENERATED ALWAYS AS (simhash(n)) STORED);
INSERT INTO sh_strtypes (id, v, c, n) VALUES
  (1, 'the quick brown fox jumps', 'the quick brown fox jumps', 'the quick brown fox jumps'),
  (2, '0123456789abcdef', '0123456789abcdef', '0123456789abcdef'),
  (3, 'Ünïcödé   text  ', 'Ünïcödé   text  ', 'Ünïcödé   text  ');
SELECT id, fv = simhash(v::text) AS varchar_ok, fc = simhash(c::text) AS char_ok,
       fn = simhash(n::text) AS name_ok, fv = fc AND fc = fn AS all_equal
FROM sh_strtypes ORDER BY id;
-- the expression index: used, and it answers as the text's fingerprint does
CREATE INDEX sh_strtypes_v ON sh_strtypes USING simhash (simhash(v));
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sh_strtypes WHERE simhash(v) <~> simhash('the quick brown fox jumps'::text) <= 3;
SELECT id FROM sh_strtypes WHERE simhash(v) <~> simhash('the quick brown fox jumps'::text) <= 3;
RESET enable_seqscan;
PREPARE sh_pv(varchar) AS SELECT simhash($1) = simhash($1::text) AS same;
PREPARE sh_pc(char(20)) AS SELECT simhash($1) = simhash($1::text) AS same;
PREPARE sh_pn(name) AS SELECT simhash($1) = simhash($1::text) AS same;
EXECUTE sh_pv('0123456789abcdef');
EXECUTE sh_pc('0123456789abcdef');
EXECUTE sh_pn('0123456789abcdef');
DEALLOCATE sh_pv; DEALLOCATE sh_pc; DEALLOCATE sh_pn;
-- a type without its own function (a domain over text) is still read as a cast; the hint says
-- what to write
CREATE DOMAIN sh_body AS text;
SELECT simhash('hello world'::sh_body);
SELECT simhash('hello world'::sh_body::text) = simhash('hello world'::text) AS as_text;
DROP DOMAIN sh_body;
DROP TABLE sh_strtypes;
