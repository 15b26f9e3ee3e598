/*
 * mih_knn.c
 *		Nearest-neighbour search for ORDER BY fp <-> q: the rows in ascending
 *		Hamming distance from q, exactly, reading only as much of the index
 *		as the consumer asks for.
 *
 * The incremental search of multi-index hashing (Norouzi, Punjani and Fleet,
 * "Fast search in Hamming space with multi-index hashing", CVPR 2012): level
 * s probes, in every table j, the block values exactly s bits from q's block
 * j, one table at a time. After table j of level s, an entry not found has
 * the blocks of tables 0..j at least s + 1 bits from q's and the others at
 * least s, so its distance is at least m s + j + 1: every found entry closer
 * than that is settled and can be returned, one bit more with each table. An entry is taken only at its
 * canonical place, the first table among those where its block distance is
 * smallest, so each entry is taken once. The pending list (unsorted) is
 * read whole at the start.
 *
 * Probing keeps only the entries up to KNN_KEEP_FIRST bits away, and notes
 * that it passed over farther ones; when the consumer has every row up to
 * that distance, the steps done so far are probed again for the next
 * KNN_KEEP_STEP bits (keep_more). A LIMIT 10 query thus files the few
 * entries it may return, not the hundreds of thousands its probes find.
 *
 * Found entries wait in one list per distance (0..64, and 65 for NULL
 * entries, which come last as in a sequential scan), so returning them in
 * order costs nothing. The pending list's entries (read whole at the start;
 * the flush limit bounds it) have lists of their own. The run entries'
 * lists hold at most work_mem: when a probe step finds more, the farthest
 * lists are dropped and the search goes only that far by probing.
 *
 * Beyond that, or when probing the next level would read more pages than
 * reading table 0 whole (every entry once), or for the NULL entries, the
 * search reads table 0 in bands: a pass takes the entries after a boundary
 * (distance, position in table 0's order), up to KNN_BAND_FIRST entries the
 * first time and four times more each pass after, to as many as work_mem
 * holds, and the next pass starts where it stopped. A query with a LIMIT
 * up to KNN_BAND_FIRST reads table 0 once; returning the whole index in
 * order reads it a few times, then once per work_mem of entries.
 *
 * Radius conditions of the same scan (fp <@ ball) filter the entries and
 * bound the search: nothing beyond the smallest radius is looked for.
 */
#include "mih.h"
#include "mih_cache.h"
#include "test_fault.h"

#include "miscadmin.h"

typedef struct TidList
{
	ItemPointerData *tids;
	int64		n;
	int64		cap;
	int64		pos;			/* next to return */
} TidList;

/* NULL entries sort after every distance */
#define KNN_NULL_DIST (SIMHASH_BITS + 1)
#define KNN_NDIST (SIMHASH_BITS + 2)
/* a band boundary's position when the whole distance is included */
#define KNN_ALL PG_UINT64_MAX
/*
 * Probing keeps the entries up to this distance at first, then
 * KNN_KEEP_STEP bits more each time the consumer gets there (keep_more):
 * 20 bits is past the 100th neighbour of 10M uniform rows (about 17).
 */
#define KNN_KEEP_FIRST 20
#define KNN_KEEP_STEP 8
/*
 * A band holds at first this many TIDs, then four times as many each pass,
 * up to work_mem: a LIMIT query, which the index cannot see, reads table 0
 * once and files about this many entries, not every one up to work_mem
 * (a pass filing all 1M entries of a table was most of a 10-NN query's
 * time); returning the whole index in order reads table 0 a few times more.
 */
#define KNN_BAND_FIRST 1024
#define KNN_BAND_GROWTH 4

/* probe values enumerated at a time (64 kB) */
#define KNN_PROBE_CHUNK 8192

struct MihKnn
{
	Relation	index;
	SimHash		q;
	int			nballs;
	const SimHash *centers;
	const int  *radii;
	int			limit;			/* the farthest distance wanted: the smallest
								 * radius, or KNN_NULL_DIST with no radius */

	/* the index as the scan saw it at its start */
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	int			bits[MIH_MAX_BLOCKS];
	int			nruns;
	BlockNumber runs[MIH_MAX_RUNS];
	uint32		run_serials[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];
	int64		run_entries[MIH_MAX_RUNS];

	TidList		pending[KNN_NDIST]; /* the pending list's entries */
	TidList		found[KNN_NDIST];	/* run entries found and not yet freed */
	int64		nfound;			/* TIDs the found lists hold */
	int64		maxfound;		/* ... at most (work_mem) */
	int64		band_cap;		/* ... in the next band pass */
	int64		peakfound;		/* ... at most so far (for the DEBUG2 report) */
	int			passes;			/* bands read (for the DEBUG2 report) */
	int			emit;			/* the distance being returned */

