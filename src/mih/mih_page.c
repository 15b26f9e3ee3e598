/*
 * mih_page.c
 *		Page utilities of the simhash index: page initialisation, getting a
 *		new page (recycled or by extension), the metapage and options.
 */
#include "mih.h"
#include "test_fault.h"

#include "access/reloptions.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"

void
mih_init_page(Page page, uint16 type, uint16 table, uint16 level)
{
	MihPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(MihPageOpaqueData));
	opaque = MihPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->serial = 0;
	opaque->next_serial = 0;
	opaque->type = type;
	opaque->table = table;
	opaque->level = level;
	opaque->page_id = MIH_PAGE_ID;
}

/*
 * A new, exclusively locked buffer: a page the free space map offers if it
 * really is free (the map is only a hint), else a new page at the end.
 * The caller initialises it.
 */
Buffer
mih_new_buffer(Relation index)
{
	Buffer		buf;
	bool		needLock;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);
		Page		page;

		if (blkno == InvalidBlockNumber)
			break;
		buf = ReadBuffer(index, blkno);
		/* someone else may have taken it: only a conditional lock */
		if (ConditionalLockBuffer(buf))
		{
			page = BufferGetPage(buf);
			if (PageIsNew(page) ||
				(MihPageGetOpaque(page)->type == MIH_PAGE_FREE))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	needLock = !RELATION_IS_LOCAL(index);
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/*
 * Default bit masks: bit i belongs to block i mod m. Interleaving rather
 * than contiguous ranges spreads the common skew of real fingerprints (many
 * documents sharing the same top bits) over all blocks, so no block value
 * collects a large share of the rows.
 */
void
mih_default_masks(int nblocks, uint64 *masks)
{
	for (int j = 0; j < nblocks; j++)
	{
		masks[j] = 0;
		for (int i = j; i < SIMHASH_BITS; i += nblocks)
			masks[j] |= UINT64CONST(1) << i;
	}
}

void
mih_init_metapage(Page page, int nblocks)
{
	MihMetaPageData *meta;

	mih_init_page(page, MIH_PAGE_META, 0, 0);
	meta = MihPageGetMeta(page);
	memset(meta, 0, sizeof(MihMetaPageData));
	meta->magic = MIH_MAGIC;
	meta->version = MIH_VERSION;
	meta->nblocks = nblocks;
	mih_default_masks(nblocks, meta->masks);
	meta->pending_head = InvalidBlockNumber;
	meta->pending_tail = InvalidBlockNumber;
	meta->next_serial = 1;
	if (simhash_test_fault == SH_FAULT_OLD_METAPAGE)
	{
		/* as extension 0.1.0 wrote it: on-disk version 1, the appended fields absent */
		meta->version = MIH_VERSION_PLAIN;
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) +
			offsetof(MihMetaPageData, layout);
		return;
	}
	meta->layout = MIH_META_LAYOUT_XID;
	meta->flags = MIH_META_INDEXES_NULLS;
	meta->retired_first = InvalidBlockNumber;
	meta->retired_last = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMetaPageData);
	if (simhash_test_fault == SH_FAULT_V2_METAPAGE)
	{
		/* as extension 0.3.0 wrote it: version 2, without retired_serial[] */
		meta->version = MIH_VERSION_COMPACT;
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) +
			offsetof(MihMetaPageData, retired_serial);
	}
}

/*
 * Make pd_lower cover the whole metapage struct before fields appended since
 * the page was written are set: GenericXLog neither logs nor keeps what lies
 * between pd_lower and pd_upper (it zeroes that hole).
 */
void
mih_meta_cover(Page metapage)
{
	uint16		full = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihMetaPageData);

	if (((PageHeader) metapage)->pd_lower < full)
		((PageHeader) metapage)->pd_lower = full;
}

/*
 * An ordered scan, or one returning every row, needs the NULL entries that
 * indexes built before them lack: stop rather than leave those rows out.
 */
