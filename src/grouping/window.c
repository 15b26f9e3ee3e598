/*
 * window.c
 *		Grouping near-duplicates of a whole set of rows: the window functions
 *		simhash_component() and simhash_leader().
 *
 *	  SELECT id, simhash_component(id, fp, 3) OVER (ORDER BY id) FROM docs;
 *	  SELECT id, simhash_leader(id, fp, 3) OVER (ORDER BY created) FROM docs;
 *
 * Both return, for every row, the id of its group's representative: for
 * connected components (of the graph whose edges join rows within the
 * radius) the first row of the component in the window's order; for leader
 * clustering the row's leader: rows are taken in the window's order, and each
 * joins the first earlier leader within the radius or becomes a leader itself.
 * A window function sees the whole partition (the executor keeps it in a
 * tuplestore that spills to disk past work_mem), so no row is written out and
 * no index probe is issued per row: on the first call of a partition the
 * (id, fingerprint) pairs are read into memory, identical fingerprints are
 * merged, every pair of distinct fingerprints within the radius is found by
 * batch_near_pairs() (batch.c), and the answer for every row is kept for the
 * later calls. PARTITION BY groups each partition on its own.
 *
 * Memory: about DEDUP_BYTES_PER_ROW bytes per row, plus 16 bytes per pair of
 * distinct fingerprints for leader clustering; the estimate must fit in
 * maintenance_work_mem or the call fails before allocating (see doc/dedup.md).
 */
#include "simhash.h"

#include <limits.h>
#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "windowapi.h"

#include "grouping/batch.h"
#include "grouping/window_verified.h"
#include "grouping/grouping.h"
#include "radix.h"
#include "grouping/spill.h"

/*
 * Peak bytes per row: id 8, fingerprint 8, partition position 4, result 4,
 * distinct index 4 (28), and, while identical fingerprints are merged, 16
 * for the sort items and 16 for the radix sort's buffer (60). Afterwards,
 * per distinct fingerprint (at most one per row): fingerprint 8, first row 4,
 * union-find parent or leader 4 and the batch scratch 16 (32, replacing the
 * row fingerprints and the sort items: 52 in all).
 */
#define DEDUP_BYTES_PER_ROW 60
/* a pair: 8 bytes, and as much again while the pairs are sorted */
#define DEDUP_BYTES_PER_EDGE 16
#define DEDUP_NO_ROW PG_UINT32_MAX

typedef enum DedupMethod
{
	DEDUP_COMPONENT,
	DEDUP_LEADER
} DedupMethod;

/* per partition, in the partition-local memory of the window object */
typedef struct DedupPartition
{
	bool		computed;
	bool		null_radius;	/* NULL radius: every result is NULL */
	int64	   *ids;			/* ids of the rows with a fingerprint */
	uint32	   *result;			/* per partition row: index into ids, or
								 * DEDUP_NO_ROW for NULL */
	/* the verified form (a text and a threshold) */
	bool		verified;
	uint32	   *row_of;			/* per partition row: its index into ids */
	VgResult	vg;				/* the nodes of the rows with candidates */
} DedupPartition;

/* a row for the merge of identical fingerprints */
typedef struct DedupSortItem
{
	SimHash		fp;
	uint32		row;
} DedupSortItem;

/*
 * The ids are sorted only to find a repeated one, so their order as unsigned
 * numbers serves; the radix sort checks for interrupts after every pass,
 * which a comparison sort of 100M ids (seconds) would not.
 */
#define DEDUP_ID_KEY(id) ((uint64) (id))
RADIX_SORT_DEFINE(dedup_radix_ids, int64, DEDUP_ID_KEY)

#define DEDUP_ITEM_KEY(item) ((item).fp)
#define DEDUP_EDGE_KEY(edge) (edge)
RADIX_SORT_DEFINE(dedup_radix_items, DedupSortItem, DEDUP_ITEM_KEY)
RADIX_SORT_DEFINE(dedup_radix_uint64, uint64, DEDUP_EDGE_KEY)