	/* probing: the next step probes this level in this table */
	int			level;
	int			table;
	int			cutoff;			/* found lists hold nothing farther (memory) */
	int			keep;			/* probing keeps nothing farther (see keep_more) */
	int			keep_lo;		/* while probing again: nothing this near either */
	int			keep_step;		/* KNN_KEEP_STEP (1 under a test fault) */
	bool		skipped;		/* probing passed over an entry beyond keep */

	/* reading table 0 in bands: every entry up to this key is found */
	bool		bands;
	int			band_dist;
	uint64		band_pos;		/* KNN_ALL: the whole distance */
};

static void
tidlist_push(TidList *l, ItemPointer tid)
{
	if (l->n == l->cap)
	{
		l->cap = Max(l->cap * 2, 64);
		l->tids = l->tids ? repalloc_huge(l->tids, l->cap * sizeof(ItemPointerData))
			: palloc(l->cap * sizeof(ItemPointerData));
	}
	l->tids[l->n++] = *tid;
}

static void
tidlist_free(TidList *l)
{
	if (l->tids)
		pfree(l->tids);
	memset(l, 0, sizeof(*l));
}

/* Free a found list, keeping the count of what the lists hold. */
static void
drop_found(MihKnn *k, int d)
{
	k->nfound -= k->found[d].n;
	tidlist_free(&k->found[d]);
}

static inline bool
knn_matches(const MihKnn *k, SimHash fp)
{
	for (int i = 0; i < k->nballs; i++)
		if (simhash_hamming(fp, k->centers[i]) > k->radii[i])
			return false;
	return true;
}

/* The distance an entry sorts by (KNN_NULL_DIST for a NULL one). */
static inline int
entry_distance(const MihKnn *k, const MihEntry *e)
{
	return mih_entry_is_null(e) ? KNN_NULL_DIST : simhash_hamming(mih_entry_fp(e), k->q);
}

/* Is an entry at distance d wanted at all (within the limit, in every ball)? */
static inline bool
wanted(const MihKnn *k, const MihEntry *e, int d)
{
	return d <= k->limit && (d == KNN_NULL_DIST || knn_matches(k, mih_entry_fp(e)));
}

/* The smallest block distance of fp from q, and the first table with it. */
static inline int
min_block_distance(const MihKnn *k, SimHash fp, int *table)
{
	uint64		diff = fp ^ k->q;
	int			best = SIMHASH_BITS + 1;

	for (int j = 0; j < k->nblocks; j++)
	{
		int			d = sh_popcount64(diff & k->masks[j]);

		if (d < best)
		{
			best = d;
			*table = j;
		}
	}
	return best;
}

/*
 * Take a run entry found by probing, at distance d (> every distance
 * settled before this step). When the found lists pass work_mem, the
 * farthest are dropped and the cutoff comes down: probing then settles
 * only up to the cutoff, and table 0's bands find the rest.
 */
static void
take_probed(MihKnn *k, const MihEntry *e, int d, int settled)
{
	ItemPointerData tid;

	if (d > k->cutoff || !wanted(k, e, d))
		return;
	while (k->nfound >= k->maxfound && k->cutoff >= d && k->cutoff > settled)
	{
		drop_found(k, k->cutoff);
		k->cutoff--;
	}
	if (d > k->cutoff)
		return;
	tid = mih_entry_tid(e);
	tidlist_push(&k->found[d], &tid);
	k->nfound++;
	k->peakfound = Max(k->peakfound, k->nfound);
}

