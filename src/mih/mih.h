/*
 * mih.h
 *		The "simhash" index access method: multi-index hashing over
 *		block-partitioned 64-bit fingerprints. Shared declarations.
 *
 * Structure (see README.md, "The index", and src/mih/README):
 *
 * - Block 0 is the metapage: options frozen at build (number of blocks m and
 *   their bit masks), the list of runs, the pending list, and pages waiting
 *   to be recycled.
 * - A run is immutable once written: for each table j (one per block) a
 *   static B+tree whose leaves hold every entry (fingerprint, heap TID) of
 *   the run sorted by (fp & mask[j], fp). Entries whose block j equals a
 *   probe value are therefore contiguous and found by one descent. A leaf
 *   is plain (14-byte entries) or, when the run's values repeat, compact
 *   (each value once per group, the other bits and a packed TID: 10 bytes
 *   an entry with 4 blocks; mih_leaf.h).
 * - A run may serve only some tables: VACUUM folds one table at a time
 *   (mih_merge.c), writing a run with table j alone from every run that
 *   has table j, which then stop serving it (run_gone on the metapage).
 *   The invariant every search relies on: for each table j, the runs that
 *   serve j hold every merged entry exactly once between them.
 * - Inserts append to the pending list, scanned linearly by every search.
 *   When it passes its limit, its sealed pages become a new run, and runs
 *   of similar size are merged (an LSM tree, size-tiered), so N rows need
 *   O(log N) runs; VACUUM merges further.
 * - A search of radius r probes, in every run and table j, each value within
 *   s = floor(r / m) bits of the query's block j (pigeonhole: a match within
 *   r bits has at least one such block), checks each candidate's full
 *   distance inside the index, and reports a candidate only from the first
 *   table whose block is within s bits, so every match comes back once.
 *
 * Every page change is WAL-logged through GenericXLog, except pages written
 * by CREATE INDEX, which are logged in bulk with log_newpage_range.
 */
#ifndef SIMHASH_MIH_H
#define SIMHASH_MIH_H

#include "simhash.h"
#include "ball.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "access/transam.h"
#include "access/relscan.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/tidbitmap.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

/* ---- limits and defaults ---- */
#define MIH_MAGIC				0x4D494831	/* "MIH1" */
/*
 * On-disk versions: 2 may hold compact leaves (mih_leaf.h), which a library
 * that knows only 1 must not read; a version 1 index is read as it is and
 * keeps writing plain leaves until REINDEX.
 */
#define MIH_VERSION				2
#define MIH_VERSION_PLAIN		1
#define MIH_METAPAGE_BLKNO		0
#define MIH_MIN_BLOCKS			1
#define MIH_MAX_BLOCKS			16
#define MIH_DEFAULT_BLOCKS		4
#define MIH_MIN_PENDING_LIMIT	64
#define MIH_MAX_PENDING_LIMIT	(1024 * 1024)
#define MIH_DEFAULT_PENDING_LIMIT 4096
#define MIH_MAX_RUNS			48
#define MIH_MAX_RETIRED			(MIH_MAX_RUNS + 16)
/* a search enumerating more probe values than this reads whole tables */
#define MIH_MAX_PROBES			4096
/* an insert merges inline only while the merge stays this small */
#define MIH_MAX_INLINE_MERGE	(1024 * 1024)

/* ---- page types (MihPageOpaque.type) ---- */
#define MIH_PAGE_META		1
#define MIH_PAGE_PENDING	2
#define MIH_PAGE_RUNHEAD	3
#define MIH_PAGE_LEAF		4
#define MIH_PAGE_INNER		5
#define MIH_PAGE_FREE		6
#define MIH_PAGE_RETIRED	7	/* older entries of the retired list */
#define MIH_PAGE_RESERVED	8	/* taken by a run writer, not written yet:
								 * serial says whose (see src/mih/README) */

/* identifies our pages for tools such as pg_filedump */
#define MIH_PAGE_ID			0xFF93

typedef struct MihPageOpaqueData
{
	BlockNumber next;			/* pending: next page; leaf: right sibling */
	uint32		serial;			/* run pages: the run's serial (low 32 bits);
								 * pending pages: the page's own serial */
	uint32		next_serial;	/* pending: serial of the next page */
	uint16		type;			/* MIH_PAGE_* */
	uint16		table;			/* leaf/inner: which table (block) */
	uint16		level;			/* inner: 1 = just above the leaves */
	uint16		page_id;		/* MIH_PAGE_ID */
} MihPageOpaqueData;

typedef MihPageOpaqueData *MihPageOpaque;

#define MihPageGetOpaque(page) ((MihPageOpaque) PageGetSpecialPointer(page))

