/*
 * pigeonhole_pack.c
 *		Pigeonhole keys moved in bulk: the aggregate simhash_key_pack() packs
 *		the keys of a group of rows into one bytea per target, and
 *		simhash_pack_partners() finds, among the keys packed for one target,
 *		every pair whose first shared key is there.
 *
 *	  -- rows grouped by a column the table is spread by (one pack per target)
 *	  SELECT t.n - 1 AS target, t.pack
 *	  FROM (SELECT simhash_key_pack(id, fp, 3, 4, 256) AS packs FROM reps GROUP BY bucket) s,
 *	       unnest(s.packs) WITH ORDINALITY t(pack, n) WHERE t.pack IS NOT NULL;
 *	  -- one target's packs together: its rows in pairs, with their partners
 *	  SELECT p.* FROM (SELECT array_agg(pack) AS packs FROM packs GROUP BY target) s,
 *	       simhash_pack_partners(s.packs, 3, 4) p;
 *
 * Why: examples/dedup_pairs.sql on Citus spread a row per (key, row) by key
 * and searched each key's rows with a window function; at 10M rows that is
 * 40M rows written, sent between nodes, sorted and read back by the
 * executor, which cost far more than comparing them. Here a key is 18 bytes
 * inside a pack, and a node handles a few thousand packs instead of
 * millions of rows: every key of a fingerprint goes to the target its
 * (block, key) hashes to, so all rows sharing a key meet in one target's
 * packs, whichever group packed them.
 *
 * A pack: a header (magic and format version, radius, blocks, count; 12
 * bytes) and count keys of (id int8, fingerprint, block number int2), 18
 * bytes each, all in network byte order. Packs live only inside one job (a
 * transaction); the target a key goes to is part of the format, so a change
 * to it changes the version, and packs of another version are refused.
 *
 * The pairs: the keys of one target sorted by (block, key, fingerprint);
 * the rows of each (block, key) are searched as simhash_key_partners
 * searches a partition (pigeonhole_partners.c): every pair of a small group, the
 * distinct fingerprints of a large one by batch_near_pairs; a pair is
 * reported only in its first shared key, so over all targets each pair once.
 * The result: one row per id in a pair here, with its fingerprint and its
 * partners (ascending).
 *
 * Memory: the keys being packed (18 bytes each: one group's under a sorted
 * aggregate, every group's under a hashed one), and one target's keys
 * (KEY_PACK_BYTES_PER_KEY each) and pairs (KEY_PACK_BYTES_PER_PAIR each),
 * within maintenance_work_mem, or an error before allocating more.
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "grouping/batch.h"
#include "binomial.h"
#include "mih/mih.h"
#include "grouping/pigeonhole.h"

#define KEY_PACK_MAGIC		0x53484B31	/* "SHK1": format version 1 */
#define KEY_PACK_HEADER		12
#define KEY_PACK_ENTRY		18
#define KEY_PACK_MAX_TARGETS 1048576
/* a key while searched: entry 32, batch scratch 16, distinct fp 8, start 4 */
#define KEY_PACK_BYTES_PER_KEY 64
/* a pair: its edge 8, its two half-edges 48 */
#define KEY_PACK_BYTES_PER_PAIR 56
/* groups of at most this many keys compare every pair */
#define KEY_PACK_BRUTE_MAX 64

/* the aggregate's state: per target, the keys packed so far */
typedef struct KeyPackState
{
	int32		radius;
	int32		blocks;
	int32		targets;
	int32		nkeys;
	uint64	   *keymask;		/* per key number: its bits */
	char	  **buf;			/* per target: entries, or NULL */
	uint32	   *len;			/* per target: bytes used */
	uint32	   *cap;			/* per target: bytes allocated */
	Size		limit;
} KeyPackState;

/*
 * The target of key number `number` with value `key`: a 64-bit mix
 * (MurmurHash3's finaliser) of both, modulo the number of targets. Part of
 * the pack format (see the header comment).
 */
