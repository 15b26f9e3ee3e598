/*
 * typanalyze.c
 *		Column statistics of fingerprints for the planner: besides the
 *		standard ones (most common values, histogram), the share of pairs of
 *		rows whose fingerprints are within r bits, for every r from 0 to 64,
 *		measured on ANALYZE's sample.
 *
 * The join estimate of "b.fp <~> a.fp <= r" (a self-join that finds
 * near-duplicates) needs it: real fingerprints come in clusters of
 * near-copies, which a histogram of a hundred bounds never shows, and the
 * chance that two random fingerprints are that close is smaller than the
 * true rate by many orders of magnitude. Pairs of sampled rows are a
 * uniform sample of pairs of rows, so their share within r estimates the
 * table's directly. The slot is defined in ball.h; selectivity.c reads it.
 */
#include "simhash.h"

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "type/ball.h"


/*
 * At most this many sampled rows are compared pairwise: 2 * 10^8 pairs, a
 * few tenths of a second, which still sees a pair rate of 10^-7 about 20
 * times. A larger sample is thinned evenly (ANALYZE's rows come in the
 * table's physical order, so the first rows would not do).
 */
#define NEAR_PAIRS_MAX_ROWS		20000

/* The standard statistics' routine and state, which ours wraps. */
typedef struct NearPairsExtra
{
	AnalyzeAttrComputeStatsFunc std_compute;
	void	   *std_extra;
} NearPairsExtra;

static void
compute_near_pairs(VacAttrStats *stats, AnalyzeAttrFetchFunc fetchfunc,
				   int samplerows)
{
	int			slot = -1;
	int			stride = Max(1, (samplerows + NEAR_PAIRS_MAX_ROWS - 1) / NEAR_PAIRS_MAX_ROWS);
	SimHash    *fps = palloc(sizeof(SimHash) * (samplerows / stride + 1));
	int			n = 0;
	uint64		counts[SIMHASH_BITS + 1] = {0};
	double		npairs;
	double		cumulative = 0;
	float4	   *numbers;

	for (int i = 0; i < STATISTIC_NUM_SLOTS; i++)
		if (stats->stakind[i] == 0)
		{
			slot = i;
			break;
		}
	if (slot < 0)
		return;					/* no room: the estimate falls back */

	for (int i = 0; i < samplerows; i += stride)
	{
		bool		isnull;
		Datum		d = fetchfunc(stats, i, &isnull);

		if (!isnull)
			fps[n++] = DatumGetSimHash(d);
	}
	if (n < 2)
		return;
	for (int i = 0; i < n; i++)
	{
		SimHash		a = fps[i];

		if ((i & 255) == 0)
			sh_analyze_delay_point();
		for (int j = i + 1; j < n; j++)
			counts[simhash_hamming(a, fps[j])]++;
	}

	npairs = (double) n * (n - 1) / 2;
	numbers = MemoryContextAlloc(stats->anl_context, sizeof(float4) * SH_NEAR_PAIRS_NUMBERS);
	for (int r = 0; r <= SIMHASH_BITS; r++)
	{
		cumulative += counts[r];
		numbers[r] = (float4) (cumulative / npairs);
	}
	stats->stakind[slot] = SH_STATISTIC_KIND_NEAR_PAIRS;
	stats->staop[slot] = InvalidOid;
	stats->stanumbers[slot] = numbers;
	stats->numnumbers[slot] = SH_NEAR_PAIRS_NUMBERS;
	pfree(fps);
}

/* The standard statistics first, then ours in a free slot. */
static void
compute_simhash_stats(VacAttrStats *stats, AnalyzeAttrFetchFunc fetchfunc,
					  int samplerows, double totalrows)
{
	NearPairsExtra *extra = (NearPairsExtra *) stats->extra_data;

	stats->extra_data = extra->std_extra;
	extra->std_compute(stats, fetchfunc, samplerows, totalrows);
	stats->extra_data = extra;
	if (stats->stats_valid)
		compute_near_pairs(stats, fetchfunc, samplerows);
}

/* The simhash type's ANALYZE routine (pg_type.typanalyze). */
PG_FUNCTION_INFO_V1(simhash_typanalyze);
Datum
simhash_typanalyze(PG_FUNCTION_ARGS)
{
	VacAttrStats *stats = (VacAttrStats *) PG_GETARG_POINTER(0);
	NearPairsExtra *extra;

	if (!std_typanalyze(stats))
		PG_RETURN_BOOL(false);
	extra = palloc(sizeof(NearPairsExtra));
	extra->std_compute = stats->compute_stats;
	extra->std_extra = stats->extra_data;
	stats->compute_stats = compute_simhash_stats;
	stats->extra_data = extra;
	PG_RETURN_BOOL(true);
}
