/*
 * grouping.h
 *		The two ways near-duplicates are grouped, one copy for the window
 *		functions (window.c: simhash_component, simhash_leader) and for pair
 *		lists (pigeonhole.c: simhash_pair_groups). Rows are numbered 0 .. n - 1 in
 *		the order that decides who is kept; rep[d] is the row that represents
 *		row d's group.
 */
#ifndef SIMHASH_GROUPING_H
#define SIMHASH_GROUPING_H

#include "c.h"

/* Union-find with path halving: the root of a set is its smallest member. */
static inline uint32
sh_group_find(uint32 *parent, uint32 x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

/* Join the sets of a and b; the smaller root represents the union. */
static inline void
sh_group_union(uint32 *parent, uint32 a, uint32 b)
{
	uint32		ra = sh_group_find(parent, a);
	uint32		rb = sh_group_find(parent, b);

	if (ra < rb)
		parent[rb] = ra;
	else if (rb < ra)
		parent[ra] = rb;
}

/* After every union: each row's representative is its set's root. */
static inline void
sh_group_flatten(uint32 *parent, uint32 n)
{
	for (uint32 d = 0; d < n; d++)
		parent[d] = sh_group_find(parent, d);
}

/*
 * Leader clustering: in row order, a row joins the first earlier leader it
 * is paired with, or leads. edges are (later << 32 | earlier), sorted, so a
 * row's edges come together, its earlier partners ascending, and every
 * earlier row is decided when its turn comes.
 */
static inline void
sh_group_leaders(const uint64 *edges, uint64 nedges, uint32 n, uint32 *rep)
{
	uint64		e = 0;

	for (uint32 d = 0; d < n; d++)
	{
		uint32		leader = d;

		for (; e < nedges && (uint32) (edges[e] >> 32) == d; e++)
		{
			uint32		a = (uint32) edges[e];

			if (leader == d && rep[a] == a)
				leader = a;
		}
		rep[d] = leader;
	}
}

#endif							/* SIMHASH_GROUPING_H */
