/*
 * pigeonhole_partners.c
 *		The pairs of one pigeonhole key, found in memory: the window function
 *		simhash_key_partners(), for finding every pair within a radius where
 *		the rows are spread over many nodes.
 *
 * Extension 0.4.0 dropped the SQL function (simhash_key_pack with
 * simhash_pack_partners does the same, pigeonhole_pack.c, and is what
 * examples/dedup_pairs.sql uses); the C function stays for the databases of
 * the cluster still at extension 0.3.0, the only ones that can call it, so
 * its messages keep naming it.
 *
 *	  SELECT id, simhash_key_partners(id, fp, block, 3, 4) OVER (PARTITION BY key)
 *	  FROM doc_keys;     -- (block, key) from simhash_blocks(fp, 3, 4)
 *
 * Two fingerprints within r bits share at least one pigeonhole key
 * (pigeonhole.c), so the rows of one key are the candidates of every pair whose
 * first shared key it is. A partition holds the rows of one key value; keys
 * of different blocks can be equal (bits zero in both), and each block's
 * rows are then searched apart. Partitioning by the key alone, a bigint,
 * lets the executor sort the rows on one column (a third faster than on
 * (block, key), whose ties compare the block). Partitioned by the key, the
 * partitions live where the key's rows are (on a Citus table distributed
 * by key, in the shard tasks), and each is searched in memory: all pairs of
 * a small partition are compared; a large one (a key many fingerprints
 * share) merges identical fingerprints and finds the pairs of the distinct
 * ones by multi-index hashing (batch.c), so a skewed key costs about its
 * size, not its square. A pair is reported only in the partition of its
 * first shared key (simhash_first_shared_block), so over all partitions
 * each pair is reported once, and a pair of identical fingerprints (which
 * share every key) in block 0.
 *
 * The radius and the number of blocks are read from the row the partition
 * is first computed for (constants in practice). The result, for every row
 * with a fingerprint: the ids of its partners in
 * the pairs this partition reports, ascending (an empty array when it has
 * none here); NULL for a row without a fingerprint. The self-join on the
 * keys it replaces wrote a row per candidate; this keeps the candidates in
 * memory, which is what lets a key hold a few hundred rows instead of one
 * or two (fewer blocks, fewer keys per fingerprint).
 *
 * Memory: about KEY_BYTES_PER_ROW per row of the partition and 24 bytes
 * per pair, within maintenance_work_mem or an error before allocating.
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "windowapi.h"

#include "grouping/batch.h"
#include "mih/mih.h"
#include "grouping/pigeonhole.h"

/*
 * Per row at most: id, fingerprint 16; partition row, block, first partner
 * and partner count 16; for a large partition the sort keys and their
 * copy, the distinct fingerprints, their first rows and the batch scratch
 * 44; for a key of several blocks the block items, map and fingerprints 20.
 */
#define KEY_BYTES_PER_ROW 100
/* a pair: its edge 8 while collected, both partner ids 16 */
#define KEY_BYTES_PER_PAIR 24
/* partitions of at most this many rows compare every pair */
#define KEY_BRUTE_MAX 64
#define KEY_NO_FP PG_UINT32_MAX

/* per partition, in the partition-local memory of the window object */
typedef struct KeyPartition
{
	bool		computed;
	bool		null_args;		/* NULL radius or blocks: every result NULL */
	uint32	   *first;			/* per row: first partner in partners[], or
								 * KEY_NO_FP for a row without fingerprint */
	uint32	   *count;			/* per row: its partners */
	int64	   *partners;
} KeyPartition;

/* the pairs found so far, for the callbacks */
typedef struct KeySearch
{
	const SimHash *fps;			/* per fingerprint row (index i) */
	const uint32 *order;		/* rows sorted by fingerprint */
	const uint32 *dstart;		/* per distinct fingerprint: its first place in order */
	int			radius;
	int			nblocks;
	int64		block;
	const uint64 *masks;
	Size		limit;
	Size		used;
	const uint32 *map;			/* the rows searched: index -> row, or NULL */
	uint64	   *edges;			/* (a << 32) | b, rows a < b */
	uint64		nedges;
	uint64		maxedges;
} KeySearch;