/* state of one grouping run, for the pair callbacks and progress reports */
typedef struct DedupRun
{
	const char *fname;
	instr_time	start;
	instr_time	last_report;
	int64		nrows;
	uint32		ndistinct;
	Size		limit;			/* bytes allowed: maintenance_work_mem */
	Size		used;			/* bytes estimated before the edges */
	/* connected components */
	uint32	   *parent;
	/* leader clustering: edges (later << 32 | earlier), growing */
	uint64	   *edges;
	uint64		nedges;
	uint64		maxedges;
} DedupRun;

static double
dedup_elapsed(DedupRun *run, instr_time *since)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, *since);
	return INSTR_TIME_GET_DOUBLE(now);
}

/* a NOTICE with the progress, at most every simhash.progress_interval */
static void
dedup_report(DedupRun *run, const char *phase, const BatchStats *stats, bool force)
{
	instr_time	now;

	if (simhash_progress_interval <= 0)
		return;
	if (!force && dedup_elapsed(run, &run->last_report) * 1000.0 < simhash_progress_interval)
		return;
	INSTR_TIME_SET_CURRENT(now);
	run->last_report = now;
	if (stats)
		ereport(NOTICE,
				(errmsg("%s: %s, table %d of %d, %lld pairs so far, %.1f s",
						run->fname, phase, stats->tables_done, stats->top_tables,
						(long long) stats->pairs, dedup_elapsed(run, &run->start))));
	else
		ereport(NOTICE,
				(errmsg("%s: %s, %.1f s", run->fname, phase,
						dedup_elapsed(run, &run->start))));
}

static void
dedup_progress(void *arg, const BatchStats *stats)
{
	dedup_report((DedupRun *) arg, "finding pairs", stats, false);
}

static char *
dedup_bytes(Size bytes)
{
	return text_to_cstring(DatumGetTextPP(DirectFunctionCall1(pg_size_pretty,
															  Int64GetDatum((int64) bytes))));
}

/* fail before allocating when the run would need more than the limit */
static void
dedup_check_memory(DedupRun *run, Size need, const char *what)
{
	if (need > run->limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s needs about %s of memory for %s, more than maintenance_work_mem (%s)",
						run->fname, dedup_bytes(need), what, dedup_bytes(run->limit)),
				 errhint("Raise maintenance_work_mem for this session, or group fewer rows at a time with PARTITION BY.")));
}

static void
dedup_union_pair(void *arg, uint32 a, uint32 b, int distance)
{
	DedupRun   *run = (DedupRun *) arg;

	sh_group_union(run->parent, a, b);
}

static void
dedup_collect_edge(void *arg, uint32 a, uint32 b, int distance)
{
	DedupRun   *run = (DedupRun *) arg;

	if (run->nedges == run->maxedges)
	{
		uint64		newmax = run->maxedges * 2;

		dedup_check_memory(run, run->used + newmax * DEDUP_BYTES_PER_EDGE,
						   psprintf("%lld rows and more than %llu pairs",
									(long long) run->nrows,
									(unsigned long long) run->nedges));
		run->edges = repalloc_huge(run->edges, newmax * sizeof(uint64));
		run->maxedges = newmax;
	}
	/* distinct fingerprints are numbered in order of first row: a < b */
	run->edges[run->nedges++] = ((uint64) b << 32) | a;
}

/* The working set of one grouping run, in its temporary context. */
typedef struct DedupRows
{
	uint32		nfp;			/* rows with a fingerprint */
	SimHash    *fps;			/* their fingerprints (freed once merged) */
	uint32	   *rowpos;			/* their positions in the partition */
	uint32	   *distinct_of;	/* per row: its fingerprint's distinct number */
	uint32		ndistinct;
	SimHash    *dfps;			/* per distinct fingerprint: the value */
	uint32	   *dfirst;			/* per distinct fingerprint: its first row */
	/* the verified form: every row's text, spooled as it is read */
	ShSpill		spool;
	int64	   *spool_at;		/* per row: where its text starts, or -1 */
} DedupRows;

