/*
 * module.c
 *		Loading the library: the configuration parameters (GUCs) and the CPU check of sh_popcount64.
 */
#include "simhash.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/guc.h"

#include "mih/mih.h"
#include "mih/mih_cache.h"
#include "test_fault.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* see sh_popcount64 */
bool		sh_cpu_has_popcnt = false;
#endif

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
	{"fsm_twice", SH_FAULT_FSM_TWICE, false},
	{"verify_forget", SH_FAULT_VERIFY_FORGET, false},
	{"vacuum_pause", SH_FAULT_VACUUM_PAUSE, false},
	{"merge_pause", SH_FAULT_MERGE_PAUSE, false},
	{"knn_keep_small", SH_FAULT_KNN_KEEP_SMALL, false},
	{"places_midway", SH_FAULT_PLACES_MIDWAY, false},
	{"screen_midway", SH_FAULT_SCREEN_MIDWAY, false},
	{"merge_skew_first", SH_FAULT_MERGE_SKEW_FIRST, false},
	{"merge_skew_later", SH_FAULT_MERGE_SKEW_LATER, false},
	{"v2_metapage", SH_FAULT_V2_METAPAGE, false},
	{"retired_wrong_head", SH_FAULT_RETIRED_WRONG_HEAD, false},
	{"insert_twice", SH_FAULT_INSERT_TWICE, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/*
 * Stop this backend at a point a test chose, until the test lets it go: wait
 * for the advisory lock that pg_advisory_lock((x'53484654' << 32) + fault)
 * takes, and release it at once. A test holds that lock, starts the backend,
 * sees it wait in pg_locks, makes another backend act in the window, and
 * then releases the lock. This is how tests interleave two backends at an
 * exact step on PostgreSQL 15, which has no injection points.
 */
void
sh_test_pause(int fault)
{
	LOCKTAG		tag;

	/* the tag pg_advisory_lock(bigint) uses: field4 = 1 */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0x53484654, (uint32) fault, 1);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	LockRelease(&tag, ExclusiveLock, false);
}

void
_PG_init(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	{
		unsigned int eax,
					ebx,
					ecx,
					edx;

		if (__get_cpuid(1, &eax, &ebx, &ecx, &edx))
			sh_cpu_has_popcnt = (ecx & bit_POPCNT) != 0;
	}
#endif
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
							 "index gets a metapage as extension 0.1.0 wrote it. "
							 "fsm_twice: a run writer offers the first block it takes "
							 "to the free space map again, as the map may hand one "
							 "block to two backends, then waits on the advisory lock "
							 "x'5348465400000004' (see sh_test_pause). "
							 "verify_forget: simhash_index_verify forgets the "
							 "first live entry it reads, as if the index lacked it. "
							 "knn_keep_small: nearest-neighbour searches keep no entry "
							 "beyond distance 0 at first and probe again for each "
							 "further bit. insert_twice: an insert appends its entry "
							 "to the pending list twice.",
							 &simhash_test_fault,
							 SH_FAULT_NONE, test_fault_options,
							 PGC_SUSET, GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("simhash.index_cache_size",
							"Memory each backend may keep of simhash indexes' runs between scans.",
							"Run headers, leaf directories and, for small runs, filters of "
							"the block values they hold, so radius searches (and the "
							"near-duplicate constraint's checks) read fewer pages. "
							"0 turns the cache off.",
							&mih_cache_size_kb,
							8192, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("simhash.standby_scan_restarts",
							"Times a simhash index scan on a hot standby starts again when the primary recycled its pages.",
							"Without hot_standby_feedback the primary may recycle pages "
							"that a standby query still reads; the scan then starts "
							"again from the index's current state, without returning "
							"a row twice. Past this many times, or when an index scan "
							"has returned more rows than work_mem can remember, the "
							"query is cancelled. 0 cancels it at once.",
							&mih_standby_scan_restarts,
							3, 0, 1000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	mih_cache_init();
	MarkGUCPrefixReserved("simhash");
}
