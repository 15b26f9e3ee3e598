/*
 * mih_vacuum.c
 *		VACUUM for the simhash index.
 *
 * Bulk delete marks dead entries in place (their TID is invalidated, one
 * GenericXLog record per page changed) in the pending list and in every
 * table of every run, asking VACUUM's callback once per TID. Each page is
 * marked under a cleanup lock, so that no scan is still returning TIDs from
 * it (only scans under non-MVCC snapshots hold such a pin; the others copy
 * their matches out and hold none). Cleanup then merges: dead entries are
 * dropped when runs are rewritten, small runs are folded into large ones,
 * pages of replaced runs are recycled once no snapshot can reach them
 * (mih_recycle.c), and pages that nothing reaches (a merge or a recycling
 * cut short by an error or a crash) are reclaimed.
 */
#include "mih.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/* Mark the dead entries of one page; returns the number it had live before. */
static void
vacuum_page(Relation index, BlockNumber blk, IndexBulkDeleteCallback callback,
			void *callback_state, int64 *live, int64 *removed, BlockNumber *next,
			uint16 expect_type, BufferAccessStrategy strategy)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
	Page		page;
	MihEntry   *entries;
	int			n;
	int			ndead = 0;
	OffsetNumber dead[MIH_ENTRIES_PER_PAGE];

	LockBufferForCleanup(buf);
	page = BufferGetPage(buf);
	if (MihPageGetOpaque(page)->type != expect_type)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("simhash index \"%s\": block %u has page type %u, expected %u",
						RelationGetRelationName(index), blk,
						MihPageGetOpaque(page)->type, expect_type)));
	entries = MihPageGetEntries(page);
	n = MihPageGetNItems(page, sizeof(MihEntry));
	for (int i = 0; i < n; i++)
	{
		ItemPointerData tid;

		if (mih_entry_dead(&entries[i]))
			continue;
		tid = mih_entry_tid(&entries[i]);
		if (callback(&tid, callback_state))
			dead[ndead++] = i;
		else
			(*live)++;
	}
	if (ndead > 0)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		wpage = GenericXLogRegisterBuffer(state, buf, 0);
		MihEntry   *wentries = MihPageGetEntries(wpage);

		for (int i = 0; i < ndead; i++)
			mih_entry_set_dead(&wentries[dead[i]]);
		GenericXLogFinish(state);
		*removed += ndead;
	}
	*next = MihPageGetOpaque(page)->next;
	UnlockReleaseBuffer(buf);
}

/*
 * Set or clear a run's MIH_RUN_VACUUMING flag (adding to its dead count when
 * clearing); returns a copy of the header when hdr is given, and whether
 * the flag was already set when was_set is.
 */
