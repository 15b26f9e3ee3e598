/*
 * distinct.c
 *		Distinct feature hashes for specification version 2: every feature
 *		hash counts once in the fingerprint, however often it occurs.
 *
 * Raw occurrence counts (version 1) let the most frequent features of a
 * genre dominate long documents, so unrelated long licences or templated
 * pages converge to nearly the same fingerprint. Counting each feature once
 * makes the fingerprint a sketch of the document's feature *set*, which is
 * what near-duplicate detection (shingle Jaccard) compares.
 *
 * The set is an open-addressing table of the 64-bit hashes seen (linear
 * probing, 0 marks an empty slot, the hash 0 itself is tracked apart). It is
 * sized from the document's length so that a typical document never
 * rehashes, doubles at half full, and is bounded by the number of distinct
 * features, itself at most the number of feature occurrences: memory is
 * proportional to the document, and nothing is allocated per feature. New
 * hashes go on to the counting accumulator in the batches they came in.
 */
#include "simhash.h"

/*
 * Initial table size: at least this many slots (more than twice a batch,
 * see sh_distinct_hashes), at most the cap below.
 */
#define DISTINCT_MIN_SLOTS		256
#define DISTINCT_INITIAL_CAP	(1 << 20)

/*
 * A text of len bytes yields at most about len / 2 word features (a letter
 * and a separator each), and words average five letters or more; len / 3
 * slots keep typical prose below half full without a rehash (measured:
 * starting at len / 12 and growing made the default fingerprint 25%
 * slower). Character n-grams, about one per byte, may grow it once or twice.
 */
void
sh_distinct_init(ShDistinct *d, ShCountAccum *acc, size_t doclen)
{
	uint64		want = Max((uint64) DISTINCT_MIN_SLOTS,
						   Min((uint64) doclen / 3, (uint64) DISTINCT_INITIAL_CAP));
	uint64		slots = DISTINCT_MIN_SLOTS;

	while (slots < want)
		slots <<= 1;
	d->slots = (uint64 *) palloc0(slots * sizeof(uint64));
	d->mask = slots - 1;
	d->count = 0;
	d->seen_zero = false;
	d->acc = acc;
}

void
sh_distinct_free(ShDistinct *d)
{
	pfree(d->slots);
	d->slots = NULL;
}

/* Double the table and re-insert every hash. */
static void
distinct_grow(ShDistinct *d)
{
	uint64		oldsize = d->mask + 1;
	uint64		newsize = oldsize * 2;
	uint64	   *old = d->slots;
	uint64	   *slots;

	slots = (uint64 *) MemoryContextAllocExtended(CurrentMemoryContext,
												  newsize * sizeof(uint64),
												  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 i = 0; i < oldsize; i++)
	{
		uint64		h = old[i];
		uint64		j;

		if (h == 0)
			continue;
		for (j = h & (newsize - 1); slots[j] != 0; j = (j + 1) & (newsize - 1))
			;
		slots[j] = h;
	}
	pfree(old);
	d->slots = slots;
	d->mask = newsize - 1;
}

/* How many hashes ahead the probe loop asks for a slot's cache line. */
#define PREFETCH_AHEAD	8

/*
 * ShHashBatchFn for the tokeniser: keep the hashes not seen before and count
 * them. XXH3's low bits are as well mixed as its high ones, so the slot is
 * the hash's low bits.
 *
 * Whether a feature is new is a coin toss to the branch predictor, so the
 * common case has no branch on it: the probe stops at an empty slot or at
 * the hash itself (one test of both, which nearly always stops at the first
 * slot), the hash is stored there either way, and the new-hash list and the
 * count advance by the comparison's result. The slot of the hash a few
 * places ahead is prefetched, so that cache misses overlap. The table grows
 * before a batch could take it past half full, so a probe always finds an
 * empty slot.
 */
void
sh_distinct_hashes(void *arg, const uint64 *hashes, int n)
{
	ShDistinct *d = (ShDistinct *) arg;
	uint64		fresh[SH_DISTINCT_BATCH];
	int			done = 0;

	while (done < n)
	{
		int			batch = Min(n - done, SH_DISTINCT_BATCH);
		const uint64 *h = hashes + done;
		uint64	   *slots;
		uint64		mask;
		uint64		count;
		int			nfresh = 0;

		while (d->count + batch > (d->mask + 1) / 2)
			distinct_grow(d);
		/* in locals: stores to slots[] cannot then be taken to change them */
		slots = d->slots;
		mask = d->mask;
		count = d->count;

		for (int k = 0; k < batch; k++)
		{
			uint64		x = h[k];
			uint64		j = x & mask;
			uint64		cur;
			uint64		is_new;

#if defined(__GNUC__) || defined(__clang__)
			if (k + PREFETCH_AHEAD < batch)
				__builtin_prefetch(&slots[h[k + PREFETCH_AHEAD] & mask]);
#endif
			if (unlikely(x == 0))
			{
				/* 0 marks empty slots: the hash 0 is remembered apart */
				if (!d->seen_zero)
					fresh[nfresh++] = 0;
				d->seen_zero = true;
				continue;
			}
			cur = slots[j];
			while (!((cur == 0) | (cur == x)))
			{
				j = (j + 1) & mask;
				cur = slots[j];
			}
			slots[j] = x;
			is_new = (cur == 0);
			fresh[nfresh] = x;
			nfresh += (int) is_new;
			count += is_new;
		}
		d->count = count;
		if (nfresh > 0)
			sh_count_hashes(d->acc, fresh, nfresh);
		done += batch;
	}
}
