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

-- more blocks than radius + 1: a key per choice of (blocks - radius) blocks,
-- C(blocks, radius) keys, numbered in lexicographic order of the choice
SELECT * FROM simhash_blocks('0123456789abcdef', 3, 5);
SELECT count(*), count(DISTINCT block) FROM simhash_blocks('0123456789abcdef', 8, 12);
SELECT count(*) FROM simhash_blocks('0123456789abcdef', 3, 4) a
  FULL JOIN simhash_blocks('0123456789abcdef', 3) b USING (block, key)
  WHERE a.key IS NULL OR b.key IS NULL;  -- blocks = radius + 1 is the default
SELECT simhash_first_shared_block('0000000000000000', '0000000000000001', 3, 5) AS first_block_differs,
       simhash_first_shared_block('0000000000000000', '000000000000001f', 3, 5) AS all_differ,
       simhash_first_shared_block('0000000000000000', '0000000000000018', 3, 5) AS last_two_differ;
-- the first shared key is the smallest number among the keys both have, for
-- 2,000 pairs 0..12 bits apart, at several (radius, blocks)
SELECT r, m, count(*) AS pairs,
       count(*) FILTER (WHERE simhash_first_shared_block(a, b, r, m) IS NOT DISTINCT FROM
                              (SELECT min(x.block) FROM simhash_blocks(a, r, m) x
                               JOIN simhash_blocks(b, r, m) y USING (block, key))) AS same,
       count(*) FILTER (WHERE a <~> b <= r AND simhash_first_shared_block(a, b, r, m) IS NULL) AS missed
FROM (SELECT ('x' || left(md5(g::text), 16))::bit(64)::bigint::simhash AS a,
             (('x' || left(md5(g::text), 16))::bit(64)::bigint
              # ('x' || left(md5((g * 7)::text), 16))::bit(64)::bigint
              & ((1::bigint << (g % 13)) - 1) << (g % 50))::simhash AS b
      FROM generate_series(1, 2000) g) p,
     (VALUES (0, 1), (0, 3), (3, 4), (3, 5), (3, 6), (5, 9), (8, 12)) rm(r, m)
GROUP BY r, m ORDER BY r, m;
-- blocks out of range, too many keys
SELECT * FROM simhash_blocks('0123456789abcdef', 3, 3);
SELECT * FROM simhash_blocks('0123456789abcdef', 3, 65);
SELECT * FROM simhash_blocks('0123456789abcdef', 8, 20);
SELECT simhash_first_shared_block('0000000000000000', '0000000000000000', 3, 2);

