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
 * Found entries wait in one bucket per distance (0..64), so returning them
 * in order costs nothing. When probing the next level would read more pages
 * than reading table 0 whole (every entry once), the search reads table 0
 * once and settles everything. Rows with a NULL fingerprint come last, as in
 * a sequential scan; they have NULL entries (mih.h), collected from the
 * pending list and from table 0 once every distance has been returned.
 *
 * Radius conditions of the same scan (fp <@ ball) filter the entries and
 * bound the search: nothing beyond the smallest radius is looked for.
 */
#include "mih.h"

#include "miscadmin.h"

typedef struct TidList
{
	ItemPointerData *tids;
	int64		n;
	int64		cap;
	int64		pos;			/* next to return */
} TidList;

struct MihKnn
{
	Relation	index;
	SimHash		q;
	int			nballs;
	const SimHash *centers;
	const int  *radii;
	int			maxdist;		/* no match lies farther (the smallest radius) */
	bool		want_nulls;		/* no radius condition: NULL rows come last */

	/* the index as the scan saw it at its start */
	int			nblocks;
	uint64		masks[MIH_MAX_BLOCKS];
	int			bits[MIH_MAX_BLOCKS];
	int			nruns;
	BlockNumber runs[MIH_MAX_RUNS];
	uint32		run_serials[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];
	int64		run_entries[MIH_MAX_RUNS];

	TidList		buckets[SIMHASH_BITS + 1];
	TidList		nulls;
	int			level;			/* the next step probes this level ... */
	int			table;			/* ... in this table */
	bool		complete;		/* every entry found (table 0 read whole) */
	bool		nulls_found;	/* every NULL entry found */
	int			emit;			/* the distance being returned */
};

static void
list_push(TidList *l, ItemPointer tid)
{
	if (l->n == l->cap)
	{
		l->cap = Max(l->cap * 2, 64);
		l->tids = l->tids ? repalloc_huge(l->tids, l->cap * sizeof(ItemPointerData))
			: palloc(l->cap * sizeof(ItemPointerData));
	}
	l->tids[l->n++] = *tid;
}

static inline bool
knn_matches(const MihKnn *k, SimHash fp)
{
	for (int i = 0; i < k->nballs; i++)
		if (simhash_hamming(fp, k->centers[i]) > k->radii[i])
			return false;
	return true;
}

/* The smallest block distance of fp from q, and the first table with it. */
static inline int
min_block_distance(const MihKnn *k, SimHash fp, int *table)
{
	uint64		diff = fp ^ k->q;
	int			best = SIMHASH_BITS + 1;

	for (int j = 0; j < k->nblocks; j++)
	{
		int			d = pg_popcount64(diff & k->masks[j]);

		if (d < best)
		{
			best = d;
			*table = j;
		}
	}
	return best;
}

/* Take a live, non-NULL entry into its distance's bucket if it matches. */
static inline void
take(MihKnn *k, const MihEntry *e)
{
	SimHash		fp = mih_entry_fp(e);
	int			dist = simhash_hamming(fp, k->q);
	ItemPointerData tid;

	if (dist > k->maxdist || !knn_matches(k, fp))
		return;
	tid = mih_entry_tid(e);
	list_push(&k->buckets[dist], &tid);
}

