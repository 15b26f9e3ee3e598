/*
 * mih_cache_screen.c
 *		A backend's screens of runs: each table's entries bucketed by a
 *		hash of their block value, with 32 bits of the rest of each
 *		fingerprint, so that a radius search can tell from memory that a
 *		run holds nothing within its radius and skip the run unread.
 *
 * Inserts between VACUUMs leave, beside the large run, a few runs of 4,096
 * to 131,072 entries (size-tiered merges, mih_merge_policy.c), and every insert
 * under the near-duplicate constraint searches each of them: four probes a
 * run at radius 3, each a place or position lookup and, where the value is
 * present (39% of probes in a run of 32,768 entries), a leaf read. Over 1M
 * rows with runs of 32,768 and 4,096 entries and a pending list of 3,136,
 * the small runs and the pending list made 40% of a constraint check.
 * Almost every check finds nothing there; this answers that from memory.
 * The large run gets one too when the cache has room for it (about 17 MB a
 * million entries with 4 blocks: a larger simhash.index_cache_size).
 *
 * For each table the run serves, a screen lists every entry with a NULL
 * fingerprint left out (they match no ball), dead ones kept: bucket b holds
 * the entries whose block value hashes to b, each as the low 32 bits of
 * its remainder (the bits outside the table's block, gathered as a compact
 * leaf stores them). A probe v of table j can find only entries of bucket
 * hash(v), and an entry within r of q differs from q in at most r bits of
 * any subset of its bits, so when no entry of any probe's bucket is within
 * the probe's limit on those 32 bits, the run's search would report
 * nothing: the run is skipped. Otherwise the run is searched as before; a
 * bucket's entries of other values only make that happen more often.
 *
 * A run never changes but for dead marks (src/mih/README, "Who changes
 * what"), which only take matches away, so a screen stays true for as long
 * as the run is listed (its summary goes with it). Built from one pass over
 * one of the run's tables once this backend's searches of the run with one
 * ball and few probes would have read about as many leaves as that pass
 * (at least MIH_SCREEN_BUILD_AFTER searches), and only while the cache has
 * room without dropping anything: about 6 bytes per entry and table (two
 * entries a bucket, up to 2^16 buckets), 3 MB for a run of 131,072 entries
 * with 4 blocks. The screen is built in the query's memory and attached only
 * once it is whole, so an error or cancel midway leaves none
 * (simhash.test_fault = screen_midway).
 */
#include "mih.h"
#include "mih_cache.h"
#include "test_fault.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#define MIH_SCREEN_BUILD_AFTER	8	/* searches of a run before its screen */

struct MihRunScreen
{
	int			bits;			/* 2^bits buckets per table */
	uint32		tables;			/* the tables screened: those the run serves */
	uint32	   *start[MIH_MAX_BLOCKS];	/* bucket b: [start[b], start[b + 1]) */
	uint32	   *part[MIH_MAX_BLOCKS];	/* low 32 bits of each remainder */
};

static inline uint32
screen_bucket(uint64 v, int bits)
{
	return (uint32) ((v * UINT64CONST(0x9E3779B97F4A7C15)) >> (64 - bits));
}

/*
 * Buckets for n entries: about two a bucket, a bucket's parts sharing a
 * line; at most 2^16, as many as a 16-bit block has values (beyond that a
 * bucket holds about one value's entries).
 */
static int
screen_bits(int64 n)
{
	int			bits = 1;

	while (bits < 16 && ((int64) 2 << bits) < n)
		bits++;
	return bits;
}

/* The bytes of a screen of n entries and ntables tables. */
static Size
screen_size(int64 n, int ntables)
{
	return MAXALIGN(sizeof(MihRunScreen)) +
		ntables * (MAXALIGN((((Size) 1 << screen_bits(n)) + 1) * sizeof(uint32)) +
				   MAXALIGN(Max(n, 1) * sizeof(uint32)));
}

/* Collecting the run's fingerprints from one table's leaves */
typedef struct ScreenCollect
{
	uint64	   *fps;
	int64		n;
	int64		cap;
} ScreenCollect;

static void
collect_leaf(void *arg, const MihEntry *entries, int n)
{
	ScreenCollect *sc = (ScreenCollect *) arg;

	for (int i = 0; i < n; i++)
	{
		if (mih_entry_is_null(&entries[i]))
			continue;
		if (sc->n == sc->cap)
			return;				/* more than the header says: not built */
		sc->fps[sc->n++] = mih_entry_fp(&entries[i]);
	}
	if (simhash_test_fault == SH_FAULT_SCREEN_MIDWAY && sc->n >= sc->cap / 2)
		elog(ERROR, "simhash test fault: a run's screen stopped halfway");
}

/*
 * Build the screen of run s for the tables it serves, from one pass over
 * the first of them; attach it when whole and when the cache has room.
 */