-- 3,000 fingerprints with near-copies: the pairs by equi-join equal the
-- pairs of the direct self-join, each once, at radii 0, 3 and 7
CREATE TABLE pr (id int, fp simhash);
INSERT INTO pr SELECT g, ((('x' || left(md5((g / 3)::text), 16))::bit(64)::bigint)
                          # CASE WHEN g % 3 = 0 THEN 0 ELSE (1::bigint << (g % 64)) | (CASE WHEN g % 3 = 2 THEN 1::bigint << ((g * 5) % 64) ELSE 0 END) END)::simhash
FROM generate_series(1, 3000) g;
-- the direct self-join at each radius, once: every way of finding the pairs
-- below is compared with it (on the rows as they are then)
CREATE TEMP TABLE pr_direct (radius int, a int, b int);
CREATE FUNCTION pr_direct_pairs() RETURNS void LANGUAGE sql AS $fn$
    DELETE FROM pr_direct;
    INSERT INTO pr_direct SELECT rr.r, a.id, b.id
    FROM unnest(ARRAY[0, 3, 7]) rr(r), pr a, pr b WHERE a.id < b.id AND a.fp <~> b.fp <= rr.r;
$fn$;
SELECT pr_direct_pairs();
SELECT r,
       (SELECT count(*) FROM pr_direct d WHERE d.radius = r) AS direct,
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
-- the same with more blocks: the pairs once each, none missed
SELECT r, m,
       (SELECT count(*) FROM pr_direct d WHERE d.radius = r) AS direct,
       (SELECT count(*) FROM (SELECT a.id, b.id FROM pr a, simhash_blocks(a.fp, r, m) ka,
                                 pr b, simhash_blocks(b.fp, r, m) kb
                              WHERE ka.block = kb.block AND ka.key = kb.key AND a.id < b.id
                                AND a.fp <~> b.fp <= r
                                AND simhash_first_shared_block(a.fp, b.fp, r, m) = ka.block) x) AS by_keys
FROM (VALUES (3, 5), (3, 6), (7, 10)) rm(r, m);

-- simhash_key_partners: extension 0.4.0 dropped it (simhash_key_pack with
-- simhash_pack_partners, below, finds the same pairs), but the library keeps
-- its C function for the databases of a cluster still at 0.3.0; declared
-- here as 0.3.0 declares it, so that it stays tested.
CREATE SCHEMA pr_v030;
CREATE FUNCTION pr_v030.simhash_key_partners(id int8, fp simhash, block int4, radius int4, blocks int4)
    RETURNS int8[] AS '$libdir/simhash', 'simhash_key_partners' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
SET search_path = "$user", public, pr_v030;
-- simhash_key_partners over PARTITION BY key: each key's rows
-- searched in memory give the same pairs as the key join, each once (the
-- partner lists hold each pair on both rows). Exact copies (pairs of equal
-- fingerprints share every key: block 0 reports them), a row without a
-- fingerprint, and a key held by 800 rows (block 0 of the rows 5001..5800
-- is zero: the large partition is searched by multi-index hashing instead
-- of comparing every pair).
INSERT INTO pr SELECT 4000 + id, fp FROM pr WHERE id % 100 = 0;
INSERT INTO pr VALUES (4999, NULL);
INSERT INTO pr SELECT 5000 + g, (((('x' || left(md5((g / 4)::text), 16))::bit(64)::bigint)
                          # CASE WHEN g % 4 = 0 THEN 0 ELSE 1::bigint << (g % 61) END)
                         & ~x'1111111111111111'::bigint)::simhash
FROM generate_series(1, 800) g;
CREATE TABLE pr_keys AS SELECT k.block, k.key, p.id, p.fp FROM pr p, simhash_blocks(p.fp, 3, 4) k;
INSERT INTO pr_keys SELECT 0, 0, 4999, NULL;
SELECT pr_direct_pairs();
SELECT max(n) AS largest_key FROM (SELECT count(*) AS n FROM pr_keys GROUP BY block, key) k;
CREATE FUNCTION pr_partner_pairs(r int, m int) RETURNS TABLE (a int, b int) LANGUAGE sql AS $fn$
    SELECT k.id, p FROM (SELECT id, simhash_key_partners(id, fp, block, r, m) OVER (PARTITION BY key) AS ps
                         FROM (SELECT k.block, k.key, p.id, p.fp FROM pr p, simhash_blocks(p.fp, r, m) k) x) k,
                        unnest(k.ps) p
    WHERE k.id < p
$fn$;
SELECT r, m,
       (SELECT count(*) FROM pr_direct d WHERE d.radius = r) AS direct,
       (SELECT count(*) FROM pr_partner_pairs(r, m)) AS by_partners,
       (SELECT count(*) FROM (SELECT d.a, d.b FROM pr_direct d WHERE d.radius = r
                              EXCEPT SELECT * FROM pr_partner_pairs(r, m)) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM pr_partner_pairs(r, m)
                              EXCEPT ALL SELECT d.a, d.b FROM pr_direct d WHERE d.radius = r) x) AS extra
FROM (VALUES (0, 1), (3, 4), (3, 5), (7, 8), (7, 10)) rm(r, m);
-- the partner lists: both sides of each pair, ascending; NULL without a
-- fingerprint, an empty list for a row with no pair in its key
SELECT id, block, simhash_key_partners(id, fp, block, 3, 4) OVER (PARTITION BY key)
FROM pr_keys WHERE id IN (3, 4, 5, 300, 4300, 4999) OR (key = (SELECT key FROM pr_keys WHERE id = 300 AND block = 0) AND block = 0)
ORDER BY id, block;
SELECT simhash_key_partners(id, fp, block, NULL, 4) OVER (PARTITION BY key) FROM pr_keys WHERE id = 300;
-- keys of different blocks can be equal (here 0: every bit of the chosen
-- blocks zero): one partition, each block's rows searched apart; the pairs
-- once each, (1, 2) in block 0, (1, 3) and (2, 3) in block 4 ({1, 2}: the
-- first two blocks where they agree)
SELECT k.block, k.key, v.id, simhash_key_partners(v.id, v.fp, k.block, 3, 5) OVER (PARTITION BY k.key) AS partners
FROM (VALUES (1, '0000000000000000'::simhash), (2, '0000000000000000'), (3, '0000000000000001')) v(id, fp),
     simhash_blocks(v.fp, 3, 5) k
ORDER BY cardinality(simhash_key_partners(v.id, v.fp, k.block, 3, 5) OVER (PARTITION BY k.key)) DESC, k.block, v.id
LIMIT 6;
-- errors: two keys in one partition, a block that is not a key's, NULL id,
-- the radius and blocks checked as simhash_blocks checks them, memory
SELECT simhash_key_partners(id, fp, block, 3, 4) OVER (ORDER BY id) FROM pr_keys WHERE block = 0 AND id IN (1, 300);
SELECT simhash_key_partners(id, fp, 4, 3, 4) OVER () FROM pr_keys WHERE id = 1;
SELECT simhash_key_partners(NULL, fp, block, 3, 4) OVER (PARTITION BY key) FROM pr_keys WHERE id = 1;
SELECT simhash_key_partners(id, fp, block, 64, 65) OVER (PARTITION BY key) FROM pr_keys WHERE id = 1;
SELECT simhash_key_partners(id, fp, block, 3, 3) OVER (PARTITION BY key) FROM pr_keys WHERE id = 1;
SET maintenance_work_mem = '1MB';
SELECT sum(cardinality(p)) FROM (SELECT simhash_key_partners(g, '0000000000000000', 0, 3, 4) OVER () AS p
                                 FROM generate_series(1, 30000) g) x;
SELECT sum(cardinality(p)) FROM (SELECT simhash_key_partners(g, '0000000000000000', 0, 3, 4) OVER () AS p
                                 FROM generate_series(1, 5000) g) x;
SELECT sum(cardinality(p)) FROM (SELECT simhash_key_partners(g, '0000000000000000', 0, 3, 4) OVER () AS p
                                 FROM generate_series(1, 100) g) x;
RESET maintenance_work_mem;
RESET search_path;
DROP FUNCTION pr_v030.simhash_key_partners(int8, simhash, int4, int4, int4);
DROP SCHEMA pr_v030;

-- simhash_key_pack / simhash_pack_partners: the keys packed per group of
-- rows, one bytea per target, and each target's packs searched: the same
-- pairs as the direct self-join, each once, for several groupings and
-- target counts (1 target: every key in one search; 7 groups by id and 5
-- targets; 50 groups by fingerprint and 64 targets), on the rows above
-- (exact copies, the NULL fingerprint, the key of 800 rows)
CREATE FUNCTION pr_pack_pairs(r int, m int, groups int, targets int) RETURNS TABLE (a bigint, b bigint) LANGUAGE sql AS $fn$
    WITH packs AS (
        SELECT t.n AS target, t.pack
        FROM (SELECT simhash_key_pack(id, fp, r, m, targets) AS packs FROM pr
              GROUP BY CASE WHEN groups = 50 THEN hashint8(fp::bigint) % 50 ELSE id % groups END) s,
             unnest(s.packs) WITH ORDINALITY t(pack, n)
        WHERE t.pack IS NOT NULL)
    SELECT p.id, q
    FROM (SELECT array_agg(pack) AS packs FROM packs GROUP BY target) s,
         simhash_pack_partners(s.packs, r, m) p, unnest(p.partners) q
    WHERE p.id < q
$fn$;
SELECT r, m, groups, targets,
       (SELECT count(*) FROM pr_direct d WHERE d.radius = r) AS direct,
       (SELECT count(*) FROM pr_pack_pairs(r, m, groups, targets)) AS by_packs,
       (SELECT count(*) FROM (SELECT d.a, d.b FROM pr_direct d WHERE d.radius = r
                              EXCEPT SELECT * FROM pr_pack_pairs(r, m, groups, targets)) x) AS missing,
       (SELECT count(*) FROM (SELECT * FROM pr_pack_pairs(r, m, groups, targets)
                              EXCEPT ALL SELECT d.a, d.b FROM pr_direct d WHERE d.radius = r) x) AS extra
FROM (VALUES (0, 1, 1, 1), (3, 4, 1, 1), (3, 4, 7, 5), (3, 4, 50, 64), (3, 5, 7, 5), (7, 8, 50, 64), (7, 10, 7, 5)) v(r, m, groups, targets);
-- a row's partners: a result row per target where the row has a pair
-- (here 3's pairs with 4 and 5 are found in different targets), the
-- partners ascending, with the row's fingerprint; rows without a pair, or
-- without a fingerprint, absent
WITH packs AS (
    SELECT t.n AS target, t.pack
    FROM (SELECT simhash_key_pack(id, fp, 3, 4, 3) AS packs FROM pr GROUP BY id % 2) s,
         unnest(s.packs) WITH ORDINALITY t(pack, n))
SELECT p.id, p.fp, p.partners
FROM (SELECT array_agg(pack) AS packs FROM packs GROUP BY target) s,
     simhash_pack_partners(s.packs, 3, 4) p
WHERE p.id IN (3, 4, 5, 300, 4300, 4999)
ORDER BY p.id, p.partners;
-- a pack: 12 bytes of header and 18 a key, one per target the keys reach
-- (NULL for a target none reaches); no rows or only NULL fingerprints
SELECT array_length(packs, 1) AS targets, array_position(packs, NULL) IS NOT NULL AS has_empty,
       (SELECT sum(length(p) - 12) / 18 FROM unnest(packs) p) AS keys
FROM (SELECT simhash_key_pack(id, fp, 3, 4, 1000) AS packs FROM pr WHERE id <= 10) s;
SELECT simhash_key_pack(id, fp, 3, 4, 2) FROM pr WHERE false;
SELECT simhash_key_pack(id, fp, 3, 4, 2) FROM pr WHERE fp IS NULL;
SELECT count(*) FROM simhash_pack_partners(ARRAY[NULL]::bytea[], 3, 4);
SELECT count(*) FROM simhash_pack_partners('{}', 3, 4);
-- one row given twice is not its own pair; the same pair twice is reported once
SELECT p.* FROM (SELECT simhash_key_pack(id, fp::simhash, 3, 4, 1) AS packs
                 FROM (VALUES (1, '00000000000000ff'), (1, '00000000000000ff'), (2, '00000000000000fe'), (2, '00000000000000fe')) v(id, fp)) s,
     simhash_pack_partners(s.packs, 3, 4) p ORDER BY id;
-- errors: NULL id, NULL or changing constants, targets out of range, too
-- many keys, not a pack, a pack of another radius or version, memory
SELECT simhash_key_pack(NULL, fp, 3, 4, 2) FROM pr WHERE id = 1;
SELECT simhash_key_pack(id, fp, NULL, 4, 2) FROM pr WHERE id = 1;
SELECT simhash_key_pack(id, fp, 3, 4, id::int) FROM pr WHERE id IN (1, 2);
SELECT simhash_key_pack(id, fp, 3, 4, 0) FROM pr WHERE id = 1;
SELECT simhash_key_pack(id, fp, 3, 4, 2000000) FROM pr WHERE id = 1;
SELECT simhash_key_pack(id, fp, 3, 3, 2) FROM pr WHERE id = 1;
SELECT simhash_key_pack(id, fp, 10, 40, 2) FROM pr WHERE id = 1;
SELECT count(*) FROM simhash_pack_partners(ARRAY['\x0102'::bytea], 3, 4);
SELECT count(*) FROM simhash_pack_partners(ARRAY['\x53484b320003000400000000'::bytea], 3, 4);
SELECT count(*) FROM simhash_pack_partners(ARRAY['\x53484b310003000400000001'::bytea], 3, 4);
SELECT count(*) FROM simhash_pack_partners(ARRAY['\x53484b31000300040000000100000000000000010000000000000001ffff'::bytea], 3, 4);
SELECT count(*) FROM simhash_pack_partners((SELECT simhash_key_pack(id, fp, 3, 4, 1) FROM pr), 3, 5);
SELECT count(*) FROM simhash_pack_partners(ARRAY[ARRAY['\x'::bytea]], 3, 4);
SELECT count(*) FROM simhash_pack_partners(NULL, 3, 4);
SET maintenance_work_mem = '1MB';
-- (terse: the memory in use depends on the server version's allocator)
\set VERBOSITY terse
SELECT length(simhash_key_pack(g, g::bigint::simhash, 3, 4, 1)::text) > 0 FROM generate_series(1, 30000) g;
-- many small groups: hashed, every group's keys are held at once (an error
-- at 1MB); sorted, one group at a time
SET enable_hashagg = on;
SET enable_sort = off;
SELECT count(*) FROM (SELECT simhash_key_pack(g, g::bigint::simhash, 3, 4, 1) AS p FROM generate_series(1, 30000) g GROUP BY g % 100) s WHERE p IS NOT NULL;
\set VERBOSITY default
RESET enable_sort;
SET enable_hashagg = off;
SELECT count(*) FROM (SELECT simhash_key_pack(g, g::bigint::simhash, 3, 4, 1) AS p FROM generate_series(1, 30000) g GROUP BY g % 100) s WHERE p IS NOT NULL;
RESET enable_hashagg;
SELECT count(*) FROM simhash_pack_partners((SELECT simhash_key_pack(g, g::bigint::simhash, 3, 4, 1) FROM generate_series(1, 5000) g), 3, 4);
SELECT count(*) FROM simhash_pack_partners((SELECT simhash_key_pack(g, '0000000000000000', 0, 1, 1) FROM generate_series(1, 3000) g), 0, 1);
SELECT count(*) FROM simhash_pack_partners((SELECT simhash_key_pack(g, '0000000000000000', 0, 1, 1) FROM generate_series(1, 100) g), 0, 1);
RESET maintenance_work_mem;
DROP FUNCTION pr_pack_pairs(int, int, int, int);
DROP FUNCTION pr_partner_pairs(int, int), pr_direct_pairs();
DROP TABLE pr, pr_keys, pr_direct;

-- simhash_pair_groups: groups from a pair list, with the window functions'
-- rules (ids taken in ascending order). On 3,000 rows with near-copies and
-- a chain (a component the leader method splits), the groups equal those of
-- simhash_leader and simhash_component over the same rows.
CREATE TABLE pg_rows (id bigint, fp simhash);
INSERT INTO pg_rows SELECT g, ((('x' || left(md5((g / 3)::text), 16))::bit(64)::bigint)
                          # CASE WHEN g % 3 = 0 THEN 0 ELSE (1::bigint << (g % 64)) | (CASE WHEN g % 3 = 2 THEN 1::bigint << ((g * 5) % 64) ELSE 0 END) END)::simhash
FROM generate_series(1, 3000) g;
-- a chain: each link 3 bits from the next, the ends 12 bits apart
INSERT INTO pg_rows VALUES (5001, '0000000000000000'), (5002, '0000000000000007'),
                           (5003, '000000000000003f'), (5004, '00000000000001ff'), (5005, '0000000000000fff');
CREATE TABLE pg_pairs AS
SELECT a.id AS a, b.id AS b FROM pg_rows a, simhash_blocks(a.fp, 3) ka, pg_rows b, simhash_blocks(b.fp, 3) kb
WHERE ka.block = kb.block AND ka.key = kb.key AND a.id < b.id AND a.fp <~> b.fp <= 3
  AND simhash_first_shared_block(a.fp, b.fp, 3) = ka.block;
SELECT count(*) AS pairs FROM pg_pairs;
SELECT m AS method, count(*) AS ids_in_pairs, count(DISTINCT keep_id) AS groups
FROM unnest(ARRAY['leader', 'component']) m, simhash_pair_groups('SELECT a, b FROM pg_pairs', m)
GROUP BY m ORDER BY m;
WITH w AS (SELECT id, simhash_leader(id, fp, 3) OVER (ORDER BY id) AS keep_l,
                  simhash_component(id, fp, 3) OVER (ORDER BY id) AS keep_c FROM pg_rows),
     l AS (SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'leader')),
     c AS (SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'component'))
SELECT count(*) FILTER (WHERE coalesce(l.keep_id, w.id) = w.keep_l) AS leader_same,
       count(*) FILTER (WHERE coalesce(c.keep_id, w.id) = w.keep_c) AS component_same,
       count(*) AS rows
FROM w LEFT JOIN l USING (id) LEFT JOIN c USING (id);
-- the chain: one component, two leader groups
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs WHERE a > 5000', 'component') ORDER BY id;
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs WHERE a > 5000', 'leader') ORDER BY id;
-- integer ids, NULLs and self-pairs ignored, an empty list
SELECT * FROM simhash_pair_groups('SELECT * FROM (VALUES (1, 2), (2, NULL), (3, 3), (2, 4)) v(a, b)', 'component') ORDER BY id;
SELECT count(*) FROM simhash_pair_groups('SELECT 1::bigint, 2::bigint WHERE false');
-- the ids taken in another order (a third argument, a query listing them):
-- the same groups as the window functions ordered so, for both methods
WITH w AS (SELECT id, simhash_leader(id, fp, 3) OVER (ORDER BY (id * 7919) % 3001 DESC, id) AS keep_l,
                  simhash_component(id, fp, 3) OVER (ORDER BY (id * 7919) % 3001 DESC, id) AS keep_c FROM pg_rows),
     l AS (SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'leader',
                                             'SELECT id FROM pg_rows ORDER BY (id * 7919) % 3001 DESC, id')),
     c AS (SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'component',
                                             'SELECT id FROM pg_rows ORDER BY (id * 7919) % 3001 DESC, id'))
