/*
 * mih_leaf.h
 *		The two formats of a run's leaf page, and reading either.
 *
 * A plain leaf is an array of MihEntry (14 bytes: fingerprint and TID). A
 * compact leaf (opaque->level == MIH_LEAF_COMPACT) drops what the leaf
 * already says and what the entries do not need:
 *
 * - its entries come in groups of one block value (the table's key), each
 *   value written once, in a group directory;
 * - an entry keeps the fingerprint's other bits only (the remainder: 48 of
 *   64 with four blocks), gathered into rem_bytes bytes;
 * - the heap TID and the entry's flags are packed into tid_bytes bytes,
 *   as wide as the leaf's largest block number and offset need.
 *
 * Layout of the page contents:
 *
 *	MihCompactLeaf header (8 bytes)
 *	uint64 key[ngroups]		the group's block value (fp & mask), ascending
 *	uint16 start[ngroups]	its first entry
 *	entries[n]: rem_bytes of remainder, then tid_bytes of
 *		(block << (off_bits + 2)) | (offset << 2) | (null << 1) | dead
 *	(little-endian, unaligned)
 *
 * With four blocks and a heap under 2^19 pages an entry takes 10 bytes
 * instead of 14. A run writer chooses the format leaf by leaf, whichever
 * holds more of the entries that come (mih_run_write.c): a small run, whose
 * values rarely repeat, keeps plain leaves, where a directory entry per
 * entry would cost more than it saves. Searches compare remainders
 * directly: the distance of an entry from q is the bits its remainder
 * differs by from q's, plus the group value's own distance, so a probe
 * decodes only the entries close enough to matter.
 */
#ifndef SIMHASH_MIH_LEAF_H
#define SIMHASH_MIH_LEAF_H

#include "port/pg_bswap.h"

/* opaque->level of a leaf page: its format */
#define MIH_LEAF_PLAIN			0
#define MIH_LEAF_COMPACT		1

/* a compact leaf holds at most this many entries (scratch arrays' size) */
#define MIH_LEAF_MAX_ENTRIES	1024

typedef struct MihCompactLeaf
{
	uint16		nentries;
	uint16		ngroups;
	uint8		rem_bytes;
	uint8		tid_bytes;
	uint8		off_bits;
	uint8		unused;
} MihCompactLeaf;

#define MIH_CLEAF_GROUP_SIZE	(sizeof(uint64) + sizeof(uint16))

/*
 * Gathering a fingerprint's bits outside a block mask into the low bits of
 * a word, and scattering them back (a portable pext/pdep for one mask),
 * one table lookup per byte of the fingerprint.
 */
typedef struct MihBitMap
{
	uint64		bits;			/* the bits gathered: ~mask */
	int			nbits;
	uint8		count[8];		/* of them in each byte of a fingerprint */
	uint8		gather[8][256];
	uint8		scatter[8][256];
} MihBitMap;

extern const MihBitMap *mih_bitmap(uint64 mask);

static inline uint64
mih_bits_gather(const MihBitMap *m, uint64 fp)
{
	uint64		out = 0;
	int			shift = 0;

	for (int b = 0; b < 8; b++)
	{
		out |= (uint64) m->gather[b][(fp >> (8 * b)) & 0xFF] << shift;
		shift += m->count[b];
	}
	return out;
}

static inline uint64
mih_bits_scatter(const MihBitMap *m, uint64 rem)
{
	uint64		out = 0;

	for (int b = 0; b < 8; b++)
	{
		out |= (uint64) m->scatter[b][rem & ((1u << m->count[b]) - 1)] << (8 * b);
		rem >>= m->count[b];
	}
	return out;
}

/* A compact leaf opened for reading (mih_cleaf_open). */
typedef struct MihCLeaf
{
	int			n;
	int			ngroups;
	int			width;			/* bytes an entry */
	int			rem_bytes;
	int			off_bits;
	uint64		rem_mask;
	uint64		tid_mask;
	const char *keys;
	const char *starts;
	const char *entries;
	const MihBitMap *bm;
} MihCLeaf;

static inline bool
mih_leaf_is_compact(Page page)
{
	return MihPageGetOpaque(page)->level == MIH_LEAF_COMPACT;
}

/* an entry's fields are little-endian on every host */
static inline uint64
mih_load_le64(const char *p)
{
	uint64		v;

	memcpy(&v, p, sizeof(v));
#ifdef WORDS_BIGENDIAN
	v = pg_bswap64(v);
#endif
	return v;
}

static inline uint64
mih_cleaf_key(const MihCLeaf *c, int g)
{
	uint64		v;

	memcpy(&v, c->keys + g * sizeof(uint64), sizeof(v));
	return v;
}

