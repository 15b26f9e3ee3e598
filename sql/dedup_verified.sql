--
-- dedup_verified: grouping on verified pairs, the text form of the window
-- functions simhash_leader() and simhash_component() (a text, a threshold,
-- features and size). A candidate pair (within the radius) joins a group only
-- when its texts are equal or their simhash_jaccard() reaches the threshold.
-- Compared with references written in SQL on generated texts with copies,
-- edits, unrelated texts that share fingerprints, texts without a feature and
-- NULL texts; the identical members that a rejected leader used to leave
-- alone; what a removal leaves; every error.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

-- 1. The case that verification after grouping got wrong: four identical
-- pages within the radius of an unrelated page that comes first. Each copy
-- used to be checked against that page only and left alone; here they are
-- one group, and the first page stays on its own.
CREATE TABLE vq (id bigint, fp simhash, body text);
INSERT INTO vq VALUES
  (1, '0000000000000000', 'tailq the queue macros and their list of arguments in the manual of the library'),
  (2, '0000000000000001', 'one page of the manual that every macro of the family includes as it is'),
  (3, '0000000000000001', 'one page of the manual that every macro of the family includes as it is'),
  (4, '0000000000000001', 'one page of the manual that every macro of the family includes as it is'),
  (5, '0000000000000003', 'one page of the manual that every macro of the family includes as it is');
SELECT id, (m).* FROM (SELECT id, simhash_leader(id, fp, 3, body, 0.8, 'words', 5) OVER (ORDER BY id) AS m FROM vq) s
ORDER BY id;
SELECT id, (m).* FROM (SELECT id, simhash_component(id, fp, 3, body, 0.8, 'words', 5) OVER (ORDER BY id) AS m FROM vq) s
ORDER BY id;
-- equal texts share a group whatever the threshold and the radius, even
-- without a feature; unequal texts without a feature never pass (NULL)
INSERT INTO vq VALUES (6, 'ffffffffffffffff', ''), (7, 'ffffffffffffffff', ''),
                      (8, 'fffffffffffffffe', '!!'), (9, 'fffffffffffffffe', NULL), (10, 'fffffffffffffffe', NULL);
SELECT id, (m).* FROM (SELECT id, simhash_leader(id, fp, 0, body, 1, 'words', 5) OVER (ORDER BY id) AS m FROM vq) s
ORDER BY id;
SELECT id, (m).* FROM (SELECT id, simhash_leader(id, fp, 64, body, 0, 'words', 5) OVER (ORDER BY id) AS m FROM vq) s
ORDER BY id;
-- equal texts under fingerprints that differ (computed otherwise) pass too
SELECT id, (m).keep_id, (m).jaccard
FROM (SELECT id, simhash_component(id, fp, 64, body, 1, 'words', 5) OVER (ORDER BY id) AS m
      FROM (VALUES (1, '0000000000000000'::simhash, 'same words in the same text here'),
                   (2, 'ffffffffffffffff'::simhash, 'same words in the same text here')) v(id, fp, body)) s;

-- 2. Generated texts: 60 bases of 12-30 words from a vocabulary of 300, and
-- after them copies (exact, 1-4 words replaced, words appended), unrelated
-- texts given a fingerprint of another row, texts of fewer words than a
-- feature, and NULL texts. Fingerprints are minhash(body) unless forced.
SELECT setseed(0.39);
CREATE TABLE vd (id bigint, ord int, fp simhash, body text);
CREATE FUNCTION vd_words(n int) RETURNS text LANGUAGE sql AS
  $$ SELECT string_agg('w' || (random() * 300)::int, ' ') FROM generate_series(1, n) $$;
CREATE FUNCTION vd_edit(t text, k int) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(CASE WHEN random() < k::float8 / cardinality(w) THEN 'x' || (random() * 50)::int ELSE x END, ' ' ORDER BY i)
  FROM (SELECT string_to_array(t, ' ') AS w) a, unnest(a.w) WITH ORDINALITY u(x, i) $$;
INSERT INTO vd (id, body) SELECT g, vd_words(12 + (random() * 18)::int) FROM generate_series(1, 60) g;
INSERT INTO vd (id, body) SELECT 100 + g, (SELECT body FROM vd WHERE id = 1 + (g * 7) % 60) FROM generate_series(1, 40) g;
INSERT INTO vd (id, body) SELECT 200 + g, vd_edit((SELECT body FROM vd WHERE id = 1 + (g * 11) % 60), 1 + g % 4)
  FROM generate_series(1, 80) g;
