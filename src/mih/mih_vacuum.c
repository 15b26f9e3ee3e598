/*
 * mih_vacuum.c
 *		VACUUM for the simhash index.
 *
 * Bulk delete marks dead entries in place (their TID is invalidated, one
 * GenericXLog record per page changed) in the pending list and in every
 * table of every run, each page under a cleanup lock so that no scan is
 * still returning TIDs from it. Cleanup then merges: dead entries are
 * dropped when runs are rewritten, small runs are folded into large ones,
 * pages of replaced runs are recycled, and pages that nothing reaches (a
 * merge interrupted by a crash) are reclaimed.
 */
#include "mih.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"

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
		if (mih_entry_dead(&entries[i]))
			continue;
		if (callback(&entries[i].tid, callback_state))
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
 * clearing); returns a copy of the header when hdr is given.
 */
static void
set_run_vacuuming(Relation index, BlockNumber runhead, bool on, int64 newly_dead,
				  MihRunHeader *hdr)
{
	Buffer		buf = ReadBuffer(index, runhead);
	GenericXLogState *state;
	MihRunHeader *h;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	h = MihPageGetRunHeader(GenericXLogRegisterBuffer(state, buf, 0));
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

	/* no merge meanwhile, and no scan left that could read retired pages */
	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	mih_recycle_retired(index, true);

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
		vacuum_delay_point();
	}

	/*
	 * Every table of every run; counts come from table 0. A run is flagged
	 * while it is being marked: if a crash cuts the marking short, its tables
	 * disagree on which entries are dead, and the flag tells the next merge
	 * to reconcile them (mih_run.c, collect_dead).
	 */
	for (int r = 0; r < snap.nruns; r++)
	{
		MihRunHeader hdr;
		int64		run_removed = 0;

		set_run_vacuuming(index, snap.runs[r], true, 0, &hdr);
		for (int j = 0; j < hdr.ntables; j++)
		{
			int64		tlive = 0;
			int64		tremoved = 0;

			for (BlockNumber blk = hdr.first_leaf[j]; blk != InvalidBlockNumber;)
			{
				vacuum_page(index, blk, callback, callback_state, &tlive, &tremoved,
							&blk, MIH_PAGE_LEAF, info->strategy);
				vacuum_delay_point();
			}
			if (j == 0)
			{
				live += tlive;
				run_removed = tremoved;
			}
		}
		set_run_vacuuming(index, snap.runs[r], false, run_removed, NULL);
		removed += run_removed;
	}
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);

	stats->tuples_removed += removed;
	stats->num_index_tuples = live;
	return stats;
}

/* ---- reclaiming unreachable pages ---- */

typedef struct Reach
{
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
reach_run(Relation index, Reach *r, BlockNumber runhead, int64 *live)
{
	Buffer		buf = ReadBuffer(index, runhead);
	MihRunHeader hdr;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	memcpy(&hdr, MihPageGetRunHeader(BufferGetPage(buf)), sizeof(hdr));
	UnlockReleaseBuffer(buf);
	reach_set(r, runhead);
	if (live)
		*live += hdr.nentries - hdr.ndead;

	for (int j = 0; j < hdr.ntables; j++)
	{
		BlockNumber *level;
		int64		nlevel = 1;

		for (BlockNumber blk = hdr.first_leaf[j]; blk != InvalidBlockNumber;)
		{
			reach_set(r, blk);
			buf = ReadBuffer(index, blk);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			blk = MihPageGetOpaque(BufferGetPage(buf))->next;
			UnlockReleaseBuffer(buf);
		}
		if (hdr.height[j] == 0)
			continue;
		level = palloc(sizeof(BlockNumber));
		level[0] = hdr.root[j];
		for (int h = hdr.height[j]; h >= 1; h--)
		{
			BlockNumber *below = NULL;
			int64		nbelow = 0;
			int64		cap = 0;

			for (int64 i = 0; i < nlevel; i++)
			{
				Page		page;
				MihInnerItem *items;
				int			n;

				reach_set(r, level[i]);
				if (h == 1)
					continue;	/* children are leaves, already marked */
				buf = ReadBuffer(index, level[i]);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
				page = BufferGetPage(buf);
				items = MihPageGetInner(page);
				n = MihPageGetNItems(page, sizeof(MihInnerItem));
				if (nbelow + n > cap)
				{
					cap = Max(cap * 2, nbelow + n);
					below = below ? repalloc(below, cap * sizeof(BlockNumber))
						: palloc(cap * sizeof(BlockNumber));
				}
				for (int k = 0; k < n; k++)
					below[nbelow++] = items[k].child;
				UnlockReleaseBuffer(buf);
			}
			pfree(level);
			level = below;
			nlevel = nbelow;
			if (level == NULL)
				break;
		}
		if (level)
			pfree(level);
	}
}

/*
 * Record free pages, and free run pages nothing reaches any more. Runs only
 * hold the merge lock while they are written, and we hold it, so an
 * unreachable run page belongs to no merge in progress. Pending pages are
 * never reclaimed here: they are allocated and linked in one step by
 * inserts, which do not take the merge lock.
 */
static BlockNumber
reclaim_pages(Relation index, int64 *live, BufferAccessStrategy strategy)
{
	Buffer		metabuf;
	MihMetaPageData snap;
	Reach		reach;
	BlockNumber nfree = 0;

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	memcpy(&snap, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(snap));
	UnlockReleaseBuffer(metabuf);

	reach.nblocks = RelationGetNumberOfBlocks(index);
	reach.bits = palloc0(reach.nblocks / 8 + 1);
	reach_set(&reach, MIH_METAPAGE_BLKNO);
	for (int i = 0; i < snap.nruns; i++)
		reach_run(index, &reach, snap.runs[i], live);
	for (int i = 0; i < snap.nretired; i++)
		if (snap.retired[i].is_run)
			reach_run(index, &reach, snap.retired[i].head, NULL);
	*live += snap.pending_entries;	/* dead ones included: an estimate */

	for (BlockNumber blk = 1; blk < reach.nblocks; blk++)
	{
		Buffer		buf;
		Page		page;
		uint16		type;

		vacuum_delay_point();
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
		if (type == MIH_PAGE_FREE)
		{
			RecordFreeIndexPage(index, blk);
			nfree++;
		}
		else if (type == MIH_PAGE_LEAF || type == MIH_PAGE_INNER ||
				 type == MIH_PAGE_RUNHEAD)
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
	mih_flush_and_merge(index, true, true);

	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	nfree = reclaim_pages(index, &live, info->strategy);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	IndexFreeSpaceMapVacuum(index);

	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->pages_free = nfree;
	stats->num_index_tuples = live;
	return stats;
}
