/*
 * mih_scan.c
 *		Searching the simhash index: fp <@ hamming_ball(q, r).
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
 * prefetched before the pending list is read.
 */
#include "mih.h"

#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

typedef enum MihScanPhase
{
	MIH_SCAN_START,
	MIH_SCAN_PENDING,
	MIH_SCAN_RUNS,
	MIH_SCAN_DONE
} MihScanPhase;

typedef struct MihScanOpaqueData
{
	/* the query: every ball must contain the fingerprint */
	bool		empty;			/* no row can match (NULL or negative radius) */
	bool		with_nulls;		/* no ball: every row, NULL fingerprints too */
	bool		recheck;		/* a && condition: the heap rechecks its radii */
	int			nballs;
	SimHash    *centers;		/* one per scan key, in scan->opaque's context */
	int		   *radii;
	/* the ball probed: the one with the smallest radius */
	SimHash		q;
	int			r;
	int			s[MIH_MAX_BLOCKS];	/* bits each table's block may differ by
									 * (mih_table_radii); -1: not probed */
	bool		fullscan;		/* too many probes: read table 0 whole */
	bool		memo;			/* one ball, probed: what came back empty may
								 * be remembered (mih_cache_run_empty) */
	bool		pend_lookup;	/* few probes: full pending pages are
								 * searched by their summaries */
	int64		run_found;		/* matches in the current run so far */
	uint64		screened;		/* runs (bit r) their screens rule out
								 * (mih_cache_screen.c) */

	/* the index as the scan saw it at its start */
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	int			nruns;
	BlockNumber runs[MIH_MAX_RUNS];
	uint32		run_serials[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];	/* the tables each run serves */
	BlockNumber pending_next;
	uint32		pending_next_serial;	/* what the next pending page must carry */

	/* probe values per table, ascending */
	uint64	   *probes[MIH_MAX_BLOCKS];
	int			nprobes[MIH_MAX_BLOCKS];
	/* q's bits outside each table's block, as compact leaves keep them */
	uint64		qrem[MIH_MAX_BLOCKS];
	MihEntry   *scratch;		/* a compact leaf decoded (full scans) */

	/* position */
	MihScanPhase phase;
	int			run;
	int			table;
	int			probe;
	BlockNumber leaf;			/* next leaf to read, or Invalid: descend */
	int			leaf_slot;		/* its place in the run's leaf directory, or -1 */
	/* the probe's entries from the run's position index (mih_cache_pos.c) */
	uint32		pos_left;		/* still to visit; 0: search the leaf */
	int			pos_off;		/* where they start in so->leaf */
	/* in a run with compact leaves: where the probe's entries start (a byte
	 * offset in so->leaf), or 0: search the leaf */
	int			cplace;
	int			cgroup;			/* its group in so->leaf's directory, or -1 */
	MihRunHeader hdr;			/* of the current run */
	MihRunSummary *sum;			/* what the backend knows of it (pinned), or
								 * NULL (mih_cache.c) */
	const uint64 *tprobes;		/* the current table's probes that its
								 * filter lets through (all without one) */
	int			ntprobes;
	uint64	   *fprobes;		/* room for filtered probes */
	int			fprobes_cap;

	/* matches of the current page */
	Buffer		curbuf;			/* pinned while its matches are returned
								 * (non-MVCC snapshots only) */
	int			nitems;			/* in items, at the end */
	int			curitem;

	/*
	 * What an index-only scan gets: a tuple whose key is NULL. The index
	 * returns no columns (amcanreturn is NULL), so the planner makes an
	 * index-only scan of it only for a query that needs no column, such as
	 * count(*) over a whole-index path, which PostgreSQL 18 can choose when
	 * sequential scans are disabled: the executor then needs a tuple, never
	 * its values.
	 */
	IndexTuple	empty_itup;

	/* ORDER BY fp <-> order_q: rows come from the nearest-neighbour search */
	bool		ordered;
	bool		order_null;		/* ORDER BY fp <-> NULL: every distance NULL */
	SimHash		order_q;
	MihKnn	   *knn;			/* begun at the first row */

	MemoryContext cxt;

	/*
	 * Last, and not zeroed at the start of a scan: 6 kB that every
	 * constraint check (two under ON CONFLICT) would otherwise clear.
	 */
	ItemPointerData items[MIH_LEAF_MAX_ENTRIES];
} MihScanOpaqueData;

