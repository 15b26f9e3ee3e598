/*
 * mih_merge_runs.c
 *		The k-way merge of runs and pending entries into a new run, table by
 *		table, and reading a table's leaves in order (the merge's sources).
 *		When to merge and what is the policy of mih_merge_policy.c; the new
 *		run is written by mih_run_write.c and made visible by swap_in.
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

/* ---- reading leaves in order ---- */

void
mih_leaf_iter_begin(MihLeafIter *it, Relation index, BlockNumber first_leaf, uint64 mask)
{
	it->index = index;
	it->mask = mask;
	it->strategy = NULL;
	it->next = first_leaf;
	it->pos = 0;
	it->nitems = 0;
	it->entries = palloc(MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));
}

/*
 * The next entry, dead ones included, or NULL at the end. Each leaf is
 * copied under a short share lock, so a merge reading dozens of runs holds
 * no buffer lock while it writes.
 */
MihEntry *
mih_leaf_iter_next(MihLeafIter *it)
{
	while (it->pos >= it->nitems)
	{
		Buffer		buf;
		Page		page;
		BlockNumber blk = it->next;
		const MihEntry *entries;

		if (it->next == InvalidBlockNumber)
			return NULL;
		if (it->strategy)
			sh_vacuum_delay_point();
		buf = ReadBufferExtended(it->index, MAIN_FORKNUM, it->next, RBM_NORMAL, it->strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (MihPageGetOpaque(page)->type != MIH_PAGE_LEAF)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("simhash index \"%s\": block %u is not a leaf page",
							RelationGetRelationName(it->index), it->next)));
		it->next = MihPageGetOpaque(page)->next;
		entries = mih_leaf_entries(it->index, blk, page, it->mask, it->entries, &it->nitems);
		if (entries != it->entries)
			memcpy(it->entries, entries, it->nitems * sizeof(MihEntry));
		it->pos = 0;
		UnlockReleaseBuffer(buf);
	}
	return &it->entries[it->pos++];
}

void
mih_leaf_iter_end(MihLeafIter *it)
{
	if (it->entries)
		pfree(it->entries);
	it->entries = NULL;
}

/* ---- k-way merge ---- */

typedef struct MergeSource
{
	MihLeafIter it;				/* a run's table, or ... */
	MihEntry   *array;			/* ... a sorted array of extra entries */
	int64		arraypos;
	int64		arraylen;
	HTAB	   *dead;			/* entries dead in any table of the run, if
								 * a bulk delete was cut short on it */
	MihEntry	cur;			/* current head, copied */
} MergeSource;

/* Key of the set of entries that are dead in some table of a run. */
typedef struct DeadKey
{
	SimHash		fp;
	BlockNumber block;
	OffsetNumber offset;
	uint16		pad;			/* zeroed: the key is hashed as bytes */
} DeadKey;

static void
dead_key(DeadKey *key, const MihEntry *e)
{
	ItemPointerData tid = mih_entry_tid(e);

	memset(key, 0, sizeof(*key));
	key->fp = mih_entry_fp(e);
	key->block = ItemPointerGetBlockNumber(&tid);
	key->offset = ItemPointerGetOffsetNumber(&tid);
}

/*
 * A flagged run's dead marks may disagree between its tables: a bulk delete
 * interrupted by a crash, or one marking it right now (mih_bulkdelete, step
 * 2). Before such a run is merged, collect every entry dead in any of its
 * tables, so that the merge drops exactly these from every table (marks made
 * later are ignored, see source_advance) and the new run's tables hold the
 * same entries.
 */
