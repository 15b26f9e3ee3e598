/*
 * window_verified.h
 *		Grouping on verified pairs (window_verified.c): the text form of the
 *		window functions simhash_leader() and simhash_component().
 */
#ifndef SIMHASH_DEDUP_VERIFY_H
#define SIMHASH_DEDUP_VERIFY_H

#include "simhash.h"

#define VG_NO_NODE PG_UINT32_MAX

/* A row's text, or NULL for SQL NULL; called in a context reset per row. */
typedef text *(*VgFetchText) (void *arg, uint32 row);

/* What verification compares: the measure of simhash_jaccard(a, b, kind, size). */
typedef struct VgRuler
{
	float8		threshold;		/* a pair is accepted at this similarity */
	ShFeatureKind kind;
	int			size;
} VgRuler;

/*
 * The rows (numbered 0 .. nrows - 1 in the window's order) and their
 * fingerprints' classes (distinct_of: equal fingerprints share a class,
 * classes numbered in order of first row), with every pair of classes within
 * the radius (edges: later << 32 | earlier).
 */
typedef struct VgInput
{
	uint32		nrows;
	const uint32 *distinct_of;
	uint32		ndistinct;
	const uint64 *edges;
	uint64		nedges;
	bool		leader;			/* leader clustering, or connected components */
	VgFetchText fetch;
	void	   *fetch_arg;
	const char *fname;			/* for messages */
} VgInput;

/*
 * The answer. Rows with equal text (and fingerprint) are one node, nodes
 * numbered in order of first row; a row that has no candidate at all is in
 * no node (node_of VG_NO_NODE) and is its own group.
 */
typedef struct VgResult
{
	uint32	   *node_of;		/* per row */
	uint32		nnodes;
	uint32	   *first;			/* per node: its first row */
	uint32	   *rep;			/* per node: the node whose first row is kept */
	float8	   *jaccard;		/* per node: similarity of the accepted pair
								 * that grouped it (NaN: none, or NULL) */
	uint32	   *near;			/* per node: the most similar candidate
								 * verification turned down, or VG_NO_NODE */
	float8	   *near_jaccard;	/* its similarity (NaN: NULL) */
	bool	   *has_features;	/* per node: its text has a feature */
	int64		verified;		/* pairs verified (for DEBUG output) */
} VgResult;

/*
 * Bytes per row this needs at most, on top of window.c's (checked against
 * maintenance_work_mem): while the nodes are made, per row its node (4) and
 * per node its first row, class, file offset, feature count, text flag and
 * key (45) and its entry in the hash table of texts (about 56); afterwards
 * the table is freed and the answer (25) and the class index (4) come. The
 * neighbour lists take 8 bytes per pair of fingerprints, as the sort of the
 * pairs does without verification.
 */
#define VG_BYTES_PER_ROW 112

extern void vg_group(const VgInput *in, const VgRuler *ruler, VgResult *out,
					 MemoryContext resultcxt);

#endif							/* SIMHASH_DEDUP_VERIFY_H */
