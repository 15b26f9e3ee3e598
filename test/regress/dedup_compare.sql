-- test/regress/dedup_compare.sql (for dedup_pairs.sql): fresh copies of dp
-- in dp_w and dp_p; examples/dedup.sql flags dp_w, examples/dedup_pairs.sql
-- flags dp_p with the same settings; the flags are compared into diffs.
TRUNCATE dp_w, dp_p;
INSERT INTO dp_w SELECT * FROM dp;
INSERT INTO dp_p SELECT * FROM dp;
\set ECHO none
\set table dp_w
\ir ../../examples/dedup.sql
\set table dp_p
\ir ../../examples/dedup_pairs.sql
\set ECHO all
INSERT INTO diffs
SELECT :'cfg', count(*) FILTER (WHERE w.dup_of IS NOT NULL),
       count(*) FILTER (WHERE w.dup_of IS DISTINCT FROM p.dup_of)
FROM dp_w w JOIN dp_p p USING (id);