static void
set_run_vacuuming(Relation index, BlockNumber runhead, bool on, int64 newly_dead,
				  MihRunHeader *hdr, bool *was_set)
{
	Buffer		buf = ReadBuffer(index, runhead);
	GenericXLogState *state;
	MihRunHeader *h;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	h = MihPageGetRunHeader(GenericXLogRegisterBuffer(state, buf, 0));
	if (was_set)
		*was_set = (h->flags & MIH_RUN_VACUUMING) != 0;
	if (on)
		h->flags |= MIH_RUN_VACUUMING;
	else
		h->flags &= ~MIH_RUN_VACUUMING;
	h->ndead += newly_dead;
	if (hdr)
		memcpy(hdr, h, sizeof(MihRunHeader));
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/*
 * The TIDs VACUUM's callback called dead in table 0. The runs serving table
 * 0 hold every entry of the runs once between them, and so do the runs
 * serving any other table: the other tables ask this set instead of the
 * callback (once per TID, not once per table), and are skipped entirely
 * when nothing died. The set is kept within maintenance_work_mem; past it,
 * the other tables ask the callback too (record_dead). Not valid for a run flagged MIH_RUN_VACUUMING, whose
 * dead marks may disagree with other tables' (a crashed bulk delete, or a
 * merge from such a run): its tables ask the callback themselves.
 */
typedef struct DeadTids
{
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
	HTAB	   *tids;			/* NULL once it outgrew its budget */
	MemoryContext cxt;			/* holds tids, and nothing else */
	Size		budget;			/* maintenance_work_mem, in bytes */
	int64		n;
} DeadTids;

/*
 * Ask the callback, and remember a dead TID for the other tables while the
 * set stays within maintenance_work_mem (the memory VACUUM gives an index).
 * Past that, the set is dropped and every table asks the callback itself:
 * slower, never larger.
 */
static bool
record_dead(ItemPointer tid, void *state)
{
	DeadTids   *d = (DeadTids *) state;

	if (!d->callback(tid, d->callback_state))
		return false;
	d->n++;
	if (d->tids)
	{
		hash_search(d->tids, tid, HASH_ENTER, NULL);
		if ((d->n & 1023) == 0 && MemoryContextMemAllocated(d->cxt, true) > d->budget)
		{
			elog(DEBUG1, "simhash bulk delete: %lld dead TIDs passed maintenance_work_mem (%zu bytes); the other tables ask VACUUM's callback",
				 (long long) d->n, d->budget);
			hash_destroy(d->tids);
			d->tids = NULL;
		}
	}
	return true;
}

static bool
known_dead(ItemPointer tid, void *state)
{
	DeadTids   *d = (DeadTids *) state;

	return hash_search(d->tids, tid, HASH_FIND, NULL) != NULL;
}

/* Mark the dead entries of table j of a run; returns how many. */
static int64
vacuum_table(Relation index, const MihRunHeader *hdr, int j, IndexBulkDeleteCallback cb,
			 void *cbstate, int64 *live, BufferAccessStrategy strategy)
{
	int64		removed = 0;

	for (BlockNumber blk = hdr->first_leaf[j]; blk != InvalidBlockNumber;)
	{
		vacuum_page(index, blk, cb, cbstate, live, &removed, &blk, MIH_PAGE_LEAF, strategy);
		sh_vacuum_delay_point();
	}
	return removed;
}

/*
 * Mark the dead entries of every table of every run; returns how many
 * entries died (counted once, in table 0). Every run is flagged first and
 * unflagged at the end, so a crash in between leaves each run asking the
 * callback for itself next time.
 */
static int64
vacuum_runs(Relation index, const MihMetaPageData *snap, IndexBulkDeleteCallback callback,
			void *callback_state, int64 *live, BufferAccessStrategy strategy)
{
	MihRunHeader hdrs[MIH_MAX_RUNS];
	bool		flagged[MIH_MAX_RUNS];
	int64		newly_dead[MIH_MAX_RUNS];
	int64		removed = 0;
	DeadTids	dead;
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(ItemPointerData);
	dead.callback = callback;
	dead.callback_state = callback_state;
	dead.cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash dead TIDs",
									 ALLOCSET_DEFAULT_SIZES);
	ctl.hcxt = dead.cxt;
	dead.budget = (Size) maintenance_work_mem * 1024;
	dead.tids = hash_create("simhash dead TIDs", 1024, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	dead.n = 0;

	for (int r = 0; r < snap->nruns; r++)
	{
		set_run_vacuuming(index, snap->runs[r], true, 0, &hdrs[r], &flagged[r]);
		newly_dead[r] = 0;
	}

	/* table 0 asks the callback, and counts */
	for (int r = 0; r < snap->nruns; r++)
		if (mih_run_tables(snap, r) & 1)
		{
			newly_dead[r] = vacuum_table(index, &hdrs[r], 0, record_dead, &dead, live,
										 strategy);
			removed += newly_dead[r];
		}

	/* the other tables look the dead TIDs up, unless their run is flagged */
	for (int r = 0; r < snap->nruns; r++)
	{
		uint32		tables = mih_run_tables(snap, r);

		for (int j = 1; j < snap->nblocks; j++)
		{
			int64		n;
			int64		ignored = 0;

			if (!(tables & (1 << j)))
				continue;
			if (!flagged[r] && dead.n == 0)
				break;			/* nothing died: the tables agree */
			/* a flagged run, or a set that outgrew its budget: the callback */
			if (flagged[r] || dead.tids == NULL)
				n = vacuum_table(index, &hdrs[r], j, callback, callback_state, &ignored,
								 strategy);
			else
				n = vacuum_table(index, &hdrs[r], j, known_dead, &dead, &ignored, strategy);
			/* a run without table 0 counts in its first table */
			if ((tables & ((1 << j) - 1)) == 0)
				newly_dead[r] = n;
		}
	}
	MemoryContextDelete(dead.cxt);

	for (int r = 0; r < snap->nruns; r++)
		set_run_vacuuming(index, snap->runs[r], false, newly_dead[r], NULL, NULL);
	return removed;
}

IndexBulkDeleteResult *
mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		metabuf;
	MihMetaPageData snap;
	int64		live = 0;
	int64		removed = 0;

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	/* no merge meanwhile; free what no snapshot can reach any more */
	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	mih_recycle_retired(index);

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	memcpy(&snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(snap));
	UnlockReleaseBuffer(metabuf);

	/* the pending list, as far as it goes now */
	for (BlockNumber blk = snap.pending_head; blk != InvalidBlockNumber;)
	{
		vacuum_page(index, blk, callback, callback_state, &live, &removed, &blk,
					MIH_PAGE_PENDING, info->strategy);
		sh_vacuum_delay_point();
	}

	/* every run; counts come from table 0 */
	removed += vacuum_runs(index, &snap, callback, callback_state, &live, info->strategy);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);

	stats->tuples_removed += removed;
	stats->num_index_tuples = live;
	return stats;
}

/* ---- reclaiming unreachable pages ---- */

typedef struct Reach
{
	Relation	index;
	uint8	   *bits;
	BlockNumber nblocks;
} Reach;

static inline void
reach_set(Reach *r, BlockNumber blk)
{
	if (blk < r->nblocks)
		r->bits[blk / 8] |= (uint8) (1 << (blk % 8));
}

static inline bool
reach_get(Reach *r, BlockNumber blk)
{
	return (r->bits[blk / 8] & (1 << (blk % 8))) != 0;
}