static void
key_add_edge(KeySearch *ks, uint32 a, uint32 b)
{
	if (ks->nedges == ks->maxedges)
	{
		uint64		more = Max(ks->maxedges * 2, 1024);

		if (ks->used + more * KEY_BYTES_PER_PAIR > ks->limit)
			more = ks->maxedges + 1;
		/* partner offsets are 32-bit: each pair takes two */
		if (ks->nedges >= PG_UINT32_MAX / 2 - 1)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("simhash_key_partners found more than %u pairs in one key",
							PG_UINT32_MAX / 2 - 1),
					 errhint("Cut the fingerprints into more blocks, so that fewer share a key.")));
		if (ks->used + more * KEY_BYTES_PER_PAIR > ks->limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("simhash_key_partners needs more than maintenance_work_mem (%d kB) for the pairs of one key",
							maintenance_work_mem),
					 errdetail("%llu pairs were found in that key before the limit.",
							   (unsigned long long) ks->nedges),
					 errhint("Raise maintenance_work_mem, or cut the fingerprints into more blocks, so that fewer share a key.")));
		ks->edges = ks->edges ? repalloc_huge(ks->edges, more * sizeof(uint64))
			: palloc_extended(more * sizeof(uint64), MCXT_ALLOC_HUGE);
		ks->maxedges = more;
	}
	if (ks->map)
	{
		a = ks->map[a];
		b = ks->map[b];
	}
	ks->edges[ks->nedges++] = a < b ? ((uint64) a << 32) | b : ((uint64) b << 32) | a;
}

/* Is this pair the one its first shared key reports, and within the radius? */
static inline bool
key_reports(const KeySearch *ks, SimHash a, SimHash b)
{
	SimHash		diff = a ^ b;

	return sh_popcount64(diff) <= ks->radius &&
		sh_pigeon_first_shared(diff, ks->radius, ks->nblocks, ks->masks) == ks->block;
}

/* batch_near_pairs' callback: every row pair across two distinct fingerprints */
static void
key_distinct_pair(void *arg, uint32 a, uint32 b, int distance)
{
	KeySearch  *ks = (KeySearch *) arg;

	if (sh_pigeon_first_shared(ks->fps[ks->order[ks->dstart[a]]] ^ ks->fps[ks->order[ks->dstart[b]]],
							   ks->radius, ks->nblocks, ks->masks) != ks->block)
		return;
	for (uint32 i = ks->dstart[a]; i < ks->dstart[a + 1]; i++)
		for (uint32 j = ks->dstart[b]; j < ks->dstart[b + 1]; j++)
			key_add_edge(ks, ks->order[i], ks->order[j]);
}

#define ST_SORT key_sort_items
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

#define ST_SORT key_sort_ids
#define ST_ELEMENT_TYPE int64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * The pairs among n fingerprints fps[] (rows 0 .. n - 1): every pair of a
 * small set; in a large one, identical fingerprints merged and the distinct
 * ones searched by batch_near_pairs.
 */