static inline uint32
key_pack_target(uint64 key, int32 number, int32 targets)
{
	uint64		h = key ^ ((uint64) (number + 1) * UINT64CONST(0x9E3779B97F4A7C15));

	h ^= h >> 33;
	h *= UINT64CONST(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64CONST(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return (uint32) (h % (uint64) targets);
}

/* The aggregate's constant arguments: present, in range, and unchanged. */
static void
key_pack_args(FunctionCallInfo fcinfo, int32 *radius, int32 *blocks, int32 *targets)
{
	for (int i = 3; i <= 5; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the %s given to simhash_key_pack() is NULL",
							i == 3 ? "radius" : i == 4 ? "number of blocks" : "number of targets")));
	*radius = PG_GETARG_INT32(3);
	*blocks = PG_GETARG_INT32(4);
	*targets = PG_GETARG_INT32(5);
}

/*
 * Before `more` bytes are added to a pack: the aggregate's memory within
 * maintenance_work_mem. Counted over the whole aggregate context, not
 * this group's state: a sorted aggregate packs one group at a time (the
 * context is reset between groups), but a hashed one keeps every group's
 * state until the end, however small each group is.
 */
static void
key_pack_check_memory(const KeyPackState *st, MemoryContext aggcxt, Size more)
{
	Size		allocated = MemoryContextMemAllocated(aggcxt, true);

	if (allocated + more > st->limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_key_pack() needs more than maintenance_work_mem (%d kB) for the keys it is packing",
						maintenance_work_mem),
				 errdetail("%zu kB were in use before the limit.", allocated / 1024),
				 errhint("Group the rows into more, smaller groups and aggregate them sorted (a hashed aggregate keeps every group in memory: SET enable_hashagg = off), or raise maintenance_work_mem.")));
}

PG_FUNCTION_INFO_V1(simhash_key_pack_transfn);
Datum
simhash_key_pack_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	KeyPackState *st;
	int32		radius,
				blocks,
				targets;
	SimHash		fp;
	int64		id;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_key_pack_transfn() can only be called as an aggregate's transition function")));
	key_pack_args(fcinfo, &radius, &blocks, &targets);

	if (PG_ARGISNULL(0))
	{
		uint64		masks[SIMHASH_BITS];
		double		nkeys;

		sh_pigeon_check_radius(radius);
		sh_pigeon_check_blocks(radius, blocks);
		/* at most 10,000 keys (sh_pigeon_check_blocks): 16-bit block numbers */
		nkeys = sh_binomial(blocks, radius);
		if (targets < 1 || targets > KEY_PACK_MAX_TARGETS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("number of targets %d is out of range for simhash_key_pack()", targets),
					 errdetail("It must be between 1 and %d.", KEY_PACK_MAX_TARGETS)));
		st = MemoryContextAllocZero(aggcxt, sizeof(KeyPackState));
		st->radius = radius;
		st->blocks = blocks;
		st->targets = targets;
		st->nkeys = (int32) nkeys;
		st->keymask = MemoryContextAlloc(aggcxt, sizeof(uint64) * st->nkeys);
		mih_default_masks(blocks, masks);
		for (int32 k = 0; k < st->nkeys; k++)
			st->keymask[k] = sh_pigeon_key_mask(k, radius, blocks, masks);
		st->buf = MemoryContextAllocZero(aggcxt, sizeof(char *) * targets);
		st->len = MemoryContextAllocZero(aggcxt, sizeof(uint32) * targets);
		st->cap = MemoryContextAllocZero(aggcxt, sizeof(uint32) * targets);
		st->limit = (Size) maintenance_work_mem * 1024;
	}
	else
	{
		st = (KeyPackState *) PG_GETARG_POINTER(0);
		if (radius != st->radius || blocks != st->blocks || targets != st->targets)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_key_pack() was given radius %d, %d blocks and %d targets after radius %d, %d blocks and %d targets in the same group",
							radius, blocks, targets, st->radius, st->blocks, st->targets),
					 errhint("The radius, blocks and targets must be the same for every row.")));
	}

	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(st);	/* no fingerprint: no keys */
	fp = PG_GETARG_SIMHASH(2);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the id of a row given to simhash_key_pack() is NULL"),
				 errdetail("The fingerprint of that row is %016llx.", (unsigned long long) fp),
				 errhint("Every row with a fingerprint needs a non-NULL id.")));
	id = PG_GETARG_INT64(1);

	for (int32 k = 0; k < st->nkeys; k++)
	{
		uint64		key = fp & st->keymask[k];
		uint32		t = key_pack_target(key, k, st->targets);
		char	   *p;
		uint64		nid = pg_hton64((uint64) id);
		uint64		nfp = pg_hton64(fp);
		uint16		nblock = pg_hton16((uint16) k);

		if (st->len[t] + KEY_PACK_ENTRY > st->cap[t])
		{
			uint32		more = st->cap[t] ? st->cap[t] * 2 : KEY_PACK_ENTRY * 32;

			if ((uint64) more > MaxAllocSize - KEY_PACK_HEADER - VARHDRSZ)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("simhash_key_pack() cannot pack more than %zu bytes for one target",
								(Size) (MaxAllocSize - KEY_PACK_HEADER - VARHDRSZ)),
						 errhint("Use more targets, or group the rows into more groups.")));
			key_pack_check_memory(st, aggcxt, more - st->cap[t]);
			st->buf[t] = st->buf[t] ? repalloc(st->buf[t], more)
				: MemoryContextAlloc(aggcxt, more);
			st->cap[t] = more;
		}
		p = st->buf[t] + st->len[t];
		memcpy(p, &nid, 8);
		memcpy(p + 8, &nfp, 8);
		memcpy(p + 16, &nblock, 2);
		st->len[t] += KEY_PACK_ENTRY;
	}
	PG_RETURN_POINTER(st);
}