INSERT INTO vd (id, body) SELECT 300 + g, (SELECT body FROM vd WHERE id = 1 + (g * 13) % 60) || ' ' || vd_words(1 + g % 6)
  FROM generate_series(1, 40) g;
INSERT INTO vd (id, body) SELECT 400 + g, vd_words(3) FROM generate_series(1, 6) g;
INSERT INTO vd (id, body) SELECT 410 + g, NULL FROM generate_series(1, 4) g;
UPDATE vd SET fp = minhash(body), ord = (hashint8(id) & 1023)::int;
-- unrelated texts wearing another row's fingerprint, and rows without one
INSERT INTO vd (id, ord, fp, body) SELECT 500 + g, 1024 + g, (SELECT fp FROM vd WHERE id = g), vd_words(20)
  FROM generate_series(1, 10) g;
INSERT INTO vd (id, ord, fp, body) SELECT 600 + g, 2000 + g, (SELECT fp FROM vd WHERE id = 200 + g), NULL
  FROM generate_series(1, 3) g;
INSERT INTO vd (id, ord, fp, body) VALUES (700, 5, NULL, 'no fingerprint');
SELECT count(*) AS rows, count(DISTINCT body) AS texts, count(fp) AS with_fp FROM vd;

-- the pair rule, as the scripts state it
CREATE FUNCTION vd_pass(a text, b text, thr float8) RETURNS bool LANGUAGE sql AS
  $$ SELECT a = b OR coalesce(simhash_jaccard(a, b, 'words', 5) >= thr, false) $$;

-- references: leader clustering in the order ord, id, each row trying the
-- earlier leaders within the radius in that order; components by labels
CREATE FUNCTION vd_ref_leader(k int, thr float8) RETURNS TABLE (id bigint, keep_id bigint)
LANGUAGE plpgsql AS $$
DECLARE r record; l bigint;
BEGIN
  CREATE TEMP TABLE vd_lead (id bigint, ord int, fp simhash, body text, keep_id bigint) ON COMMIT DROP;
  FOR r IN SELECT * FROM vd WHERE fp IS NOT NULL ORDER BY ord, id LOOP
    SELECT x.id INTO l FROM vd_lead x
     WHERE x.keep_id = x.id AND simhash_hamming(x.fp, r.fp) <= k AND vd_pass(x.body, r.body, thr)
     ORDER BY x.ord, x.id LIMIT 1;
    INSERT INTO vd_lead VALUES (r.id, r.ord, r.fp, r.body, coalesce(l, r.id));
  END LOOP;
  RETURN QUERY SELECT x.id, x.keep_id FROM vd_lead x;
  DROP TABLE vd_lead;
END $$;
CREATE FUNCTION vd_ref_component(k int, thr float8) RETURNS TABLE (id bigint, keep_id bigint)
LANGUAGE plpgsql AS $$
DECLARE changed bigint;
BEGIN
  CREATE TEMP TABLE vd_lab ON COMMIT DROP AS
    SELECT v.id, row_number() OVER (ORDER BY v.ord, v.id) AS rn FROM vd v WHERE v.fp IS NOT NULL;
  ALTER TABLE vd_lab ADD COLUMN lab bigint;
  UPDATE vd_lab SET lab = rn;
  CREATE TEMP TABLE vd_edge ON COMMIT DROP AS
    SELECT a.id AS x, b.id AS y FROM vd a JOIN vd b ON a.id <> b.id AND simhash_hamming(a.fp, b.fp) <= k
     WHERE vd_pass(a.body, b.body, thr);
  LOOP
    UPDATE vd_lab l SET lab = m.lab
    FROM (SELECT e.x, min(o.lab) AS lab FROM vd_edge e JOIN vd_lab o ON o.id = e.y GROUP BY e.x) m
    WHERE l.id = m.x AND m.lab < l.lab;
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
  END LOOP;
  RETURN QUERY SELECT l.id, f.id FROM vd_lab l JOIN vd_lab f ON f.rn = l.lab;
  DROP TABLE vd_lab, vd_edge;
END $$;

CREATE FUNCTION vd_groups(k int, thr float8, method text)
RETURNS TABLE (id bigint, keep_id bigint, jaccard float8, near_id bigint, near_jaccard float8)
LANGUAGE plpgsql AS $$
BEGIN
  IF method = 'leader' THEN
    RETURN QUERY SELECT s.id, (s.m).keep_id, (s.m).jaccard, (s.m).near_id, (s.m).near_jaccard
      FROM (SELECT v.id, simhash_leader(v.id, v.fp, k, v.body, thr, 'words', 5) OVER (ORDER BY v.ord, v.id) AS m
            FROM vd v) s;
  ELSE
    RETURN QUERY SELECT s.id, (s.m).keep_id, (s.m).jaccard, (s.m).near_id, (s.m).near_jaccard
      FROM (SELECT v.id, simhash_component(v.id, v.fp, k, v.body, thr, 'words', 5) OVER (ORDER BY v.ord, v.id) AS m
            FROM vd v) s;
  END IF;