/*
 * An entry: the fingerprint (8 bytes, unaligned) and the heap TID, packed
 * to 14 bytes. VACUUM marks an entry dead by setting the top bit of the
 * TID's offset (offsets never reach it), so a dead entry keeps its identity:
 * a merge can then drop every copy of an entry that a crash left dead in
 * some tables of a run and live in others.
 */
typedef struct MihEntry
{
	uint8		fp[8];
	ItemPointerData tid;
} MihEntry;

/* An inner B+tree item: the first key (masked fingerprint) below child. */
typedef struct MihInnerItem
{
	uint8		key[8];
	BlockNumber child;
} MihInnerItem;

static inline SimHash
mih_entry_fp(const MihEntry *e)
{
	SimHash		v;

	memcpy(&v, e->fp, sizeof(v));
	return v;
}

static inline void
mih_entry_set(MihEntry *e, SimHash fp, ItemPointer tid)
{
	memcpy(e->fp, &fp, sizeof(fp));
	e->tid = *tid;
}

#define MIH_DEAD_FLAG	0x8000

/*
 * A row whose fingerprint is NULL is indexed too, so that an ordered scan
 * (ORDER BY fp <-> q) can return it last, as a sequential scan does: its
 * entry carries this flag in the TID's offset and a stand-in fingerprint
 * derived from the TID (mih_null_fp), which spreads such entries over the
 * block values like random fingerprints. Searches by radius skip them.
 */
#define MIH_NULL_FLAG	0x4000
#define MIH_TID_FLAGS	(MIH_DEAD_FLAG | MIH_NULL_FLAG)
StaticAssertDecl(MaxOffsetNumber < MIH_NULL_FLAG, "the flags must lie above every offset");

static inline bool
mih_entry_dead(const MihEntry *e)
{
	return (e->tid.ip_posid & MIH_DEAD_FLAG) != 0;
}

static inline bool
mih_entry_is_null(const MihEntry *e)
{
	return (e->tid.ip_posid & MIH_NULL_FLAG) != 0;
}

static inline void
mih_entry_set_dead(MihEntry *e)
{
	e->tid.ip_posid |= MIH_DEAD_FLAG;
}

/* the heap TID, without the flags */
static inline ItemPointerData
mih_entry_tid(const MihEntry *e)
{
	ItemPointerData tid = e->tid;

	tid.ip_posid &= ~MIH_TID_FLAGS;
	return tid;
}

/* The stand-in fingerprint of a NULL entry: a mix (splitmix64) of its TID. */
static inline SimHash
mih_null_fp(ItemPointer tid)
{
	uint64		z = ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		(ItemPointerGetOffsetNumberNoCheck(tid) & ~MIH_TID_FLAGS);

	z += UINT64CONST(0x9E3779B97F4A7C15);
	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* The entry a row gets: its key's fingerprint, or a NULL entry. */
static inline void
mih_entry_for_row(MihEntry *e, SimHash fp, bool isnull, ItemPointer tid)
{
	if (isnull)
	{
		ItemPointerData flagged = *tid;

		flagged.ip_posid |= MIH_NULL_FLAG;
		mih_entry_set(e, mih_null_fp(tid), &flagged);
	}
	else
		mih_entry_set(e, fp, tid);
}

static inline uint64
mih_inner_key(const MihInnerItem *it)
{
	uint64		v;

	memcpy(&v, it->key, sizeof(v));
	return v;
}

/*
 * The child of an inner page to descend into for key v: the last child whose
 * first key is < v, else the first (entries equal to v may start at the end
 * of the previous child). Shared by radius and nearest-neighbour descents.
 */
static inline BlockNumber
mih_inner_child(const MihInnerItem *items, int n, uint64 v)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (mih_inner_key(&items[mid]) < v)
			lo = mid;
		else
			hi = mid - 1;
	}
	return items[lo].child;
}

#define MIH_PAGE_CONTENT_SIZE \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(MihPageOpaqueData)))
#define MIH_ENTRIES_PER_PAGE	((int) (MIH_PAGE_CONTENT_SIZE / sizeof(MihEntry)))
#define MIH_INNER_PER_PAGE		((int) (MIH_PAGE_CONTENT_SIZE / sizeof(MihInnerItem)))

/* items on pending, leaf and inner pages sit right after the page header */
#define MihPageGetEntries(page) ((MihEntry *) PageGetContents(page))
#define MihPageGetInner(page)	((MihInnerItem *) PageGetContents(page))
/* the number of items is kept in pd_lower, so GenericXLog skips the hole */
#define MihPageGetNItems(page, itemsize) \
	((int) ((((PageHeader) (page))->pd_lower - MAXALIGN(SizeOfPageHeaderData)) / (itemsize)))
#define MihPageSetNItems(page, n, itemsize) \
	(((PageHeader) (page))->pd_lower = MAXALIGN(SizeOfPageHeaderData) + (n) * (itemsize))

#include "mih_leaf.h"

