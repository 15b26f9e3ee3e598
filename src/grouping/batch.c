/*
 * batch.c
 *		Every pair of fingerprints within a radius, in memory: multi-index
 *		hashing in batch mode (Manku, Jain, Das Sarma 2007), with recursion
 *		for oversized buckets.
 *
 * Pigeonhole: split the bits into m blocks; two fingerprints within r bits
 * differ in at most r blocks, so they agree exactly on some set of m - r
 * blocks. For each of the C(m, r) sets (a "table"), the fingerprints are
 * sorted by the bits of those blocks and only fingerprints in the same run of
 * equal keys are compared. A pair that agrees on several tables is reported
 * only from the first of them (its difference is zero under an earlier
 * table's mask), so every pair is reported exactly once.
 *
 * m is chosen per call from a cost model (sorting cost against expected
 * comparisons for uniformly random bits). Real corpora are not uniform: one
 * key can hold a large share of the rows (boilerplate pages, a block that is
 * zero in many fingerprints). A run longer than BATCH_BRUTE_MAX is therefore
 * not compared pairwise but split again on its remaining bits (all its
 * members agree on the table's bits, so their differences lie in the rest),
 * recursively, with the masks of earlier tables at every level carried down
 * so that pairs are still reported once. Brute force is used when the cost
 * model says it is cheaper (small sets, large radii).
 *
 * Keys are at most 32 bits, gathered from the table's bit runs, and sorted
 * with an LSD radix sort on 64-bit items (key << 32 | index): 16 bytes of
 * scratch per fingerprint, interrupt checks between passes.
 */
#include "simhash.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "grouping/batch.h"
#include "binomial.h"
#include "radix.h"

/* runs no longer than this are compared pairwise */
#define BATCH_BRUTE_MAX 48
/* most tables one split may use (C(m, r) grows fast with r) */
#define BATCH_MAX_TABLES 4096
/* cost of keying and sorting one item for one table, in pair comparisons */
#define BATCH_SORT_COST 6.0
/* comparisons between interrupt checks and progress calls */
#define BATCH_TICK (1 << 20)

/* the masks of tables already done, at this level and every level above */
typedef struct BatchSkip
{
	const uint64 *masks;
	int			nmasks;
	const struct BatchSkip *up;
} BatchSkip;

/* a contiguous run of bits of a table mask, for gathering its key */
typedef struct BatchBitRun
{
	int			shift;
	int			width;
} BatchBitRun;

typedef struct BatchCtx
{
	const SimHash *fps;
	int			radius;
	uint64	   *items;			/* whole item array (key << 32 | index) */
	uint64	   *tmp;			/* radix sort buffer, parallel to items */
	BatchPairCallback cb;
	void	   *cb_arg;
	BatchProgressCallback progress;
	void	   *progress_arg;
	BatchStats *stats;
	int64		tick;
} BatchCtx;

static void batch_enumerate(BatchCtx *ctx, uint64 *items, uint32 n,
							uint64 active, const BatchSkip *skip, bool top);

static inline uint32
batch_index(uint64 item)
{
	return (uint32) item;
}

static inline uint32
batch_key(uint64 item)
{
	return (uint32) (item >> 32);
}


/*
 * The number of blocks to split w active bits into for n fingerprints and
 * this radius, or 0 when comparing all pairs is cheaper. Keys (the bits of
 * m - r blocks) must fit in 32 bits and have at least one bit.
 */
static int
batch_choose_blocks(double n, int w, int r)
{
	double		best = n * (n - 1) / 2;
	int			bestm = 0;

	for (int m = r + 1; m <= w; m++)
	{
		double		tables = sh_binomial(m, r);
		int			small = w / m;
		int			large = (w + m - 1) / m;
		double		keybits = (double) (m - r) * w / m;
		double		cost;

		if (tables > BATCH_MAX_TABLES)
			break;				/* C(m, r) only grows with m */
		if ((m - r) * small < 1 || (m - r) * large > 32)
			continue;
		cost = tables * (n * BATCH_SORT_COST + n * n / 2 / pow(2.0, keybits));
		if (cost < best)
		{
			best = cost;
			bestm = m;
		}
	}
	return bestm;
}

