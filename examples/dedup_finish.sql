-- examples/dedup_finish.sql: how the two removal scripts end (examples/dedup.sql,
-- examples/dedup_pairs.sql; not run on its own). In report mode, the rows of
-- pg_temp.simhash_dedup_review (every row of every group: the kept row first,
-- then the rows that would go from the least similar, then those left alone;
-- the group whose least similar member would go first), all of them or the
-- first report_rows (0: none); in delete and flag
-- mode, the ten largest groups. Then the commit.
\set simhash_dedup_list false
\set simhash_dedup_acted false
\set simhash_dedup_more false
SELECT current_setting('simhash_dedup.action') = 'report' AND current_setting('simhash_dedup.review')::bool
         AND current_setting('simhash_dedup.report_rows') <> '0' AS simhash_dedup_list,
       current_setting('simhash_dedup.action') <> 'report' AS simhash_dedup_acted,
       coalesce(nullif(current_setting('simhash_dedup.report_rows'), ''), '9223372036854775807')
         AS simhash_dedup_rows \gset
\if :simhash_dedup_list
SELECT * FROM pg_temp.simhash_dedup_review WHERE n <= :simhash_dedup_rows ORDER BY n;
SELECT count(*) > 0 AS simhash_dedup_more, count(*) AS simhash_dedup_more_rows
FROM pg_temp.simhash_dedup_review WHERE n > :simhash_dedup_rows \gset
\if :simhash_dedup_more
\echo (:simhash_dedup_more_rows more rows not shown: raise report_rows, or keep them all with -v report_table=NAME)
\endif
\elif :simhash_dedup_acted
-- the largest groups: kept row, size, farthest member
SELECT keep_id AS kept_id, count(*) + 1 AS size, max(bits) AS max_bits_from_kept
FROM pg_temp.simhash_dedup_decided
WHERE acted
GROUP BY keep_id
ORDER BY size DESC, kept_id
LIMIT 10;
\endif

COMMIT;