void
mih_require_null_entries(Relation index, const MihMetaPageData *meta)
{
	if (meta->layout != MIH_META_LAYOUT_XID || !(meta->flags & MIH_META_INDEXES_NULLS))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash index \"%s\" was built before ordered scans existed",
						RelationGetRelationName(index)),
				 errdetail("It has no entries for rows whose fingerprint is NULL, which ORDER BY must return."),
				 errhint("REINDEX the index.")));
}

void
mih_check_metapage(Relation index, Page metapage)
{
	MihMetaPageData *meta = MihPageGetMeta(metapage);

	if (MihPageGetOpaque(metapage)->type != MIH_PAGE_META ||
		meta->magic != MIH_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a simhash index",
						RelationGetRelationName(index))));
	if (meta->version < MIH_VERSION_PLAIN || meta->version > MIH_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("simhash index \"%s\" has on-disk version %u, expected %u to %u",
						RelationGetRelationName(index), meta->version, MIH_VERSION_PLAIN,
						MIH_VERSION),
				 errhint("REINDEX the index.")));
}

/*
 * Is a page the one a link promised: its type, the serial of its run (or,
 * on the pending list, its own serial as the previous page recorded it) and
 * its table (any when table < 0)?
 */
bool
mih_page_is(Page page, uint16 type, uint32 serial, int table)
{
	MihPageOpaque opaque = MihPageGetOpaque(page);

	return !PageIsNew(page) && opaque->page_id == MIH_PAGE_ID && opaque->type == type &&
		opaque->serial == serial && (table < 0 || opaque->table == table);
}

/*
 * A query on a hot standby reached a page the primary recycled: a merge
 * replayed from the primary freed pages an old query still walks. The
 * primary frees retired pages once no snapshot of its own can still hold the
 * old metapage (a transaction ID horizon), which includes the standby's
 * queries only with hot_standby_feedback, and generic WAL raises no recovery
 * conflict. The query is cancelled as a recovery conflict would cancel it.
 */
static void
report_recycled(Relation index, BlockNumber blk)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("canceling statement: simhash index \"%s\" was reorganised under it",
					RelationGetRelationName(index)),
			 errdetail("Block %u was recycled on the primary while this query still needed it.",
					   blk),
	/*
	 * the primary recycles once no snapshot it knows of can reach a page;
	 * standby snapshots it knows only by feedback
	 */
			 errhint("Retry the query. With hot_standby_feedback = on, the primary keeps the pages that standby queries still read.")));
}

/*
 * Check that a page a scan reached is the one it expects (mih_page_is). On
 * a hot standby the page may have been recycled under an old query
 * (report_recycled); on a primary it is corruption.
 */
void
mih_check_page(Relation index, Page page, BlockNumber blk, uint16 type,
			   uint32 serial, int table)
{
	MihPageOpaque opaque = MihPageGetOpaque(page);

	if (mih_page_is(page, type, serial, table))
		return;
	if (RecoveryInProgress())
		report_recycled(index, blk);
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("simhash index \"%s\" is corrupted: block %u is not the page expected",
					RelationGetRelationName(index), blk),
			 errdetail("Found type %u, serial %u, table %u; expected type %u, serial %u.",
					   PageIsNew(page) ? 0 : opaque->type, PageIsNew(page) ? 0 : opaque->serial,
					   PageIsNew(page) ? 0 : opaque->table, type, serial)));
}

/* GUC simhash.standby_scan_restarts */
int			mih_standby_scan_restarts = 3;

/*
 * Set by mih_scan_restartable while a standby scan can start again, and by
 * mih_check_scan_page when it ends such a scan's step: see there.
 */
static bool restart_armed = false;
static bool restart_thrown = false;

/*
 * mih_check_page for a page a scan reads with buf share-locked and no other
 * buffer locked or pinned (every scan reads one page at a time): when the
 * page was recycled under a standby scan that can start again
 * (mih_scan_restartable), the buffer is released first, so that the scan
 * can catch the error without the transaction's error recovery.
 */
