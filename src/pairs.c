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
 * Spread: with r + 1 blocks of 64 / (r + 1) bits, random fingerprints fill
 * 2^(64 / (r + 1)) keys per block (65,536 at r = 3), so the candidates grow
 * as n^2 / 2^(64 / (r + 1)) per block: this suits small radii (r <= 7).
 */
#include "simhash.h"

#include "funcapi.h"
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
