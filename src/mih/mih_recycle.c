/*
 * mih_recycle.c
 *		The retired list: pages a merge replaced, kept until no scan can
 *		still read them, then freed for reuse.
 *
 * A merge swaps the run list and the pending head on the metapage and
 * retires what it replaced (runs, a chain of pending pages), stamping each
 * entry with the next transaction ID at that moment. A scan that read the
 * old run list took its snapshot before, so its backend advertises an xmin
 * no newer than that stamp for as long as the scan runs; once
 * GlobalVisCheckRemovableFullXid says the stamp is older than every xmin,
 * no scan can reach the pages and they are freed. This is nbtree's rule for
 * deleted pages, and nothing ever waits for a scan: an open cursor only
 * delays the reuse of the pages it could still need.
 *
 * The newest entries sit on the metapage; when that array is full they move
 * to a chain of MIH_PAGE_RETIRED pages (oldest first), so the list is never
 * what stops a merge. Entries are in stamp order, so recycling frees a
 * prefix. Everything here runs under the merge lock, which serialises the
 * list's writers; the list is changed (WAL-logged) before the pages are
 * freed, so an error or crash in between leaks pages instead of freeing
 * them twice, and VACUUM reclaims leaked pages (mih_vacuum.c).
 *
 * Hot standby: the primary's horizon includes the xmin a standby reports
 * with hot_standby_feedback, which then keeps the pages its queries need;
 * without it, a standby query whose pages were recycled is cancelled by
 * the page checks (mih_check_page), as a recovery conflict would cancel it.
 */
#include "mih.h"
#include "test_fault.h"

#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/procarray.h"
#include "utils/snapmgr.h"

/* ---- walking every page of a run ---- */

/*
 * Call visit for the pages of a run that tables (a bit per table) and header
 * name: its header page, and for each table named the leaves by their chain
 * and the inner pages level by level from the root. Tables a run no longer
 * serves must not be named: their pages may belong to another run by now.
 * The header must carry run_serial (where the caller knows it; else
 * MIH_ANY_SERIAL: its type is checked), and every other page the header's
 * serial (mih_check_page), so a walk never follows a link out of a page that
 * is no longer the run's. Links are read before visit is called for a page,
 * so visit may free it.
 */
