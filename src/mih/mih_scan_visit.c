/*
 * mih_scan_visit.c
 *		A radius scan's page visitors: the matches of one run leaf (plain,
 *		compact, placed by the backend's table of places or position index)
 *		or of one pending page (linearly, or through the backend's summary
 *		of it), checked in full and copied into the scan's items. The scan's
 *		driver (mih_scan.c) chooses the pages.
 */
#include "mih.h"
#include "mih_cache.h"
#include "mih_scan.h"

#include "miscadmin.h"
#include "utils/memutils.h"

/* Is fp in every ball of the query? */
static inline bool
matches(MihScanOpaque so, SimHash fp)
{
	for (int i = 0; i < so->nballs; i++)
		if (simhash_hamming(fp, so->centers[i]) > so->radii[i])
			return false;
	return true;
}

/*
 * Would a table before j have reported this match? Then table j must not.
 * The first table whose block is within its radius of the query reports it.
 */
static inline bool
reported_earlier(MihScanOpaque so, SimHash fp, int j)
{
	uint64		diff = fp ^ so->q;

	for (int k = 0; k < j; k++)
		if (sh_popcount64(diff & so->masks[k]) <= so->s[k])
			return true;
	return false;
}

/* A run entry whose block a probe value matched: a match, once. */
static void
scan_visit(void *arg, const MihEntry *e)
{
	MihScanOpaque so = (MihScanOpaque) arg;
	SimHash		fp = mih_entry_fp(e);

	if (!mih_entry_dead(e) && !mih_entry_is_null(e) && matches(so, fp) &&
		!reported_earlier(so, fp, so->table))
		so->items[so->nitems++] = mih_entry_tid(e);
}

/*
 * A compact leaf's group whose value a probe matched: the entries whose
 * remainder is near enough to q's for the probed ball are decoded and
 * visited; the rest are not.
 */
static void
scan_visit_group(void *arg, const MihCLeaf *c, int g)
{
	MihScanOpaque so = (MihScanOpaque) arg;
	uint64		key = mih_cleaf_key(c, g);
	uint64		qrem = so->qrem[so->table];
	int			limit = so->r - sh_popcount64((key ^ so->q) & so->masks[so->table]);
	int			end = mih_cleaf_start(c, g + 1);

	for (int i = mih_cleaf_start(c, g); i < end; i++)
		if (sh_popcount64(mih_cleaf_rem(c, i) ^ qrem) <= limit)
		{
			MihEntry	e;

			mih_cleaf_decode(c, i, key, &e);
			scan_visit(so, &e);
		}
}

/*
 * Visit the group of a compact leaf where the run's table of places
 * (mih_cache_place) says the current probe's entries start: the group must
 * start at that place and hold the probed value. On to the next leaf when
 * the directory says the value goes on there; else the probe is done.
 */
static void
visit_placed(Relation index, MihScanOpaque so, const MihCLeaf *c, const char *page,
			 BlockNumber next)
{
	uint64		v = so->tprobes[so->probe];
	int			rel = so->cplace - (int) (c->entries - page);
	int			i0 = rel / c->width;
	int			lo = so->cgroup;

	so->cplace = 0;
	if (rel < 0 || rel % c->width != 0 || i0 >= c->n || lo < 0 || lo >= c->ngroups)
		mih_position_mismatch(index, so->leaf, i0);
	/* the table of places names the group starting at entry i0 */
	if (mih_cleaf_start(c, lo) != i0 || mih_cleaf_key(c, lo) != v)
		mih_position_mismatch(index, so->leaf, i0);
	scan_visit_group(so, c, lo);
	if (lo == c->ngroups - 1 && next != InvalidBlockNumber &&
		so->leaf_slot + 1 < so->sum->ndir[so->table] &&
		so->sum->dir_keys[so->table][so->leaf_slot + 1] == v)
	{
		/* the value goes on in the next leaf, whose search visits the rest */
		so->leaf = next;
		so->leaf_slot++;
	}
	else
	{
		so->probe++;
		so->leaf = InvalidBlockNumber;
	}
}

