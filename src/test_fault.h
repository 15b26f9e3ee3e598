/*
 * test_fault.h
 *		simhash.test_fault (module.c): a failure injected, or a backend
 *		stopped, at a chosen step, for the crash, leak and race tests. The
 *		setting is superuser only; SH_FAULT_NONE in production.
 */
#ifndef SIMHASH_TEST_FAULT_H
#define SIMHASH_TEST_FAULT_H

#define SH_FAULT_NONE					0
#define SH_FAULT_RECYCLE_BEFORE_FREE	1
#define SH_FAULT_MERGE_MIDWAY			2
#define SH_FAULT_OLD_METAPAGE			3
#define SH_FAULT_FSM_TWICE				4
#define SH_FAULT_VERIFY_FORGET			5
#define SH_FAULT_VACUUM_PAUSE			6
#define SH_FAULT_MERGE_PAUSE			7
#define SH_FAULT_KNN_KEEP_SMALL			8
#define SH_FAULT_PLACES_MIDWAY			9
#define SH_FAULT_SCREEN_MIDWAY			10
#define SH_FAULT_MERGE_SKEW_FIRST		11
#define SH_FAULT_MERGE_SKEW_LATER		12
#define SH_FAULT_V2_METAPAGE			13	/* build as 0.3.0 did: on-disk version 2 */
#define SH_FAULT_RETIRED_WRONG_HEAD		14	/* a retired run's entry names a run that stays */
#define SH_FAULT_INSERT_TWICE			15	/* an insert appends its entry twice */
extern void sh_test_pause(int fault);
extern int	simhash_test_fault;

#endif							/* SIMHASH_TEST_FAULT_H */
