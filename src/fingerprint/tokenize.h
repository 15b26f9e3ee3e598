/*
 * tokenize.h
 *		The simhash tokeniser: UTF-8 text in, features (byte strings) out.
 *
 * This module has no server dependencies beyond palloc (its normaliser is
 * our own, pinned to Unicode 14.0: nfkc.c), so the fuzz harness links it
 * outside the server.
 * The rules it implements are the fingerprint specification in doc/specification.md;
 * any change to its output changes stored fingerprints. Include it after
 * postgres.h or postgres_fe.h.
 */
#ifndef SIMHASH_TOKENIZE_H
#define SIMHASH_TOKENIZE_H

#include <stddef.h>

/* Which features a document is turned into. */
typedef enum ShFeatureKind
{
	SH_FEATURES_WORDS = 0,		/* n consecutive tokens (n = 1: words) */
	SH_FEATURES_CHARS = 1,		/* n consecutive characters */
	SH_FEATURES_MIXED = 2		/* words' tokens in two streams: n consecutive
								 * word tokens, SH_MIXED_SINGLE_N consecutive
								 * single characters (Han, Kana, Thai, ...) */
} ShFeatureKind;

/*
 * The n-gram size of single characters in 'mixed' mode. Fixed by the
 * specification (doc/specification.md): chosen by measurement on Chinese man pages
 * translated twice (bench/quality), where 3 finds 97% of the translations
 * and 4 finds 91%.
 */
#define SH_MIXED_SINGLE_N 3

/* Bounds of the n in word n-grams (shingles) and character n-grams. */
#define SH_MIN_NGRAM 1
#define SH_MAX_NGRAM 32

/*
 * Versions of the fingerprint specification (doc/specification.md) the tokeniser
 * implements. Version 2 adds Han variant folding (unicode_tables.h); the
 * other difference, counting each distinct feature once, is the caller's.
 */
#define SH_SPEC_V1		1
#define SH_SPEC_V2		2
#define SH_SPEC_LATEST	SH_SPEC_V2

/*
 * Called once per feature occurrence, in document order, with the feature's
 * hash (feature_hash.h), which the tokeniser computes anyway.
 */
typedef void (*ShEmitFn) (void *arg, const char *feature, size_t len, uint64 hash);

/*
 * Called with the hashes (sh_hash_feature, feature_hash.h) of a batch of
 * feature occurrences, n >= 1 at a time, in no particular order.
 */
typedef void (*ShHashBatchFn) (void *arg, const uint64 *hashes, int n);

extern void sh_tokenize(const char *text, size_t len, ShFeatureKind kind,
						int size, int version, ShEmitFn emit, void *arg);

/*
 * The same features, hashed by the tokeniser itself: for consumers that need
 * only the multiset of hashes (a fingerprint), this skips the call per
 * feature and lets the hashing of word tokens run in place.
 */
extern void sh_tokenize_hashed(const char *text, size_t len, ShFeatureKind kind,
							   int size, int version, ShHashBatchFn fn, void *arg);

#endif							/* SIMHASH_TOKENIZE_H */