MihKnn *
mih_knn_begin(Relation index, SimHash q, int nballs, const SimHash *centers,
			  const int *radii)
{
	MihKnn	   *k = palloc0(sizeof(MihKnn));
	Buffer		metabuf;
	MihMetaPageData *meta;
	BlockNumber pending;
	uint32		pending_serial;

	k->index = index;
	k->q = q;
	k->nballs = nballs;
	k->centers = centers;
	k->radii = radii;
	k->limit = nballs == 0 ? KNN_NULL_DIST : SIMHASH_BITS;
	for (int i = 0; i < nballs; i++)
		k->limit = Min(k->limit, radii[i]);
	k->cutoff = SIMHASH_BITS;
	k->keep = KNN_KEEP_FIRST;
	k->keep_step = KNN_KEEP_STEP;
	/* tests: probe again at every distance, on tables small enough for a suite */
	if (simhash_test_fault == SH_FAULT_KNN_KEEP_SMALL)
	{
		k->keep = 0;
		k->keep_step = 1;
	}
	k->keep_lo = -1;
	k->maxfound = Max((int64) work_mem * 1024 / (int64) sizeof(ItemPointerData), 1);
	k->band_cap = Min(KNN_BAND_FIRST, k->maxfound);

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	meta = MihPageGetMeta(BufferGetPage(metabuf));
	mih_require_null_entries(index, meta);
	k->nblocks = meta->nblocks;
	memcpy(k->masks, meta->masks, sizeof(k->masks));
	for (int j = 0; j < k->nblocks; j++)
		k->bits[j] = pg_popcount64(k->masks[j]);
	k->nruns = meta->nruns;
	for (int r = 0; r < meta->nruns; r++)
	{
		k->runs[r] = meta->runs[r];
		k->run_serials[r] = meta->run_serials[r];
		k->run_tables[r] = mih_run_tables(meta, r);
		k->run_entries[r] = meta->run_entries[r];
	}
	pending = meta->pending_head;
	pending_serial = meta->pending_head_serial;
	UnlockReleaseBuffer(metabuf);

	/* the pending list, whole: its entries have no tables */
	while (pending != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, pending);
		Page		page;
		MihEntry   *entries;
		int			n;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_scan_page(index, buf, pending, MIH_PAGE_PENDING, pending_serial, -1);
		entries = MihPageGetEntries(page);
		n = MihPageGetNItems(page, sizeof(MihEntry));
		for (int i = 0; i < n; i++)
		{
			int			d;

			if (mih_entry_dead(&entries[i]))
				continue;
			d = entry_distance(k, &entries[i]);
			if (wanted(k, &entries[i], d))
			{
				ItemPointerData tid = mih_entry_tid(&entries[i]);

				tidlist_push(&k->pending[d], &tid);
			}
		}
		pending = MihPageGetOpaque(page)->next;
		pending_serial = MihPageGetOpaque(page)->next_serial;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}

	/*
	 * No run yet (an index created empty, its rows all pending): the pending
	 * list was everything. Probing would only enumerate block values that no
	 * run holds, 2^(64/m) of them in the end (it once did: seconds at blocks
	 * = 2, a failed allocation of gigabytes at blocks = 1).
	 */
	if (k->nruns == 0)
	{
		k->bands = true;
		k->band_dist = k->limit;
		k->band_pos = KNN_ALL;
	}
	return k;
}

/*
 * Descents with the inner pages on the way kept in local memory: probe
 * values come sorted, so consecutive descents mostly share their inner
 * pages, and each probe then reads one leaf instead of a page per level.
 * The parent is searched each time (in memory), so a cached page is used
 * only when it is the child the search leads to.
 */

typedef struct DescentCache
{
	BlockNumber blk[MIH_MAX_HEIGHT + 1];	/* the copy of each level: which page */
	int			n[MIH_MAX_HEIGHT + 1];
	MihInnerItem *items[MIH_MAX_HEIGHT + 1];
} DescentCache;

static BlockNumber
cached_descend(Relation index, const MihRunHeader *hdr, int table, uint64 v, DescentCache *dc)
{
	BlockNumber blk = hdr->root[table];

	for (int level = hdr->height[table]; level > 0; level--)
	{
		if (dc->blk[level] != blk)
		{
			Buffer		buf = ReadBuffer(index, blk);
			Page		page;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			mih_check_scan_page(index, buf, blk, MIH_PAGE_INNER, (uint32) hdr->serial, table);
			dc->n[level] = MihPageGetNItems(page, sizeof(MihInnerItem));
			if (dc->items[level] == NULL)
				dc->items[level] = palloc(MIH_INNER_PER_PAGE * sizeof(MihInnerItem));
			memcpy(dc->items[level], MihPageGetInner(page), dc->n[level] * sizeof(MihInnerItem));
			dc->blk[level] = blk;
			UnlockReleaseBuffer(buf);
		}
		blk = mih_inner_child(dc->items[level], dc->n[level], v);
	}
	return blk;
}

/* What a probe of table j at level s takes (knn_visit). */
typedef struct KnnProbe
{
	MihKnn	   *k;
	int			j;
	int			s;
	int			settled;
	uint64		qrem;			/* q's bits outside block j (compact leaves) */
} KnnProbe;

/*
 * An entry whose block a probe value matched: taken at its canonical place
 * only, and only within the distances kept (keep_lo, keep]: a farther one
 * is noted, not kept (keep_more finds it again if the consumer gets there).
 */