/* ---- run header page ---- */
/* MihRunHeader.flags */
#define MIH_RUN_COMPACT		0x0002	/* some of its leaves are compact: a
										 * value's place is not a multiple of a
										 * plain leaf's entries */
#define MIH_RUN_VACUUMING	0x0001	/* a bulk delete began marking this run, or
										 * it was merged from one that was: its
										 * dead marks may disagree with other
										 * tables' (see mih_vacuum.c) */

typedef struct MihRunHeader
{
	uint64		serial;			/* unique in the index, increasing */
	uint32		flags;			/* MIH_RUN_* */
	int64		nentries;		/* entries in each table, dead included */
	int64		ndead;			/* entries marked dead by VACUUM */
	uint32		npages;			/* pages of the run, header included */
	uint16		ntables;
	uint16		height[MIH_MAX_BLOCKS]; /* 0: the root is a leaf */
	BlockNumber root[MIH_MAX_BLOCKS];
	BlockNumber first_leaf[MIH_MAX_BLOCKS];
} MihRunHeader;

#define MihPageGetRunHeader(page) ((MihRunHeader *) PageGetContents(page))

/* ---- metapage ---- */

/*
 * Pages a merge replaced, waiting until no scan can still read them: a run,
 * or a chain of pending pages. See mih_recycle.c.
 */
typedef struct MihRetired
{
	BlockNumber head;			/* a run header, or the first pending page */
	BlockNumber extent;			/* pending chain: first page NOT retired; a
								 * run: MIH_RETIRED_WHOLE_RUN, or
								 * MIH_RETIRED_PART with the tables retired
								 * and whether its header is */
	bool		is_run;
} MihRetired;

#define MIH_RETIRED_WHOLE_RUN	InvalidBlockNumber
#define MIH_RETIRED_PART		0x40000000
#define MIH_RETIRED_HEADER		0x20000000
#define MIH_RETIRED_TABLES		0x0000FFFF

/* which pages of a run a retired entry names: tables (a bit each) and header */
static inline uint32
mih_retired_run_tables(const MihRetired *r, int ntables, bool *header)
{
	if (r->extent == MIH_RETIRED_WHOLE_RUN)
	{
		*header = true;
		return (uint32) ((1 << ntables) - 1);
	}
	*header = (r->extent & MIH_RETIRED_HEADER) != 0;
	return r->extent & MIH_RETIRED_TABLES;
}

/* A retired list entry on a MIH_PAGE_RETIRED page. */
typedef struct MihRetiredEntry
{
	MihRetired	what;
	FullTransactionId xid;		/* the next XID when it was retired */
} MihRetiredEntry;

#define MIH_RETIRED_PER_PAGE	((int) (MIH_PAGE_CONTENT_SIZE / sizeof(MihRetiredEntry)))
#define MihPageGetRetired(page) ((MihRetiredEntry *) PageGetContents(page))

/* MihMetaPageData.layout: the fields after retired[] are set */
#define MIH_META_LAYOUT_XID		2

typedef struct MihMetaPageData
{
	uint32		magic;
	uint32		version;
	uint16		nblocks;		/* m: number of blocks (tables) */
	uint16		nruns;
	uint16		nretired;
	uint64		masks[MIH_MAX_BLOCKS];	/* bits of each block, disjoint */
	BlockNumber pending_head;	/* InvalidBlockNumber when empty */
	uint32		pending_head_serial;	/* serial of the head page */
	BlockNumber pending_tail;
	int64		pending_entries;	/* in the whole pending list */
	uint32		pending_pages;
	uint64		next_serial;
	int64		reserved;		/* 0.1.0 counted inserts here, never read: kept
								 * for the layout, no longer written */
	BlockNumber runs[MIH_MAX_RUNS]; /* run header blocks */
	int64		run_entries[MIH_MAX_RUNS];	/* copy of each run's nentries */
	uint32		run_serials[MIH_MAX_RUNS];	/* each run's serial, low 32 bits */
	MihRetired	retired[MIH_MAX_RETIRED];

	/*
	 * Appended by extension 0.2.0, compatibly: metapages written before hold
	 * zeros here (layout 0) and are brought up to date by the first merge.
	 * The newest retired entries are retired[], stamped with retired_xid[];
	 * when that array is full they move to a chain of MIH_PAGE_RETIRED
	 * pages, oldest first, so the list never limits merging.
	 */
	uint32		layout;			/* MIH_META_LAYOUT_XID */
	uint32		retired_pages;	/* pages in the chain */
	BlockNumber retired_first;	/* oldest page of the chain, or Invalid */
	BlockNumber retired_last;
	int64		retired_spilled;	/* entries on the chain */
	FullTransactionId retired_xid[MIH_MAX_RETIRED];

	/*
	 * Appended for table folds, compatibly (zeros: every run serves every
	 * table): bit j set when run r no longer serves table j, whose entries
	 * a later run holds (see mih_merge.c). Kept parallel to runs[].
	 */
	uint16		run_gone[MIH_MAX_RUNS];

	/* appended with kNN search: MIH_META_* flags, zero in older metapages */
	uint32		flags;
} MihMetaPageData;

