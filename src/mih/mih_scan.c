/*
 * mih_scan.c
 *		Searching the simhash index: fp <@ simhash_ball(q, r).
 *
 * A scan reads the run list and the pending list's head from the metapage.
 * The pages of runs a concurrent merge replaces stay readable while the
 * scan runs: they are recycled only once no snapshot as old as the scan's
 * remains (mih_recycle.c), so a scan holds no lock or pin that maintenance
 * would have to wait for. It visits pages one at a time: the pending pages,
 * then, for every run and table j, the leaves holding each probe value
 * (every value within s_j bits of the query's block j: floor(r / m) or one
 * less, mih_table_radii), in
 * increasing order so consecutive probes often share a leaf. Candidates
 * are checked in full inside the index, and the matches of a page are
 * copied out. Like nbtree, a scan with an MVCC snapshot then drops the
 * page's pin: the snapshot already keeps it from seeing a new row at a TID
 * VACUUM freed. Other scans keep the page pinned while its matches are
 * returned, which VACUUM's cleanup locks wait for (mih_vacuum.c).
 *
 * What the backend remembers of a run (mih_cache.c) replaces reading its
 * header and inner pages: a descent is a search of the run's leaf directory
 * and one leaf read, and a small run's filters drop the probe values none
 * of its entries has. The leaves each table's first probe reads are
 * prefetched before the pending list is read. Each page's matches are
 * collected by mih_scan_visit.c.
 */
#include "mih.h"
#include "mih_cache.h"
#include "mih_scan.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/spccache.h"

static void prefetch_runs(Relation index, MihScanOpaque so);

IndexScanDesc
mih_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	MihScanOpaque so = palloc(sizeof(MihScanOpaqueData));

	memset(so, 0, offsetof(MihScanOpaqueData, items));

	so->curbuf = InvalidBuffer;
	so->phase = MIH_SCAN_DONE;
	/* the AM provides the arrays where the executor reads each row's distance */
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(sizeof(Datum) * norderbys);
		scan->xs_orderbynulls = palloc(sizeof(bool) * norderbys);
		memset(scan->xs_orderbynulls, true, sizeof(bool) * norderbys);
	}
	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash scan",
									ALLOCSET_SMALL_SIZES);
	scan->opaque = so;
	return scan;
}

static void
release_buffers(MihScanOpaque so)
{
	if (so->curbuf != InvalidBuffer)
		ReleaseBuffer(so->curbuf);
	so->curbuf = InvalidBuffer;
	mih_cache_release(so->sum);
	so->sum = NULL;
}

