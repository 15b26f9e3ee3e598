/*
 * mih_verify.c
 *		simhash_index_verify(): check a simhash index the way amcheck checks
 *		btrees. The structure: metapage, pending list, and for every run and
 *		table a B+tree whose leaves are sorted, whose inner keys are the first
 *		keys of their children, and which holds the same entries as every
 *		other table of the run. Then that every live heap tuple with a
 *		non-NULL fingerprint has an entry with that fingerprint.
 *
 * Takes a ShareLock on the table (no writes meanwhile) and the index's merge
 * lock. Any problem is an ERROR with ERRCODE_INDEX_CORRUPTED.
 *
 * On a hot standby recovery allows neither (as amcheck's bt_index_check,
 * it takes an AccessShareLock), and replay changes the index while it is
 * checked: inserts append to the pending list, bulk delete marks entries
 * table by table, merges replace runs and recycling frees what they
 * replaced. What still holds is checked: the metapage copy; every page
 * reached is the one its link promised; each run's trees, order and
 * entries (a run's pages never change but for dead marks, which the
 * all-entries checksum ignores); every row visible to an MVCC snapshot
 * taken before the metapage was copied has its entry (no entry of a row
 * visible to it is marked dead while the snapshot lasts: the heap's
 * pruning record would first cancel it through PostgreSQL's recovery
 * conflict). Skipped: the pending list's end and counts against the
 * metapage, and the live entries compared across tables. A problem found
 * while replay has reorganised the index meanwhile (its run list or
 * pending head changed: the page may have been recycled under the check) is
 * reported as a serialization failure to retry, the finding in its detail;
 * found on an index not reorganised meanwhile, it is corruption.
 *
 * Memory: the live entries for the heap check are kept in a hash table
 * (about 48 bytes an entry) while it fits in maintenance_work_mem; past
 * that, as amcheck's heapallindexed does, they go into a Bloom filter of
 * that size, which can miss a heap tuple without its entry with a small
 * probability (about 1% when the filter is sized for the entries) but never
 * reports one that has it.
 */
#include "mih.h"
#include "test_fault.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "common/hashfn.h"
#include "funcapi.h"
#include "lib/bloomfilter.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#define corrupt(index, ...) report_corrupt(index, psprintf(__VA_ARGS__))

/* on a hot standby: the metapage as the check copied it, else NULL */
static const MihMetaPageData *standby_meta = NULL;

/*
 * On a standby, has replay changed the run list or the pending head since
 * the check copied the metapage? Then pages it reached may have been
 * recycled. The metapage is locked only conditionally: the caller may hold
 * other pages, and replay takes the metapage first; when replay holds it,
 * the index is being changed.
 */
static bool
standby_reorganised(Relation index)
{
	Buffer		buf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	bool		changed = true;

	if (ConditionalLockBuffer(buf))
	{
		MihMetaPageData *m = MihPageGetMeta(BufferGetPage(buf));
		const MihMetaPageData *c = standby_meta;

		changed = m->nruns != c->nruns || m->pending_head != c->pending_head ||
			m->pending_head_serial != c->pending_head_serial ||
			memcmp(m->runs, c->runs, c->nruns * sizeof(BlockNumber)) != 0 ||
			memcmp(m->run_serials, c->run_serials, c->nruns * sizeof(uint32)) != 0 ||
			memcmp(m->run_gone, c->run_gone, c->nruns * sizeof(c->run_gone[0])) != 0;
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	}
	ReleaseBuffer(buf);
	return changed;
}

static void
report_corrupt(Relation index, const char *detail)
{
	if (standby_meta && standby_reorganised(index))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("canceling statement: simhash index \"%s\" was reorganised while it was verified",
						RelationGetRelationName(index)),
				 errdetail("Replay changed the index after the check copied its metapage; the check then found: %s",
						   detail),
				 errhint("Retry. With hot_standby_feedback = on, the primary keeps the pages that standby queries still read; a finding that persists on an index replay does not reorganise is corruption.")));
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("simhash index \"%s\" is corrupted", RelationGetRelationName(index)),
			 errdetail_internal("%s", detail)));
}

