/*
 * mih_merge_policy.c
 *		When and what to merge. Two kinds of merge:
 *
 * - A flush: the pending list becomes a run serving every table, merged
 *   with runs of similar size that also serve every table (an LSM tree,
 *   size-tiered), so N inserted rows need O(log N) runs. Inserts flush
 *   inline, in small amounts; VACUUM flushes too.
 * - A table fold, by VACUUM only: table j of every run that serves it is
 *   merged into a new run that serves table j alone, and those runs stop
 *   serving j (the metapage's run_gone). A run that serves no table any
 *   more is retired whole.
 *
 * Why fold one table at a time: a merge writes its new run beside the runs
 * it replaces, which stay readable until no snapshot can reach them
 * (mih_recycle.c). Rewriting every table at once (as this index did until
 * 0.2.0) made the file twice the size of its entries after every VACUUM,
 * since nothing could reuse the old pages while they were written. A fold
 * rewrites 1/m of the index; VACUUM folds the next table only once the pages
 * still waiting to be recycled and the next fold fit in a third of the
 * index, so the file stays within about 1 + 1/m + 1/3 of what its entries
 * need, whatever scans are open. Between folds, every table is still served
 * by runs that hold each entry once, so searches stay exact throughout.
 *
 * A merge writes its new run completely (mih_run_write.c) before one WAL-logged
 * metapage update swaps it in and retires what it replaced (mih_recycle.c).
 * Merges are serialised by a heavyweight lock on the metapage's block
 * number (the "merge lock"), which VACUUM's bulk delete also takes; inserts
 * and scans go on meanwhile.
 */
#include "mih.h"
#include "test_fault.h"

#include "miscadmin.h"
#include "storage/lmgr.h"

/*
 * The policy, each threshold with its reason:
 *
 * - A flush takes a run (serving every table) when it holds at most
 *   MIH_TIER_RATIO times what the merge already takes (the pending entries
 *   and the smaller runs). Runs then grow geometrically, and each entry is
 *   rewritten O(log N) times.
 * - A flush stays below 1/MIH_FLUSH_SHARE of the index's entries (but may
 *   always take MIH_FLUSH_MIN), and below MIH_MAX_INLINE_MERGE (mih_format.h), from
 *   an insert and from VACUUM alike: no single insert pays for rewriting the
 *   whole index, and no flush needs room for a large share of it beside the
 *   rest. Rewriting large runs is left to table folds, whose space is bounded.
 *   As the index grows the share grows, so runs that stopped flushing become
 *   small enough to flush together again: the run count stays bounded.
 * - When the run list is within MIH_RUNS_HEADROOM of full, a flush takes the
 *   smallest runs whatever their sizes; if runs serving only some tables
 *   still crowd it, it takes every run (each table of the new run is then
 *   merged from all the runs serving it), so the list never overflows.
 * - VACUUM folds table j when the runs serving j other than the largest hold
 *   1/MIH_VACUUM_FOLD_DIVISOR of the largest (searches then probe one run
 *   per table instead of many), or when 1/MIH_VACUUM_DEAD_DIVISOR of a run
 *   serving j is dead entries (rewriting drops them). The table served by
 *   the most runs goes first.
 * - VACUUM folds a further table only while the entries waiting in retired
 *   runs plus the fold's fit in 1/MIH_FOLD_SPACE_DIVISOR of the index's
 *   entries (or nothing waits: then a fold always goes ahead, so folding
 *   never stops for good).
 * - The pending entries one merge reads are bounded by maintenance_work_mem;
 *   the rest of the pending list waits for the next merge.
 */
#define MIH_TIER_RATIO			2
#define MIH_FLUSH_SHARE			8
#define MIH_FLUSH_MIN			16384
#define MIH_RUNS_HEADROOM		2
#define MIH_VACUUM_FOLD_DIVISOR 20
#define MIH_VACUUM_DEAD_DIVISOR 10
#define MIH_FOLD_SPACE_DIVISOR	3