typedef MihScanOpaqueData *MihScanOpaque;

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

	/* counted in pg_stat_user_indexes.idx_scan, as every index AM does */
	pgstat_count_index_scan(index);

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
		double		probe_pages,
					full_pages,
					probe_entries;

		for (int i = 1; i < so->nballs; i++)
			if (so->radii[i] < so->radii[best])
				best = i;
		so->q = so->centers[best];
		so->r = so->radii[best];
		mih_table_radii(so->masks, so->nblocks, so->r, so->s);
		mih_search_pages(meta, so->r, &probe_pages, &full_pages, &probe_entries,
						 &so->fullscan);
	}
	UnlockReleaseBuffer(metabuf);

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
	so->screened = 0;
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

/* Is fp in every ball of the query? */
static inline bool
matches(MihScanOpaque so, SimHash fp)
{
	for (int i = 0; i < so->nballs; i++)
		if (simhash_hamming(fp, so->centers[i]) > so->radii[i])
			return false;
	return true;
}

/*
 * Would a table before j have reported this match? Then table j must not.
 * The first table whose block is within its radius of the query reports it.
 */
static inline bool
reported_earlier(MihScanOpaque so, SimHash fp, int j)
{
	uint64		diff = fp ^ so->q;

	for (int k = 0; k < j; k++)
		if (sh_popcount64(diff & so->masks[k]) <= so->s[k])
			return true;
	return false;
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
			 (so->pend_lookup &&
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
 * The leaf of table j of a run where entries with key >= v (masked) start,
 * from the root. Shared with the nearest-neighbour search (mih_knn.c).
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
		mih_check_page(index, page, blk, MIH_PAGE_INNER, (uint32) hdr->serial, table);
		blk = mih_inner_child(MihPageGetInner(page), MihPageGetNItems(page, sizeof(MihInnerItem)), v);
		UnlockReleaseBuffer(buf);
	}
	return blk;
}

/* A run entry whose block a probe value matched: a match, once. */
static void
scan_visit(void *arg, const MihEntry *e)
{
	MihScanOpaque so = (MihScanOpaque) arg;
	SimHash		fp = mih_entry_fp(e);

	if (!mih_entry_dead(e) && !mih_entry_is_null(e) && matches(so, fp) &&
		!reported_earlier(so, fp, so->table))
		so->items[so->nitems++] = mih_entry_tid(e);
}

/*
 * A compact leaf's group whose value a probe matched: the entries whose
 * remainder is near enough to q's for the probed ball are decoded and
 * visited; the rest are not.
 */
static void
scan_visit_group(void *arg, const MihCLeaf *c, int g)
{
	MihScanOpaque so = (MihScanOpaque) arg;
	uint64		key = mih_cleaf_key(c, g);
	uint64		qrem = so->qrem[so->table];
	int			limit = so->r - sh_popcount64((key ^ so->q) & so->masks[so->table]);
	int			end = mih_cleaf_start(c, g + 1);

	for (int i = mih_cleaf_start(c, g); i < end; i++)
		if (sh_popcount64(mih_cleaf_rem(c, i) ^ qrem) <= limit)
		{
			MihEntry	e;

			mih_cleaf_decode(c, i, key, &e);
			scan_visit(so, &e);
		}
}

