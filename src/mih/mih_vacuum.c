/*
 * mih_vacuum.c
 *		VACUUM for the simhash index.
 *
 * Bulk delete marks dead entries in place (their TID is invalidated, one
 * GenericXLog record per page changed) in the pending list and in every
 * table of every run, asking VACUUM's callback about once per TID, while
 * inserts go on flushing (mih_bulkdelete, src/mih/README). Each page is
 * marked under a cleanup lock, so that no scan is still returning TIDs from
 * it (only scans under non-MVCC snapshots hold such a pin; the others copy
 * their matches out and hold none). Cleanup then merges: dead entries are
 * dropped when runs are rewritten, small runs are folded into large ones,
 * pages of replaced runs are recycled once no snapshot can reach them
 * (mih_recycle.c), and pages that nothing reaches (a merge or a recycling
 * cut short by an error or a crash) are reclaimed.
 */
#include "mih.h"
#include "test_fault.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/*
 * Mark the dead entries of one page, if it is still the page the link
 * promised (type, serial, table: -1 any). When it is not: false if gone_ok
 * (the caller checks whether its run was retired and recycled meanwhile),
 * else the corruption error. Counts live and newly dead entries, and
 * returns the page's next link and, on the pending list, that page's serial.
 */
static bool
vacuum_page(Relation index, BlockNumber blk, uint16 type, uint32 serial, int table,
			uint64 mask, bool gone_ok, IndexBulkDeleteCallback callback, void *callback_state,
			int64 *live, int64 *removed, BlockNumber *next, uint32 *next_serial,
			BufferAccessStrategy strategy)
{
	Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blk, RBM_NORMAL, strategy);
	Page		page;
	const MihEntry *entries;
	MihEntry	scratch[MIH_LEAF_MAX_ENTRIES];
	int			n;
	int			ndead = 0;
	uint16		dead[MIH_LEAF_MAX_ENTRIES];

	LockBufferForCleanup(buf);
	page = BufferGetPage(buf);
	if (gone_ok && !mih_page_is(page, type, serial, table))
	{
		UnlockReleaseBuffer(buf);
		return false;
	}
	mih_check_page(index, page, blk, type, serial, table);
	if (type == MIH_PAGE_LEAF)
		entries = mih_leaf_entries(index, blk, page, mask, scratch, &n);
	else
	{
		entries = MihPageGetEntries(page);
		n = MihPageGetNItems(page, sizeof(MihEntry));
	}
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

		for (int i = 0; i < ndead; i++)
		{
			if (type == MIH_PAGE_LEAF)
				mih_leaf_set_dead(wpage, dead[i]);
			else
				mih_entry_set_dead(&MihPageGetEntries(wpage)[dead[i]]);
		}
		GenericXLogFinish(state);
		*removed += ndead;
	}
	*next = MihPageGetOpaque(page)->next;
	*next_serial = MihPageGetOpaque(page)->next_serial;
	UnlockReleaseBuffer(buf);
	return true;
}

/*
 * Set or clear a run's MIH_RUN_VACUUMING flag (adding to its dead count when
 * clearing); returns a copy of the header when hdr is given, and whether
 * the flag was already set when was_set is. Under the merge lock only.
 */
