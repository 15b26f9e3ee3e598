/*
 * minhash.h
 *		The one-permutation MinHash sketch (minhash.c): a bin minimum per top
 *		6 bits of the feature hash, fed by the tokeniser's hash batches.
 */
#ifndef SIMHASH_MINHASH_H
#define SIMHASH_MINHASH_H

/* The MinHash specification versions (doc/specification.md); 1 is the only one. */
#define SH_MINHASH_SPEC_V1	1

typedef struct ShMinHash
{
	uint64		min[64];		/* per bin, the least 58-bit value seen */
} ShMinHash;

extern void sh_minhash_init(ShMinHash *mh);
extern void sh_minhash_hashes(void *arg, const uint64 *hashes, int n);
extern bool sh_minhash_result(const ShMinHash *mh, SimHash *result);

#endif							/* SIMHASH_MINHASH_H */