/* The radius: a constant (or parameter) of 0..64; false when it is NULL. */
static bool
dedup_radius(FunctionCallInfo fcinfo, WindowObject winobj, const char *fname,
			 int32 *radius)
{
	bool		isnull;
	Datum		d;

	if (!get_fn_expr_arg_stable(fcinfo->flinfo, 2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the radius of %s() must be a constant or a parameter", fname),
				 errdetail("Every row of a partition is grouped with the same radius.")));
	d = WinGetFuncArgCurrent(winobj, 2, &isnull);
	if (isnull)
		return false;
	*radius = DatumGetInt32(d);
	if (*radius < 0 || *radius > SIMHASH_BITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius %d of %s() is out of range", *radius, fname),
				 errdetail("The radius is a number of differing bits, 0 to 64.")));
	return true;
}

/*
 * The verified form's ruler: threshold (argument 4), features and size
 * (5 and 6; a NULL size is the features' default), constants or parameters
 * as the radius is.
 */
static void
dedup_ruler(FunctionCallInfo fcinfo, WindowObject winobj, const char *fname, VgRuler *ruler)
{
	bool		isnull;
	Datum		d;

	for (int argno = 4; argno < PG_NARGS(); argno++)
		if (!get_fn_expr_arg_stable(fcinfo->flinfo, argno))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the %s of %s() must be a constant or a parameter",
							argno == 4 ? "threshold" : argno == 5 ? "features" : "size", fname),
					 errdetail("Every pair of a partition is verified with the same measure.")));
	d = WinGetFuncArgCurrent(winobj, 4, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the threshold of %s() is NULL", fname),
				 errhint("Give the least Jaccard similarity, 0 to 1, at which a pair is a near-duplicate.")));
	ruler->threshold = DatumGetFloat8(d);
	if (!(ruler->threshold >= 0.0 && ruler->threshold <= 1.0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("threshold %g of %s() is out of range", ruler->threshold, fname),
				 errdetail("The threshold is a Jaccard similarity, 0 to 1.")));
	d = WinGetFuncArgCurrent(winobj, 5, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the features of %s() are NULL", fname),
				 errhint("Give 'mixed', 'words' or 'chars', as simhash_jaccard() takes them.")));
	ruler->kind = sh_parse_feature_mode(DatumGetTextPP(d));
	/* a NULL size is the features' default, as simhash_jaccard() omits it */
	d = WinGetFuncArgCurrent(winobj, 6, &isnull);
	ruler->size = isnull ? sh_default_feature_size(ruler->kind)
		: sh_check_feature_size(ruler->kind, DatumGetInt32(d));
}

/*
 * The verified form's texts (argument 3). The first pass over the partition
 * spools each row's text (in memory up to work_mem, then in a temporary
 * file) as it reads the row, and the grouping reads back only the texts of
 * the rows with a candidate, in order: the executor's tuplestore would have
 * to be read backwards to the first row and forward again (on disk, a block
 * reloaded per row each way: 24 GB read for 1 GB of rows, measured).
 */
static void
dedup_spool_text(DedupRows *rows, uint32 row, Datum d, bool isnull)
{
	text	   *t;
	uint32		len;

	if (isnull)
	{
		rows->spool_at[row] = -1;
		return;
	}
	t = DatumGetTextPP(d);
	len = VARSIZE_ANY_EXHDR(t);
	rows->spool_at[row] = spill_append(&rows->spool, &len, sizeof(len));
	spill_append(&rows->spool, VARDATA_ANY(t), len);
}

