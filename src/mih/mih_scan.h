/*
 * mih_scan.h
 *		A radius scan's state, shared by the scan's driver (mih_scan.c:
 *		start, runs and tables, the page loop) and the page visitors
 *		(mih_scan_visit.c: a run leaf, a pending page).
 */
#ifndef SIMHASH_MIH_SCAN_H
#define SIMHASH_MIH_SCAN_H

#include "mih_cache.h"

typedef enum MihScanPhase
{
	MIH_SCAN_START,
	MIH_SCAN_PENDING,
	MIH_SCAN_RUNS,
	MIH_SCAN_DONE
} MihScanPhase;

typedef struct MihScanOpaqueData
{
	/* the query: every ball must contain the fingerprint */
	bool		empty;			/* no row can match (NULL or negative radius) */
	bool		with_nulls;		/* no ball: every row, NULL fingerprints too */
	bool		recheck;		/* a && condition: the heap rechecks its radii */
	int			nballs;
	SimHash    *centers;		/* one per scan key, in scan->opaque's context */
	int		   *radii;
	/* the ball probed: the one with the smallest radius */
	SimHash		q;
	int			r;
	int			s[MIH_MAX_BLOCKS];	/* bits each table's block may differ by
									 * (mih_table_radii); -1: not probed */
	bool		fullscan;		/* too many probes: read table 0 whole */
	bool		memo;			/* one ball, probed: what came back empty may
								 * be remembered (mih_cache_run_empty) */
	bool		pend_lookup;	/* few probes: pending pages are searched
								 * by their summaries, runs screened */
	int64		run_found;		/* matches in the current run so far */
	uint64		screened;		/* runs (bit r) their screens rule out
								 * (mih_cache_screen.c) */
	uint64		screen_kept;	/* runs whose screens were asked and did not */

	/* the index as the scan saw it at its start */
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	int			nruns;
	BlockNumber runs[MIH_MAX_RUNS];
	uint32		run_serials[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];	/* the tables each run serves */
	BlockNumber pending_next;
	uint32		pending_next_serial;	/* what the next pending page must carry */

	/* probe values per table, ascending */
	uint64	   *probes[MIH_MAX_BLOCKS];
	int			nprobes[MIH_MAX_BLOCKS];
	/* q's bits outside each table's block, as compact leaves keep them */
	uint64		qrem[MIH_MAX_BLOCKS];
	MihEntry   *scratch;		/* a compact leaf decoded (full scans) */

	/* position */
	MihScanPhase phase;
	int			run;
	int			table;
	int			probe;
	BlockNumber leaf;			/* next leaf to read, or Invalid: descend */
	int			leaf_slot;		/* its place in the run's leaf directory, or -1 */
	/* the probe's entries from the run's position index (mih_cache_pos.c) */
	uint32		pos_left;		/* still to visit; 0: search the leaf */
	int			pos_off;		/* where they start in so->leaf */
	/* in a run with compact leaves: where the probe's entries start (a byte
	 * offset in so->leaf), or 0: search the leaf */
	int			cplace;
	int			cgroup;			/* its group in so->leaf's directory, or -1 */
	MihRunHeader hdr;			/* of the current run */
	MihRunSummary *sum;			/* what the backend knows of it (pinned), or
								 * NULL (mih_cache.c) */
	const uint64 *tprobes;		/* the current table's probes that its
								 * filter lets through (all without one) */
	int			ntprobes;
	uint64	   *fprobes;		/* room for filtered probes */
	int			fprobes_cap;

	/* matches of the current page */
	Buffer		curbuf;			/* pinned while its matches are returned
								 * (non-MVCC snapshots only) */
	int			nitems;			/* in items, at the end */
	int			curitem;

	/*
	 * What an index-only scan gets: a tuple whose key is NULL. The index
	 * returns no columns (amcanreturn is NULL), so the planner makes an
	 * index-only scan of it only for a query that needs no column, such as
	 * count(*) over a whole-index path, which PostgreSQL 18 can choose when
	 * sequential scans are disabled: the executor then needs a tuple, never
	 * its values.
	 */
	IndexTuple	empty_itup;

	/* ORDER BY fp <-> order_q: rows come from the nearest-neighbour search */
	bool		ordered;
	bool		order_null;		/* ORDER BY fp <-> NULL: every distance NULL */
	SimHash		order_q;
	MihKnn	   *knn;			/* begun at the first row */

	/*
	 * On a hot standby a scan whose pages the primary recycled starts again
	 * from the current metapage (mih_scan_restartable), at most
	 * simhash.standby_scan_restarts times. amgettuple must not return a row
	 * twice: the TIDs it returned are kept (at most work_mem of them; past
	 * that the scan cannot start again) and, after a restart, those sorted
	 * (the first nsorted) are not returned again.
	 */
	bool		standby;
	int			restarts;
	ItemPointerData *returned;
	int64		nreturned;
	int64		returned_cap;
	int64		nsorted;
	bool		returned_full;

	MemoryContext cxt;

	/*
	 * Last, and not zeroed at the start of a scan: 6 kB that every
	 * constraint check (two under ON CONFLICT) would otherwise clear.
	 */
	ItemPointerData items[MIH_LEAF_MAX_ENTRIES];
} MihScanOpaqueData;

typedef MihScanOpaqueData *MihScanOpaque;

/* mih_scan_visit.c: one page's matches into so->items; the page returned pinned */
extern Buffer mih_scan_visit_run_leaf(Relation index, MihScanOpaque so);
extern Buffer mih_scan_visit_pending(Relation index, MihScanOpaque so);

#endif							/* SIMHASH_MIH_SCAN_H */
