/*
 * mih_run_write.c
 *		Writing a run of the simhash index from a sorted stream of entries,
 *		table by table (the run writer), and the sort order of entries.
 *		The k-way merge that feeds it is in mih_merge_runs.c.
 *
 * A run is written completely before one WAL-logged metapage update makes it
 * visible (mih_merge_policy.c); what it replaces is retired and recycled later
 * (mih_recycle.c).
 */
#include "mih.h"
#include "test_fault.h"

#include "commands/vacuum.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

/* ---- sorting entries by (fp & mask, fp, tid) ---- */

#define ST_SORT mih_sort_entries_internal
#define ST_ELEMENT_TYPE MihEntry
#define ST_COMPARE(a, b, arg) mih_entry_cmp(a, b, arg)
#define ST_COMPARE_ARG_TYPE uint64
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

void
mih_sort_entries(MihEntry *entries, int64 n, uint64 mask)
{
	mih_sort_entries_internal(entries, n, &mask);
}

/* ---- the run writer ---- */

/*
 * Pages are built in local memory and each is written, and WAL-logged, in
 * one short step once it is complete (as nbtsort does): no buffer lock is
 * held between pages, so a long merge or build answers cancel requests,
 * statement_timeout and shutdown between any two pages. A leaf's right
 * sibling must be known before the leaf is written, so the next block is
 * reserved first (taken from the free space map or by extending the
 * relation, and stamped reserved); a block reserved and never written,
 * because an error or a crash came first, is reclaimed by VACUUM like any
 * unreachable page.
 */
struct MihRunWriter
{
	Relation	index;
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	bool		wal;
	uint64		serial;			/* of the run: every page carries it */

	MihRunHeader hdr;
	int64		nentries_table; /* entries written to the current table */
	bool		counted;		/* hdr.nentries set by the first table written */
	int			counted_table;	/* which table that was */

	/* the page being filled, and the block it will be written to */
	PGAlignedBlock cur;
	BlockNumber curblk;			/* InvalidBlockNumber: no page open */
	int64		pages_written;

	/*
	 * The open leaf's entries, laid out when it is closed: compact when the
	 * index allows it and that format holds them all (mih_leaf.h), plain
	 * otherwise. An entry joins the leaf while either format still holds it.
	 */
	bool		compact;
	MihEntry   *leaf;
	int			nleaf;
	MihLeafSizer sizer;

	/* first key and block of every page of the level being written */
	uint64	   *keys;
	BlockNumber *blocks;
	int64		nkeys;
	int64		capkeys;
	int			table;
	bool		fault_done;		/* simhash.test_fault = fsm_twice fired */
};

/*
 * A block for the next page, stamped MIH_PAGE_RESERVED with the run's serial
 * before it is unlocked. The free space map is only a hint and may hand the
 * same block to another backend (GetFreeIndexPage searches under a share
 * lock and records the block used afterwards); mih_new_buffer gives out only
 * pages that are free under their lock, so the stamp is what keeps an insert
 * from taking this block while the writer fills it in local memory. The
 * stamp is WAL-logged like any page change; a reservation never written
 * (an error or a crash came first) is garbage to VACUUM (reclaim_pages).
 */
static BlockNumber
writer_reserve_block(MihRunWriter *w)
{
	Buffer		buf = mih_new_buffer(w->index);
	BlockNumber blk = BufferGetBlockNumber(buf);
	Page		page;

	if (w->wal)
	{
		GenericXLogState *state = GenericXLogStart(w->index);

		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		mih_init_page(page, MIH_PAGE_RESERVED, 0, 0);
		MihPageGetOpaque(page)->serial = (uint32) w->serial;
		GenericXLogFinish(state);
	}
	else
	{
		/* CREATE INDEX: the whole file is logged when the build ends */
		page = BufferGetPage(buf);
		mih_init_page(page, MIH_PAGE_RESERVED, 0, 0);
		MihPageGetOpaque(page)->serial = (uint32) w->serial;
		MarkBufferDirty(buf);
	}
	UnlockReleaseBuffer(buf);
	if (simhash_test_fault == SH_FAULT_FSM_TWICE && w->wal && !w->fault_done)
	{
		/* the map hands this block out once more (see module.c) */
		w->fault_done = true;
		RecordFreeIndexPage(w->index, blk);
		IndexFreeSpaceMapVacuum(w->index);
		sh_test_pause(SH_FAULT_FSM_TWICE);
	}
	return blk;
}

/* Start a new page in local memory, at blk (or a block reserved now). */
static void
writer_open_page(MihRunWriter *w, uint16 type, uint16 level, BlockNumber blk)
{
	Page		page = (Page) w->cur.data;

	w->curblk = (blk != InvalidBlockNumber) ? blk : writer_reserve_block(w);
	mih_init_page(page, type, (uint16) w->table, level);
	MihPageGetOpaque(page)->serial = (uint32) w->serial;
	w->hdr.npages++;
}

