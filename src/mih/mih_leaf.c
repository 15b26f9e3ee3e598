/*
 * mih_leaf.c
 *		A run's leaves in either format (mih_leaf.h): opening a compact
 *		leaf, decoding it into plain entries for the paths that read whole
 *		leaves, marking an entry dead in place, and sizing and writing a
 *		compact leaf for the run writer.
 */
#include "mih.h"

#include "port/pg_bitutils.h"
#include "utils/memutils.h"

/* ---- gathering and scattering the bits outside a block ---- */

/*
 * The maps of the masks this backend has met: an index has at most 16
 * tables, and a backend rarely uses more than a few indexes' masks (every
 * index with the same number of blocks has the same ones).
 */
#define MIH_BITMAPS_KEPT	32
static MihBitMap *bitmaps[MIH_BITMAPS_KEPT];
static int	nbitmaps;
static int	bitmap_next_evict;

const MihBitMap *
mih_bitmap(uint64 mask)
{
	uint64		bits = ~mask;
	MihBitMap  *m;

	for (int i = 0; i < nbitmaps; i++)
		if (bitmaps[i]->bits == bits)
			return bitmaps[i];
	if (nbitmaps < MIH_BITMAPS_KEPT)
		m = bitmaps[nbitmaps++] = MemoryContextAlloc(TopMemoryContext, sizeof(MihBitMap));
	else
	{
		/* more masks than kept: reuse a slot (no pointer to it outlives a page read) */
		m = bitmaps[bitmap_next_evict];
		bitmap_next_evict = (bitmap_next_evict + 1) % MIH_BITMAPS_KEPT;
	}
	m->bits = bits;
	m->nbits = pg_popcount64(bits);
	for (int b = 0; b < 8; b++)
	{
		uint8		sel = (uint8) (bits >> (8 * b));
		int			cnt = 0;

		for (int k = 0; k < 8; k++)
			cnt += (sel >> k) & 1;
		m->count[b] = cnt;
		memset(m->scatter[b], 0, sizeof(m->scatter[b]));
		for (int x = 0; x < 256; x++)
		{
			int			g = 0;
			int			out = 0;

			/* gather: the selected bits of byte x, packed low */
			for (int k = 0; k < 8; k++)
				if ((sel >> k) & 1)
					out |= ((x >> k) & 1) << g++;
			m->gather[b][x] = (uint8) out;
			/* scatter: the low cnt bits of x, put back where sel says */
			if (x < (1 << cnt))
			{
				int			s = 0;

				out = 0;
				for (int k = 0; k < 8; k++)
					if ((sel >> k) & 1)
						out |= ((x >> s++) & 1) << k;
				m->scatter[b][x] = (uint8) out;
			}
		}
	}
	return m;
}

/* ---- reading ---- */

static int
rem_bytes_for(uint64 mask)
{
	return (SIMHASH_BITS - pg_popcount64(mask) + 7) / 8;
}

pg_noinline void
mih_cleaf_corrupt(Relation index, BlockNumber blk, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("simhash index \"%s\" is corrupted: compact leaf block %u has %s",
					RelationGetRelationName(index), blk, what),
			 errhint("REINDEX the index.")));
}

/*
 * Open a compact leaf of the table with this mask, checking that its
 * header describes entries that fit the page (the entries themselves are
 * checked by simhash_index_verify).
 */
void
mih_cleaf_open(Relation index, BlockNumber blk, Page page, uint64 mask, MihCLeaf *c)
{
	const MihCompactLeaf *h = (const MihCompactLeaf *) PageGetContents(page);
	const char *base = (const char *) h;
	int			tid_bytes = h->tid_bytes;
	Size		used;

	c->n = h->nentries;
	c->ngroups = h->ngroups;
	c->rem_bytes = h->rem_bytes;
	c->off_bits = h->off_bits;
	c->width = c->rem_bytes + tid_bytes;
	if (c->rem_bytes != rem_bytes_for(mask) || tid_bytes < 1 || tid_bytes > 7 ||
		c->off_bits < 1 || c->off_bits > 16 ||
		c->off_bits + 2 > tid_bytes * 8)
		mih_cleaf_corrupt(index, blk, "an impossible entry format");
	used = sizeof(MihCompactLeaf) + (Size) c->ngroups * MIH_CLEAF_GROUP_SIZE +
		(Size) c->n * c->width;
	if (c->n < 1 || c->n > MIH_LEAF_MAX_ENTRIES || c->ngroups < 1 || c->ngroups > c->n ||
		used > MIH_PAGE_CONTENT_SIZE ||
		((PageHeader) page)->pd_lower != MAXALIGN(SizeOfPageHeaderData) + used)
		mih_cleaf_corrupt(index, blk, "more entries than fit");
	c->keys = base + sizeof(MihCompactLeaf);
	c->starts = c->keys + c->ngroups * sizeof(uint64);
	c->entries = c->starts + c->ngroups * sizeof(uint16);
	c->rem_mask = c->rem_bytes >= 8 ? ~UINT64CONST(0) :
		(UINT64CONST(1) << (8 * c->rem_bytes)) - 1;
	c->tid_mask = (UINT64CONST(1) << (8 * tid_bytes)) - 1;
	c->bm = mih_bitmap(mask);
}