END $$;

-- the groups equal the references' (a row without a fingerprint has none),
-- at several radii and thresholds, with both methods
SELECT k, thr, method,
       (SELECT count(*) FROM vd_groups(k, thr, method) g WHERE g.keep_id IS NOT NULL) AS grouped,
       (SELECT count(*) FROM vd_groups(k, thr, method) g WHERE g.keep_id <> g.id) AS duplicates,
       (SELECT count(*) FROM vd_groups(k, thr, method) g
          FULL JOIN (SELECT * FROM vd_ref_leader(k, thr) WHERE method = 'leader'
                     UNION ALL SELECT * FROM vd_ref_component(k, thr) WHERE method = 'component') r USING (id)
         WHERE g.keep_id IS DISTINCT FROM r.keep_id) AS differ_from_reference
FROM (VALUES (0, 0.5), (8, 0.5), (12, 0.8), (20, 0.3), (64, 0.9)) p(k, thr),
     (VALUES ('leader'), ('component')) m(method)
ORDER BY method, k;

-- what each answer says is true: jaccard is the similarity of the pair that
-- grouped the row (leader: with the kept row; a copy of it: 1 or NULL);
-- near_id, on a kept row only, is a candidate within the radius that failed,
-- the most similar one, not the kept row's own
CREATE TEMP TABLE vd_l AS SELECT * FROM vd_groups(12, 0.8, 'leader');
SELECT count(*) FILTER (WHERE l.keep_id <> l.id) AS members,
       count(*) FILTER (WHERE l.keep_id <> l.id AND a.body <> k.body
                        AND l.jaccard IS DISTINCT FROM simhash_jaccard(a.body, k.body, 'words', 5)) AS wrong_jaccard,
       count(*) FILTER (WHERE l.keep_id <> l.id AND a.body = k.body
                        AND l.jaccard IS DISTINCT FROM CASE WHEN simhash_jaccard(a.body, a.body, 'words', 5) IS NOT NULL THEN 1 END)
         AS wrong_copy_jaccard,
       count(*) FILTER (WHERE l.near_id IS NOT NULL) AS with_near,
       count(*) FILTER (WHERE l.near_id IS NOT NULL AND (l.keep_id <> l.id OR simhash_hamming(a.fp, n.fp) > 12
                        OR vd_pass(a.body, n.body, 0.8)
                        OR l.near_jaccard IS DISTINCT FROM simhash_jaccard(a.body, n.body, 'words', 5))) AS wrong_near
FROM vd_l l JOIN vd a ON a.id = l.id LEFT JOIN vd k ON k.id = l.keep_id LEFT JOIN vd n ON n.id = l.near_id;
-- near_id is the most similar of the rejected leaders
SELECT count(*) AS rows_with_a_more_similar_rejected_leader
FROM vd_l l JOIN vd a ON a.id = l.id JOIN vd_l o ON o.keep_id = o.id AND o.id <> l.id JOIN vd b ON b.id = o.id
WHERE l.near_id IS NOT NULL AND l.keep_id = l.id AND simhash_hamming(a.fp, b.fp) <= 12 AND b.ord < a.ord
  AND simhash_jaccard(a.body, b.body, 'words', 5) > coalesce(l.near_jaccard, -1);

-- what a removal leaves, with both methods: no two kept rows form an
-- accepted pair, no two kept rows have the same text, and grouping the kept
-- rows again keeps them all
CREATE TEMP TABLE vd_kept AS
  SELECT 'leader' AS method, v.* FROM vd v JOIN vd_groups(12, 0.8, 'leader') g USING (id) WHERE g.keep_id = g.id
  UNION ALL
  SELECT 'component', v.* FROM vd v JOIN vd_groups(12, 0.8, 'component') g USING (id) WHERE g.keep_id = g.id;
SELECT a.method, count(*) AS accepted_pairs_left,
       count(*) FILTER (WHERE a.body = b.body) AS equal_texts_left
FROM vd_kept a JOIN vd_kept b ON a.method = b.method AND a.id < b.id AND simhash_hamming(a.fp, b.fp) <= 12
WHERE vd_pass(a.body, b.body, 0.8)
GROUP BY a.method ORDER BY 1;
SELECT method, count(*) AS kept, count(*) FILTER (WHERE (m).keep_id <> id) AS grouped_again
FROM (SELECT method, id, simhash_leader(id, fp, 12, body, 0.8, 'words', 5) OVER (PARTITION BY method ORDER BY ord, id) AS m
      FROM vd_kept) s
