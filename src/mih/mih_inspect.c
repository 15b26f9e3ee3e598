/*
 * mih_inspect.c
 *		Looking inside a simhash index, for debugging and for tests:
 *		simhash_index_info() summarises the metapage and the runs,
 *		simhash_index_pages() lists every page with its type; and the
 *		checks all three inspection functions (with simhash_index_verify)
 *		make before they take a lock.
 */
#include "mih.h"

#include "access/amapi.h"
#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/syscache.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/* The access method of a relation, from the catalog cache; InvalidOid if none. */
static Oid
relation_am(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			am;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	ReleaseSysCache(tup);
	return am;
}

static void
not_simhash_index(Oid indexoid)
{
	char	   *name = get_rel_name(indexoid);

	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is not a simhash index", name ? name : "(dropped)")));
}

/*
 * Before any lock: indexoid must be a simhash index, and the caller must
 * own its table (must_own, for simhash_index_verify, which takes a SHARE
 * lock on it and so stalls every writer) or be allowed to SELECT from it.
 * Everything comes from the catalog caches, so a role that may not look
 * never queues a lock on somebody else's table, a catalog included (as
 * amcheck does). Returns the table's OID; the caller locks, then calls
 * mih_recheck_index, since the index may have changed in between.
 */
Oid
mih_check_index_access(Oid indexoid, bool must_own)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	Oid			amoid = relation_am(indexoid);
	const IndexAmRoutine *am;

	if (!OidIsValid(heapoid) || !OidIsValid(amoid))
		not_simhash_index(indexoid);
	am = GetIndexAmRoutineByAmId(amoid, false);
	if (am->ambuild != mih_build)
		not_simhash_index(indexoid);
	if (must_own)
	{
		if (!sh_class_ownercheck(heapoid, GetUserId()))
			aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(heapoid));
	}
	else
	{
		AclResult	aclresult = pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(heapoid));
	}
	return heapoid;
}

/* After locking: the index is still the simhash index of that table. */
void
mih_recheck_index(Relation index, Oid heapoid)
{
	if (index->rd_rel->relkind != RELKIND_INDEX ||
		index->rd_indam == NULL || index->rd_indam->ambuild != mih_build ||
		index->rd_index->indrelid != heapoid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" changed while it was being opened",
						RelationGetRelationName(index))));
}

/* Open an index and check it is a simhash index the caller may read. */
static Relation
open_simhash_index(Oid indexoid)
{
	Oid			heapoid = mih_check_index_access(indexoid, false);
	Relation	index = relation_open(indexoid, AccessShareLock);

	mih_recheck_index(index, heapoid);
	if (RELATION_IS_OTHER_TEMP(index))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary indexes of other sessions")));
	return index;
}

static const char *
page_type_name(uint16 type)
{
	switch (type)
	{
		case MIH_PAGE_META:
			return "meta";
		case MIH_PAGE_PENDING:
			return "pending";
		case MIH_PAGE_RUNHEAD:
			return "run header";
		case MIH_PAGE_LEAF:
			return "leaf";
		case MIH_PAGE_INNER:
			return "inner";
		case MIH_PAGE_FREE:
			return "free";
		case MIH_PAGE_RETIRED:
			return "retired list";
		case MIH_PAGE_RESERVED:
			return "reserved";
		default:
			return "unknown";
	}
}

