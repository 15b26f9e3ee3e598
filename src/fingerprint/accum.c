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

#include "fingerprint/feature_hash.h"

uint64
sh_feature_hash(const char *feature, size_t len)
{
	return sh_hash_feature(feature, len);
}

/*
 * Unit weights, exact integers: we need, for each of the 64 bit positions,
 * how many feature hashes have that bit set. Adding 64 counters per feature
 * would dominate the run time, so hashes are buffered and counted 16 at a
 * time with a Harley-Seal carry-save adder tree: the planes ones, twos,
 * fours and eights hold bit-sliced partial counts (bit i of "fours" is worth
 * 4 at position i), and only the carry out of the tree, worth 16, is spread
 * into per-position byte counters (a 256-entry table turns a hash byte into
 * eight 0/1 bytes). That is about 5 logic operations per feature. Byte
 * counters are flushed into 64-bit totals before they can overflow.
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

/* carry-save adder: (*hi, *lo) = a + b + c, bit by bit */
#define CSA(hi, lo, a, b, c) \
	do { \
		uint64		u_ = (a) ^ (b); \
		uint64		a_ = (a), b_ = (b), c_ = (c); \
		(hi) = (a_ & b_) | (u_ & c_); \
		(lo) = u_ ^ c_; \
	} while (0)

/* Add 1 at every position set in word, into the byte counters. */
static inline void
lanes_add(ShCountAccum *acc, uint64 word)
{
	for (int i = 0; i < 8; i++)
		acc->lanes[i] += byte_spread[(word >> (8 * i)) & 0xFF];
	if (++acc->inlanes == 255)
	{
		/* byte j of lanes[i] counts sixteens at position 8i + j */
		for (int i = 0; i < 8; i++)
		{
			for (int j = 0; j < 8; j++)
				acc->totals[8 * i + j] += 16 * (int64) ((acc->lanes[i] >> (8 * j)) & 0xFF);
			acc->lanes[i] = 0;
		}
		acc->inlanes = 0;
	}
}

/* Count the 16 hashes at d. */
static void
count_16(ShCountAccum *acc, const uint64 *d)
{
	uint64		ones = acc->ones,
				twos = acc->twos,
				fours = acc->fours,
				eights = acc->eights;
	uint64		twosA,
				twosB,
				foursA,
				foursB,
				eightsA,
				eightsB,
				sixteens;

	CSA(twosA, ones, ones, d[0], d[1]);
	CSA(twosB, ones, ones, d[2], d[3]);
	CSA(foursA, twos, twos, twosA, twosB);
	CSA(twosA, ones, ones, d[4], d[5]);
	CSA(twosB, ones, ones, d[6], d[7]);
	CSA(foursB, twos, twos, twosA, twosB);
	CSA(eightsA, fours, fours, foursA, foursB);
	CSA(twosA, ones, ones, d[8], d[9]);
	CSA(twosB, ones, ones, d[10], d[11]);
	CSA(foursA, twos, twos, twosA, twosB);
	CSA(twosA, ones, ones, d[12], d[13]);
	CSA(twosB, ones, ones, d[14], d[15]);
	CSA(foursB, twos, twos, twosA, twosB);
	CSA(eightsB, fours, fours, foursA, foursB);
	CSA(sixteens, eights, eights, eightsA, eightsB);

	acc->ones = ones;
	acc->twos = twos;
	acc->fours = fours;
	acc->eights = eights;
	lanes_add(acc, sixteens);
}

static void
count_pending(ShCountAccum *acc)
{
	count_16(acc, acc->pending);
	acc->npending = 0;
}

static inline void
count_add(ShCountAccum *acc, uint64 hash)
{
	acc->pending[acc->npending++] = hash;
	acc->nfeatures++;
	if (acc->npending == lengthof(acc->pending))
		count_pending(acc);
}

void
sh_count_add(ShCountAccum *acc, uint64 hash)
{
	count_add(acc, hash);
}

/*
 * ShHashBatchFn for the tokeniser: whole groups of 16 go straight into the
 * adder tree when nothing is pending.
 */
void
sh_count_hashes(void *arg, const uint64 *hashes, int n)
{
	ShCountAccum *acc = (ShCountAccum *) arg;
	int			i = 0;

	if (acc->npending == 0)
	{
		for (; i + 16 <= n; i += 16)
			count_16(acc, hashes + i);
		acc->nfeatures += i;
	}
	for (; i < n; i++)
		count_add(acc, hashes[i]);
}

/* Returns false when there were no features (the caller returns NULL). */
bool
sh_count_result(ShCountAccum *acc, SimHash *result)
{
	SimHash		fp = 0;

	if (acc->nfeatures == 0)
		return false;
	for (int i = 0; i < SIMHASH_BITS; i++)
	{
		int64		ones = acc->totals[i];

		/* what the adder tree and the byte counters still hold */
		ones += 16 * (int64) ((acc->lanes[i / 8] >> (8 * (i % 8))) & 0xFF);
		ones += 8 * ((acc->eights >> i) & 1) + 4 * ((acc->fours >> i) & 1) +
			2 * ((acc->twos >> i) & 1) + ((acc->ones >> i) & 1);
		for (int j = 0; j < acc->npending; j++)
			ones += (acc->pending[j] >> i) & 1;

		/* sum = ones - zeros = 2 * ones - n; bit set when sum > 0 */
		if (2 * ones > acc->nfeatures)
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
