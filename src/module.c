/*
 * module.c
 *		Loading the library: the configuration parameters (GUCs).
 */
#include "simhash.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "mih/mih.h"

PG_MODULE_MAGIC;

/* simhash.progress_interval: milliseconds between progress NOTICEs, 0 = off */
int			simhash_progress_interval = 10000;

/* simhash.test_fault: a failure to inject, for tests only */
int			simhash_test_fault = SH_FAULT_NONE;

static const struct config_enum_entry test_fault_options[] = {
	{"none", SH_FAULT_NONE, false},
	{"recycle_before_free", SH_FAULT_RECYCLE_BEFORE_FREE, false},
	{"merge_midway", SH_FAULT_MERGE_MIDWAY, false},
	{"old_metapage", SH_FAULT_OLD_METAPAGE, false},
	{NULL, 0, false}
};

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("simhash.progress_interval",
							"Interval between progress reports of long grouping runs.",
							"simhash_component() and simhash_leader() send a NOTICE "
							"with their progress at this interval; 0 turns the reports off.",
							&simhash_progress_interval,
							10000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * PostgreSQL 15 has no injection points: tests that must stop the index
	 * between two steps that a crash or an error can separate set this.
	 */
	DefineCustomEnumVariable("simhash.test_fault",
							 "Injects a failure into the simhash index, for tests.",
							 "recycle_before_free: recycling raises an error after it "
							 "removed entries from the retired list and before it frees "
							 "their pages. merge_midway: a merge raises an error after "
							 "writing four pages of its new run. old_metapage: a new "
							 "index gets a metapage as extension 0.1.0 wrote it.",
							 &simhash_test_fault,
							 SH_FAULT_NONE, test_fault_options,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);
	MarkGUCPrefixReserved("simhash");
}