/* The number of entries of a leaf page in either format. */
int
mih_leaf_nitems(Page page)
{
	if (mih_leaf_is_compact(page))
		return ((const MihCompactLeaf *) PageGetContents(page))->nentries;
	return MihPageGetNItems(page, sizeof(MihEntry));
}

/*
 * A leaf's entries as plain entries: the page's own array, or a compact
 * leaf's decoded into scratch (MIH_LEAF_MAX_ENTRIES of them). For the paths
 * that read leaves whole: merges, VACUUM, verification, full scans.
 */
const MihEntry *
mih_leaf_entries(Relation index, BlockNumber blk, Page page, uint64 mask,
				 MihEntry *scratch, int *n)
{
	MihCLeaf	c;

	if (!mih_leaf_is_compact(page))
	{
		*n = MihPageGetNItems(page, sizeof(MihEntry));
		return MihPageGetEntries(page);
	}
	mih_cleaf_open(index, blk, page, mask, &c);
	for (int g = 0; g < c.ngroups; g++)
	{
		int			start;
		int			end;
		uint64		key = mih_cleaf_group(index, blk, &c, g, mask, &start, &end);

		for (int i = start; i < end; i++)
			mih_cleaf_decode(&c, i, key, &scratch[i]);
	}
	*n = c.n;
	return scratch;
}

/* The block value of a leaf's first entry. */
uint64
mih_leaf_first_key(Relation index, BlockNumber blk, Page page, uint64 mask)
{
	MihCLeaf	c;

	if (!mih_leaf_is_compact(page))
		return mih_entry_fp(&MihPageGetEntries(page)[0]) & mask;
	mih_cleaf_open(index, blk, page, mask, &c);
	return mih_cleaf_key(&c, 0);
}

/* The block value of a leaf's last entry. */
uint64
mih_leaf_last_key(Relation index, BlockNumber blk, Page page, uint64 mask)
{
	MihCLeaf	c;

	if (!mih_leaf_is_compact(page))
	{
		int			n = MihPageGetNItems(page, sizeof(MihEntry));

		if (n < 1)
			mih_cleaf_corrupt(index, blk, "no entries");
		return mih_entry_fp(&MihPageGetEntries(page)[n - 1]) & mask;
	}
	mih_cleaf_open(index, blk, page, mask, &c);
	return mih_cleaf_key(&c, c.ngroups - 1);
}

/*
 * Mark entry i dead in place (VACUUM, on the page GenericXLog hands out):
 * the dead bit is the lowest bit of a compact entry's TID field.
 */
void
mih_leaf_set_dead(Page page, int i)
{
	const MihCompactLeaf *h;
	Size		off;

	if (!mih_leaf_is_compact(page))
	{
		mih_entry_set_dead(&MihPageGetEntries(page)[i]);
		return;
	}
	h = (const MihCompactLeaf *) PageGetContents(page);
	Assert(i >= 0 && i < h->nentries);
	off = sizeof(MihCompactLeaf) + (Size) h->ngroups * MIH_CLEAF_GROUP_SIZE +
		(Size) i * (h->rem_bytes + h->tid_bytes) + h->rem_bytes;
	((uint8 *) PageGetContents(page))[off] |= MIH_CLEAF_DEAD;
}

/* ---- writing ---- */

static int
bits_for(uint64 v)
{
	return v == 0 ? 0 : pg_leftmost_one_pos64(v) + 1;
}

static int
tid_bytes_for(BlockNumber maxblock, OffsetNumber maxoff)
{
	return (bits_for(maxblock) + Max(bits_for(maxoff), 1) + 2 + 7) / 8;
}

void
mih_leaf_sizer_reset(MihLeafSizer *s, uint64 mask)
{
	s->n = 0;
	s->ngroups = 0;
	s->lastkey = 0;
	s->maxblock = 0;
	s->maxoff = 0;
	s->rem_bytes = rem_bytes_for(mask);
}

