/*
 * mih_cost.c
 *		Cost estimates for radius and nearest-neighbour searches.
 *
 * Cost follows the structure: the pending list read whole, then for each
 * run either the probes of its m tables (one descent per value within s_j
 * bits of the query's block j, s_j from mih_table_radii, and the leaf
 * entries holding those values) or table 0 read whole, whichever
 * mih_search_cost finds cheaper: the scan makes the same choice from the
 * same figures.
 * Selectivity comes from src/planner/selectivity.c.
 */
#include "mih.h"
#include "binomial.h"

#include <float.h>
#include <math.h>

#include "access/relation.h"
#include "catalog/pg_statistic.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

/* The radius of an index qual "fp <@ ball" when it is known at plan time. */
static int
qual_radius(Node *ballarg, bool *known)
{
	ShBallOperand op;

	*known = false;
	/* only a hamming_ball operand has a radius (a broken opclass may differ) */
	if (get_typlen(exprType(ballarg)) != sizeof(HammingBall))
		return 3;
	sh_ball_operand(NULL, ballarg, true, &op);
	if (!op.radius_known || op.radius < 0)
		return 3;				/* a typical near-duplicate radius */
	*known = true;
	return op.radius;
}

/*
 * Costs of an ordered scan (ORDER BY fp <-> q, mih_knn.c). Its first rows
 * come once the levels up to the nearest rows' distance are probed: the
 * distance d at which ntuples uniform fingerprints expect one within d bits
 * of q (or the radius of the scan's condition, if smaller), which costs what
 * a radius-d search costs. Reading every row reads table 0 whole. LIMIT k
 * then costs the startup plus k / ntuples of the rest, so the planner takes
 * the index for small k and a sequential scan and sort when k is a large
 * share of the table. An index built before NULL entries existed cannot
 * serve ordered scans (they error out): it is costed out of the way.
 */
static void
ordered_costs(const MihMetaPageData *meta, double ntuples, int radius,
			  double random_page_cost, double seq_page_cost,
			  Cost *startup, Cost *total, double *pages_out)
{
	int			d = 0;
	MihSearchCost c;
	Cost		pending = meta->pending_pages * random_page_cost +
		meta->pending_entries * cpu_operator_cost;

	if (meta->layout != MIH_META_LAYOUT_XID || !(meta->flags & MIH_META_INDEXES_NULLS))
	{
		*startup = *total = disable_cost;
		*pages_out = 1;
		return;
	}
	while (d < SIMHASH_BITS && ntuples * hamming_within_prob(d) < 1)
		d++;
	d = Min(d, Max(radius, 0));
	mih_search_cost(meta, d, random_page_cost, seq_page_cost, &c);
	*startup = pending + (c.fullscan ? c.full_cost : Min(c.probe_cost, c.full_cost));
	if (radius < SIMHASH_BITS)
	{
		/* a radius condition bounds the search: what a search of it reads */
		mih_search_cost(meta, radius, random_page_cost, seq_page_cost, &c);
		*total = Max(*startup, pending + (c.fullscan ? c.full_cost : c.probe_cost));
		*pages_out = Max((c.fullscan ? c.full_pages : c.probe_pages) + meta->pending_pages, 1);
		return;
	}
	/*
	 * The rest: at worst table 0 whole, each entry's m block distances and
	 * full distance computed and the entry put in its bucket.
	 */
	*total = *startup + c.full_pages * seq_page_cost +
		ntuples * (meta->nblocks + 2) * cpu_operator_cost;
	*pages_out = Max(c.full_pages + meta->pending_pages, 1);
}

void
mih_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				 Cost *indexStartupCost, Cost *indexTotalCost,
				 Selectivity *indexSelectivity, double *indexCorrelation,
				 double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	Relation	rel;
	Buffer		metabuf;
	MihMetaPageData meta;
	double		ntuples = Max(index->tuples, 1);
	int			radius = SIMHASH_BITS;
	double		pages = 0;
	double		spc_random_page_cost;
	double		spc_seq_page_cost;
	ListCell   *lc;

	/*
	 * With no radius condition the index is only for ORDER BY fp <-> q. A
	 * path with neither would be a whole-index scan, which the planner
	 * considers for index-only scans needing no column (count(*)); this
	 * index returns no tuples to such a scan, so it must never be chosen.
	 */
	if (path->indexclauses == NIL && path->indexorderbys == NIL)
	{
		*indexStartupCost = *indexTotalCost = DBL_MAX;
		*indexSelectivity = 1;
		*indexCorrelation = 0;
		*indexPages = 1;
		return;
	}

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);

	/* the smallest radius among the index quals is the one probed */
	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);
			Expr	   *clause = rinfo->clause;
			bool		known;

			if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
				radius = Min(radius, qual_radius(lsecond(((OpExpr *) clause)->args), &known));
		}
	}

	rel = relation_open(index->indexoid, AccessShareLock);
	metabuf = ReadBuffer(rel, MIH_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	memcpy(&meta, MihPageGetMeta(BufferGetPage(metabuf)), sizeof(meta));
	UnlockReleaseBuffer(metabuf);
	relation_close(rel, AccessShareLock);

	if (path->indexorderbys != NIL)
	{
		get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost,
								  &spc_seq_page_cost);
		ordered_costs(&meta, ntuples, radius, spc_random_page_cost, spc_seq_page_cost,
					  indexStartupCost, indexTotalCost, indexPages);
		*indexTotalCost += costs.numIndexTuples * cpu_index_tuple_cost;
		*indexSelectivity = costs.indexSelectivity;
		*indexCorrelation = 0;
		return;
	}

	get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost,
							  &spc_seq_page_cost);
	/* the pending list, read whole, then the runs: as the scan will read them */
	pages = meta.pending_pages;
	*indexStartupCost = 0;
	*indexTotalCost = meta.pending_pages * spc_random_page_cost +
		meta.pending_entries * cpu_operator_cost +
		costs.numIndexTuples * cpu_index_tuple_cost;
	if (radius >= 0)
	{
		MihSearchCost c;

		mih_search_cost(&meta, radius, spc_random_page_cost, spc_seq_page_cost, &c);
		*indexTotalCost += c.fullscan ? c.full_cost : c.probe_cost;
		pages += c.fullscan ? c.full_pages : c.probe_pages;
	}
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0;
	*indexPages = Max(pages, 1);
}