/* Write the finished page to its block: one lock, one WAL record. */
static void
writer_close_page(MihRunWriter *w)
{
	Buffer		buf = ReadBuffer(w->index, w->curblk);

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	/* still our reservation: nobody took the block meanwhile */
	mih_check_page(w->index, BufferGetPage(buf), w->curblk, MIH_PAGE_RESERVED,
				   (uint32) w->serial, -1);
	if (w->wal)
	{
		GenericXLogState *state = GenericXLogStart(w->index);
		Page		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);

		memcpy(page, w->cur.data, BLCKSZ);
		GenericXLogFinish(state);
	}
	else
	{
		memcpy(BufferGetPage(buf), w->cur.data, BLCKSZ);
		MarkBufferDirty(buf);
	}
	UnlockReleaseBuffer(buf);
	w->curblk = InvalidBlockNumber;
	w->pages_written++;
	if (simhash_test_fault == SH_FAULT_MERGE_MIDWAY && w->wal && w->pages_written == 4)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash.test_fault: merge stopped after writing %lld pages",
						(long long) w->pages_written)));
	CHECK_FOR_INTERRUPTS();
}

static void
writer_remember(MihRunWriter *w, uint64 key, BlockNumber blk)
{
	if (w->nkeys == w->capkeys)
	{
		w->capkeys *= 2;
		w->keys = repalloc_huge(w->keys, w->capkeys * sizeof(uint64));
		w->blocks = repalloc_huge(w->blocks, w->capkeys * sizeof(BlockNumber));
	}
	w->keys[w->nkeys] = key;
	w->blocks[w->nkeys] = blk;
	w->nkeys++;
}

MihRunWriter *
mih_run_writer_begin(Relation index, int nblocks, const uint64 *masks, uint64 serial,
					 bool wal, bool compact)
{
	MihRunWriter *w = palloc0(sizeof(MihRunWriter));

	w->compact = compact;
	w->leaf = palloc(MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));

	w->serial = serial;
	w->index = index;
	w->nblocks = nblocks;
	memcpy(w->masks, masks, nblocks * sizeof(uint64));
	w->wal = wal;
	w->hdr.ntables = nblocks;
	w->capkeys = 1024;
	w->keys = palloc(w->capkeys * sizeof(uint64));
	w->blocks = palloc(w->capkeys * sizeof(BlockNumber));
	w->curblk = InvalidBlockNumber;
	for (int j = 0; j < MIH_MAX_BLOCKS; j++)
	{
		w->hdr.root[j] = InvalidBlockNumber;
		w->hdr.first_leaf[j] = InvalidBlockNumber;
	}
	return w;
}

void
mih_run_writer_table(MihRunWriter *w, int table)
{
	w->table = table;
	w->nkeys = 0;
	w->nentries_table = 0;
}

/*
 * Lay the open leaf's entries out on its page, linked to next: compact only
 * when they are more than a plain leaf holds, so that a run whose values
 * rarely repeat stays plain throughout, with the places of its values
 * computable (mih_cache_pos.c).
 */
static void
writer_lay_out_leaf(MihRunWriter *w, BlockNumber next)
{
	Page		page = (Page) w->cur.data;

	if (w->nleaf > MIH_ENTRIES_PER_PAGE)
	{
		Assert(w->compact && mih_leaf_sizer_holds(&w->sizer));
		mih_leaf_write_compact(page, w->leaf, w->nleaf, w->masks[w->table], &w->sizer);
		w->hdr.flags |= MIH_RUN_COMPACT;
	}
	else
	{
		Assert(w->nleaf <= MIH_ENTRIES_PER_PAGE);
		memcpy(MihPageGetEntries(page), w->leaf, w->nleaf * sizeof(MihEntry));
		MihPageSetNItems(page, w->nleaf, sizeof(MihEntry));
	}
	MihPageGetOpaque(page)->next = next;
}

static void
writer_start_leaf(MihRunWriter *w)
{
	w->nleaf = 0;
	mih_leaf_sizer_reset(&w->sizer, w->masks[w->table]);
}

/* Append the next entry of the current table (entries come sorted). */
void
mih_run_writer_add(MihRunWriter *w, SimHash fp, ItemPointer tid)
{
	uint64		key = fp & w->masks[w->table];

	if (w->curblk == InvalidBlockNumber)
	{
		writer_open_page(w, MIH_PAGE_LEAF, 0, InvalidBlockNumber);
		w->hdr.first_leaf[w->table] = w->curblk;
		writer_start_leaf(w);
	}
	else if (w->nleaf >= MIH_ENTRIES_PER_PAGE &&
			 !(w->compact && mih_leaf_sizer_fits(&w->sizer, key, tid)))
	{
		/* full: write it, chained to the next leaf's block */
		BlockNumber next = writer_reserve_block(w);

		writer_lay_out_leaf(w, next);
		writer_close_page(w);
		writer_open_page(w, MIH_PAGE_LEAF, 0, next);
		writer_start_leaf(w);
	}
	if (w->nleaf == 0)
		writer_remember(w, key, w->curblk);
	mih_entry_set(&w->leaf[w->nleaf++], fp, tid);
	if (w->compact)
		mih_leaf_sizer_add(&w->sizer, key, tid);
	w->nentries_table++;
}