/*
 * Visit the group of a compact leaf where the run's table of places
 * (mih_cache_place) says the current probe's entries start: the group must
 * start at that place and hold the probed value. On to the next leaf when
 * the directory says the value goes on there; else the probe is done.
 */
static void
visit_placed(Relation index, MihScanOpaque so, const MihCLeaf *c, const char *page,
			 BlockNumber next)
{
	uint64		v = so->tprobes[so->probe];
	int			rel = so->cplace - (int) (c->entries - page);
	int			i0 = rel / c->width;
	int			lo = so->cgroup;

	so->cplace = 0;
	if (rel < 0 || rel % c->width != 0 || i0 >= c->n || lo < 0 || lo >= c->ngroups)
		mih_position_mismatch(index, so->leaf, i0);
	/* the table of places names the group starting at entry i0 */
	if (mih_cleaf_start(c, lo) != i0 || mih_cleaf_key(c, lo) != v)
		mih_position_mismatch(index, so->leaf, i0);
	scan_visit_group(so, c, lo);
	if (lo == c->ngroups - 1 && next != InvalidBlockNumber &&
		so->leaf_slot + 1 < so->sum->ndir[so->table] &&
		so->sum->dir_keys[so->table][so->leaf_slot + 1] == v)
	{
		/* the value goes on in the next leaf, whose search visits the rest */
		so->leaf = next;
		so->leaf_slot++;
	}
	else
	{
		so->probe++;
		so->leaf = InvalidBlockNumber;
	}
}

/*
 * Visit the current probe's entries that the run's position index placed
 * at so->pos_off of this leaf, on to the next leaf if they go on there.
 * Every one must have the probed value.
 */
static void
visit_positioned(Relation index, MihScanOpaque so, const MihEntry *entries, int n,
				 BlockNumber next)
{
	uint64		mask = so->masks[so->table];
	uint64		v = so->tprobes[so->probe];
	int			i = so->pos_off;

	for (; i < n && so->pos_left > 0; i++, so->pos_left--)
	{
		if ((mih_entry_fp(&entries[i]) & mask) != v)
			mih_position_mismatch(index, so->leaf, i);
		scan_visit(so, &entries[i]);
	}
	if (so->pos_left == 0)
	{
		so->probe++;
		so->leaf = InvalidBlockNumber;	/* the next probe is placed anew */
	}
	else if (next == InvalidBlockNumber)
		mih_position_mismatch(index, so->leaf, n);	/* fewer entries than counted */
	else
	{
		so->leaf = next;
		so->leaf_slot++;
		so->pos_off = 0;
	}
}

/* Where the current table's probes go after a leaf, by why its search stopped. */
static void
after_leaf(MihScanOpaque so, MihLeafStep step, BlockNumber next)
{
	switch (step)
	{
		case MIH_LEAF_END:
			so->leaf = next;
			so->leaf_slot++;
			/* at the end of the table no later probe can match */
			if (next == InvalidBlockNumber)
				so->probe = so->ntprobes;
			break;
		case MIH_LEAF_DESCEND:
			so->leaf = InvalidBlockNumber;	/* it may be the next leaf */
			break;
		case MIH_PROBES_END:
			break;
	}
}

/*
 * Visit one run leaf for the current table: collect matches for as many
 * consecutive probe values as the leaf holds. Advances so->probe and
 * so->leaf. The buffer is returned pinned and unlocked.
 */