SELECT count(*) FILTER (WHERE coalesce(l.keep_id, w.id) = w.keep_l) AS leader_same,
       count(*) FILTER (WHERE coalesce(c.keep_id, w.id) = w.keep_c) AS component_same,
       count(*) FILTER (WHERE w.keep_l <> w.id AND w.keep_l > w.id) AS kept_a_larger_id,
       count(*) AS rows
FROM w LEFT JOIN l USING (id) LEFT JOIN c USING (id);
-- ascending ids as the order: the same as no order; ids of the order in no
-- pair are not returned (6000, 7000)
SELECT m AS method,
       (SELECT count(*) FROM (SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', m)
                              EXCEPT SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', m,
                                'SELECT id FROM pg_rows UNION ALL VALUES (6000), (7000) ORDER BY 1')) x) AS differ,
       (SELECT count(*) FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', m,
          'SELECT id FROM pg_rows UNION ALL VALUES (6000), (7000) ORDER BY 1')) AS returned
FROM unnest(ARRAY['leader', 'component']) m ORDER BY m;
-- the chain kept from its other end; NULLs are skipped; integers
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs WHERE a > 5000', 'leader',
                                  'SELECT * FROM (VALUES (5005), (NULL), (5004), (5003), (5002), (5001)) v(id)') ORDER BY id;
