/*
 * window_verified.c
 *		Grouping on verified pairs: simhash_leader() and simhash_component()
 *		with a text and a threshold (window.c reads the rows, this groups them).
 *
 * Two rows within the radius are a candidate pair; the pair is accepted when
 * the exact Jaccard similarity of the two texts' feature sets (the measure of
 * simhash_jaccard(a, b, features, size)) reaches the threshold. Checking each
 * member against its group's kept row after the groups are formed hid the
 * accepted pairs among the members behind one rejected pair with the kept
 * row: identical man pages stayed, each "left alone" against an unrelated
 * leader. Here verification decides the pairs before any group forms:
 *
 *   leader:    in the window's order, a row tries its candidate leaders
 *              (earlier leaders within the radius) in that order and joins
 *              the first one it is accepted with, or leads. So no two leaders
 *              form an accepted pair, and a second run keeps every leader.
 *   component: connected components of the accepted pairs; a pair whose
 *              rows are connected already is not verified.
 *
 * Rows with equal text (and so equal fingerprint) are one node: they always
 * share a group, whatever the threshold and even with no feature, and are
 * tokenised once. Texts are taken as equal when their bytes have the same
 * length and the same XXH3-128 hash. Only rows with a candidate at all (a
 * fingerprint that another row shares or that has a neighbour within the
 * radius) are read and tokenised, in one forward pass over the partition.
 * Each node's ascending distinct feature hashes are spilled (spill.c: in
 * memory up to work_mem, then a temporary file), memory holding only their
 * offsets; a verification reads one set back (the later row's stays loaded
 * while its candidates are tried).
 */
#include "simhash.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/float.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "grouping/window_verified.h"
#include "fingerprint/feature_hash.h"
#include "grouping/grouping.h"
#include "grouping/spill.h"

/* the key of a node: the text's hash and length, and its fingerprint's class */
typedef struct VgNodeKey
{
	uint64		hash_hi;
	uint64		hash_lo;
	uint32		cls;
	uint32		len;
} VgNodeKey;

typedef struct VgNodeEntry
{
	VgNodeKey	key;			/* must be first */
	uint32		node;
} VgNodeEntry;

/* working state of one grouping */
typedef struct VgState
{
	const VgInput *in;
	const VgRuler *ruler;
	VgResult   *out;
	uint32		nnodes;
	uint32	   *cls;			/* per node: its fingerprint's class */
	int64	   *offset;			/* per node: where its hashes start in file */
	uint32	   *nfeat;			/* per node: how many */
	bool	   *has_text;		/* per node: false for a NULL text */
	VgNodeKey  *key;			/* per node: its text's hash and length */
	ShSpill		features;
	/* class -> its nodes, ascending; class -> neighbouring classes */
	uint32	   *cls_start;
	uint32	   *cls_nodes;
	uint64	   *adj_start;
	uint32	   *adj;
	/* the candidates of the current node */
	uint32	   *cand;
	uint32		ncand;
	uint32		maxcand;
	/* the current node's features, and a candidate's */
	uint32		loaded;			/* node in cur, or VG_NO_NODE */
	uint64	   *cur;
	uint32		cur_cap;
	uint64	   *other;
	uint32		other_cap;
} VgState;

static int
vg_cmp_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return (x > y) - (x < y);
}

/* Read node's feature hashes into *buf (grown to fit). */
static void
vg_load(VgState *st, uint32 node, uint64 **buf, uint32 *cap)
{
	uint32		n = st->nfeat[node];

	if (n > *cap)
	{
		*cap = Max(n, *cap * 2);
		*buf = repalloc_huge(*buf, sizeof(uint64) * *cap);
	}
	spill_read(&st->features, st->offset[node], *buf, sizeof(uint64) * n);
}

/*
 * Verify the pair (d, n): true when accepted, that is when the two texts are
 * equal or their similarity reaches the threshold. *j is the similarity, NaN
 * when simhash_jaccard would return NULL (a NULL text, or no feature in
 * either).
 */
