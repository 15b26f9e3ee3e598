/*
 * pigeonhole.h
 *		The pigeonhole keys of simhash_blocks (pigeonhole.c): a key is a
 *		fingerprint's bits on one choice of m - r of its m blocks, and the
 *		choices are numbered in lexicographic order. The one copy of that
 *		numbering, for simhash_blocks, simhash_first_shared_block and the
 *		window function that finds the pairs of one key (pigeonhole_partners.c).
 */
#ifndef SIMHASH_PIGEONHOLE_H
#define SIMHASH_PIGEONHOLE_H

#include "binomial.h"

/* pigeonhole.c: the arguments' checks, with the errors every key function gives */
extern void sh_pigeon_check_radius(int32 r);
extern void sh_pigeon_check_blocks(int32 r, int32 m);

/*
 * The number of the first choice of m - r blocks on which two fingerprints
 * whose XOR is diff agree, or -1 when they agree on fewer than m - r blocks
 * (they are then more than r bits apart). The first choice is the first
 * m - r agreeing blocks, and its number is its rank among all choices: for
 * each chosen block, the choices that put a smaller block in that place
 * come before it. masks[] are the m block masks (mih_default_masks).
 */
static inline int64
sh_pigeon_first_shared(uint64 diff, int r, int m, const uint64 *masks)
{
	int			k = m - r;
	int			chosen[64];
	int			nchosen = 0;
	int64		rank = 0;
	int			prev = -1;

	for (int j = 0; j < m && nchosen < k; j++)
		if ((diff & masks[j]) == 0)
			chosen[nchosen++] = j;
	if (nchosen < k)
		return -1;
	for (int i = 0; i < k; i++)
	{
		for (int v = prev + 1; v < chosen[i]; v++)
			rank += (int64) sh_binomial(m - 1 - v, k - 1 - i);
		prev = chosen[i];
	}
	return rank;
}

/*
 * The bits of choice number (0 <= number < C(m, r)): the union of its
 * m - r block masks. The inverse of the ranking above.
 */
static inline uint64
sh_pigeon_key_mask(int64 number, int r, int m, const uint64 *masks)
{
	int			k = m - r;
	int			v = 0;
	uint64		mask = 0;

	for (int i = 0; i < k; i++)
	{
		for (;; v++)
		{
			int64		after = (int64) sh_binomial(m - 1 - v, k - 1 - i);

			if (number < after)
				break;
			number -= after;
		}
		mask |= masks[v];
		v++;
	}
	return mask;
}

#endif							/* SIMHASH_PIGEONHOLE_H */