void
mih_walk_run(Relation index, BlockNumber runhead, int64 run_serial, uint32 tables,
			 bool header, MihPageVisitor visit, void *arg, MihRunHeader *hdr_out)
{
	Buffer		buf = ReadBuffer(index, runhead);
	Page		page = BufferGetPage(buf);
	MihRunHeader hdr;
	uint32		serial;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	if (run_serial == MIH_ANY_SERIAL)
		serial = PageIsNew(page) ? 0 : MihPageGetOpaque(page)->serial;
	else
		serial = (uint32) run_serial;
	mih_check_page(index, page, runhead, MIH_PAGE_RUNHEAD, serial, -1);
	memcpy(&hdr, MihPageGetRunHeader(page), sizeof(hdr));
	UnlockReleaseBuffer(buf);
	if (hdr_out)
		memcpy(hdr_out, &hdr, sizeof(hdr));
	if (header)
		visit(runhead, arg);

	for (int j = 0; j < hdr.ntables; j++)
	{
		BlockNumber *level;
		int64		nlevel = 1;

		if (!(tables & (1 << j)) || hdr.first_leaf[j] == InvalidBlockNumber)
			continue;

		for (BlockNumber blk = hdr.first_leaf[j]; blk != InvalidBlockNumber;)
		{
			BlockNumber next;

			buf = ReadBuffer(index, blk);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			mih_check_page(index, BufferGetPage(buf), blk, MIH_PAGE_LEAF, serial, j);
			next = MihPageGetOpaque(BufferGetPage(buf))->next;
			UnlockReleaseBuffer(buf);
			visit(blk, arg);
			blk = next;
			CHECK_FOR_INTERRUPTS();
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
				Page		inner;
				MihInnerItem *items;
				int			n;

				buf = ReadBuffer(index, level[i]);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
				inner = BufferGetPage(buf);
				mih_check_page(index, inner, level[i], MIH_PAGE_INNER, serial, j);
				/* children of level 1 are the leaves, visited above */
				if (h > 1)
				{
					n = MihPageGetNItems(inner, sizeof(MihInnerItem));
					items = MihPageGetInner(inner);
					if (nbelow + n > cap)
					{
						cap = Max(cap * 2, nbelow + n);
						below = below ? repalloc_huge(below, cap * sizeof(BlockNumber))
							: palloc(cap * sizeof(BlockNumber));
					}
					for (int k = 0; k < n; k++)
						below[nbelow++] = items[k].child;
				}
				UnlockReleaseBuffer(buf);
				visit(level[i], arg);
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

/* ---- freeing ---- */

static void
free_page_visitor(BlockNumber blk, void *arg)
{
	Relation	index = (Relation) arg;
	Buffer		buf = ReadBuffer(index, blk);

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	mih_mark_free(index, buf);
	UnlockReleaseBuffer(buf);
}

/*
 * Free the pages of a run (some tables, or all with the header) no scan can
 * reach any more. serial is the entry's (MIH_ANY_SERIAL before version 3):
 * the header is checked against it before anything is freed, so an entry
 * whose block now holds another run frees nothing of it.
 */
static void
free_run_pages(Relation index, const MihRetired *r, int64 serial)
{
	MihRunHeader hdr;
	uint32		tables;
	bool		header;

	mih_read_run_header(index, r->head, serial, &hdr);
	tables = mih_retired_run_tables(r, hdr.ntables, &header);
	mih_walk_run(index, r->head, serial, tables, header, free_page_visitor, index, NULL);
}

/*
 * Call visit for each page of a retired chain of pending pages, from head up
 * to (not including) stop. The head must be a pending page carrying
 * head_serial (the entry's; MIH_ANY_SERIAL before version 3, whose entries
 * keep none: then its type is checked), and each later page the serial its
 * predecessor recorded, so a walk never follows a link out of a page that is
 * no longer the chain's. Links are read before visit is called, so visit
 * may free the page. Under the merge lock, which keeps retired chains as
 * they are.
 */
void
mih_walk_pending_chain(Relation index, BlockNumber head, int64 head_serial,
					   BlockNumber stop, MihPageVisitor visit, void *arg)
{
	BlockNumber blk = head;
	uint32		serial = (uint32) head_serial;

	while (blk != InvalidBlockNumber && blk != stop)
	{
		Buffer		buf = ReadBuffer(index, blk);
		Page		page = BufferGetPage(buf);
		BlockNumber next;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (blk == head && head_serial == MIH_ANY_SERIAL)
			serial = PageIsNew(page) ? 0 : MihPageGetOpaque(page)->serial;
		mih_check_page(index, page, blk, MIH_PAGE_PENDING, serial, -1);
		next = MihPageGetOpaque(page)->next;
		serial = MihPageGetOpaque(page)->next_serial;
		UnlockReleaseBuffer(buf);
		visit(blk, arg);
		blk = next;
		CHECK_FOR_INTERRUPTS();
	}
}

static void
free_retired(Relation index, const MihRetiredItem *item)
{
	if (item->what.is_run)
		free_run_pages(index, &item->what, item->serial);
	else
		mih_walk_pending_chain(index, item->what.head, item->serial, item->what.extent,
							   free_page_visitor, index);
}

/*
 * The serial an entry records for the page it names, or MIH_ANY_SERIAL for
 * an index whose version keeps none (see MIH_VERSION_RETIRED_SERIAL).
 */
static inline int64
entry_serial(const MihMetaPageData *meta, uint32 serial)
{
	return meta->version >= MIH_VERSION_RETIRED_SERIAL ? (int64) serial : MIH_ANY_SERIAL;
}

/* ---- the list ---- */

/*
 * Bring a metapage written before the retired list had stamps up to the
 * current layout: entries already retired are stamped now, which only
 * delays their reuse. The caller holds the merge lock and an exclusive lock
 * on metabuf.
 */
void
mih_meta_update_layout(Relation index, Buffer metabuf)
{
	GenericXLogState *state;
	Page		page;
	MihMetaPageData *meta;
	FullTransactionId now;

	if (MihPageGetMeta(BufferGetPage(metabuf))->layout == MIH_META_LAYOUT_XID)
		return;
	now = ReadNextFullTransactionId();
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, metabuf, 0);
	meta = MihPageGetMeta(page);
	meta->layout = MIH_META_LAYOUT_XID;
	meta->retired_pages = 0;
	meta->retired_first = InvalidBlockNumber;
	meta->retired_last = InvalidBlockNumber;
	meta->retired_spilled = 0;
	for (int i = 0; i < meta->nretired; i++)
		meta->retired_xid[i] = now;
	/* the appended fields lie below pd_lower, so GenericXLog logs them */
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMetaPageData);
	GenericXLogFinish(state);
}

/*
 * Make room for n more entries on the metapage, moving the ones there to a
 * new page at the end of the chain when needed. Under the merge lock.
 */
void
mih_retired_reserve(Relation index, int n)
{
	Buffer		metabuf;
	Buffer		newbuf = InvalidBuffer;
	Buffer		lastbuf = InvalidBuffer;
	GenericXLogState *state;
	Page		metapage;
	Page		lastpage;
	Page		target;
	MihMetaPageData *meta;
	MihRetiredEntry *entries;
	int			have;

	Assert(n <= MIH_MAX_RETIRED && MIH_MAX_RETIRED <= MIH_RETIRED_PER_PAGE);
	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	mih_meta_update_layout(index, metabuf);
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	if (meta->nretired + n <= MIH_MAX_RETIRED)
	{
		UnlockReleaseBuffer(metabuf);
		return;
	}

	/*
	 * Only merge-lock holders change the chain. The entries go to its last
	 * page if they fit there, else to a new page linked after it.
	 */
	if (meta->retired_last != InvalidBlockNumber)
	{
		lastbuf = ReadBuffer(index, meta->retired_last);
		LockBuffer(lastbuf, BUFFER_LOCK_EXCLUSIVE);
		mih_check_page(index, BufferGetPage(lastbuf), meta->retired_last,
					   MIH_PAGE_RETIRED, 0, -1);
		if (MihPageGetNItems(BufferGetPage(lastbuf), sizeof(MihRetiredEntry)) +
			meta->nretired > MIH_RETIRED_PER_PAGE)
			newbuf = mih_new_buffer(index);
	}
	else
		newbuf = mih_new_buffer(index);

	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	meta = MihPageGetMeta(metapage);
	lastpage = BufferIsValid(lastbuf) ? GenericXLogRegisterBuffer(state, lastbuf, 0) : NULL;
	if (BufferIsValid(newbuf))
		target = mih_chain_append(state, newbuf, MIH_PAGE_RETIRED, 0, lastpage,
								  &meta->retired_first, NULL, &meta->retired_last,
								  &meta->retired_pages);
	else
		target = lastpage;
	entries = MihPageGetRetired(target);
	have = MihPageGetNItems(target, sizeof(MihRetiredEntry));
	for (int i = 0; i < meta->nretired; i++)
	{
		entries[have + i].what = meta->retired[i];
		entries[have + i].serial = meta->retired_serial[i];
		entries[have + i].xid = meta->retired_xid[i];
	}
	MihPageSetNItems(target, have + meta->nretired, sizeof(MihRetiredEntry));
	meta->retired_spilled += meta->nretired;
	meta->nretired = 0;
	GenericXLogFinish(state);
	if (BufferIsValid(lastbuf))
		UnlockReleaseBuffer(lastbuf);
	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Append an entry to the metapage's list, on a metapage registered in the
 * caller's GenericXLog record (the merge's swap, which covers the whole
 * metapage struct: mih_meta_cover), after mih_retired_reserve. serial is
 * head's: a run's serial, or the pending page's own. It is stamped with the
 * next XID: every scan that could still reach what it names advertises an
 * xmin no newer.
 */
void
mih_retired_add(MihMetaPageData *meta, BlockNumber head, uint32 serial,
				BlockNumber extent, bool is_run)
{
	int			i = meta->nretired;

	if (i >= MIH_MAX_RETIRED || meta->layout != MIH_META_LAYOUT_XID)
		elog(ERROR, "simhash retired list: no room reserved");
	meta->retired[i].head = head;
	meta->retired[i].extent = extent;
	meta->retired[i].is_run = is_run;
	meta->retired_serial[i] = serial;
	meta->retired_xid[i] = ReadNextFullTransactionId();
	meta->nretired++;
}

/*
 * Can no snapshot still reach what was retired at this stamp? NULL: the
 * horizon of all databases, as nbtree uses for its deleted pages.
 */
static inline bool
stamp_removable(FullTransactionId xid)
{
	return GlobalVisCheckRemovableFullXid(NULL, xid);
}

/*
 * Take the removable prefix of the retired chain's first page (the oldest
 * entries) off the list into todo, in one record with the metapage (locked
 * exclusively by the caller); a page emptied is unlinked and freed in the
 * same record (*more: the next page may hold removable entries too).
 * Returns how many were taken: 0 when the first is not removable yet.
 */
static int
take_from_chain(Relation index, Buffer metabuf, MihRetiredItem *todo, bool *more)
{
	MihMetaPageData *meta = MihPageGetMeta(BufferGetPage(metabuf));
	BlockNumber first = meta->retired_first;
	Buffer		buf = ReadBuffer(index, first);
	GenericXLogState *state;
	Page		page;
	MihRetiredEntry *entries;
	int			n;
	int			k;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	mih_check_page(index, BufferGetPage(buf), first, MIH_PAGE_RETIRED, 0, -1);
	entries = MihPageGetRetired(BufferGetPage(buf));
	n = MihPageGetNItems(BufferGetPage(buf), sizeof(MihRetiredEntry));
	for (k = 0; k < n && stamp_removable(entries[k].xid); k++)
		;
	if (k == 0)
	{
		UnlockReleaseBuffer(buf);
		return 0;
	}
	for (int i = 0; i < k; i++)
	{
		todo[i].what = entries[i].what;
		todo[i].serial = entry_serial(meta, entries[i].serial);
	}
	state = GenericXLogStart(index);
	meta = MihPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	page = GenericXLogRegisterBuffer(state, buf, k == n ? GENERIC_XLOG_FULL_IMAGE : 0);
	meta->retired_spilled -= k;
	if (k == n)
	{
		/* the whole page: unlink it and free it in the same record */
		meta->retired_first = MihPageGetOpaque(page)->next;
		if (meta->retired_first == InvalidBlockNumber)
			meta->retired_last = InvalidBlockNumber;
		meta->retired_pages--;
		mih_init_page(page, MIH_PAGE_FREE, 0, 0);
		*more = true;
	}
	else
	{
		entries = MihPageGetRetired(page);
		memmove(entries, entries + k, (n - k) * sizeof(MihRetiredEntry));
		MihPageSetNItems(page, n - k, sizeof(MihRetiredEntry));
	}
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	if (k == n)
		RecordFreeIndexPage(index, first);
	return k;
}

/*
 * Take the removable prefix of the metapage's retired entries off the list
 * into todo, in one record (the caller holds the metapage exclusively).
 * Returns how many: 0 when the first is not removable yet.
 */
static int
take_from_metapage(Relation index, Buffer metabuf, MihRetiredItem *todo)
{
	MihMetaPageData *meta = MihPageGetMeta(BufferGetPage(metabuf));
	GenericXLogState *state;
	int			n = meta->nretired;
	int			k;

	for (k = 0; k < n && stamp_removable(meta->retired_xid[k]); k++)
		;
	if (k == 0)
		return 0;
	for (int i = 0; i < k; i++)
	{
		todo[i].what = meta->retired[i];
		todo[i].serial = entry_serial(meta, meta->retired_serial[i]);
	}
	state = GenericXLogStart(index);
	meta = MihPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	memmove(meta->retired, meta->retired + k, (n - k) * sizeof(MihRetired));
	memmove(meta->retired_serial, meta->retired_serial + k, (n - k) * sizeof(uint32));
	memmove(meta->retired_xid, meta->retired_xid + k,
			(n - k) * sizeof(FullTransactionId));
	meta->nretired = n - k;
	GenericXLogFinish(state);
	return k;
}

/*
 * Free what no scan can reach any more, oldest first; never waits. Under the
 * merge lock.
 */
void
mih_recycle_retired(Relation index)
{
	bool		freed = false;
	bool		horizon_fresh = false;

	for (;;)
	{
		Buffer		metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
		MihMetaPageData *meta;
		MihRetiredItem todo[Max(MIH_MAX_RETIRED, MIH_RETIRED_PER_PAGE)];
		int			ntodo = 0;
		bool		more = false;

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		mih_meta_update_layout(index, metabuf);
		meta = MihPageGetMeta(BufferGetPage(metabuf));
		if (meta->nretired == 0 && meta->retired_first == InvalidBlockNumber)
		{
			UnlockReleaseBuffer(metabuf);
			break;
		}
		if (!horizon_fresh)
		{
			/*
			 * Recompute the horizon once (as nbtree does before recycling):
			 * the cached one may be older than what is already true.
			 */
			(void) GetOldestNonRemovableTransactionId(NULL);
			horizon_fresh = true;
		}

		if (meta->retired_first != InvalidBlockNumber)
			ntodo = take_from_chain(index, metabuf, todo, &more);
		else
			ntodo = take_from_metapage(index, metabuf, todo);
		if (ntodo == 0)
		{
			UnlockReleaseBuffer(metabuf);
			break;
		}
		/* the list no longer names them, and no scan can reach them: free */
		UnlockReleaseBuffer(metabuf);
		if (simhash_test_fault == SH_FAULT_RECYCLE_BEFORE_FREE)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("simhash.test_fault: recycling stopped before freeing %d retired entries",
							ntodo)));
		for (int i = 0; i < ntodo; i++)
			free_retired(index, &todo[i]);
		freed = true;
		if (!more)
			break;
	}
	/* make the pages findable: searches only see the map's upper levels */
	if (freed)
		IndexFreeSpaceMapVacuum(index);
}

