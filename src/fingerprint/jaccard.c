/*
 * jaccard.c
 *		simhash_jaccard(a, b [, features [, size]]): the exact Jaccard
 *		similarity of two documents' feature sets, the verification step
 *		after a fingerprint search; simhash_containment(a, b [, ...]): the
 *		share of the smaller set found in the larger, for copies cut short.
 *
 * A fingerprint estimates how alike two documents are; this computes it.
 * The features are those fingerprint specification version 2 hashes (the
 * same tokeniser, normalisation, features and size as simhash(text)), taken
 * as a set of their 64-bit feature hashes, as version 2 counts them: each
 * distinct hash once. The result is |A and B| / |A or B|, from 0 to 1; NULL
 * when neither document has a feature. Two feature texts sharing a 64-bit
 * hash count as one, as they do in the fingerprint (for documents of a
 * million features, about one pair in 10^7 documents).
 *
 * Cost: both documents are tokenised (as two simhash() calls cost), their
 * hashes radix-sorted (linear) and merged: time linear in the documents,
 * 16 bytes of memory per feature occurrence of the larger one, freed at
 * once.
 */
#include "simhash.h"

#include "utils/builtins.h"
#include "utils/memutils.h"

#include "radix.h"

static inline uint64
jaccard_key(uint64 h)
{
	return h;
}

RADIX_SORT_DEFINE(jaccard_sort, uint64, jaccard_key)

/* A document's feature hashes, as the tokeniser emits them. */
typedef struct HashList
{
	uint64	   *h;
	uint64		n;
	uint64		cap;
} HashList;

static void
collect_hashes(void *arg, const uint64 *hashes, int n)
{
	HashList   *l = (HashList *) arg;

	if (l->n + n > l->cap)
	{
		l->cap = Max(l->cap * 2, l->n + n);
		l->h = repalloc_huge(l->h, l->cap * sizeof(uint64));
	}
	memcpy(l->h + l->n, hashes, n * sizeof(uint64));
	l->n += n;
}

/*
 * The distinct feature hashes of a document, ascending, in *hashes (palloc'd,
 * NULL when there are none); returns how many. The verified grouping
 * (window_verified.c) keeps these sets to compare rows as simhash_jaccard does.
 */
uint64
sh_doc_feature_set(text *doc, ShFeatureKind kind, int size, uint64 **hashes)
{
	size_t		len;
	const char *utf8 = sh_text_to_utf8(doc, &len);
	HashList	l;
	uint64	   *tmp;
	uint64		n = 0;

	l.cap = 256;
	l.n = 0;
	l.h = palloc(l.cap * sizeof(uint64));
	sh_tokenize_hashed(utf8, len, kind, size, SH_SPEC_V2, collect_hashes, &l);
	if (l.n == 0)
	{
		pfree(l.h);
		*hashes = NULL;
		return 0;
	}
	tmp = palloc_extended(l.n * sizeof(uint64), MCXT_ALLOC_HUGE);
	jaccard_sort(l.h, tmp, l.n, 0);
	pfree(tmp);
	for (uint64 i = 0; i < l.n; i++)
		if (n == 0 || l.h[i] != l.h[n - 1])
			l.h[n++] = l.h[i];
	*hashes = l.h;
	return n;
}

/* How many hashes two ascending sets of distinct hashes share. */
static uint64
sets_common(const uint64 *a, uint64 na, const uint64 *b, uint64 nb)
{
	uint64		i = 0;
	uint64		j = 0;
	uint64		common = 0;

	while (i < na && j < nb)
	{
		if (a[i] < b[j])
			i++;
		else if (a[i] > b[j])
			j++;
		else
		{
			common++;
			i++;
			j++;
		}
	}
	return common;
}

/*
 * The Jaccard similarity of two ascending sets of distinct hashes; false
 * (SQL NULL) when both are empty.
 */
bool
sh_jaccard_of_sets(const uint64 *a, uint64 na, const uint64 *b, uint64 nb, float8 *result)
{
	uint64		common;

	if (na == 0 && nb == 0)
		return false;			/* no features: nothing to compare */
	common = sets_common(a, na, b, nb);
	*result = (float8) common / (float8) (na + nb - common);
	return true;
}

/*
 * The containment of the smaller set in the larger, |A and B| / min(|A|,
 * |B|); false (SQL NULL) when both are empty, 0 when only one is (an empty
 * document is no copy of anything, as for the Jaccard similarity).
 */
static bool
containment_of_sets(const uint64 *a, uint64 na, const uint64 *b, uint64 nb, float8 *result)
{
	if (na == 0 && nb == 0)
		return false;
	if (na == 0 || nb == 0)
		*result = 0.0;
	else
		*result = (float8) sets_common(a, na, b, nb) / (float8) Min(na, nb);
	return true;
}

typedef bool (*SetMeasure) (const uint64 *a, uint64 na, const uint64 *b, uint64 nb, float8 *result);

/* (a, b [, features [, size]]): both documents' feature sets, measured. */
static Datum
measure_texts(FunctionCallInfo fcinfo, SetMeasure measure)
{
	ShFeatureKind kind;
	int			size;
	uint64	   *a;
	uint64	   *b;
	uint64		na;
	uint64		nb;
	float8		result;
	bool		found;

	sh_parse_feature_args(fcinfo, 2, &kind, &size);
	na = sh_doc_feature_set(PG_GETARG_TEXT_PP(0), kind, size, &a);
	nb = sh_doc_feature_set(PG_GETARG_TEXT_PP(1), kind, size, &b);
	found = measure(a, na, b, nb, &result);
	if (a)
		pfree(a);
	if (b)
		pfree(b);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

PG_FUNCTION_INFO_V1(simhash_jaccard);
Datum
simhash_jaccard(PG_FUNCTION_ARGS)
{
	return measure_texts(fcinfo, sh_jaccard_of_sets);
}

PG_FUNCTION_INFO_V1(simhash_containment);
Datum
simhash_containment(PG_FUNCTION_ARGS)
{
	return measure_texts(fcinfo, containment_of_sets);
}