static bool
vg_verify(VgState *st, uint32 d, uint32 n, float8 *j)
{
	*j = get_float8_nan();
	st->out->verified++;
	if (!st->has_text[d] || !st->has_text[n])
		return false;
	/* equal texts of different fingerprints (not from one function of it) */
	if (st->key[d].hash_hi == st->key[n].hash_hi && st->key[d].hash_lo == st->key[n].hash_lo &&
		st->key[d].len == st->key[n].len)
	{
		if (st->nfeat[d] > 0)
			*j = 1.0;
		return true;
	}
	if (st->loaded != d)
	{
		vg_load(st, d, &st->cur, &st->cur_cap);
		st->loaded = d;
	}
	vg_load(st, n, &st->other, &st->other_cap);
	if (!sh_jaccard_of_sets(st->cur, st->nfeat[d], st->other, st->nfeat[n], j))
		return false;
	return *j >= st->ruler->threshold;
}

/* Remember a turned-down candidate of node: the most similar one. */
static void
vg_note_near(VgState *st, uint32 node, uint32 cand, float8 j)
{
	VgResult   *out = st->out;
	float8		have = out->near_jaccard[node];

	if (out->near[node] == VG_NO_NODE ||
		(!isnan(j) && (isnan(have) || j > have)))
	{
		out->near[node] = cand;
		out->near_jaccard[node] = j;
	}
}

static void
vg_add_class(VgState *st, uint32 c, uint32 d, bool leaders_only)
{
	for (uint32 k = st->cls_start[c]; k < st->cls_start[c + 1]; k++)
	{
		uint32		n = st->cls_nodes[k];

		if (n >= d)
			break;				/* ascending: the rest are later */
		if (leaders_only && st->out->rep[n] != n)
			continue;
		if (st->ncand == st->maxcand)
		{
			st->maxcand *= 2;
			st->cand = repalloc_huge(st->cand, sizeof(uint32) * st->maxcand);
		}
		st->cand[st->ncand++] = n;
	}
}

/*
 * The earlier nodes within the radius of node d (those of its own class, a
 * text that shares its fingerprint, and of the neighbouring classes),
 * ascending, into st->cand.
 */
static void
vg_candidates(VgState *st, uint32 d, bool leaders_only)
{
	uint32		c = st->cls[d];

	st->ncand = 0;
	vg_add_class(st, c, d, leaders_only);
	for (uint64 k = st->adj_start[c]; k < st->adj_start[c + 1]; k++)
		vg_add_class(st, st->adj[k], d, leaders_only);
	if (st->ncand > 1)
		qsort(st->cand, st->ncand, sizeof(uint32), vg_cmp_uint32);
}

