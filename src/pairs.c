/*
 * pairs.c
 *		Pigeonhole keys: turning "all pairs within r bits" into equi-joins,
 *		for finding pairs where a Hamming join cannot run as one index
 *		probe per row (a distributed table, whose shards each hold a part).
 *
 * Cut the 64 bits into r + 1 blocks (interleaved as in the index: bit i
 * belongs to block i mod (r + 1)). Two fingerprints within r bits differ in
 * at most r bits, so at least one block holds none of them: they agree on
 * it exactly. simhash_blocks(fp, r) gives each fingerprint's (block, key)
 * pairs; rows sharing a (block, key) are the candidates, and the distance
 * check keeps the true pairs. A pair agreeing on several blocks meets on
 * each of them; simhash_first_shared_block(a, b, r) names the first, and
 * keeping a pair only there reports it once.
 *
 * simhash_pair_groups turns such a pair list into groups, with the rules of
 * the window functions (dedup.c): rows far outnumber pairs, so the pairs can
 * be gathered where the groups are made.
 *
 * Spread: with r + 1 blocks of 64 / (r + 1) bits, random fingerprints fill
 * 2^(64 / (r + 1)) keys per block (65,536 at r = 3), so the candidates grow
 * as n^2 / 2^(64 / (r + 1)) per block: this suits small radii (r <= 7).
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "mih/mih.h"

/* The radius argument: 0..63 (r + 1 blocks of at least one bit). */
static int
pairs_radius(FunctionCallInfo fcinfo, int argno)
{
	int32		r = PG_GETARG_INT32(argno);

	if (r < 0 || r > SIMHASH_BITS - 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius %d is out of range for pigeonhole blocks", r),
				 errdetail("The radius must be between 0 and 63: the 64 bits are cut into radius + 1 blocks.")));
	return r;
}