void
mih_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;

	release_buffers(so);
	if (so->knn)
		mih_knn_end(so->knn);
	so->knn = NULL;
	MemoryContextReset(so->cxt);
	so->fprobes = NULL;
	so->fprobes_cap = 0;
	so->standby = RecoveryInProgress();
	so->restarts = 0;
	so->returned = NULL;
	so->nreturned = so->returned_cap = so->nsorted = 0;
	so->returned_full = false;
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));

	if (scan->xs_want_itup)
	{
		Datum		value = (Datum) 0;
		bool		isnull = true;
		MemoryContext oldcxt = MemoryContextSwitchTo(so->cxt);

		so->empty_itup = index_form_tuple(RelationGetDescr(scan->indexRelation), &value, &isnull);
		MemoryContextSwitchTo(oldcxt);
	}

	so->ordered = scan->numberOfOrderBys > 0;
	so->order_null = false;
	if (so->ordered)
	{
		ScanKey		key = &scan->orderByData[0];

		if (scan->numberOfOrderBys != 1 || key->sk_strategy != MIH_STRATEGY_DISTANCE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash index scans order only by fp <-> simhash"),
					 errhint("Check the operator class with amvalidate().")));
		if (key->sk_flags & SK_ISNULL)
			so->order_null = true;
		else
			so->order_q = DatumGetSimHash(key->sk_argument);
	}

	so->empty = false;
	so->recheck = false;
	so->nballs = 0;
	so->centers = MemoryContextAlloc(so->cxt, Max(scan->numberOfKeys, 1) * sizeof(SimHash));
	so->radii = MemoryContextAlloc(so->cxt, Max(scan->numberOfKeys, 1) * sizeof(int));
	for (int i = 0; i < scan->numberOfKeys; i++)
	{
		ScanKey		key = &scan->keyData[i];
		HammingBall *ball;

		if (key->sk_flags & SK_ISNULL)
		{
			so->empty = true;
			continue;
		}
		/*
		 * An operator class amvalidate would reject could hand us anything.
		 * (An exclusion constraint's check gives no subtype: the argument is
		 * of the indexed type.)
		 */
		if ((key->sk_strategy != MIH_STRATEGY_WITHIN && key->sk_strategy != MIH_STRATEGY_NEAR) ||
			get_typlen(OidIsValid(key->sk_subtype) ? key->sk_subtype
					   : scan->indexRelation->rd_opcintype[0]) != sizeof(HammingBall))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash index scans take only fp <@ hamming_ball and hamming_ball && hamming_ball conditions"),
					 errhint("Check the operator class with amvalidate().")));
		/*
		 * key && ball: the index keeps only the key's centre, so it returns
		 * the centres within the ball's radius and the heap rechecks the
		 * key's own radius.
		 */
		if (key->sk_strategy == MIH_STRATEGY_NEAR)
			so->recheck = true;
		ball = DatumGetHammingBall(key->sk_argument);
		if (ball->radius < 0)
			so->empty = true;
		else
		{
			so->centers[so->nballs] = ball->center;
			so->radii[so->nballs] = Min(ball->radius, SIMHASH_BITS);
			so->nballs++;
		}
	}
	/* no radius condition (an ordered scan): every row, NULL fingerprints too */
	so->with_nulls = (so->nballs == 0);
	so->phase = so->empty ? MIH_SCAN_DONE : MIH_SCAN_START;
	so->nitems = so->curitem = 0;
}

