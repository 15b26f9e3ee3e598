-- bench/data/clustered.sql: the clustered data of bench/dedup_bench.sh and bench/citus_bench.sh,
-- in one place so that both measure the same rows. psql variables: tbl (an existing table with
-- columns id int8, fp simhash), rows, ext (the schema of the simhash extension). After
-- setseed(0.375), with NC = max(1, rows / 5) centres hashint8extended(c, 42), row g = 1..rows
-- draws z, c, k, p1..p4, u1, u2 from random(): z < 0.2 gives a random fingerprint
-- (u1 << 32) | u2, else centre c with bits p1..pk flipped (k = 0..4). The subquery is fenced
-- (OFFSET 0) so that every random() is evaluated once per row, in this order.
SELECT setseed(0.375) \g /dev/null
INSERT INTO :tbl
SELECT g, (CASE WHEN z < 0.2 THEN (u1 << 32) | u2
                ELSE hashint8extended(c, 42)
                     # (CASE WHEN k >= 1 THEN 1::int8 << p1 ELSE 0 END)
                     # (CASE WHEN k >= 2 THEN 1::int8 << p2 ELSE 0 END)
                     # (CASE WHEN k >= 3 THEN 1::int8 << p3 ELSE 0 END)
                     # (CASE WHEN k >= 4 THEN 1::int8 << p4 ELSE 0 END) END):::ext.simhash
FROM (SELECT g, random() AS z, floor(random() * greatest(1, :rows / 5))::int8 AS c, floor(random() * 5)::int AS k,
             floor(random() * 64)::int AS p1, floor(random() * 64)::int AS p2,
             floor(random() * 64)::int AS p3, floor(random() * 64)::int AS p4,
             floor(random() * 4294967296)::int8 AS u1, floor(random() * 4294967296)::int8 AS u2
      FROM generate_series(1, :rows) g OFFSET 0) r;
