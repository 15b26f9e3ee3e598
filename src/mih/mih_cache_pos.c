/*
 * mih_cache_pos.c
 *		Where each block value's entries start in a large run: a backend's
 *		position index of a run's table, so that a probe reads one known
 *		line of one known leaf instead of searching for it.
 *
 * A probe of a run's table used to search the leaf directory for the leaf
 * (mih_cache.c) and then the leaf for the value's first entry: halving and
 * galloping through 8 kB of entries the CPU has not cached. On an index
 * larger than the CPU's caches those loads were most of a near-duplicate
 * constraint check's time (four probes per run for radius 3), and a run of
 * more than about 65,000 entries holds nearly every 16-bit block value, so
 * no filter of values present can spare them.
 *
 * A table's entries are sorted by its block value, every leaf of a run but
 * the last is full (mih_run_write.c), and every table holds the same entries. So
 * a histogram of the block values, summed, gives for each value v the
 * number of entries before it: entry "first" of the table, which is entry
 * first % MIH_ENTRIES_PER_PAGE of the directory's leaf first /
 * MIH_ENTRIES_PER_PAGE, and the number of entries with that value. One pass
 * over one table's leaves builds the histograms of every table the run
 * serves. A table of b <= 16 bits needs 2^b + 1 counters (256 kB at 16
 * bits); its block value is packed into its b bits (the mask's bits,
 * gathered in order, which keeps the order of values) by one table lookup
 * per byte.
 *
 * Built, like the filters of small runs, once this backend's scans have
 * read about as many pages in the run as the pass costs, and only if the
 * cache has room without dropping anything. The scan still checks every
 * leaf it reads (mih_check_page) and that every entry it visits has the
 * probed value: a mismatch, which a run that never changes cannot show, is
 * reported as corruption (mih_position_mismatch).
 */
#include "mih.h"
#include "mih_cache.h"
#include "test_fault.h"

#include "miscadmin.h"
#include "utils/memutils.h"

typedef struct MihPosIndex
{
	int			bits;			/* of the table's block */
	uint16		pack[8][256];	/* byte i of a value -> its bits' places */
	uint32		first[FLEXIBLE_ARRAY_MEMBER];	/* 2^bits + 1 */
} MihPosIndex;

static Size
pos_index_size(int bits)
{
	return offsetof(MihPosIndex, first) + (((Size) 1 << bits) + 1) * sizeof(uint32);
}

/* The mask's bits of v gathered into the low bits, in order. */
static inline uint32
pos_pack(const MihPosIndex *pi, uint64 v)
{
	uint32		p = 0;

	for (int i = 0; i < 8; i++)
		p |= pi->pack[i][(v >> (8 * i)) & 0xFF];
	return p;
}

static void
pos_init_pack(MihPosIndex *pi, uint64 mask)
{
	int			below = 0;		/* mask bits below byte i */

	for (int i = 0; i < 8; i++)
	{
		uint32		mbyte = (mask >> (8 * i)) & 0xFF;

		for (uint32 x = 0; x < 256; x++)
		{
			uint32		p = 0;
			int			k = below;

			for (int b = 0; b < 8; b++)
				if (mbyte & (1u << b))
				{
					if (x & (1u << b))
						p |= 1u << k;
					k++;
				}
			pi->pack[i][x] = (uint16) p;
		}
		below += pg_popcount32(mbyte);
	}
}

/* Counting a run's block values, table by table */
typedef struct PosCount
{
	MihPosIndex **pis;			/* per table, or NULL: not counted */
	const uint64 *masks;
	int			from;			/* the first table counted */
	int			ntables;
} PosCount;

static void
count_leaf(void *arg, const MihEntry *entries, int n)
{
	PosCount   *pc = (PosCount *) arg;

	for (int i = 0; i < n; i++)
	{
		SimHash		fp = mih_entry_fp(&entries[i]);

		for (int j = pc->from; j < pc->ntables; j++)
			if (pc->pis[j])
				pc->pis[j]->first[pos_pack(pc->pis[j], fp & pc->masks[j]) + 1]++;
	}
}

/*
 * Build the position indexes of a large run's tables (see the file's
 * comment for when). masks are the index's block masks.
 */
/*
 * A run with compact leaves (mih_leaf.h): its leaves hold different numbers
 * of entries, so a value's place is not an entry count. Instead the table
 * holds, for each value, one word (one cache line to read): the directory
 * slot of the leaf its entries start in (PLACE_ABSENT for a value the run
 * lacks), where in that page the first of them lies (a byte offset, which
 * the scan prefetches), and its group in that leaf's directory (so the scan
 * reads the group's key and bounds without searching the directory; NO_GROUP
 * in a plain leaf). One pass over the group directories of the tables'
 * leaves (a line or two of each page; the few plain leaves such a run has
 * are read whole) makes it, once this backend's scans have read as many
 * pages in the run. 512 kB a 16-bit table.
 */
