/*
 * ball.h
 *		The hamming_ball type (a fingerprint and a radius: the query operand
 *		of the index and of the near-duplicate constraint), and the planner
 *		estimates for radius conditions (selectivity.c). Used by the type and
 *		operators (ball.c), the planner support (rewrite.c), statistics
 *		(typanalyze.c) and the index access method (src/mih).
 */
#ifndef SIMHASH_BALL_H
#define SIMHASH_BALL_H

#include "simhash.h"

#include "nodes/pathnodes.h"

/* ---- the query: a hamming_ball (fingerprint and radius) ---- */
typedef struct HammingBall
{
	SimHash		center;
	int32		radius;
	int32		pad;			/* keeps the struct 16 bytes, zeroed */
} HammingBall;

#define DatumGetHammingBall(d)	((HammingBall *) DatumGetPointer(d))

/* selectivity.c: an operand of a ball operator or index qual, classified by type */
typedef struct ShBallOperand
{
	Node	   *expr;			/* the operand, known parameters folded */
	bool		is_ball;		/* a hamming_ball, else a simhash */
	bool		is_null;		/* a NULL constant (or a ball of NULL parts) */
	bool		center_known;	/* center holds the fingerprint or centre */
	bool		radius_known;	/* a ball's radius is a constant */
	SimHash		center;
	int			radius;			/* a ball's radius (the recommended one when
								 * not known); -1 for a simhash */
	Node	   *fp_expr;		/* the fingerprint expression to take
								 * statistics from: a simhash operand, x of
								 * simhash_ball(x, r); NULL if none */
} ShBallOperand;

extern void sh_ball_operand(PlannerInfo *root, Node *node, bool is_ball, ShBallOperand *op);

extern double hamming_within_prob(int radius);
extern double sh_within_selectivity(PlannerInfo *root, Node *var, int varRelid,
									SimHash center, int radius);
extern double sh_near_pair_selectivity(PlannerInfo *root, Node *var, int radius);

/*
 * The column statistic of near pairs, written by ANALYZE (typanalyze.c) and
 * read by the estimates (selectivity.c): a private "kind" code, chosen at
 * random in the 10000-30000 range pg_statistic.h sets aside for that.
 * stanumbers[r] is the share of pairs of distinct sampled rows within r
 * bits, r = 0..64.
 */
#define SH_STATISTIC_KIND_NEAR_PAIRS	23917
#define SH_NEAR_PAIRS_NUMBERS			(SIMHASH_BITS + 1)

#endif							/* SIMHASH_BALL_H */
