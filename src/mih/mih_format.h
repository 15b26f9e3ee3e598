/*
 * mih_format.h
 *		The simhash index's on-disk format: limits, page types, the page
 *		opaque data, entries and inner items, run headers, the metapage with
 *		its run list, pending list and retired list, and the reloptions
 *		frozen into it. Changing anything here is a new MIH_VERSION (see
 *		mih_check_metapage for how older versions are read).
 */
#ifndef SIMHASH_MIH_FORMAT_H
#define SIMHASH_MIH_FORMAT_H

#include "simhash.h"

#include "access/transam.h"
#include "storage/block.h"
#include "storage/bufpage.h"
#include "storage/itemptr.h"

/* ---- limits and defaults ---- */
#define MIH_MAGIC				0x4D494831	/* "MIH1" */
/*
 * On-disk versions: 2 may hold compact leaves (mih_leaf.h), which a library
 * that knows only 1 must not read; 3 records in each retired-list entry the
 * serial of the page it names (MihRetiredEntry, retired_serial[]), so that
 * recycling and VACUUM check a retired run's header or pending chain's head
 * as every other link is checked. An older index is read as it is until
 * REINDEX: version 1 keeps writing plain leaves, and versions 1 and 2 check
 * only the type of a retired entry's first page (their entries carry no
 * serial to check).
 */
#define MIH_VERSION				3
#define MIH_VERSION_RETIRED_SERIAL	3
#define MIH_VERSION_COMPACT		2
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

/*
 * A retired list entry on a MIH_PAGE_RETIRED page. serial lies where
 * versions 1 and 2 left alignment padding (the layout is the same), so it is
 * read only on version 3 indexes (mih_retired_serial).
 */
typedef struct MihRetiredEntry
{
	MihRetired	what;
	uint32		serial;			/* of what.head: a run's, or the pending page's own */
	FullTransactionId xid;		/* the next XID when it was retired */
} MihRetiredEntry;

StaticAssertDecl(offsetof(MihRetiredEntry, xid) == 16 && sizeof(MihRetiredEntry) == 24,
				 "a retired entry's layout is the one versions 1 and 2 wrote");

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
	 * a later run holds (see mih_merge_policy.c). Kept parallel to runs[].
	 */
	uint16		run_gone[MIH_MAX_RUNS];

	/* appended with kNN search: MIH_META_* flags, zero in older metapages */
	uint32		flags;

	/*
	 * Appended with on-disk version 3: the serial of what retired[i] names
	 * (see MihRetiredEntry). Older versions may leave anything here.
	 */
	uint32		retired_serial[MIH_MAX_RETIRED];
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

#endif							/* SIMHASH_MIH_FORMAT_H */