/* first entry of group g; n for g == ngroups */
static inline int
mih_cleaf_start(const MihCLeaf *c, int g)
{
	uint16		s;

	if (g >= c->ngroups)
		return c->n;
	memcpy(&s, c->starts + g * sizeof(uint16), sizeof(s));
	return s;
}

/*
 * An entry's remainder and packed TID. Each load reads 8 bytes from where
 * the field starts: a field near the end of the entries reads into the
 * page's special space, never past the page.
 */
static inline uint64
mih_cleaf_rem(const MihCLeaf *c, int i)
{
	return mih_load_le64(c->entries + i * c->width) & c->rem_mask;
}

static inline uint64
mih_cleaf_tidval(const MihCLeaf *c, int i)
{
	return mih_load_le64(c->entries + i * c->width + c->rem_bytes) & c->tid_mask;
}

#define MIH_CLEAF_DEAD	1
#define MIH_CLEAF_NULL	2

SH_NORETURN_BEGIN extern void mih_cleaf_corrupt(Relation index, BlockNumber blk, const char *what) SH_NORETURN_END;

/* The first group whose value is >= v (ngroups if none). */
static inline int
mih_cleaf_lower_bound(const MihCLeaf *c, int from, uint64 v)
{
	int			lo = from;
	int			hi = c->ngroups;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (mih_cleaf_key(c, mid) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Group g's block value, and its entries [*start, *end). Every reader of a
 * compact leaf checks the group directory here, so a damaged page is
 * reported (values ascending and within the mask, the first group starting
 * at entry 0, every group non-empty and within the entries), never read past
 * its entries.
 */
static inline uint64
mih_cleaf_group(Relation index, BlockNumber blk, const MihCLeaf *c, int g, uint64 mask,
				int *start, int *end)
{
	uint64		key = mih_cleaf_key(c, g);

	*start = mih_cleaf_start(c, g);
	*end = mih_cleaf_start(c, g + 1);
	if (*start >= *end || *end > c->n || (key & ~mask) != 0 ||
		(g > 0 && key <= mih_cleaf_key(c, g - 1)) || (g == 0 && *start != 0))
		mih_cleaf_corrupt(index, blk, "a group directory out of order");
	return key;
}

/* Entry i (of the group whose value is key) as a plain entry. */
static inline void
mih_cleaf_decode(const MihCLeaf *c, int i, uint64 key, MihEntry *out)
{
	uint64		t = mih_cleaf_tidval(c, i);
	SimHash		fp = key | mih_bits_scatter(c->bm, mih_cleaf_rem(c, i));
	ItemPointerData tid;
	OffsetNumber off = (OffsetNumber) ((t >> 2) & ((UINT64CONST(1) << c->off_bits) - 1));

	ItemPointerSetBlockNumber(&tid, (BlockNumber) (t >> (c->off_bits + 2)));
	tid.ip_posid = off | ((t & MIH_CLEAF_DEAD) ? MIH_DEAD_FLAG : 0) |
		((t & MIH_CLEAF_NULL) ? MIH_NULL_FLAG : 0);
	mih_entry_set(out, fp, &tid);
}

extern void mih_cleaf_open(Relation index, BlockNumber blk, Page page, uint64 mask,
						   MihCLeaf *c);
extern int	mih_leaf_nitems(Page page);
extern const MihEntry *mih_leaf_entries(Relation index, BlockNumber blk, Page page,
										uint64 mask, MihEntry *scratch, int *n);
extern uint64 mih_leaf_first_key(Relation index, BlockNumber blk, Page page, uint64 mask);
extern uint64 mih_leaf_last_key(Relation index, BlockNumber blk, Page page, uint64 mask);
extern void mih_leaf_set_dead(Page page, int i);

/* building a leaf: which format holds more, and writing it (mih_run_write.c) */
typedef struct MihLeafSizer
{
	int			n;
	int			ngroups;
	uint64		lastkey;
	BlockNumber maxblock;
	OffsetNumber maxoff;
	int			rem_bytes;
} MihLeafSizer;

extern void mih_leaf_sizer_reset(MihLeafSizer *s, uint64 mask);
extern bool mih_leaf_sizer_fits(const MihLeafSizer *s, uint64 key, ItemPointer tid);
extern bool mih_leaf_sizer_holds(const MihLeafSizer *s);
extern void mih_leaf_sizer_add(MihLeafSizer *s, uint64 key, ItemPointer tid);
extern void mih_leaf_write_compact(Page page, const MihEntry *entries, int n, uint64 mask,
								   const MihLeafSizer *s);

#endif							/* SIMHASH_MIH_LEAF_H */