/* true when a pair with difference x agrees on an earlier table */
static inline bool
batch_skipped(uint64 x, const BatchSkip *skip)
{
	for (; skip != NULL; skip = skip->up)
		for (int i = 0; i < skip->nmasks; i++)
			if ((x & skip->masks[i]) == 0)
				return true;
	return false;
}

/* count work; check for interrupts and report progress now and then */
static inline void
batch_tick(BatchCtx *ctx, int64 work)
{
	ctx->tick += work;
	if (ctx->tick >= BATCH_TICK)
	{
		ctx->tick = 0;
		CHECK_FOR_INTERRUPTS();
		if (ctx->progress)
			ctx->progress(ctx->progress_arg, ctx->stats);
	}
}

/* compare every pair of the n items */
static void
batch_brute(BatchCtx *ctx, const uint64 *items, uint32 n, const BatchSkip *skip)
{
	const SimHash *fps = ctx->fps;
	int			radius = ctx->radius;

	for (uint32 i = 0; i + 1 < n; i++)
	{
		uint32		a = batch_index(items[i]);
		SimHash		fa = fps[a];

		for (uint32 j = i + 1; j < n; j++)
		{
			uint32		b = batch_index(items[j]);
			uint64		x = fa ^ fps[b];
			int			d = sh_popcount64(x);

			if (d <= radius && !batch_skipped(x, skip))
			{
				ctx->stats->pairs++;
				if (a < b)
					ctx->cb(ctx->cb_arg, a, b, d);
				else
					ctx->cb(ctx->cb_arg, b, a, d);
			}
		}
		ctx->stats->comparisons += n - 1 - i;
		batch_tick(ctx, n - 1 - i);
	}
}

/* the contiguous bit runs of mask, lowest first */
static int
batch_bit_runs(uint64 mask, BatchBitRun *runs)
{
	int			nruns = 0;
	int			bit = 0;

	while (bit < 64)
	{
		if (mask & (UINT64CONST(1) << bit))
		{
			int			start = bit;

			while (bit < 64 && (mask & (UINT64CONST(1) << bit)))
				bit++;
			runs[nruns].shift = start;
			runs[nruns].width = bit - start;
			nruns++;
		}
		else
			bit++;
	}
	return nruns;
}

/* the bits of fp under the runs, packed into the low bits (at most 32) */
static inline uint32
batch_gather(SimHash fp, const BatchBitRun *runs, int nruns)
{
	uint64		key = 0;
	int			out = 0;

	for (int i = 0; i < nruns; i++)
	{
		uint64		part = (fp >> runs[i].shift) &
			((UINT64CONST(1) << runs[i].width) - 1);

		key |= part << out;
		out += runs[i].width;
	}
	return (uint32) key;
}

/* items sort by their key, the high 32 bits (radix.h) */
#define BATCH_ITEM_BITS(item) (item)
RADIX_SORT_DEFINE(batch_radix_sort, uint64, BATCH_ITEM_BITS)

/*
 * Report the pairs within the radius among n items whose fingerprints are
 * equal outside the active bits, skipping pairs that agree on a mask in skip.
 */