static void
knn_visit(void *arg, const MihEntry *e)
{
	KnnProbe   *probe = (KnnProbe *) arg;
	MihKnn	   *k = probe->k;
	int			table = 0;
	int			d;

	if (mih_entry_dead(e) || mih_entry_is_null(e))
		return;
	d = simhash_hamming(mih_entry_fp(e), k->q);
	if (d <= k->keep_lo)
		return;
	if (d > k->keep)
	{
		if (d <= k->limit && d <= k->cutoff)
			k->skipped = true;
		return;
	}
	/* found here first: no block closer, no earlier table as close */
	if (min_block_distance(k, mih_entry_fp(e), &table) == probe->s && table == probe->j)
		take_probed(k, e, d, probe->settled);
}

/*
 * knn_visit for a compact leaf's group whose value a probe matched: an
 * entry's distance is its remainder's from q's plus the value's own, so
 * only the entries knn_visit would take are decoded; of the others, the
 * ones farther than kept but wanted are noted as knn_visit notes them.
 */
static void
knn_visit_group(void *arg, const MihCLeaf *c, int g)
{
	KnnProbe   *probe = (KnnProbe *) arg;
	MihKnn	   *k = probe->k;
	uint64		key = mih_cleaf_key(c, g);
	int			base = sh_popcount64((key ^ k->q) & k->masks[probe->j]);
	int			lo = k->keep_lo - base;
	int			hi = k->keep - base;
	int			noted = Min(k->limit, k->cutoff) - base;
	int			end = mih_cleaf_start(c, g + 1);

	for (int i = mih_cleaf_start(c, g); i < end; i++)
	{
		int			d = sh_popcount64(mih_cleaf_rem(c, i) ^ probe->qrem);

		if (d <= lo)
			continue;
		if (d > hi)
		{
			if (d <= noted &&
				!(mih_cleaf_tidval(c, i) & (MIH_CLEAF_DEAD | MIH_CLEAF_NULL)))
				k->skipped = true;
			continue;
		}
		{
			MihEntry	e;

			mih_cleaf_decode(c, i, key, &e);
			knn_visit(probe, &e);
		}
	}
}

/* how many probe values ahead a probe prefetches the leaf of */
#define KNN_PREFETCH_AHEAD	4

/*
 * probe_table for a run whose position index (mih_cache_pos.c) places each
 * value's entries: one known line of a leaf per value present, none for a
 * value the run lacks, the place of the value a few probes ahead
 * prefetched. Consecutive values often share a leaf (about four values a
 * leaf at 10M rows), which stays pinned and locked from one to the next.
 */
