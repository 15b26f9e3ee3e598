/*
 * mih_cache_pend.c
 *		A backend's summaries of full pending pages: each table's block
 *		values grouped by a hash, with the entry each belongs to, so that a
 *		radius search looks its few probe values up on a page instead of
 *		measuring the distance of every entry.
 *
 * Every search reads the whole pending list (up to pending_limit entries,
 * 4,096 by default), and every insert under the near-duplicate constraint
 * is such a search. Once the runs were probed by their position indexes
 * (mih_cache_pos.c), that linear pass was the largest part of a check. A
 * pending page that is full never changes again but for VACUUM's dead marks
 * (src/mih/README, "Who changes what"), and its serial names one use of its
 * block, so what a backend learns of a full page (blk, serial) stays true
 * until the page is merged away. A search with few probes (radius 3: one
 * per table) then looks each probe value up in the page's table of that
 * block, and checks only those entries on the page itself (distance, dead
 * and NULL flags), each reported by the first table whose block is near
 * enough, as in the runs. The tail page, which still grows, is read as
 * before.
 *
 * Built for a page once this backend's searches have read it linearly
 * MIH_PEND_BUILD_AFTER times (a build groups the page's entries by a hash
 * of their block value, once per table: a few linear passes' worth of
 * work), and only while the cache has room for it without dropping
 * anything: about 8 kB per table, 32 kB a page with 4 blocks.
 */
#include "mih.h"

#include "utils/memutils.h"

#define MIH_PEND_SUMMARIES		16	/* pages remembered per index */
#define MIH_PEND_BUILD_AFTER	8	/* linear passes before a page's summary */

/*
 * A table's entries on the page, grouped by a hash of their block value
 * into PEND_BUCKETS buckets (about half an entry each on a full page): a
 * lookup reads one pair of bucket bounds and a key or two, where a binary
 * search of the sorted values took ten dependent loads.
 */
#define PEND_BUCKET_BITS	10
#define PEND_BUCKETS		(1 << PEND_BUCKET_BITS)

typedef struct PendTable
{
	uint16		start[PEND_BUCKETS + 1];	/* bucket b: [start[b], start[b + 1]) */
	uint64		keys[MIH_ENTRIES_PER_PAGE]; /* block values, by bucket */
	uint16		idx[MIH_ENTRIES_PER_PAGE];	/* the entry of each */
} PendTable;

struct MihPendSummary
{
	BlockNumber blk;
	uint32		serial;			/* the page's serial: which use of the block */
	int			scans;			/* linear passes counted toward building */
	int			n;				/* entries summarised; 0: not built */
	int			ntables;
	PendTable  *tables;			/* ntables of them, or NULL */
	uint64	   *fps;			/* the n entries' fingerprints, with tables */
	/* the page after it, once it had one (InvalidBlockNumber until then) */
	BlockNumber next;
	uint32		next_serial;
};

typedef struct MihPendPages
{
	int			next;			/* the slot the next new page takes */
	MihPendSummary slot[MIH_PEND_SUMMARIES];
} MihPendPages;

static inline uint32
pend_bucket(uint64 v)
{
	return (uint32) ((v * UINT64CONST(0x9E3779B97F4A7C15)) >> (64 - PEND_BUCKET_BITS));
}

#define PEND_SUMMARY_BYTES(ntables) \
	((ntables) * sizeof(PendTable) + MIH_ENTRIES_PER_PAGE * sizeof(uint64))

static void
forget_page(MihPendSummary *ps)
{
	if (ps->tables)
	{
		pfree(ps->tables);
		mih_cache_unreserve(PEND_SUMMARY_BYTES(ps->ntables));
	}
	memset(ps, 0, sizeof(*ps));
	ps->blk = InvalidBlockNumber;
	ps->next = InvalidBlockNumber;
}

/* Group the page's entries by bucket, table by table (a counting sort). */
static void
build_page(MihPendSummary *ps, const MihEntry *entries, int n, int nblocks, const uint64 *masks)
{
	Size		bytes = PEND_SUMMARY_BYTES(nblocks);

	if (n > MIH_ENTRIES_PER_PAGE || !mih_cache_reserve(bytes))
		return;
	ps->tables = MemoryContextAllocZero(mih_cache_context(), bytes);
	ps->fps = (uint64 *) (ps->tables + nblocks);
	ps->ntables = nblocks;
	for (int i = 0; i < n; i++)
		ps->fps[i] = mih_entry_fp(&entries[i]);
	for (int j = 0; j < nblocks; j++)
	{
		PendTable  *t = &ps->tables[j];
		uint16		fill[PEND_BUCKETS];

		for (int i = 0; i < n; i++)
			t->start[pend_bucket(mih_entry_fp(&entries[i]) & masks[j]) + 1]++;
		for (int b = 0; b < PEND_BUCKETS; b++)
		{
			t->start[b + 1] += t->start[b];
			fill[b] = t->start[b];
		}
		for (int i = 0; i < n; i++)
		{
			uint64		key = mih_entry_fp(&entries[i]) & masks[j];
			int			at = fill[pend_bucket(key)]++;

			t->keys[at] = key;
			t->idx[at] = (uint16) i;
		}
	}
	ps->n = n;
}