/* simhash_key_pack's final function: the packs, one per target (NULL: none) */
PG_FUNCTION_INFO_V1(simhash_key_pack_finalfn);
Datum
simhash_key_pack_finalfn(PG_FUNCTION_ARGS)
{
	KeyPackState *st;
	Datum	   *elems;
	bool	   *nulls;
	int			dims[1];
	int			lbs[1] = {1};

	if (!AggCheckCallContext(fcinfo, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_key_pack_finalfn() can only be called as an aggregate's final function")));
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	st = (KeyPackState *) PG_GETARG_POINTER(0);
	elems = palloc(sizeof(Datum) * st->targets);
	nulls = palloc(sizeof(bool) * st->targets);
	for (int32 t = 0; t < st->targets; t++)
	{
		bytea	   *pack;
		char	   *p;
		uint32		magic = pg_hton32(KEY_PACK_MAGIC);
		uint16		r = pg_hton16((uint16) st->radius);
		uint16		m = pg_hton16((uint16) st->blocks);
		uint32		count = pg_hton32(st->len[t] / KEY_PACK_ENTRY);

		nulls[t] = st->len[t] == 0;
		if (nulls[t])
		{
			elems[t] = (Datum) 0;
			continue;
		}
		pack = palloc(VARHDRSZ + KEY_PACK_HEADER + st->len[t]);
		SET_VARSIZE(pack, VARHDRSZ + KEY_PACK_HEADER + st->len[t]);
		p = VARDATA(pack);
		memcpy(p, &magic, 4);
		memcpy(p + 4, &r, 2);
		memcpy(p + 6, &m, 2);
		memcpy(p + 8, &count, 4);
		memcpy(p + KEY_PACK_HEADER, st->buf[t], st->len[t]);
		elems[t] = PointerGetDatum(pack);
	}
	dims[0] = st->targets;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elems, nulls, 1, dims, lbs,
											 BYTEAOID, -1, false, TYPALIGN_INT));
}

/* one key of a target, while searched */
typedef struct KeyPackEntry
{
	uint64		key;			/* fp & the block's mask */
	SimHash		fp;
	int64		id;
	int32		block;
} KeyPackEntry;

/* a partner of a row, for the output */
typedef struct KeyPackHalf
{
	int64		id;
	int64		partner;
	SimHash		fp;
} KeyPackHalf;

