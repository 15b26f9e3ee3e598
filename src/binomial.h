/*
 * binomial.h
 *		Binomial coefficients and their partial sums, as doubles: the one copy
 *		the probe counts, the selectivity floor, the batch mode's table count
 *		and the pigeonhole keys use. Exact while the result stays below 2^53,
 *		which every caller's does where it needs an exact value (block counts
 *		of at most 64 bits; key counts capped at 10,000). And the one
 *		enumeration of the choices of k of n (the batch mode's tables, the
 *		pigeonhole keys, the nearest-neighbour search's probe values).
 */
#ifndef SIMHASH_BINOMIAL_H
#define SIMHASH_BINOMIAL_H

/* C(n, k); 0 outside 0 <= k <= n */
static inline double
sh_binomial(int n, int k)
{
	double		c = 1.0;

	if (k < 0 || k > n)
		return 0.0;
	if (k > n - k)
		k = n - k;
	for (int i = 1; i <= k; i++)
		c = c * (n - k + i) / i;	/* C(n - k + i, i): exact at every step */
	return c;
}

/* C(n, 0) + ... + C(n, k): the values within k bits of an n-bit block */
static inline double
sh_binomial_sum(int n, int k)
{
	double		total = 0.0;
	double		c = 1.0;			/* C(n, i) */

	for (int i = 0; i <= k && i <= n; i++)
	{
		total += c;
		c = c * (n - i) / (i + 1);
	}
	return total;
}

/* The first choice of k positions of n in lexicographic order: 0 .. k - 1. */
static inline void
sh_choice_first(int *chosen, int k)
{
	for (int i = 0; i < k; i++)
		chosen[i] = i;
}

/*
 * The next choice of k positions of n (ascending in chosen[]), in
 * lexicographic order: the last position that can still move moves, the
 * ones after it follow it. False after the last choice.
 */
static inline bool
sh_choice_next(int *chosen, int k, int n)
{
	int			i;

	for (i = k - 1; i >= 0 && chosen[i] == n - k + i; i--)
		;
	if (i < 0)
		return false;
	chosen[i]++;
	for (int j = i + 1; j < k; j++)
		chosen[j] = chosen[j - 1] + 1;
	return true;
}

#endif							/* SIMHASH_BINOMIAL_H */