static void
set_run_vacuuming(Relation index, BlockNumber runhead, uint32 serial, bool on,
				  int64 newly_dead, MihRunHeader *hdr, bool *was_set)
{
	Buffer		buf = ReadBuffer(index, runhead);
	GenericXLogState *state;
	MihRunHeader *h;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	mih_check_page(index, BufferGetPage(buf), runhead, MIH_PAGE_RUNHEAD, serial, -1);
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
 * The TIDs VACUUM's callback called dead in the runs' first tables. A run's
 * tables hold the same entries, so its other tables ask this set instead of
 * the callback (once per TID, not once per table), and are skipped entirely
 * when nothing died in the run. The set is kept within maintenance_work_mem;
 * past it, the other tables ask the callback too (record_dead). Not valid for
 * a run flagged MIH_RUN_VACUUMING before this bulk delete, whose dead marks
 * may disagree between tables (a crashed bulk delete, or a merge from such a
 * run): its tables ask the callback themselves.
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

/* A run bulk delete visits: what the metapage said of it, and what was found. */
typedef struct VacRun
{
	BlockNumber head;
	uint32		serial;
	uint32		tables;			/* the tables it serves */
	MihRunHeader hdr;
	bool		was_flagged;	/* flagged before: its tables' marks may disagree */
	bool		gone;			/* retired and recycled while bulk delete ran */
	uint32		tables_gone;	/* tables a fold took from it while bulk
								 * delete ran, their pages recycled */
	int64		newly_dead;		/* counted in its first table */
	int64		live;
} VacRun;

/*
 * Is the run still listed for table j: in the run list, and still serving
 * table j? A fold of table j leaves the run listed for its other tables
 * but hands table j to a new run (run_gone), after which recycling may
 * free table j's pages; only a run listed for j vouches for them.
 */
static bool
run_listed(Relation index, const VacRun *run, int j)
{
	Buffer		metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	MihMetaPageData *meta;
	bool		listed = false;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	for (int r = 0; r < meta->nruns; r++)
		listed |= meta->runs[r] == run->head && meta->run_serials[r] == run->serial &&
			(mih_run_tables(meta, r) & (1 << j)) != 0;
	UnlockReleaseBuffer(metabuf);
	return listed;
}

/* Is the run still in the run list at all, serving any table? */
static bool
run_in_list(Relation index, const VacRun *run)
{
	Buffer		metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	MihMetaPageData *meta;
	bool		listed = false;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	for (int r = 0; r < meta->nruns; r++)
		listed |= meta->runs[r] == run->head && meta->run_serials[r] == run->serial;
	UnlockReleaseBuffer(metabuf);
	return listed;
}

/*
 * Mark the dead entries of table j of a run. Without the merge lock
 * (gone_ok), a page that is no longer the run's means a merge retired the
 * run's table j (a fold) or the whole run, and recycling freed the pages:
 * as long as the run list no longer names the run for table j (else that
 * is corruption, reported), table j is left, and the run is marked gone
 * when it left the list altogether. The run that took table j's entries
 * was written meanwhile and is visited in step 3.
 */
static int64
vacuum_table(Relation index, VacRun *run, int j, uint64 mask, bool gone_ok,
			 IndexBulkDeleteCallback cb,
			 void *cbstate, int64 *live, BufferAccessStrategy strategy)
{
	int64		removed = 0;
	uint32		ignored;

	for (BlockNumber blk = run->hdr.first_leaf[j]; blk != InvalidBlockNumber;)
	{
		if (!vacuum_page(index, blk, MIH_PAGE_LEAF, run->serial, j, mask, gone_ok, cb, cbstate,
						 live, &removed, &blk, &ignored, strategy))
		{
			if (run_listed(index, run, j))
				vacuum_page(index, blk, MIH_PAGE_LEAF, run->serial, j, mask, false, cb, cbstate,
							live, &removed, &blk, &ignored, strategy);	/* reports it */
			run->tables_gone |= 1 << j;
			if (!run_in_list(index, run))
				run->gone = true;
			if (run->gone)
				elog(DEBUG1, "simhash bulk delete: a run was replaced and its pages freed meanwhile (block %u, serial %u); the run that replaced it is visited at the end",
					 run->head, run->serial);
			else
				elog(DEBUG1, "simhash bulk delete: table %d of a run was folded away and its pages freed meanwhile (block %u, serial %u); the run that took it is visited at the end",
					 j, run->head, run->serial);
			break;
		}
		sh_vacuum_delay_point();
	}
	return removed;
}

/*
 * Mark the dead entries of every table of the runs given; returns how many
 * entries died (counted once, in the run's first table). The first table
 * asks the callback; the run's other tables ask the set of what died there
 * (a run's tables hold the same entries), unless the run was flagged before
 * (its tables may disagree) or the set outgrew its budget.
 */
static int64
vacuum_runs(Relation index, int nblocks, const uint64 *masks, VacRun *runs, int nruns, bool gone_ok,
			IndexBulkDeleteCallback callback, void *callback_state,
			BufferAccessStrategy strategy)
{
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

	/* a test stops here, the runs flagged and none marked yet (TAP 022) */
	if (gone_ok && simhash_test_fault == SH_FAULT_VACUUM_PAUSE)
		sh_test_pause(SH_FAULT_VACUUM_PAUSE);

	/* table 0 asks the callback, and counts */
	for (int r = 0; r < nruns; r++)
		if (runs[r].tables & 1)
		{
			runs[r].newly_dead = vacuum_table(index, &runs[r], 0, masks[0], gone_ok, record_dead, &dead,
											  &runs[r].live, strategy);
			removed += runs[r].newly_dead;
		}

	for (int r = 0; r < nruns; r++)
	{
		VacRun	   *run = &runs[r];
		uint32		first = run->tables & -run->tables;	/* the table that counts */

		for (int j = 1; j < nblocks && !run->gone; j++)
		{
			int64		ignored = 0;
			bool		trusted;

			if (!(run->tables & (1 << j)))
				continue;
			/* a run without table 0 (folded) asks in its first table, and counts there */
			if ((run->tables & ((1 << j) - 1)) == 0)
			{
				run->newly_dead = vacuum_table(index, run, j, masks[j], gone_ok, record_dead, &dead,
											   &run->live, strategy);
				removed += run->newly_dead;
				continue;
			}
			/*
			 * The set holds what died in the run only if its first table was
			 * walked whole: a fold may have taken that table midway.
			 */
			trusted = !run->was_flagged && !(run->tables_gone & first);
			if (trusted && run->newly_dead == 0)
				break;			/* nothing died: the tables agree */
			/* a flagged run, a cut first table, a set past its budget: the callback */
			if (!trusted || dead.tids == NULL)
				vacuum_table(index, run, j, masks[j], gone_ok, callback, callback_state, &ignored,
							 strategy);
			else
				vacuum_table(index, run, j, masks[j], gone_ok, known_dead, &dead, &ignored, strategy);
		}
	}
	MemoryContextDelete(dead.cxt);
	return removed;
}

/* Copy the metapage. */
static void
read_meta(Relation index, MihMetaPageData *meta)
{
	Buffer		metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	memcpy(meta, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(*meta));
	UnlockReleaseBuffer(metabuf);
}

/* The runs of a metapage copy, flagged MIH_RUN_VACUUMING (merge lock held). */
static int
flag_runs(Relation index, const MihMetaPageData *meta, const VacRun *skip, int nskip,
		  VacRun *out)
{
	int			n = 0;

	for (int r = 0; r < meta->nruns; r++)
	{
		bool		seen = false;
		VacRun	   *run = &out[n];

		for (int i = 0; i < nskip; i++)
			seen |= skip[i].head == meta->runs[r] && skip[i].serial == meta->run_serials[r];
		if (seen)
			continue;
		memset(run, 0, sizeof(*run));
		run->head = meta->runs[r];
		run->serial = meta->run_serials[r];
		run->tables = mih_run_tables(meta, r);
		set_run_vacuuming(index, run->head, run->serial, true, 0, &run->hdr, &run->was_flagged);
		n++;
	}
	return n;
}

/*
 * Bulk delete, in three steps, so that inserts go on flushing their pending
 * list while it runs (bulk delete once held the merge lock throughout,
 * which let the list grow without bound during a long VACUUM, and every
 * search reads it whole):
 *
 *  1. Under the merge lock: recycle, copy the run list, flag every run
 *     MIH_RUN_VACUUMING. A merge of a flagged run writes a flagged run.
 *  2. Without it: mark the dead entries of those runs. Meanwhile merges may
 *     replace some of them, and recycling may even free their pages (VACUUM's
 *     own snapshot does not hold back the horizon recycling waits for): each
 *     page is marked only if it is still the run's under the cleanup lock,
 *     and a run whose pages went is left (vacuum_table).
 *  3. Under the merge lock again: the runs written meanwhile (their entries
 *     may have been copied before step 2 marked them; flagged when merged
 *     from flagged runs, so their tables ask the callback themselves), and
 *     the pending list, whose entries step 2 left (a flush may have copied
 *     them meanwhile, into a run of step 3). Then every run still listed is
 *     unflagged, with its dead count.
 *
 * The heap keeps a dead tuple's TID until every index's bulk delete is
 * over, so no entry inserted meanwhile can carry a TID the callback calls
 * dead; entries that died existed before step 1. A crash anywhere leaves
 * runs flagged, which the next bulk delete and any merge handle. An entry
 * marked in step 2 in a run a merge had already copied is marked again in
 * the new run, and counted twice in tuples_removed.
 */
IndexBulkDeleteResult *
mih_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
			   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	MihMetaPageData meta;
	VacRun	   *old = palloc(MIH_MAX_RUNS * sizeof(VacRun));
	VacRun	   *new = palloc(MIH_MAX_RUNS * sizeof(VacRun));
	int			nold;
	int			nnew;
	int64		live = 0;
	int64		removed = 0;
	uint32		serial;

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	/* 1: free what no snapshot can reach any more; flag the runs */
	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	mih_recycle_retired(index);
	read_meta(index, &meta);
	nold = flag_runs(index, &meta, NULL, 0, old);
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);

	/* 2: their dead entries, while inserts flush and merge */
	removed += vacuum_runs(index, meta.nblocks, meta.masks, old, nold, true, callback, callback_state,
						   info->strategy);

	/* 3: what was written meanwhile, and the pending list */
	LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	read_meta(index, &meta);
	nnew = flag_runs(index, &meta, old, nold, new);
	removed += vacuum_runs(index, meta.nblocks, meta.masks, new, nnew, false, callback, callback_state,
						   info->strategy);
	serial = meta.pending_head_serial;
	for (BlockNumber blk = meta.pending_head; blk != InvalidBlockNumber;)
	{
		vacuum_page(index, blk, MIH_PAGE_PENDING, serial, -1, 0, false, callback,
					callback_state, &live, &removed, &blk, &serial, info->strategy);
		sh_vacuum_delay_point();
	}
	for (int r = 0; r < meta.nruns; r++)
	{
		for (int i = 0; i < nold + nnew; i++)
		{
			VacRun	   *run = i < nold ? &old[i] : &new[i - nold];

			if (run->head != meta.runs[r] || run->serial != meta.run_serials[r])
				continue;
			set_run_vacuuming(index, run->head, run->serial, false, run->newly_dead, NULL, NULL);
			live += run->live;
		}
	}
	UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	pfree(old);
	pfree(new);

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
reach_retired_visitor(const MihRetiredItem *r, BlockNumber chain_page, void *arg)
{
	Reach	   *reach = (Reach *) arg;

	if (r == NULL)
		reach_set(reach, chain_page);
	else if (r->what.is_run)
	{
		MihRunHeader hdr;
		uint32		tables;
		bool		header;

		mih_read_run_header(reach->index, r->what.head, r->serial, &hdr);
		tables = mih_retired_run_tables(&r->what, hdr.ntables, &header);
		/* a run losing tables is still listed, and reached from there too */
		mih_walk_run(reach->index, r->what.head, r->serial, tables, header,
					 reach_page_visitor, reach, NULL);
	}
	else
		mih_walk_pending_chain(reach->index, r->what.head, r->serial, r->what.extent,
							   reach_page_visitor, reach);
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

		mih_walk_run(index, snap.runs[i], snap.run_serials[i], tables, true,
					 reach_page_visitor, &reach, &hdr);
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