/* Keep a NULL entry for the end, when the scan returns NULL rows. */
static inline void
take_null(MihKnn *k, const MihEntry *e)
{
	ItemPointerData tid;

	if (!k->want_nulls)
		return;
	tid = mih_entry_tid(e);
	list_push(&k->nulls, &tid);
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
	k->maxdist = SIMHASH_BITS;
	for (int i = 0; i < nballs; i++)
		k->maxdist = Min(k->maxdist, radii[i]);
	k->want_nulls = (nballs == 0);
	k->level = 0;
	k->table = 0;

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
		mih_check_page(index, page, pending, MIH_PAGE_PENDING, pending_serial, -1);
		entries = MihPageGetEntries(page);
		n = MihPageGetNItems(page, sizeof(MihEntry));
		for (int i = 0; i < n; i++)
		{
			if (mih_entry_dead(&entries[i]))
				continue;
			if (mih_entry_is_null(&entries[i]))
				take_null(k, &entries[i]);
			else
				take(k, &entries[i]);
		}
		pending = MihPageGetOpaque(page)->next;
		pending_serial = MihPageGetOpaque(page)->next_serial;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}

	/*
	 * No run yet (an index created empty, its rows all pending): the pending
	 * list was everything, and the NULL entries are among it. Probing would
	 * only enumerate block values that no run holds, 2^(64/m) of them in
	 * the end (issue 22: seconds at blocks = 2, an allocation of gigabytes
	 * at blocks = 1).
	 */
	if (k->nruns == 0)
	{
		k->complete = true;
		k->nulls_found = true;
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
/* deeper than any run's tree: 680 items an inner page make 3 levels hold 10^11 entries */
#define MIH_MAX_HEIGHT 8

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
			mih_check_page(index, page, blk, MIH_PAGE_INNER, (uint32) hdr->serial, table);
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

/*
 * Probe table j of a run with the sorted values, each exactly s bits from
 * q's block: take the entries whose canonical place this is.
 */
static void
probe_table(MihKnn *k, const MihRunHeader *hdr, int j, const uint64 *vals, int nvals, int s)
{
	Relation	index = k->index;
	uint64		mask = k->masks[j];
	BlockNumber leaf = InvalidBlockNumber;
	int			p = 0;
	DescentCache dc;

	if (hdr->height[j] > MIH_MAX_HEIGHT)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("simhash index \"%s\" is corrupted: a run's tree is %d levels high, at most %d expected",
						RelationGetRelationName(index), hdr->height[j], MIH_MAX_HEIGHT),
				 errhint("REINDEX the index.")));
	memset(&dc, 0, sizeof(dc));
	for (int l = 0; l <= MIH_MAX_HEIGHT; l++)
		dc.blk[l] = InvalidBlockNumber;
	while (p < nvals)
	{
		Buffer		buf;
		Page		page;
		MihEntry   *entries;
		int			n;
		int			pos = 0;
		BlockNumber next;

		CHECK_FOR_INTERRUPTS();
		if (leaf == InvalidBlockNumber)
			leaf = cached_descend(index, hdr, j, vals[p], &dc);
		buf = ReadBuffer(index, leaf);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_page(index, page, leaf, MIH_PAGE_LEAF, (uint32) hdr->serial, j);
		entries = MihPageGetEntries(page);
		n = MihPageGetNItems(page, sizeof(MihEntry));
		next = MihPageGetOpaque(page)->next;
		for (;;)
		{
			uint64		v = vals[p];

			pos = mih_lower_bound(entries, pos, n, mask, v);
			for (; pos < n && (mih_entry_fp(&entries[pos]) & mask) == v; pos++)
			{
				int			table = 0;

				if (mih_entry_dead(&entries[pos]) || mih_entry_is_null(&entries[pos]))
					continue;
				/* found here first: no block closer, no earlier table as close */
				if (min_block_distance(k, mih_entry_fp(&entries[pos]), &table) == s &&
					table == j)
					take(k, &entries[pos]);
			}
			if (pos == n)
			{
				/* the value may go on in the next leaf */
				leaf = next;
				if (next == InvalidBlockNumber)
					p = nvals;
				break;
			}
			if (++p >= nvals)
				break;
			if ((mih_entry_fp(&entries[n - 1]) & mask) < vals[p])
			{
				leaf = InvalidBlockNumber;	/* descend again */
				break;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	for (int l = 0; l <= MIH_MAX_HEIGHT; l++)
		if (dc.items[l])
			pfree(dc.items[l]);
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
	int			s = k->level;
	int			j = k->table;
	uint64	   *vals = NULL;
	int			nvals = 0;
	bool		served = false;

	/* a table that no run serves has nothing to probe */
	for (int r = 0; r < k->nruns; r++)
		served |= (k->run_tables[r] & (1 << j)) != 0;
	if (served && s <= k->bits[j])
		vals = mih_table_probes_exact(k->q, k->masks[j], s, &nvals);
	for (int r = 0; r < k->nruns && vals != NULL; r++)
	{
		MihRunHeader hdr;

		if (!(k->run_tables[r] & (1 << j)))
			continue;
		mih_read_run_header(k->index, k->runs[r], k->run_serials[r], &hdr);
		probe_table(k, &hdr, j, vals, nvals, s);
	}
	if (vals)
		pfree(vals);
	if (++k->table == k->nblocks)
	{
		k->table = 0;
		k->level++;
	}
}

/* Was this fingerprint's canonical place probed already? */
static inline bool
found_already(const MihKnn *k, SimHash fp)
{
	int			table = 0;
	int			d = min_block_distance(k, fp, &table);

	return d < k->level || (d == k->level && table < k->table);
}

/*
 * Read table 0 of the runs serving it (each entry once): take every entry not
 * found yet (unless nulls_only), and the NULL entries.
 */
static void
read_table0(MihKnn *k, bool nulls_only)
{
	for (int r = 0; r < k->nruns; r++)
	{
		Buffer		buf;
		MihRunHeader hdr;
		BlockNumber leaf;

		if (!(k->run_tables[r] & 1))
			continue;
		mih_read_run_header(k->index, k->runs[r], k->run_serials[r], &hdr);
		for (leaf = hdr.first_leaf[0]; leaf != InvalidBlockNumber;)
		{
			Page		page;
			MihEntry   *entries;
			int			n;

			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(k->index, leaf);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			mih_check_page(k->index, page, leaf, MIH_PAGE_LEAF, (uint32) hdr.serial, 0);
			entries = MihPageGetEntries(page);
			n = MihPageGetNItems(page, sizeof(MihEntry));
			for (int i = 0; i < n; i++)
			{
				if (mih_entry_dead(&entries[i]))
					continue;
				if (mih_entry_is_null(&entries[i]))
					take_null(k, &entries[i]);
				else if (!nulls_only && !found_already(k, mih_entry_fp(&entries[i])))
					take(k, &entries[i]);
			}
			leaf = MihPageGetOpaque(page)->next;
			UnlockReleaseBuffer(buf);
		}
	}
	k->nulls_found = true;
	if (!nulls_only)
		k->complete = true;
}

/*
 * Is the next step dearer than reading table 0 whole? A step reads about a
 * leaf per probe value and run (the inner pages are kept, see
 * cached_descend); reading table 0 reads its leaves and also computes and
 * files every entry, which costs about MIH_KNN_ENTRY_PAGE_COST probes per
 * leaf of entries.
 */
#define MIH_KNN_ENTRY_PAGE_COST 8

static bool
step_dearer_than_table0(const MihKnn *k)
{
	double		probes = 0;
	double		table0 = 0;
	int			s = k->level;
	int			j = k->table;

	for (int r = 0; r < k->nruns; r++)
	{
		if (k->run_tables[r] & 1)
			table0 += (double) k->run_entries[r] / MIH_ENTRIES_PER_PAGE;
		if ((k->run_tables[r] & (1 << j)) && s <= k->bits[j])
			probes += mih_probes_per_table(k->bits[j], s) - mih_probes_per_table(k->bits[j], s - 1);
	}
	return probes > table0 * MIH_KNN_ENTRY_PAGE_COST;
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
		int			settled;

		/* everything up to m * level + table - 1 bits is found (probe_step) */
		if (k->complete)
			settled = SIMHASH_BITS;
		else
			settled = Min(SIMHASH_BITS, k->nblocks * k->level + k->table - 1);
		settled = Min(settled, k->maxdist);
		while (k->emit <= settled)
		{
			TidList    *b = &k->buckets[k->emit];

			if (b->pos < b->n)
			{
				*tid = b->tids[b->pos++];
				*dist = k->emit;
				*isnull = false;
				return true;
			}
			if (b->tids)
				pfree(b->tids);
			memset(b, 0, sizeof(*b));
			k->emit++;
		}
		if (k->emit > k->maxdist)
		{
			/* every distance returned: the NULL rows */
			if (!k->want_nulls)
				return false;
			if (!k->nulls_found)
				read_table0(k, true);
			if (k->nulls.pos < k->nulls.n)
			{
				*tid = k->nulls.tids[k->nulls.pos++];
				*dist = 0;
				*isnull = true;
				return true;
			}
			return false;
		}
		/* more is needed: the next step, or table 0 whole */
		{
			bool		any = false;

			for (int j = 0; j < k->nblocks; j++)
				if (k->level <= k->bits[j])
					any = true;
			if (!any)
				k->complete = true; /* every block is within level - 1 bits */
			else if (step_dearer_than_table0(k))
				read_table0(k, false);
			else
				probe_step(k);
		}
	}
}

void
mih_knn_end(MihKnn *k)
{
	for (int d = 0; d <= SIMHASH_BITS; d++)
		if (k->buckets[d].tids)
			pfree(k->buckets[d].tids);
	if (k->nulls.tids)
		pfree(k->nulls.tids);
	pfree(k);
}
