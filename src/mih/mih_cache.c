/*
 * mih_cache.c
 *		What a backend remembers of the index's runs between scans: each
 *		run's header, its tables' leaf directories and, for small runs,
 *		which block values they hold at all.
 *
 * A radius search probes every run and table: four descents per run for
 * the near-duplicate constraint's radius 3, so an insert under the
 * constraint read about 40 pages for a dozen runs, most of them inner pages
 * and small runs that hold no entry with the probed value. Runs never
 * change once written (src/mih/README, "Who changes what": only VACUUM's
 * dead marks on leaves), so what a backend learns of one stays true for as
 * long as the metapage lists it, and a scan that finds the run in its copy
 * of the metapage (same header block, same serial) may use it:
 *
 * - the header (root, height and first leaf of each table);
 * - a leaf directory per table: the first key and block of every leaf,
 *   flattened from the inner pages just above the leaves, so a descent is
 *   one binary search in memory and one leaf read (the leaf is still
 *   checked to be the run's, mih_check_page);
 * - a filter per table for runs of at most MIH_CACHE_FILTER_MAX entries:
 *   one bit per hashed block value present (dead and NULL entries count),
 *   so a probe value absent from the run is not searched at all. Built
 *   once this backend has spent in the run about as many page reads as
 *   building it costs (one pass over one table's leaves).
 *
 * Radius scans (mih_scan.c) and the nearest-neighbour search's probes
 * (mih_knn.c) use them alike.
 *
 * Memory: at most simhash.index_cache_size per backend, over all indexes;
 * a summary that would not fit empties the cache first, and one that does
 * not fit alone is not kept (scans then descend as without the cache).
 * Summaries of runs a scan no longer finds listed are dropped. Entries of
 * an index are dropped on any relcache invalidation of it (a REINDEX,
 * TRUNCATE or DROP) and when its file changes. A scan pins the summary it
 * uses; one dropped while pinned is freed when the last pin goes, or at
 * the end of the transaction, when no scan remains.
 */
#include "mih.h"
#include "mih_cache.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/buf_internals.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#if defined(__GNUC__) || defined(__clang__)
#define USE_PREFETCH_LEAVES
#endif

#define MIH_CACHE_HINTS		32	/* buffer hints per index, by block number */

/* GUC simhash.index_cache_size, in kB */
int			mih_cache_size_kb = 8192;

/*
 * A pending page whose first nentries entries hold no live match of a ball,
 * and the page after it when it already had one (then it no longer grows:
 * inserts write only the tail, which has no link; it changes only by dead
 * marks, so the whole page holds no match)
 */
typedef struct MihPendingChecked
{
	BlockNumber blk;
	uint32		serial;			/* the page's serial: which use of the block */
	int			nentries;
	BlockNumber next;			/* InvalidBlockNumber: it was the tail */
	uint32		next_serial;
} MihPendingChecked;

typedef struct MihCachedIndex
{
	Oid			relid;
	RelFileNumber relfile;
	MihRunSummary *runs;		/* linked by next */
	/* the pending pages the last single-ball scan found nothing on */
	SimHash		pend_q;
	int			pend_r;
	int			npend;
	int			pend_next;		/* the slot the next page replaces when full */
	MihPendingChecked pend[MIH_CACHE_PENDING_PAGES];
	struct MihPendPages *pages; /* pending pages' summaries
								 * (mih_cache_pend.c), or NULL */
	/* the buffer the metapage and pending pages were last found in */
	BlockNumber hint_blk[MIH_CACHE_HINTS];
	Buffer		hint_buf[MIH_CACHE_HINTS];
	struct MihCachedIndex *next;
} MihCachedIndex;

static MemoryContext cache_cxt = NULL;
static MihCachedIndex *cached_indexes = NULL;
/* dropped while pinned: freed at the last release or the transaction's end */
static MihRunSummary *orphans = NULL;
static Size cache_bytes = 0;
static bool callbacks_registered = false;