/* Close the last leaf and build the inner levels bottom-up. */
void
mih_run_writer_end_table(MihRunWriter *w)
{
	uint16		level = 0;

	if (w->curblk != InvalidBlockNumber)
	{
		writer_lay_out_leaf(w, InvalidBlockNumber);
		writer_close_page(w);
	}
	/*
	 * Every table of a run holds the same entries: a writer that was given
	 * different ones (a merge reading marks that changed under it) stops
	 * here, before the run is swapped in, instead of leaving an index that
	 * simhash_index_verify reports corrupted.
	 */
	if (!w->counted)
	{
		w->hdr.nentries = w->nentries_table;
		w->counted_table = w->table;
	}
	else if (w->hdr.nentries != w->nentries_table)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("simhash index \"%s\": a new run's tables would hold different entries (table %d: %lld, table %d: %lld)",
						RelationGetRelationName(w->index), w->counted_table,
						(long long) w->hdr.nentries, w->table, (long long) w->nentries_table),
				 errdetail("Every table of a run holds the same entries; the runs merged disagree in their dead marks. The index is unchanged; the run is not written."),
				 errhint("REINDEX the index.")));
	w->counted = true;

	while (w->nkeys > 1)
	{
		int64		nchildren = w->nkeys;
		uint64	   *keys = w->keys;
		BlockNumber *blocks = w->blocks;
		int64		i = 0;

		level++;
		w->capkeys = Max(1024, nchildren / MIH_INNER_PER_PAGE + 1);
		w->keys = palloc(w->capkeys * sizeof(uint64));
		w->blocks = palloc(w->capkeys * sizeof(BlockNumber));
		w->nkeys = 0;
		while (i < nchildren)
		{
			int			n = (int) Min(nchildren - i, MIH_INNER_PER_PAGE);
			MihInnerItem *items;

			writer_open_page(w, MIH_PAGE_INNER, level, InvalidBlockNumber);
			items = MihPageGetInner((Page) w->cur.data);
			for (int k = 0; k < n; k++)
			{
				memcpy(items[k].key, &keys[i + k], sizeof(uint64));
				items[k].child = blocks[i + k];
			}
			MihPageSetNItems((Page) w->cur.data, n, sizeof(MihInnerItem));
			writer_remember(w, keys[i], w->curblk);
			writer_close_page(w);
			i += n;
		}
		pfree(keys);
		pfree(blocks);
	}
	w->hdr.height[w->table] = level;
	w->hdr.root[w->table] = (w->nkeys == 1) ? w->blocks[0] : InvalidBlockNumber;
}

/* The entries of each table written so far (0 before the first ends). */
int64
mih_run_writer_entries(MihRunWriter *w)
{
	return w->counted ? w->hdr.nentries : 0;
}

/*
 * Drop a writer that wrote no entry (a merge that found nothing live):
 * it took no block, so there is nothing to release but its memory.
 */
void
mih_run_writer_discard(MihRunWriter *w)
{
	Assert(w->pages_written == 0 && w->curblk == InvalidBlockNumber);
	pfree(w->keys);
	pfree(w->blocks);
	pfree(w->leaf);
	pfree(w);
}

/* Set flags (MIH_RUN_*) in the header the writer will write. */
void
mih_run_writer_flag(MihRunWriter *w, uint32 flags)
{
	w->hdr.flags |= flags;
}

/* Write the run header; returns its block. */
BlockNumber
mih_run_writer_finish(MihRunWriter *w, int64 *nentries)
{
	BlockNumber blk;

	w->table = 0;
	writer_open_page(w, MIH_PAGE_RUNHEAD, 0, InvalidBlockNumber);
	w->hdr.serial = w->serial;
	memcpy(MihPageGetRunHeader((Page) w->cur.data), &w->hdr, sizeof(MihRunHeader));
	((PageHeader) w->cur.data)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihRunHeader);
	blk = w->curblk;
	writer_close_page(w);
	if (nentries)
		*nentries = w->hdr.nentries;
	pfree(w->keys);
	pfree(w->blocks);
	pfree(w->leaf);
	pfree(w);
	return blk;
}

/* Write a run from an array of live entries (sorted here, once per table). */
BlockNumber
mih_write_run_from_array(Relation index, int nblocks, const uint64 *masks,
						 MihEntry *entries, int64 n, uint64 serial, bool wal, bool compact)
{
	MihRunWriter *w = mih_run_writer_begin(index, nblocks, masks, serial, wal, compact);

	for (int j = 0; j < nblocks; j++)
	{
		mih_sort_entries(entries, n, masks[j]);
		mih_run_writer_table(w, j);
		for (int64 i = 0; i < n; i++)
			mih_run_writer_add(w, mih_entry_fp(&entries[i]), &entries[i].tid);
		mih_run_writer_end_table(w);
		CHECK_FOR_INTERRUPTS();
	}
	return mih_run_writer_finish(w, NULL);
}