/* Would a compact leaf still hold its entries with this one added? */
bool
mih_leaf_sizer_fits(const MihLeafSizer *s, uint64 key, ItemPointer tid)
{
	int			ngroups = s->ngroups + ((s->n == 0 || key != s->lastkey) ? 1 : 0);
	BlockNumber maxblock = Max(s->maxblock, ItemPointerGetBlockNumberNoCheck(tid));
	OffsetNumber maxoff = Max(s->maxoff, tid->ip_posid & ~MIH_TID_FLAGS);
	int			width = s->rem_bytes + tid_bytes_for(maxblock, maxoff);

	return s->n + 1 <= MIH_LEAF_MAX_ENTRIES &&
		sizeof(MihCompactLeaf) + (Size) ngroups * MIH_CLEAF_GROUP_SIZE +
		(Size) (s->n + 1) * width <= MIH_PAGE_CONTENT_SIZE;
}

/* Does a compact leaf hold the entries the sizer has seen? */
bool
mih_leaf_sizer_holds(const MihLeafSizer *s)
{
	return s->n >= 1 && s->n <= MIH_LEAF_MAX_ENTRIES &&
		sizeof(MihCompactLeaf) + (Size) s->ngroups * MIH_CLEAF_GROUP_SIZE +
		(Size) s->n * (s->rem_bytes + tid_bytes_for(s->maxblock, s->maxoff)) <=
		MIH_PAGE_CONTENT_SIZE;
}

void
mih_leaf_sizer_add(MihLeafSizer *s, uint64 key, ItemPointer tid)
{
	if (s->n == 0 || key != s->lastkey)
		s->ngroups++;
	s->lastkey = key;
	s->maxblock = Max(s->maxblock, ItemPointerGetBlockNumberNoCheck(tid));
	s->maxoff = Max(s->maxoff, tid->ip_posid & ~MIH_TID_FLAGS);
	s->n++;
}

/*
 * Write entries (sorted by block value, as the sizer saw them) to page as a
 * compact leaf; the page is initialized as a leaf already.
 */
void
mih_leaf_write_compact(Page page, const MihEntry *entries, int n, uint64 mask,
					   const MihLeafSizer *s)
{
	MihCompactLeaf *h = (MihCompactLeaf *) PageGetContents(page);
	char	   *keys = (char *) h + sizeof(MihCompactLeaf);
	char	   *starts = keys + s->ngroups * sizeof(uint64);
	char	   *ents = starts + s->ngroups * sizeof(uint16);
	const MihBitMap *bm = mih_bitmap(mask);
	int			tid_bytes = tid_bytes_for(s->maxblock, s->maxoff);
	int			off_bits = Max(bits_for(s->maxoff), 1);
	int			width = s->rem_bytes + tid_bytes;
	int			g = -1;
	uint64		last = 0;

	Assert(n == s->n && n > 0);
	h->nentries = n;
	h->ngroups = s->ngroups;
	h->rem_bytes = s->rem_bytes;
	h->tid_bytes = tid_bytes;
	h->off_bits = off_bits;
	h->unused = 0;
	for (int i = 0; i < n; i++)
	{
		SimHash		fp = mih_entry_fp(&entries[i]);
		uint64		key = fp & mask;
		uint64		rem = mih_bits_gather(bm, fp);
		ItemPointerData tid = entries[i].tid;
		uint64		t;
		char	   *e = ents + i * width;

		if (g < 0 || key != last)
		{
			uint16		start = i;

			g++;
			memcpy(keys + g * sizeof(uint64), &key, sizeof(uint64));
			memcpy(starts + g * sizeof(uint16), &start, sizeof(uint16));
			last = key;
		}
		t = ((uint64) ItemPointerGetBlockNumberNoCheck(&tid) << (off_bits + 2)) |
			((uint64) (tid.ip_posid & ~MIH_TID_FLAGS) << 2) |
			((tid.ip_posid & MIH_NULL_FLAG) ? MIH_CLEAF_NULL : 0) |
			((tid.ip_posid & MIH_DEAD_FLAG) ? MIH_CLEAF_DEAD : 0);
		/* little-endian, byte by byte: the page must not depend on the host */
		for (int b = 0; b < s->rem_bytes; b++)
			e[b] = (char) (rem >> (8 * b));
		for (int b = 0; b < tid_bytes; b++)
			e[s->rem_bytes + b] = (char) (t >> (8 * b));
	}
	Assert(g + 1 == s->ngroups);
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + sizeof(MihCompactLeaf) +
		s->ngroups * MIH_CLEAF_GROUP_SIZE + n * width;
	MihPageGetOpaque(page)->level = MIH_LEAF_COMPACT;
}