/* simhash_blocks(fp, r): one row (block, key) per block, key = fp's bits of that block. */
PG_FUNCTION_INFO_V1(simhash_blocks);
Datum
simhash_blocks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SimHash		fp = PG_GETARG_SIMHASH(0);
	int			nblocks = pairs_radius(fcinfo, 1) + 1;
	uint64		masks[SIMHASH_BITS];

	InitMaterializedSRF(fcinfo, 0);
	mih_default_masks(nblocks, masks);
	for (int j = 0; j < nblocks; j++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int32GetDatum(j);
		values[1] = Int64GetDatum((int64) (fp & masks[j]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * simhash_first_shared_block(a, b, r): the first block on which a and b
 * agree, NULL when none (then they are more than r bits apart).
 */
PG_FUNCTION_INFO_V1(simhash_first_shared_block);
Datum
simhash_first_shared_block(PG_FUNCTION_ARGS)
{
	SimHash		diff = PG_GETARG_SIMHASH(0) ^ PG_GETARG_SIMHASH(1);
	int			nblocks = pairs_radius(fcinfo, 2) + 1;
	uint64		masks[SIMHASH_BITS];

	mih_default_masks(nblocks, masks);
	for (int j = 0; j < nblocks; j++)
		if ((diff & masks[j]) == 0)
			PG_RETURN_INT32(j);
	PG_RETURN_NULL();
}

/* ---- groups from a pair list ---- */

/*
 * The ids of a pair list, sorted and unique, and its pairs as index pairs
 * (lo < hi in id order), read through SPI in batches.
 */
typedef struct PairList
{
	int64	   *ids;
	uint32		nids;
	uint64	   *edges;			/* (hi << 32) | lo */
	int64		nedges;
} PairList;

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

static int
cmp_uint64_asc(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

static uint32
id_index(const PairList *pl, int64 id)
{
	int64	   *hit = bsearch(&id, pl->ids, pl->nids, sizeof(int64), cmp_int64);

	Assert(hit != NULL);
	return (uint32) (hit - pl->ids);
}

/* Guard the memory a pair list needs against maintenance_work_mem, as the window functions do. */
static void
check_pair_memory(int64 npairs)
{
	/* two ids and an edge per pair, and the sort's copy: about 40 bytes */
	Size		need = (Size) npairs * 40;

	if (need > (Size) maintenance_work_mem * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_pair_groups needs about %zu kB for %lld pairs, more than maintenance_work_mem (%d kB)",
						need / 1024, (long long) npairs, maintenance_work_mem),
				 errhint("Raise maintenance_work_mem for this session.")));
}

static void
read_pairs(const char *query, PairList *pl)
{
	Portal		portal;
	SPIPlanPtr	plan;
	int64		npairs = 0;
	int64		cap = 1024;
	int64	   *a = palloc(cap * sizeof(int64));
	int64	   *b = palloc(cap * sizeof(int64));
	int64	   *all;
	int64		nall = 0;

	plan = SPI_prepare(query, 0, NULL);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the pair query: %s", SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (;;)
	{
		TupleDesc	desc;

		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		desc = SPI_tuptable->tupdesc;
		if (desc->natts != 2 ||
			(SPI_gettypeid(desc, 1) != INT8OID && SPI_gettypeid(desc, 1) != INT4OID) ||
			SPI_gettypeid(desc, 2) != SPI_gettypeid(desc, 1))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the pair query of simhash_pair_groups must return two bigint or two integer columns"),
					 desc->natts == 2 ?
					 errdetail("It returns %s and %s.", format_type_be(SPI_gettypeid(desc, 1)),
							   format_type_be(SPI_gettypeid(desc, 2))) :
					 errdetail("It returns %d columns.", desc->natts)));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		n1,
						n2;
			Datum		d1 = SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &n1);
			Datum		d2 = SPI_getbinval(SPI_tuptable->vals[i], desc, 2, &n2);
			int64		x,
						y;

			if (n1 || n2)
				continue;		/* a pair with a NULL joins nothing */
			x = SPI_gettypeid(desc, 1) == INT8OID ? DatumGetInt64(d1) : DatumGetInt32(d1);
			y = SPI_gettypeid(desc, 1) == INT8OID ? DatumGetInt64(d2) : DatumGetInt32(d2);
			if (x == y)
				continue;
			if (npairs == cap)
			{
				check_pair_memory(cap * 2);
				cap *= 2;
				a = repalloc_huge(a, cap * sizeof(int64));
				b = repalloc_huge(b, cap * sizeof(int64));
			}
			a[npairs] = Min(x, y);
			b[npairs] = Max(x, y);
			npairs++;
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	check_pair_memory(npairs);

	/* the ids, sorted and unique */
	all = palloc_extended(Max(npairs * 2, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < npairs; i++)
	{
		all[nall++] = a[i];
		all[nall++] = b[i];
	}
	qsort(all, nall, sizeof(int64), cmp_int64);
	pl->nids = 0;
	for (int64 i = 0; i < nall; i++)
		if (i == 0 || all[i] != all[i - 1])
		{
			if (pl->nids == PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("simhash_pair_groups takes at most %u distinct ids", PG_UINT32_MAX)));
			all[pl->nids++] = all[i];
		}
	pl->ids = all;

	/* the pairs as (hi, lo) index pairs, sorted: each id's earlier neighbours in order */
	pl->edges = palloc_extended(Max(npairs, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	pl->nedges = npairs;
	for (int64 i = 0; i < npairs; i++)
		pl->edges[i] = ((uint64) id_index(pl, b[i]) << 32) | id_index(pl, a[i]);
	qsort(pl->edges, npairs, sizeof(uint64), cmp_uint64_asc);
	pfree(a);
	pfree(b);
}

static uint32
find_root(uint32 *parent, uint32 x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

/*
 * simhash_pair_groups(pairs, method): the groups of the rows in a pair list
 * (a query returning two id columns, the pairs of near-duplicates), with the
 * rules of the window functions and the ids taken in ascending order:
 * 'leader', each id joins the first earlier leader it is paired with, or
 * leads; 'component', the connected components, each kept by its smallest
 * id. Returns (id, keep_id) for every id of the list (a kept id has
 * keep_id = id); ids in no pair keep themselves and are not returned. For
 * another order (keep the longest row, the newest), pass ranks as ids.
 */
PG_FUNCTION_INFO_V1(simhash_pair_groups);
Datum
simhash_pair_groups(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *method = text_to_cstring(PG_GETARG_TEXT_PP(1));
	bool		leader;
	PairList	pl;
	uint32	   *rep;
	MemoryContext outer = CurrentMemoryContext;

	if (strcmp(method, "leader") == 0)
		leader = true;
	else if (strcmp(method, "component") == 0)
		leader = false;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown grouping method \"%s\"", method),
				 errhint("The methods are 'leader' and 'component'.")));

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the pair list lives in the caller's context, outside SPI's */
	MemoryContextSwitchTo(outer);
	read_pairs(query, &pl);

	rep = palloc_extended(Max(pl.nids, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	if (leader)
	{
		int64		e = 0;

		for (uint32 d = 0; d < pl.nids; d++)
		{
			uint32		lead = d;

			/* edges of d to earlier ids, in ascending order: the first leader wins */
			for (; e < pl.nedges && (uint32) (pl.edges[e] >> 32) == d; e++)
			{
				uint32		lo = (uint32) pl.edges[e];

				if (lead == d && rep[lo] == lo)
					lead = lo;
			}
			rep[d] = lead;
		}
	}
	else
	{
		for (uint32 d = 0; d < pl.nids; d++)
			rep[d] = d;
		for (int64 e = 0; e < pl.nedges; e++)
		{
			uint32		x = find_root(rep, (uint32) (pl.edges[e] >> 32));
			uint32		y = find_root(rep, (uint32) pl.edges[e]);

			/* the smaller index (the smaller id) represents the component */
			if (x < y)
				rep[y] = x;
			else if (y < x)
				rep[x] = y;
		}
		for (uint32 d = 0; d < pl.nids; d++)
			rep[d] = find_root(rep, d);
	}

	for (uint32 d = 0; d < pl.nids; d++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int64GetDatum(pl.ids[d]);
		values[1] = Int64GetDatum(pl.ids[rep[d]]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
