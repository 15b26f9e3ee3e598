/*
 * mih_handler.c
 *		The simhash index access method's handler: what the AM can do and
 *		which functions implement it.
 */
#include "mih.h"

#include "access/reloptions.h"
#include "commands/vacuum.h"

PG_FUNCTION_INFO_V1(mih_handler);
Datum
mih_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = MIH_NSTRATEGIES;
	amroutine->amsupport = 0;	/* the AM is specific to simhash: no support procs */
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;	/* ORDER BY fp <-> q: mih_knn.c */
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;	/* ORDER BY fp <-> q LIMIT k needs no WHERE:
										 * every row is indexed, NULLs too */
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = false;	/* NULL entries exist for ordered scans, not
										 * for fp IS NULL */
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = true;
	amroutine->amparallelvacuumoptions =
		VACUUM_OPTION_PARALLEL_BULKDEL | VACUUM_OPTION_PARALLEL_CLEANUP;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = mih_build;
	amroutine->ambuildempty = mih_buildempty;
	amroutine->aminsert = mih_insert;
	amroutine->ambulkdelete = mih_bulkdelete;
	amroutine->amvacuumcleanup = mih_vacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = mih_costestimate;
	amroutine->amoptions = mih_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = mih_buildphasename;
	amroutine->amvalidate = mih_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = mih_beginscan;
	amroutine->amrescan = mih_rescan;
	amroutine->amgettuple = mih_gettuple;
	amroutine->amgetbitmap = mih_getbitmap;
	amroutine->amendscan = mih_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