static void
batch_enumerate(BatchCtx *ctx, uint64 *items, uint32 n, uint64 active,
				const BatchSkip *skip, bool top)
{
	int			radius = ctx->radius;
	int			w;
	int			m;
	int			positions[64];
	uint64		blocks[64];
	uint64	   *tables;
	int			ntables;
	int			chosen[64];
	int			keep;
	uint64	   *tmp = ctx->tmp + (items - ctx->items);

	if (n < 2)
		return;
	check_stack_depth();

	/*
	 * Bits on which all n fingerprints agree tell no pair apart: leave them
	 * out of the blocks. (Real data has such bits: a block that is zero in
	 * many fingerprints; and every run split again agrees on its key.)
	 * Without this, tables keyed on constant bits would hold every item in
	 * one run, again at every level below.
	 */
	{
		SimHash		f0 = ctx->fps[batch_index(items[0])];
		uint64		varying = 0;

		for (uint32 i = 1; i < n; i++)
			varying |= ctx->fps[batch_index(items[i])] ^ f0;
		active &= varying;
		w = sh_popcount64(active);
	}
	m = (n > BATCH_BRUTE_MAX) ? batch_choose_blocks((double) n, w, radius) : 0;
	if (m == 0)
	{
		if (top)
			ctx->stats->top_blocks = 0;
		batch_brute(ctx, items, n, skip);
		return;
	}

	/* the active bit positions, lowest first, cut into m blocks */
	{
		int			k = 0;

		for (int bit = 0; bit < 64; bit++)
			if (active & (UINT64CONST(1) << bit))
				positions[k++] = bit;
		for (int b = 0; b < m; b++)
		{
			blocks[b] = 0;
			for (int p = b * w / m; p < (b + 1) * w / m; p++)
				blocks[b] |= UINT64CONST(1) << positions[p];
		}
	}

	/* a table for every choice of m - radius blocks, in lexicographic order */
	keep = m - radius;
	ntables = (int) sh_binomial(m, radius);
	tables = palloc(sizeof(uint64) * ntables);
	sh_choice_first(chosen, keep);
	for (int t = 0; t < ntables; t++)
	{
		tables[t] = 0;
		for (int i = 0; i < keep; i++)
			tables[t] |= blocks[chosen[i]];
		(void) sh_choice_next(chosen, keep, m);
	}
	if (top)
	{
		ctx->stats->top_blocks = m;
		ctx->stats->top_tables = ntables;
	}

	for (int t = 0; t < ntables; t++)
	{
		BatchBitRun runs[64];
		int			nruns = batch_bit_runs(tables[t], runs);
		BatchSkip	done = {tables, t, skip};
		uint32		start;

		for (uint32 i = 0; i < n; i++)
		{
			uint32		idx = batch_index(items[i]);

			items[i] = ((uint64) batch_gather(ctx->fps[idx], runs, nruns) << 32) | idx;
		}
		batch_radix_sort(items, tmp, n, 32);

		start = 0;
		while (start < n)
		{
			uint32		key = batch_key(items[start]);
			uint32		end = start + 1;

			while (end < n && batch_key(items[end]) == key)
				end++;
			if (end - start > BATCH_BRUTE_MAX)
			{
				ctx->stats->sub_splits++;
				batch_enumerate(ctx, items + start, end - start,
								active & ~tables[t], &done, false);
			}
			else if (end - start > 1)
				batch_brute(ctx, items + start, end - start, &done);
			start = end;
		}
		if (top)
		{
			ctx->stats->tables_done++;
			CHECK_FOR_INTERRUPTS();
			if (ctx->progress)
				ctx->progress(ctx->progress_arg, ctx->stats);
		}
	}
	pfree(tables);
}

void
batch_near_pairs(const SimHash *fps, uint32 n, int radius,
				 BatchPairCallback cb, void *cb_arg,
				 BatchProgressCallback progress, void *progress_arg,
				 BatchStats *stats)
{
	BatchCtx	ctx;

	memset(stats, 0, sizeof(BatchStats));
	/* distinct fingerprints: no pair at distance 0 */
	if (n < 2 || radius <= 0)
		return;
	if (radius > SIMHASH_BITS)
		radius = SIMHASH_BITS;

	ctx.fps = fps;
	ctx.radius = radius;
	ctx.items = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	ctx.tmp = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	ctx.cb = cb;
	ctx.cb_arg = cb_arg;
	ctx.progress = progress;
	ctx.progress_arg = progress_arg;
	ctx.stats = stats;
	ctx.tick = 0;
	for (uint32 i = 0; i < n; i++)
		ctx.items[i] = i;

	batch_enumerate(&ctx, ctx.items, n, ~UINT64CONST(0), NULL, true);

	pfree(ctx.items);
	pfree(ctx.tmp);
}
