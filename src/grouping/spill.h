/*
 * spill.h
 *		Bytes appended and read back by offset (spill.c): in memory up to a
 *		limit, in a temporary file beyond it. The verified grouping keeps its
 *		rows' texts and feature sets there.
 */
#ifndef SIMHASH_SPILL_H
#define SIMHASH_SPILL_H

#include "simhash.h"

#include "storage/buffile.h"

typedef struct ShSpill
{
	char	   *mem;			/* the bytes, while they fit in limit */
	Size		cap;
	Size		limit;
	BufFile    *file;			/* all of them, once they do not */
	int64		end;			/* bytes appended */
	bool		at_end;			/* the file's position is its end */
	MemoryContext cxt;			/* where the memory and the file's buffer live
								 * (the context of spill_init) */
} ShSpill;

extern void spill_init(ShSpill *sp, Size limit);
extern int64 spill_append(ShSpill *sp, const void *data, Size len);
extern void spill_read(ShSpill *sp, int64 offset, void *dst, Size len);
extern void spill_free(ShSpill *sp);

#endif							/* SIMHASH_SPILL_H */