void
mih_check_scan_page(Relation index, Buffer buf, BlockNumber blk, uint16 type,
					uint32 serial, int table)
{
	Page		page = BufferGetPage(buf);

	if (likely(mih_page_is(page, type, serial, table)))
		return;
	if (restart_armed && RecoveryInProgress())
	{
		UnlockReleaseBuffer(buf);
		restart_thrown = true;
		report_recycled(index, blk);
	}
	mih_check_page(index, page, blk, type, serial, table);
}

/*
 * Run one step of a scan on a hot standby (step(arg), its answer in
 * *result) so that a page recycled under it (mih_check_scan_page) ends the
 * step with false instead of an error; the caller then starts the scan
 * again from the current metapage (src/mih/README, "Reading"). Any other
 * error goes on. Catching it without a subtransaction is safe because the
 * error leaves nothing behind that the step took: the page checks release
 * their buffer before they report (no other buffer lock or pin is held
 * between a scan's pages), the memory is the scan's, and a summary pin of
 * the backend's cache left by the step is dropped at the transaction's
 * end (mih_cache.c).
 */
bool
mih_scan_restartable(bool (*step) (void *arg), void *arg, bool *result)
{
	MemoryContext cxt = CurrentMemoryContext;
	uint32		holdoff = InterruptHoldoffCount;
	uint32		cancel_holdoff = QueryCancelHoldoffCount;
	volatile bool recycled = false;

	Assert(!restart_armed);
	restart_armed = true;
	restart_thrown = false;
	PG_TRY();
	{
		*result = step(arg);
	}
	PG_CATCH();
	{
		restart_armed = false;
		if (!restart_thrown || geterrcode() != ERRCODE_T_R_SERIALIZATION_FAILURE)
			PG_RE_THROW();
		/* errfinish zeroed these; the step began with the caller's */
		InterruptHoldoffCount = holdoff;
		QueryCancelHoldoffCount = cancel_holdoff;
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		recycled = true;
	}
	PG_END_TRY();
	restart_armed = false;
	restart_thrown = false;
	return !recycled;
}

/*
 * Check that the metapage's pending tail is what inserts may append to: a
 * pending page with nothing after it. The metapage keeps no serial for the
 * tail, so this is the check inserts and the seal of a flush can make; a
 * tail that is anything else (a page reused while still linked) is reported
 * instead of linked from.
 */
void
mih_check_pending_tail(Relation index, Page page, BlockNumber blk)
{
	MihPageOpaque opaque = MihPageGetOpaque(page);

	if (!PageIsNew(page) && opaque->page_id == MIH_PAGE_ID &&
		opaque->type == MIH_PAGE_PENDING && opaque->next == InvalidBlockNumber)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("simhash index \"%s\" is corrupted: pending tail block %u is not the last pending page",
					RelationGetRelationName(index), blk),
			 errdetail("Found type %u, serial %u, next block %u.",
					   PageIsNew(page) ? 0 : opaque->type, PageIsNew(page) ? 0 : opaque->serial,
					   PageIsNew(page) ? InvalidBlockNumber : opaque->next),
			 errhint("REINDEX the index.")));
}

/*
 * Copy the header of the run at blk, checking under the lock that the page
 * is a run header and, when serial is not MIH_ANY_SERIAL, that it is the
 * run the caller's link named (see mih_check_page).
 */
void
mih_read_run_header(Relation index, BlockNumber blk, int64 serial, MihRunHeader *hdr)
{
	Buffer		buf = ReadBuffer(index, blk);
	Page		page = BufferGetPage(buf);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	mih_check_scan_page(index, buf, blk, MIH_PAGE_RUNHEAD,
				   serial == MIH_ANY_SERIAL ? (PageIsNew(page) ? 0 : MihPageGetOpaque(page)->serial)
				   : (uint32) serial, -1);
	memcpy(hdr, MihPageGetRunHeader(page), sizeof(MihRunHeader));
	UnlockReleaseBuffer(buf);
}