static MihPendPages *
get_pages(struct MihPendPages **slot)
{
	if (*slot == NULL)
	{
		*slot = MemoryContextAllocZero(mih_cache_context(), sizeof(MihPendPages));
		for (int i = 0; i < MIH_PEND_SUMMARIES; i++)
			(*slot)->slot[i].blk = InvalidBlockNumber;
	}
	return *slot;
}

/*
 * The summary of full pending page (blk, serial) whose n entries the caller
 * holds locked, or NULL: then the caller reads the page linearly, and this
 * counts the pass toward building one. next and next_serial are the page's
 * link as read under that lock, remembered once the page has one.
 */
const MihPendSummary *
mih_cache_pending_summary(Relation index, BlockNumber blk, uint32 serial,
						  const MihEntry *entries, int n, int nblocks, const uint64 *masks,
						  BlockNumber next, uint32 next_serial)
{
	struct MihPendPages **slot = mih_cache_pending_pages(index);
	MihPendPages *pages;
	MihPendSummary *ps = NULL;

	if (slot == NULL || n != MIH_ENTRIES_PER_PAGE)
		return NULL;
	pages = get_pages(slot);
	for (int i = 0; i < MIH_PEND_SUMMARIES; i++)
		if (pages->slot[i].blk == blk)
		{
			ps = &pages->slot[i];
			if (ps->serial != serial)
			{
				/* the block is another page now */
				forget_page(ps);
				ps->blk = blk;
				ps->serial = serial;
			}
			break;
		}
	if (ps == NULL)
	{
		ps = &pages->slot[pages->next];
		pages->next = (pages->next + 1) % MIH_PEND_SUMMARIES;
		forget_page(ps);
		ps->blk = blk;
		ps->serial = serial;
	}
	if (ps->next == InvalidBlockNumber)
	{
		ps->next = next;
		ps->next_serial = next_serial;
	}
	if (ps->n == n && ps->ntables == nblocks)
		return ps;
	if (++ps->scans >= MIH_PEND_BUILD_AFTER && ps->tables == NULL)
	{
		build_page(ps, entries, n, nblocks, masks);
		if (ps->n == n)
			return ps;
	}
	return NULL;
}

/*
 * Before reading full pending page (blk, serial): when this backend has its
 * summary and knows the page after it, and no entry found through the
 * probes (each table j's values vals[j][0 .. nvals[j])) lies within r of q,
 * the page holds no match (its fingerprints never change; dead marks only
 * take matches away), so the caller goes on to *next without reading it.
 * False when the page must be read: no summary, no link yet, or a candidate
 * whose flags only the page tells.
 */
bool
mih_cache_pending_skip(Relation index, BlockNumber blk, uint32 serial, int nblocks,
					   uint64 *const *vals, const int *nvals, SimHash q, int r,
					   BlockNumber *next, uint32 *next_serial)
{
	struct MihPendPages **slot = mih_cache_pending_pages(index);
	const MihPendSummary *ps = NULL;

	if (slot == NULL || *slot == NULL)
		return false;
	for (int i = 0; i < MIH_PEND_SUMMARIES; i++)
		if ((*slot)->slot[i].blk == blk)
		{
			ps = &(*slot)->slot[i];
			break;
		}
	if (ps == NULL || ps->serial != serial || ps->n != MIH_ENTRIES_PER_PAGE ||
		ps->ntables != nblocks || ps->next == InvalidBlockNumber)
		return false;
	for (int j = 0; j < nblocks; j++)
		for (int p = 0; p < nvals[j]; p++)
		{
			uint16		idx[MIH_ENTRIES_PER_PAGE];
			int			cnt = mih_pend_find(ps, j, vals[j][p], idx);

			for (int k = 0; k < cnt; k++)
				if (sh_popcount64(ps->fps[idx[k]] ^ q) <= r)
					return false;
		}
	*next = ps->next;
	*next_serial = ps->next_serial;
	return true;
}

/*
 * Table j's entries on the page whose block value is v: *idx receives their
 * indexes (room for MIH_ENTRIES_PER_PAGE); returns how many.
 */
int
mih_pend_find(const MihPendSummary *ps, int j, uint64 v, uint16 *idx)
{
	const PendTable *t = &ps->tables[j];
	uint32		b = pend_bucket(v);
	int			cnt = 0;

	for (int k = t->start[b]; k < t->start[b + 1]; k++)
		if (t->keys[k] == v)
			idx[cnt++] = t->idx[k];
	return cnt;
}

void
mih_cache_free_pending_pages(struct MihPendPages *pages)
{
	if (pages == NULL)
		return;
	for (int i = 0; i < MIH_PEND_SUMMARIES; i++)
		forget_page(&pages->slot[i]);
	pfree(pages);
}