/*
 * MihMetaPageData.flags: rows with a NULL fingerprint have entries (indexes
 * built since kNN search came). Ordered scans need them to return those
 * rows; older indexes need a REINDEX for ordered scans.
 */
#define MIH_META_INDEXES_NULLS	0x0001

/* the tables run r of a metapage serves, a bit each */
static inline uint32
mih_run_tables(const MihMetaPageData *meta, int r)
{
	return ((uint32) ((1 << meta->nblocks) - 1)) & ~(uint32) meta->run_gone[r];
}

#define MIH_ALL_TABLES(nblocks)	((uint32) ((1 << (nblocks)) - 1))

#define MihPageGetMeta(page) ((MihMetaPageData *) PageGetContents(page))

/* ---- options (reloptions) ---- */
typedef struct MihOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	int			blocks;			/* m, frozen into the metapage at build */
	int			pending_limit;	/* entries before the pending list is merged */
} MihOptions;


/*
 * The fingerprint an index key holds: the simhash itself (simhash_ops), or
 * a hamming_ball's centre (simhash_ball_ops, the exclusion constraint's
 * class, which keeps the centre only and has the heap recheck the radius).
 */
static inline bool
mih_keys_are_balls(Relation index)
{
	return TupleDescAttr(RelationGetDescr(index), 0)->attlen == sizeof(HammingBall);
}

static inline SimHash
mih_key_fp(bool balls, Datum key)
{
	return balls ? DatumGetHammingBall(key)->center : DatumGetSimHash(key);
}

/* strategy numbers in the operator classes */
#define MIH_STRATEGY_WITHIN		1	/* fp <@ ball: a search (simhash_ops) */
#define MIH_STRATEGY_DISTANCE	2	/* fp <-> q: ORDER BY, integer_ops (simhash_ops) */
#define MIH_STRATEGY_NEAR		3	/* ball && ball: centres within both radii
									 * (simhash_ball_ops, for EXCLUDE) */
#define MIH_NSTRATEGIES			3

/* ---- module.c: simhash.test_fault, failures injected by tests ---- */
#define SH_FAULT_NONE					0
#define SH_FAULT_RECYCLE_BEFORE_FREE	1
#define SH_FAULT_MERGE_MIDWAY			2
#define SH_FAULT_OLD_METAPAGE			3
#define SH_FAULT_FSM_TWICE				4
#define SH_FAULT_VERIFY_FORGET			5
#define SH_FAULT_VACUUM_PAUSE			6
#define SH_FAULT_MERGE_PAUSE			7
#define SH_FAULT_KNN_KEEP_SMALL			8
#define SH_FAULT_PLACES_MIDWAY			9
#define SH_FAULT_SCREEN_MIDWAY			10
extern void sh_test_pause(int fault);
extern int	simhash_test_fault;

/* ---- mih_page.c: page utilities ---- */
extern void mih_init_page(Page page, uint16 type, uint16 table, uint16 level);
extern Buffer mih_new_buffer(Relation index);
extern void mih_init_metapage(Page page, int nblocks);
extern void mih_default_masks(int nblocks, uint64 *masks);
extern MihOptions *mih_get_options(Relation index);
extern void mih_check_metapage(Relation index, Page metapage);
extern void mih_meta_cover(Page metapage);
extern void mih_require_null_entries(Relation index, const MihMetaPageData *meta);
extern void mih_mark_free(Relation index, Buffer buf);
extern Page mih_chain_append(GenericXLogState *state, Buffer newbuf, uint16 type, uint32 serial,
							 Page lastpage, BlockNumber *first, uint32 *first_serial,
							 BlockNumber *last, uint32 *npages);
/* is the page the one a link promised (type, serial, table; -1: any table)? */
extern bool mih_page_is(Page page, uint16 type, uint32 serial, int table);
extern void mih_check_page(Relation index, Page page, BlockNumber blk, uint16 type,
						   uint32 serial, int table);
extern void mih_check_pending_tail(Relation index, Page page, BlockNumber blk);
/* the same, for a scan's page (share-locked buf): see mih_scan_restartable */
extern void mih_check_scan_page(Relation index, Buffer buf, BlockNumber blk, uint16 type,
								uint32 serial, int table);
/* a scan step that a page recycled under it on a standby ends with false */
extern bool mih_scan_restartable(bool (*step) (void *arg), void *arg, bool *result);
/* GUC simhash.standby_scan_restarts: how often a standby scan starts again */
extern int	mih_standby_scan_restarts;

