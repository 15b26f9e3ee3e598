/*
 * mih_cache.h
 *		What a backend remembers of the index between scans (mih_cache.c and
 *		its parts: mih_cache_pos.c, mih_cache_pend.c, mih_cache_screen.c):
 *		run summaries (header, leaf directory, block-value filters, positions,
 *		screens), pending pages' summaries and searches that came back empty.
 *		Why each is safe to trust is in src/mih/README, "Reading".
 */
#ifndef SIMHASH_MIH_CACHE_H
#define SIMHASH_MIH_CACHE_H

#include "mih.h"

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

#endif							/* SIMHASH_MIH_CACHE_H */