/* Read the metapage, choose the probe ball and enumerate the probes. */
static void
start_scan(Relation index, MihScanOpaque so)
{
	Buffer		metabuf;
	MihMetaPageData *meta;
	int			best = 0;
	MemoryContext old;
	MihSearchCost cost = {0};
	double		random_page_cost;
	double		seq_page_cost;

	/* counted in pg_stat_user_indexes.idx_scan, as every index AM does (once) */
	if (so->restarts == 0)
		pgstat_count_index_scan(index);

	/* the page costs the plan used: a catalog lookup, so before the metapage lock */
	get_tablespace_page_costs(index->rd_rel->reltablespace, &random_page_cost,
							  &seq_page_cost);
	metabuf = mih_cache_read_hinted(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	so->nblocks = meta->nblocks;
	memcpy(so->masks, meta->masks, sizeof(so->masks));
	so->nruns = meta->nruns;
	memcpy(so->runs, meta->runs, meta->nruns * sizeof(BlockNumber));
	memcpy(so->run_serials, meta->run_serials, meta->nruns * sizeof(uint32));
	for (int r = 0; r < meta->nruns; r++)
		so->run_tables[r] = mih_run_tables(meta, r);
	so->pending_next = meta->pending_head;
	so->pending_next_serial = meta->pending_head_serial;

	if (so->with_nulls)
	{
		/* every row: table 0 whole, NULL entries included */
		mih_require_null_entries(index, meta);
		so->q = 0;
		so->r = SIMHASH_BITS;
		for (int j = 0; j < so->nblocks; j++)
			so->s[j] = 0;
		so->fullscan = true;
	}
	else
	{
		for (int i = 1; i < so->nballs; i++)
			if (so->radii[i] < so->radii[best])
				best = i;
		so->q = so->centers[best];
		so->r = so->radii[best];
		mih_table_radii(so->masks, so->nblocks, so->r, so->s);
		/* probe or read table 0 whole: what the plan's cost assumed */
		mih_search_cost(meta, so->r, random_page_cost, seq_page_cost, &cost);
		so->fullscan = cost.fullscan;
	}
	UnlockReleaseBuffer(metabuf);
	/* what TAP 028 reads to see the choice follow the costs */
	if (!so->with_nulls)
		elog(DEBUG2, "simhash radius search, radius %d: %s (probing costs %.2f, reading table 0 %.2f)",
			 so->r, so->fullscan ? "reads table 0 whole" : "probes", cost.probe_cost, cost.full_cost);

	old = MemoryContextSwitchTo(so->cxt);
	if (!so->fullscan)
	{
		for (int j = 0; j < so->nblocks; j++)
		{
			if (so->s[j] >= 0)
				so->probes[j] = mih_table_probes(so->q, so->masks[j], so->s[j], &so->nprobes[j]);
			else
				so->nprobes[j] = 0;	/* not probed: another table reports its matches */
		}
	}
	for (int j = 0; j < so->nblocks; j++)
		so->qrem[j] = mih_bits_gather(mih_bitmap(so->masks[j]), so->q);
	so->scratch = NULL;
	MemoryContextSwitchTo(old);
	so->memo = !so->fullscan && so->nballs == 1;
	so->pend_lookup = false;
	if (so->memo)
	{
		int			nprobes = 0;

		for (int j = 0; j < so->nblocks; j++)
			nprobes += so->nprobes[j];
		so->pend_lookup = nprobes <= MIH_PEND_MAX_PROBES;
	}
	so->screened = so->screen_kept = 0;
	if (!so->fullscan)
		prefetch_runs(index, so);

	so->phase = MIH_SCAN_PENDING;
	so->run = -1;
	so->pos_left = 0;
	so->cplace = 0;
}

static bool table_probes(Relation index, MihScanOpaque so);

/*
 * Before the pending list is read: prefetch, in every run this backend
 * remembers, the leaf each table's first probe reads (the first one the
 * run's filter lets through), so that those cache misses overlap with one
 * another and with reading the pending list (mih_cache_prefetch_leaf).
 */
static void
prefetch_runs(Relation index, MihScanOpaque so)
{
	for (int r = 0; r < so->nruns; r++)
	{
		MihRunSummary *sum = mih_cache_peek(index, so->runs[r], so->run_serials[r]);

		if (sum == NULL || (so->memo && mih_cache_run_empty(sum, so->q, so->r)))
			continue;
		if (so->pend_lookup &&
			mih_cache_screen_rules_out(NULL, sum, so->run_tables[r], so->nblocks, so->masks,
									   so->probes, so->nprobes, so->q, so->qrem, so->r))
		{
			so->screened |= UINT64CONST(1) << r;
			continue;
		}
		if (so->pend_lookup && sum->screen != NULL)
			so->screen_kept |= UINT64CONST(1) << r;	/* asked: not again */
		for (int j = 0; j < so->nblocks; j++)
		{
			if (!(so->run_tables[r] & (1 << j)))
				continue;
			for (int i = 0; i < so->nprobes[j]; i++)
				if (mih_cache_may_hold(sum, j, so->probes[j][i]))
				{
					mih_cache_prefetch_leaf(sum, j, so->probes[j][i]);
					break;
				}
		}
	}
}

/*
 * Move to the next table this scan reads, loading the next run's header when
 * the run is done; false when there are no more runs. Probing reads every
 * table a run serves; a full scan reads table 0 of the runs serving it,
 * which hold every entry once.
 */
static bool
next_table(Relation index, MihScanOpaque so)
{
	for (;;)
	{

		if (so->run >= 0)
		{
			/* the next table of this run */
			while (!so->fullscan && ++so->table < so->nblocks)
				if ((so->run_tables[so->run] & (1 << so->table)) && so->nprobes[so->table] > 0 &&
					table_probes(index, so))
				{
					so->probe = 0;
					so->leaf = InvalidBlockNumber;
					so->pos_left = 0;
					return true;
				}
		}
		/* the next run; this one, searched to the end, may have had nothing */
		if (so->sum && so->memo && so->run_found == 0)
			mih_cache_note_run_empty(so->sum, so->q, so->r);
		mih_cache_release(so->sum);
		so->sum = NULL;
		so->run++;
		so->run_found = 0;
		if (so->run >= so->nruns)
			return false;
		if (so->fullscan && !(so->run_tables[so->run] & 1))
			continue;
		so->sum = mih_cache_run(index, so->runs, so->run_serials, so->run_tables, so->nruns,
								so->run);
		if (so->sum && so->memo &&
			(mih_cache_run_empty(so->sum, so->q, so->r) ||
			 (so->screened & (UINT64CONST(1) << so->run)) ||
			 (so->pend_lookup && !(so->screen_kept & (UINT64CONST(1) << so->run)) &&
			  mih_cache_screen_rules_out(index, so->sum, so->run_tables[so->run], so->nblocks,
										 so->masks, so->probes, so->nprobes, so->q, so->qrem,
										 so->r))))
		{
			/*
			 * An earlier search of this ball found nothing here, or the
			 * run's screen shows nothing within reach: nothing to find
			 */
			mih_cache_release(so->sum);
			so->sum = NULL;
			so->table = so->nblocks;	/* no table of it to read */
			continue;
		}
		if (so->sum)
			so->hdr = so->sum->hdr;
		else
			mih_read_run_header(index, so->runs[so->run], so->run_serials[so->run], &so->hdr);
		if (so->fullscan)
		{
			so->table = 0;
			so->leaf = so->hdr.first_leaf[0];
			so->leaf_slot = 0;
			return true;
		}
		so->table = -1;			/* the loop above finds its first table */
	}
}

/*
 * The probes of the current table that may find something in this run: all
 * of them, or those its filter lets through (mih_cache.c). False when none
 * does, so the table is skipped without reading a page.
 */
static bool
table_probes(Relation index, MihScanOpaque so)
{
	int			j = so->table;
	MihRunSummary *sum = so->sum;

	so->tprobes = so->probes[j];
	so->ntprobes = so->nprobes[j];
	if (sum == NULL)
		return true;
	mih_cache_consider_filters(index, sum, so->run_tables[so->run], so->masks);
	mih_cache_consider_positions(index, sum, so->run_tables[so->run], so->masks);
	if (sum->filter[j] == NULL)
		return true;
	if (so->fprobes_cap < so->nprobes[j])
	{
		so->fprobes = MemoryContextAlloc(so->cxt, so->nprobes[j] * sizeof(uint64));
		so->fprobes_cap = so->nprobes[j];
	}
	so->ntprobes = mih_cache_filter_probes(sum, j, so->probes[j], so->nprobes[j], so->fprobes);
	so->tprobes = so->fprobes;
	return so->ntprobes > 0;
}

/*
 * Fill so->items with the matches of the next page that has any; that page
 * stays pinned in so->curbuf. Returns false at the end of the scan.
 */
static bool
next_page(IndexScanDesc scan)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;

	if (so->curbuf != InvalidBuffer)
	{
		ReleaseBuffer(so->curbuf);
		so->curbuf = InvalidBuffer;
	}
	so->nitems = so->curitem = 0;

	for (;;)
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		switch (so->phase)
		{
			case MIH_SCAN_START:
				start_scan(index, so);
				continue;
			case MIH_SCAN_PENDING:
				if (so->pending_next == InvalidBlockNumber)
				{
					so->phase = MIH_SCAN_RUNS;
					if (!next_table(index, so))
						so->phase = MIH_SCAN_DONE;
					continue;
				}
				buf = mih_scan_visit_pending(index, so);
				if (!BufferIsValid(buf))
					continue;	/* known to hold no match: not read */
				break;
			case MIH_SCAN_RUNS:
				if (so->fullscan ? so->leaf == InvalidBlockNumber
					: so->probe >= so->ntprobes)
				{
					/* this table is done: the next one, or the next run */
					if (!next_table(index, so))
						so->phase = MIH_SCAN_DONE;
					continue;
				}
				if (so->leaf == InvalidBlockNumber && so->sum)
				{
					uint32		first,
								count;
					int			slot,
								place,
								group;

					so->pos_left = 0;
					so->cplace = 0;
					if (mih_cache_place(so->sum, so->table, so->tprobes[so->probe], &slot,
										&place, &group))
					{
						so->sum->spent++;
						if (slot < 0)
						{
							/* no entry of this run has the value: nothing to read */
							so->probe++;
							continue;
						}
						so->leaf_slot = slot;
						so->leaf = so->sum->dir_leaves[so->table][slot];
						so->cplace = place;
						so->cgroup = group;
					}
					if (mih_cache_position(so->sum, so->table, so->tprobes[so->probe],
										   &first, &count))
					{
						so->sum->spent++;
						if (count == 0)
						{
							/* no entry of this run has the value: nothing to read */
							so->probe++;
							continue;
						}
						so->leaf_slot = first / MIH_ENTRIES_PER_PAGE;
						so->leaf = so->sum->dir_leaves[so->table][so->leaf_slot];
						so->pos_off = first % MIH_ENTRIES_PER_PAGE;
						so->pos_left = count;
					}
				}
				if (so->leaf == InvalidBlockNumber)
				{
					so->leaf_slot = -1;
					so->leaf = so->sum ?
						mih_cache_leaf(index, so->sum, so->table, so->tprobes[so->probe],
									   &so->leaf_slot) :
						mih_descend(index, &so->hdr, so->table, so->tprobes[so->probe]);
				}
				buf = mih_scan_visit_run_leaf(index, so);
				so->run_found += so->nitems;
				break;
			default:
				return false;
		}
		if (so->nitems > 0 && !IsMVCCSnapshot(scan->xs_snapshot))
		{
			so->curbuf = buf;
			return true;
		}
		ReleaseBuffer(buf);
		if (so->nitems > 0)
			return true;
	}
}