/* a run header read by whoever does not know its serial: the type is checked */
#define MIH_ANY_SERIAL	(-1)
extern void mih_read_run_header(Relation index, BlockNumber blk, int64 serial,
								MihRunHeader *hdr);

/* ---- mih_run.c: writing, merging and retiring runs ---- */
typedef struct MihRunWriter MihRunWriter;

/* pages are GenericXLog-logged one by one, or (build) not at all */
extern MihRunWriter *mih_run_writer_begin(Relation index, int nblocks,
										  const uint64 *masks, uint64 serial, bool wal,
										  bool compact);
extern void mih_run_writer_table(MihRunWriter *w, int table);
extern void mih_run_writer_add(MihRunWriter *w, SimHash fp, ItemPointer tid);
extern void mih_run_writer_end_table(MihRunWriter *w);
extern void mih_run_writer_flag(MihRunWriter *w, uint32 flags);
extern BlockNumber mih_run_writer_finish(MihRunWriter *w, int64 *nentries);

extern void mih_sort_entries(MihEntry *entries, int64 n, uint64 mask);
extern BlockNumber mih_write_run_from_array(Relation index, int nblocks,
											const uint64 *masks, MihEntry *entries,
											int64 n, uint64 serial, bool wal, bool compact);
extern BlockNumber mih_merge_runs(Relation index, int nblocks, const uint64 *masks,
								  const BlockNumber *runs, const uint32 *run_tables,
								  int nruns, MihEntry *extra, int64 nextra,
								  uint32 tables, uint64 serial, bool wal, bool compact,
								  int64 *nentries, BufferAccessStrategy vacuum_strategy);
/* ---- mih_recycle.c: walking a run's pages, the retired list ---- */
typedef void (*MihPageVisitor) (BlockNumber blk, void *arg);
typedef void (*MihRetiredVisitor) (const MihRetired *r, BlockNumber chain_page, void *arg);
extern void mih_walk_run(Relation index, BlockNumber runhead, uint32 tables, bool header,
						 MihPageVisitor visit, void *arg, MihRunHeader *hdr);
extern void mih_walk_pending_chain(Relation index, BlockNumber head, BlockNumber stop,
								   MihPageVisitor visit, void *arg);
extern void mih_meta_update_layout(Relation index, Buffer metabuf);
extern void mih_retired_reserve(Relation index, int n);
extern void mih_retired_add(MihMetaPageData *meta, BlockNumber head,
							BlockNumber extent, bool is_run);
extern void mih_recycle_retired(Relation index);
extern int64 mih_retired_count(Relation index, const MihMetaPageData *meta);
extern void mih_retired_foreach(Relation index, const MihMetaPageData *meta,
								MihRetiredVisitor fn, void *arg);

/* ---- mih_merge.c: the merge policy ---- */
extern bool mih_flush_and_merge(Relation index, bool from_vacuum, bool wait,
								BufferAccessStrategy vacuum_strategy);

/* iterate the leaves of table j of a run, in key order */
typedef struct MihLeafIter
{
	Relation	index;
	BufferAccessStrategy strategy;	/* VACUUM's: also pace by its cost limit */
	BlockNumber next;
	uint64		mask;			/* of the table read: compact leaves need it */
	int			pos;
	int			nitems;
	MihEntry   *entries;		/* copy of the current leaf's entries */
} MihLeafIter;

static inline uint64
mih_entry_key(const MihEntry *e, uint64 mask)
{
	return mih_entry_fp(e) & mask;
}

/*
 * First position in entries[from..n) whose masked key is >= v.
 *
 * An interpolation guess, then a gallop and a binary search around it: a
 * leaf is 8 kB of entries, and a plain binary search touched about eight
 * cache lines of it, each a miss when the index is larger than the CPU's
 * caches (the near-duplicate constraint's check reads a few leaves of a
 * large run per insert). Block values are close to uniform, so the guess is
 * usually a line or two away; skewed values cost at most twice the binary
 * search's steps.
 */
