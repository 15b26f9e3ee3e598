/*
 * accum.c
 *		Charikar accumulation: feature hashes (XXH3-64) into 64 bit counters.
 *
 * For every feature, each bit position gains the feature's weight where the
 * feature's hash bit is 1 and loses it where it is 0; the fingerprint's bit
 * is 1 when the sum is strictly positive (a tie gives 0).
 */
#include "simhash.h"

#include <math.h>

#include "utils/float.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64
sh_feature_hash(const char *feature, size_t len)
{
	return (uint64) XXH3_64bits_withSeed(feature, len, SIMHASH_XXH3_SEED);
}

/*
 * Unit weights, exact integers. Instead of 64 separate additions per
 * feature we spread each hash byte into a uint64 holding eight 0/1 bytes (a
 * 256-entry table) and add it to a lane of eight byte counters; every 255
 * features the byte counters are flushed into 64-bit totals before they
 * could overflow. That is 8 additions per feature instead of 64.
 */
static uint64 byte_spread[256];
static bool byte_spread_ready = false;

static void
init_byte_spread(void)
{
	for (int b = 0; b < 256; b++)
	{
		uint64		v = 0;

		for (int i = 0; i < 8; i++)
			if (b & (1 << i))
				v |= UINT64CONST(1) << (8 * i);
		byte_spread[b] = v;
	}
	byte_spread_ready = true;
}

void
sh_count_init(ShCountAccum *acc)
{
	if (!byte_spread_ready)
		init_byte_spread();
	memset(acc, 0, sizeof(*acc));
}

static void
count_flush(ShCountAccum *acc)
{
	for (int lane = 0; lane < 8; lane++)
	{
		uint64		v = acc->lanes[lane];

		for (int i = 0; i < 8; i++)
			acc->ones[lane * 8 + i] += (v >> (8 * i)) & 0xFF;
		acc->lanes[lane] = 0;
	}
	acc->inlanes = 0;
}

void
sh_count_add(ShCountAccum *acc, uint64 hash)
{
	for (int lane = 0; lane < 8; lane++)
		acc->lanes[lane] += byte_spread[(hash >> (8 * lane)) & 0xFF];
	acc->nfeatures++;
	if (++acc->inlanes == 255)
		count_flush(acc);
}

/* Returns false when there were no features (the caller returns NULL). */
bool
sh_count_result(ShCountAccum *acc, SimHash *result)
{
	SimHash		fp = 0;

	count_flush(acc);
	if (acc->nfeatures == 0)
		return false;
	for (int i = 0; i < SIMHASH_BITS; i++)
	{
		/* sum = ones - zeros = 2 * ones - n; bit set when sum > 0 */
		if (2 * acc->ones[i] > acc->nfeatures)
			fp |= UINT64CONST(1) << i;
	}
	*result = fp;
	return true;
}

void
sh_weight_init(ShWeightAccum *acc)
{
	memset(acc, 0, sizeof(*acc));
}

/* Weights must be finite and not negative; zero is allowed (no effect). */
void
sh_weight_check(float8 weight)
{
	if (isnan(weight) || isinf(weight))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash feature weight must be finite, got %s",
						float8out_internal(weight))));
	if (weight < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash feature weight must not be negative, got %s",
						float8out_internal(weight))));
}

void
sh_weight_add(ShWeightAccum *acc, uint64 hash, float8 weight)
{
	if (weight == 0)
		return;
	acc->total += weight;
	if (isinf(acc->total))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("sum of simhash feature weights is out of range for double precision")));
	for (int i = 0; i < SIMHASH_BITS; i++)
		acc->sums[i] += ((hash >> i) & 1) ? weight : -weight;
	acc->npositive++;
}

/* Returns false when no feature had a positive weight. */
bool
sh_weight_result(const ShWeightAccum *acc, SimHash *result)
{
	SimHash		fp = 0;

	if (acc->npositive == 0)
		return false;
	for (int i = 0; i < SIMHASH_BITS; i++)
		if (acc->sums[i] > 0)
			fp |= UINT64CONST(1) << i;
	*result = fp;
	return true;
}