/*
 * Visit the current probe's entries that the run's position index placed
 * at so->pos_off of this leaf, on to the next leaf if they go on there.
 * Every one must have the probed value.
 */
static void
visit_positioned(Relation index, MihScanOpaque so, const MihEntry *entries, int n,
				 BlockNumber next)
{
	uint64		mask = so->masks[so->table];
	uint64		v = so->tprobes[so->probe];
	int			i = so->pos_off;

	for (; i < n && so->pos_left > 0; i++, so->pos_left--)
	{
		if ((mih_entry_fp(&entries[i]) & mask) != v)
			mih_position_mismatch(index, so->leaf, i);
		scan_visit(so, &entries[i]);
	}
	if (so->pos_left == 0)
	{
		so->probe++;
		so->leaf = InvalidBlockNumber;	/* the next probe is placed anew */
	}
	else if (next == InvalidBlockNumber)
		mih_position_mismatch(index, so->leaf, n);	/* fewer entries than counted */
	else
	{
		so->leaf = next;
		so->leaf_slot++;
		so->pos_off = 0;
	}
}

/* Where the current table's probes go after a leaf, by why its search stopped. */
static void
after_leaf(MihScanOpaque so, MihLeafStep step, BlockNumber next)
{
	switch (step)
	{
		case MIH_LEAF_END:
			so->leaf = next;
			so->leaf_slot++;
			/* at the end of the table no later probe can match */
			if (next == InvalidBlockNumber)
				so->probe = so->ntprobes;
			break;
		case MIH_LEAF_DESCEND:
			so->leaf = InvalidBlockNumber;	/* it may be the next leaf */
			break;
		case MIH_PROBES_END:
			break;
	}
}

/*
 * A full pass's matches of one ball on a compact leaf, without decoding the
 * entries: an entry of group value key is within r of q when its remainder
 * differs from q's remainder by at most r minus the group value's own
 * distance, so the loop is a load, an xor and a popcount per entry, and
 * only a match is decoded (its flags checked after the distance, which
 * rarely passes). Decoding every entry first (mih_leaf_entries: eight table
 * lookups a fingerprint) was 83% of a radius-12 search at 1M rows.
 * The group directory is checked by mih_cleaf_group, as every reader checks it.
 */
static void
visit_cleaf_full(Relation index, MihScanOpaque so, BlockNumber blk, const MihCLeaf *c,
				 uint64 mask)
{
	SimHash		q = so->centers[0];
	int			r = so->radii[0];
	uint64		qrem = mih_bits_gather(c->bm, q);

	for (int g = 0; g < c->ngroups; g++)
	{
		int			start;
		int			end;
		uint64		key = mih_cleaf_group(index, blk, c, g, mask, &start, &end);
		int			left;
		const char *p;

		left = r - sh_popcount64((key ^ q) & mask);
		if (left < 0)
			continue;
		p = c->entries + start * c->width;
		for (int i = start; i < end; i++, p += c->width)
		{
			MihEntry	e;

			if (sh_popcount64((mih_load_le64(p) & c->rem_mask) ^ qrem) > left)
				continue;
			mih_cleaf_decode(c, i, key, &e);
			if (!(e.tid.ip_posid & MIH_TID_FLAGS))
				so->items[so->nitems++] = mih_entry_tid(&e);
		}
	}
}

/*
 * Visit one run leaf for the current table: collect matches for as many
 * consecutive probe values as the leaf holds. Advances so->probe and
 * so->leaf. The buffer is returned pinned and unlocked.
 */