#define PLACE_ABSENT		PG_UINT32_MAX
#define PLACE_NO_GROUP		0xFFFF
#define PLACE_SLOTS_MAX		((uint32) PG_INT32_MAX)

static inline uint64 *
slot_places(MihPosIndex *pi)
{
	return (uint64 *) ((char *) pi + MAXALIGN(offsetof(MihPosIndex, first)));
}

static Size
slot_index_size(int bits)
{
	return MAXALIGN(offsetof(MihPosIndex, first)) + ((Size) 1 << bits) * sizeof(uint64);
}

static inline uint64
place_word(uint32 slot, int offset, int group)
{
	return (uint64) slot | ((uint64) (uint16) offset << 32) | ((uint64) (uint16) group << 48);
}

/* Note where each value first appears in leaf slot of table j. */
static void
slot_leaf(Relation index, MihPosIndex *pi, int slot, BlockNumber blk, Page page, uint64 mask)
{
	uint64	   *place = slot_places(pi);

	if (mih_leaf_is_compact(page))
	{
		MihCLeaf	c;

		mih_cleaf_open(index, blk, page, mask, &c);
		for (int g = 0; g < c.ngroups; g++)
		{
			uint32		p = pos_pack(pi, mih_cleaf_key(&c, g));

			if ((uint32) place[p] == PLACE_ABSENT)
				place[p] = place_word(slot, (int) (c.entries - (const char *) page) +
									  mih_cleaf_start(&c, g) * c.width, g);
		}
	}
	else
	{
		const MihEntry *e = MihPageGetEntries(page);
		int			n = MihPageGetNItems(page, sizeof(MihEntry));

		for (int i = 0; i < n; i++)
		{
			uint32		p = pos_pack(pi, mih_entry_fp(&e[i]) & mask);

			if ((uint32) place[p] == PLACE_ABSENT)
				place[p] = place_word(slot, (int) ((const char *) &e[i] - (const char *) page),
									  PLACE_NO_GROUP);
		}
	}
}

static void
build_slots(Relation index, MihRunSummary *s, uint32 tables, const uint64 *masks)
{
	int64		leaves = 0;
	MihPosIndex *pis[MIH_MAX_BLOCKS] = {0};
	Size		bytes = 0;

	for (int j = 0; j < s->hdr.ntables; j++)
		if ((tables & (1 << j)) && s->dir_keys[j])
			leaves += s->ndir[j];
	if (s->spent < leaves + 1)
		return;
	s->pos_tried = true;

	/*
	 * Built in the query's memory and attached only once whole: an error or
	 * a cancel between two leaves must not leave a table that says "absent"
	 * of values it never reached (later scans would skip their entries).
	 */
	for (int j = 0; j < s->hdr.ntables; j++)
	{
		int			bits = pg_popcount64(masks[j]);
		MihPosIndex *pi;

		if (!(tables & (1 << j)) || bits > MIH_POS_MAX_BITS || s->dir_keys[j] == NULL ||
			(uint32) s->ndir[j] >= PLACE_SLOTS_MAX)
			continue;
		pi = pis[j] = palloc(slot_index_size(bits));
		bytes += slot_index_size(bits);
		pi->bits = bits;
		pos_init_pack(pi, masks[j]);
		memset(slot_places(pi), 0xFF, ((Size) 1 << bits) * sizeof(uint64));
		for (int i = 0; i < s->ndir[j]; i++)
		{
			BlockNumber blk = s->dir_leaves[j][i];
			Buffer		buf = mih_cache_read_leaf(index, s, j, i, blk);
			Page		page;

			CHECK_FOR_INTERRUPTS();
			if (simhash_test_fault == SH_FAULT_PLACES_MIDWAY && j > 0 && i == s->ndir[j] / 2)
				ereport(ERROR,
						(errmsg("simhash.test_fault: table of places stopped at leaf %d of table %d",
								i, j)));
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			mih_check_scan_page(index, buf, blk, MIH_PAGE_LEAF, s->serial, j);
			slot_leaf(index, pi, i, blk, page, masks[j]);
			UnlockReleaseBuffer(buf);
		}
	}
	if (bytes > 0 && mih_cache_reserve(bytes))
	{
		s->bytes += bytes;
		for (int j = 0; j < s->hdr.ntables; j++)
			if (pis[j])
			{
				Size		size = slot_index_size(pis[j]->bits);

				s->pos[j] = MemoryContextAlloc(mih_cache_context(), size);
				memcpy(s->pos[j], pis[j], size);
			}
	}
	for (int j = 0; j < MIH_MAX_BLOCKS; j++)
		if (pis[j])
			pfree(pis[j]);
}

/*
 * In a run with compact leaves: whether this backend has a table of where
 * table j's values start, and if so, for v, the directory slot of its first
 * leaf (*slot = -1: the run has no entry with that value), the byte offset
 * of its first entry in that page, and its group in the leaf's directory
 * (-1 when that leaf is a plain one).
 */
