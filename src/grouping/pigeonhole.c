/*
 * pigeonhole.c
 *		Pigeonhole keys: turning "all pairs within r bits" into equi-joins,
 *		for finding pairs where a Hamming join cannot run as one index
 *		probe per row (a distributed table, whose shards each hold a part).
 *
 * Cut the 64 bits into m >= r + 1 blocks (interleaved as in the index: bit
 * i belongs to block i mod m). Two fingerprints within r bits differ in at
 * most r bits, so they differ in at most r blocks and agree exactly on at
 * least m - r of them. A key is the fingerprint's bits on one choice of
 * m - r blocks: simhash_blocks(fp, r [, m]) gives a fingerprint's C(m, r)
 * keys as (block, key), block numbering the choice; rows sharing a
 * (block, key) are the candidates, and the distance check keeps the true
 * pairs. With m = r + 1 (the default) a choice is one block. A pair that
 * agrees on several choices meets on each of them;
 * simhash_first_shared_block(a, b, r [, m]) names the first, and keeping a
 * pair only there reports it once.
 *
 * Spread: random fingerprints fill 2^(64 (m - r) / m) values per key, so
 * the candidates per row are about n * C(m, r) / 2^(64 (m - r) / m). With
 * m = r + 1 that is n * (r + 1) / 2^(64 / (r + 1)): 610 per row at r = 3
 * and 10M rows. A larger m trades keys per row for far fewer candidates:
 * m = 5 at r = 3 gives 10 keys of about 26 bits and 2 candidates per row
 * at 10M. The SQL script examples/dedup_pairs.sql picks m by that count.
 *
 * simhash_pair_groups turns such a pair list into groups, with the rules of
 * the window functions (window.c): rows far outnumber pairs, so the pairs can
 * be gathered where the groups are made. Given a second query listing the
 * ids in the keep order, it takes the ids in that order itself, so that a
 * caller need not rank the ids and join the pairs to the ranks in SQL.
 */
#include "simhash.h"
#include "binomial.h"
#include "grouping/grouping.h"
#include "grouping/pigeonhole.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "mih/mih.h"

/* At most this many keys per fingerprint: C(m, r) rows for every row. */
#define PAIRS_MAX_KEYS 10000

/* C(n, k), or PAIRS_MAX_KEYS + 1 when it is larger (exact below the cap). */
static int64
pairs_choose(int n, int k)
{
	double		c = sh_binomial(n, k);

	return c > PAIRS_MAX_KEYS ? PAIRS_MAX_KEYS + 1 : (int64) c;
}

/* The radius of pigeonhole keys, checked: 0 <= r < 64. */
void
sh_pigeon_check_radius(int32 r)
{
	if (r < 0 || r > SIMHASH_BITS - 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius %d is out of range for pigeonhole blocks", r),
				 errdetail("The radius must be between 0 and 63: the 64 bits are cut into at least radius + 1 blocks.")));
}

/* The number of blocks for a valid radius r, checked: r < m <= 64, at most PAIRS_MAX_KEYS keys. */
void
sh_pigeon_check_blocks(int32 r, int32 m)
{
	if (m <= r || m > SIMHASH_BITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d blocks cannot serve radius %d", m, r),
				 errdetail("The number of blocks must be between radius + 1 = %d and 64.", r + 1)));
	if (pairs_choose(m, r) > PAIRS_MAX_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%d blocks at radius %d give more than %d keys per fingerprint", m, r, PAIRS_MAX_KEYS),
				 errdetail("Each fingerprint gets C(blocks, radius) keys."),
				 errhint("Use fewer blocks.")));
}

/*
 * The radius (argument argno) and the number of blocks (argument argno + 1
 * when given, else radius + 1), checked.
 */
static void
pairs_args(FunctionCallInfo fcinfo, int argno, int *radius, int *nblocks)
{
	int32		r = PG_GETARG_INT32(argno);
	int32		m;

	sh_pigeon_check_radius(r);
	m = PG_NARGS() > argno + 1 ? PG_GETARG_INT32(argno + 1) : r + 1;
	sh_pigeon_check_blocks(r, m);
	*radius = r;
	*nblocks = m;
}

