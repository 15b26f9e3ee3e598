-- bench/data/skewed.sql: the skewed data of bench/index_bench.sh and bench/knn_bench.sh. After
-- setseed(0.25): each row is one of 50,000 centres hashint8extended(c, 42) with k = 0..6 of six
-- drawn bit positions flipped (drawn with replacement), and 20% of the rows get their top 16
-- bits cleared, so one 16-bit block value holds a fifth of the table. The subquery is fenced
-- (OFFSET 0) so that every random() is evaluated once per row.
-- psql variables: tbl (an existing table: id int8, fp simhash), rows, ext (the extension's schema).
SELECT setseed(0.25) \g /dev/null
INSERT INTO :tbl
SELECT g, (CASE WHEN z < 0.2 THEN v & 281474976710655 ELSE v END):::ext.simhash
FROM (SELECT g, z,
             hashint8extended(c, 42)
             # (CASE WHEN k >= 1 THEN 1::int8 << p1 ELSE 0 END)
             # (CASE WHEN k >= 2 THEN 1::int8 << p2 ELSE 0 END)
             # (CASE WHEN k >= 3 THEN 1::int8 << p3 ELSE 0 END)
             # (CASE WHEN k >= 4 THEN 1::int8 << p4 ELSE 0 END)
             # (CASE WHEN k >= 5 THEN 1::int8 << p5 ELSE 0 END)
             # (CASE WHEN k >= 6 THEN 1::int8 << p6 ELSE 0 END) AS v
      FROM (SELECT g, floor(random() * 50000)::int8 AS c, floor(random() * 7)::int AS k,
                   floor(random() * 64)::int AS p1, floor(random() * 64)::int AS p2,
                   floor(random() * 64)::int AS p3, floor(random() * 64)::int AS p4,
                   floor(random() * 64)::int AS p5, floor(random() * 64)::int AS p6,
                   random() AS z
            FROM generate_series(1, :rows) g OFFSET 0) r) s;