static void
free_summary(MihRunSummary *s)
{
	for (int j = 0; j < MIH_MAX_BLOCKS; j++)
	{
		if (s->filter[j])
			pfree(s->filter[j]);
		if (s->dir_keys[j])
			pfree(s->dir_keys[j]);
		if (s->dir_leaves[j])
			pfree(s->dir_leaves[j]);
		if (s->dir_bufs[j])
			pfree(s->dir_bufs[j]);
	}
	mih_cache_free_positions(s);
	mih_cache_free_screen(s);
	cache_bytes -= s->bytes;
	pfree(s);
}

/* Drop a summary already unlinked from its index: now, or when unpinned. */
static void
drop_summary(MihRunSummary *s)
{
	if (s->pins > 0)
	{
		s->next = orphans;
		orphans = s;
	}
	else
		free_summary(s);
}

static void
drop_index(MihCachedIndex *ci)
{
	while (ci->runs)
	{
		MihRunSummary *s = ci->runs;

		ci->runs = s->next;
		drop_summary(s);
	}
	ci->npend = 0;
	mih_cache_free_pending_pages(ci->pages);
	ci->pages = NULL;
	for (int i = 0; i < MIH_CACHE_HINTS; i++)
		ci->hint_blk[i] = InvalidBlockNumber;
}

/* Forget every index (relid InvalidOid) or one, keeping nothing of it. */
static void
forget_indexes(Oid relid)
{
	MihCachedIndex **link = &cached_indexes;

	while (*link)
	{
		MihCachedIndex *ci = *link;

		if (relid == InvalidOid || ci->relid == relid)
		{
			*link = ci->next;
			drop_index(ci);
			pfree(ci);
		}
		else
			link = &ci->next;
	}
}

static void
relcache_callback(Datum arg, Oid relid)
{
	forget_indexes(relid);
}

/* No scan outlives its transaction: every pin is gone. */
static void
xact_callback(XactEvent event, void *arg)
{
	MihCachedIndex *ci;

	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			for (ci = cached_indexes; ci; ci = ci->next)
				for (MihRunSummary *s = ci->runs; s; s = s->next)
					s->pins = 0;
			while (orphans)
			{
				MihRunSummary *s = orphans;

				orphans = s->next;
				free_summary(s);
			}
			break;
		default:
			break;
	}
}

/* Called once, from _PG_init. */
void
mih_cache_init(void)
{
	if (callbacks_registered)
		return;
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	RegisterXactCallback(xact_callback, NULL);
	callbacks_registered = true;
}

static Size
cache_limit(void)
{
	return (Size) mih_cache_size_kb * 1024;
}

/*
 * Count bytes more against the limit if they fit without dropping anything,
 * for what is only worth building while the cache has room (mih_cache_pos.c);
 * the caller adds them to its summary's bytes, which free_summary returns.
 */
bool
mih_cache_reserve(Size bytes)
{
	if (cache_bytes + bytes > cache_limit())
		return false;
	cache_bytes += bytes;
	return true;
}

/* Would bytes more fit without dropping anything? (Nothing is counted.) */
bool
mih_cache_has_room(Size bytes)
{
	return cache_bytes + bytes <= cache_limit();
}

void
mih_cache_unreserve(Size bytes)
{
	Assert(cache_bytes >= bytes);
	cache_bytes -= bytes;
}

/* Where summaries live (created with the first one) */
MemoryContext
mih_cache_context(void)
{
	Assert(cache_cxt != NULL);
	return cache_cxt;
}

static MihCachedIndex *
find_index(Relation index, bool create)
{
	MihCachedIndex *ci;

	for (ci = cached_indexes; ci; ci = ci->next)
		if (ci->relid == RelationGetRelid(index))
			break;
	if (ci && ci->relfile != SH_REL_FILENUMBER(index))
	{
		/* a new file (its serials start again): nothing known holds */
		drop_index(ci);
		ci->relfile = SH_REL_FILENUMBER(index);
	}
	if (ci == NULL && create)
	{
		if (cache_cxt == NULL)
			cache_cxt = AllocSetContextCreate(TopMemoryContext, "simhash index cache",
											  ALLOCSET_DEFAULT_SIZES);
		ci = MemoryContextAllocZero(cache_cxt, sizeof(MihCachedIndex));
		for (int i = 0; i < MIH_CACHE_HINTS; i++)
			ci->hint_blk[i] = InvalidBlockNumber;
		ci->relid = RelationGetRelid(index);
		ci->relfile = SH_REL_FILENUMBER(index);
		ci->next = cached_indexes;
		cached_indexes = ci;
	}
	return ci;
}