static void
build_screen(Relation index, MihRunSummary *s, uint32 tables, int nblocks, const uint64 *masks)
{
	ScreenCollect sc;
	int			t = -1;
	int			bits;
	int			ntables = 0;
	Size		bytes;
	char	   *chunk;
	MihRunScreen *scr;
	uint32	   *fill;
	int64		total;

	s->screen_tried = true;
	for (int j = 0; j < nblocks; j++)
		if (tables & (1 << j))
		{
			if (t < 0)
				t = j;
			ntables++;
		}
	if (t < 0)
		return;
	memcpy(s->masks, masks, sizeof(s->masks));
	sc.cap = s->hdr.nentries;
	sc.n = 0;
	sc.fps = palloc(Max(sc.cap, 1) * sizeof(uint64));
	total = mih_cache_walk_table(index, s, t, collect_leaf, &sc);
	if (total != s->hdr.nentries)
	{
		pfree(sc.fps);
		return;					/* not the run the header describes */
	}
	bits = screen_bits(sc.n);
	bytes = screen_size(sc.n, ntables);
	/* built in the query's memory ... */
	fill = palloc(((Size) 1 << bits) * sizeof(uint32));
	chunk = palloc0(bytes);
	scr = (MihRunScreen *) chunk;
	scr->bits = bits;
	scr->tables = tables;
	chunk += MAXALIGN(sizeof(MihRunScreen));
	for (int j = 0; j < nblocks; j++)
	{
		const MihBitMap *bm;
		uint32		nb = (uint32) 1 << bits;

		if (!(tables & (1 << j)))
			continue;
		scr->start[j] = (uint32 *) chunk;
		chunk += MAXALIGN((nb + 1) * sizeof(uint32));
		scr->part[j] = (uint32 *) chunk;
		chunk += MAXALIGN(Max(sc.n, 1) * sizeof(uint32));
		/* a counting sort by bucket */
		for (int64 i = 0; i < sc.n; i++)
			scr->start[j][screen_bucket(sc.fps[i] & masks[j], bits) + 1]++;
		for (uint32 b = 0; b < nb; b++)
		{
			scr->start[j][b + 1] += scr->start[j][b];
			fill[b] = scr->start[j][b];
		}
		bm = mih_bitmap(masks[j]);
		for (int64 i = 0; i < sc.n; i++)
			scr->part[j][fill[screen_bucket(sc.fps[i] & masks[j], bits)]++] =
				(uint32) mih_bits_gather(bm, sc.fps[i]);
	}
	pfree(fill);
	pfree(sc.fps);

	/* ... and copied into the cache only once whole, if it has room */
	chunk = MemoryContextAllocExtended(mih_cache_context(), bytes, MCXT_ALLOC_NO_OOM);
	if (chunk == NULL || !mih_cache_reserve(bytes))
	{
		if (chunk)
			pfree(chunk);
		pfree(scr);
		return;
	}
	memcpy(chunk, scr, bytes);
	for (int j = 0; j < nblocks; j++)
		if (tables & (1 << j))
		{
			((MihRunScreen *) chunk)->start[j] =
				(uint32 *) (chunk + ((char *) scr->start[j] - (char *) scr));
			((MihRunScreen *) chunk)->part[j] =
				(uint32 *) (chunk + ((char *) scr->part[j] - (char *) scr));
		}
	pfree(scr);
	s->bytes += bytes;
	s->screen = (MihRunScreen *) chunk;
}

/*
 * Does run s surely hold no entry a single-ball search of (q, r) would
 * report? The search probes table j (of those the run serves, tables) with
 * values probes[j][0 .. nprobes[j]); qrem[j] is q's remainder in table j.
 * False when it may hold one, or when the run has no screen yet. With an
 * index (the caller has the summary pinned) it counts the search toward
 * building one.
 */
bool
mih_cache_screen_rules_out(Relation index, MihRunSummary *s, uint32 tables, int nblocks,
						   const uint64 *masks, uint64 *const *probes, const int *nprobes,
						   SimHash q, const uint64 *qrem, int r)
{
	const MihRunScreen *scr = s->screen;

	if (scr == NULL)
	{
		int64		leaves = (s->hdr.nentries + MIH_ENTRIES_PER_PAGE - 1) / MIH_ENTRIES_PER_PAGE;
		Size		size;

		/*
		 * Built once the searches it would have spared (four leaves each at
		 * radius 3) cost about the one pass over a table that builds it, and
		 * when it would fit (the sizes build_screen allocates)
		 */
		if (index == NULL || s->screen_tried ||
			++s->screen_scans < Max(MIH_SCREEN_BUILD_AFTER, leaves / 4))
			return false;
		size = screen_size(s->hdr.nentries, pg_popcount32(tables));
		/* (one palloc each for the screen and the run's fingerprints) */
		if (!AllocSizeIsValid(size) ||
			!AllocSizeIsValid((Size) s->hdr.nentries * sizeof(uint64)) ||
			!mih_cache_has_room(size))
		{
			s->screen_tried = true;
			return false;
		}
		build_screen(index, s, tables, nblocks, masks);
		scr = s->screen;
		if (scr == NULL)
			return false;
	}
	if ((tables & ~scr->tables) != 0)
		return false;			/* a table it was not built for */
	for (int j = 0; j < nblocks; j++)
	{
		uint32		qpart = (uint32) qrem[j];

		if (!(tables & (1 << j)))
			continue;
		for (int p = 0; p < nprobes[j]; p++)
		{
			uint64		v = probes[j][p];
			int			limit = r - sh_popcount64((v ^ q) & masks[j]);
			uint32		b = screen_bucket(v, scr->bits);
			const uint32 *part = scr->part[j];

			for (uint32 k = scr->start[j][b]; k < scr->start[j][b + 1]; k++)
				if (sh_popcount64(part[k] ^ qpart) <= limit)
					return false;
		}
	}
	return true;
}

void
mih_cache_free_screen(MihRunSummary *s)
{
	if (s->screen)
	{
		pfree(s->screen);
		s->screen = NULL;
	}
}
