/*
 * mih_probe.c
 *		The probe arithmetic of multi-index hashing, shared by the scan and
 *		the cost estimate so that the two always agree: which block values
 *		a search of radius r probes in each table, how many, and how many
 *		pages that reads.
 *
 * Pigeonhole: a fingerprint within r bits of the query, split into m
 * disjoint blocks, is within s = floor(r / m) bits of the query in at least
 * one block. So table j is probed with every value within s bits of the
 * query's block j.
 */
#include "mih.h"
#include "binomial.h"

#include <math.h>

#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"

/* Append to *out every value (q & mask) with up to s of the mask's bits flipped. */
static void
enumerate_flips(uint64 base, const int *bits, int nbits, int start, int left,
				uint64 *out, int *n)
{
	out[(*n)++] = base;
	if ((*n & 0xFFFF) == 0)
		CHECK_FOR_INTERRUPTS();
	if (left == 0)
		return;
	for (int i = start; i < nbits; i++)
		enumerate_flips(base ^ (UINT64CONST(1) << bits[i]), bits, nbits, i + 1,
						left - 1, out, n);
}

/* probe values sorted answering cancel requests (qsort() does not) */
#define ST_SORT sort_probes
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * Room for count probe values, or an error: callers keep their counts small
 * (the scans fall back to reading a table whole long before), so this only
 * guards against a count that would not fit an int or an allocation.
 */
