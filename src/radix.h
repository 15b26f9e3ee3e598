/*
 * radix.h
 *		One LSD radix sort, instantiated for each element type that needs it
 *		(the batch pass's 64-bit items, the grouping functions' fingerprint
 *		rows and pairs).
 *
 * RADIX_SORT_DEFINE(name, type, key) defines
 *	  static void name(type *data, type *tmp, uint64 n, int first_shift)
 * sorting data by the 64-bit key(element) bits from first_shift up, 8 bits a
 * pass, stable, with tmp (n elements) as the other buffer. A pass in which
 * every element has the same digit is skipped; interrupts are checked after
 * every pass, since sorting a large set takes seconds and a cancel must not
 * wait for it.
 */
#ifndef SIMHASH_RADIX_H
#define SIMHASH_RADIX_H

#include "miscadmin.h"

#define RADIX_SORT_DEFINE(name, type, key) \
static void \
name(type *data, type *tmp, uint64 n, int first_shift) \
{ \
	type	   *src = data; \
	type	   *dst = tmp; \
\
	for (int shift = first_shift; shift < 64; shift += 8) \
	{ \
		uint64		count[256]; \
		uint64		pos = 0; \
		bool		trivial = false; \
\
		memset(count, 0, sizeof(count)); \
		for (uint64 i = 0; i < n; i++) \
			count[(key(src[i]) >> shift) & 255]++; \
		for (int d = 0; d < 256; d++) \
		{ \
			uint64		c = count[d]; \
\
			trivial |= (c == n); \
			count[d] = pos; \
			pos += c; \
		} \
		if (trivial) \
			continue; \
		for (uint64 i = 0; i < n; i++) \
			dst[count[(key(src[i]) >> shift) & 255]++] = src[i]; \
		{ \
			type	   *swap = src; \
\
			src = dst; \
			dst = swap; \
		} \
		CHECK_FOR_INTERRUPTS(); \
	} \
	if (src != data) \
		memcpy(data, src, sizeof(type) * n); \
}

#endif							/* SIMHASH_RADIX_H */