/* Mark a page free (WAL-logged) and tell the free space map. */
void
mih_mark_free(Relation index, Buffer buf)
{
	GenericXLogState *state = GenericXLogStart(index);
	Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

	mih_init_page(page, MIH_PAGE_FREE, 0, 0);
	GenericXLogFinish(state);
	RecordFreeIndexPage(index, BufferGetBlockNumber(buf));
}

/* ---- reloptions ---- */

static relopt_kind mih_relopt_kind;
static bool mih_relopts_ready = false;

static void
mih_init_reloptions(void)
{
	if (mih_relopts_ready)
		return;
	mih_relopt_kind = add_reloption_kind();
	add_int_reloption(mih_relopt_kind, "blocks",
					  "Number of blocks (tables) the 64 bits are split into",
					  MIH_DEFAULT_BLOCKS, MIH_MIN_BLOCKS, MIH_MAX_BLOCKS,
					  AccessExclusiveLock);
	add_int_reloption(mih_relopt_kind, "pending_limit",
					  "Entries in the pending list before it is merged into a run",
					  MIH_DEFAULT_PENDING_LIMIT, MIH_MIN_PENDING_LIMIT,
					  MIH_MAX_PENDING_LIMIT, ShareUpdateExclusiveLock);
	mih_relopts_ready = true;
}

bytea *
mih_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"blocks", RELOPT_TYPE_INT, offsetof(MihOptions, blocks)},
		{"pending_limit", RELOPT_TYPE_INT, offsetof(MihOptions, pending_limit)},
	};

	mih_init_reloptions();
	return (bytea *) build_reloptions(reloptions, validate, mih_relopt_kind,
									  sizeof(MihOptions), tab, lengthof(tab));
}

MihOptions *
mih_get_options(Relation index)
{
	static MihOptions defaults = {0, MIH_DEFAULT_BLOCKS, MIH_DEFAULT_PENDING_LIMIT};

	if (index->rd_options)
		return (MihOptions *) index->rd_options;
	return &defaults;
}

/*
 * Chain a new page after the last page of a list kept in the metapage (the
 * pending list, the retired chain), inside the caller's GenericXLog record,
 * which holds the metapage and the last page (lastpage, NULL when the list
 * is empty): newbuf, from mih_new_buffer, becomes a page of that type and
 * serial, linked from the last page (with its serial) or named as the
 * list's first (and first_serial, when the list keeps one), and the list's
 * last. The one copy of this step for inserts, the flush's seal and the
 * retired chain.
 */
Page
mih_chain_append(GenericXLogState *state, Buffer newbuf, uint16 type, uint32 serial,
				 Page lastpage, BlockNumber *first, uint32 *first_serial,
				 BlockNumber *last, uint32 *npages)
{
	Page		page = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
	BlockNumber blk = BufferGetBlockNumber(newbuf);

	mih_init_page(page, type, 0, 0);
	MihPageGetOpaque(page)->serial = serial;
	if (lastpage)
	{
		MihPageGetOpaque(lastpage)->next = blk;
		MihPageGetOpaque(lastpage)->next_serial = serial;
	}
	else
	{
		*first = blk;
		if (first_serial)
			*first_serial = serial;
	}
	*last = blk;
	(*npages)++;
	return page;
}

/*
 * The leaf of table j of a run where entries with key >= v (masked) start,
 * from the root, checking each inner page is the run's. Used by the radius
 * scan (mih_scan_visit.c), the nearest-neighbour search (mih_knn.c) and the
 * cache (mih_cache.c).
 */
BlockNumber
mih_descend(Relation index, const MihRunHeader *hdr, int table, uint64 v)
{
	BlockNumber blk = hdr->root[table];

	for (int level = hdr->height[table]; level > 0; level--)
	{
		Buffer		buf = ReadBuffer(index, blk);
		Page		page;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_scan_page(index, buf, blk, MIH_PAGE_INNER, (uint32) hdr->serial, table);
		blk = mih_inner_child(MihPageGetInner(page), MihPageGetNItems(page, sizeof(MihInnerItem)), v);
		UnlockReleaseBuffer(buf);
	}
	return blk;
}