GROUP BY method ORDER BY 1;

-- the features and size are those of simhash_jaccard(); a NULL size is the
-- features' default (characters: 3)
SELECT count(*) AS differ
FROM (SELECT id, (m).keep_id FROM (SELECT id, simhash_leader(id, fp, 12, body, 0.6, 'chars', NULL) OVER (ORDER BY ord, id) AS m FROM vd) s) g
JOIN (SELECT id, (m).keep_id FROM (SELECT id, simhash_leader(id, fp, 12, body, 0.6, 'chars', 3) OVER (ORDER BY ord, id) AS m FROM vd) s) h
USING (id) WHERE g.keep_id IS DISTINCT FROM h.keep_id;

-- texts and feature sets beyond work_mem go to temporary files: the same groups
CREATE TEMP TABLE vd_big AS
  SELECT g AS id, minhash(b) AS fp, b AS body
  FROM (SELECT g, CASE WHEN g % 3 = 0 THEN vd_edit(t, 2) ELSE t END AS b
        FROM (SELECT g, repeat((SELECT body FROM vd WHERE id = 1 + g % 60) || ' ', 4) AS t
              FROM generate_series(1, 1500) g) x) y;
SET work_mem = '64kB';
CREATE TEMP TABLE vd_disk AS
  SELECT id, simhash_leader(id, fp, 12, body, 0.8, 'words', 5) OVER (ORDER BY id) AS m FROM vd_big;
RESET work_mem;
CREATE TEMP TABLE vd_mem AS
  SELECT id, simhash_leader(id, fp, 12, body, 0.8, 'words', 5) OVER (ORDER BY id) AS m FROM vd_big;
SELECT sum(octet_length(body)) > 64 * 1024 AS texts_beyond_work_mem,
       (SELECT count(*) FROM vd_mem WHERE (m).keep_id <> id) AS grouped,
       (SELECT count(*) FROM vd_disk d JOIN vd_mem m USING (id) WHERE d.m IS DISTINCT FROM m.m) AS differ
FROM vd_big;

-- 3. Errors, each naming the value and the rule.
SELECT simhash_leader(id, fp, 3, body, 1.5, 'words', 5) OVER () FROM vq;
SELECT simhash_leader(id, fp, 3, body, -0.1, 'words', 5) OVER () FROM vq;
SELECT simhash_leader(id, fp, 3, body, 'NaN', 'words', 5) OVER () FROM vq;
SELECT simhash_component(id, fp, 3, body, NULL, 'words', 5) OVER () FROM vq;
SELECT simhash_component(id, fp, 3, body, id / 10.0, 'words', 5) OVER () FROM vq;
SELECT simhash_leader(id, fp, 3, body, 0.5, 'lines', 5) OVER () FROM vq;
SELECT simhash_leader(id, fp, 3, body, 0.5, NULL, 5) OVER () FROM vq;
SELECT simhash_leader(id, fp, 3, body, 0.5, 'words', 33) OVER () FROM vq;
SELECT simhash_leader(id, fp, 65, body, 0.5, 'words', 5) OVER () FROM vq;
SELECT simhash_leader(CASE WHEN id = 3 THEN 2 ELSE id END, fp, 3, body, 0.5, 'words', 5) OVER () FROM vq;
-- a parameter is a valid threshold
PREPARE vg(float8) AS
  SELECT count(*) FILTER (WHERE (m).keep_id <> id)
  FROM (SELECT id, simhash_leader(id, fp, 3, body, $1, 'words', 5) OVER (ORDER BY id) AS m FROM vq) s;
EXECUTE vg(0.8);
DEALLOCATE vg;
-- the memory estimate counts the verified form's nodes: 20,000 rows fit in
-- 2MB without verification, not with it
SET maintenance_work_mem = '2MB';
SELECT count(c) FROM (SELECT simhash_leader(g, g::bigint::simhash, 0) OVER () AS c FROM generate_series(1, 20000) g) s;
SELECT count(m) FROM (SELECT simhash_leader(g, g::bigint::simhash, 0, 'x', 0.5, 'words', 5) OVER () AS m
                      FROM generate_series(1, 20000) g) s;
RESET maintenance_work_mem;

DROP TABLE vq, vd;
DROP FUNCTION vd_words(int), vd_edit(text, int), vd_pass(text, text, float8), vd_ref_leader(int, float8),
  vd_ref_component(int, float8), vd_groups(int, float8, text);
