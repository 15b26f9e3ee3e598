/*
 * simhash.h
 *		Declarations shared by the simhash extension's C modules.
 */
#ifndef SIMHASH_H
#define SIMHASH_H

#include "postgres.h"
#include "fmgr.h"
#include "nodes/nodes.h"

#include "compat.h"
#include "fingerprint/tokenize.h"

/* A fingerprint is a uint64 carried in a pass-by-value int8-sized Datum. */
typedef uint64 SimHash;

#define DatumGetSimHash(d)		((SimHash) DatumGetInt64(d))
#define SimHashGetDatum(v)		Int64GetDatum((int64) (v))
#define PG_GETARG_SIMHASH(n)	DatumGetSimHash(PG_GETARG_DATUM(n))
#define PG_RETURN_SIMHASH(v)	return SimHashGetDatum(v)

#define SIMHASH_BITS 64

/*
 * The radius recommended with the default fingerprint (doc/reference.md, "Choosing
 * the features and the radius"); the planner assumes it where a radius is
 * not known when planning (a generic plan's parameter).
 */
#define SH_RECOMMENDED_RADIUS 8

/*
 * Population count. PostgreSQL's pg_popcount64 is a call through a function
 * pointer on x86-64 (the server is built for CPUs without POPCNT), which the
 * index's inner loops pay for every entry: a kNN query at 10M rows counted
 * 1.25M times through it. Here the instruction is inlined when the CPU has it
 * (checked once, in _PG_init), as PostgreSQL checks it, with cpuid.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
extern bool sh_cpu_has_popcnt;

static inline int
sh_popcount64(uint64 x)
{
	if (likely(sh_cpu_has_popcnt))
	{
		uint64		r;

		__asm__("popcntq %1, %0" : "=r"(r) : "rm"(x) : "cc");
		return (int) r;
	}
	return pg_popcount64(x);
}
#else
#define sh_popcount64(x) pg_popcount64(x)
#endif

/* Hamming distance between two fingerprints: 0..64. */
static inline int
simhash_hamming(SimHash a, SimHash b)
{
	return sh_popcount64(a ^ b);
}

/* distance.c */
extern int32 simhash_radius_from_bound(int64 bound, bool strict_less);

/* ---- feature hashing and accumulation (accum.c) ---- */

/* XXH3-64 with seed 0 (feature_hash.h) */
extern uint64 sh_feature_hash(const char *feature, size_t len);

/*
 * Unit-weight accumulator for text features: counts, for each bit position,
 * how many features have that hash bit set. Exact (integer) arithmetic.
 */
typedef struct ShCountAccum
{
	uint64		pending[16];	/* hashes not yet added, see accum.c */
	int			npending;
	uint64		ones,			/* carry-save planes: bit i of "twos" */
				twos,			/* is worth 2 at position i, and so on */
				fours,
				eights;
	uint64		lanes[8];		/* byte counters of sixteens, 8 per word */
	int			inlanes;		/* additions to lanes since the last flush */
	int64		totals[SIMHASH_BITS];
	int64		nfeatures;
} ShCountAccum;

extern void sh_count_init(ShCountAccum *acc);
extern void sh_count_add(ShCountAccum *acc, uint64 hash);
extern void sh_count_hashes(void *arg, const uint64 *hashes, int n);
extern bool sh_count_result(ShCountAccum *acc, SimHash *result);

/*
 * Distinct feature hashes (distinct.c, specification version 2): an
 * ShHashBatchFn that passes each hash on to a count accumulator only the
 * first time it is seen.
 */
#define SH_DISTINCT_BATCH 64

typedef struct ShDistinct
{
	uint64	   *slots;			/* open addressing; 0 = empty */
	uint64		mask;			/* slots - 1, a power of two minus one */
	uint64		count;			/* non-zero hashes held */
	bool		seen_zero;		/* the hash 0, which cannot be a slot value */
	ShCountAccum *acc;			/* where new hashes are counted */
} ShDistinct;

extern void sh_distinct_init(ShDistinct *d, ShCountAccum *acc, size_t doclen);
extern void sh_distinct_hashes(void *arg, const uint64 *hashes, int n);
extern void sh_distinct_free(ShDistinct *d);

/* Weighted accumulator: signed sums of weights per bit position. */
typedef struct ShWeightAccum
{
	float8		sums[SIMHASH_BITS];
	float8		total;			/* sum of all weights, to detect overflow */
	int64		npositive;		/* features with a weight > 0 */
} ShWeightAccum;

extern void sh_weight_init(ShWeightAccum *acc);
extern void sh_weight_add(ShWeightAccum *acc, uint64 hash, float8 weight);
extern void sh_weight_check(float8 weight);
extern bool sh_weight_result(const ShWeightAccum *acc, SimHash *result);

/* ---- text helpers (fingerprint.c) ---- */
extern char *sh_text_to_utf8(text *t, size_t *len);
extern char *sh_quote_prefix(const char *s);
/* fingerprint.c: the optional (features, size) arguments from argno on */
extern void sh_parse_feature_args(FunctionCallInfo fcinfo, int argno, ShFeatureKind *kind,
								  int *size);
extern ShFeatureKind sh_parse_feature_mode(text *mode);
extern int	sh_default_feature_size(ShFeatureKind kind);
extern int	sh_check_feature_size(ShFeatureKind kind, int size);

/* jaccard.c: a document's distinct feature hashes, ascending, and the
 * Jaccard similarity of two such sets (false when both are empty) */
extern uint64 sh_doc_feature_set(text *doc, ShFeatureKind kind, int size, uint64 **hashes);
extern bool sh_jaccard_of_sets(const uint64 *a, uint64 na, const uint64 *b, uint64 nb,
							   float8 *result);

/* module.c: configuration parameters */
extern int	simhash_progress_interval;

#endif							/* SIMHASH_H */