static uint64 *
alloc_probes(double count)
{
	if (count > (double) PG_INT32_MAX || count * sizeof(uint64) > (double) MaxAllocHugeSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a simhash index search would probe %.0f block values in one table", count),
				 errhint("Use a smaller radius, or an index with more blocks.")));
	return palloc_extended(Max((Size) count, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
}

/* Number of values within s bits of a b-bit block: sum of C(b, i), i <= s. */
double
mih_probes_per_table(int blockbits, int s)
{
	return sh_binomial_sum(blockbits, s);
}

/*
 * Every value within s bits of (q & mask) in the mask's bits, ascending (so
 * consecutive probes often share a leaf), palloc'd in the current context.
 */
uint64 *
mih_table_probes(SimHash q, uint64 mask, int s, int *n)
{
	int			bits[SIMHASH_BITS];
	int			nbits = 0;
	double		count;
	uint64	   *out;
	int			max PG_USED_FOR_ASSERTS_ONLY;

	if (s == 0)
	{
		/* the block itself: every table of a radius-3 search (the constraint's) */
		out = palloc(sizeof(uint64));
		out[0] = q & mask;
		*n = 1;
		return out;
	}
	count = mih_probes_per_table(pg_popcount64(mask), s);
	out = alloc_probes(count);
	max = (int) count;

	for (int i = 0; i < SIMHASH_BITS; i++)
		if (mask & (UINT64CONST(1) << i))
			bits[nbits++] = i;
	*n = 0;
	enumerate_flips(q & mask, bits, nbits, 0, s, out, n);
	Assert(*n == max);
	sort_probes(out, *n);
	return out;
}

/*
 * The radius each table is probed at for a search of radius r over m
 * disjoint blocks that cover the fingerprint. With r = q m + a (0 <= a < m),
 * a + 1 tables are probed at q bits and the other m - a - 1 at q - 1 (the
 * refinement of the pigeonhole in Norouzi, Punjani and Fleet, "Fast Exact
 * Search in Hamming Space with Multi-Index Hashing", section 4): a row that
 * differs from the query by more in every table differs by at least
 * (a + 1)(q + 1) + (m - a - 1) q = r + 1 bits in all. A table at -1 is not
 * probed at all. The larger radius goes to the tables with the fewest bits
 * (fewest probes), ties to the lower table; the scan, its check of which
 * table reports a match, and the cost estimate all take the radii from here.
 * At r = 12 with 4 blocks of 16 bits this probes 697 + 3 x 137 values
 * instead of 4 x 697.
 */
void
mih_table_radii(const uint64 *masks, int m, int radius, int *radii)
{
	int			q = Max(radius, 0) / m;
	int			a = Max(radius, 0) % m;
	bool		given[MIH_MAX_BLOCKS] = {false};

	for (int j = 0; j < m; j++)
		radii[j] = q - 1;
	for (int k = 0; k <= a; k++)
	{
		int			best = -1;

		for (int j = 0; j < m; j++)
			if (!given[j] && (best < 0 || pg_popcount64(masks[j]) < pg_popcount64(masks[best])))
				best = j;
		given[best] = true;
		radii[best] = q;
	}
}

/*
 * The last answer of mih_search_cost and what it was computed from: every
 * constraint check (two per row under ON CONFLICT) asks it again for the
 * same runs and radius, and its logarithms and binomial sums were a few
 * percent of a check.
 */
typedef struct SearchCostMemo
{
	bool		valid;
	int			radius;
	int			nblocks;
	int			nruns;
	double		random_page_cost;
	double		seq_page_cost;
	double		cpu_operator_cost;
	uint64		masks[MIH_MAX_BLOCKS];
	int64		run_entries[MIH_MAX_RUNS];
	uint32		run_tables[MIH_MAX_RUNS];
	MihSearchCost cost;
} SearchCostMemo;

static SearchCostMemo search_memo;

static bool
search_memo_matches(const MihMetaPageData *meta, int radius, double random_page_cost,
					double seq_page_cost)
{
	if (!search_memo.valid || search_memo.radius != radius ||
		search_memo.nblocks != meta->nblocks || search_memo.nruns != meta->nruns ||
		search_memo.random_page_cost != random_page_cost ||
		search_memo.seq_page_cost != seq_page_cost ||
		search_memo.cpu_operator_cost != cpu_operator_cost ||
		memcmp(search_memo.masks, meta->masks, sizeof(search_memo.masks)) != 0 ||
		memcmp(search_memo.run_entries, meta->run_entries, meta->nruns * sizeof(int64)) != 0)
		return false;
	for (int r = 0; r < meta->nruns; r++)
		if (search_memo.run_tables[r] != mih_run_tables(meta, r))
			return false;
	return true;
}

/*
 * CPU of one page visited, in cpu_operator_cost: what btree charges a page
 * of a descent (btcostestimate), here for each leaf a probe reads (pin,
 * lock, the page's checks) and each inner level it searches.
 */
#define MIH_PAGE_VISIT_OPS	50

/*
 * What a search of radius r costs by probing, and by reading table 0 of
 * every run whole instead, in the planner's units; which of the two the
 * scan does (fullscan: the cheaper, or the pass when the probes would
 * outnumber MIH_MAX_PROBES a table). The scan (mih_scan.c) decides by
 * this and the planner (mih_cost.c) prices the scan by it, with the same
 * page costs (the index's tablespace's), so the plan's cost is the cost of
 * what the scan will do.
 *
 * Probing a run's table reads, per probe value, the leaf holding it (and
 * the following leaves its entries fill) after a descent whose inner pages
 * a backend keeps (mih_cache.c). Leaves are charged at random_page_cost
 * once each: probes that land on a leaf read before find it in shared
 * buffers, so of a table's L leaves a accesses read L (1 - e^(-a/L))
 * distinct ones (the expected number of distinct pages among a uniform
 * draws, as index_pages_fetched reasons for btree). Every access and
 * descent level costs CPU (MIH_PAGE_VISIT_OPS), every entry examined one
 * cpu_operator_cost. The pass reads table 0's leaves in order at
 * seq_page_cost and computes one distance per entry.
 */
void
mih_search_cost(const MihMetaPageData *meta, int radius, double random_page_cost,
				double seq_page_cost, MihSearchCost *c)
{
	int			m = Max(meta->nblocks, 1);
	int			radii[MIH_MAX_BLOCKS];
	double		maxprobes = 0;
	double		visits = 0;

	if (search_memo_matches(meta, radius, random_page_cost, seq_page_cost))
	{
		*c = search_memo.cost;
		return;
	}

	mih_table_radii(meta->masks, m, radius, radii);
	memset(c, 0, sizeof(*c));
	for (int j = 0; j < m; j++)
		if (radii[j] >= 0)
			maxprobes = Max(maxprobes, mih_probes_per_table(pg_popcount64(meta->masks[j]), radii[j]));
	for (int r = 0; r < meta->nruns; r++)
	{
		double		n = Max(meta->run_entries[r], 1);
		double		leaves = ceil(n / MIH_ENTRIES_PER_PAGE);
		double		height = ceil(log(leaves + 1) / log(MIH_INNER_PER_PAGE));
		uint32		tables = mih_run_tables(meta, r);

		/* a full scan reads table 0 of the runs serving it */
		if (tables & 1)
		{
			c->full_pages += leaves;
			c->full_entries += n;
		}
		for (int j = 0; j < m; j++)
		{
			int			bits = pg_popcount64(meta->masks[j]);
			double		probes;
			double		perprobe = ldexp(n, -bits);
			double		accesses;

			if (!(tables & (1 << j)) || radii[j] < 0)
				continue;
			probes = mih_probes_per_table(bits, radii[j]);
			accesses = probes * (1 + perprobe / MIH_ENTRIES_PER_PAGE);
			c->probes += probes;
			c->probe_accesses += accesses;
			c->probe_pages += height + leaves * -expm1(-accesses / leaves);
			c->probe_entries += probes * perprobe;
			visits += accesses + probes * height;
		}
	}
	c->probe_cost = c->probe_pages * random_page_cost +
		visits * MIH_PAGE_VISIT_OPS * cpu_operator_cost +
		c->probe_entries * cpu_operator_cost;
	c->full_cost = c->full_pages * seq_page_cost + c->full_entries * cpu_operator_cost;
	c->fullscan = radius >= SIMHASH_BITS || maxprobes > MIH_MAX_PROBES ||
		c->probe_cost > c->full_cost;

	search_memo.radius = radius;
	search_memo.nblocks = meta->nblocks;
	search_memo.nruns = meta->nruns;
	search_memo.random_page_cost = random_page_cost;
	search_memo.seq_page_cost = seq_page_cost;
	search_memo.cpu_operator_cost = cpu_operator_cost;
	memcpy(search_memo.masks, meta->masks, sizeof(search_memo.masks));
	memcpy(search_memo.run_entries, meta->run_entries, meta->nruns * sizeof(int64));
	for (int r = 0; r < meta->nruns; r++)
		search_memo.run_tables[r] = mih_run_tables(meta, r);
	search_memo.cost = *c;
	search_memo.valid = true;
}

/*
 * Every value exactly s bits from (q & mask) in the mask's bits, a chunk at
 * a time: one level of the nearest-neighbour search (mih_knn.c). The
 * combination of flipped bits is the iterator's state (s positions among
 * the mask's bits, ascending, advanced by sh_choice_next), so memory is the
 * chunk whatever C(bits, s) is; each chunk comes sorted, so consecutive
 * probes of a chunk often share a leaf.
 */
void
mih_probe_iter_init(MihProbeIter *it, SimHash q, uint64 mask, int s)
{
	it->nbits = 0;
	for (int i = 0; i < SIMHASH_BITS; i++)
		if (mask & (UINT64CONST(1) << i))
			it->bits[it->nbits++] = i;
	it->base = q & mask;
	it->s = s;
	it->done = s > it->nbits;
	sh_choice_first(it->pos, it->done ? 0 : s);
}

/* Up to max values into out, sorted; 0 at the end. */
int
mih_probe_iter_next(MihProbeIter *it, uint64 *out, int max)
{
	int			n = 0;

	while (n < max && !it->done)
	{
		uint64		v = it->base;

		for (int i = 0; i < it->s; i++)
			v ^= UINT64CONST(1) << it->bits[it->pos[i]];
		out[n++] = v;
		it->done = !sh_choice_next(it->pos, it->s, it->nbits);
	}
	CHECK_FOR_INTERRUPTS();
	sort_probes(out, n);
	return n;
}

