/*
 * mih.h
 *		The "simhash" index access method: multi-index hashing over
 *		block-partitioned 64-bit fingerprints. The access method's internal
 *		interfaces; the on-disk format is in mih_format.h, what a backend
 *		remembers between scans in mih_cache.h, the tests' fault injection in
 *		src/test_fault.h.
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
 *   (mih_merge_policy.c), writing a run with table j alone from every run that
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
#include "type/ball.h"

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

#include "mih_format.h"

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
extern BlockNumber mih_descend(Relation index, const MihRunHeader *hdr, int table, uint64 v);

/* ---- mih_run_write.c and mih_merge_runs.c: writing runs, merging them ---- */
typedef struct MihRunWriter MihRunWriter;

/* pages are GenericXLog-logged one by one, or (build) not at all */
extern MihRunWriter *mih_run_writer_begin(Relation index, int nblocks,
										  const uint64 *masks, uint64 serial, bool wal,
										  bool compact);
extern void mih_run_writer_table(MihRunWriter *w, int table);
extern void mih_run_writer_add(MihRunWriter *w, SimHash fp, ItemPointer tid);
extern void mih_run_writer_end_table(MihRunWriter *w);
extern int64 mih_run_writer_entries(MihRunWriter *w);
extern void mih_run_writer_discard(MihRunWriter *w);
extern void mih_run_writer_flag(MihRunWriter *w, uint32 flags);
extern BlockNumber mih_run_writer_finish(MihRunWriter *w, int64 *nentries);

/* the order of a table's entries: (fp & mask, fp, tid) */
static inline int
mih_entry_cmp(const MihEntry *a, const MihEntry *b, uint64 *mask)
{
	SimHash		fa = mih_entry_fp(a);
	SimHash		fb = mih_entry_fp(b);
	uint64		ka = fa & *mask;
	uint64		kb = fb & *mask;

	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (fa != fb)
		return fa < fb ? -1 : 1;
	return ItemPointerCompare((ItemPointer) &a->tid, (ItemPointer) &b->tid);
}
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
/* a retired entry as read: serial is MIH_ANY_SERIAL for versions before 3 */
typedef struct MihRetiredItem
{
	MihRetired	what;
	int64		serial;
} MihRetiredItem;
typedef void (*MihRetiredVisitor) (const MihRetiredItem *r, BlockNumber chain_page, void *arg);
extern void mih_walk_run(Relation index, BlockNumber runhead, int64 run_serial, uint32 tables,
						 bool header, MihPageVisitor visit, void *arg, MihRunHeader *hdr);
extern void mih_walk_pending_chain(Relation index, BlockNumber head, int64 head_serial,
								   BlockNumber stop, MihPageVisitor visit, void *arg);
extern void mih_meta_update_layout(Relation index, Buffer metabuf);
extern void mih_retired_reserve(Relation index, int n);
extern void mih_retired_add(MihMetaPageData *meta, BlockNumber head, uint32 serial,
							BlockNumber extent, bool is_run);
extern void mih_recycle_retired(Relation index);
extern int64 mih_retired_count(Relation index, const MihMetaPageData *meta);
extern void mih_retired_foreach(Relation index, const MihMetaPageData *meta,
								MihRetiredVisitor fn, void *arg);

/* ---- mih_merge_policy.c: the merge policy ---- */
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

/*
 * Deeper than any run's tree (mih_knn.c, mih_cache.c): with 680 items an
 * inner page, 3 levels hold 10^11 entries.
 */
#define MIH_MAX_HEIGHT			8
/* what a radius search costs each way (mih_search_cost) */
typedef struct MihSearchCost
{
	double		probes;			/* probe values over runs and tables */
	double		probe_accesses; /* leaf pages the probes visit */
	double		probe_pages;	/* distinct pages of them */
	double		probe_entries;	/* entries the probes examine */
	double		full_pages;		/* table 0's leaves */
	double		full_entries;	/* table 0's entries */
	double		probe_cost;		/* in the planner's units */
	double		full_cost;
	bool		fullscan;		/* the scan reads table 0 whole */
} MihSearchCost;

extern void mih_search_cost(const MihMetaPageData *meta, int radius, double random_page_cost,
							double seq_page_cost, MihSearchCost *c);


#endif							/* SIMHASH_MIH_H */
