-- bench/data/uniform.sql: the uniform data of bench/index_bench.sh and bench/knn_bench.sh:
-- random 64-bit fingerprints (two random() calls of 32 bits each) after setseed(0.125).
-- psql variables: tbl (an existing table: id int8, fp simhash), rows, ext (the extension's schema).
SELECT setseed(0.125) \g /dev/null
INSERT INTO :tbl
SELECT g, ((floor(random() * 4294967296)::int8 << 32) | floor(random() * 4294967296)::int8):::ext.simhash
FROM generate_series(1, :rows) g;