static text *
dedup_fetch_text(void *arg, uint32 row)
{
	DedupRows  *rows = (DedupRows *) arg;
	uint32		len;
	text	   *t;

	if (rows->spool_at[row] < 0)
		return NULL;
	spill_read(&rows->spool, rows->spool_at[row], &len, sizeof(len));
	t = (text *) palloc(VARHDRSZ + len);
	SET_VARSIZE(t, VARHDRSZ + len);
	spill_read(&rows->spool, rows->spool_at[row] + sizeof(len), VARDATA(t), len);
	return t;
}

/*
 * Read every row of the partition: ids into part (rows without a
 * fingerprint get no answer), fingerprints and positions into rows.
 */
static void
dedup_read_rows(WindowObject winobj, DedupRun *run, DedupPartition *part, DedupRows *rows)
{
	/*
	 * The arguments are evaluated in the current memory context, so what an
	 * argument expression allocates (simhash(body) detoasts every body) is
	 * freed row by row here rather than kept until the partition ends; the
	 * values themselves (bigint, simhash) are passed by value.
	 */
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "simhash grouping row",
												 ALLOCSET_DEFAULT_SIZES);
	MemoryContext outer;

	rows->fps = palloc_extended(sizeof(SimHash) * Max(run->nrows, 1), MCXT_ALLOC_HUGE);
	rows->rowpos = palloc_extended(sizeof(uint32) * Max(run->nrows, 1), MCXT_ALLOC_HUGE);
	rows->nfp = 0;
	if (part->verified)
	{
		spill_init(&rows->spool, (Size) work_mem * 1024);
		rows->spool_at = palloc_extended(sizeof(int64) * Max(run->nrows, 1), MCXT_ALLOC_HUGE);
	}
	for (int64 pos = 0; pos < run->nrows; pos++)
	{
		bool		idnull,
					fpnull,
					isout;
		Datum		id,
					fp;

		MemoryContextReset(rowcxt);
		outer = MemoryContextSwitchTo(rowcxt);
		id = WinGetFuncArgInPartition(winobj, 0, (int) pos, WINDOW_SEEK_HEAD, false, &idnull, &isout);
		fp = WinGetFuncArgInPartition(winobj, 1, (int) pos, WINDOW_SEEK_HEAD, false, &fpnull, &isout);
		MemoryContextSwitchTo(outer);
		part->result[pos] = DEDUP_NO_ROW;
		if (fpnull)
			continue;
		if (idnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the id of a row given to %s() is NULL", run->fname),
					 errdetail("The fingerprint of that row is %016llx.",
							   (unsigned long long) DatumGetSimHash(fp)),
					 errhint("Every row with a fingerprint needs a unique, non-NULL id.")));
		if (part->verified)
		{
			bool		textnull;
			Datum		doc;

			outer = MemoryContextSwitchTo(rowcxt);
			doc = WinGetFuncArgInPartition(winobj, 3, (int) pos, WINDOW_SEEK_HEAD, false,
										   &textnull, &isout);
			dedup_spool_text(rows, rows->nfp, doc, textnull);
			MemoryContextSwitchTo(outer);
		}
		part->ids[rows->nfp] = DatumGetInt64(id);
		rows->fps[rows->nfp] = DatumGetSimHash(fp);
		rows->rowpos[rows->nfp] = (uint32) pos;
		rows->nfp++;
		if ((pos & 0xFFFF) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			dedup_report(run, "reading rows", NULL, false);
		}
	}
	MemoryContextDelete(rowcxt);
}

/* Ids must be unique, or the answers could not be told apart. */
static void
dedup_check_ids(const char *fname, const int64 *ids, uint32 n)
{
	int64	   *sorted;
	int64	   *tmp;

	if (n < 2)
		return;
	sorted = palloc_extended(sizeof(int64) * n, MCXT_ALLOC_HUGE);
	tmp = palloc_extended(sizeof(int64) * n, MCXT_ALLOC_HUGE);
	memcpy(sorted, ids, sizeof(int64) * n);
	dedup_radix_ids(sorted, tmp, n, 0);
	pfree(tmp);
	for (uint32 i = 1; i < n; i++)
		if (sorted[i] == sorted[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("id %lld occurs more than once in the rows given to %s()",
							(long long) sorted[i], fname),
					 errhint("Every row with a fingerprint needs a unique, non-NULL id.")));
	pfree(sorted);
}

