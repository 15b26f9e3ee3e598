/*
 * mih_insert.c
 *		Inserting into the simhash index: append (fingerprint, TID) once to
 *		the pending list, and merge the list into a run when it is full.
 *
 * The metapage is locked exclusively for the append, which serialises
 * inserts on it (like GIN's fast-update list) but keeps each one to a
 * single small WAL record covering the metapage and the tail page.
 */
#include "mih.h"
#include "test_fault.h"

bool
mih_insert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
		   Relation heapRel, IndexUniqueCheck checkUnique, bool indexUnchanged,
		   IndexInfo *indexInfo)
{
	MihEntry	entry;
	Buffer		metabuf;
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	Page		metapage;
	MihMetaPageData *meta;
	GenericXLogState *state;
	Page		target;
	int			n;
	bool		merge;

	metabuf = ReadBuffer(index, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	mih_check_metapage(index, BufferGetPage(metabuf));
	meta = MihPageGetMeta(BufferGetPage(metabuf));

	/* an index built before NULL entries existed goes on without them */
	if (isnull[0] && !(meta->flags & MIH_META_INDEXES_NULLS))
	{
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	mih_entry_for_row(&entry, isnull[0] ? 0 : mih_key_fp(mih_keys_are_balls(index), values[0]),
					  isnull[0], ht_ctid);

	if (meta->pending_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		mih_check_pending_tail(index, BufferGetPage(tailbuf), meta->pending_tail);
		if (MihPageGetNItems(BufferGetPage(tailbuf), sizeof(MihEntry)) >= MIH_ENTRIES_PER_PAGE)
			newbuf = mih_new_buffer(index);
	}
	else
		newbuf = mih_new_buffer(index);

	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	meta = MihPageGetMeta(metapage);
	if (newbuf != InvalidBuffer)
	{
		Page		tailpage = tailbuf != InvalidBuffer ?
			GenericXLogRegisterBuffer(state, tailbuf, 0) : NULL;

		target = mih_chain_append(state, newbuf, MIH_PAGE_PENDING, (uint32) meta->next_serial++,
								  tailpage, &meta->pending_head, &meta->pending_head_serial,
								  &meta->pending_tail, &meta->pending_pages);
	}
	else
		target = GenericXLogRegisterBuffer(state, tailbuf, 0);

	n = MihPageGetNItems(target, sizeof(MihEntry));
	MihPageGetEntries(target)[n] = entry;
	MihPageSetNItems(target, n + 1, sizeof(MihEntry));
	meta->pending_entries++;
	/* a test's duplicate entry, which simhash_index_verify must report */
	if (simhash_test_fault == SH_FAULT_INSERT_TWICE && n + 1 < MIH_ENTRIES_PER_PAGE)
	{
		MihPageGetEntries(target)[n + 1] = entry;
		MihPageSetNItems(target, n + 2, sizeof(MihEntry));
		meta->pending_entries++;
	}
	merge = meta->pending_entries >= mih_get_options(index)->pending_limit;
	GenericXLogFinish(state);

	if (newbuf != InvalidBuffer)
		UnlockReleaseBuffer(newbuf);
	if (tailbuf != InvalidBuffer)
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);

	/* if another backend is merging already, it will be done soon enough */
	if (merge)
		mih_flush_and_merge(index, false, false, NULL);
	return false;
}
