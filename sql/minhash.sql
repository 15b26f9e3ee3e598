-- minhash: minhash(doc [, features [, size [, version]]]), the one-permutation MinHash sketch
-- of specification version 2's features in a simhash. (Its bits are pinned in the suite
-- vectors and recomputed by test/reference/.)

-- no feature: NULL, as simhash gives
SELECT minhash(''), minhash('  .,; '), minhash(NULL);
-- the defaults are word pairs, version 1
SELECT minhash('the quick brown fox') = minhash('the quick brown fox', 'words', 2, 1) AS defaults;
-- a set: the same words in another order, case and repetition give the same sketch
SELECT minhash('The Quick brown FOX fox', 'words', 1) = minhash('fox brown quick the', 'words', 1)
  AS same_set;
-- the type of the result is simhash: distances and operators apply
SELECT pg_typeof(minhash('a b c')), minhash('a b c d e f') <~> minhash('a b c d e g') AS bits;

-- bad arguments: as simhash(text) reports them, and an unknown specification version
SELECT minhash('a', 'sentences');
SELECT minhash('a', 'words', 0);
SELECT minhash('a', 'chars', 33);
SELECT minhash('a', 'words', 2, 2);

-- The Hamming distance of two sketches estimates 32 (1 - J), J the Jaccard similarity of the
-- feature sets (simhash_jaccard): 400 documents of 200 words, each against a copy with k of its
-- words replaced (k = 0, 2, 5, 10, 20, 40, 80). Per k: the mean distance against 32 (1 - mean
-- J), within 1.5 bits (400 pairs: the standard error of the mean is about 0.2 bits).
CREATE TEMP TABLE mh_docs AS
SELECT i, k,
       (SELECT string_agg(CASE WHEN w <= k THEN 'x' || substr(md5(i || '/' || k || '/' || w), 1, 6)
                               ELSE substr(md5(i || ':' || w), 1, 5) END, ' ' ORDER BY w)
        FROM generate_series(1, 200) w) AS body
FROM generate_series(1, 400) i, unnest('{0,2,5,10,20,40,80}'::int[]) k;
CREATE TEMP TABLE mh_pairs AS
SELECT c.k, minhash(o.body) <~> minhash(c.body) AS bits, simhash_jaccard(o.body, c.body) AS j
FROM mh_docs o JOIN mh_docs c ON c.i = o.i AND o.k = 0;
SELECT k, round(avg(j)::numeric, 2) AS mean_j,
       abs(avg(bits) - 32 * (1 - avg(j))) < 1.5 AS mean_bits_near_32_1_minus_j,
       max(bits) <= 64 AS bounded
FROM mh_pairs GROUP BY k ORDER BY k;
-- identical texts: always distance 0
SELECT count(*) FILTER (WHERE bits <> 0) AS copies_apart FROM mh_pairs WHERE k = 0;

-- the index serves minhash fingerprints as any other: a radius search and a nearest-neighbour
-- search through it equal a sequential scan
CREATE TEMP TABLE mh_t AS SELECT i * 100 + k AS id, body, minhash(body) AS fp FROM mh_docs;
CREATE INDEX mh_t_fp ON mh_t USING simhash (fp);
ANALYZE mh_t;
CREATE TEMP TABLE mh_q AS SELECT fp FROM mh_t WHERE id % 100 = 0 AND id <= 5000;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM mh_t WHERE fp <~> minhash('some words here') <= 6;
CREATE TEMP TABLE mh_idx AS
SELECT q.fp AS q, t.id FROM mh_q q, LATERAL (SELECT id FROM mh_t WHERE fp <~> q.fp <= 6) t;
EXPLAIN (COSTS OFF) SELECT id FROM mh_t ORDER BY fp <-> minhash('some words here') LIMIT 5;
CREATE TEMP TABLE mh_knn AS
SELECT q.fp AS q, t.id, t.d FROM mh_q q,
       LATERAL (SELECT id, fp <-> q.fp AS d FROM mh_t ORDER BY fp <-> q.fp LIMIT 5) t;
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM mh_idx) AS found,
       (SELECT count(*) FROM (SELECT q.fp, t.id FROM mh_q q, mh_t t WHERE t.fp <~> q.fp <= 6
                              EXCEPT SELECT * FROM mh_idx) x) AS missed,
       (SELECT count(*) FROM (SELECT * FROM mh_idx EXCEPT
                              SELECT q.fp, t.id FROM mh_q q, mh_t t WHERE t.fp <~> q.fp <= 6) x) AS extra;
-- nearest neighbours: the same distances (ties may be cut at another row)
SELECT count(*) AS knn_rows,
       count(*) FILTER (WHERE s.d IS DISTINCT FROM k.d) AS distance_differs
FROM (SELECT q, d, row_number() OVER (PARTITION BY q ORDER BY d, id) AS r FROM mh_knn) k
JOIN (SELECT q.fp AS q, t.d, row_number() OVER (PARTITION BY q.fp ORDER BY t.d, t.id) AS r
      FROM mh_q q, LATERAL (SELECT id, fp <-> q.fp AS d FROM mh_t ORDER BY 2, 1 LIMIT 5) t) s
  ON s.q = k.q AND s.r = k.r;
RESET enable_indexscan;
RESET enable_bitmapscan;
-- the copies with 2 and 5 of 200 words replaced are within 6 bits of their original nearly
-- always; the copies with 80 replaced (J about 0.4) almost never
SELECT k, count(*) FILTER (WHERE bits <= 6) AS within_6, count(*) AS pairs
FROM mh_pairs WHERE k IN (2, 5, 80) GROUP BY k ORDER BY k;
DROP TABLE mh_docs, mh_pairs, mh_t, mh_q, mh_idx, mh_knn;