/*
 * Merge identical fingerprints: number the distinct ones in the order of
 * their first row (so "earlier" is "smaller"), and map each row to its
 * fingerprint's number. Identical fingerprints always share a group and a
 * leader (a later copy is within 0 bits of the first).
 */
static void
dedup_merge_identical(DedupRows *rows)
{
	uint32		nfp = rows->nfp;
	uint32	   *distinct_of = palloc_extended(sizeof(uint32) * Max(nfp, 1), MCXT_ALLOC_HUGE);
	DedupSortItem *items = palloc_extended(sizeof(DedupSortItem) * Max(nfp, 1), MCXT_ALLOC_HUGE);
	DedupSortItem *tmp = palloc_extended(sizeof(DedupSortItem) * Max(nfp, 1), MCXT_ALLOC_HUGE);

	for (uint32 i = 0; i < nfp; i++)
	{
		items[i].fp = rows->fps[i];
		items[i].row = i;
	}
	dedup_radix_items(items, tmp, nfp, 0);
	pfree(tmp);
	/* distinct_of[row] = the first row with the same fingerprint */
	for (uint32 i = 0; i < nfp; i++)
	{
		uint32		first = (i > 0 && items[i].fp == items[i - 1].fp)
		? distinct_of[items[i - 1].row] : items[i].row;

		distinct_of[items[i].row] = first;
	}
	pfree(items);

	rows->dfps = palloc_extended(sizeof(SimHash) * Max(nfp, 1), MCXT_ALLOC_HUGE);
	rows->dfirst = palloc_extended(sizeof(uint32) * Max(nfp, 1), MCXT_ALLOC_HUGE);
	rows->ndistinct = 0;
	for (uint32 i = 0; i < nfp; i++)
	{
		if (distinct_of[i] == i)
		{
			rows->dfps[rows->ndistinct] = rows->fps[i];
			rows->dfirst[rows->ndistinct] = i;
			/* a first row's own slot now holds its distinct number */
			distinct_of[i] = rows->ndistinct++;
		}
		else
			distinct_of[i] = distinct_of[distinct_of[i]];
	}
	rows->distinct_of = distinct_of;
	pfree(rows->fps);
	rows->fps = NULL;
}

/* Connected components: rep[d] = the component's smallest distinct number. */
static void
dedup_components(DedupRun *run, const DedupRows *rows, int32 radius, uint32 *rep,
				 BatchStats *stats)
{
	for (uint32 d = 0; d < rows->ndistinct; d++)
		rep[d] = d;
	run->parent = rep;
	batch_near_pairs(rows->dfps, rows->ndistinct, radius, dedup_union_pair, run,
					 dedup_progress, run, stats);
	sh_group_flatten(rep, rows->ndistinct);
}

/*
 * Leader clustering: in order of first row, a fingerprint joins the
 * earliest leader among its earlier neighbours (its edges, sorted by the
 * earlier end), or leads. Earlier fingerprints are decided by then.
 */
static void
dedup_leaders(DedupRun *run, const DedupRows *rows, int32 radius, uint32 *rep,
			  BatchStats *stats)
{
	uint64	   *tmp;

	run->maxedges = 1024;
	run->edges = palloc_extended(sizeof(uint64) * run->maxedges, MCXT_ALLOC_HUGE);
	batch_near_pairs(rows->dfps, rows->ndistinct, radius, dedup_collect_edge, run,
					 dedup_progress, run, stats);
	tmp = palloc_extended(sizeof(uint64) * Max(run->nedges, 1), MCXT_ALLOC_HUGE);
	dedup_radix_uint64(run->edges, tmp, run->nedges, 0);
	pfree(tmp);
	sh_group_leaders(run->edges, run->nedges, rows->ndistinct, rep);
	pfree(run->edges);
}