typedef struct MergePlan
{
	MihMetaPageData snap;		/* the metapage once the pending list is sealed */
	/* the pending pages merged: snap.pending_head up to stop */
	BlockNumber stop;
	uint32		stop_serial;
	MihEntry   *pending;		/* their live entries */
	int64		npending_live;
	int64		npending_all;
	uint32		npending_pages;
	/* the runs merged, and the tables each serves */
	BlockNumber runs[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];
	int			nruns;
	/* the tables the new run serves */
	uint32		tables;
} MergePlan;

/*
 * Read the live entries of the pending pages from head up to stop, or up to
 * the page where the budget of entries runs out; *stop and *stop_serial then
 * name that page.
 */
static void
read_pending(Relation index, MergePlan *plan, int64 budget)
{
	int64		cap = 1024;
	BlockNumber blk = plan->snap.pending_head;
	uint32		serial = plan->snap.pending_head_serial;

	plan->pending = palloc(cap * sizeof(MihEntry));
	plan->npending_live = plan->npending_all = 0;
	plan->npending_pages = 0;
	while (blk != InvalidBlockNumber && blk != plan->stop)
	{
		Buffer		buf;
		Page		page;
		MihEntry   *entries;
		int			n;

		if (plan->npending_pages > 0 && plan->npending_live + MIH_ENTRIES_PER_PAGE > budget)
		{
			/* enough for one merge: this page starts the next one */
			plan->stop = blk;
			plan->stop_serial = serial;
			break;
		}
		buf = ReadBuffer(index, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_page(index, page, blk, MIH_PAGE_PENDING, serial, -1);
		entries = MihPageGetEntries(page);
		n = MihPageGetNItems(page, sizeof(MihEntry));
		if (plan->npending_live + n > cap)
		{
			cap = Max(cap * 2, plan->npending_live + n);
			plan->pending = repalloc_huge(plan->pending, cap * sizeof(MihEntry));
		}
		for (int i = 0; i < n; i++)
			if (!mih_entry_dead(&entries[i]))
				plan->pending[plan->npending_live++] = entries[i];
		plan->npending_all += n;
		plan->npending_pages++;
		blk = MihPageGetOpaque(page)->next;
		serial = MihPageGetOpaque(page)->next_serial;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Seal the pending list for a merge: if the tail page holds entries, chain a
 * new empty tail to it so that every entry present now is on a sealed page
 * (inserts only ever write the tail). Sets plan->stop to the first unsealed
 * page, and plan->snap to the metapage as it is then. The metapage buffer
 * is exclusively locked by the caller.
 */
static void
seal_pending(Relation index, Buffer metabuf, MergePlan *plan)
{
	MihMetaPageData *meta = MihPageGetMeta(BufferGetPage(metabuf));
	Buffer		tailbuf;
	Buffer		newbuf;
	GenericXLogState *state;
	Page		tailpage;
	uint32		serial;

	plan->stop = InvalidBlockNumber;
	plan->stop_serial = 0;
	if (meta->pending_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		mih_check_pending_tail(index, BufferGetPage(tailbuf), meta->pending_tail);
		if (MihPageGetNItems(BufferGetPage(tailbuf), sizeof(MihEntry)) == 0)
		{
			plan->stop_serial = MihPageGetOpaque(BufferGetPage(tailbuf))->serial;
			plan->stop = meta->pending_tail;
			UnlockReleaseBuffer(tailbuf);
		}
		else
		{
			MihMetaPageData *wmeta;

			newbuf = mih_new_buffer(index);
			state = GenericXLogStart(index);
			wmeta = MihPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
			tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
			serial = (uint32) wmeta->next_serial++;
			mih_chain_append(state, newbuf, MIH_PAGE_PENDING, serial, tailpage,
							 &wmeta->pending_head, &wmeta->pending_head_serial,
							 &wmeta->pending_tail, &wmeta->pending_pages);
			GenericXLogFinish(state);
			/* the new page's number while the buffer is still pinned */
			plan->stop_serial = serial;
			plan->stop = BufferGetBlockNumber(newbuf);
			UnlockReleaseBuffer(tailbuf);
			UnlockReleaseBuffer(newbuf);
		}
	}
	memcpy(&plan->snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(plan->snap));
}

/* Take run r of the metapage snapshot into the plan. */
static void
plan_add_run(MergePlan *plan, int r)
{
	plan->runs[plan->nruns] = plan->snap.runs[r];
	plan->run_tables[plan->nruns] = mih_run_tables(&plan->snap, r);
	plan->nruns++;
}

/* The flush policy: which runs join the pending entries (see the top of the file). */
static void
choose_flush_runs(MergePlan *plan)
{
	const MihMetaPageData *snap = &plan->snap;
	uint32		all = MIH_ALL_TABLES(snap->nblocks);
	bool		chosen[MIH_MAX_RUNS];
	int64		total = plan->npending_live;
	int			left = snap->nruns; /* runs kept, the new one not counted */
	int64		entries = snap->pending_entries;
	int64		cap;

	/* the index's entries: the runs serving table 0 hold each once */
	for (int r = 0; r < snap->nruns; r++)
		if (mih_run_tables(snap, r) & 1)
			entries += snap->run_entries[r];
	cap = Min(Max(entries / MIH_FLUSH_SHARE, MIH_FLUSH_MIN), MIH_MAX_INLINE_MERGE);

	memset(chosen, 0, sizeof(chosen));
	/* the smallest first (the list is sorted largest first), while similar */
	for (int r = snap->nruns - 1; r >= 0; r--)
	{
		int64		size = snap->run_entries[r];

		if (mih_run_tables(snap, r) != all)
			continue;			/* pending entries need every table */
		if (left + 1 <= MIH_MAX_RUNS - MIH_RUNS_HEADROOM)
		{
			if (total + size > cap)
				break;
			if (size > MIH_TIER_RATIO * total)
				break;
		}
		chosen[r] = true;
		total += size;
		left--;
	}
	plan->nruns = 0;
	plan->tables = all;
	for (int r = 0; r < snap->nruns; r++)
		if (chosen[r] || left + 1 > MIH_MAX_RUNS - MIH_RUNS_HEADROOM)
			plan_add_run(plan, r);
}

/* Reserve the new run's serial (its pages carry it). */
static uint64
reserve_serial(Relation index, Buffer metabuf)
{
	GenericXLogState *state;
	uint64		serial;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	serial = MihPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0))->next_serial++;
	GenericXLogFinish(state);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	return serial;
}

/* Does the plan merge (retire tables of) the run whose header is head? */
static bool
merge_plan_has_run(const MergePlan *plan, BlockNumber head)
{
	for (int k = 0; k < plan->nruns; k++)
		if (plan->runs[k] == head)
			return true;
	return false;
}

/*
 * Swap the new run in, in one metapage record: the run list with the new
 * run (kept sorted by size, largest first), the merged runs no longer
 * serving the new run's tables (and dropped once they serve none), the
 * pending head past the merged pages, and what was replaced retired.
 */
static void
swap_in(Relation index, Buffer metabuf, const MergePlan *plan, BlockNumber newrun,
		int64 newentries, uint64 serial)
{
	GenericXLogState *state;
	Page		metapage;
	MihMetaPageData *meta;
	BlockNumber runs[MIH_MAX_RUNS];
	int64		sizes[MIH_MAX_RUNS];
	uint32		serials[MIH_MAX_RUNS];
	uint16		gone[MIH_MAX_RUNS];
	int			n = 0;
	bool		placed = (newrun == InvalidBlockNumber);
	uint32		all;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	mih_meta_cover(metapage);
	meta = MihPageGetMeta(metapage);
	all = MIH_ALL_TABLES(meta->nblocks);
	for (int r = 0; r < meta->nruns; r++)
	{
		uint32		served = mih_run_tables(meta, r);
		uint32		left = served;

		for (int k = 0; k < plan->nruns; k++)
			if (meta->runs[r] == plan->runs[k])
			{
				uint32		retire = served & plan->tables;

				left = served & ~plan->tables;
				if (simhash_test_fault == SH_FAULT_RETIRED_WRONG_HEAD && left == 0 &&
					!merge_plan_has_run(plan, meta->runs[0]))
				{
					/* as if the block had been freed and reused by a run that stays */
					mih_retired_add(meta, meta->runs[0], meta->run_serials[r],
									MIH_RETIRED_PART | MIH_RETIRED_HEADER | retire, true);
					continue;
				}
				mih_retired_add(meta, meta->runs[r], meta->run_serials[r],
								MIH_RETIRED_PART | (left == 0 ? MIH_RETIRED_HEADER : 0) | retire,
								true);
			}
		if (left == 0)
			continue;
		if (!placed && newentries >= meta->run_entries[r])
		{
			runs[n] = newrun;
			serials[n] = (uint32) serial;
			sizes[n] = newentries;
			gone[n++] = (uint16) (all & ~plan->tables);
			placed = true;
		}
		runs[n] = meta->runs[r];
		serials[n] = meta->run_serials[r];
		sizes[n] = meta->run_entries[r];
		gone[n++] = (uint16) (all & ~left);
	}
	if (!placed)
	{
		runs[n] = newrun;
		serials[n] = (uint32) serial;
		sizes[n] = newentries;
		gone[n++] = (uint16) (all & ~plan->tables);
	}
	memcpy(meta->runs, runs, n * sizeof(BlockNumber));
	memcpy(meta->run_entries, sizes, n * sizeof(int64));
	memcpy(meta->run_serials, serials, n * sizeof(uint32));
	memcpy(meta->run_gone, gone, n * sizeof(uint16));
	meta->nruns = n;

	if (plan->npending_pages > 0)
	{
		mih_retired_add(meta, plan->snap.pending_head, plan->snap.pending_head_serial,
						plan->stop, false);
		meta->pending_head = plan->stop;
		meta->pending_head_serial = plan->stop_serial;
		meta->pending_entries -= plan->npending_all;
		meta->pending_pages -= plan->npending_pages;
	}
	GenericXLogFinish(state);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
}

/* Write the plan's new run and swap it in. Under the merge lock. */
static void
run_plan(Relation index, Buffer metabuf, MergePlan *plan,
		 BufferAccessStrategy vacuum_strategy)
{
	uint64		serial;
	BlockNumber newrun;
	int64		newentries = 0;

	mih_retired_reserve(index, plan->nruns + 1);
	serial = reserve_serial(index, metabuf);
	newrun = mih_merge_runs(index, plan->snap.nblocks, plan->snap.masks, plan->runs,
							plan->run_tables, plan->nruns, plan->pending,
							plan->npending_live, plan->tables, serial, true,
							plan->snap.version >= MIH_VERSION_COMPACT, &newentries, vacuum_strategy);
	swap_in(index, metabuf, plan, newrun, newentries, serial);
}

/* Entries times tables: the unit the space rule of table folds counts in. */
typedef struct RetiredSize
{
	Relation	index;
	int64		entry_tables;
} RetiredSize;

static void
retired_size_visitor(const MihRetiredItem *r, BlockNumber chain_page, void *arg)
{
	RetiredSize *rs = (RetiredSize *) arg;
	MihRunHeader hdr;
	uint32		tables;
	bool		header;

	if (r == NULL || !r->what.is_run)
		return;					/* list pages, pending chains: small */
	mih_read_run_header(rs->index, r->what.head, r->serial, &hdr);
	tables = mih_retired_run_tables(&r->what, hdr.ntables, &header);
	rs->entry_tables += hdr.nentries * pg_popcount32(tables);
}

/*
 * The table VACUUM should fold next, or -1: of the tables not in done that
 * the policy says are worth folding, the one served by the most runs.
 * Fills plan with its runs.
 */
static int
choose_fold(Relation index, MergePlan *plan, uint32 done)
{
	const MihMetaPageData *snap = &plan->snap;
	int64		ndead[MIH_MAX_RUNS];
	int			best = -1;
	int			best_runs = 0;

	for (int r = 0; r < snap->nruns; r++)
	{
		MihRunHeader hdr;

		mih_read_run_header(index, snap->runs[r], snap->run_serials[r], &hdr);
		ndead[r] = hdr.ndead;
	}
	for (int j = 0; j < snap->nblocks; j++)
	{
		int			nruns = 0;
		int64		largest = 0;
		int64		rest = 0;
		bool		dead_heavy = false;

		if (done & (1 << j))
			continue;
		for (int r = 0; r < snap->nruns; r++)
		{
			int64		size = snap->run_entries[r];

			if (!(mih_run_tables(snap, r) & (1 << j)))
				continue;
			nruns++;
			if (size > largest)
			{
				rest += largest;
				largest = size;
			}
			else
				rest += size;
			if (ndead[r] * MIH_VACUUM_DEAD_DIVISOR >= Max(size, 1))
				dead_heavy = true;
		}
		if (!dead_heavy && !(nruns >= 2 && rest * MIH_VACUUM_FOLD_DIVISOR >= largest))
			continue;
		if (best < 0 || nruns > best_runs)
		{
			best = j;
			best_runs = nruns;
		}
	}
	plan->nruns = 0;
	if (best >= 0)
	{
		plan->tables = 1 << best;
		for (int r = 0; r < snap->nruns; r++)
			if (mih_run_tables(snap, r) & (1 << best))
				plan_add_run(plan, r);
	}
	return best;
}

/*
 * Do the pages of the runs waiting to be recycled and of the planned fold
 * fit in the space rule (see the top of the file)?
 */
static bool
fold_fits(Relation index, const MergePlan *plan)
{
	const MihMetaPageData *snap = &plan->snap;
	RetiredSize rs;
	int64		live = 0;
	int64		fold = 0;

	rs.index = index;
	rs.entry_tables = 0;
	mih_retired_foreach(index, snap, retired_size_visitor, &rs);
	if (rs.entry_tables == 0)
		return true;
	for (int r = 0; r < snap->nruns; r++)
		live += snap->run_entries[r] * pg_popcount32(mih_run_tables(snap, r));
	for (int k = 0; k < plan->nruns; k++)
		for (int r = 0; r < snap->nruns; r++)
			if (snap->runs[r] == plan->runs[k])
				fold += snap->run_entries[r];
	return (rs.entry_tables + fold) * MIH_FOLD_SPACE_DIVISOR <= live;
}

/*
 * VACUUM's table folds: fold tables one by one while the policy finds one
 * worth it and the space rule lets it, recycling in between what no
 * snapshot can reach any more. Under the merge lock.
 */
static void
fold_tables(Relation index, Buffer metabuf, BufferAccessStrategy vacuum_strategy)
{
	uint32		done = 0;

	for (;;)
	{
		MergePlan	plan;
		int			table;

		mih_recycle_retired(index);
		memset(&plan, 0, sizeof(plan));
		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
		memcpy(&plan.snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(plan.snap));
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		table = choose_fold(index, &plan, done);
		if (table < 0 || !fold_fits(index, &plan))
			break;
		run_plan(index, metabuf, &plan, vacuum_strategy);
		done |= 1 << table;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Turn the sealed pending pages into a run, merged with the runs the policy
 * chooses; from VACUUM, fold tables after. Returns false when the merge
 * lock was busy and wait is false (an insert then leaves the merge to a
 * later insert or VACUUM). VACUUM passes its buffer strategy, which also
 * paces the merge by its cost limit.
 */
bool
mih_flush_and_merge(Relation index, bool from_vacuum, bool wait,
					BufferAccessStrategy vacuum_strategy)
{
	Buffer		metabuf;
	MergePlan	plan;
	int64		budget = Max((int64) maintenance_work_mem * 1024 / (int64) sizeof(MihEntry),
							 MIH_ENTRIES_PER_PAGE);

	if (wait)
		LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	else if (!ConditionalLockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock))
		return false;

	/* free what earlier merges retired and no snapshot can reach any more */
	mih_recycle_retired(index);

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	memset(&plan, 0, sizeof(plan));
	seal_pending(index, metabuf, &plan);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	read_pending(index, &plan, budget);
	choose_flush_runs(&plan);
	/* worth a rewrite: pending entries, or runs to combine */
	if (plan.npending_pages > 0 || plan.nruns > 1)
		run_plan(index, metabuf, &plan, vacuum_strategy);
	pfree(plan.pending);
	plan.pending = NULL;

	if (from_vacuum)
		fold_tables(index, metabuf, vacuum_strategy);
	ReleaseBuffer(metabuf);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	return true;
}