static inline int
mih_lower_bound(const MihEntry *entries, int from, int n, uint64 mask, uint64 v)
{
	int			lo,
				hi;

	if (n - from > 16)
	{
		uint64		first = mih_entry_key(&entries[from], mask);
		uint64		last = mih_entry_key(&entries[n - 1], mask);
		int			guess;
		int			step = 1;

		if (v <= first)
			return from;
		if (v > last)
			return n;
		/* first < v <= last: the answer lies in (from, n - 1] */
		guess = from + (int) ((double) (v - first) / (double) (last - first) * (n - 1 - from));
		guess = Max(guess, from + 1);
		guess = Min(guess, n - 1);
		if (mih_entry_key(&entries[guess], mask) < v)
		{
			/* the answer is after guess: gallop up to a key >= v */
			lo = guess + 1;
			hi = guess + step;
			while (hi < n - 1 && mih_entry_key(&entries[hi], mask) < v)
			{
				lo = hi + 1;
				step *= 2;
				hi = Min(guess + step, n - 1);
			}
			hi = Min(hi, n - 1);
		}
		else
		{
			/* the answer is guess or before: gallop down to a key < v */
			hi = guess;
			lo = guess - step;
			while (lo > from && mih_entry_key(&entries[lo], mask) >= v)
			{
				hi = lo;
				step *= 2;
				lo = Max(guess - step, from);
			}
			lo = Max(lo, from) + 1;
			if (lo > hi)
				lo = hi;
		}
		/* now entries[lo - 1] < v (or lo - 1 = from, which is < v) and entries[hi] >= v */
	}
	else
	{
		lo = from;
		hi = n;
	}
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (mih_entry_key(&entries[mid], mask) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

extern void mih_leaf_iter_begin(MihLeafIter *it, Relation index, BlockNumber first_leaf,
								uint64 mask);
extern MihEntry *mih_leaf_iter_next(MihLeafIter *it);
extern void mih_leaf_iter_end(MihLeafIter *it);

/* ---- AM callbacks ---- */
extern IndexBuildResult *mih_build(Relation heap, Relation index, IndexInfo *indexInfo);
extern void mih_buildempty(Relation index);
extern bool mih_insert(Relation index, Datum *values, bool *isnull,
					   ItemPointer ht_ctid, Relation heapRel,
					   IndexUniqueCheck checkUnique, bool indexUnchanged,
					   IndexInfo *indexInfo);
extern IndexBulkDeleteResult *mih_bulkdelete(IndexVacuumInfo *info,
											 IndexBulkDeleteResult *stats,
											 IndexBulkDeleteCallback callback,
											 void *callback_state);
extern IndexBulkDeleteResult *mih_vacuumcleanup(IndexVacuumInfo *info,
												IndexBulkDeleteResult *stats);
extern void mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
							 Cost *indexStartupCost, Cost *indexTotalCost,
							 Selectivity *indexSelectivity, double *indexCorrelation,
							 double *indexPages);
extern bytea *mih_options(Datum reloptions, bool validate);
extern bool mih_validate(Oid opclassoid);
extern Oid	mih_check_index_access(Oid indexoid, bool must_own);
extern void mih_recheck_index(Relation index, Oid heapoid);
extern IndexScanDesc mih_beginscan(Relation index, int nkeys, int norderbys);
extern void mih_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
					   ScanKey orderbys, int norderbys);
extern bool mih_gettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 mih_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void mih_endscan(IndexScanDesc scan);
extern char *mih_buildphasename(int64 phasenum);
extern BlockNumber mih_descend(Relation index, const MihRunHeader *hdr, int table, uint64 v);

/* ---- mih_knn.c: nearest-neighbour search (ORDER BY fp <-> q) ---- */
typedef struct MihKnn MihKnn;
extern MihKnn *mih_knn_begin(Relation index, SimHash q, int nballs, const SimHash *centers,
							 const int *radii);
extern bool mih_knn_next(MihKnn *k, ItemPointer tid, int *dist, bool *isnull);
extern void mih_knn_end(MihKnn *k);

/* ---- mih_probe.c: the probe arithmetic of the scan and the estimates ---- */
extern double mih_probes_per_table(int blockbits, int s);
extern void mih_table_radii(const uint64 *masks, int m, int radius, int *radii);
extern uint64 *mih_table_probes(SimHash q, uint64 mask, int s, int *n);
/* the values exactly s bits from a block, enumerated a chunk at a time (mih_probe.c) */
typedef struct MihProbeIter
{
	int			bits[SIMHASH_BITS]; /* the mask's bit positions */
	int			nbits;
	int			pos[SIMHASH_BITS];	/* the flipped ones: indexes into bits, ascending */
	int			s;
	uint64		base;			/* q & mask */
	bool		done;
} MihProbeIter;
extern void mih_probe_iter_init(MihProbeIter *it, SimHash q, uint64 mask, int s);
extern int	mih_probe_iter_next(MihProbeIter *it, uint64 *out, int max);
/* why mih_probe_leaf stopped */
typedef enum MihLeafStep
{
	MIH_LEAF_END,				/* the leaf ended; the value may go on in the next */
	MIH_PROBES_END,				/* every probe value done */
	MIH_LEAF_DESCEND			/* the next value lies past this leaf */
} MihLeafStep;
typedef void (*MihLeafVisit) (void *arg, const MihEntry *entry);

/*
 * Match sorted probe values, from vals[*p] on, against one leaf of a table
 * (its entries sorted by the table's block): the entries whose block equals
 * a value go to visit(), and *p advances past each value done. Returns why
 * it stopped: MIH_LEAF_END, the leaf ended (vals[*p] may go on in the next
 * leaf); MIH_PROBES_END, every value is done; MIH_LEAF_DESCEND, the next
 * value lies past this leaf (descend from the root for it). The one copy of
 * this loop for radius scans (mih_scan.c) and nearest-neighbour search
 * (mih_knn.c). Inline, so that each caller's visit() is a direct call the
 * compiler can inline too: it runs for every entry a probe matches (about
 * 250,000 for a 10-NN query at 10M rows).
 */