/*
 * The verified form: the pairs of fingerprints within the radius, then the
 * rows grouped on the pairs of rows verification accepts (window_verified.c).
 */
static void
dedup_verified(DedupRun *run, DedupRows *rows, int32 radius,
			   DedupMethod method, const VgRuler *ruler, DedupPartition *part,
			   BatchStats *stats)
{
	MemoryContext partcxt = GetMemoryChunkContext(part);
	VgInput		in;

	run->maxedges = 1024;
	run->edges = palloc_extended(sizeof(uint64) * run->maxedges, MCXT_ALLOC_HUGE);
	batch_near_pairs(rows->dfps, rows->ndistinct, radius, dedup_collect_edge, run,
					 dedup_progress, run, stats);
	dedup_report(run, psprintf("verifying the rows of %lld pairs of fingerprints",
							   (long long) run->nedges), NULL, false);

	memset(&in, 0, sizeof(in));
	in.nrows = rows->nfp;
	in.distinct_of = rows->distinct_of;
	in.ndistinct = rows->ndistinct;
	in.edges = run->edges;
	in.nedges = run->nedges;
	in.leader = (method == DEDUP_LEADER);
	in.fetch = dedup_fetch_text;
	in.fetch_arg = (void *) rows;
	in.fname = run->fname;
	vg_group(&in, ruler, &part->vg, partcxt);
	spill_free(&rows->spool);
	pfree(run->edges);

	for (int64 pos = 0; pos < run->nrows; pos++)
		part->row_of[pos] = DEDUP_NO_ROW;
	for (uint32 i = 0; i < rows->nfp; i++)
	{
		uint32		node = part->vg.node_of[i];

		part->row_of[rows->rowpos[i]] = i;
		part->result[rows->rowpos[i]] =
			node == VG_NO_NODE ? i : part->vg.first[part->vg.rep[node]];
	}
	elog(DEBUG1, "%s: %u rows, %u distinct texts with a candidate, %lld pairs verified",
		 run->fname, rows->nfp, part->vg.nnodes, (long long) part->vg.verified);
}

/*
 * Read the partition, group it and store every row's answer in part.
 * Temporary arrays live in a context deleted at the end; the ids and
 * results live in the partition's context, as long as the partition.
 */