/* Leader clustering on accepted pairs. */
static void
vg_leaders(VgState *st)
{
	VgResult   *out = st->out;

	for (uint32 d = 0; d < st->nnodes; d++)
	{
		out->rep[d] = d;
		vg_candidates(st, d, true);
		for (uint32 k = 0; k < st->ncand; k++)
		{
			uint32		n = st->cand[k];
			float8		j;

			if (vg_verify(st, d, n, &j))
			{
				out->rep[d] = n;
				out->jaccard[d] = j;
				break;
			}
			vg_note_near(st, d, n, j);
		}
		if ((d & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/* Connected components of the accepted pairs; the root is the first node. */
static void
vg_components(VgState *st)
{
	VgResult   *out = st->out;
	uint32	   *parent = out->rep;

	for (uint32 d = 0; d < st->nnodes; d++)
		parent[d] = d;
	for (uint32 d = 0; d < st->nnodes; d++)
	{
		vg_candidates(st, d, false);
		for (uint32 k = 0; k < st->ncand; k++)
		{
			uint32		n = st->cand[k];
			float8		j;

			if (sh_group_find(parent, n) == sh_group_find(parent, d))
				continue;
			if (vg_verify(st, d, n, &j))
			{
				sh_group_union(parent, n, d);
				/* every node but a root is in an accepted pair: show one */
				if (isnan(out->jaccard[d]))
					out->jaccard[d] = j;
				if (isnan(out->jaccard[n]))
					out->jaccard[n] = j;
			}
			else
			{
				vg_note_near(st, d, n, j);
				vg_note_near(st, n, d, j);
			}
		}
		if ((d & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	sh_group_flatten(parent, st->nnodes);
}

/*
 * Read the texts of the rows that have a candidate and make the nodes: the
 * first row of each (class, text) makes a node, tokenised then; later rows
 * with the same text join it.
 */
static void
vg_make_nodes(VgState *st, const bool *involved, uint32 ninvolved)
{
	const VgInput *in = st->in;
	VgResult   *out = st->out;
	MemoryContext rowcxt = AllocSetContextCreate(CurrentMemoryContext, "simhash verified row",
												 ALLOCSET_DEFAULT_SIZES);
	HASHCTL		ctl;
	HTAB	   *nodes;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(VgNodeKey);
	ctl.entrysize = sizeof(VgNodeEntry);
	ctl.hcxt = CurrentMemoryContext;
	nodes = hash_create("simhash verified texts", Max(ninvolved, 16), &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	spill_init(&st->features, (Size) work_mem * 1024);

	for (uint32 i = 0; i < in->nrows; i++)
	{
		uint32		c = in->distinct_of[i];
		MemoryContext outer;
		text	   *doc;
		uint32		node;

		out->node_of[i] = VG_NO_NODE;
		if (!involved[c])
			continue;
		MemoryContextReset(rowcxt);
		outer = MemoryContextSwitchTo(rowcxt);
		doc = in->fetch(in->fetch_arg, i);
		if (doc != NULL)
		{
			VgNodeKey	key;
			VgNodeEntry *ent;
			bool		found;
			XXH128_hash_t h = XXH3_128bits(VARDATA_ANY(doc), VARSIZE_ANY_EXHDR(doc));

			memset(&key, 0, sizeof(key));
			key.hash_hi = h.high64;
			key.hash_lo = h.low64;
			key.cls = c;
			key.len = (uint32) VARSIZE_ANY_EXHDR(doc);
			MemoryContextSwitchTo(outer);
			ent = hash_search(nodes, &key, HASH_ENTER, &found);
			if (found)
			{
				out->node_of[i] = ent->node;
				continue;
			}
			ent->node = st->nnodes;
			st->key[st->nnodes] = key;
		}
		MemoryContextSwitchTo(outer);

		/* a new node: a text not seen in this class, or a NULL text */
		node = st->nnodes++;
		out->node_of[i] = node;
		out->first[node] = i;
		st->cls[node] = c;
		st->offset[node] = st->features.end;
		st->nfeat[node] = 0;
		st->has_text[node] = (doc != NULL);
		if (doc != NULL)
		{
			uint64	   *hashes;
			uint64		n;

			outer = MemoryContextSwitchTo(rowcxt);
			n = sh_doc_feature_set(doc, st->ruler->kind, st->ruler->size, &hashes);
			MemoryContextSwitchTo(outer);
			if (n > PG_UINT32_MAX / 2)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("a text given to %s() has %llu distinct features, more than %u",
								in->fname, (unsigned long long) n, PG_UINT32_MAX / 2)));
			spill_append(&st->features, hashes, sizeof(uint64) * n);
			st->nfeat[node] = (uint32) n;
		}
		if ((i & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	hash_destroy(nodes);
	MemoryContextDelete(rowcxt);
}

/* class -> nodes (ascending) and class -> neighbouring classes, as CSR */
static void
vg_index_classes(VgState *st)
{
	const VgInput *in = st->in;
	uint32		nd = in->ndistinct;
	uint32	   *fill;
	uint64	   *afill;

	st->cls_start = palloc_extended(sizeof(uint32) * ((Size) nd + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint32 n = 0; n < st->nnodes; n++)
		st->cls_start[st->cls[n] + 1]++;
	for (uint32 c = 0; c < nd; c++)
		st->cls_start[c + 1] += st->cls_start[c];
	st->cls_nodes = palloc_extended(sizeof(uint32) * Max(st->nnodes, 1), MCXT_ALLOC_HUGE);
	fill = palloc_extended(sizeof(uint32) * Max(nd, 1), MCXT_ALLOC_HUGE);
	memcpy(fill, st->cls_start, sizeof(uint32) * nd);
	for (uint32 n = 0; n < st->nnodes; n++)
		st->cls_nodes[fill[st->cls[n]]++] = n;
	pfree(fill);

	st->adj_start = palloc_extended(sizeof(uint64) * ((Size) nd + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 e = 0; e < in->nedges; e++)
	{
		st->adj_start[(uint32) (in->edges[e] >> 32) + 1]++;
		st->adj_start[(uint32) in->edges[e] + 1]++;
	}
	for (uint32 c = 0; c < nd; c++)
		st->adj_start[c + 1] += st->adj_start[c];
	st->adj = palloc_extended(sizeof(uint32) * Max(in->nedges * 2, 1), MCXT_ALLOC_HUGE);
	afill = palloc_extended(sizeof(uint64) * Max(nd, 1), MCXT_ALLOC_HUGE);
	memcpy(afill, st->adj_start, sizeof(uint64) * nd);
	for (uint64 e = 0; e < in->nedges; e++)
	{
		uint32		later = (uint32) (in->edges[e] >> 32);
		uint32		earlier = (uint32) in->edges[e];

		st->adj[afill[later]++] = earlier;
		st->adj[afill[earlier]++] = later;
	}
	pfree(afill);
}

/*
 * Group in->nrows rows on verified pairs. The result arrays are allocated in
 * resultcxt; the working state in the current context, which the caller
 * deletes.
 */
void
vg_group(const VgInput *in, const VgRuler *ruler, VgResult *out, MemoryContext resultcxt)
{
	VgState		st;
	uint32	   *rows_of;
	bool	   *involved;
	uint32		ninvolved = 0;
	uint32		maxnodes;

	memset(&st, 0, sizeof(st));
	st.in = in;
	st.ruler = ruler;
	st.out = out;
	memset(out, 0, sizeof(*out));

	/* a row has a candidate when its fingerprint is shared or has a neighbour */
	rows_of = palloc_extended(sizeof(uint32) * Max(in->ndistinct, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	involved = palloc_extended(sizeof(bool) * Max(in->ndistinct, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint32 i = 0; i < in->nrows; i++)
		rows_of[in->distinct_of[i]]++;
	for (uint32 c = 0; c < in->ndistinct; c++)
		involved[c] = rows_of[c] > 1;
	for (uint64 e = 0; e < in->nedges; e++)
	{
		involved[(uint32) (in->edges[e] >> 32)] = true;
		involved[(uint32) in->edges[e]] = true;
	}
	for (uint32 c = 0; c < in->ndistinct; c++)
		if (involved[c])
			ninvolved += rows_of[c];
	pfree(rows_of);
	maxnodes = Max(ninvolved, 1);

	out->node_of = MemoryContextAllocHuge(resultcxt, sizeof(uint32) * Max(in->nrows, 1));
	out->first = MemoryContextAllocHuge(resultcxt, sizeof(uint32) * maxnodes);
	st.cls = palloc_extended(sizeof(uint32) * maxnodes, MCXT_ALLOC_HUGE);
	st.offset = palloc_extended(sizeof(int64) * maxnodes, MCXT_ALLOC_HUGE);
	st.nfeat = palloc_extended(sizeof(uint32) * maxnodes, MCXT_ALLOC_HUGE);
	st.has_text = palloc_extended(sizeof(bool) * maxnodes, MCXT_ALLOC_HUGE);
	st.key = palloc_extended(sizeof(VgNodeKey) * maxnodes, MCXT_ALLOC_HUGE);

	vg_make_nodes(&st, involved, ninvolved);
	pfree(involved);
	out->nnodes = st.nnodes;

	out->rep = MemoryContextAllocHuge(resultcxt, sizeof(uint32) * maxnodes);
	out->jaccard = MemoryContextAllocHuge(resultcxt, sizeof(float8) * maxnodes);
	out->near = MemoryContextAllocHuge(resultcxt, sizeof(uint32) * maxnodes);
	out->near_jaccard = MemoryContextAllocHuge(resultcxt, sizeof(float8) * maxnodes);
	out->has_features = MemoryContextAllocHuge(resultcxt, sizeof(bool) * maxnodes);
	for (uint32 n = 0; n < st.nnodes; n++)
	{
		out->jaccard[n] = get_float8_nan();
		out->near[n] = VG_NO_NODE;
		out->near_jaccard[n] = get_float8_nan();
		out->has_features[n] = st.nfeat[n] > 0;
	}

	vg_index_classes(&st);
	st.maxcand = 64;
	st.cand = palloc(sizeof(uint32) * st.maxcand);
	st.loaded = VG_NO_NODE;
	st.cur_cap = st.other_cap = 256;
	st.cur = palloc(sizeof(uint64) * st.cur_cap);
	st.other = palloc(sizeof(uint64) * st.other_cap);
	if (in->leader)
		vg_leaders(&st);
	else
		vg_components(&st);
	spill_free(&st.features);
}
