/*
 * feature_hash.h
 *		The feature hash of the fingerprint specification (doc/specification.md, item
 *		6): XXH3-64 of the feature's UTF-8 bytes, seed 0.
 *
 * Header-only and free of server dependencies, so that the tokeniser
 * (which the fuzz harness builds outside the server) can hash features in
 * place, and accum.c uses the very same definition. Include it after
 * postgres.h or postgres_fe.h.
 */
#ifndef SIMHASH_FEATURE_HASH_H
#define SIMHASH_FEATURE_HASH_H

/* Part of the fingerprint specification: never change it. */
#define SIMHASH_XXH3_SEED 0

#define XXH_INLINE_ALL
#include <xxhash.h>

/*
 * XXH3_64bits() is by definition XXH3_64bits_withSeed() with seed 0, and
 * skips the seed handling.
 */
StaticAssertDecl(SIMHASH_XXH3_SEED == 0, "sh_hash_feature assumes seed 0");

static inline uint64
sh_hash_feature(const void *feature, size_t len)
{
	return (uint64) XXH3_64bits(feature, len);
}

#endif							/* SIMHASH_FEATURE_HASH_H */
