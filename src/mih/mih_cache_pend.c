/*
 * mih_cache_pend.c
 *		A backend's summaries of pending pages: each table's block values
 *		chained by a hash, with the entry each belongs to, so that a radius
 *		search looks its few probe values up on a page instead of measuring
 *		the distance of every entry.
 *
 * Every search reads the whole pending list (up to pending_limit entries,
 * 4,096 by default), and every insert under the near-duplicate constraint
 * is such a search. Once the runs were probed by their position indexes
 * (mih_cache_pos.c), that linear pass was the largest part of a check. A
 * pending page only grows at its end, and only while it is the tail; its
 * entries never change but for VACUUM's dead marks (src/mih/README, "Who
 * changes what"), and its serial names one use of its block. So what a
 * backend learns of the first n entries of a page (blk, serial) stays true
 * until the page is merged away, and the entries appended since are added
 * at the next read. A search with few probes (radius 3: one per table) then
 * looks each probe value up in the page's table of that block, and checks
 * only those entries on the page itself (distance, dead and NULL flags),
 * each reported by the first table whose block is near enough, as in the
 * runs. Once a page was read with a link to the next one it no longer
 * grows (it filled, or a flush sealed it), and a search that its summary
 * shows nothing within reach passes it unread (mih_cache_pending_skip).
 *
 * Built for a page once this backend's searches have read it linearly
 * MIH_PEND_BUILD_AFTER times, and only while the cache has room for it
 * without dropping anything: about 3 kB per table and 5 kB of fingerprints,
 * 17 kB a page with 4 blocks.
 */
#include "mih.h"
#include "mih_cache.h"

#include "utils/memutils.h"

#define MIH_PEND_SUMMARIES		16	/* pages remembered per index */
#define MIH_PEND_BUILD_AFTER	8	/* linear passes before a page's summary */

/*
 * A table's entries on the page, chained by a hash of their block value
 * into PEND_BUCKETS buckets (about half an entry each on a full page): a
 * lookup reads a bucket's head and an entry or two, where a binary search
 * of sorted values took ten dependent loads; and an entry appended to the
 * page is appended here in constant time.
 */
#define PEND_BUCKET_BITS	10
#define PEND_BUCKETS		(1 << PEND_BUCKET_BITS)

typedef struct PendTable
{
	uint16		head[PEND_BUCKETS]; /* 1 + the last entry of bucket b; 0: none */
	uint16		prev[MIH_ENTRIES_PER_PAGE]; /* 1 + the entry before it in its
											 * bucket; 0: none */
} PendTable;

struct MihPendSummary
{
	BlockNumber blk;
	uint32		serial;			/* the page's serial: which use of the block */
	int			scans;			/* linear passes counted toward building */
	int			n;				/* the first n entries are summarised */
	int			ntables;
	PendTable  *tables;			/* ntables of them, or NULL: not built */
	uint64	   *fps;			/* the n entries' fingerprints, with tables */
	uint64		masks[MIH_MAX_BLOCKS];
	/*
	 * the page after it, once it was summarised with one: then n is all it
	 * holds (InvalidBlockNumber until then)
	 */
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

/* Add entries [ps->n, n) of the page to its summary. */
static void
extend_page(MihPendSummary *ps, const MihEntry *entries, int n)
{
	for (int i = ps->n; i < n; i++)
	{
		SimHash		fp = mih_entry_fp(&entries[i]);

		ps->fps[i] = fp;
		for (int j = 0; j < ps->ntables; j++)
		{
			PendTable  *t = &ps->tables[j];
			uint32		b = pend_bucket(fp & ps->masks[j]);

			t->prev[i] = t->head[b];
			t->head[b] = (uint16) (i + 1);
		}
	}
	ps->n = n;
}

/* Room for a page's summary, if the cache has it without dropping anything. */
static void
build_page(MihPendSummary *ps, int nblocks, const uint64 *masks)
{
	Size		bytes = PEND_SUMMARY_BYTES(nblocks);

	if (!mih_cache_reserve(bytes))
		return;
	ps->tables = MemoryContextAllocZero(mih_cache_context(), bytes);
	ps->fps = (uint64 *) (ps->tables + nblocks);
	ps->ntables = nblocks;
	memcpy(ps->masks, masks, nblocks * sizeof(uint64));
	ps->n = 0;
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
 * The summary of the first n entries of pending page (blk, serial), which
 * the caller holds locked, or NULL: then the caller reads the page
 * linearly, and this counts the pass toward building one. The tail page
 * has one too: a page only grows at its end (src/mih/README, "Who changes
 * what"), so the entries appended since the last read are added to it.
 * next and next_serial are the page's link as read under that lock; once
 * it has one, n is all the page will hold.
 */
const MihPendSummary *
mih_cache_pending_summary(Relation index, BlockNumber blk, uint32 serial,
						  const MihEntry *entries, int n, int nblocks, const uint64 *masks,
						  BlockNumber next, uint32 next_serial)
{
	struct MihPendPages **slot = mih_cache_pending_pages(index);
	MihPendPages *pages;
	MihPendSummary *ps = NULL;

	if (slot == NULL || n <= 0 || n > MIH_ENTRIES_PER_PAGE)
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
	if (ps->tables == NULL)
	{
		if (++ps->scans < MIH_PEND_BUILD_AFTER)
			return NULL;
		build_page(ps, nblocks, masks);
		if (ps->tables == NULL)
			return NULL;
	}
	if (ps->ntables != nblocks || n < ps->n)
		return NULL;			/* not the page it was: read it */
	extend_page(ps, entries, n);
	if (next != InvalidBlockNumber)
	{
		ps->next = next;
		ps->next_serial = next_serial;
	}
	return ps;
}

/*
 * Before reading pending page (blk, serial): when this backend has its
 * whole summary and knows the page after it, and no entry found through
 * the probes (each table j's values vals[j][0 .. nvals[j])) lies within r
 * of q, the page holds no match (it no longer grows, its fingerprints never
 * change, dead marks only take matches away), so the caller goes on to
 * *next without reading it. False when the page must be read: no summary,
 * no link yet, or a candidate whose flags only the page tells.
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
	if (ps == NULL || ps->serial != serial || ps->tables == NULL ||
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
 * Table j's summarised entries whose block value is v: *idx receives their
 * indexes in ascending order (room for MIH_ENTRIES_PER_PAGE); returns how
 * many.
 */
int
mih_pend_find(const MihPendSummary *ps, int j, uint64 v, uint16 *idx)
{
	const PendTable *t = &ps->tables[j];
	uint64		mask = ps->masks[j];
	int			cnt = 0;

	for (int k = t->head[pend_bucket(v)]; k != 0; k = t->prev[k - 1])
		if ((ps->fps[k - 1] & mask) == v)
			idx[cnt++] = (uint16) (k - 1);
	/* the chain runs from the last entry back: the page's order */
	for (int a = 0, b = cnt - 1; a < b; a++, b--)
	{
		uint16		x = idx[a];

		idx[a] = idx[b];
		idx[b] = x;
	}
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
