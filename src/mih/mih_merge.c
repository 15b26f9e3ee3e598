/*
 * mih_merge.c
 *		When and what to merge: the pending list becomes a run, and runs of
 *		similar size are merged (an LSM tree, size-tiered), so N rows need
 *		O(log N) runs. Inserts merge small amounts inline; VACUUM merges
 *		whatever is worth rewriting.
 *
 * A merge writes its new run completely (mih_run.c) before one WAL-logged
 * metapage update swaps it in and retires what it replaced (mih_recycle.c).
 * Merges are serialised by a heavyweight lock on the metapage's block
 * number (the "merge lock"), which VACUUM's bulk delete also takes; inserts
 * and scans go on meanwhile.
 */
#include "mih.h"

#include "miscadmin.h"
#include "storage/lmgr.h"

/*
 * The policy, each threshold with its reason:
 *
 * - A run joins a merge when it holds at most MIH_TIER_RATIO times what the
 *   merge already takes (the pending entries and the smaller runs). Runs
 *   then grow geometrically, and each entry is rewritten O(log N) times.
 * - When the run list is within MIH_RUNS_HEADROOM of full, the smallest
 *   runs are merged whatever their sizes, so the list never overflows.
 * - An insert merges inline only while the merge stays below
 *   MIH_MAX_INLINE_MERGE entries (mih.h): a larger one is left to VACUUM,
 *   so no single insert pays for rewriting the whole index.
 * - VACUUM merges every run when the runs other than the largest hold
 *   1/MIH_VACUUM_FOLD_DIVISOR of the largest (searches then probe one run
 *   instead of many), and any run of which 1/MIH_VACUUM_DEAD_DIVISOR is
 *   dead entries (rewriting drops them).
 * - The pending entries one merge reads are bounded by maintenance_work_mem;
 *   the rest of the pending list waits for the next merge.
 */
#define MIH_TIER_RATIO			2
#define MIH_RUNS_HEADROOM		2
#define MIH_VACUUM_FOLD_DIVISOR 20
#define MIH_VACUUM_DEAD_DIVISOR 10

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
	/* the runs merged */
	BlockNumber runs[MIH_MAX_RUNS];
	int			nruns;
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
	Page		metapage;
	Page		tailpage;
	Page		newpage;
	uint32		serial;

	plan->stop = InvalidBlockNumber;
	plan->stop_serial = 0;
	if (meta->pending_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		if (MihPageGetNItems(BufferGetPage(tailbuf), sizeof(MihEntry)) == 0)
		{
			plan->stop_serial = MihPageGetOpaque(BufferGetPage(tailbuf))->serial;
			plan->stop = meta->pending_tail;
			UnlockReleaseBuffer(tailbuf);
		}
		else
		{
			newbuf = mih_new_buffer(index);
			state = GenericXLogStart(index);
			metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
			tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
			newpage = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
			serial = (uint32) MihPageGetMeta(metapage)->next_serial++;
			mih_init_page(newpage, MIH_PAGE_PENDING, 0, 0);
			MihPageGetOpaque(newpage)->serial = serial;
			MihPageGetOpaque(tailpage)->next = BufferGetBlockNumber(newbuf);
			MihPageGetOpaque(tailpage)->next_serial = serial;
			MihPageGetMeta(metapage)->pending_tail = BufferGetBlockNumber(newbuf);
			MihPageGetMeta(metapage)->pending_pages++;
			GenericXLogFinish(state);
			UnlockReleaseBuffer(tailbuf);
			UnlockReleaseBuffer(newbuf);
			plan->stop_serial = serial;
			plan->stop = BufferGetBlockNumber(newbuf);
		}
	}
	memcpy(&plan->snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(plan->snap));
}