/*
 * simhash_blocks(fp, r [, m]): the C(m, r) keys (block, key) of fp, one per
 * choice of m - r of the m blocks, in lexicographic order of the chosen
 * blocks; key = fp's bits on them.
 */
PG_FUNCTION_INFO_V1(simhash_blocks);
Datum
simhash_blocks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SimHash		fp = PG_GETARG_SIMHASH(0);
	int			r,
				m,
				k;
	int			chosen[SIMHASH_BITS];
	uint64		masks[SIMHASH_BITS];
	int32		number = 0;

	pairs_args(fcinfo, 1, &r, &m);
	k = m - r;
	InitMaterializedSRF(fcinfo, 0);
	mih_default_masks(m, masks);
	sh_choice_first(chosen, k);
	do
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};
		uint64		mask = 0;

		for (int i = 0; i < k; i++)
			mask |= masks[chosen[i]];
		values[0] = Int32GetDatum(number++);
		values[1] = Int64GetDatum((int64) (fp & mask));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	} while (sh_choice_next(chosen, k, m));
	return (Datum) 0;
}

/*
 * simhash_first_shared_block(a, b, r [, m]): the number of the first key a
 * and b share, NULL when none (then they are more than r bits apart); see
 * sh_pigeon_first_shared.
 */
PG_FUNCTION_INFO_V1(simhash_first_shared_block);
Datum
simhash_first_shared_block(PG_FUNCTION_ARGS)
{
	SimHash		diff = PG_GETARG_SIMHASH(0) ^ PG_GETARG_SIMHASH(1);
	int			r,
				m;
	uint64		masks[SIMHASH_BITS];
	int64		rank;

	pairs_args(fcinfo, 2, &r, &m);
	mih_default_masks(m, masks);
	rank = sh_pigeon_first_shared(diff, r, m, masks);
	if (rank < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32((int32) rank);
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

/*
 * Sorts of millions of ids and pairs that answer a cancel request or
 * statement_timeout (qsort() does not).
 */
#define ST_SORT sort_int64_interruptible
#define ST_ELEMENT_TYPE int64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

#define ST_SORT sort_uint64_interruptible
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_CHECK_FOR_INTERRUPTS
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

static uint32
id_index(const PairList *pl, int64 id)
{
	int64	   *hit = bsearch(&id, pl->ids, pl->nids, sizeof(int64), cmp_int64);

	Assert(hit != NULL);
	return (uint32) (hit - pl->ids);
}

/*
 * Guard the memory a pair list needs against maintenance_work_mem, as the
 * window functions do: two ids and an edge per pair, and the sort's copy
 * (about 40 bytes); with an id order, its ids, their slots in the hash
 * table (16 bytes, at most 90% full, and the old table beside the new while
 * it grows) and the group of each: about 48 bytes an id.
 */
static void
check_pair_memory(int64 npairs, int64 nordered)
{
	Size		need = (Size) npairs * 40 + (Size) nordered * 48;

	if (need > (Size) maintenance_work_mem * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 nordered > 0 ?
				 errmsg("simhash_pair_groups needs about %zu kB for %lld pairs and %lld ordered ids, more than maintenance_work_mem (%d kB)",
						need / 1024, (long long) npairs, (long long) nordered, maintenance_work_mem) :
				 errmsg("simhash_pair_groups needs about %zu kB for %lld pairs, more than maintenance_work_mem (%d kB)",
						need / 1024, (long long) npairs, maintenance_work_mem),
				 errhint("Raise maintenance_work_mem for this session.")));
}

/* A read-only cursor over a caller's query (the pair and id order queries), fetched in batches. */
static Portal
open_query_cursor(const char *query, const char *what)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for the %s query: %s", what, SPI_result_code_string(SPI_result));
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/*
 * The id order: every id's place (its rank) in a hash table. Pairs are
 * mapped to ranks as they are read, one lookup per end, instead of the
 * caller joining them to a table of ranks.
 */
typedef struct IdRank
{
	int64		id;
	uint32		rank;
	char		status;			/* simplehash's */
} IdRank;

/* splitmix64's finaliser: ids are often consecutive, the table wants them spread */
static inline uint32
id_rank_hash(int64 id)
{
	uint64		z = (uint64) id;

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return (uint32) (z ^ (z >> 31));
}

#define SH_PREFIX idrank
#define SH_ELEMENT_TYPE IdRank
#define SH_KEY_TYPE int64
#define SH_KEY id
#define SH_HASH_KEY(tb, key) id_rank_hash(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct IdOrder
{
	idrank_hash *ranks;
	int64	   *ids;			/* by rank */
	uint32		nids;
} IdOrder;

/* an id column's value as int64: bigint or integer, checked by the caller */
static inline int64
id_datum(Datum d, Oid type)
{
	return type == INT8OID ? DatumGetInt64(d) : (int64) DatumGetInt32(d);
}

/*
 * Read the id order query (one bigint or integer column): each id's rank is
 * its place; an id listed twice is an error (as in the window functions: two
 * rows with one id could not be told apart in the answer), NULLs are
 * skipped.
 */
static void
read_id_order(const char *query, IdOrder *order)
{
	Portal		portal;
	int64		cap = 1024;

	order->ids = palloc(cap * sizeof(int64));
	order->nids = 0;
	order->ranks = idrank_create(CurrentMemoryContext, 1024, NULL);
	portal = open_query_cursor(query, "id order");
	for (;;)
	{
		TupleDesc	desc;
		Oid			type;

		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		desc = SPI_tuptable->tupdesc;
		type = SPI_gettypeid(desc, 1);
		if (desc->natts != 1 || (type != INT8OID && type != INT4OID))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the id order query of simhash_pair_groups must return one bigint or integer column"),
					 desc->natts == 1 ?
					 errdetail("It returns %s.", format_type_be(type)) :
					 errdetail("It returns %d columns.", desc->natts)));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[i], desc, 1, &isnull);
			IdRank	   *e;
			bool		found;

			if (isnull)
				continue;
			if (order->nids == PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("simhash_pair_groups takes at most %u distinct ids", PG_UINT32_MAX)));
			e = idrank_insert(order->ranks, id_datum(d, type), &found);
			if (found)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("id %lld occurs more than once in the id order query of simhash_pair_groups",
								(long long) e->id),
						 errhint("Each id needs one place in the order: ids must be unique.")));
			e->rank = order->nids;
			if (order->nids == cap)
			{
				check_pair_memory(0, cap * 2);
				cap *= 2;
				order->ids = repalloc_huge(order->ids, cap * sizeof(int64));
			}
			order->ids[order->nids++] = e->id;
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	check_pair_memory(0, order->nids);
}