/* ---- starting again on a hot standby (src/mih/README, "Reading") ---- */

/*
 * Can this scan start again if a page is recycled under it? Only on a
 * standby, a bounded number of times, and for amgettuple only while it
 * knows every TID it returned.
 */
static bool
can_restart(MihScanOpaque so, bool tuples)
{
	return so->standby && so->restarts < mih_standby_scan_restarts &&
		!(tuples && so->returned_full);
}

/* Remember a TID amgettuple returns, while at most work_mem of them. */
static void
remember_returned(MihScanOpaque so, ItemPointer tid)
{
	if (so->returned_full)
		return;
	if (so->nreturned == so->returned_cap)
	{
		int64		max = Max((int64) work_mem * 1024 / (int64) sizeof(ItemPointerData), 1);
		int64		cap = Min(Max(so->returned_cap * 2, 256), max);

		if (cap <= so->returned_cap)
		{
			/* no restart from now on: it could return a row twice */
			so->returned_full = true;
			return;
		}
		so->returned = so->returned ?
			repalloc_huge(so->returned, cap * sizeof(ItemPointerData)) :
			MemoryContextAllocHuge(so->cxt, cap * sizeof(ItemPointerData));
		so->returned_cap = cap;
	}
	so->returned[so->nreturned++] = *tid;
}

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* Did amgettuple return this TID before the last restart? */
static bool
returned_before(MihScanOpaque so, ItemPointer tid)
{
	return so->nsorted > 0 &&
		bsearch(tid, so->returned, so->nsorted, sizeof(ItemPointerData), tid_cmp) != NULL;
}