/* The policy: which runs this merge takes (see the top of the file). */
static void
choose_runs(Relation index, MergePlan *plan, bool from_vacuum)
{
	const MihMetaPageData *snap = &plan->snap;
	bool		chosen[MIH_MAX_RUNS];
	int64		total = plan->npending_live;

	memset(chosen, 0, sizeof(chosen));
	/* the smallest first (the list is sorted largest first), while similar */
	for (int r = snap->nruns - 1; r >= 0; r--)
	{
		int64		size = snap->run_entries[r];
		int			left = r + 1;	/* runs not chosen if this one is not */

		if (left < MIH_MAX_RUNS - MIH_RUNS_HEADROOM)
		{
			if (!from_vacuum && total + size > MIH_MAX_INLINE_MERGE)
				break;
			if (size > MIH_TIER_RATIO * total)
				break;
		}
		chosen[r] = true;
		total += size;
	}
	if (from_vacuum && snap->nruns > 0)
	{
		int64		small = plan->npending_live;
		bool		all;

		for (int r = 1; r < snap->nruns; r++)
			small += snap->run_entries[r];
		all = small * MIH_VACUUM_FOLD_DIVISOR >= snap->run_entries[0];
		for (int r = 0; r < snap->nruns; r++)
		{
			Buffer		buf = ReadBuffer(index, snap->runs[r]);
			MihRunHeader *hdr;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			hdr = MihPageGetRunHeader(BufferGetPage(buf));
			if (all || hdr->ndead * MIH_VACUUM_DEAD_DIVISOR >= hdr->nentries)
				chosen[r] = true;
			UnlockReleaseBuffer(buf);
		}
	}
	plan->nruns = 0;
	for (int r = 0; r < snap->nruns; r++)
		if (chosen[r])
			plan->runs[plan->nruns++] = snap->runs[r];
}

/* Is the plan worth a rewrite? A single run merged with nothing is not, except
 * from VACUUM (which chose it for its dead entries). */
static bool
worth_merging(const MergePlan *plan, bool from_vacuum)
{
	if (plan->npending_pages > 0 || plan->nruns > 1)
		return true;
	return plan->nruns == 1 && from_vacuum;
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

/*
 * Swap the new run in, in one metapage record: the run list without the
 * merged runs and with the new one (kept sorted by size, largest first),
 * the pending head past the merged pages, and what was replaced retired.
 */
static void
swap_in(Relation index, Buffer metabuf, const MergePlan *plan, BlockNumber newrun,
		int64 newentries, uint64 serial)
{
	GenericXLogState *state;
	MihMetaPageData *meta;
	BlockNumber runs[MIH_MAX_RUNS];
	int64		sizes[MIH_MAX_RUNS];
	uint32		serials[MIH_MAX_RUNS];
	int			n = 0;
	bool		placed = (newrun == InvalidBlockNumber);

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	meta = MihPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	for (int r = 0; r < meta->nruns; r++)
	{
		bool		merged = false;

		for (int k = 0; k < plan->nruns; k++)
			if (meta->runs[r] == plan->runs[k])
				merged = true;
		if (merged)
			continue;
		if (!placed && newentries >= meta->run_entries[r])
		{
			runs[n] = newrun;
			serials[n] = (uint32) serial;
			sizes[n++] = newentries;
			placed = true;
		}
		runs[n] = meta->runs[r];
		serials[n] = meta->run_serials[r];
		sizes[n++] = meta->run_entries[r];
	}
	if (!placed)
	{
		runs[n] = newrun;
		serials[n] = (uint32) serial;
		sizes[n++] = newentries;
	}
	memcpy(meta->runs, runs, n * sizeof(BlockNumber));
	memcpy(meta->run_entries, sizes, n * sizeof(int64));
	memcpy(meta->run_serials, serials, n * sizeof(uint32));
	meta->nruns = n;

	for (int k = 0; k < plan->nruns; k++)
		mih_retired_add(meta, plan->runs[k], InvalidBlockNumber, true);
	if (plan->npending_pages > 0)
	{
		mih_retired_add(meta, plan->snap.pending_head, plan->stop, false);
		meta->pending_head = plan->stop;
		meta->pending_head_serial = plan->stop_serial;
		meta->pending_entries -= plan->npending_all;
		meta->pending_pages -= plan->npending_pages;
	}
	GenericXLogFinish(state);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
}

/*
 * Turn the sealed pending pages into a run, merged with the runs the policy
 * chooses. Returns false when the merge lock was busy and wait is false
 * (an insert then leaves the merge to a later insert or VACUUM). VACUUM
 * passes its buffer strategy, which also paces the merge by its cost limit.
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
	seal_pending(index, metabuf, &plan);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	read_pending(index, &plan, budget);
	choose_runs(index, &plan, from_vacuum);
	if (worth_merging(&plan, from_vacuum))
	{
		uint64		serial;
		BlockNumber newrun;
		int64		newentries = 0;

		mih_retired_reserve(index, plan.nruns + 1);
		serial = reserve_serial(index, metabuf);
		newrun = mih_merge_runs(index, plan.snap.nblocks, plan.snap.masks, plan.runs,
								plan.nruns, plan.pending, plan.npending_live, serial,
								true, &newentries, vacuum_strategy);
		swap_in(index, metabuf, &plan, newrun, newentries, serial);
	}
	pfree(plan.pending);
	ReleaseBuffer(metabuf);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	return true;
}