static void
key_find_pairs(KeySearch *ks, const SimHash *fps, uint32 n)
{
	SimHash    *dfps;
	uint32	   *order;
	uint32	   *dstart;
	uint32		nd = 0;
	BatchStats	stats;

	if (n <= KEY_BRUTE_MAX)
	{
		for (uint32 a = 0; a < n; a++)
			for (uint32 b = a + 1; b < n; b++)
				if (key_reports(ks, fps[a], fps[b]))
					key_add_edge(ks, a, b);
		return;
	}

	/*
	 * The distinct fingerprints (sorted), and the rows grouped by them:
	 * order[] lists the rows of distinct fingerprint d at dstart[d] ..
	 * dstart[d + 1] - 1.
	 */
	order = palloc_extended(sizeof(uint32) * n, MCXT_ALLOC_HUGE);
	{
		uint64	   *keys = palloc_extended(sizeof(uint64) * n, MCXT_ALLOC_HUGE);
		SimHash    *sorted = palloc_extended(sizeof(SimHash) * n, MCXT_ALLOC_HUGE);
		uint32		i;

		memcpy(sorted, fps, sizeof(SimHash) * n);
		key_sort_items(sorted, n);
		/* the distinct fingerprints */
		dfps = palloc_extended(sizeof(SimHash) * n, MCXT_ALLOC_HUGE);
		for (i = 0; i < n; i++)
			if (nd == 0 || sorted[i] != dfps[nd - 1])
				dfps[nd++] = sorted[i];
		pfree(sorted);
		/* each row's distinct index, by binary search, as (index << 32) | row */
		for (i = 0; i < n; i++)
		{
			uint32		lo = 0,
						hi = nd - 1;

			while (lo < hi)
			{
				uint32		mid = (lo + hi) / 2;

				if (dfps[mid] < fps[i])
					lo = mid + 1;
				else
					hi = mid;
			}
			keys[i] = ((uint64) lo << 32) | i;
		}
		key_sort_items(keys, n);
		dstart = palloc_extended(sizeof(uint32) * (nd + 1), MCXT_ALLOC_HUGE);
		for (i = 0; i < n; i++)
		{
			uint32		d = (uint32) (keys[i] >> 32);

			order[i] = (uint32) keys[i];
			if (i == 0 || d != (uint32) (keys[i - 1] >> 32))
				dstart[d] = i;
		}
		dstart[nd] = n;
		pfree(keys);
	}
	ks->fps = fps;
	ks->order = order;
	ks->dstart = dstart;

	/* identical fingerprints share every key: their pairs belong to block 0 */
	if (ks->block == 0)
		for (uint32 d = 0; d < nd; d++)
			for (uint32 i = dstart[d]; i < dstart[d + 1]; i++)
				for (uint32 j = i + 1; j < dstart[d + 1]; j++)
					key_add_edge(ks, order[i], order[j]);
	batch_near_pairs(dfps, nd, ks->radius, key_distinct_pair, ks, NULL, NULL, &stats);
}

/* The rows of one partition that have a fingerprint, in partition order. */
typedef struct KeyRows
{
	int64	   *ids;
	SimHash    *fps;
	uint32	   *rowpos;			/* each row's position in the partition */
	int32	   *blocks;			/* each row's key block */
	uint32		n;
	bool		one_block;		/* every row has the same block */
	int32		first_block;
} KeyRows;

/*
 * Read the partition's rows into rows (in the current memory context),
 * checking that each has an id and a block, that its block is a key of
 * nblocks at radius, and that all share one key (the partition's). A row
 * without a fingerprint keeps KEY_NO_FP in part->first.
 */