typedef struct TidEntry
{
	ItemPointerData tid;		/* key */
	SimHash		fp;
	bool		is_null;		/* a NULL entry: the row's fingerprint is NULL */
} TidEntry;

typedef struct VerifyState
{
	Relation	index;
	HTAB	   *tids;			/* live index entries of table 0 and pending,
								 * or NULL once they outgrew the budget ... */
	MemoryContext tidcxt;		/* (holds tids) */
	bloom_filter *bloom;		/* ... and are in this filter instead */
	Size		budget;			/* maintenance_work_mem, in bytes */
	int64		expected;		/* entries the index says it has */
	int64		remembered;
	int64		heap_checked;
	bool		indexes_nulls;	/* MIH_META_INDEXES_NULLS */
} VerifyState;

/* What the Bloom filter holds of an entry: its TID, NULL flag and fingerprint. */
typedef struct BloomKey
{
	SimHash		fp;
	BlockNumber block;
	OffsetNumber offset;
	uint16		is_null;
} BloomKey;

static void
bloom_key(BloomKey *k, ItemPointer tid, SimHash fp, bool is_null)
{
	memset(k, 0, sizeof(*k));
	k->fp = is_null ? 0 : fp;
	k->block = ItemPointerGetBlockNumber(tid);
	k->offset = ItemPointerGetOffsetNumber(tid);
	k->is_null = is_null;
}

/* Move the remembered entries into a Bloom filter of maintenance_work_mem. */
static void
switch_to_bloom(VerifyState *vs)
{
	HASH_SEQ_STATUS seq;
	TidEntry   *e;
	BloomKey	k;

	elog(DEBUG1, "simhash_index_verify: %lld entries passed maintenance_work_mem (%zu bytes); a Bloom filter checks the heap",
		 (long long) vs->remembered, vs->budget);
	vs->bloom = bloom_create(Max(vs->expected, vs->remembered * 2),
							 (int) Min(vs->budget / 1024, (Size) INT_MAX), 0);
	hash_seq_init(&seq, vs->tids);
	while ((e = (TidEntry *) hash_seq_search(&seq)) != NULL)
	{
		bloom_key(&k, &e->tid, e->fp, e->is_null);
		bloom_add_element(vs->bloom, (unsigned char *) &k, sizeof(k));
	}
	hash_destroy(vs->tids);
	vs->tids = NULL;
}

static uint64
entry_hash(SimHash fp, ItemPointer tid)
{
	return hash_bytes_uint32_extended((uint32) (fp ^ (fp >> 32)),
									  ((uint64) ItemPointerGetBlockNumber(tid) << 16) |
									  ItemPointerGetOffsetNumber(tid));
}

/* Remember a live entry for the heap check; NULL entries must carry their stand-in. */
static void
remember(VerifyState *vs, const MihEntry *entry)
{
	ItemPointerData tid = mih_entry_tid(entry);
	TidEntry   *e;
	bool		found;

	if (mih_entry_is_null(entry) && mih_entry_fp(entry) != mih_null_fp(&tid))
		corrupt(vs->index, "The NULL entry of heap tuple (%u,%u) has a fingerprint that is not its stand-in.",
				ItemPointerGetBlockNumber(&tid), ItemPointerGetOffsetNumber(&tid));
	vs->remembered++;
	if (simhash_test_fault == SH_FAULT_VERIFY_FORGET && vs->remembered == 1)
		return;					/* a test's missing entry */
	if (vs->bloom)
	{
		BloomKey	k;

		bloom_key(&k, &tid, mih_entry_fp(entry), mih_entry_is_null(entry));
		bloom_add_element(vs->bloom, (unsigned char *) &k, sizeof(k));
		return;
	}
	/*
	 * A heap TID has at most one live entry: an insert adds one per TID,
	 * and VACUUM removes a TID's entries before the heap may reuse it. A
	 * second is an entry a build, merge or insert wrote twice, which
	 * searches would return twice. (Once the entries outgrow the budget the
	 * Bloom filter cannot tell; the documentation says so.)
	 */
	e = hash_search(vs->tids, &tid, HASH_ENTER, &found);
	if (found)
		corrupt(vs->index, "Heap tuple (%u,%u) has two live index entries.",
				ItemPointerGetBlockNumber(&tid), ItemPointerGetOffsetNumber(&tid));
	e->fp = mih_entry_fp(entry);
	e->is_null = mih_entry_is_null(entry);
	if ((vs->remembered & 1023) == 0 && MemoryContextMemAllocated(vs->tidcxt, true) > vs->budget)
		switch_to_bloom(vs);
}