static pg_attribute_always_inline MihLeafStep
mih_probe_leaf(const MihEntry *entries, int n, uint64 mask, const uint64 *vals, int nvals,
			   int *p, MihLeafVisit visit, void *arg)
{
	int			pos = 0;

	for (;;)
	{
		uint64		v = vals[*p];

		pos = mih_lower_bound(entries, pos, n, mask, v);
		for (; pos < n && (mih_entry_fp(&entries[pos]) & mask) == v; pos++)
			visit(arg, &entries[pos]);
		if (pos == n)
			return MIH_LEAF_END;
		if (++*p >= nvals)
			return MIH_PROBES_END;
		if ((mih_entry_fp(&entries[n - 1]) & mask) < vals[*p])
			return MIH_LEAF_DESCEND;
	}
}

/*
 * mih_probe_leaf for a compact leaf (mih_leaf.h): the same walk over the
 * probe values and the same answer, with visit() given each group whose
 * value a probe matched, to read as much of it as it needs.
 */
typedef void (*MihGroupVisit) (void *arg, const MihCLeaf *c, int g);

static pg_attribute_always_inline MihLeafStep
mih_probe_cleaf(const MihCLeaf *c, const uint64 *vals, int nvals, int *p,
				MihGroupVisit visit, void *arg)
{
	int			g = 0;

	for (;;)
	{
		uint64		v = vals[*p];

		g = mih_cleaf_lower_bound(c, g, v);
		if (g < c->ngroups && mih_cleaf_key(c, g) == v)
			visit(arg, c, g++);
		if (g == c->ngroups)
			return MIH_LEAF_END;
		if (++*p >= nvals)
			return MIH_PROBES_END;
		if (mih_cleaf_key(c, c->ngroups - 1) < vals[*p])
			return MIH_LEAF_DESCEND;
	}
}

/* ---- mih_cache.c: what a backend remembers of runs between scans ---- */
/*
 * Deeper than any run's tree (mih_knn.c, mih_cache.c): with 680 items an
 * inner page, 3 levels hold 10^11 entries.
 */
#define MIH_MAX_HEIGHT			8
#define MIH_CACHE_FILTER_LOG2	16	/* bits per table filter: 2^16 (8 kB) */
#define MIH_CACHE_FILTER_BYTES	((1 << MIH_CACHE_FILTER_LOG2) / 8)
#define MIH_CACHE_FILTER_MAX	32768	/* runs up to this many entries get
										 * filters (at most 40% of bits set) */

#define MIH_CACHE_EMPTY_BALLS	4	/* balls remembered empty, per run */
#define MIH_CACHE_PENDING_PAGES	64	/* pending pages remembered checked */

typedef struct MihRunSummary
{
	BlockNumber head;			/* the run's header block ... */
	uint32		serial;			/* ... and serial (low 32 bits): its identity */
	int			pins;			/* scans using it now */
	MihRunHeader hdr;			/* copy of the header (fields scans read
								 * never change) */
	int64		spent;			/* pages this backend's scans read in it */
	bool		filter_tried;
	uint64		masks[MIH_MAX_BLOCKS];
	uint64	   *filter[MIH_MAX_BLOCKS]; /* block values present, hashed; or NULL */
	int			ndir[MIH_MAX_BLOCKS];	/* leaves in the directory */
	uint64	   *dir_keys[MIH_MAX_BLOCKS];	/* first key of each leaf, or NULL */
	BlockNumber *dir_leaves[MIH_MAX_BLOCKS];
	Buffer	   *dir_bufs[MIH_MAX_BLOCKS];	/* where each leaf was last found */
	/* where each block value's entries start, for large runs (mih_cache_pos.c) */
	bool		pos_tried;
	struct MihPosIndex *pos[MIH_MAX_BLOCKS];	/* or NULL */
	/* balls a scan found no live entry of this run in (mih_cache_run_empty) */
	SimHash		empty_q[MIH_CACHE_EMPTY_BALLS];
	int			empty_r[MIH_CACHE_EMPTY_BALLS];
	int			nempty;
	int			empty_next;		/* the slot the next one replaces */
	/* the run's entries by block value, in memory (mih_cache_screen.c) */
	int			screen_scans;	/* searches counted toward building it */
	bool		screen_tried;
	struct MihRunScreen *screen;	/* or NULL */
	Size		bytes;			/* what it holds, counted against the limit */
	struct MihRunSummary *next;
} MihRunSummary;