/* an id's rank in the order; an id the order does not list is an error */
static uint32
id_order_rank(const IdOrder *order, int64 id)
{
	IdRank	   *e = idrank_lookup(order->ranks, id);

	if (e == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("id %lld of the pair query is not in the id order query", (long long) id),
				 errhint("The id order query must list every id of every pair.")));
	return e->rank;
}

/*
 * Read the pair query. Without an order, the ids are taken in ascending
 * order: pl->ids are the distinct ids of the pairs, sorted. With one, each
 * id becomes its rank as it is read, and pl->ids are the order's ids by
 * rank (some perhaps in no pair; the caller skips those).
 */
static void
read_pairs(const char *query, const IdOrder *order, PairList *pl)
{
	Portal		portal;
	int64		npairs = 0;
	int64		cap = 1024;
	int64	   *a = palloc(cap * sizeof(int64));
	int64	   *b = palloc(cap * sizeof(int64));
	int64	   *all;
	int64		nall = 0;

	portal = open_query_cursor(query, "pair");
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
			x = id_datum(d1, SPI_gettypeid(desc, 1));
			y = id_datum(d2, SPI_gettypeid(desc, 1));
			if (x == y)
				continue;
			if (order)
			{
				x = id_order_rank(order, x);
				y = id_order_rank(order, y);
			}
			if (npairs == cap)
			{
				check_pair_memory(cap * 2, order ? order->nids : 0);
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
	check_pair_memory(npairs, order ? order->nids : 0);

	if (order)
	{
		/* the ranks are the indexes already */
		pl->ids = order->ids;
		pl->nids = order->nids;
	}
	else
	{
		/* the ids, sorted and unique, and the pairs as their indexes */
		all = palloc_extended(Max(npairs * 2, 1) * sizeof(int64), MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < npairs; i++)
		{
			all[nall++] = a[i];
			all[nall++] = b[i];
		}
		sort_int64_interruptible(all, nall);
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
		for (int64 i = 0; i < npairs; i++)
		{
			a[i] = id_index(pl, a[i]);
			b[i] = id_index(pl, b[i]);
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}

	/* the pairs as (hi, lo) index pairs, sorted: each id's earlier neighbours in order */
	pl->edges = palloc_extended(Max(npairs, 1) * sizeof(uint64), MCXT_ALLOC_HUGE);
	pl->nedges = npairs;
	for (int64 i = 0; i < npairs; i++)
		pl->edges[i] = ((uint64) b[i] << 32) | (uint64) a[i];
	sort_uint64_interruptible(pl->edges, npairs);
	pfree(a);
	pfree(b);
}

/*
 * simhash_pair_groups(pairs, method [, id_order]): the groups of the rows in
 * a pair list (a query returning two id columns, the pairs of
 * near-duplicates), with the rules of the window functions, the ids taken
 * in ascending order or, given id_order (a query returning the ids, first
 * the one to keep), in that order: 'leader', each id joins the first
 * earlier leader it is paired with, or leads; 'component', the connected
 * components, each kept by its first id. Returns (id, keep_id) for every id
 * of a pair (a kept id has keep_id = id); ids in no pair keep themselves and
 * are not returned.
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
	IdOrder		order;
	bool		ordered = PG_NARGS() > 2;
	uint32	   *rep;
	bool	   *in_pair = NULL;
	MemoryContext outer = CurrentMemoryContext;

	if (strcmp(method, "leader") == 0)
		leader = true;
	else if (strcmp(method, "component") == 0)
		leader = false;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown grouping method \"%s\"", sh_quote_prefix(method)),
				 errhint("The methods are 'leader' and 'component'.")));

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the pair list lives in the caller's context, outside SPI's */
	MemoryContextSwitchTo(outer);
	if (ordered)
		read_id_order(text_to_cstring(PG_GETARG_TEXT_PP(2)), &order);
	read_pairs(query, ordered ? &order : NULL, &pl);
	if (ordered)
	{
		/* the order's ids in no pair are not returned */
		in_pair = palloc_extended(Max(pl.nids, 1) * sizeof(bool), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (int64 e = 0; e < pl.nedges; e++)
		{
			in_pair[(uint32) (pl.edges[e] >> 32)] = true;
			in_pair[(uint32) pl.edges[e]] = true;
		}
		idrank_destroy(order.ranks);
	}

	rep = palloc_extended(Max(pl.nids, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	if (leader)
		sh_group_leaders(pl.edges, pl.nedges, pl.nids, rep);
	else
	{
		for (uint32 d = 0; d < pl.nids; d++)
			rep[d] = d;
		for (int64 e = 0; e < pl.nedges; e++)
			sh_group_union(rep, (uint32) (pl.edges[e] >> 32), (uint32) pl.edges[e]);
		sh_group_flatten(rep, pl.nids);
	}

	for (uint32 d = 0; d < pl.nids; d++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		if (in_pair && !in_pair[d])
			continue;
		values[0] = Int64GetDatum(pl.ids[d]);
		values[1] = Int64GetDatum(pl.ids[rep[d]]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