static void
probe_positioned(MihKnn *k, MihRunSummary *sum, const MihRunHeader *hdr, int j,
				 const uint64 *vals, int nvals, KnnProbe *probe)
{
	Relation	index = k->index;
	uint64		mask = k->masks[j];
	Buffer		buf = InvalidBuffer;
	int			bufslot = -1;
	BlockNumber leaf = InvalidBlockNumber;
	const MihEntry *entries = NULL;
	int			n = 0;

	for (int p = 0; p < nvals; p++)
	{
		uint32		first,
					left;
		int			slot,
					off;

		if (p + KNN_PREFETCH_AHEAD < nvals)
			mih_cache_prefetch_leaf(sum, j, vals[p + KNN_PREFETCH_AHEAD]);
		if (!mih_cache_position(sum, j, vals[p], &first, &left) || left == 0)
			continue;
		slot = first / MIH_ENTRIES_PER_PAGE;
		off = first % MIH_ENTRIES_PER_PAGE;
		while (left > 0)
		{
			if (slot != bufslot)
			{
				Page		page;

				if (BufferIsValid(buf))
					UnlockReleaseBuffer(buf);
				buf = InvalidBuffer;
				CHECK_FOR_INTERRUPTS();
				if (slot >= sum->ndir[j])
					mih_position_mismatch(index, leaf, n);	/* past the last leaf */
				leaf = sum->dir_leaves[j][slot];
				buf = mih_cache_read_leaf(index, sum, j, slot, leaf);
				LockBuffer(buf, BUFFER_LOCK_SHARE);
				page = BufferGetPage(buf);
				mih_check_scan_page(index, buf, leaf, MIH_PAGE_LEAF, (uint32) hdr->serial, j);
				if (mih_leaf_is_compact(page))
					mih_position_mismatch(index, leaf, off);	/* plain runs only */
				entries = MihPageGetEntries(page);
				n = MihPageGetNItems(page, sizeof(MihEntry));
				bufslot = slot;
				sum->spent++;
			}
			for (; off < n && left > 0; off++, left--)
			{
				if ((mih_entry_fp(&entries[off]) & mask) != vals[p])
					mih_position_mismatch(index, leaf, off);
				knn_visit(probe, &entries[off]);
			}
			if (left > 0)
			{
				slot++;
				off = 0;
			}
		}
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * Probe table j of a run with the sorted values, each exactly s bits from
 * q's block: take the entries whose canonical place this is. With what the
 * backend remembers of the run (sum, mih_cache.c; tables: those the run
 * serves), probe values its filter
 * rules out are dropped, descents are searches of its leaf directory, leaves
 * are pinned through the buffer they were last found in, and the leaf of
 * the value a few probes ahead is prefetched; otherwise each descent reads
 * the inner pages, the ones of the last descent kept (DescentCache).
 */
static void
probe_table(MihKnn *k, MihRunSummary *sum, uint32 tables, const MihRunHeader *hdr, int j,
			const uint64 *vals, int nvals, int s, int settled)
{
	Relation	index = k->index;
	uint64		mask = k->masks[j];
	BlockNumber leaf = InvalidBlockNumber;
	int			slot = -1;
	int			p = 0;
	DescentCache dc;
	KnnProbe	probe = {k, j, s, settled,
	mih_bits_gather(mih_bitmap(k->masks[j]), k->q)};
	uint64	   *kept = NULL;
	bool		directory;

	if (hdr->height[j] > MIH_MAX_HEIGHT)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("simhash index \"%s\" is corrupted: a run's tree is %d levels high, at most %d expected",
						RelationGetRelationName(index), hdr->height[j], MIH_MAX_HEIGHT),
				 errhint("REINDEX the index.")));
	if (sum)
	{
		mih_cache_consider_filters(index, sum, tables, k->masks);
		mih_cache_consider_positions(index, sum, tables, k->masks);
		if (sum->pos[j] && !(hdr->flags & MIH_RUN_COMPACT))
		{
			probe_positioned(k, sum, hdr, j, vals, nvals, &probe);
			return;
		}
		if (sum->filter[j])
		{
			kept = palloc(nvals * sizeof(uint64));
			nvals = mih_cache_filter_probes(sum, j, vals, nvals, kept);
			vals = kept;
		}
	}
	directory = sum && sum->dir_keys[j];
	memset(&dc, 0, sizeof(dc));
	for (int l = 0; l <= MIH_MAX_HEIGHT; l++)
		dc.blk[l] = InvalidBlockNumber;
	while (p < nvals)
	{
		Buffer		buf;
		Page		page;
		MihEntry   *entries;
		int			n;
		BlockNumber next;
		MihLeafStep step;

		CHECK_FOR_INTERRUPTS();
		if (leaf == InvalidBlockNumber)
		{
			if (directory)
			{
				leaf = mih_cache_leaf(index, sum, j, vals[p], &slot);
				if (p + KNN_PREFETCH_AHEAD < nvals)
					mih_cache_prefetch_leaf(sum, j, vals[p + KNN_PREFETCH_AHEAD]);
			}
			else
			{
				leaf = cached_descend(index, hdr, j, vals[p], &dc);
				slot = -1;
			}
		}
		buf = sum ? mih_cache_read_leaf(index, sum, j, slot, leaf) : ReadBuffer(index, leaf);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_scan_page(index, buf, leaf, MIH_PAGE_LEAF, (uint32) hdr->serial, j);
		next = MihPageGetOpaque(page)->next;
		if (mih_leaf_is_compact(page))
		{
			MihCLeaf	c;

			mih_cleaf_open(index, leaf, page, mask, &c);
			step = mih_probe_cleaf(&c, vals, nvals, &p, knn_visit_group, &probe);
		}
		else
		{
			entries = MihPageGetEntries(page);
			n = MihPageGetNItems(page, sizeof(MihEntry));
			step = mih_probe_leaf(entries, n, mask, vals, nvals, &p, knn_visit, &probe);
		}
		switch (step)
		{
			case MIH_LEAF_END:
				leaf = next;
				slot = slot >= 0 ? slot + 1 : -1;	/* the directory lists leaves in order */
				if (next == InvalidBlockNumber)
					p = nvals;
				break;
			case MIH_LEAF_DESCEND:
				leaf = InvalidBlockNumber;
				break;
			case MIH_PROBES_END:
				break;
		}
		UnlockReleaseBuffer(buf);
	}
	for (int l = 0; l <= MIH_MAX_HEIGHT; l++)
		if (dc.items[l])
			pfree(dc.items[l]);
	if (kept)
		pfree(kept);
}

/*
 * Probe table j at level s in every run that serves it, a chunk of probe
 * values at a time (one step of the search, or of keep_more's repeat).
 */
