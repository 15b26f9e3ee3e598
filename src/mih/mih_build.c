/*
 * mih_build.c
 *		CREATE INDEX for the simhash index: one run holding every row.
 *
 * (fingerprint, TID) pairs are collected in memory; when they fit in
 * maintenance_work_mem they are sorted there, once per table, and written.
 * Beyond that they go to one tuplesort per table (each ordered by that
 * table's key), which spills to temporary files, never to the index: the
 * index is written once, at its final size, whatever the memory.
 *
 * Pages are written through shared buffers without WAL and logged at the
 * end in one pass (log_newpage_range), the way other bulk index builds do.
 */
#include "mih.h"

#include "access/tableam.h"
#include "access/tupdesc.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "commands/progress.h"
#include "utils/backend_progress.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"

/* sub-phases shown in pg_stat_progress_create_index */
#define MIH_PHASE_LOAD		2
#define MIH_PHASE_WRITE		3
#define MIH_PHASE_MERGE		4	/* tuplesort's final merges, beyond memory */

typedef struct MihBuildState
{
	Relation	index;
	bool		balls;			/* keys are hamming_balls (simhash_ball_ops) */
	bool		compact;		/* runs may have compact leaves (mih_leaf.h) */
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	/* in memory, while they fit */
	MihEntry   *entries;
	int64		n;
	int64		cap;			/* entries allocated */
	int64		maxn;			/* entries that fit in maintenance_work_mem */
	/* beyond that: one sort per table, columns (key, fingerprint, TID) */
	bool		spilled;
	Tuplesortstate *sorts[MIH_MAX_BLOCKS];
	TupleDesc	sortdesc;
	TupleTableSlot *slot;
	double		indtuples;
} MihBuildState;

/*
 * int8 compares signed; flipping the top bit makes that the unsigned order
 * of keys and fingerprints.
 */
static inline int64
as_sortable(uint64 v)
{
	return (int64) (v ^ (UINT64CONST(1) << 63));
}

static inline uint64
from_sortable(int64 v)
{
	return (uint64) v ^ (UINT64CONST(1) << 63);
}

/* Queue one entry into every table's sort. */
static void
sort_put(MihBuildState *bs, SimHash fp, ItemPointer tid)
{
	TupleTableSlot *slot = bs->slot;

	for (int j = 0; j < bs->nblocks; j++)
	{
		ExecClearTuple(slot);
		slot->tts_values[0] = Int64GetDatum(as_sortable(fp & bs->masks[j]));
		slot->tts_values[1] = Int64GetDatum(as_sortable(fp));
		slot->tts_values[2] = Int64GetDatum(((int64) ItemPointerGetBlockNumber(tid) << 16) |
											ItemPointerGetOffsetNumber(tid));
		slot->tts_isnull[0] = slot->tts_isnull[1] = slot->tts_isnull[2] = false;
		ExecStoreVirtualTuple(slot);
		tuplesort_puttupleslot(bs->sorts[j], slot);
	}
}

/*
 * Memory is full: from now on every entry goes to the sorts, which share
 * maintenance_work_mem; what was collected goes there first and its array
 * is freed.
 */