/*
 * Where an index's pending page summaries hang (mih_cache_pend.c), or NULL
 * when the cache is off.
 */
struct MihPendPages **
mih_cache_pending_pages(Relation index)
{
	if (mih_cache_size_kb == 0)
		return NULL;
	return &find_index(index, true)->pages;
}

/* Drop the summaries of runs the metapage no longer lists. */
static void
prune(MihCachedIndex *ci, const BlockNumber *runs, const uint32 *serials, int nruns)
{
	MihRunSummary **link = &ci->runs;

	while (*link)
	{
		MihRunSummary *s = *link;
		bool		listed = false;

		for (int r = 0; r < nruns && !listed; r++)
			listed = (runs[r] == s->head && serials[r] == s->serial);
		if (listed)
			link = &s->next;
		else
		{
			*link = s->next;
			drop_summary(s);
		}
	}
}

/*
 * Make room for bytes more; false if they would not fit even alone. Frees
 * every summary (of every index) when the rest is full: simple, and the
 * summaries of the runs in use come back on their next scans.
 */
static bool
make_room(Size bytes)
{
	if (bytes > cache_limit())
		return false;
	if (cache_bytes + bytes > cache_limit())
		forget_indexes(InvalidOid);
	return true;
}

/* Append the items of every level-1 inner page under blk, in key order. */
static void
collect_leaves(Relation index, const MihRunHeader *hdr, int table, BlockNumber blk, int level,
			   uint64 **keys, BlockNumber **leaves, int *n, int *cap)
{
	Buffer		buf = ReadBuffer(index, blk);
	Page		page;
	int			nitems;
	MihInnerItem *items;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	mih_check_scan_page(index, buf, blk, MIH_PAGE_INNER, (uint32) hdr->serial, table);
	nitems = MihPageGetNItems(page, sizeof(MihInnerItem));
	items = palloc(Max(nitems, 1) * sizeof(MihInnerItem));
	memcpy(items, MihPageGetInner(page), nitems * sizeof(MihInnerItem));
	UnlockReleaseBuffer(buf);

	for (int i = 0; i < nitems; i++)
	{
		if (level > 1)
		{
			CHECK_FOR_INTERRUPTS();
			collect_leaves(index, hdr, table, items[i].child, level - 1, keys, leaves, n, cap);
			continue;
		}
		if (*n == *cap)
		{
			*cap *= 2;
			*keys = repalloc(*keys, *cap * sizeof(uint64));
			*leaves = repalloc(*leaves, *cap * sizeof(BlockNumber));
		}
		(*keys)[*n] = mih_inner_key(&items[i]);
		(*leaves)[*n] = items[i].child;
		(*n)++;
	}
	pfree(items);
}

/*
 * The leaf directories of the tables a run serves, built in the caller's
 * memory, then copied into the cache if they fit. A run whose root is a
 * leaf needs none.
 */
