/*
 * mih_opclass.c
 *		amvalidate for the simhash index: check an operator class really is
 *		one this access method can use.
 */
#include "mih.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

/* Is typid the type of that name (in any schema)? */
static bool
type_is(Oid typid, const char *name)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tup))->typname), name) == 0;
	ReleaseSysCache(tup);
	return result;
}

/*
 * Check one operator of the family against the strategies the access method
 * knows (see mih_validate); reports what is wrong as INFO and returns false.
 * Sets *have_within or *have_near when it is a valid member of strategy 1 or
 * 3.
 */
static bool
validate_operator(Form_pg_amop oprform, Oid opcintype, const char *opfamilyname,
				  bool *have_within, bool *have_near)
{
	if (oprform->amopstrategy == MIH_STRATEGY_NEAR)
	{
		/* ball && ball, for EXCLUDE: boolean, both sides the indexed hamming_ball */
		if (oprform->amoppurpose != AMOP_SEARCH ||
			!check_amop_signature(oprform->amopopr, BOOLOID,
								  oprform->amoplefttype, oprform->amoprighttype) ||
			oprform->amoplefttype != opcintype || oprform->amoprighttype != opcintype ||
			!type_is(opcintype, "hamming_ball"))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash operator family \"%s\" contains operator %s with wrong signature for strategy %d",
							opfamilyname, format_operator(oprform->amopopr),
							MIH_STRATEGY_NEAR),
					 errdetail("Expected a boolean search operator (hamming_ball, hamming_ball) in a class for hamming_ball.")));
			return false;
		}
		*have_near = true;
		return true;
	}
	if (oprform->amopstrategy == MIH_STRATEGY_DISTANCE)
	{
		/*
		 * ORDER BY fp <-> q: an int4 distance, sorted by btree integer_ops.
		 * Its right input is the indexed type or a domain over it (since
		 * 0.4.0 simhash_order, which the planner support writes: rewrite.c).
		 */
		if (oprform->amoppurpose != AMOP_ORDER ||
			!check_amop_signature(oprform->amopopr, INT4OID,
								  oprform->amoplefttype, oprform->amoprighttype) ||
			oprform->amoplefttype != opcintype ||
			getBaseType(oprform->amoprighttype) != opcintype ||
			!OidIsValid(get_opfamily_member(oprform->amopsortfamily, INT4OID, INT4OID,
											BTLessStrategyNumber)))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash operator family \"%s\" contains operator %s with wrong signature for strategy %d",
							opfamilyname, format_operator(oprform->amopopr),
							MIH_STRATEGY_DISTANCE),
					 errdetail("Expected an ordering operator (%s, %s or a domain over it) returning integer, FOR ORDER BY a btree family of integers.",
							   format_type_be(opcintype), format_type_be(opcintype))));
			return false;
		}
		return true;
	}
	if (oprform->amopstrategy != MIH_STRATEGY_WITHIN)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator family \"%s\" contains operator %s with invalid strategy number %d",
						opfamilyname, format_operator(oprform->amopopr),
						oprform->amopstrategy)));
		return false;
	}
	if (oprform->amoppurpose != AMOP_SEARCH)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator family \"%s\" contains operator %s as an ordering operator with strategy %d, which only searches",
						opfamilyname, format_operator(oprform->amopopr),
						MIH_STRATEGY_WITHIN)));
		return false;
	}
	if (!check_amop_signature(oprform->amopopr, BOOLOID,
							  oprform->amoplefttype, oprform->amoprighttype) ||
		oprform->amoplefttype != opcintype ||
		!type_is(oprform->amoprighttype, "hamming_ball"))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator family \"%s\" contains operator %s with wrong signature",
						opfamilyname, format_operator(oprform->amopopr)),
				 errdetail("Expected a boolean operator (%s, hamming_ball).",
						   format_type_be(opcintype))));
		return false;
	}
	*have_within = true;
	return true;
}

/*
 * The members allowed, and no support functions: strategy 1, a boolean search
 * operator whose left input is the indexed type and whose right input is
 * hamming_ball (required); strategy 2, an ordering operator between two
 * values of the indexed type returning an integer distance, sorted by a
 * btree family of integers (optional: ORDER BY fp <-> q). A class for
 * hamming_ball (the exclusion constraint's) has strategy 3 instead, a boolean
 * operator between two hamming_balls (required).
 */
bool
mih_validate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	Oid			opcintype;
	char	   *opclassname;
	HeapTuple	familytup;
	Form_pg_opfamily familyform;
	char	   *opfamilyname;
	CatCList   *proclist,
			   *oprlist;
	bool		have_within = false;
	bool		have_near = false;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;
	opclassname = NameStr(classform->opcname);

	familytup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	if (!HeapTupleIsValid(familytup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	familyform = (Form_pg_opfamily) GETSTRUCT(familytup);
	opfamilyname = NameStr(familyform->opfname);

	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));
	for (int i = 0; i < proclist->n_members; i++)
	{
		Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(&proclist->members[i]->tuple);

		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator family \"%s\" contains support function %s, but the access method takes none",
						opfamilyname, format_procedure(procform->amproc))));
		result = false;
	}

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	for (int i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);

		if (!validate_operator(oprform, opcintype, opfamilyname, &have_within, &have_near))
			result = false;
	}
	if (type_is(opcintype, "hamming_ball"))
	{
		if (!have_near)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash operator class \"%s\" is missing operator 3 (hamming_ball && hamming_ball)",
							opclassname)));
			result = false;
		}
	}
	else if (!have_within)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator class \"%s\" is missing operator 1 (<@ hamming_ball)",
						opclassname)));
		result = false;
	}
	if (!type_is(opcintype, "simhash") && !type_is(opcintype, "hamming_ball"))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash operator class \"%s\" indexes type %s, but the access method only indexes simhash and hamming_ball",
						opclassname, format_type_be(opcintype))));
		result = false;
	}

	ReleaseCatCacheList(proclist);
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(familytup);
	ReleaseSysCache(classtup);
	return result;
}