static Buffer
visit_run_leaf(Relation index, MihScanOpaque so)
{
	int			j = so->table;
	Buffer		buf = so->sum ? mih_cache_read_leaf(index, so->sum, j, so->leaf_slot, so->leaf) :
		ReadBuffer(index, so->leaf);
	Page		page;
	const MihEntry *entries;
	int			n;
	uint64		mask = so->masks[j];
	BlockNumber next;
	MihCLeaf	c;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	mih_check_page(index, page, so->leaf, MIH_PAGE_LEAF, (uint32) so->hdr.serial, j);
	next = MihPageGetOpaque(page)->next;

	if (mih_leaf_is_compact(page) && !so->fullscan)
	{
		/* a run's position index places values in plain leaves only */
		if (so->pos_left > 0)
			mih_position_mismatch(index, so->leaf, so->pos_off);
		mih_cleaf_open(index, so->leaf, page, mask, &c);
		if (so->cplace > 0)
		{
			visit_placed(index, so, &c, (const char *) page, next);
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			return buf;
		}
		after_leaf(so, mih_probe_cleaf(&c, so->tprobes, so->ntprobes, &so->probe,
									   scan_visit_group, so), next);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		return buf;
	}
	so->cplace = 0;				/* a plain leaf of a compact run: searched */
	if (mih_leaf_is_compact(page) && so->scratch == NULL)
		so->scratch = MemoryContextAlloc(so->cxt, MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));
	entries = mih_leaf_entries(index, so->leaf, page, mask, so->scratch, &n);

	if (so->fullscan)
	{
		for (int i = 0; i < n; i++)
		{
			SimHash		fp = mih_entry_fp(&entries[i]);

			if (!mih_entry_dead(&entries[i]) &&
				(mih_entry_is_null(&entries[i]) ? so->with_nulls : matches(so, fp)))
				so->items[so->nitems++] = mih_entry_tid(&entries[i]);
		}
		so->leaf = next;
		so->leaf_slot++;		/* the directory lists the leaves in order */
	}
	else if (so->pos_left > 0)
		visit_positioned(index, so, entries, n, next);
	else
		after_leaf(so, mih_probe_leaf(entries, n, mask, so->tprobes, so->ntprobes, &so->probe,
									  scan_visit, so), next);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return buf;
}

/*
 * The matches among a full pending page's entries from first on, by its
 * summary (mih_cache_pend.c): each table's probe values looked up, each
 * entry found checked on the page and reported by the first table whose
 * block is near enough, as in the runs.
 */
static void
pending_lookup(MihScanOpaque so, const MihPendSummary *ps, const MihEntry *entries, int first)
{
	for (int j = 0; j < so->nblocks; j++)
		for (int p = 0; p < so->nprobes[j]; p++)
		{
			uint16		idx[MIH_ENTRIES_PER_PAGE];
			int			cnt = mih_pend_find(ps, j, so->probes[j][p], idx);

			for (int k = 0; k < cnt; k++)
			{
				const MihEntry *e = &entries[idx[k]];
				SimHash		fp = mih_entry_fp(e);

				if (idx[k] >= first && sh_popcount64(fp ^ so->q) <= so->r &&
					!(e->tid.ip_posid & MIH_TID_FLAGS) && !reported_earlier(so, fp, j))
					so->items[so->nitems++] = mih_entry_tid(e);
			}
		}
}

/*
 * Visit one pending page: every live entry in the balls matches. Returns
 * InvalidBuffer, having read nothing, for a page this backend already found
 * no match of the ball on after it stopped being the tail (a full page, or
 * one a flush sealed): such a page no longer changes but for dead marks,
 * which take matches away, and its link to the next page was remembered
 * with it (src/mih/README, "Reading").
 */
