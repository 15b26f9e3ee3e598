/*
 * mih_build.c
 *		CREATE INDEX for the simhash index: collect (fingerprint, TID) in
 *		memory up to maintenance_work_mem, sort and write each such chunk as
 *		a run, and merge the chunks into one run at the end (an external
 *		merge sort whose runs are already in the index's own format).
 *
 * Pages are written through shared buffers without WAL and logged at the
 * end in one pass (log_newpage_range), the way other bulk index builds do.
 */
#include "mih.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "utils/backend_progress.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"

/* sub-phases shown in pg_stat_progress_create_index */
#define MIH_PHASE_LOAD		2
#define MIH_PHASE_WRITE		3
#define MIH_PHASE_MERGE		4

typedef struct MihBuildState
{
	Relation	index;
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	MihEntry   *entries;
	int64		n;
	int64		cap;			/* entries allocated */
	int64		maxn;			/* entries that fit in maintenance_work_mem */
	BlockNumber *chunks;		/* runs written so far */
	int			nchunks;
	int			capchunks;
	uint64		serial;
	double		indtuples;
} MihBuildState;

static void
flush_chunk(MihBuildState *bs)
{
	if (bs->n == 0)
		return;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_WRITE);
	if (bs->nchunks == bs->capchunks)
	{
		bs->capchunks *= 2;
		bs->chunks = repalloc(bs->chunks, bs->capchunks * sizeof(BlockNumber));
	}
	bs->chunks[bs->nchunks++] =
		mih_write_run_from_array(bs->index, bs->nblocks, bs->masks, bs->entries,
								 bs->n, bs->serial++, false);
	bs->n = 0;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_LOAD);
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	MihBuildState *bs = (MihBuildState *) state;

	if (isnull[0])
		return;
	if (bs->n == bs->cap)
	{
		if (bs->cap < bs->maxn)
		{
			bs->cap = Min(bs->cap * 2, bs->maxn);
			bs->entries = repalloc_huge(bs->entries, bs->cap * sizeof(MihEntry));
		}
		else
			flush_chunk(bs);
	}
	mih_entry_set(&bs->entries[bs->n++], DatumGetSimHash(values[0]), tid);
	bs->indtuples += 1;
}

/* Pages of a chunk run are free as soon as it is merged: nobody else sees them. */
static void
free_chunk(Relation index, BlockNumber runhead)
{
	mih_free_run_pages(index, runhead);
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
	memcpy(bs.masks, meta->masks, sizeof(bs.masks));
	bs.maxn = Max((int64) maintenance_work_mem * 1024 / (int64) sizeof(MihEntry), 1024);
	bs.maxn = Min(bs.maxn, (int64) (MaxAllocHugeSize / sizeof(MihEntry)));
	/* start small and double, so small tables use little memory */
	bs.cap = Min(bs.maxn, 65536);
	bs.entries = palloc_extended(bs.cap * sizeof(MihEntry), MCXT_ALLOC_HUGE);
	bs.capchunks = 16;
	bs.chunks = palloc(bs.capchunks * sizeof(BlockNumber));
	bs.serial = 1;
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_LOAD);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	if (bs.nchunks == 0)
	{
		if (bs.n > 0)
		{
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_WRITE);
			runserial = bs.serial++;
			run = mih_write_run_from_array(index, bs.nblocks, bs.masks, bs.entries,
										   bs.n, runserial, false);
			nentries = bs.n;
		}
	}
	else
	{
		flush_chunk(&bs);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, MIH_PHASE_MERGE);
		runserial = bs.serial++;
		run = mih_merge_runs(index, bs.nblocks, bs.masks, bs.chunks, bs.nchunks,
							 NULL, 0, runserial, false, &nentries);
		for (int i = 0; i < bs.nchunks; i++)
			free_chunk(index, bs.chunks[i]);
	}
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
	meta->next_serial = bs.serial;
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index), true);

	result = (IndexBuildResult *) palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.indtuples;
	return result;
}

/* The INIT fork of an unlogged index: just the metapage, WAL-logged. */
void
mih_buildempty(Relation index)
{
	Page		metapage = (Page) palloc(BLCKSZ);

	mih_init_metapage(metapage, mih_get_options(index)->blocks);
	PageSetChecksumInplace(metapage, MIH_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, MIH_METAPAGE_BLKNO,
			  (char *) metapage, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				MIH_METAPAGE_BLKNO, metapage, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(metapage);
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
			return "merging runs";
		default:
			return NULL;
	}
}