static void
probe_level_table(MihKnn *k, int s, int j)
{
	int			settled = k->nblocks * s + j - 1;
	bool		served = false;

	/* a table that no run serves has nothing to probe */
	for (int r = 0; r < k->nruns; r++)
		served |= (k->run_tables[r] & (1 << j)) != 0;
	if (served && s <= k->bits[j])
	{
		MihProbeIter it;
		uint64	   *vals = palloc(KNN_PROBE_CHUNK * sizeof(uint64));
		int			nvals;

		mih_probe_iter_init(&it, k->q, k->masks[j], s);
		while ((nvals = mih_probe_iter_next(&it, vals, KNN_PROBE_CHUNK)) > 0)
		{
			for (int r = 0; r < k->nruns; r++)
			{
				MihRunHeader hdr;
				MihRunSummary *sum;

				if (!(k->run_tables[r] & (1 << j)))
					continue;
				sum = mih_cache_run(k->index, k->runs, k->run_serials, k->run_tables, k->nruns, r);
				if (sum)
					hdr = sum->hdr;
				else
					mih_read_run_header(k->index, k->runs[r], k->run_serials[r], &hdr);
				probe_table(k, sum, k->run_tables[r], &hdr, j, vals, nvals, s, settled);
				mih_cache_release(sum);
			}
		}
		pfree(vals);
	}
}

/*
 * The next step: probe table k->table at level k->level in every run that
 * serves it. Afterwards every entry closer than m * level + table + 1 bits
 * is found (the blocks of the tables up to this one are at least level + 1
 * bits from q's, the others at least level bits), so the settled distance
 * grows by one bit a step.
 */
static void
probe_step(MihKnn *k)
{
	probe_level_table(k, k->level, k->table);
	if (++k->table == k->nblocks)
	{
		k->table = 0;
		k->level++;
	}
}

/*
 * The consumer has every row up to the distance kept: probe every step done
 * so far again, keeping the next KNN_KEEP_STEP bits of distance. Most of the
 * entries probing finds are far (a block equal to q's says little of the
 * other bits: at 10M rows a 10-NN query finds about 250,000 entries, most
 * 20-30 bits away, for neighbours 13 bits away), and keeping them cost a
 * fifth of the query; a query that reads that far pays the probing again
 * instead, once per KNN_KEEP_STEP bits.
 */
static void
keep_more(MihKnn *k)
{
	k->keep_lo = k->keep;
	k->keep = Min(k->keep + k->keep_step, SIMHASH_BITS);
	k->skipped = false;
	for (int s = 0; s <= k->level; s++)
		for (int j = 0; j < k->nblocks; j++)
		{
			if (s == k->level && j >= k->table)
				break;
			probe_level_table(k, s, j);
		}
	k->keep_lo = -1;
}

/* A band pass's boundaries as it goes (band_pass). */
typedef struct BandState
{
	int			lo_dist;		/* taken: after (lo_dist, lo_pos) ... */
	uint64		lo_pos;
	int			hi_dist;		/* ... up to (hi_dist, hi_pos) */
	uint64		hi_pos;
	int			top;			/* the farthest distance taken */
	int64		cap;			/* TIDs this pass may hold */
} BandState;

/* Take entry e, at position pos of table 0, if the pass wants it. */
static inline void
band_take(MihKnn *k, const MihEntry *e, uint64 pos, BandState *b)
{
	ItemPointerData tid;
	int			d;

	if (mih_entry_dead(e))
		return;
	d = entry_distance(k, e);
	if (d < b->lo_dist || (d == b->lo_dist && (b->lo_pos == KNN_ALL || pos <= b->lo_pos)) ||
		d > b->hi_dist || (d == b->hi_dist && pos > b->hi_pos) || !wanted(k, e, d))
		return;
	if (k->nfound >= b->cap)
	{
		if (d >= b->top)
		{
			/* the farthest yet: a later pass takes it and what follows */
			b->hi_dist = d;
			b->hi_pos = pos - 1;
			if (d > b->top)
			{
				b->hi_dist = b->top;
				b->hi_pos = KNN_ALL;
			}
			return;
		}
		/* nearer than the farthest list: that list goes */
		drop_found(k, b->top);
		b->hi_dist = b->top - 1;
		b->hi_pos = KNN_ALL;
		while (b->top > d && k->found[b->top].n == 0)
			b->top--;
	}
	tid = mih_entry_tid(e);
	tidlist_push(&k->found[d], &tid);
	k->nfound++;
	k->peakfound = Max(k->peakfound, k->nfound);
	b->top = Max(b->top, d);
}

/*
 * A band pass over one compact leaf: an entry's distance from q is its
 * group value's plus its remainder's, computed without decoding the entry
 * (as the radius scan's pass does, mih_scan_visit.c); only an entry within
 * the band's far boundary is decoded and taken. A NULL entry's stand-in
 * fingerprint says nothing of its place (after every distance), so the
 * shortcut applies only while the band ends before the NULL entries.
 */