static void
key_read_rows(WindowObject winobj, KeyPartition *part, int64 nrows, int32 radius,
			  int32 nblocks, const uint64 *masks, KeyRows *rows)
{
	int64		nkeys = (int64) sh_binomial(nblocks, radius);
	int32		cached_block = -1;	/* the last row's block, and its bits */
	uint64		cached_mask = 0;
	SimHash		key = 0;
	int64		first_id = 0;

	rows->ids = palloc_extended(sizeof(int64) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	rows->fps = palloc_extended(sizeof(SimHash) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	rows->rowpos = palloc_extended(sizeof(uint32) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	rows->blocks = palloc_extended(sizeof(int32) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	rows->n = 0;
	rows->one_block = true;
	rows->first_block = -1;

	for (int64 pos = 0; pos < nrows; pos++)
	{
		bool		idnull,
					fpnull,
					blocknull,
					isout;
		Datum		id,
					fp,
					b;

		fp = WinGetFuncArgInPartition(winobj, 1, (int) pos, WINDOW_SEEK_HEAD, false, &fpnull, &isout);
		part->first[pos] = KEY_NO_FP;
		if (fpnull)
			continue;
		id = WinGetFuncArgInPartition(winobj, 0, (int) pos, WINDOW_SEEK_HEAD, false, &idnull, &isout);
		b = WinGetFuncArgInPartition(winobj, 2, (int) pos, WINDOW_SEEK_HEAD, false, &blocknull, &isout);
		if (idnull || blocknull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the %s of a row given to simhash_key_partners() is NULL",
							idnull ? "id" : "block"),
					 errdetail("The fingerprint of that row is %016llx.",
							   (unsigned long long) DatumGetSimHash(fp)),
					 errhint("Every row with a fingerprint needs a non-NULL id and the block number of its key.")));
		if (DatumGetInt32(b) != cached_block)
		{
			cached_block = DatumGetInt32(b);
			if (cached_block < 0 || cached_block >= nkeys)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("block %d is not a key of %d blocks at radius %d",
								cached_block, nblocks, radius),
						 errdetail("simhash_blocks(fp, %d, %d) numbers its keys from 0 to %lld.",
								   radius, nblocks, (long long) nkeys - 1)));
			cached_mask = sh_pigeon_key_mask(cached_block, radius, nblocks, masks);
		}
		if (rows->n == 0)
		{
			key = DatumGetSimHash(fp) & cached_mask;
			first_id = DatumGetInt64(id);
			rows->first_block = cached_block;
		}
		else if ((DatumGetSimHash(fp) & cached_mask) != key)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_key_partners() found two keys in one partition"),
					 errdetail("Row %lld has key %016llx (block %d), row %lld before it key %016llx (block %d).",
							   (long long) DatumGetInt64(id),
							   (unsigned long long) (DatumGetSimHash(fp) & cached_mask), cached_block,
							   (long long) first_id, (unsigned long long) key, rows->first_block),
					 errhint("Partition by the key that simhash_blocks(fp, %d, %d) gives: OVER (PARTITION BY key).",
							 radius, nblocks)));
		if (cached_block != rows->first_block)
			rows->one_block = false;
		rows->blocks[rows->n] = cached_block;
		rows->ids[rows->n] = DatumGetInt64(id);
		rows->fps[rows->n] = DatumGetSimHash(fp);
		rows->rowpos[rows->n] = (uint32) pos;
		rows->n++;
		if ((pos & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Find the pairs of the rows' key, block by block: keys of different blocks
 * can be equal (bits that are zero in both choices), so one key's partition
 * may hold several blocks, and each block's rows are searched on their own,
 * as its own key.
 */
static void
key_search_blocks(KeySearch *ks, const KeyRows *rows)
{
	uint64	   *items;
	uint32	   *map;
	SimHash    *sub;
	uint32		i = 0;

	if (rows->one_block)
	{
		ks->block = rows->first_block;
		key_find_pairs(ks, rows->fps, rows->n);
		return;
	}
	items = palloc_extended(sizeof(uint64) * rows->n, MCXT_ALLOC_HUGE);
	map = palloc_extended(sizeof(uint32) * rows->n, MCXT_ALLOC_HUGE);
	sub = palloc_extended(sizeof(SimHash) * rows->n, MCXT_ALLOC_HUGE);
	for (uint32 j = 0; j < rows->n; j++)
		items[j] = ((uint64) rows->blocks[j] << 32) | j;
	key_sort_items(items, rows->n);
	while (i < rows->n)
	{
		uint32		nsub = 0;

		ks->block = (int64) (items[i] >> 32);
		for (; i < rows->n && (int64) (items[i] >> 32) == ks->block; i++)
		{
			map[nsub] = (uint32) items[i];
			sub[nsub++] = rows->fps[(uint32) items[i]];
		}
		ks->map = map;
		key_find_pairs(ks, sub, nsub);
	}
	ks->map = NULL;
}

/*
 * Every row's partners from the pairs found, contiguous per row: counts,
 * then offsets, then the ids, each row's sorted.
 */
static void
key_keep_partners(KeyPartition *part, const KeySearch *ks, const KeyRows *rows)
{
	MemoryContext partcxt = GetMemoryChunkContext(part);
	uint32		next = 0;

	for (uint64 e = 0; e < ks->nedges; e++)
	{
		part->count[rows->rowpos[ks->edges[e] >> 32]]++;
		part->count[rows->rowpos[(uint32) ks->edges[e]]]++;
	}
	part->partners = MemoryContextAllocHuge(partcxt, sizeof(int64) * Max(ks->nedges * 2, 1));
	for (uint32 i = 0; i < rows->n; i++)
	{
		part->first[rows->rowpos[i]] = next;
		next += part->count[rows->rowpos[i]];
		part->count[rows->rowpos[i]] = 0;	/* refilled below */
	}
	for (uint64 e = 0; e < ks->nedges; e++)
	{
		uint32		a = rows->rowpos[ks->edges[e] >> 32];
		uint32		b = rows->rowpos[(uint32) ks->edges[e]];

		part->partners[part->first[a] + part->count[a]++] = rows->ids[(uint32) ks->edges[e]];
		part->partners[part->first[b] + part->count[b]++] = rows->ids[ks->edges[e] >> 32];
	}
	for (uint32 i = 0; i < rows->n; i++)
		if (part->count[rows->rowpos[i]] > 1)
			key_sort_ids(part->partners + part->first[rows->rowpos[i]], part->count[rows->rowpos[i]]);
}

/* Read the partition, find its pairs, and keep every row's partners. */
static void
key_compute(WindowObject winobj, KeyPartition *part)
{
	MemoryContext partcxt = GetMemoryChunkContext(part);
	MemoryContext oldcxt;
	int64		nrows = WinGetPartitionRowCount(winobj);
	bool		isnull;
	Datum		d;
	int32		radius;
	int32		nblocks;
	uint64		masks[SIMHASH_BITS];
	KeyRows		rows;
	KeySearch	ks;

	part->computed = true;
	d = WinGetFuncArgCurrent(winobj, 3, &isnull);
	radius = isnull ? 0 : DatumGetInt32(d);
	part->null_args = isnull;
	d = WinGetFuncArgCurrent(winobj, 4, &isnull);
	nblocks = isnull ? 0 : DatumGetInt32(d);
	part->null_args |= isnull;
	if (part->null_args)
		return;
	sh_pigeon_check_radius(radius);
	sh_pigeon_check_blocks(radius, nblocks);
	mih_default_masks(nblocks, masks);

	if (nrows > (int64) PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_key_partners() cannot search %lld rows in one partition",
						(long long) nrows),
				 errdetail("The limit is %d rows.", PG_INT32_MAX)));
	memset(&ks, 0, sizeof(ks));
	ks.limit = (Size) maintenance_work_mem * 1024;
	ks.used = (Size) nrows * KEY_BYTES_PER_ROW;
	if (ks.used > ks.limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_key_partners needs about %zu kB of memory for the %lld rows of one key, more than maintenance_work_mem (%d kB)",
						ks.used / 1024, (long long) nrows, maintenance_work_mem),
				 errhint("Raise maintenance_work_mem, or cut the fingerprints into more blocks, so that fewer share a key.")));

	part->first = MemoryContextAllocHuge(partcxt, sizeof(uint32) * Max(nrows, 1));
	part->count = MemoryContextAllocHuge(partcxt, sizeof(uint32) * Max(nrows, 1));
	memset(part->count, 0, sizeof(uint32) * Max(nrows, 1));
	/* everything in the partition's context, freed when the partition ends */
	oldcxt = MemoryContextSwitchTo(partcxt);
	key_read_rows(winobj, part, nrows, radius, nblocks, masks, &rows);
	ks.radius = radius;
	ks.nblocks = nblocks;
	ks.masks = masks;
	key_search_blocks(&ks, &rows);
	key_keep_partners(part, &ks, &rows);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * simhash_key_partners(id bigint, fp simhash, block int, radius int,
 * blocks int) OVER (PARTITION BY key): the ids this row is paired
 * with in the pairs its partition's key reports.
 */
PG_FUNCTION_INFO_V1(simhash_key_partners);
Datum
simhash_key_partners(PG_FUNCTION_ARGS)
{
	WindowObject winobj = PG_WINDOW_OBJECT();
	KeyPartition *part;
	int64		pos;
	Datum	   *elems;
	uint32		n;

	part = (KeyPartition *) WinGetPartitionLocalMemory(winobj, sizeof(KeyPartition));
	if (!part->computed)
		key_compute(winobj, part);
	if (part->null_args)
		PG_RETURN_NULL();
	pos = WinGetCurrentPosition(winobj);
	if (part->first[pos] == KEY_NO_FP)
		PG_RETURN_NULL();
	n = part->count[pos];
	elems = palloc(sizeof(Datum) * Max(n, 1));
	for (uint32 i = 0; i < n; i++)
		elems[i] = Int64GetDatum(part->partners[part->first[pos] + i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, (int) n, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