extern int	mih_cache_size_kb;
extern void mih_cache_init(void);
extern MihRunSummary *mih_cache_run(Relation index, const BlockNumber *runs, const uint32 *serials,
									const uint32 *run_tables, int nruns, int r);
extern MihRunSummary *mih_cache_peek(Relation index, BlockNumber head, uint32 serial);
extern void mih_cache_release(MihRunSummary *s);
extern BlockNumber mih_cache_leaf(Relation index, MihRunSummary *s, int j, uint64 v, int *slot);
extern Buffer mih_cache_read_leaf(Relation index, MihRunSummary *s, int j, int slot,
								  BlockNumber blk);
extern Buffer mih_cache_read_hinted(Relation index, BlockNumber blk);
extern void mih_cache_consider_filters(Relation index, MihRunSummary *s, uint32 tables,
									   const uint64 *masks);
extern bool mih_cache_may_hold(const MihRunSummary *s, int j, uint64 v);
extern int	mih_cache_filter_probes(const MihRunSummary *s, int j, const uint64 *vals, int nvals,
									uint64 *out);
extern void mih_cache_prefetch_leaf(MihRunSummary *s, int j, uint64 v);
extern bool mih_cache_run_empty(const MihRunSummary *s, SimHash q, int r);
extern void mih_cache_note_run_empty(MihRunSummary *s, SimHash q, int r);
extern int	mih_cache_pending_checked(Relation index, SimHash q, int r, BlockNumber blk,
									  uint32 serial, BlockNumber *next, uint32 *next_serial);
extern void mih_cache_note_pending(Relation index, SimHash q, int r, BlockNumber blk,
								   uint32 serial, int nentries, BlockNumber next,
								   uint32 next_serial);

/* mih_cache.c, for mih_cache_pos.c, mih_cache_pend.c and mih_cache_screen.c */
extern bool mih_cache_reserve(Size bytes);
extern void mih_cache_unreserve(Size bytes);
extern bool mih_cache_has_room(Size bytes);
extern MemoryContext mih_cache_context(void);
extern struct MihPendPages **mih_cache_pending_pages(Relation index);
extern int64 mih_cache_walk_table(Relation index, const MihRunSummary *s, int t,
								  void (*visit) (void *arg, const MihEntry *entries, int n),
								  void *arg);

/* ---- mih_cache_pend.c: pending pages' entries by block value ---- */
#define MIH_PEND_MAX_PROBES		64	/* probes a scan may look up per page */
typedef struct MihPendSummary MihPendSummary;
extern const MihPendSummary *mih_cache_pending_summary(Relation index, BlockNumber blk,
													   uint32 serial, const MihEntry *entries,
													   int n, int nblocks,
													   const uint64 *masks,
													   BlockNumber next, uint32 next_serial);
extern bool mih_cache_pending_skip(Relation index, BlockNumber blk, uint32 serial, int nblocks,
								   uint64 *const *vals, const int *nvals, SimHash q, int r,
								   BlockNumber *next, uint32 *next_serial);
extern int	mih_pend_find(const MihPendSummary *ps, int j, uint64 v, uint16 *idx);
extern void mih_cache_free_pending_pages(struct MihPendPages *pages);

/* ---- mih_cache_screen.c: runs ruled out from memory ---- */
typedef struct MihRunScreen MihRunScreen;
extern bool mih_cache_screen_rules_out(Relation index, MihRunSummary *s, uint32 tables,
									   int nblocks, const uint64 *masks,
									   uint64 *const *probes, const int *nprobes, SimHash q,
									   const uint64 *qrem, int r);
extern void mih_cache_free_screen(MihRunSummary *s);

/* ---- mih_cache_pos.c: where each block value's entries start in a large run ---- */
#define MIH_POS_MAX_BITS		16	/* tables of at most this many bits get one */
/*
 * Runs of more entries get one (and up to MIH_CACHE_FILTER_MAX a filter
 * too): in a run of 32,768 entries the filter lets through 39% of probes,
 * each a search of a leaf, which was a sixth of a constraint check there.
 */
#define MIH_POS_MIN_ENTRIES		8192
extern void mih_cache_consider_positions(Relation index, MihRunSummary *s, uint32 tables,
										 const uint64 *masks);
extern bool mih_cache_position(const MihRunSummary *s, int j, uint64 v, uint32 *first,
							   uint32 *count);
/* runs with compact leaves: the leaf and place each value starts at */
extern bool mih_cache_place(const MihRunSummary *s, int j, uint64 v, int *slot, int *offset,
							 int *group);
SH_NORETURN_BEGIN extern void mih_position_mismatch(Relation index, BlockNumber leaf, int off) SH_NORETURN_END;
extern void mih_cache_free_positions(MihRunSummary *s);

extern void mih_search_pages(const MihMetaPageData *meta, int radius, double *probe_pages,
							 double *full_pages, double *probe_entries, bool *fullscan);


#endif							/* SIMHASH_MIH_H */