Buffer
mih_scan_visit_run_leaf(Relation index, MihScanOpaque so)
{
	int			j = so->table;
	Buffer		buf = so->sum ? mih_cache_read_leaf(index, so->sum, j, so->leaf_slot, so->leaf) :
		ReadBuffer(index, so->leaf);
	Page		page;
	const MihEntry *entries;
	int			n;
	uint64		mask = so->masks[j];
	BlockNumber next;
	MihCLeaf	c;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	mih_check_scan_page(index, buf, so->leaf, MIH_PAGE_LEAF, (uint32) so->hdr.serial, j);
	next = MihPageGetOpaque(page)->next;

	if (mih_leaf_is_compact(page) && !so->fullscan)
	{
		/* a run's position index places values in plain leaves only */
		if (so->pos_left > 0)
			mih_position_mismatch(index, so->leaf, so->pos_off);
		mih_cleaf_open(index, so->leaf, page, mask, &c);
		if (so->cplace > 0)
		{
			visit_placed(index, so, &c, (const char *) page, next);
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			return buf;
		}
		after_leaf(so, mih_probe_cleaf(&c, so->tprobes, so->ntprobes, &so->probe,
									   scan_visit_group, so), next);
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		return buf;
	}
	if (mih_leaf_is_compact(page) && so->nballs == 1 && !so->with_nulls)
	{
		/* so->fullscan: the one-ball pass that decodes only matches */
		mih_cleaf_open(index, so->leaf, page, mask, &c);
		visit_cleaf_full(index, so, so->leaf, &c, mask);
		so->leaf = next;
		so->leaf_slot++;
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		return buf;
	}
	so->cplace = 0;				/* a plain leaf of a compact run: searched */
	if (mih_leaf_is_compact(page) && so->scratch == NULL)
		so->scratch = MemoryContextAlloc(so->cxt, MIH_LEAF_MAX_ENTRIES * sizeof(MihEntry));
	entries = mih_leaf_entries(index, so->leaf, page, mask, so->scratch, &n);

	if (so->fullscan && so->nballs == 1 && !so->with_nulls)
	{
		SimHash		q = so->centers[0];
		int			r = so->radii[0];

		/* the distance first, as it rarely passes, then the flags */
		for (int i = 0; i < n; i++)
			if (sh_popcount64(mih_entry_fp(&entries[i]) ^ q) <= r &&
				!(entries[i].tid.ip_posid & MIH_TID_FLAGS))
				so->items[so->nitems++] = mih_entry_tid(&entries[i]);
		so->leaf = next;
		so->leaf_slot++;
	}
	else if (so->fullscan)
	{
		for (int i = 0; i < n; i++)
		{
			SimHash		fp = mih_entry_fp(&entries[i]);

			if (!mih_entry_dead(&entries[i]) &&
				(mih_entry_is_null(&entries[i]) ? so->with_nulls : matches(so, fp)))
				so->items[so->nitems++] = mih_entry_tid(&entries[i]);
		}
		so->leaf = next;
		so->leaf_slot++;		/* the directory lists the leaves in order */
	}
	else if (so->pos_left > 0)
		visit_positioned(index, so, entries, n, next);
	else
		after_leaf(so, mih_probe_leaf(entries, n, mask, so->tprobes, so->ntprobes, &so->probe,
									  scan_visit, so), next);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return buf;
}

/*
 * The matches among a pending page's entries from first on, by its
 * summary (mih_cache_pend.c): each table's probe values looked up, each
 * entry found checked on the page and reported by the first table whose
 * block is near enough, as in the runs.
 */
static void
pending_lookup(MihScanOpaque so, const MihPendSummary *ps, const MihEntry *entries, int first)
{
	for (int j = 0; j < so->nblocks; j++)
		for (int p = 0; p < so->nprobes[j]; p++)
		{
			uint16		idx[MIH_ENTRIES_PER_PAGE];
			int			cnt = mih_pend_find(ps, j, so->probes[j][p], idx);

			for (int k = 0; k < cnt; k++)
			{
				const MihEntry *e = &entries[idx[k]];
				SimHash		fp = mih_entry_fp(e);

				if (idx[k] >= first && sh_popcount64(fp ^ so->q) <= so->r &&
					!(e->tid.ip_posid & MIH_TID_FLAGS) && !reported_earlier(so, fp, j))
					so->items[so->nitems++] = mih_entry_tid(e);
			}
		}
}