static void
band_cleaf(MihKnn *k, Relation index, BlockNumber blk, Page page, uint64 *pos, BandState *b)
{
	MihCLeaf	c;
	uint64		mask = k->masks[0];
	uint64		qrem;

	mih_cleaf_open(index, blk, page, mask, &c);
	qrem = mih_bits_gather(c.bm, k->q);
	for (int g = 0; g < c.ngroups; g++)
	{
		int			start;
		int			end;
		uint64		key = mih_cleaf_group(index, blk, &c, g, mask, &start, &end);
		int			dk = sh_popcount64((key ^ k->q) & mask);
		const char *p;

		p = c.entries + start * c.width;
		for (int i = start; i < end; i++, p += c.width, (*pos)++)
		{
			MihEntry	e;

			if (b->hi_dist < KNN_NULL_DIST &&
				dk + sh_popcount64((mih_load_le64(p) & c.rem_mask) ^ qrem) > b->hi_dist)
				continue;
			mih_cleaf_decode(&c, i, key, &e);
			band_take(k, &e, *pos, b);
		}
	}
}

/*
 * One pass over table 0 of the runs serving it (each entry once), in its
 * order (run, leaf, item; positions stay put: runs are written once, and
 * bulk delete only marks entries dead): take the wanted entries after the
 * boundary (band_dist, band_pos), as many as the band holds (KNN_BAND_FIRST,
 * growing to work_mem), nearest first. When the lists are full, an entry
 * farther than every one taken is left for a later pass; a nearer one
 * pushes out the farthest distance's list. The boundary moves to the last
 * key every entry up to which was taken.
 */
static void
band_pass(MihKnn *k)
{
	BandState	b;
	uint64		pos = 0;

	Assert(k->nfound == 0);
	b.lo_dist = k->band_dist;
	b.lo_pos = k->band_pos;
	b.hi_dist = k->limit;
	b.hi_pos = KNN_ALL;
	b.top = -1;
	/* nothing is wanted after the boundary */
	if (b.lo_dist > k->limit || (b.lo_dist == k->limit && b.lo_pos == KNN_ALL))
		return;
	b.cap = k->band_cap;
	k->band_cap = Min(k->band_cap * KNN_BAND_GROWTH, k->maxfound);
	k->passes++;
	for (int r = 0; r < k->nruns; r++)
	{
		MihRunHeader hdr;
		BlockNumber leaf;

		if (!(k->run_tables[r] & 1))
			continue;
		mih_read_run_header(k->index, k->runs[r], k->run_serials[r], &hdr);
		for (leaf = hdr.first_leaf[0]; leaf != InvalidBlockNumber;)
		{
			Buffer		buf;
			Page		page;

			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(k->index, leaf);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			mih_check_scan_page(k->index, buf, leaf, MIH_PAGE_LEAF, (uint32) hdr.serial, 0);
			if (mih_leaf_is_compact(page))
				band_cleaf(k, k->index, leaf, page, &pos, &b);
			else
			{
				const MihEntry *entries = MihPageGetEntries(page);
				int			n = MihPageGetNItems(page, sizeof(MihEntry));

				for (int i = 0; i < n; i++, pos++)
					band_take(k, &entries[i], pos, &b);
			}
			leaf = MihPageGetOpaque(page)->next;
			UnlockReleaseBuffer(buf);
		}
	}
	k->band_dist = b.hi_dist;
	k->band_pos = b.hi_pos;
}

/*
 * Is probing on dearer than reading table 0 whole? A step reads about a
 * leaf per probe value and run (the inner pages are kept, see
 * cached_descend); a band pass reads table 0's leaves and computes every
 * entry's distance (band_cleaf), about MIH_KNN_ENTRY_PAGE_COST probes' time
 * a leaf (measured: 100k-1M uniform rows, 0.4 us a probe, 1.3 us a leaf).
 * Probing on means the steps up to the one that settles the distance at
 * which the table expects KNN_EXPECTED_ROWS rows (a LIMIT 10 query's;
 * uniform fingerprints): judging the next step alone let a search probe
 * the cheap first levels, then read table 0 anyway (a 10-NN query at 100k
 * rows spent 0.6 ms, against 0.25 ms reading table 0 at once). The next
 * step alone dearer than table 0 also ends probing.
 */
#define MIH_KNN_ENTRY_PAGE_COST 3
#define KNN_EXPECTED_ROWS 10