PG_FUNCTION_INFO_V1(simhash_index_pages);
Datum
simhash_index_pages(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	index = open_simhash_index(PG_GETARG_OID(0));
	BlockNumber nblocks;

	InitMaterializedSRF(fcinfo, 0);
	nblocks = RelationGetNumberOfBlocks(index);
	for (BlockNumber blk = 0; blk < nblocks; blk++)
	{
		Buffer		buf = ReadBuffer(index, blk);
		Page		page;
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};
		MihPageOpaque opaque;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		values[0] = Int64GetDatum(blk);
		if (PageIsNew(page))
		{
			values[1] = CStringGetTextDatum("new");
			nulls[2] = nulls[3] = nulls[4] = nulls[5] = true;
		}
		else
		{
			opaque = MihPageGetOpaque(page);
			values[1] = CStringGetTextDatum(page_type_name(opaque->type));
			values[2] = Int32GetDatum(opaque->table);
			values[3] = Int32GetDatum(opaque->level);
			if (opaque->type == MIH_PAGE_LEAF)
				values[4] = Int32GetDatum(mih_leaf_nitems(page));
			else if (opaque->type == MIH_PAGE_PENDING)
				values[4] = Int32GetDatum(MihPageGetNItems(page, sizeof(MihEntry)));
			else if (opaque->type == MIH_PAGE_INNER)
				values[4] = Int32GetDatum(MihPageGetNItems(page, sizeof(MihInnerItem)));
			else
				nulls[4] = true;
			if (opaque->next == InvalidBlockNumber)
				nulls[5] = true;
			else
				values[5] = Int64GetDatum(opaque->next);
		}
		UnlockReleaseBuffer(buf);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	relation_close(index, AccessShareLock);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_index_info);
Datum
simhash_index_info(PG_FUNCTION_ARGS)
{
	Relation	index = open_simhash_index(PG_GETARG_OID(0));
	Buffer		metabuf;
	MihMetaPageData meta;
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {false, false, false, false, false, false, false, false, false, false};
	int64		entries = 0;
	Datum	   *runsizes;
	Datum	   *runtables;
	Datum	   *masks;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	memcpy(&meta, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(meta));
	UnlockReleaseBuffer(metabuf);

	runsizes = palloc(Max(meta.nruns, 1) * sizeof(Datum));
	runtables = palloc(Max(meta.nruns, 1) * sizeof(Datum));
	for (int i = 0; i < meta.nruns; i++)
	{
		StringInfoData buf;
		uint32		tables = mih_run_tables(&meta, i);

		runsizes[i] = Int64GetDatum(meta.run_entries[i]);
		/* the runs serving table 0 hold each entry once */
		if (tables & 1)
			entries += meta.run_entries[i];
		/* the tables run i serves, as "0,1,2,3" */
		initStringInfo(&buf);
		for (int j = 0; j < meta.nblocks; j++)
			if (tables & (1 << j))
				appendStringInfo(&buf, "%s%d", buf.len > 0 ? "," : "", j);
		runtables[i] = CStringGetTextDatum(buf.data);
	}
	masks = palloc(meta.nblocks * sizeof(Datum));
	for (int j = 0; j < meta.nblocks; j++)
		masks[j] = SimHashGetDatum(meta.masks[j]);

	values[0] = Int32GetDatum(meta.version);
	values[1] = Int32GetDatum(meta.nblocks);
	/* simhash[]: the element type comes from the declared result */
	values[2] = PointerGetDatum(construct_array(masks, meta.nblocks,
												get_element_type(TupleDescAttr(tupdesc, 2)->atttypid),
												sizeof(SimHash), true, TYPALIGN_DOUBLE));
	values[3] = Int32GetDatum(meta.nruns);
	values[4] = PointerGetDatum(construct_array(runsizes, meta.nruns, INT8OID, 8, true,
												TYPALIGN_DOUBLE));
	values[5] = Int64GetDatum(meta.pending_entries);
	values[6] = Int64GetDatum(meta.pending_pages);
	/* entries waiting to be recycled, on the metapage and on its chain */
	values[7] = Int32GetDatum((int32) Min(mih_retired_count(index, &meta), PG_INT32_MAX));
	/* entries and run_tables came with extension 0.2.0; 0.1.0's declaration lacks them */
	if (tupdesc->natts > 8)
	{
		values[8] = Int64GetDatum(entries);
		values[9] = PointerGetDatum(construct_array(runtables, meta.nruns, TEXTOID, -1, false,
													TYPALIGN_INT));
	}
	relation_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