static void
spill(MihBuildState *bs)
{
	AttrNumber	attnums[3] = {1, 2, 3};
	Oid			ops[3] = {Int8LessOperator, Int8LessOperator, Int8LessOperator};
	Oid			colls[3] = {InvalidOid, InvalidOid, InvalidOid};
	bool		nullsfirst[3] = {false, false, false};
	int			workmem = Max(maintenance_work_mem / bs->nblocks, 64);

	bs->sortdesc = CreateTemplateTupleDesc(3);
	for (int i = 1; i <= 3; i++)
		TupleDescInitEntry(bs->sortdesc, (AttrNumber) i, NULL, INT8OID, -1, 0);
	bs->slot = MakeSingleTupleTableSlot(bs->sortdesc, &TTSOpsVirtual);
	for (int j = 0; j < bs->nblocks; j++)
		bs->sorts[j] = tuplesort_begin_heap(bs->sortdesc, 3, attnums, ops, colls, nullsfirst,
											workmem, NULL, TUPLESORT_NONE);
	for (int64 i = 0; i < bs->n; i++)
	{
		ItemPointerData tid = bs->entries[i].tid;

		sort_put(bs, mih_entry_fp(&bs->entries[i]), &tid);
		if ((i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	pfree(bs->entries);
	bs->entries = NULL;
	bs->n = bs->cap = 0;
	bs->spilled = true;
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	MihBuildState *bs = (MihBuildState *) state;
	MihEntry	entry;

	/* a NULL fingerprint gets a NULL entry (see mih_format.h) */
	mih_entry_for_row(&entry, isnull[0] ? 0 : mih_key_fp(bs->balls, values[0]), isnull[0], tid);
	bs->indtuples += 1;
	if (!bs->spilled && bs->n == bs->cap)
	{
		if (bs->cap < bs->maxn)
		{
			bs->cap = Min(bs->cap * 2, bs->maxn);
			bs->entries = repalloc_huge(bs->entries, bs->cap * sizeof(MihEntry));
		}
		else
			spill(bs);
	}
	if (bs->spilled)
		sort_put(bs, mih_entry_fp(&entry), &entry.tid);
	else
		bs->entries[bs->n++] = entry;
}

/* Write the run from the sorts, table by table. */
static BlockNumber
write_run_from_sorts(MihBuildState *bs, uint64 serial, int64 *nentries)
{
	MihRunWriter *w = mih_run_writer_begin(bs->index, bs->nblocks, bs->masks, serial, false,
											bs->compact);
	TupleTableSlot *out = MakeSingleTupleTableSlot(bs->sortdesc, &TTSOpsMinimalTuple);

	for (int j = 0; j < bs->nblocks; j++)
	{
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_MERGE);
		tuplesort_performsort(bs->sorts[j]);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_WRITE);
		mih_run_writer_table(w, j);
		while (tuplesort_gettupleslot(bs->sorts[j], true, false, out, NULL))
		{
			bool		isnull;
			SimHash		fp = from_sortable(DatumGetInt64(slot_getattr(out, 2, &isnull)));
			int64		t = DatumGetInt64(slot_getattr(out, 3, &isnull));
			ItemPointerData tid;

			ItemPointerSet(&tid, (BlockNumber) (t >> 16), (OffsetNumber) (t & 0xFFFF));
			mih_run_writer_add(w, fp, &tid);
		}
		mih_run_writer_end_table(w);
		tuplesort_end(bs->sorts[j]);
		bs->sorts[j] = NULL;
	}
	ExecDropSingleTupleTableSlot(out);
	ExecDropSingleTupleTableSlot(bs->slot);
	return mih_run_writer_finish(w, nentries);
}

IndexBuildResult *
mih_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	MihBuildState bs;
	double		reltuples;
	Buffer		metabuf;
	MihMetaPageData *meta;
	BlockNumber run = InvalidBlockNumber;
	uint64		runserial = 0;
	int64		nentries = 0;
	MihOptions *opts = mih_get_options(index);

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	/* the metapage is block 0 */
	metabuf = mih_new_buffer(index);
	Assert(BufferGetBlockNumber(metabuf) == MIH_METAPAGE_BLKNO);
	mih_init_metapage(BufferGetPage(metabuf), opts->blocks);
	MarkBufferDirty(metabuf);
	meta = MihPageGetMeta(BufferGetPage(metabuf));

	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.nblocks = meta->nblocks;
	bs.balls = mih_keys_are_balls(index);
	bs.compact = meta->version >= MIH_VERSION_COMPACT;
	memcpy(bs.masks, meta->masks, sizeof(bs.masks));
	bs.maxn = Max((int64) maintenance_work_mem * 1024 / (int64) sizeof(MihEntry), 1024);
	bs.maxn = Min(bs.maxn, (int64) (MaxAllocHugeSize / sizeof(MihEntry)));
	/* start small and double, so small tables use little memory */
	bs.cap = Min(bs.maxn, 65536);
	bs.entries = palloc_extended(bs.cap * sizeof(MihEntry), MCXT_ALLOC_HUGE);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_LOAD);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	if (bs.spilled)
	{
		runserial = 1;
		run = write_run_from_sorts(&bs, runserial, &nentries);
	}
	else if (bs.n > 0)
	{
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_WRITE);
		runserial = 1;
		run = mih_write_run_from_array(index, bs.nblocks, bs.masks, bs.entries,
									   bs.n, runserial, false, bs.compact);
		nentries = bs.n;
	}
	if (bs.entries)
		pfree(bs.entries);

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	if (run != InvalidBlockNumber)
	{
		meta->runs[0] = run;
		meta->run_entries[0] = nentries;
		meta->run_serials[0] = (uint32) runserial;
		meta->nruns = 1;
	}
	meta->next_serial = 2;
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);

	result = (IndexBuildResult *) palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.indtuples;
	return result;
}

/*
 * The INIT fork of an unlogged index: just the metapage, WAL-logged. It goes
 * through the buffer manager, as nbtree's does: a page written from palloc'd
 * memory with smgrwrite() is not aligned for direct I/O (16 and later assert
 * it), and the buffer manager flushes an INIT fork's pages at checkpoints.
 * log_newpage_buffer() logs it whatever the relation's persistence (generic
 * WAL would skip an unlogged relation).
 */
void
mih_buildempty(Relation index)
{
	Buffer		metabuf;

	/* the fork is new and empty: nobody else can extend it yet */
	metabuf = ReadBufferExtended(index, INIT_FORKNUM, P_NEW, RBM_NORMAL, NULL);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	Assert(BufferGetBlockNumber(metabuf) == MIH_METAPAGE_BLKNO);
	START_CRIT_SECTION();
	mih_init_metapage(BufferGetPage(metabuf), mih_get_options(index)->blocks);
	MarkBufferDirty(metabuf);
	log_newpage_buffer(metabuf, true);
	END_CRIT_SECTION();
	UnlockReleaseBuffer(metabuf);
}

char *
mih_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case MIH_PHASE_LOAD:
			return "loading tuples";
		case MIH_PHASE_WRITE:
			return "sorting and writing runs";
		case MIH_PHASE_MERGE:
			return "sorting spilled entries";
		default:
			return NULL;
	}
}
