-- jaccard: simhash_jaccard(a, b [, features [, size]]), the exact Jaccard similarity of two
-- documents' feature sets under fingerprint specification version 2.

-- identical, disjoint, and the same words in another order and case (the same word set)
SELECT simhash_jaccard('the quick brown fox', 'the quick brown fox') AS same,
       simhash_jaccard('the quick brown fox', 'lorem ipsum dolor sit') AS disjoint,
       simhash_jaccard('The Quick brown FOX', 'fox brown quick the', 'words', 1) AS reordered_words;
-- {a b c d} and {c d e f}: 2 shared of 6; repeats count once
SELECT simhash_jaccard('a b c d', 'c d e f d d', 'words', 1);
-- word pairs (the default size): 'a b c d' has {a b, b c, c d}, 'a b c x' has {a b, b c, c x}
SELECT simhash_jaccard('a b c d', 'a b c x');
-- character n-grams
SELECT round(simhash_jaccard('colour', 'color', 'chars', 3)::numeric, 4);
-- one document without features: 0; neither: NULL; NULL arguments: NULL
SELECT simhash_jaccard('words here', '   '), simhash_jaccard('', ' . '),
       simhash_jaccard(NULL, 'x'), simhash_jaccard('x', 'y', NULL);
-- symmetric
SELECT simhash_jaccard('one two three four', 'two three five') =
       simhash_jaccard('two three five', 'one two three four') AS symmetric;

-- The same value as the set operations over simhash_features(), which lists the hashes version 2
-- counts, for documents in several scripts, both feature kinds and three sizes.
CREATE TEMP TABLE jd (id int, body text);
INSERT INTO jd VALUES
  (1, 'It was the best of times, it was the worst of times, it was the age of wisdom'),
  (2, 'It was the best of times, it was the worst of times, it was the age of foolishness'),
  (3, 'Il était une fois, dans un pays lointain, une princesse qui était la plus belle'),
  (4, '在很久很久以前，有一个美丽的公主住在一个遥远的国家里'),
  (5, '在很久很久以前，有一個美麗的公主住在一個遙遠的國家裡'),
  (6, repeat('boilerplate navigation footer ', 40) || 'the article itself is short'),
  (7, repeat('boilerplate navigation footer ', 40) || 'another article, also short');
CREATE TEMP TABLE jopts (features text, size int);
INSERT INTO jopts VALUES ('words', 1), ('words', 2), ('words', 3), ('chars', 2), ('chars', 4),
  ('mixed', 2), ('mixed', 5);
SELECT o.features, o.size, count(*) AS pairs,
       count(*) FILTER (WHERE simhash_jaccard(a.body, b.body, o.features, o.size) IS DISTINCT FROM
         (SELECT count(*) FROM (SELECT hash FROM simhash_features(a.body, o.features, o.size)
                                INTERSECT SELECT hash FROM simhash_features(b.body, o.features, o.size)) i)::float8 /
         (SELECT count(*) FROM (SELECT hash FROM simhash_features(a.body, o.features, o.size)
                                UNION SELECT hash FROM simhash_features(b.body, o.features, o.size)) u))
         AS differing
FROM jd a, jd b, jopts o WHERE a.id <= b.id GROUP BY 1, 2 ORDER BY 1, 2;

-- near copies, related texts and unrelated ones (words, size 2)
SELECT a.id, b.id, round(simhash_jaccard(a.body, b.body)::numeric, 3) AS j
FROM jd a, jd b WHERE a.id < b.id AND a.id IN (1, 4, 6) ORDER BY 1, 2;

-- 'mixed' (the default size 5): word 5-grams of the word tokens and character 3-grams of the
-- single characters (Han, Kana, Thai, ...), two streams. Text of one kind reads as that kind's
-- n-grams alone: Chinese as 'words', 3 (each Han character a token), English as 'words', 5.
SELECT round(simhash_jaccard(a, b, 'mixed')::numeric, 3) AS mixed,
       round(simhash_jaccard(a, b, 'words', 3)::numeric, 3) AS words3,
       round(simhash_jaccard(a, b, 'words', 5)::numeric, 3) AS words5