SELECT * FROM simhash_pair_groups('SELECT a::int, b::int FROM pg_pairs WHERE a > 5000', 'component',
                                  'SELECT * FROM (VALUES (5003), (5001), (5002), (5005), (5004)) v(id)') ORDER BY id;
-- an id listed twice, an id of a pair the order does not list, and orders
-- of the wrong shape
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs WHERE a > 5000', 'leader',
                                  'SELECT * FROM (VALUES (5005), (5004), (5005), (5003), (5002), (5001)) v(id)');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs WHERE a > 5000', 'leader',
                                  'SELECT * FROM (VALUES (5005), (5004), (5003), (5002)) v(id)');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'leader', 'SELECT id, id FROM pg_rows');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'leader', 'SELECT id::text FROM pg_rows');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'leader', NULL);
SET maintenance_work_mem = '1MB';
SELECT count(*) FROM simhash_pair_groups('SELECT 1::bigint, 2::bigint', 'leader', 'SELECT g FROM generate_series(1, 100000) g');
RESET maintenance_work_mem;
-- errors
SELECT * FROM simhash_pair_groups('SELECT a FROM pg_pairs');
SELECT * FROM simhash_pair_groups('SELECT a::text, b::text FROM pg_pairs');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', 'closest');
SELECT * FROM simhash_pair_groups('SELECT a, b FROM pg_pairs', repeat('x', 100000));
SET maintenance_work_mem = '1MB';
SELECT count(*) FROM simhash_pair_groups('SELECT g, g + 1 FROM generate_series(1, 100000) g');
RESET maintenance_work_mem;
DROP TABLE pg_rows, pg_pairs;