static Buffer
read_page(Relation index, BlockNumber blk, uint16 type)
{
	Buffer		buf;
	Page		page;

	if (blk == InvalidBlockNumber || blk >= RelationGetNumberOfBlocks(index))
		corrupt(index, "Reference to block %u outside the index.", blk);
	buf = ReadBuffer(index, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (PageIsNew(page) || MihPageGetOpaque(page)->type != type ||
		MihPageGetOpaque(page)->page_id != MIH_PAGE_ID)
		corrupt(index, "Block %u has page type %u, expected %u.", blk,
				PageIsNew(page) ? 0 : MihPageGetOpaque(page)->type, type);
	return buf;
}

/* Check an inner subtree; returns its first key. */
static uint64
verify_inner(Relation index, BlockNumber blk, int level, int table, uint64 mask,
			 uint32 serial)
{
	Buffer		buf = read_page(index, blk, MIH_PAGE_INNER);
	Page		page = BufferGetPage(buf);
	MihInnerItem *items = MihPageGetInner(page);
	int			n = MihPageGetNItems(page, sizeof(MihInnerItem));
	uint64		first;

	if (MihPageGetOpaque(page)->level != level || MihPageGetOpaque(page)->table != table ||
		MihPageGetOpaque(page)->serial != serial)
		corrupt(index, "Inner block %u has level %u of table %u, expected level %d of table %d.",
				blk, MihPageGetOpaque(page)->level, MihPageGetOpaque(page)->table, level, table);
	if (n < 1 || n > MIH_INNER_PER_PAGE)
		corrupt(index, "Inner block %u has %d items.", blk, n);
	first = mih_inner_key(&items[0]);
	for (int i = 0; i < n; i++)
	{
		uint64		key = mih_inner_key(&items[i]);
		uint64		childfirst;

		CHECK_FOR_INTERRUPTS();
		if (i > 0 && key < mih_inner_key(&items[i - 1]))
			corrupt(index, "Inner block %u: keys out of order at item %d.", blk, i);
		if (level > 1)
			childfirst = verify_inner(index, items[i].child, level - 1, table, mask, serial);
		else
		{
			Buffer		lbuf = read_page(index, items[i].child, MIH_PAGE_LEAF);
			Page		lpage = BufferGetPage(lbuf);

			if (MihPageGetOpaque(lpage)->table != table || MihPageGetOpaque(lpage)->serial != serial)
				corrupt(index, "Leaf block %u belongs to table %u of run %u, reached from table %d of run %u.",
						items[i].child, MihPageGetOpaque(lpage)->table,
						MihPageGetOpaque(lpage)->serial, table, serial);
			if (mih_leaf_nitems(lpage) < 1)
				corrupt(index, "Leaf block %u is empty.", items[i].child);
			childfirst = mih_leaf_first_key(index, items[i].child, lpage, mask);
			UnlockReleaseBuffer(lbuf);
		}
		if (childfirst != key)
			corrupt(index, "Inner block %u item %d: key differs from its child's first key.", blk, i);
	}
	UnlockReleaseBuffer(buf);
	return first;
}

/*
 * Walk a table's leaves; returns the number of entries and order-free
 * checksums of all of them and of the live ones.
 */
static int64
verify_leaves(VerifyState *vs, const MihRunHeader *hdr, int table, uint64 mask,
			  uint64 *checksum, uint64 *live_checksum, bool remember_live)
{
	Relation	index = vs->index;
	int64		n = 0;
	bool		have_prev = false;
	SimHash		prevfp = 0;
	MihEntry   *scratch = palloc(MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));

	*checksum = *live_checksum = 0;
	for (BlockNumber blk = hdr->first_leaf[table]; blk != InvalidBlockNumber;)
	{
		Buffer		buf = read_page(index, blk, MIH_PAGE_LEAF);
		Page		page = BufferGetPage(buf);
		const MihEntry *entries;
		int			cnt;
		uint16		format = MihPageGetOpaque(page)->level;

		CHECK_FOR_INTERRUPTS();
		if (format != MIH_LEAF_PLAIN && format != MIH_LEAF_COMPACT)
			corrupt(index, "Leaf block %u has format %u.", blk, format);
		if (format == MIH_LEAF_COMPACT && !(hdr->flags & MIH_RUN_COMPACT))
			corrupt(index, "Leaf block %u is compact, in a run whose header says none is.", blk);
		/* the run's leaf (before its contents are read) */
		if (MihPageGetOpaque(page)->table != table ||
			MihPageGetOpaque(page)->serial != (uint32) hdr->serial)
			corrupt(index, "Leaf block %u belongs to table %u of run %u, reached from table %d of run %u.",
					blk, MihPageGetOpaque(page)->table, MihPageGetOpaque(page)->serial,
					table, (uint32) hdr->serial);
		/* decoding a compact leaf checks its header and group directory */
		entries = mih_leaf_entries(index, blk, page, mask, scratch, &cnt);
		if (cnt < 1 || cnt > (format == MIH_LEAF_COMPACT ? MIH_LEAF_MAX_ENTRIES : MIH_ENTRIES_PER_PAGE))
			corrupt(index, "Leaf block %u has %d entries.", blk, cnt);
		for (int i = 0; i < cnt; i++)
		{
			SimHash		fp = mih_entry_fp(&entries[i]);
			ItemPointerData tid = mih_entry_tid(&entries[i]);

			if (have_prev)
			{
				uint64		pk = prevfp & mask,
							k = fp & mask;

				if (pk > k || (pk == k && prevfp > fp))
					corrupt(index, "Leaf block %u entry %d of table %d is out of order.", blk, i, table);
			}
			have_prev = true;
			prevfp = fp;
			/* dead or not, every table holds every entry of the run */
			*checksum += entry_hash(fp, &tid);
			if (!mih_entry_dead(&entries[i]))
			{
				*live_checksum += entry_hash(fp, &tid);
				if (remember_live)
					remember(vs, &entries[i]);
			}
			n++;
		}
		blk = MihPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
	pfree(scratch);
	return n;
}

/*
 * Copy the metapage into *meta and check what it says of itself: the block
 * count, the run and retired counts, block masks that cover all 64 bits
 * once. Also sizes vs for the entries it counts; on a standby, failed
 * checks are judged against this copy (standby_meta).
 */
static void
verify_metapage(VerifyState *vs, MihMetaPageData *meta, bool standby)
{
	Relation	index = vs->index;
	Buffer		metabuf;
	uint64		allbits = 0;

	metabuf = read_page(index, MIH_METAPAGE_BLKNO, MIH_PAGE_META);
	mih_check_metapage(index, BufferGetPage(metabuf));
	memcpy(meta, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(*meta));
	UnlockReleaseBuffer(metabuf);
	if (standby)
		standby_meta = meta;
	vs->indexes_nulls = (meta->layout == MIH_META_LAYOUT_XID &&
						(meta->flags & MIH_META_INDEXES_NULLS) != 0);
	/* the entries the metapage counts, to size a Bloom filter if one is needed */
	vs->expected = Max(meta->pending_entries, 0);
	for (int r = 0; r < meta->nruns && r < MIH_MAX_RUNS; r++)
		if (mih_run_tables(meta, r) & 1)
			vs->expected += Max(meta->run_entries[r], 0);

	if (meta->nblocks < MIH_MIN_BLOCKS || meta->nblocks > MIH_MAX_BLOCKS ||
		meta->nruns > MIH_MAX_RUNS || meta->nretired > MIH_MAX_RETIRED)
		corrupt(index, "Metapage: %u blocks, %u runs, %u retired.",
				meta->nblocks, meta->nruns, meta->nretired);
	for (int j = 0; j < meta->nblocks; j++)
	{
		if (meta->masks[j] == 0 || (allbits & meta->masks[j]) != 0)
			corrupt(index, "Block mask %d is empty or overlaps another.", j);
		allbits |= meta->masks[j];
	}
	if (allbits != ~UINT64CONST(0))
		corrupt(index, "The block masks do not cover all 64 bits.");
}

/*
 * Walk the pending list, remembering its live entries: each page carries
 * the serial its predecessor recorded. On the primary (under the merge
 * lock) its end and counts must be the metapage's; on a standby replayed
 * inserts may have appended since the copy. Returns the entries.
 */
static int64
verify_pending(VerifyState *vs, const MihMetaPageData *meta, bool standby)
{
	Relation	index = vs->index;
	int64		pending = 0;
	uint32		pending_pages = 0;
	BlockNumber last = InvalidBlockNumber;
	uint32		expect_serial = meta->pending_head_serial;


	for (BlockNumber blk = meta->pending_head; blk != InvalidBlockNumber;)
	{
		Buffer		buf = read_page(index, blk, MIH_PAGE_PENDING);
		Page		page = BufferGetPage(buf);
		MihEntry   *entries = MihPageGetEntries(page);
		int			n = MihPageGetNItems(page, sizeof(MihEntry));

		if (MihPageGetOpaque(page)->serial != expect_serial)
			corrupt(index, "Pending block %u has serial %u, expected %u.",
					blk, MihPageGetOpaque(page)->serial, expect_serial);
		expect_serial = MihPageGetOpaque(page)->next_serial;

		if (n < 0 || n > MIH_ENTRIES_PER_PAGE)
			corrupt(index, "Pending block %u has %d entries.", blk, n);
		for (int i = 0; i < n; i++)
			if (!mih_entry_dead(&entries[i]))
				remember(vs, &entries[i]);
		pending += n;
		pending_pages++;
		last = blk;
		blk = MihPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
		if (pending_pages > RelationGetNumberOfBlocks(index))
			corrupt(index, "The pending list has a cycle.");
	}
	/* on a standby, replayed inserts may have appended since the copy */
	if (!standby && last != meta->pending_tail)
		corrupt(index, "The pending list ends at block %u, the metapage says %u.",
				last, meta->pending_tail);
	if (!standby && (pending != meta->pending_entries || pending_pages != meta->pending_pages))
		corrupt(index, "The pending list holds %lld entries on %u pages, the metapage says %lld on %u.",
				(long long) pending, pending_pages,
				(long long) meta->pending_entries, meta->pending_pages);

	return pending;
}

/*
 * Check run r of the metapage: the tables it serves, each holding the same
 * entries. Adds each table's live checksum to table_live[], and remembers
 * the live entries of table 0 for the heap check.
 */
static void
verify_run(VerifyState *vs, const MihMetaPageData *meta, int r, uint64 *table_live,
		   bool *flagged)
{
	Relation	index = vs->index;
	BlockNumber runhead = meta->runs[r];
	uint32		tables = mih_run_tables(meta, r);
	Buffer		buf = read_page(index, runhead, MIH_PAGE_RUNHEAD);
	MihRunHeader hdr;
	uint64		checksum_first = 0;
	int			first = -1;

	memcpy(&hdr, MihPageGetRunHeader(BufferGetPage(buf)), sizeof(hdr));
	UnlockReleaseBuffer(buf);
	if ((uint32) hdr.serial != meta->run_serials[r])
		corrupt(index, "Run at block %u has serial %u, the metapage says %u.",
				runhead, (uint32) hdr.serial, meta->run_serials[r]);
	if (hdr.ntables != meta->nblocks)
		corrupt(index, "Run at block %u has %u tables, the index %u blocks.",
				runhead, hdr.ntables, meta->nblocks);
	if (hdr.nentries != meta->run_entries[r])
		corrupt(index, "Run at block %u holds %lld entries, the metapage says %lld.",
				runhead, (long long) hdr.nentries, (long long) meta->run_entries[r]);
	if (tables == 0 || (meta->run_gone[r] & ~MIH_ALL_TABLES(meta->nblocks)) != 0)
		corrupt(index, "Run at block %u serves no table, or tables the index does not have (gone mask %x).",
				runhead, meta->run_gone[r]);
	if (hdr.flags & MIH_RUN_VACUUMING)
		*flagged = true;
	for (int j = 0; j < hdr.ntables; j++)
	{
		uint64		checksum;
		uint64		live_checksum;
		int64		n;

		if (!(tables & (1 << j)))
			continue;
		if (hdr.first_leaf[j] == InvalidBlockNumber)
			corrupt(index, "Run at block %u serves table %d and has no leaves for it.", runhead, j);
		if (hdr.height[j] > 0)
			verify_inner(index, hdr.root[j], hdr.height[j], j, meta->masks[j],
						 (uint32) hdr.serial);
		else if (hdr.root[j] != hdr.first_leaf[j])
			corrupt(index, "Run at block %u table %d: a leaf root must be the first leaf.", runhead, j);
		n = verify_leaves(vs, &hdr, j, meta->masks[j], &checksum, &live_checksum, j == 0);
		if (n != hdr.nentries)
			corrupt(index, "Run at block %u table %d holds %lld entries, expected %lld.",
					runhead, j, (long long) n, (long long) hdr.nentries);
		table_live[j] += live_checksum;
		if (first < 0)
		{
			first = j;
			checksum_first = checksum;
		}
		else if (checksum != checksum_first)
			corrupt(index, "Run at block %u: table %d does not hold the same entries as table %d.",
					runhead, j, first);
	}
}

static void
verify_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				bool tupleIsAlive, void *state)
{
	VerifyState *vs = (VerifyState *) state;
	TidEntry   *e;

	if ((isnull[0] && !vs->indexes_nulls) || !tupleIsAlive)
		return;
	vs->heap_checked++;
	if (vs->bloom)
	{
		BloomKey	k;

		bloom_key(&k, tid, isnull[0] ? 0 : mih_key_fp(mih_keys_are_balls(index), values[0]),
				  isnull[0]);
		if (bloom_lacks_element(vs->bloom, (unsigned char *) &k, sizeof(k)))
			corrupt(index, "Heap tuple (%u,%u) has no index entry with its fingerprint.",
					ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
		return;
	}
	e = hash_search(vs->tids, tid, HASH_FIND, NULL);
	if (e == NULL)
		corrupt(index, "Heap tuple (%u,%u) has no index entry.",
				ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
	if (e->is_null != isnull[0])
		corrupt(index, "Heap tuple (%u,%u) has %s fingerprint and %s index entry.",
				ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
				isnull[0] ? "a NULL" : "a", e->is_null ? "a NULL" : "a non-NULL");
	if (!isnull[0] && e->fp != mih_key_fp(mih_keys_are_balls(index), values[0]))
		corrupt(index, "Heap tuple (%u,%u) is indexed with another fingerprint.",
				ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid));
}

PG_FUNCTION_INFO_V1(simhash_index_verify);
Datum
simhash_index_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	/* the caller must own the table: checked before its lock */
	Oid			heapoid = mih_check_index_access(indexoid, true);
	/* on a hot standby only what recovery allows (see the file's comment) */
	bool		standby = RecoveryInProgress();
	LOCKMODE	heaplock = standby ? AccessShareLock : ShareLock;
	Relation	heap = table_open(heapoid, heaplock);
	Relation	index = index_open(indexoid, AccessShareLock);
	Snapshot	snapshot = NULL;
	VerifyState vs;
	HASHCTL		ctl;
	MihMetaPageData meta;
	int64		pending = 0;
	IndexInfo  *indexInfo;
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	int64		run_total = 0;
	uint64		table_live[MIH_MAX_BLOCKS];
	bool		flagged = false;

	mih_recheck_index(index, heapoid);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	standby_meta = NULL;
	if (standby)
	{
		/*
		 * The rows this snapshot sees were inserted, entries and all, before
		 * the metapage is copied below
		 */
		snapshot = RegisterSnapshot(GetTransactionSnapshot());
		if (index->rd_index->indcheckxmin &&
			!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
								   snapshot->xmin))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("simhash index \"%s\" cannot be verified using this snapshot",
							RelationGetRelationName(index)),
					 errdetail("The index is not yet valid for snapshots this old.")));
	}
	else
		LockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);

	memset(&vs, 0, sizeof(vs));
	vs.index = index;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(ItemPointerData);
	ctl.entrysize = sizeof(TidEntry);
	vs.tidcxt = AllocSetContextCreate(CurrentMemoryContext, "simhash verify entries",
									  ALLOCSET_DEFAULT_SIZES);
	ctl.hcxt = vs.tidcxt;
	vs.budget = (Size) maintenance_work_mem * 1024;
	vs.tids = hash_create("simhash verify", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	verify_metapage(&vs, &meta, standby);
	pending = verify_pending(&vs, &meta, standby);

	/*
	 * The runs. The runs serving each table hold the same live entries
	 * between them, unless a run is flagged (its dead marks may disagree
	 * until the next bulk delete settles them).
	 */
	memset(table_live, 0, sizeof(table_live));
	for (int r = 0; r < meta.nruns; r++)
	{
		if (r > 0 && meta.run_entries[r] > meta.run_entries[r - 1])
			corrupt(index, "The run list is not sorted by size.");
		verify_run(&vs, &meta, r, table_live, &flagged);
		if (mih_run_tables(&meta, r) & 1)
			run_total += meta.run_entries[r];
	}
	/* on a standby, replayed dead marks may have reached some tables only */
	for (int j = 1; j < meta.nblocks && !flagged && !standby; j++)
		if (table_live[j] != table_live[0])
			corrupt(index, "The runs serving table %d do not hold the same live entries as those serving table 0.", j);

	/* every live heap tuple is in the index with its fingerprint */
	indexInfo = BuildIndexInfo(index);
	if (standby)
	{
		/* the rows the snapshot sees, as amcheck's heapallindexed does */
		TableScanDesc scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, true);

		indexInfo->ii_Concurrent = true;
		table_index_build_scan(heap, index, indexInfo, true, false,
							   verify_callback, &vs, scan);
		UnregisterSnapshot(snapshot);
		standby_meta = NULL;
	}
	else
	{
		table_index_build_scan(heap, index, indexInfo, false, false,
							   verify_callback, &vs, NULL);
		UnlockPage(index, MIH_METAPAGE_BLKNO, ExclusiveLock);
	}
	if (vs.bloom)
		bloom_free(vs.bloom);
	MemoryContextDelete(vs.tidcxt);

	values[0] = Int32GetDatum(meta.nruns);
	values[1] = Int64GetDatum(run_total);
	values[2] = Int64GetDatum(pending);
	values[3] = Int64GetDatum(vs.heap_checked);
	index_close(index, AccessShareLock);
	table_close(heap, heaplock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