static void
reach_page_visitor(BlockNumber blk, void *arg)
{
	reach_set((Reach *) arg, blk);
}

/* Mark what a retired entry names, and the retired list's own pages. */
static void
reach_retired_visitor(const MihRetired *r, BlockNumber chain_page, void *arg)
{
	Reach	   *reach = (Reach *) arg;

	if (r == NULL)
		reach_set(reach, chain_page);
	else if (r->is_run)
	{
		MihRunHeader hdr;
		uint32		tables;
		bool		header;

		mih_read_run_header(reach->index, r->head, MIH_ANY_SERIAL, &hdr);
		tables = mih_retired_run_tables(r, hdr.ntables, &header);
		/* a run losing tables is still listed, and reached from there too */
		mih_walk_run(reach->index, r->head, tables, header, reach_page_visitor, reach, NULL);
	}
	else
		mih_walk_pending_chain(reach->index, r->head, r->extent, reach_page_visitor, reach);
}

/*
 * Record free pages, and free the pages nothing reaches any more: pages of
 * runs that are neither in the run list nor retired (a merge cut short by
 * an error or a crash), blocks a run writer reserved and never wrote (the
 * same), pages of the retired list's chain that it no longer links, and
 * pending pages that are neither on the pending list nor
 * retired (recycling cut short between updating the list and freeing). We
 * hold the merge lock, so no run is being written and the retired list
 * stands still. Inserts go on: the pages they add to the pending list carry
 * serials from the head's on, so a pending page is garbage only if its
 * serial precedes the head's (the pending list's serials increase along
 * it) and no retired chain holds it.
 */
static BlockNumber
reclaim_pages(Relation index, int64 *live, BufferAccessStrategy strategy)
{
	Buffer		metabuf;
	MihMetaPageData snap;
	Reach		reach;
	BlockNumber nfree = 0;
	uint32		live_from;

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	memcpy(&snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(snap));
	UnlockReleaseBuffer(metabuf);
	/* the oldest serial a pending page still in use can carry */
	live_from = snap.pending_head != InvalidBlockNumber ? snap.pending_head_serial
		: (uint32) snap.next_serial;

	reach.index = index;

	/*
	 * Under the extension lock, as nbtree and GIN do: a page added by an
	 * insert is locked by it before the lock is released, so no page within
	 * this size can still be new and unlocked (it would look free).
	 */
	if (!RELATION_IS_LOCAL(index))
		LockRelationForExtension(index, ExclusiveLock);
	reach.nblocks = RelationGetNumberOfBlocks(index);
	if (!RELATION_IS_LOCAL(index))
		UnlockRelationForExtension(index, ExclusiveLock);
	reach.bits = palloc0(reach.nblocks / 8 + 1);
	reach_set(&reach, MIH_METAPAGE_BLKNO);
	for (int i = 0; i < snap.nruns; i++)
	{
		MihRunHeader hdr;
		uint32		tables = mih_run_tables(&snap, i);

		mih_walk_run(index, snap.runs[i], tables, true, reach_page_visitor, &reach, &hdr);
		/* the runs serving table 0 hold each entry once */
		if (tables & 1)
			*live += hdr.nentries - hdr.ndead;
	}
	mih_retired_foreach(index, &snap, reach_retired_visitor, &reach);
	*live += snap.pending_entries;	/* dead ones included: an estimate */

	for (BlockNumber blk = 1; blk < reach.nblocks; blk++)
	{
		Buffer		buf;
		Page		page;
		uint16		type;
		bool		garbage;

		sh_vacuum_delay_point();
		if (reach_get(&reach, blk))
			continue;
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
		if (!ConditionalLockBuffer(buf))
		{
			ReleaseBuffer(buf);
			continue;
		}
		page = BufferGetPage(buf);
		type = PageIsNew(page) ? MIH_PAGE_FREE : MihPageGetOpaque(page)->type;
		if (type == MIH_PAGE_PENDING)
			garbage = (int32) (MihPageGetOpaque(page)->serial - live_from) < 0;
		else
			garbage = (type == MIH_PAGE_LEAF || type == MIH_PAGE_INNER ||
					   type == MIH_PAGE_RUNHEAD || type == MIH_PAGE_RETIRED ||
					   type == MIH_PAGE_RESERVED);
		if (type == MIH_PAGE_FREE)
		{
			RecordFreeIndexPage(index, blk);
			nfree++;
		}
		else if (garbage)
		{
			mih_mark_free(index, buf);
			nfree++;
		}
		UnlockReleaseBuffer(buf);
	}
	pfree(reach.bits);
	return nfree;
}

IndexBulkDeleteResult *
mih_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	int64		live = 0;
	BlockNumber nfree;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	/* fold the pending list and small or dead-heavy runs into bigger runs */
	mih_flush_and_merge(index, true, true, info->strategy);

	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	nfree = reclaim_pages(index, &live, info->strategy);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	IndexFreeSpaceMapVacuum(index);

	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->pages_free = nfree;
	stats->num_index_tuples = live;
	return stats;
}