/*
 * Start the scan again from the current metapage, after a page it needed
 * was recycled (mih_scan_restartable): every entry visible to the scan's
 * snapshot is still in the index the current metapage describes, as the
 * README argues; the rows already returned are not returned again.
 */
static void
restart_scan(IndexScanDesc scan)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;

	so->restarts++;
	ereport(LOG,
			(errmsg("simhash index \"%s\": a scan on this standby starts again (%d of at most %d times): the primary recycled pages it needed",
					RelationGetRelationName(scan->indexRelation), so->restarts,
					mih_standby_scan_restarts),
			 errhint("With hot_standby_feedback = on, the primary keeps the pages that standby queries still read.")));
	release_buffers(so);
	if (so->knn)
		mih_knn_end(so->knn);
	so->knn = NULL;
	so->nitems = so->curitem = 0;
	so->phase = MIH_SCAN_START;
	if (so->nreturned > 1)
		qsort(so->returned, so->nreturned, sizeof(ItemPointerData), tid_cmp);
	so->nsorted = so->nreturned;
}

static bool
next_page_step(void *arg)
{
	return next_page((IndexScanDesc) arg);
}

/*
 * next_page, started again on a standby when a page was recycled under the
 * scan. For amgettuple (tuples), the matches it returned before a restart
 * are dropped; a bitmap scan may add a TID twice (the bitmap is a set).
 */
