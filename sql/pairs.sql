--
-- pairs: pigeonhole keys. simhash_blocks(fp, r) cuts the 64 bits into r + 1
-- interleaved blocks; two fingerprints within r bits agree on at least one,
-- so "all pairs within r" becomes an equi-join on (block, key), and
-- simhash_first_shared_block reports each pair once.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY default

SELECT * FROM simhash_blocks('0123456789abcdef', 3);
SELECT sum(key) = '0123456789abcdef'::simhash::bigint AS blocks_cover_the_bits,
       bit_or(key) = '0123456789abcdef'::simhash::bigint AS disjoint
FROM simhash_blocks('0123456789abcdef', 3);
SELECT count(*) FROM simhash_blocks('0123456789abcdef', 0);
SELECT count(*) FROM simhash_blocks('0123456789abcdef', 63);
SELECT simhash_first_shared_block('0000000000000000', '0000000000000001', 3) AS first,
       simhash_first_shared_block('0000000000000000', '000000000000000f', 3) AS none,
       simhash_first_shared_block('0000000000000000', '0000000000000000', 3) AS equal;
-- the radius must leave at least one bit a block
SELECT * FROM simhash_blocks('0123456789abcdef', 64);
SELECT * FROM simhash_blocks('0123456789abcdef', -1);
SELECT simhash_first_shared_block('0000000000000000', '0000000000000000', 64);

-- 3,000 fingerprints with near-copies: the pairs by equi-join equal the
-- pairs of the direct self-join, each once, at radii 0, 3 and 7
CREATE TABLE pr (id int, fp simhash);
INSERT INTO pr SELECT g, ((('x' || left(md5((g / 3)::text), 16))::bit(64)::bigint)
                          # CASE WHEN g % 3 = 0 THEN 0 ELSE (1::bigint << (g % 64)) | (CASE WHEN g % 3 = 2 THEN 1::bigint << ((g * 5) % 64) ELSE 0 END) END)::simhash
FROM generate_series(1, 3000) g;
SELECT r,
       (SELECT count(*) FROM pr a JOIN pr b ON a.id < b.id AND a.fp <~> b.fp <= r) AS direct,
       (SELECT count(*) FROM (SELECT a.id, b.id FROM pr a, simhash_blocks(a.fp, r) ka,
                                 pr b, simhash_blocks(b.fp, r) kb
                              WHERE ka.block = kb.block AND ka.key = kb.key AND a.id < b.id
                                AND a.fp <~> b.fp <= r
                                AND simhash_first_shared_block(a.fp, b.fp, r) = ka.block) x) AS by_keys,
       (SELECT count(*) FROM (SELECT DISTINCT a.id, b.id FROM pr a, simhash_blocks(a.fp, r) ka,
                                 pr b, simhash_blocks(b.fp, r) kb
                              WHERE ka.block = kb.block AND ka.key = kb.key AND a.id < b.id
                                AND a.fp <~> b.fp <= r) x) AS distinct_by_keys
FROM unnest(ARRAY[0, 3, 7]) r;
DROP TABLE pr;