static HTAB *
collect_dead(Relation index, const MihRunHeader *hdr, uint32 tables, const uint64 *masks)
{
	HASHCTL		ctl;
	HTAB	   *dead;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(DeadKey);
	ctl.entrysize = sizeof(DeadKey);
	ctl.hcxt = CurrentMemoryContext;
	dead = hash_create("simhash dead entries", 1024, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (int j = 0; j < hdr->ntables; j++)
	{
		MihLeafIter it;
		MihEntry   *e;

		if (!(tables & (1 << j)))
			continue;
		mih_leaf_iter_begin(&it, index, hdr->first_leaf[j], masks[j]);
		while ((e = mih_leaf_iter_next(&it)) != NULL)
		{
			if (mih_entry_dead(e))
			{
				DeadKey		key;

				dead_key(&key, e);
				hash_search(dead, &key, HASH_ENTER, NULL);
			}
		}
		mih_leaf_iter_end(&it);
		CHECK_FOR_INTERRUPTS();
	}
	return dead;
}

typedef struct MergeState
{
	MergeSource *sources;
	uint64		mask;
} MergeState;

static bool
source_advance(MergeSource *s)
{
	for (;;)
	{
		MihEntry   *e;

		if (s->array)
		{
			if (s->arraypos >= s->arraylen)
				return false;
			e = &s->array[s->arraypos++];
		}
		else
		{
			e = mih_leaf_iter_next(&s->it);
			if (e == NULL)
				return false;
		}
		if (s->dead)
		{
			DeadKey		key;

			/*
			 * A flagged run: an entry goes if it was dead in any table when
			 * the merge began, whatever its mark here. A bulk delete may be
			 * marking this run meanwhile (mih_bulkdelete, step 2), so a mark
			 * read now may be missing from a table read earlier; an entry
			 * marked since is copied live into every table, and the new
			 * run, flagged, asks VACUUM's callback in each of them.
			 */
			dead_key(&key, e);
			if (hash_search(s->dead, &key, HASH_FIND, NULL) != NULL)
				continue;
			s->cur = *e;
			s->cur.tid.ip_posid &= ~MIH_DEAD_FLAG;
			return true;
		}
		if (mih_entry_dead(e))
			continue;			/* dead entries are dropped */
		s->cur = *e;
		return true;
	}
}

static int
merge_heap_cmp(Datum a, Datum b, void *arg)
{
	MergeState *ms = (MergeState *) arg;

	/* binaryheap keeps the largest on top: invert */
	return -mih_entry_cmp(&ms->sources[DatumGetInt32(a)].cur,
						  &ms->sources[DatumGetInt32(b)].cur, &ms->mask);
}

/*
 * Merge runs and extra (unsorted) entries into one new run serving the
 * tables named (a bit each), dropping dead entries. run_tables[r] says which
 * tables run r still serves; table j of the new run is merged from the runs
 * that serve j, so the caller must pick runs that, for every table written,
 * between them hold the same entries: runs that all serve those tables, or
 * every run of the index (see mih_merge_policy.c). extra joins only a run that
 * serves every table. Returns the new run's header block, or
 * InvalidBlockNumber when no live entry is left. The new run is flagged
 * MIH_RUN_VACUUMING when one of the runs was. From VACUUM, the runs are read
 * through its buffer ring and paced by its cost limit (vacuum_strategy).
 */
BlockNumber
mih_merge_runs(Relation index, int nblocks, const uint64 *masks,
			   const BlockNumber *runs, const uint32 *run_tables, int nruns,
			   MihEntry *extra, int64 nextra, uint32 tables, uint64 serial, bool wal,
			   bool compact, int64 *nentries, BufferAccessStrategy vacuum_strategy)
{
	MihRunWriter *w;
	MihRunHeader *hdrs = palloc(Max(nruns, 1) * sizeof(MihRunHeader));
	int			nsources = nruns + (nextra > 0 ? 1 : 0);
	MergeSource *sources = palloc0(Max(nsources, 1) * sizeof(MergeSource));
	MergeState	ms;
	binaryheap *heap;
	bool		flagged = false;
	int			skewed = -1;

	Assert(nextra == 0 || tables == MIH_ALL_TABLES(nblocks));
	for (int r = 0; r < nruns; r++)
	{
		mih_read_run_header(index, runs[r], MIH_ANY_SERIAL, &hdrs[r]);
		if (hdrs[r].flags & MIH_RUN_VACUUMING)
		{
			sources[r].dead = collect_dead(index, &hdrs[r], run_tables[r], masks);
			flagged = true;
		}
	}

	ms.sources = sources;
	heap = binaryheap_allocate(Max(nsources, 1), merge_heap_cmp, &ms);

	/*
	 * A test drops every entry of one table as if each were dead there and
	 * live in the others: the first table the merge writes, or the last
	 * (when that is another), so that the tables disagree (index_skew).
	 */
	if (simhash_test_fault == SH_FAULT_MERGE_SKEW_FIRST)
		skewed = pg_rightmost_one_pos32(tables);
	else if (simhash_test_fault == SH_FAULT_MERGE_SKEW_LATER &&
			 pg_leftmost_one_pos32(tables) != pg_rightmost_one_pos32(tables))
		skewed = pg_leftmost_one_pos32(tables);

	/*
	 * Every table written is opened and ended, empty ones too, so that the
	 * writer compares every table's size with the first's; "nothing live"
	 * is decided only once all tables agree they are empty. Tables that
	 * disagree mean the sources' marks already did, and the writer raises
	 * the corruption error before anything is swapped in.
	 */
	w = mih_run_writer_begin(index, nblocks, masks, serial, wal, compact);
	for (int j = 0; j < nblocks; j++)
	{
		int64		written = 0;

		if (!(tables & (1 << j)))
			continue;
		ms.mask = masks[j];
		binaryheap_reset(heap);
		for (int s = 0; s < nsources; s++)
		{
			MergeSource *src = &sources[s];

			if (s < nruns)
			{
				src->array = NULL;
				if (!(run_tables[s] & (1 << j)))
					continue;	/* its entries come from runs serving j */
				mih_leaf_iter_begin(&src->it, index, hdrs[s].first_leaf[j], masks[j]);
				src->it.strategy = vacuum_strategy;
			}
			else
			{
				mih_sort_entries(extra, nextra, masks[j]);
				src->array = extra;
				src->arraypos = 0;
				src->arraylen = nextra;
			}
			if (source_advance(src))
				binaryheap_add_unordered(heap, Int32GetDatum(s));
		}
		binaryheap_build(heap);

		mih_run_writer_table(w, j);
		while (!binaryheap_empty(heap))
		{
			int			s = DatumGetInt32(binaryheap_first(heap));
			MergeSource *src = &sources[s];

			if (j != skewed)	/* else the test fault drops it here only */
				mih_run_writer_add(w, mih_entry_fp(&src->cur), &src->cur.tid);
			written++;
			if ((written & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			if (source_advance(src))
				binaryheap_replace_first(heap, Int32GetDatum(s));
			else
				binaryheap_remove_first(heap);
		}
		for (int s = 0; s < nruns; s++)
			if (run_tables[s] & (1 << j))
				mih_leaf_iter_end(&sources[s].it);
		mih_run_writer_end_table(w);
		/* a test stops a merge of a flagged run between tables (TAP 022) */
		if (flagged && simhash_test_fault == SH_FAULT_MERGE_PAUSE)
			sh_test_pause(SH_FAULT_MERGE_PAUSE);
	}
	binaryheap_free(heap);
	for (int r = 0; r < nruns; r++)
		if (sources[r].dead)
			hash_destroy(sources[r].dead);
	pfree(sources);
	pfree(hdrs);
	if (mih_run_writer_entries(w) == 0)
	{
		/* nothing live at all, in every table alike: no pages were taken */
		mih_run_writer_discard(w);
		if (nentries)
			*nentries = 0;
		return InvalidBlockNumber;
	}
	if (flagged)
		mih_run_writer_flag(w, MIH_RUN_VACUUMING);
	return mih_run_writer_finish(w, nentries);
}