/*
 * Visit one pending page: every live entry in the balls matches. Returns
 * InvalidBuffer, having read nothing, for a page this backend already found
 * no match of the ball on after it stopped being the tail (a full page, or
 * one a flush sealed): such a page no longer changes but for dead marks,
 * which take matches away, and its link to the next page was remembered
 * with it (src/mih/README, "Reading").
 */
Buffer
mih_scan_visit_pending(Relation index, MihScanOpaque so)
{
	Buffer		buf;
	Page		page;
	MihEntry   *entries;
	int			n;
	int			checked = 0;

	if (so->nballs == 1 && !so->with_nulls)
	{
		BlockNumber next;
		uint32		next_serial;

		checked = mih_cache_pending_checked(index, so->centers[0], so->radii[0],
											so->pending_next, so->pending_next_serial,
											&next, &next_serial);
		if (next == InvalidBlockNumber && checked == 0 && so->pend_lookup &&
			mih_cache_pending_skip(index, so->pending_next, so->pending_next_serial,
								   so->nblocks, so->probes, so->nprobes, so->centers[0],
								   so->radii[0], &next, &next_serial))
		{
			/* its summary rules every entry out: remembered for the recheck */
			mih_cache_note_pending(index, so->centers[0], so->radii[0], so->pending_next,
								   so->pending_next_serial, MIH_ENTRIES_PER_PAGE, next,
								   next_serial);
		}
		if (next != InvalidBlockNumber)
		{
			so->pending_next = next;
			so->pending_next_serial = next_serial;
			return InvalidBuffer;
		}
	}
	buf = mih_cache_read_hinted(index, so->pending_next);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	mih_check_scan_page(index, buf, so->pending_next, MIH_PAGE_PENDING, so->pending_next_serial, -1);
	entries = MihPageGetEntries(page);
	n = MihPageGetNItems(page, sizeof(MihEntry));
	if (so->nballs == 1 && !so->with_nulls)
	{
		/*
		 * One ball, the usual case (and every constraint check): the
		 * distance first, as it rarely passes, then the flags. Every insert
		 * under the constraint reads the whole pending list this way.
		 */
		SimHash		q = so->centers[0];
		int			r = so->radii[0];
		uint32		serial = MihPageGetOpaque(page)->serial;
		int			first;
		const MihPendSummary *ps = NULL;

		/* the entries an earlier search of this ball found nothing in */
		first = Min(checked, n);
		if (first < n && so->pend_lookup)
			ps = mih_cache_pending_summary(index, so->pending_next, serial, entries, n,
										   so->nblocks, so->masks,
										   MihPageGetOpaque(page)->next,
										   MihPageGetOpaque(page)->next_serial);
		if (ps)
			pending_lookup(so, ps, entries, first);
		else
			for (int i = first; i < n; i++)
				if (sh_popcount64(mih_entry_fp(&entries[i]) ^ q) <= r &&
					!(entries[i].tid.ip_posid & MIH_TID_FLAGS))
					so->items[so->nitems++] = mih_entry_tid(&entries[i]);
		if (so->nitems == 0 && (n > first || MihPageGetOpaque(page)->next != InvalidBlockNumber))
			mih_cache_note_pending(index, q, r, so->pending_next, serial, n,
								   MihPageGetOpaque(page)->next,
								   MihPageGetOpaque(page)->next_serial);
	}
	else
	{
		for (int i = 0; i < n; i++)
			if (!mih_entry_dead(&entries[i]) &&
				(mih_entry_is_null(&entries[i]) ? so->with_nulls : matches(so, mih_entry_fp(&entries[i]))))
				so->items[so->nitems++] = mih_entry_tid(&entries[i]);
	}
	so->pending_next = MihPageGetOpaque(page)->next;
	so->pending_next_serial = MihPageGetOpaque(page)->next_serial;
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	return buf;
}