static void
build_directories(Relation index, MihRunSummary *s, uint32 tables)
{
	uint64	   *keys[MIH_MAX_BLOCKS] = {0};
	BlockNumber *leaves[MIH_MAX_BLOCKS] = {0};
	int			n[MIH_MAX_BLOCKS] = {0};
	Size		bytes = 0;

	for (int j = 0; j < s->hdr.ntables; j++)
	{
		int			cap = 64;

		if (!(tables & (1 << j)) || s->hdr.height[j] == 0)
			continue;
		if (s->hdr.height[j] > MIH_MAX_HEIGHT)
			return;				/* mih_descend reports it */
		keys[j] = palloc(cap * sizeof(uint64));
		leaves[j] = palloc(cap * sizeof(BlockNumber));
		collect_leaves(index, &s->hdr, j, s->hdr.root[j], s->hdr.height[j],
					   &keys[j], &leaves[j], &n[j], &cap);
		bytes += n[j] * (sizeof(uint64) + sizeof(BlockNumber) + sizeof(Buffer));
	}
	if (bytes == 0 || !make_room(s->bytes + bytes))
		return;
	for (int j = 0; j < s->hdr.ntables; j++)
	{
		if (n[j] == 0)
			continue;
		s->dir_keys[j] = MemoryContextAlloc(cache_cxt, n[j] * sizeof(uint64));
		s->dir_leaves[j] = MemoryContextAlloc(cache_cxt, n[j] * sizeof(BlockNumber));
		memcpy(s->dir_keys[j], keys[j], n[j] * sizeof(uint64));
		memcpy(s->dir_leaves[j], leaves[j], n[j] * sizeof(BlockNumber));
		s->dir_bufs[j] = MemoryContextAlloc(cache_cxt, n[j] * sizeof(Buffer));
		for (int i = 0; i < n[j]; i++)
			s->dir_bufs[j][i] = InvalidBuffer;
		s->ndir[j] = n[j];
	}
	s->bytes += bytes;
	cache_bytes += bytes;
}

/*
 * The summary of run r of a scan's copy of the metapage (runs, serials,
 * run_tables), pinned: release it with mih_cache_release. NULL when the
 * cache is off (simhash.index_cache_size = 0) or has no room for it; the
 * caller then reads the header and descends as usual.
 */
MihRunSummary *
mih_cache_run(Relation index, const BlockNumber *runs, const uint32 *serials,
			  const uint32 *run_tables, int nruns, int r)
{
	MihCachedIndex *ci;
	MihRunSummary *s;
	MihRunHeader hdr;

	if (mih_cache_size_kb == 0)
	{
		forget_indexes(InvalidOid);
		return NULL;
	}
	ci = find_index(index, true);
	for (s = ci->runs; s; s = s->next)
		if (s->head == runs[r] && s->serial == serials[r])
		{
			s->pins++;
			return s;
		}

	/* a run this backend has not seen: forget those gone meanwhile */
	prune(ci, runs, serials, nruns);
	mih_read_run_header(index, runs[r], serials[r], &hdr);
	if (!make_room(sizeof(MihRunSummary)))
		return NULL;
	ci = find_index(index, true);	/* make_room may have emptied the cache */
	s = MemoryContextAllocZero(cache_cxt, sizeof(MihRunSummary));
	s->head = runs[r];
	s->serial = serials[r];
	s->hdr = hdr;
	s->bytes = sizeof(MihRunSummary);
	cache_bytes += s->bytes;
	s->next = ci->runs;
	ci->runs = s;
	s->pins = 1;
	PG_TRY();
	{
		build_directories(index, s, run_tables[r]);
	}
	PG_CATCH();
	{
		/* a page that is not the run's: the error stands, the summary goes */
		s->pins = 0;
		forget_indexes(RelationGetRelid(index));
		PG_RE_THROW();
	}
	PG_END_TRY();
	return s;
}

/*
 * The summary of a run if this backend has one, not pinned: for a caller
 * that uses it at once and keeps no pointer (prefetching), nothing else.
 */
MihRunSummary *
mih_cache_peek(Relation index, BlockNumber head, uint32 serial)
{
	MihCachedIndex *ci;

	if (mih_cache_size_kb == 0 || (ci = find_index(index, false)) == NULL)
		return NULL;
	for (MihRunSummary *s = ci->runs; s; s = s->next)
		if (s->head == head && s->serial == serial)
			return s;
	return NULL;
}

void
mih_cache_release(MihRunSummary *s)
{
	if (s == NULL || s->pins == 0)
		return;
	if (--s->pins > 0)
		return;
	/* an orphan: unlink and free it */
	for (MihRunSummary **link = &orphans; *link; link = &(*link)->next)
		if (*link == s)
		{
			*link = s->next;
			free_summary(s);
			return;
		}
}

/*
 * The directory slot of the leaf to read for v: as mih_inner_child, the last
 * leaf whose first key is < v, else the first.
 */
