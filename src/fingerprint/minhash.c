/*
 * minhash.c
 *		minhash(doc [, features [, size [, version]]]): a one-permutation
 *		MinHash sketch of a document's feature set, one bit per bin, in the 64
 *		bits of a simhash (MinHash specification version 1, doc/specification.md).
 *
 * Why: Charikar's simhash (a sign of sums) moves many bits when a few
 * percent of the words of a long document change; a MinHash bin changes only
 * when the minimum of its features changes, with probability 1 - J (J the
 * Jaccard similarity of the feature sets), and one bit of a differing bin
 * differs with probability 1/2, so two documents' expected Hamming distance
 * is 32 (1 - J) (Shrivastava and Li, "In Defense of MinHash over SimHash",
 * AISTATS 2014; b-bit minwise hashing, Li and Konig 2010). The result is a
 * simhash like any other: <~>, <->, the index, the constraint and the
 * grouping functions use it unchanged.
 *
 * The features are specification version 2's (the same tokeniser,
 * normalisation, Han folding, features and size as simhash(text)), taken as
 * the set of their 64-bit XXH3 hashes. One pass, no allocation: each hash
 * updates one bin's minimum (a minimum needs no set of distinct hashes).
 * Empty bins are filled by optimal densification (Shrivastava, "Optimal
 * Densification for Fast and Accurate Minwise Hashing", ICML 2017).
 */
#include "simhash.h"

#include "fingerprint/minhash.h"

/*
 * The bins a hash falls into: its top 6 bits; the value compared within a
 * bin: the other 58.
 */
#define MH_BINS			64
#define MH_BIN_SHIFT	58
#define MH_VALUE_MASK	((UINT64CONST(1) << MH_BIN_SHIFT) - 1)
#define MH_EMPTY		PG_UINT64_MAX	/* above every 58-bit value */

/*
 * Every bin's probe sequence (mh_probe_bin) reaches every one of the 64
 * bins within its first 502 values (found by enumeration, checked again by
 * the reference implementation, test/reference/simhash_ref.py); so with at
 * least one non-empty bin, densification ends within this many probes.
 */
#define MH_PROBE_BOUND	502

#define MH_GOLDEN		UINT64CONST(0x9E3779B97F4A7C15)

/* splitmix64's finaliser (Steele, Lea and Flood 2014), part of the spec. */
static inline uint64
mh_splitmix64(uint64 z)
{
	z += MH_GOLDEN;
	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* The a-th bin that empty bin i borrows from, if that one is non-empty. */
static inline int
mh_probe_bin(int i, uint32 a)
{
	return (int) (mh_splitmix64(((uint64) i << 32) | a) >> MH_BIN_SHIFT);
}

void
sh_minhash_init(ShMinHash *mh)
{
	for (int i = 0; i < MH_BINS; i++)
		mh->min[i] = MH_EMPTY;
}

/* ShHashBatchFn: each feature hash lowers its bin's minimum. */
void
sh_minhash_hashes(void *arg, const uint64 *hashes, int n)
{
	ShMinHash  *mh = (ShMinHash *) arg;

	for (int k = 0; k < n; k++)
	{
		uint64		h = hashes[k];
		int			bin = (int) (h >> MH_BIN_SHIFT);
		uint64		v = h & MH_VALUE_MASK;

		uint64		m = mh->min[bin];

		/* no branch: whether v is a new minimum is a coin toss early on */
		mh->min[bin] = (v < m) ? v : m;
	}
}

/*
 * The sketch: densify (each empty bin takes the minimum of the first
 * non-empty bin of its own probe sequence), then bit i is the low bit of
 * splitmix64(key_i XOR i * golden). Mixing in i makes bins that borrowed the
 * same minimum independent bits. False when every bin is empty (no
 * features: NULL, as simhash gives).
 */
bool
sh_minhash_result(const ShMinHash *mh, SimHash *result)
{
	uint64		sketch = 0;
	bool		any = false;

	for (int i = 0; i < MH_BINS; i++)
		if (mh->min[i] != MH_EMPTY)
		{
			any = true;
			break;
		}
	if (!any)
		return false;

	for (int i = 0; i < MH_BINS; i++)
	{
		uint64		key = mh->min[i];

		if (key == MH_EMPTY)
		{
			uint32		a;

			for (a = 0; a < MH_PROBE_BOUND; a++)
			{
				int			j = mh_probe_bin(i, a);

				if (mh->min[j] != MH_EMPTY)
				{
					key = mh->min[j];
					break;
				}
			}
			if (a == MH_PROBE_BOUND)
				elog(ERROR, "minhash densification found no non-empty bin for bin %d", i);
		}
		sketch |= (mh_splitmix64(key ^ ((uint64) i * MH_GOLDEN)) & 1) << i;
	}
	*result = sketch;
	return true;
}

/*
 * minhash(doc [, features [, size [, version]]]). The fourth argument names
 * the MinHash specification version; 1 is the only one.
 */
PG_FUNCTION_INFO_V1(simhash_minhash_text);
Datum
simhash_minhash_text(PG_FUNCTION_ARGS)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	ShFeatureKind kind;
	int			size;
	size_t		len;
	const char *utf8;
	ShMinHash	mh;
	SimHash		result;

	sh_parse_feature_args(fcinfo, 1, &kind, &size);
	if (PG_NARGS() >= 4 && PG_GETARG_INT32(3) != SH_MINHASH_SPEC_V1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("minhash specification version must be %d, got %d",
						SH_MINHASH_SPEC_V1, PG_GETARG_INT32(3))));
	utf8 = sh_text_to_utf8(doc, &len);
	sh_minhash_init(&mh);
	sh_tokenize_hashed(utf8, len, kind, size, SH_SPEC_V2, sh_minhash_hashes, &mh);
	if (!sh_minhash_result(&mh, &result))
		PG_RETURN_NULL();		/* no features: no sketch */
	PG_RETURN_SIMHASH(result);
}