static inline int
key_pack_entry_cmp(const KeyPackEntry *a, const KeyPackEntry *b)
{
	if (a->block != b->block)
		return a->block < b->block ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	if (a->fp != b->fp)
		return a->fp < b->fp ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

static inline int
key_pack_half_cmp(const KeyPackHalf *a, const KeyPackHalf *b)
{
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return (a->partner > b->partner) - (a->partner < b->partner);
}

#define ST_SORT key_pack_sort_entries
#define ST_ELEMENT_TYPE KeyPackEntry
#define ST_COMPARE(a, b) key_pack_entry_cmp(a, b)
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

#define ST_SORT key_pack_sort_halves
#define ST_ELEMENT_TYPE KeyPackHalf
#define ST_COMPARE(a, b) key_pack_half_cmp(a, b)
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* the search of one target's keys */
typedef struct KeyPackSearch
{
	const KeyPackEntry *entries;
	int			radius;
	int			blocks;
	const uint64 *masks;
	int32		block;			/* of the group searched */
	uint32		base;			/* its first entry */
	const uint32 *dstart;		/* per distinct fingerprint of a large group:
								 * its first entry (from base) */
	Size		used;
	Size		limit;
	uint64	   *edges;			/* (a << 32) | b, entries a < b */
	uint64		nedges;
	uint64		maxedges;
} KeyPackSearch;

static void
key_pack_add_edge(KeyPackSearch *ks, uint32 a, uint32 b)
{
	if (ks->entries[a].id == ks->entries[b].id)
		return;					/* one row given twice: not a pair */
	if (ks->nedges == ks->maxedges)
	{
		uint64		more = Max(ks->maxedges * 2, 1024);

		if (ks->used + more * KEY_PACK_BYTES_PER_PAIR > ks->limit)
			more = ks->maxedges + 1;
		if (ks->used + more * KEY_PACK_BYTES_PER_PAIR > ks->limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("simhash_pack_partners() needs more than maintenance_work_mem (%d kB) for the pairs of one target",
							maintenance_work_mem),
					 errdetail("%llu pairs were found before the limit.",
							   (unsigned long long) ks->nedges),
					 errhint("Raise maintenance_work_mem, or pack the keys for more targets.")));
		ks->edges = ks->edges ? repalloc_huge(ks->edges, more * sizeof(uint64))
			: palloc_extended(more * sizeof(uint64), MCXT_ALLOC_HUGE);
		ks->maxedges = more;
	}
	ks->edges[ks->nedges++] = ((uint64) Min(a, b) << 32) | Max(a, b);
}

/* Is this pair within the radius, and is the group's key its first shared? */
static inline bool
key_pack_reports(const KeyPackSearch *ks, SimHash a, SimHash b)
{
	SimHash		diff = a ^ b;

	return sh_popcount64(diff) <= ks->radius &&
		sh_pigeon_first_shared(diff, ks->radius, ks->blocks, ks->masks) == ks->block;
}

/* batch_near_pairs' callback: every entry pair across two distinct fingerprints */
static void
key_pack_distinct_pair(void *arg, uint32 a, uint32 b, int distance)
{
	KeyPackSearch *ks = (KeyPackSearch *) arg;
	uint32		ia = ks->base + ks->dstart[a];
	uint32		ib = ks->base + ks->dstart[b];

	if (sh_pigeon_first_shared(ks->entries[ia].fp ^ ks->entries[ib].fp,
							   ks->radius, ks->blocks, ks->masks) != ks->block)
		return;
	for (uint32 i = ia; i < ks->base + ks->dstart[a + 1]; i++)
		for (uint32 j = ib; j < ks->base + ks->dstart[b + 1]; j++)
			key_pack_add_edge(ks, i, j);
}

/*
 * The pairs among the n entries from `base` (one (block, key), sorted by
 * fingerprint): every pair of a small group; in a large one, identical
 * fingerprints merged (their pairs are block 0's: they share every key)
 * and the distinct ones searched by batch_near_pairs.
 */