static Buffer
visit_pending(Relation index, MihScanOpaque so)
{
	Buffer		buf;
	Page		page;
	MihEntry   *entries;
	int			n;
	int			checked = 0;

	if (so->nballs == 1 && !so->with_nulls)
	{
		BlockNumber next;
		uint32		next_serial;

		checked = mih_cache_pending_checked(index, so->centers[0], so->radii[0],
											so->pending_next, so->pending_next_serial,
											&next, &next_serial);
		if (next == InvalidBlockNumber && checked == 0 && so->pend_lookup &&
			mih_cache_pending_skip(index, so->pending_next, so->pending_next_serial,
								   so->nblocks, so->probes, so->nprobes, so->centers[0],
								   so->radii[0], &next, &next_serial))
		{
			/* its summary rules every entry out: remembered for the recheck */
			mih_cache_note_pending(index, so->centers[0], so->radii[0], so->pending_next,
								   so->pending_next_serial, MIH_ENTRIES_PER_PAGE, next,
								   next_serial);
		}
		if (next != InvalidBlockNumber)
		{
			so->pending_next = next;
			so->pending_next_serial = next_serial;
			return InvalidBuffer;
		}
	}
	buf = mih_cache_read_hinted(index, so->pending_next);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	mih_check_page(index, page, so->pending_next, MIH_PAGE_PENDING, so->pending_next_serial, -1);
	entries = MihPageGetEntries(page);
	n = MihPageGetNItems(page, sizeof(MihEntry));
	if (so->nballs == 1 && !so->with_nulls)
	{
		/*
		 * One ball, the usual case (and every constraint check): the
		 * distance first, as it rarely passes, then the flags. Every insert
		 * under the constraint reads the whole pending list this way.
		 */
		SimHash		q = so->centers[0];
		int			r = so->radii[0];
		uint32		serial = MihPageGetOpaque(page)->serial;
		int			first;
		const MihPendSummary *ps = NULL;

		/* the entries an earlier search of this ball found nothing in */
		first = Min(checked, n);
		if (first < n && so->pend_lookup)
			ps = mih_cache_pending_summary(index, so->pending_next, serial, entries, n,
										   so->nblocks, so->masks,
										   MihPageGetOpaque(page)->next,
										   MihPageGetOpaque(page)->next_serial);
		if (ps)
			pending_lookup(so, ps, entries, first);
		else
			for (int i = first; i < n; i++)
				if (sh_popcount64(mih_entry_fp(&entries[i]) ^ q) <= r &&
					!(entries[i].tid.ip_posid & MIH_TID_FLAGS))
					so->items[so->nitems++] = mih_entry_tid(&entries[i]);
		if (so->nitems == 0 && (n > first || MihPageGetOpaque(page)->next != InvalidBlockNumber))
			mih_cache_note_pending(index, q, r, so->pending_next, serial, n,
								   MihPageGetOpaque(page)->next,
								   MihPageGetOpaque(page)->next_serial);
	}
	else
	{
		for (int i = 0; i < n; i++)
			if (!mih_entry_dead(&entries[i]) &&
				(mih_entry_is_null(&entries[i]) ? so->with_nulls : matches(so, mih_entry_fp(&entries[i]))))
				so->items[so->nitems++] = mih_entry_tid(&entries[i]);
	}
	so->pending_next = MihPageGetOpaque(page)->next;
	so->pending_next_serial = MihPageGetOpaque(page)->next_serial;
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return buf;
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
				buf = visit_pending(index, so);
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
				buf = visit_run_leaf(index, so);
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
		int			dist;
		bool		isnull;
		bool		found;
		MemoryContext old;

		if (so->empty)
			return false;
		/* the search's buckets live as long as the scan */
		old = MemoryContextSwitchTo(so->cxt);
		if (so->knn == NULL)
		{
			pgstat_count_index_scan(scan->indexRelation);
			so->knn = mih_knn_begin(scan->indexRelation, so->order_q, so->nballs,
									so->centers, so->radii);
		}
		found = mih_knn_next(so->knn, &scan->xs_heaptid, &dist, &isnull);
		MemoryContextSwitchTo(old);
		if (!found)
			return false;
		/* the exact distance, in order: nothing for the executor to recheck */
		scan->xs_orderbyvals[0] = Int32GetDatum(dist);
		scan->xs_orderbynulls[0] = isnull;
		scan->xs_recheckorderby = false;
		return true;
	}
	while (so->curitem >= so->nitems)
	{
		if (!next_page(scan))
			return false;
	}
	scan->xs_heaptid = so->items[so->curitem++];
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

	while (next_page(scan))
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
