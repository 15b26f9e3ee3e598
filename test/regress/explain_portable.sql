-- explain_portable.sql: a helper for the pg_regress suites that show plans
-- (included with \ir by rewrite.sql and index.sql).
-- EXPLAIN text that reads the same on every supported PostgreSQL version:
-- 17 names an InitPlan's value (InitPlan 1).col1 where 15 says $0, and
-- prints "InitPlan 1" without "(returns $0)"; lines matching drop_line are
-- left out (for what one version prints and another does not).
CREATE OR REPLACE FUNCTION sh_explain_portable(options text, query text, drop_line text DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE format('EXPLAIN (%s) %s', options, query) LOOP
        CONTINUE WHEN drop_line IS NOT NULL AND line ~ drop_line;
        line := regexp_replace(line, '\(InitPlan 1\)\.col1', '$0', 'g');
        RETURN NEXT regexp_replace(line, 'InitPlan 1$', 'InitPlan 1 (returns $0)');
    END LOOP;
END
$fn$;