static void
key_pack_group(KeyPackSearch *ks, uint32 base, uint32 n)
{
	const KeyPackEntry *e = ks->entries + base;
	SimHash    *dfps;
	uint32	   *dstart;
	uint32		nd = 0;
	BatchStats	stats;

	ks->base = base;
	ks->block = e[0].block;
	if (n <= KEY_PACK_BRUTE_MAX)
	{
		for (uint32 a = 0; a < n; a++)
			for (uint32 b = a + 1; b < n; b++)
				if (key_pack_reports(ks, e[a].fp, e[b].fp))
					key_pack_add_edge(ks, base + a, base + b);
		return;
	}
	dfps = palloc_extended(sizeof(SimHash) * n, MCXT_ALLOC_HUGE);
	dstart = palloc_extended(sizeof(uint32) * (n + 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < n; i++)
		if (nd == 0 || e[i].fp != dfps[nd - 1])
		{
			dstart[nd] = i;
			dfps[nd++] = e[i].fp;
		}
	dstart[nd] = n;
	if (ks->block == 0)
		for (uint32 d = 0; d < nd; d++)
			for (uint32 i = dstart[d]; i < dstart[d + 1]; i++)
				for (uint32 j = i + 1; j < dstart[d + 1]; j++)
					key_pack_add_edge(ks, base + i, base + j);
	ks->dstart = dstart;
	batch_near_pairs(dfps, nd, ks->radius, key_pack_distinct_pair, ks, NULL, NULL, &stats);
	pfree(dfps);
	pfree(dstart);
}

/* One pack, checked: its keys, or an error naming what is wrong with it. */
static uint32
key_pack_check(bytea *pack, int32 radius, int32 blocks, const char **data)
{
	Size		len = VARSIZE_ANY_EXHDR(pack);
	const char *p = VARDATA_ANY(pack);
	uint32		magic;
	uint16		r,
				m;
	uint32		count;

	if (len < KEY_PACK_HEADER)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a value of %zu bytes given to simhash_pack_partners() is not a key pack", len),
				 errhint("Give it the packs simhash_key_pack() makes.")));
	memcpy(&magic, p, 4);
	memcpy(&r, p + 4, 2);
	memcpy(&m, p + 6, 2);
	memcpy(&count, p + 8, 4);
	magic = pg_ntoh32(magic);
	count = pg_ntoh32(count);
	if (magic != KEY_PACK_MAGIC || len != KEY_PACK_HEADER + (Size) count * KEY_PACK_ENTRY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a value of %zu bytes given to simhash_pack_partners() is not a key pack of this version of simhash", len),
				 errhint("Give it the packs simhash_key_pack() of the same version makes.")));
	if (pg_ntoh16(r) != radius || pg_ntoh16(m) != blocks)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a key pack made for radius %d and %d blocks was given to simhash_pack_partners() for radius %d and %d blocks",
						pg_ntoh16(r), pg_ntoh16(m), radius, blocks)));
	*data = p + KEY_PACK_HEADER;
	return count;
}

/*
 * The n keys of the packs (masks filled with the blocks' bits), with each key's bits (its fingerprint under its
 * block's mask), sorted by block and key; a block that is not a key of
 * blocks at radius is an error.
 */
static KeyPackEntry *
key_pack_unpack(Datum *packs, const bool *pnulls, int npacks, int32 radius, int32 blocks,
				uint64 n, uint64 *masks)
{
	int32		nkeys = (int32) sh_binomial(blocks, radius);
	uint64	   *keymask;
	KeyPackEntry *entries;
	uint64		i;

	mih_default_masks(blocks, masks);
	keymask = palloc(sizeof(uint64) * nkeys);
	for (int32 k = 0; k < nkeys; k++)
		keymask[k] = sh_pigeon_key_mask(k, radius, blocks, masks);
	entries = palloc_extended(sizeof(KeyPackEntry) * n, MCXT_ALLOC_HUGE);
	i = 0;
	for (int j = 0; j < npacks; j++)
	{
		const char *data;
		uint32		count;

		if (pnulls[j])
			continue;
		count = key_pack_check(DatumGetByteaPP(packs[j]), radius, blocks, &data);
		for (uint32 c = 0; c < count; c++, data += KEY_PACK_ENTRY)
		{
			uint64		v;
			uint16		b;

			memcpy(&v, data, 8);
			entries[i].id = (int64) pg_ntoh64(v);
			memcpy(&v, data + 8, 8);
			entries[i].fp = pg_ntoh64(v);
			memcpy(&b, data + 16, 2);
			entries[i].block = pg_ntoh16(b);
			if (entries[i].block >= nkeys)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("a key pack given to simhash_pack_partners() holds block %d, not a key of %d blocks at radius %d",
								entries[i].block, blocks, radius)));
			entries[i].key = entries[i].fp & keymask[entries[i].block];
			i++;
		}
	}
	key_pack_sort_entries(entries, n);
	pfree(keymask);
	return entries;
}

/*
 * One result row per row paired: its id, its fingerprint and its partners'
 * ids, ascending and distinct. Frees the pairs and the entries.
 */
