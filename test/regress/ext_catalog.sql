-- test/regress/ext_catalog.sql (for upgrade.sql): pg_temp.ext_catalog(), every catalog
-- fact of the installed simhash extension as one line of text, with OIDs replaced by
-- names, so that two installations (a fresh CREATE EXTENSION and an update chain) can
-- be compared with EXCEPT: member objects (functions and aggregates with their whole
-- definitions, types, operators, operator classes and families with their members,
-- casts, the access method), comments and privileges.
CREATE FUNCTION pg_temp.ext_catalog() RETURNS SETOF text LANGUAGE sql AS $catalog$
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'simhash'),
members AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
    WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
)
-- functions (aggregates have no pg_get_functiondef: their pg_aggregate row instead)
SELECT 'function ' || p.oid::regprocedure || ': ' ||
       CASE WHEN p.prokind = 'a' THEN
           format('aggregate sfunc=%s stype=%s finalfn=%s combinefn=%s serialfn=%s deserialfn=%s '
                  'finalextra=%s finalmodify=%s initval=%s parallel=%s',
                  a.aggtransfn::regprocedure, a.aggtranstype::regtype, a.aggfinalfn::regproc,
                  a.aggcombinefn::regproc, a.aggserialfn::regproc, a.aggdeserialfn::regproc,
                  a.aggfinalextra, a.aggfinalmodify, a.agginitval, p.proparallel)
       ELSE pg_get_functiondef(p.oid) END ||
       ' acl=' || coalesce(p.proacl::text, 'default') ||
       ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
UNION ALL
SELECT format('type %s: type=%s len=%s byval=%s align=%s storage=%s category=%s preferred=%s '
              'in=%s out=%s recv=%s send=%s analyze=%s subscript=%s elem=%s array=%s attrs=%s comment=%s',
              t.oid::regtype, t.typtype, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typcategory,
              t.typispreferred, t.typinput::regproc, t.typoutput::regproc, t.typreceive::regproc,
              t.typsend::regproc, t.typanalyze::regproc, t.typsubscript::regproc, t.typelem::regtype,
              t.typarray::regtype,
              (SELECT string_agg(att.attname || ' ' || format_type(att.atttypid, att.atttypmod), ', '
                                 ORDER BY att.attnum)
               FROM pg_attribute att WHERE att.attrelid = t.typrelid AND att.attnum > 0),
              coalesce(obj_description(t.oid, 'pg_type'), '-'))
FROM members m JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
UNION ALL
SELECT format('operator %s: result=%s code=%s commutator=%s negator=%s restrict=%s join=%s '
              'merges=%s hashes=%s comment=%s',
              o.oid::regoperator, o.oprresult::regtype, o.oprcode::regprocedure,
              nullif(o.oprcom, 0)::regoperator, nullif(o.oprnegate, 0)::regoperator,
              o.oprrest::regproc, o.oprjoin::regproc, o.oprcanmerge, o.oprcanhash,
              coalesce(obj_description(o.oid, 'pg_operator'), '-'))
FROM members m JOIN pg_operator o ON m.classid = 'pg_operator'::regclass AND o.oid = m.objid
UNION ALL
SELECT format('opclass %s using %s: family=%s type=%s default=%s key=%s',
              c.opcname, am.amname, f.opfname, c.opcintype::regtype, c.opcdefault,
              c.opckeytype::regtype)
FROM members m JOIN pg_opclass c ON m.classid = 'pg_opclass'::regclass AND c.oid = m.objid
JOIN pg_am am ON am.oid = c.opcmethod JOIN pg_opfamily f ON f.oid = c.opcfamily
UNION ALL
SELECT format('opfamily %s using %s', f.opfname, am.amname)
FROM members m JOIN pg_opfamily f ON m.classid = 'pg_opfamily'::regclass AND f.oid = m.objid
JOIN pg_am am ON am.oid = f.opfmethod
UNION ALL
-- operator family members that involve the extension's operators or functions, in its
-- own families and in core's (integer_ops gains the distance comparisons)
SELECT format('amop %s.%s (%s, %s) strategy %s: %s purpose=%s sort=%s',
              am.amname, f.opfname, ao.amoplefttype::regtype, ao.amoprighttype::regtype,
              ao.amopstrategy, ao.amopopr::regoperator, ao.amoppurpose,
              (SELECT opfname FROM pg_opfamily WHERE oid = ao.amopsortfamily))
FROM pg_amop ao JOIN pg_opfamily f ON f.oid = ao.amopfamily JOIN pg_am am ON am.oid = ao.amopmethod
WHERE ao.amopopr IN (SELECT objid FROM members WHERE classid = 'pg_operator'::regclass)
UNION ALL
SELECT format('amproc %s.%s (%s, %s) number %s: %s',
              am.amname, f.opfname, ap.amproclefttype::regtype, ap.amprocrighttype::regtype,
              ap.amprocnum, ap.amproc::regprocedure)
FROM pg_amproc ap JOIN pg_opfamily f ON f.oid = ap.amprocfamily JOIN pg_am am ON am.oid = f.opfmethod
WHERE ap.amproc IN (SELECT objid FROM members WHERE classid = 'pg_proc'::regclass)
UNION ALL
SELECT format('cast (%s AS %s): function=%s context=%s method=%s',
              c.castsource::regtype, c.casttarget::regtype, nullif(c.castfunc, 0)::regprocedure,
              c.castcontext, c.castmethod)
FROM members m JOIN pg_cast c ON m.classid = 'pg_cast'::regclass AND c.oid = m.objid
UNION ALL
SELECT format('access method %s: type=%s handler=%s comment=%s', a.amname, a.amtype,
              a.amhandler::regproc, coalesce(obj_description(a.oid, 'pg_am'), '-'))
FROM members m JOIN pg_am a ON m.classid = 'pg_am'::regclass AND a.oid = m.objid
UNION ALL
-- anything else the extension owns, by its description
SELECT 'object ' || pg_describe_object(m.classid, m.objid, 0)
FROM members m
WHERE m.classid NOT IN ('pg_proc'::regclass, 'pg_type'::regclass, 'pg_operator'::regclass,
                        'pg_opclass'::regclass, 'pg_opfamily'::regclass, 'pg_cast'::regclass,
                        'pg_am'::regclass)
$catalog$;