static void
dedup_compute(FunctionCallInfo fcinfo, WindowObject winobj,
			  DedupPartition *part, DedupMethod method, bool verified)
{
	const char *fname = method == DEDUP_COMPONENT ? "simhash_component" : "simhash_leader";
	VgRuler		ruler;
	MemoryContext partcxt = GetMemoryChunkContext(part);
	MemoryContext workcxt;
	MemoryContext oldcxt;
	DedupRun	run;
	DedupRows	rows;
	int32		radius;
	int64		nrows;
	uint32	   *rep;			/* per distinct fingerprint: representative's
								 * distinct index */
	BatchStats	stats;

	part->computed = true;
	part->verified = verified;
	if (!dedup_radius(fcinfo, winobj, fname, &radius))
	{
		part->null_radius = true;
		return;
	}
	if (verified)
		dedup_ruler(fcinfo, winobj, fname, &ruler);

	/*
	 * Rows are read by position through WinGetFuncArgInPartition, whose
	 * position is an int: a larger partition would wrap it.
	 */
	nrows = WinGetPartitionRowCount(winobj);
	if (nrows > (int64) PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s() cannot group %lld rows in one partition", fname, (long long) nrows),
				 errdetail("The limit is %d rows.", PG_INT32_MAX),
				 errhint("Group fewer rows at a time with PARTITION BY.")));

	memset(&run, 0, sizeof(run));
	run.fname = fname;
	run.nrows = nrows;
	run.limit = (Size) maintenance_work_mem * 1024;
	INSTR_TIME_SET_CURRENT(run.start);
	run.last_report = run.start;
	/* the verified form: its nodes, and where each row's text is spooled (8) */
	run.used = (Size) nrows * (DEDUP_BYTES_PER_ROW + (verified ? VG_BYTES_PER_ROW + 8 : 0));
	dedup_check_memory(&run, run.used, psprintf("%lld rows", (long long) nrows));

	/* ids and results in the partition context, the rest in workcxt */
	part->ids = MemoryContextAllocHuge(partcxt, sizeof(int64) * Max(nrows, 1));
	part->result = MemoryContextAllocHuge(partcxt, sizeof(uint32) * Max(nrows, 1));
	if (verified)
		part->row_of = MemoryContextAllocHuge(partcxt, sizeof(uint32) * Max(nrows, 1));
	workcxt = AllocSetContextCreate(CurrentMemoryContext, "simhash grouping",
									ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(workcxt);

	dedup_read_rows(winobj, &run, part, &rows);
	/* what reading the rows kept: TAP 024 checks it stays near the estimate */
	elog(DEBUG2, "%s: reading %lld rows kept %zu bytes", fname, (long long) nrows,
		 MemoryContextMemAllocated(workcxt, true));
	dedup_check_ids(fname, part->ids, rows.nfp);
	dedup_merge_identical(&rows);
	run.ndistinct = rows.ndistinct;
	dedup_report(&run, psprintf("%u rows with a fingerprint, %u distinct", rows.nfp,
								rows.ndistinct), NULL, false);

	if (verified)
		dedup_verified(&run, &rows, radius, method, &ruler, part, &stats);
	else
	{
		rep = palloc_extended(sizeof(uint32) * Max(rows.ndistinct, 1), MCXT_ALLOC_HUGE);
		if (method == DEDUP_COMPONENT)
			dedup_components(&run, &rows, radius, rep, &stats);
		else
			dedup_leaders(&run, &rows, radius, rep, &stats);

		/* every row's answer: the first row of its representative fingerprint */
		for (uint32 i = 0; i < rows.nfp; i++)
			part->result[rows.rowpos[i]] = rows.dfirst[rep[rows.distinct_of[i]]];
	}

	/* no timing here: the regression tests show this line */
	elog(DEBUG1, "%s: %lld rows, %u with a fingerprint, %u distinct, radius %d: "
		 "%d blocks, %d tables, %lld sub-splits, %lld comparisons, %lld pairs",
		 fname, (long long) nrows, rows.nfp, rows.ndistinct, radius,
		 stats.top_blocks, stats.top_tables, (long long) stats.sub_splits,
		 (long long) stats.comparisons, (long long) stats.pairs);
	if (simhash_progress_interval > 0 &&
		dedup_elapsed(&run, &run.start) * 1000.0 >= simhash_progress_interval)
		dedup_report(&run, psprintf("done, %lld pairs within %d bits",
									(long long) stats.pairs, radius), NULL, true);

	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(workcxt);
}

static Datum
dedup_window(FunctionCallInfo fcinfo, DedupMethod method)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	DedupPartition *part;
	int64		pos;

	part = (DedupPartition *) WinGetPartitionLocalMemory(winobj, sizeof(DedupPartition));
	if (!part->computed)
		dedup_compute(fcinfo, winobj, part, method, false);
	if (part->null_radius)
		PG_RETURN_NULL();
	pos = WinGetCurrentPosition(winobj);
	if (part->result[pos] == DEDUP_NO_ROW)
		PG_RETURN_NULL();
	PG_RETURN_INT64(part->ids[part->result[pos]]);
}

/*
 * simhash_component(id bigint, fp simhash, radius int) OVER (...): the id of
 * the first row, in the window's order, of the row's connected component.
 */