static void
key_pack_emit(ReturnSetInfo *rsinfo, KeyPackSearch *ks, KeyPackEntry *entries)
{
	KeyPackHalf *halves;
	uint64		nhalves;

	/* every row's partners: both halves of every pair, sorted by row */
	nhalves = ks->nedges * 2;
	halves = palloc_extended(sizeof(KeyPackHalf) * Max(nhalves, 1), MCXT_ALLOC_HUGE);
	for (uint64 e = 0; e < ks->nedges; e++)
	{
		const KeyPackEntry *a = &entries[ks->edges[e] >> 32];
		const KeyPackEntry *b = &entries[(uint32) ks->edges[e]];

		halves[2 * e] = (KeyPackHalf) {a->id, b->id, a->fp};
		halves[2 * e + 1] = (KeyPackHalf) {b->id, a->id, b->fp};
	}
	if (ks->edges)
		pfree(ks->edges);
	pfree(entries);
	key_pack_sort_halves(halves, nhalves);
	for (uint64 start = 0; start < nhalves;)
	{
		uint64		end = start;
		int			np = 0;
		Datum	   *elems;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		while (end < nhalves && halves[end].id == halves[start].id)
			end++;
		elems = palloc(sizeof(Datum) * (end - start));
		for (uint64 h = start; h < end; h++)
			if (h == start || halves[h].partner != halves[h - 1].partner)
				elems[np++] = Int64GetDatum(halves[h].partner);
		values[0] = Int64GetDatum(halves[start].id);
		values[1] = SimHashGetDatum(halves[start].fp);
		values[2] = PointerGetDatum(construct_array(elems, np, INT8OID, sizeof(int64),
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(elems);
		pfree(DatumGetPointer(values[2]));
		start = end;
	}
}

/*
 * simhash_pack_partners(packs bytea[], radius int, blocks int)
 *	 RETURNS TABLE (id int8, fp simhash, partners int8[]):
 * the rows of these packs (one target's) that are in a pair reported here,
 * each with its partners.
 */
PG_FUNCTION_INFO_V1(simhash_pack_partners);
Datum
simhash_pack_partners(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(0);
	int32		radius = PG_GETARG_INT32(1);
	int32		blocks = PG_GETARG_INT32(2);
	Datum	   *packs;
	bool	   *pnulls;
	int			npacks;
	uint64		masks[SIMHASH_BITS];
	uint64		n = 0;
	KeyPackEntry *entries;
	KeyPackSearch ks;

	sh_pigeon_check_radius(radius);
	sh_pigeon_check_blocks(radius, blocks);
	InitMaterializedSRF(fcinfo, 0);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("simhash_pack_partners() takes a one-dimensional array of packs, not %d dimensions",
						ARR_NDIM(arr))));
	deconstruct_array(arr, BYTEAOID, -1, false, TYPALIGN_INT, &packs, &pnulls, &npacks);
	for (int j = 0; j < npacks; j++)
	{
		const char *data;

		if (pnulls[j])
			continue;
		packs[j] = PointerGetDatum(PG_DETOAST_DATUM(packs[j]));
		n += key_pack_check(DatumGetByteaPP(packs[j]), radius, blocks, &data);
	}

	memset(&ks, 0, sizeof(ks));
	ks.limit = (Size) maintenance_work_mem * 1024;
	ks.used = n * KEY_PACK_BYTES_PER_KEY;
	if (n >= PG_UINT32_MAX || ks.used > ks.limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_pack_partners() needs about %llu kB of memory for %llu keys, more than maintenance_work_mem (%d kB)",
						(unsigned long long) (n * KEY_PACK_BYTES_PER_KEY / 1024),
						(unsigned long long) n, maintenance_work_mem),
				 errhint("Raise maintenance_work_mem, or pack the keys for more targets.")));
	if (n == 0)
		return (Datum) 0;

	entries = key_pack_unpack(packs, pnulls, npacks, radius, blocks, n, masks);

	ks.entries = entries;
	ks.radius = radius;
	ks.blocks = blocks;
	ks.masks = masks;
	for (uint64 start = 0; start < n;)
	{
		uint64		end = start + 1;

		while (end < n && entries[end].block == entries[start].block &&
			   entries[end].key == entries[start].key)
			end++;
		if (end - start > 1)
			key_pack_group(&ks, (uint32) start, (uint32) (end - start));
		start = end;
		CHECK_FOR_INTERRUPTS();
	}

	key_pack_emit(rsinfo, &ks, entries);
	return (Datum) 0;
}