static inline int
dir_slot(const MihRunSummary *s, int j, uint64 v)
{
	const uint64 *keys = s->dir_keys[j];
	int			lo = 0;
	int			hi = s->ndir[j] - 1;
	int			off,
				group;

	/* a run with compact leaves: looked up, unless the run lacks v */
	if (mih_cache_place(s, j, v, &lo, &off, &group) && lo >= 0)
		return lo;
	lo = 0;

	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (keys[mid] < v)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * The leaf of table j where entries with key >= v start: from the
 * directory when the run has one (*slot: its place there, for
 * mih_cache_read_leaf), else by a descent from the root (*slot = -1).
 */
BlockNumber
mih_cache_leaf(Relation index, MihRunSummary *s, int j, uint64 v, int *slot)
{
	if (s->dir_keys[j] == NULL)
	{
		*slot = -1;
		s->spent += s->hdr.height[j] + 1;
		return mih_descend(index, &s->hdr, j, v);
	}
	s->spent++;
	*slot = dir_slot(s, j, v);
	return s->dir_leaves[j][*slot];
}

/*
 * Pin block blk through *hint, the buffer it was found in last time, when it
 * is still there (ReadRecentBuffer checks the buffer's tag), which spares
 * the lookup in the shared buffer mapping: a few cache misses that were a
 * sixth of a constraint check's time. Else read it and remember where.
 * Counted in the index's I/O statistics as ReadBuffer counts a hit.
 */
static Buffer
read_hinted(Relation index, BlockNumber blk, Buffer *hint)
{
	if (BufferIsValid(*hint) &&
		ReadRecentBuffer(SH_REL_LOCATOR(index), MAIN_FORKNUM, blk, *hint))
	{
		pgstat_count_buffer_read(index);
		pgstat_count_buffer_hit(index);
		return *hint;
	}
	*hint = ReadBuffer(index, blk);
	return *hint;
}

/* Pin leaf blk, the directory's slot of table j (or -1), through its hint. */
Buffer
mih_cache_read_leaf(Relation index, MihRunSummary *s, int j, int slot, BlockNumber blk)
{
	if (slot < 0 || s->dir_bufs[j] == NULL || slot >= s->ndir[j] || s->dir_leaves[j][slot] != blk)
		return ReadBuffer(index, blk);
	return read_hinted(index, blk, &s->dir_bufs[j][slot]);
}

/*
 * Pin one of the pages every search reads, the metapage or a pending page,
 * through its hint (one per block number modulo MIH_CACHE_HINTS).
 */
Buffer
mih_cache_read_hinted(Relation index, BlockNumber blk)
{
	MihCachedIndex *ci;
	int			h = blk % MIH_CACHE_HINTS;

	if (mih_cache_size_kb == 0)
		return ReadBuffer(index, blk);
	ci = find_index(index, true);
	if (ci->hint_blk[h] != blk)
	{
		ci->hint_blk[h] = blk;
		ci->hint_buf[h] = InvalidBuffer;
	}
	return read_hinted(index, blk, &ci->hint_buf[h]);
}

#ifdef USE_PREFETCH_LEAVES
/*
 * Ask for the memory of a leaf in buffer buf: its buffer header, page
 * header, special space and the line of one entry.
 */
static inline void
prefetch_leaf_at(Buffer buf, int entry)
{
	char	   *block;

	if (!BufferIsValid(buf) || BufferIsLocal(buf))
		return;
	__builtin_prefetch(GetBufferDescriptor(buf - 1));
	block = (char *) BufferGetBlock(buf);
	__builtin_prefetch(block);
	__builtin_prefetch(block + BLCKSZ - MAXALIGN(sizeof(MihPageOpaqueData)));
	__builtin_prefetch(block + MAXALIGN(SizeOfPageHeaderData) + entry * sizeof(MihEntry));
}
#endif

/*
 * Ask the CPU for the memory of the leaf of table j that holds v, where the
 * directory says it was last found: its buffer header, page header, special
 * space and the entries around where v's position is guessed. A scan calls
 * this for every table of a run as it enters the run, so the misses of the
 * four leaves a radius-3 probe reads overlap instead of following one
 * another (on an index larger than the CPU's caches, the leaves' cache
 * misses were most of a constraint check's time). Only a hint: nothing is
 * read or pinned, and a buffer since reused just wastes the prefetch.
 */
void
mih_cache_prefetch_leaf(MihRunSummary *s, int j, uint64 v)
{
#ifdef USE_PREFETCH_LEAVES
	const uint64 *keys = s->dir_keys[j];
	int			lo;
	Buffer		buf;
	char	   *block;
	int			guess = 0;

	if (keys == NULL)
		return;
	if (s->pos[j] && !(s->hdr.flags & MIH_RUN_COMPACT))
	{
		uint32		first,
					count;

		/* the very line where v's entries start */
		if (!mih_cache_position(s, j, v, &first, &count) || count == 0)
			return;
		lo = first / MIH_ENTRIES_PER_PAGE;
		if (lo < s->ndir[j])
			prefetch_leaf_at(s->dir_bufs[j][lo], first % MIH_ENTRIES_PER_PAGE);
		return;
	}
	if (s->pos[j] && (s->hdr.flags & MIH_RUN_COMPACT))
	{
		int			slot,
					off,
					group;

		/* the leaf's header, v's group key, and the line of v's first entry */
		if (!mih_cache_place(s, j, v, &slot, &off, &group) || slot < 0)
			return;				/* the run lacks v: nothing will be read */
		buf = s->dir_bufs[j][slot];
		if (!BufferIsValid(buf) || BufferIsLocal(buf))
			return;
		prefetch_leaf_at(buf, 0);
		block = (char *) BufferGetBlock(buf);
		if (group >= 0)
			__builtin_prefetch(block + MAXALIGN(SizeOfPageHeaderData) +
							   sizeof(MihCompactLeaf) + group * sizeof(uint64));
		__builtin_prefetch(block + off);
		return;
	}
	lo = dir_slot(s, j, v);
	buf = s->dir_bufs[j][lo];
	if (!BufferIsValid(buf) || BufferIsLocal(buf))
		return;
	prefetch_leaf_at(buf, MIH_ENTRIES_PER_PAGE - 1);
	block = (char *) BufferGetBlock(buf);
	if (lo + 1 < s->ndir[j] && keys[lo + 1] > keys[lo] && v > keys[lo])
		guess = (int) ((double) (v - keys[lo]) / (double) (keys[lo + 1] - keys[lo]) *
					   (MIH_ENTRIES_PER_PAGE - 1));
	guess = Min(Max(guess, 0), MIH_ENTRIES_PER_PAGE - 1);
	__builtin_prefetch(block + MAXALIGN(SizeOfPageHeaderData) + guess * sizeof(MihEntry));
#endif
}

/*
 * Searches that come back empty, remembered: the near-duplicate
 * constraint's check under INSERT ... ON CONFLICT runs twice for every row
 * (before the row is inserted, and again after, for rows inserted
 * concurrently), with the same ball, and a user's "is there a near-copy?"
 * query before an INSERT is a third. When a run had no live entry within r
 * of q, it never will: a run only loses entries to dead marks, so the scan
 * may skip it for (q, r). The same holds for the
 * first n entries of a pending page: a page only grows at its end, and
 * only while it is the tail, and an entry is never removed from it, only
 * marked dead (src/mih/README, "Who changes what"); a page's serial names
 * one use of its block. Only the last ball's pending pages are kept (the
 * checks of one row follow one another); a few balls per run.
 *
 * A run's emptiness holds for that radius only, not for smaller ones: a
 * search reports an entry from the first table whose block is within that
 * table's share of the radius (mih_table_radii), and a run that VACUUM's
 * table folds left serving only some tables leaves to another run the
 * entries whose first table it lost. At a smaller radius the shares change
 * and such an entry may fall to a table this run still serves (radius 4
 * gives table 0 one bit, radius 3 none: an entry one bit away in block 0 is
 * table 0's at 4 and table 1's at 3). Found by TAP 011 when smaller radii
 * were allowed. The pending list is checked by distance alone, so a page
 * without a match within r has none within any smaller radius.
 */
bool
mih_cache_run_empty(const MihRunSummary *s, SimHash q, int r)
{
	for (int i = 0; i < s->nempty; i++)
		if (s->empty_q[i] == q && s->empty_r[i] == r)
			return true;
	return false;
}

void
mih_cache_note_run_empty(MihRunSummary *s, SimHash q, int r)
{
	if (mih_cache_run_empty(s, q, r))
		return;
	if (s->nempty < MIH_CACHE_EMPTY_BALLS)
		s->nempty++;
	s->empty_q[s->empty_next] = q;
	s->empty_r[s->empty_next] = r;
	s->empty_next = (s->empty_next + 1) % MIH_CACHE_EMPTY_BALLS;
}

/*
 * How many first entries of pending page blk (serial) hold no match of
 * (q, r). When the page was no longer the tail as it was checked, *next and
 * *next_serial name the page after it, and the caller need not read it at
 * all (the second check of a row under ON CONFLICT then reads only the
 * tail); otherwise *next is InvalidBlockNumber.
 */
int
mih_cache_pending_checked(Relation index, SimHash q, int r, BlockNumber blk, uint32 serial,
						  BlockNumber *next, uint32 *next_serial)
{
	MihCachedIndex *ci;

	*next = InvalidBlockNumber;
	*next_serial = 0;
	if (mih_cache_size_kb == 0 || (ci = find_index(index, false)) == NULL ||
		ci->npend == 0 || ci->pend_q != q || ci->pend_r < r)
		return 0;
	for (int i = 0; i < ci->npend; i++)
		if (ci->pend[i].blk == blk && ci->pend[i].serial == serial)
		{
			*next = ci->pend[i].next;
			*next_serial = ci->pend[i].next_serial;
			return ci->pend[i].nentries;
		}
	return 0;
}

/*
 * Remember that the first nentries entries of pending page blk (serial)
 * hold no match of (q, r); next and next_serial are the page's link as read
 * under its lock (InvalidBlockNumber while it is the tail).
 */
void
mih_cache_note_pending(Relation index, SimHash q, int r, BlockNumber blk, uint32 serial,
					   int nentries, BlockNumber next, uint32 next_serial)
{
	MihCachedIndex *ci;
	int			i;

	if (mih_cache_size_kb == 0)
		return;
	ci = find_index(index, true);
	if (ci->npend > 0 && (ci->pend_q != q || ci->pend_r != r))
		ci->npend = ci->pend_next = 0;	/* another ball: start again */
	ci->pend_q = q;
	ci->pend_r = r;
	for (i = 0; i < ci->npend; i++)
		if (ci->pend[i].blk == blk)
			break;
	if (i == ci->npend)
	{
		if (ci->npend < MIH_CACHE_PENDING_PAGES)
			ci->npend++;
		else
		{
			i = ci->pend_next;
			ci->pend_next = (ci->pend_next + 1) % MIH_CACHE_PENDING_PAGES;
		}
	}
	ci->pend[i].blk = blk;
	ci->pend[i].serial = serial;
	ci->pend[i].nentries = nentries;
	ci->pend[i].next = next;
	ci->pend[i].next_serial = next_serial;
}

/* Which bit of a table's filter a block value sets. */
static inline uint32
filter_bit(uint64 v)
{
	return (uint32) ((v * UINT64CONST(0x9E3779B97F4A7C15)) >> (64 - MIH_CACHE_FILTER_LOG2));
}

/*
 * Read every leaf of table t of a run, in order, and hand each one's
 * entries (share-locked meanwhile) to visit: the one pass over a run from
 * which a backend builds its filters and position indexes. Returns the
 * number of entries read.
 */
int64
mih_cache_walk_table(Relation index, const MihRunSummary *s, int t,
					 void (*visit) (void *arg, const MihEntry *entries, int n), void *arg)
{
	int64		total = 0;
	MihEntry   *scratch = palloc(MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));

	for (BlockNumber leaf = s->hdr.first_leaf[t]; leaf != InvalidBlockNumber;)
	{
		Buffer		buf = ReadBuffer(index, leaf);
		Page		page;
		const MihEntry *entries;
		int			n;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		mih_check_scan_page(index, buf, leaf, MIH_PAGE_LEAF, s->serial, t);
		entries = mih_leaf_entries(index, leaf, page, s->masks[t], scratch, &n);
		visit(arg, entries, n);
		total += n;
		leaf = MihPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
	pfree(scratch);
	return total;
}

/* Building a small run's filters: every entry sets its value's bit in each table's. */
typedef struct FilterBuild
{
	const MihRunSummary *s;
	uint32		tables;
	uint64	   *bits;			/* the tables' filters, one after another */
} FilterBuild;

static void
filter_leaf(void *arg, const MihEntry *entries, int n)
{
	FilterBuild *fb = (FilterBuild *) arg;

	for (int i = 0; i < n; i++)
	{
		SimHash		fp = mih_entry_fp(&entries[i]);
		int			k = 0;

		for (int j = 0; j < fb->s->hdr.ntables; j++)
			if (fb->tables & (1 << j))
			{
				uint32		b = filter_bit(fp & fb->s->masks[j]);

				fb->bits[k * (MIH_CACHE_FILTER_BYTES / sizeof(uint64)) + b / 64] |=
					UINT64CONST(1) << (b % 64);
				k++;
			}
	}
}

/*
 * Build the filters of a small run once this backend has spent about as
 * many page reads in it as one pass over one table's leaves costs: the
 * pass reads a table the run serves (each table holds every entry) and
 * sets, for every entry, its block value's bit in every table's filter.
 */
static void
build_filters(Relation index, MihRunSummary *s, uint32 tables)
{
	int			t = -1;
	uint64	   *bits;
	Size		bytes;
	int			nserved = 0;
	FilterBuild fb;

	s->filter_tried = true;
	for (int j = 0; j < s->hdr.ntables; j++)
		if (tables & (1 << j))
		{
			if (t < 0)
				t = j;
			nserved++;
		}
	if (t < 0)
		return;
	bytes = (Size) nserved * MIH_CACHE_FILTER_BYTES;
	fb.s = s;
	fb.tables = tables;
	fb.bits = bits = palloc0(bytes);
	mih_cache_walk_table(index, s, t, filter_leaf, &fb);
	if (!make_room(bytes))
	{
		pfree(bits);
		return;
	}
	/* make_room may have dropped s itself: only a pinned s is still ours */
	{
		int			k = 0;

		for (int j = 0; j < s->hdr.ntables; j++)
			if (tables & (1 << j))
			{
				s->filter[j] = MemoryContextAlloc(cache_cxt, MIH_CACHE_FILTER_BYTES);
				memcpy(s->filter[j], bits + k * (MIH_CACHE_FILTER_BYTES / sizeof(uint64)),
					   MIH_CACHE_FILTER_BYTES);
				k++;
			}
		s->bytes += bytes;
		cache_bytes += bytes;
	}
	pfree(bits);
}

/*
 * Called by a scan as it starts table j of a run: builds the run's filters
 * when they pay (see build_filters). masks are the index's block masks.
 */
void
mih_cache_consider_filters(Relation index, MihRunSummary *s, uint32 tables, const uint64 *masks)
{
	if (s->filter_tried || s->hdr.nentries > MIH_CACHE_FILTER_MAX)
		return;
	if (s->spent < s->hdr.nentries / MIH_ENTRIES_PER_PAGE + 1)
		return;
	memcpy(s->masks, masks, sizeof(s->masks));
	build_filters(index, s, tables);
}

/* Whether table j of the run may hold an entry whose block is v. */
bool
mih_cache_may_hold(const MihRunSummary *s, int j, uint64 v)
{
	uint32		b;

	if (s->filter[j] == NULL)
		return true;
	b = filter_bit(v);
	return (s->filter[j][b / 64] >> (b % 64)) & 1;
}

/* The probe values of table j the run's filter lets through, into out; how many. */
int
mih_cache_filter_probes(const MihRunSummary *s, int j, const uint64 *vals, int nvals, uint64 *out)
{
	int			n = 0;

	for (int i = 0; i < nvals; i++)
		if (mih_cache_may_hold(s, j, vals[i]))
			out[n++] = vals[i];
	return n;
}