FROM (VALUES ('在很久很久以前，有一个美丽的公主住在一个遥远的国家里',
              '在很久很久以前，有一位美丽的公主住在一个遥远的国家里')) v(a, b);
SELECT simhash_jaccard(a.body, b.body, 'mixed') = simhash_jaccard(a.body, b.body, 'words', 5) AS words_as_5grams
FROM jd a, jd b WHERE a.id = 1 AND b.id = 2;
-- a man page translated twice (simplified, traditional with Taiwan wording), with its commands
-- and options in Latin letters: 'mixed' reads more of it as shared than word 5-grams
SELECT round(simhash_jaccard(a, b, 'mixed')::numeric, 3) AS mixed,
       round(simhash_jaccard(a, b, 'words', 5)::numeric, 3) AS words5
FROM (VALUES ('ls 命令列出目录内容。选项 -l 使用长格式列出文件，--all 不忽略以 . 开头的条目，--sort 按名称排序',
              'ls 命令列出目錄內容。選項 -l 使用長格式列出檔案，--all 不忽略以 . 開頭的條目，--sort 按名稱排序')) v(a, b);
-- the features: the words' 5-gram after the Han 3-grams it follows; a stream shorter than its n
-- gives one feature of all of it, the words' first
SELECT feature FROM simhash_features('see 中文字典 also this one more', 'mixed');
SELECT feature FROM simhash_features('ls 中文 -l', 'mixed');

-- simhash_containment: the share of the smaller feature set found in the larger. The first half
-- of a text against the whole: Jaccard under 0.5, containment 1 (every word 5-gram of the half
-- is one of the whole's); symmetric; the same value as set operations over simhash_features();
-- empty documents as for simhash_jaccard
SELECT round(simhash_jaccard(half, whole, 'mixed')::numeric, 3) AS jaccard,
       simhash_containment(half, whole, 'mixed') AS containment,
       simhash_containment(whole, half, 'mixed') AS symmetric
FROM (VALUES ('the quick brown fox jumps over the lazy dog',
              'the quick brown fox jumps over the lazy dog and then runs far away into the dark woods')) v(half, whole);
SELECT o.features, o.size,
       count(*) FILTER (WHERE simhash_containment(a.body, b.body, o.features, o.size) IS DISTINCT FROM
         (SELECT count(*) FROM (SELECT hash FROM simhash_features(a.body, o.features, o.size)
                                INTERSECT SELECT hash FROM simhash_features(b.body, o.features, o.size)) i)::float8 /
         least((SELECT count(DISTINCT hash) FROM simhash_features(a.body, o.features, o.size)),
               (SELECT count(DISTINCT hash) FROM simhash_features(b.body, o.features, o.size))))
         AS differing
FROM jd a, jd b, jopts o WHERE a.id <= b.id GROUP BY 1, 2 ORDER BY 1, 2;
SELECT simhash_containment('words here', '   '), simhash_containment('', ' . '),
       simhash_containment('a b c', 'a b c d e f g', 'words', 1) AS all_of_the_smaller,
       simhash_containment(NULL, 'x');
SELECT simhash_containment('a', 'b', 'sentences');

-- bad arguments, as simhash(text) reports them
SELECT simhash_jaccard('a', 'b', 'sentences');
SELECT simhash_jaccard('a', 'b', 'words', 0);
SELECT simhash_jaccard('a', 'b', 'chars', 100);

-- verification after a search: candidates within 24 bits, kept when J >= 0.5
CREATE TEMP TABLE jdocs AS SELECT id, body, simhash(body) AS fp FROM jd;
SELECT d.id, simhash_jaccard(d.body, q.body) >= 0.5 AS verified
FROM jdocs d, (SELECT body, fp FROM jdocs WHERE id = 1) q
WHERE d.fp <~> q.fp <= 24 ORDER BY d.id;