/* probe values of step (s, j) over the runs serving table j */
static double
step_probes(const MihKnn *k, int s, int j)
{
	double		probes = 0;

	if (s > k->bits[j])
		return 0;
	for (int r = 0; r < k->nruns; r++)
		if (k->run_tables[r] & (1 << j))
			probes += mih_probes_per_table(k->bits[j], s) - mih_probes_per_table(k->bits[j], s - 1);
	return probes;
}

static bool
step_dearer_than_table0(const MihKnn *k)
{
	double		table0 = 0;
	double		entries = 0;
	double		ahead = 0;
	int			want = 0;
	int			m = k->nblocks;

	for (int r = 0; r < k->nruns; r++)
		if (k->run_tables[r] & 1)
		{
			table0 += (double) k->run_entries[r] / MIH_ENTRIES_PER_PAGE;
			entries += (double) k->run_entries[r];
		}
	table0 *= MIH_KNN_ENTRY_PAGE_COST;
	if (step_probes(k, k->level, k->table) > table0)
		return true;
	/* the distance of the KNN_EXPECTED_ROWS-th row, and the steps to settle it */
	while (want < Min(k->limit, SIMHASH_BITS) &&
		   entries * hamming_within_prob(want) < KNN_EXPECTED_ROWS)
		want++;
	for (int s = k->level, j = k->table; m * s + j - 1 < want && s <= SIMHASH_BITS;)
	{
		ahead += step_probes(k, s, j);
		if (ahead > table0)
			return true;
		if (++j == m)
		{
			j = 0;
			s++;
		}
	}
	return false;
}

/* Every entry up to this distance is found (returned, or in the lists). */
static int
probe_settled(const MihKnn *k)
{
	return Min(Min(SIMHASH_BITS, k->nblocks * k->level + k->table - 1), k->cutoff);
}

static int
settled_distance(const MihKnn *k)
{
	if (k->bands)
		return k->band_dist;
	/* past keep, an entry may have been passed over */
	return k->skipped ? Min(probe_settled(k), k->keep) : probe_settled(k);
}

/*
 * Find more, once every list up to the settled distance is returned: the
 * next probe step, or the next band of table 0 (the first when probing
 * cannot go on: past the cutoff, every level probed, the NULL entries, or a
 * step dearer than reading table 0).
 */
static void
search_more(MihKnn *k)
{
	if (!k->bands)
	{
		bool		levels_left = false;
		int			settled = settled_distance(k);

		for (int j = 0; j < k->nblocks; j++)
			levels_left |= k->level <= k->bits[j];
		/* probing settled past what it kept: find the next distances again */
		if (k->skipped && settled == k->keep && settled < probe_settled(k))
		{
			keep_more(k);
			return;
		}
		if (levels_left && settled < k->cutoff && settled < SIMHASH_BITS &&
			!step_dearer_than_table0(k))
		{
			probe_step(k);
			return;
		}
		/* everything up to settled was returned; the farther lists are partial */
		for (int d = 0; d < KNN_NDIST; d++)
			drop_found(k, d);
		k->bands = true;
		k->band_dist = levels_left ? settled :
			Min(Min(k->cutoff, SIMHASH_BITS), k->skipped ? k->keep : SIMHASH_BITS);
		k->band_pos = KNN_ALL;
	}
	band_pass(k);
}

/*
 * The next row: its TID and distance (isnull for a NULL fingerprint, last).
 * Returns false at the end.
 */
bool
mih_knn_next(MihKnn *k, ItemPointer tid, int *dist, bool *isnull)
{
	for (;;)
	{
		int			settled = Min(settled_distance(k), k->limit);

		while (k->emit <= settled)
		{
			TidList    *l = &k->pending[k->emit];

			if (l->pos == l->n)
				l = &k->found[k->emit];
			if (l->pos < l->n)
			{
				*tid = l->tids[l->pos++];
				*isnull = k->emit == KNN_NULL_DIST;
				*dist = *isnull ? 0 : k->emit;
				return true;
			}
			drop_found(k, k->emit);
			/* a band that ends inside this distance: the next band goes on with it */
			if (k->bands && k->emit == k->band_dist && k->band_pos != KNN_ALL)
				break;
			tidlist_free(&k->pending[k->emit]);
			k->emit++;
		}
		if (k->emit > k->limit)
			return false;
		search_more(k);
	}
}

void
mih_knn_end(MihKnn *k)
{
	/* what TAP 024 reads to see the scan keep within work_mem */
	elog(DEBUG2, "simhash nearest-neighbour search: %d passes over table 0, at most %lld run entries held (work_mem holds %lld)",
		 k->passes, (long long) k->peakfound, (long long) k->maxfound);
	for (int d = 0; d < KNN_NDIST; d++)
	{
		tidlist_free(&k->found[d]);
		tidlist_free(&k->pending[d]);
	}
	pfree(k);
}