PG_FUNCTION_INFO_V1(simhash_component);
Datum
simhash_component(PG_FUNCTION_ARGS)
{
	return dedup_window(fcinfo, DEDUP_COMPONENT);
}

/*
 * simhash_leader(id bigint, fp simhash, radius int) OVER (...): the id of the
 * row's leader in leader clustering in the window's order (its own id for a
 * leader).
 */
PG_FUNCTION_INFO_V1(simhash_leader);
Datum
simhash_leader(PG_FUNCTION_ARGS)
{
	return dedup_window(fcinfo, DEDUP_LEADER);
}

/*
 * The verified form's answer for the current row: (keep_id, jaccard,
 * near_id, near_jaccard), a simhash_group_member. jaccard is the similarity
 * of the accepted pair that put the row in its group (leader: with the kept
 * row; an equal copy of the kept row: 1); near_id and near_jaccard, on a row
 * that is kept though it had candidates, the most similar candidate that
 * verification turned down.
 */
static Datum
dedup_window_verified(FunctionCallInfo fcinfo, DedupMethod method)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	DedupPartition *part;
	TupleDesc	tupdesc = (TupleDesc) fcinfo->flinfo->fn_extra;
	Datum		values[4] = {0};
	bool		nulls[4] = {true, true, true, true};
	int64		pos;
	uint32		row;
	uint32		node;
	const VgResult *vg;

	if (tupdesc == NULL)
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		tupdesc = BlessTupleDesc(CreateTupleDescCopy(tupdesc));
		fcinfo->flinfo->fn_extra = tupdesc;
		MemoryContextSwitchTo(oldcxt);
	}
	part = (DedupPartition *) WinGetPartitionLocalMemory(winobj, sizeof(DedupPartition));
	if (!part->computed)
		dedup_compute(fcinfo, winobj, part, method, true);
	if (part->null_radius)
		PG_RETURN_NULL();
	pos = WinGetCurrentPosition(winobj);
	if (part->result[pos] == DEDUP_NO_ROW)
		PG_RETURN_NULL();
	vg = &part->vg;
	row = part->row_of[pos];
	node = vg->node_of[row];
	values[0] = Int64GetDatum(part->ids[part->result[pos]]);
	nulls[0] = false;
	if (node != VG_NO_NODE)
	{
		float8		j = get_float8_nan();
		bool		kept = (vg->rep[node] == node && vg->first[node] == row);

		if (vg->rep[node] != node)
			j = vg->jaccard[node];
		else if (!kept && vg->has_features[node])
			j = 1.0;			/* an equal copy of the kept row */
		if (!isnan(j))
		{
			values[1] = Float8GetDatum(j);
			nulls[1] = false;
		}
		if (kept && vg->near[node] != VG_NO_NODE)
		{
			values[2] = Int64GetDatum(part->ids[vg->first[vg->near[node]]]);
			nulls[2] = false;
			if (!isnan(vg->near_jaccard[node]))
			{
				values[3] = Float8GetDatum(vg->near_jaccard[node]);
				nulls[3] = false;
			}
		}
	}
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/*
 * simhash_component(id, fp, radius, verify_text, threshold, features, size)
 * OVER (...): connected components of the pairs within the radius whose
 * texts' Jaccard similarity reaches the threshold.
 */
PG_FUNCTION_INFO_V1(simhash_component_verified);
Datum
simhash_component_verified(PG_FUNCTION_ARGS)
{
	return dedup_window_verified(fcinfo, DEDUP_COMPONENT);
}

/*
 * simhash_leader(id, fp, radius, verify_text, threshold, features, size)
 * OVER (...): leader clustering where a row joins the first earlier leader
 * within the radius whose text's similarity with its own reaches the
 * threshold.
 */
PG_FUNCTION_INFO_V1(simhash_leader_verified);
Datum
simhash_leader_verified(PG_FUNCTION_ARGS)
{
	return dedup_window_verified(fcinfo, DEDUP_LEADER);
}
