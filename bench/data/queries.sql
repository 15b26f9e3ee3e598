-- bench/data/queries.sql: the query centres of bench/index_bench.sh, which bench/knn_bench.sh
-- reuses. After setseed(0.5), for each radius r (in the order given) and qno = 1..nq: a random
-- row src of the data table with k = 0..r of six drawn bit positions flipped. Creates table
-- qtbl (r, qno, src, k, p1..p6, q simhash). psql variables: qtbl, tbl (the data table),
-- rows (its size; ids 1..rows), radii (a comma-separated list), nq, ext (the extension's schema).
SELECT setseed(0.5) \g /dev/null
CREATE TABLE :qtbl AS
SELECT r, qno, src, k, p1, p2, p3, p4, p5, p6
FROM (SELECT rr.r, g AS qno, 1 + floor(random() * :rows)::int8 AS src, floor(random() * (rr.r + 1))::int AS k,
             floor(random() * 64)::int AS p1, floor(random() * 64)::int AS p2, floor(random() * 64)::int AS p3,
             floor(random() * 64)::int AS p4, floor(random() * 64)::int AS p5, floor(random() * 64)::int AS p6
      FROM unnest(ARRAY[:radii]) WITH ORDINALITY rr(r, o), generate_series(1, :nq) g
      ORDER BY rr.o, g OFFSET 0) x;
ALTER TABLE :qtbl ADD COLUMN q :ext.simhash;
UPDATE :qtbl SET q = (t.fp::int8
             # (CASE WHEN k >= 1 THEN 1::int8 << p1 ELSE 0 END)
             # (CASE WHEN k >= 2 THEN 1::int8 << p2 ELSE 0 END)
             # (CASE WHEN k >= 3 THEN 1::int8 << p3 ELSE 0 END)
             # (CASE WHEN k >= 4 THEN 1::int8 << p4 ELSE 0 END)
             # (CASE WHEN k >= 5 THEN 1::int8 << p5 ELSE 0 END)
             # (CASE WHEN k >= 6 THEN 1::int8 << p6 ELSE 0 END)):::ext.simhash
FROM :tbl t WHERE t.id = :qtbl.src;