static bool
next_matches(IndexScanDesc scan, bool tuples)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;

	for (;;)
	{
		bool		found;
		int			n = 0;

		if (!can_restart(so, tuples))
			found = next_page(scan);
		else if (!mih_scan_restartable(next_page_step, scan, &found))
		{
			restart_scan(scan);
			continue;
		}
		if (!found || !tuples || so->nsorted == 0)
			return found;
		for (int i = 0; i < so->nitems; i++)
			if (!returned_before(so, &so->items[i]))
				so->items[n++] = so->items[i];
		so->nitems = n;
		if (n > 0)
			return true;
	}
}

/* One row of the nearest-neighbour search, begun at the first. */
typedef struct KnnStep
{
	IndexScanDesc scan;
	ItemPointerData tid;
	int			dist;
	bool		isnull;
} KnnStep;

static bool
knn_step(void *arg)
{
	KnnStep    *st = (KnnStep *) arg;
	MihScanOpaque so = (MihScanOpaque) st->scan->opaque;

	if (so->knn == NULL)
	{
		if (so->restarts == 0)
			pgstat_count_index_scan(st->scan->indexRelation);
		so->knn = mih_knn_begin(st->scan->indexRelation, so->order_q, so->nballs,
								so->centers, so->radii);
	}
	return mih_knn_next(so->knn, &st->tid, &st->dist, &st->isnull);
}

bool
mih_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;

	if (dir != ForwardScanDirection)
		elog(ERROR, "simhash index scans only go forward");
	scan->xs_recheck = so->recheck; /* else the index holds the whole fingerprint */
	if (scan->xs_want_itup)
	{
		scan->xs_itup = so->empty_itup;
		scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
	}
	if (so->ordered && !so->order_null)
	{
		KnnStep		st;
		bool		found;
		MemoryContext old;

		if (so->empty)
			return false;
		st.scan = scan;
		/* the search's buckets live as long as the scan */
		old = MemoryContextSwitchTo(so->cxt);
		for (;;)
		{
			if (!can_restart(so, true))
				found = knn_step(&st);
			else if (!mih_scan_restartable(knn_step, &st, &found))
			{
				/*
				 * The search from the start: the rows it finds nearer than
				 * those returned are not visible to the scan (README)
				 */
				restart_scan(scan);
				continue;
			}
			if (!found || !returned_before(so, &st.tid))
				break;
		}
		MemoryContextSwitchTo(old);
		if (!found)
			return false;
		scan->xs_heaptid = st.tid;
		if (so->standby)
			remember_returned(so, &st.tid);
		/* the exact distance, in order: nothing for the executor to recheck */
		scan->xs_orderbyvals[0] = Int32GetDatum(st.dist);
		scan->xs_orderbynulls[0] = st.isnull;
		scan->xs_recheckorderby = false;
		return true;
	}
	while (so->curitem >= so->nitems)
	{
		if (!next_matches(scan, true))
			return false;
	}
	scan->xs_heaptid = so->items[so->curitem++];
	if (so->standby)
		remember_returned(so, &scan->xs_heaptid);
	if (so->ordered)
	{
		/* ORDER BY fp <-> NULL: every distance is NULL, any order will do */
		scan->xs_orderbyvals[0] = (Datum) 0;
		scan->xs_orderbynulls[0] = true;
		scan->xs_recheckorderby = false;
	}
	return true;
}

int64
mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;
	int64		ntids = 0;

	while (next_matches(scan, false))
	{
		tbm_add_tuples(tbm, so->items, so->nitems, so->recheck);
		ntids += so->nitems;
	}
	return ntids;
}

void
mih_endscan(IndexScanDesc scan)
{
	MihScanOpaque so = (MihScanOpaque) scan->opaque;

	release_buffers(so);
	if (so->knn)
		mih_knn_end(so->knn);
	MemoryContextDelete(so->cxt);
	pfree(so);
}
