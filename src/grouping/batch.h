/*
 * batch.h
 *		In-memory enumeration of every pair of fingerprints within a radius
 *		(multi-index hashing in batch mode), used by the grouping functions.
 */
#ifndef SIMHASH_BATCH_H
#define SIMHASH_BATCH_H

#include "simhash.h"

/* Called once per unordered pair {a, b} (a < b) with distance <= radius. */
typedef void (*BatchPairCallback) (void *arg, uint32 a, uint32 b, int distance);

/* Counters for DEBUG output and progress reports. */
typedef struct BatchStats
{
	int			top_blocks;		/* blocks of the top-level split (0: brute force) */
	int			top_tables;		/* tables of the top-level split */
	int			tables_done;	/* top-level tables finished */
	int64		sub_splits;		/* oversized runs split again (recursion) */
	int64		comparisons;	/* candidate pairs whose distance was computed */
	int64		pairs;			/* pairs reported */
} BatchStats;

/* Optional progress hook, called between top-level tables and now and then. */
typedef void (*BatchProgressCallback) (void *arg, const BatchStats *stats);

/*
 * Report every pair {a, b} of the n fingerprints fps[] (which must be
 * distinct; a < b are indexes into fps) whose Hamming distance is at most
 * radius, each exactly once, in no particular order. Needs 16 bytes of
 * scratch memory per fingerprint (allocated in CurrentMemoryContext and
 * freed before returning); checks for interrupts.
 */
extern void batch_near_pairs(const SimHash *fps, uint32 n, int radius,
							 BatchPairCallback cb, void *cb_arg,
							 BatchProgressCallback progress, void *progress_arg,
							 BatchStats *stats);

/* Bytes of scratch memory batch_near_pairs() needs for n fingerprints. */
#define BATCH_SCRATCH_BYTES(n)	((Size) (n) * 2 * sizeof(uint64))

#endif							/* SIMHASH_BATCH_H */
