/*
 * distance.c
 *		Hamming distance between fingerprints and the radius predicate.
 *
 * simhash_hamming_distance() is the function of the <~> operator and
 * returns the simhash_distance domain (over int4) so that comparisons on it
 * can carry planner support (see rewrite.c). simhash_hamming() returns plain
 * int4 for <->. simhash_hamming_within(a, b, r) is "distance <= r", the form
 * the planner rewrites radius comparisons into and the index answers. (Before
 * extension 0.4.0: hamming_distance, hamming, hamming_within; the C symbols
 * are the same.)
 */
#include "simhash.h"

PG_FUNCTION_INFO_V1(simhash_hamming_distance);
Datum
simhash_hamming_distance(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_hamming(PG_GETARG_SIMHASH(0), PG_GETARG_SIMHASH(1)));
}

PG_FUNCTION_INFO_V1(simhash_hamming_within);
Datum
simhash_hamming_within(PG_FUNCTION_ARGS)
{
	SimHash		a = PG_GETARG_SIMHASH(0);
	SimHash		b = PG_GETARG_SIMHASH(1);
	int32		radius = PG_GETARG_INT32(2);

	/* a negative radius matches nothing; 64 or more matches everything */
	PG_RETURN_BOOL(simhash_hamming(a, b) <= radius);
}

/*
 * Radius for "distance <= bound" and "distance < bound" from an int8 bound,
 * clamped to -1..64 so that any integer bound keeps its meaning as an int4
 * radius (-1: nothing matches, 64: everything matches).
 */
int32
simhash_radius_from_bound(int64 bound, bool strict_less)
{
	if (strict_less)
	{
		if (bound <= 0)
			return -1;
		bound -= 1;
	}
	if (bound < -1)
		return -1;
	if (bound > SIMHASH_BITS)
		return SIMHASH_BITS;
	return (int32) bound;
}

PG_FUNCTION_INFO_V1(simhash_radius_le);
Datum
simhash_radius_le(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_radius_from_bound(PG_GETARG_INT64(0), false));
}

PG_FUNCTION_INFO_V1(simhash_radius_lt);
Datum
simhash_radius_lt(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_radius_from_bound(PG_GETARG_INT64(0), true));
}