bool
mih_cache_place(const MihRunSummary *s, int j, uint64 v, int *slot, int *offset, int *group)
{
	MihPosIndex *pi = s->pos[j];
	uint64		w;

	if (pi == NULL || !(s->hdr.flags & MIH_RUN_COMPACT))
		return false;
	w = slot_places(pi)[pos_pack(pi, v)];
	if ((uint32) w == PLACE_ABSENT)
		*slot = -1;
	else
	{
		int			g = (int) ((w >> 48) & 0xFFFF);

		*slot = (int) (uint32) w;
		*offset = (int) ((w >> 32) & 0xFFFF);
		*group = g == PLACE_NO_GROUP ? -1 : g;
	}
	return true;
}

void
mih_cache_consider_positions(Relation index, MihRunSummary *s, uint32 tables,
							 const uint64 *masks)
{
	MihPosIndex *pis[MIH_MAX_BLOCKS] = {0};
	int			t = -1;
	Size		bytes = 0;
	int64		total;
	int64		leaves;
	PosCount	pc;

	if (s->pos_tried || s->hdr.nentries <= MIH_POS_MIN_ENTRIES)
		return;
	/* positions are counted in plain leaves' entries (MIH_ENTRIES_PER_PAGE) */
	if (s->hdr.flags & MIH_RUN_COMPACT)
	{
		build_slots(index, s, tables, masks);
		return;
	}
	leaves = (s->hdr.nentries + MIH_ENTRIES_PER_PAGE - 1) / MIH_ENTRIES_PER_PAGE;
	if (s->spent < leaves + 1)
		return;
	s->pos_tried = true;
	if (s->hdr.nentries >= (int64) PG_UINT32_MAX)
		return;

	/* the tables served whose directory lists every leaf */
	for (int j = 0; j < s->hdr.ntables; j++)
	{
		int			bits = pg_popcount64(masks[j]);

		if (!(tables & (1 << j)) || bits > MIH_POS_MAX_BITS || s->dir_keys[j] == NULL ||
			s->ndir[j] != leaves)
			continue;
		pis[j] = palloc0(pos_index_size(bits));
		pis[j]->bits = bits;
		pos_init_pack(pis[j], masks[j]);
		bytes += pos_index_size(bits);
		if (t < 0)
			t = j;
	}
	if (t < 0)
		goto out;

	/* count each value in first[value + 1] */
	memcpy(s->masks, masks, sizeof(s->masks));
	pc.pis = pis;
	pc.masks = masks;
	pc.from = t;
	pc.ntables = s->hdr.ntables;
	total = mih_cache_walk_table(index, s, t, count_leaf, &pc);
	if (total != s->hdr.nentries)
		goto out;				/* not the run the header describes */
	for (int j = t; j < s->hdr.ntables; j++)
		if (pis[j])
		{
			uint32		nvals = (uint32) 1 << pis[j]->bits;

			for (uint32 p = 1; p <= nvals; p++)
				pis[j]->first[p] += pis[j]->first[p - 1];
		}

	if (!mih_cache_reserve(bytes))
		goto out;
	s->bytes += bytes;
	for (int j = t; j < s->hdr.ntables; j++)
		if (pis[j])
		{
			Size		size = pos_index_size(pis[j]->bits);

			s->pos[j] = MemoryContextAlloc(mih_cache_context(), size);
			memcpy(s->pos[j], pis[j], size);
		}
out:
	for (int j = 0; j < MIH_MAX_BLOCKS; j++)
		if (pis[j])
			pfree(pis[j]);
}

/*
 * Where table j's entries with block value v start (entry *first of the
 * table) and how many there are; false when the run has no usable position
 * index for j.
 */
bool
mih_cache_position(const MihRunSummary *s, int j, uint64 v, uint32 *first, uint32 *count)
{
	const MihPosIndex *pi = s->pos[j];
	uint32		p;

	if (pi == NULL || (s->hdr.flags & MIH_RUN_COMPACT))
		return false;
	p = pos_pack(pi, v);
	*first = pi->first[p];
	*count = pi->first[p + 1] - pi->first[p];
	return true;
}

/*
 * A leaf does not hold the entries a run's position index placed there. A
 * run never changes but for dead marks, so its pages are not the ones its
 * entries were counted from.
 */
void
mih_position_mismatch(Relation index, BlockNumber leaf, int off)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("simhash index \"%s\" is corrupted: entry %d of leaf block %u does not hold the block value its run's counts place there",
					RelationGetRelationName(index), off, leaf),
			 errdetail("This backend counted the run's block values from one of its tables; the table read now disagrees."),
			 errhint("REINDEX the index.")));
}

void
mih_cache_free_positions(MihRunSummary *s)
{
	for (int j = 0; j < MIH_MAX_BLOCKS; j++)
		if (s->pos[j])
		{
			pfree(s->pos[j]);
			s->pos[j] = NULL;
		}
}