/* Entries on the list, on the metapage and on the chain. */
int64
mih_retired_count(Relation index, const MihMetaPageData *meta)
{
	if (meta->layout != MIH_META_LAYOUT_XID)
		return meta->nretired;
	return meta->nretired + meta->retired_spilled;
}

/*
 * Call fn for every entry of the list (r), and for every page of the chain
 * that holds the older ones (r NULL, chain_page set). Under the merge lock.
 */
void
mih_retired_foreach(Relation index, const MihMetaPageData *meta,
					MihRetiredVisitor fn, void *arg)
{
	if (meta->layout == MIH_META_LAYOUT_XID)
	{
		for (BlockNumber blk = meta->retired_first; blk != InvalidBlockNumber;)
		{
			Buffer		buf = ReadBuffer(index, blk);
			Page		page;
			MihRetiredEntry *entries;
			int			n;
			MihRetiredItem copy[MIH_RETIRED_PER_PAGE];
			BlockNumber next;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			mih_check_page(index, page, blk, MIH_PAGE_RETIRED, 0, -1);
			entries = MihPageGetRetired(page);
			n = MihPageGetNItems(page, sizeof(MihRetiredEntry));
			for (int i = 0; i < n; i++)
			{
				copy[i].what = entries[i].what;
				copy[i].serial = entry_serial(meta, entries[i].serial);
			}
			next = MihPageGetOpaque(page)->next;
			UnlockReleaseBuffer(buf);

			fn(NULL, blk, arg);
			for (int i = 0; i < n; i++)
				fn(&copy[i], InvalidBlockNumber, arg);
			blk = next;
		}
	}
	for (int i = 0; i < meta->nretired; i++)
	{
		MihRetiredItem item;

		item.what = meta->retired[i];
		item.serial = entry_serial(meta, meta->retired_serial[i]);
		fn(&item, InvalidBlockNumber, arg);
	}
}
