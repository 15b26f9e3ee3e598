/*
 * selectivity.c
 *		The planner's estimates for Hamming-radius conditions, shared by the
 *		ball operators' restriction and join estimators, the planner support
 *		of <~> (rewrite.c) and the index cost (mih_cost.c).
 *
 * Selectivity of "fp within r bits of q" comes from the column's statistics
 * when q is a constant: the share of the most common values and histogram
 * bounds (a sample of the column) within r bits; it never goes below the
 * probability that two independent random fingerprints are within r bits.
 * The operands of the ball operators are classified here, once, by type.
 * Join and self-join estimates read the share of near pairs that ANALYZE
 * measured (typanalyze.c writes it).
 */
#include "simhash.h"

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "type/ball.h"
#include "binomial.h"

/*
 * P(distance <= radius) for two independent uniform 64-bit fingerprints.
 * At radius 61 to 63 the sum rounds to just above 2^64 in double precision
 * (1.0000000000000004), which PostgreSQL rejects as a selectivity with an
 * internal error: never more than 1.
 */
double
hamming_within_prob(int radius)
{
	if (radius < 0)
		return 0;
	if (radius >= SIMHASH_BITS)
		return 1;
	return Min(1.0, sh_binomial_sum(SIMHASH_BITS, radius) / 18446744073709551616.0);	/* 2^64 */
}

/*
 * Selectivity of "var within radius bits of center" from the column's
 * statistics; the binomial floor when there are none.
 */
double
sh_within_selectivity(PlannerInfo *root, Node *var, int varRelid,
					   SimHash center, int radius)
{
	VariableStatData vardata;
	double		floor = hamming_within_prob(radius);
	double		sel = floor;

	if (radius < 0)
		return 0;
	if (radius >= SIMHASH_BITS)
		return 1;
	examine_variable(root, var, varRelid, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple))
	{
		Form_pg_statistic stats = (Form_pg_statistic) GETSTRUCT(vardata.statsTuple);
		AttStatsSlot mcv;
		AttStatsSlot hist;
		double		mcvfrac = 0;
		double		mcvmatch = 0;
		double		histmatch = -1;

		if (get_attstatsslot(&mcv, vardata.statsTuple, STATISTIC_KIND_MCV,
							 InvalidOid, ATTSTATSSLOT_VALUES | ATTSTATSSLOT_NUMBERS))
		{
			for (int i = 0; i < mcv.nvalues; i++)
			{
				mcvfrac += mcv.numbers[i];
				if (simhash_hamming(DatumGetSimHash(mcv.values[i]), center) <= radius)
					mcvmatch += mcv.numbers[i];
			}
			free_attstatsslot(&mcv);
		}
		if (get_attstatsslot(&hist, vardata.statsTuple, STATISTIC_KIND_HISTOGRAM,
							 InvalidOid, ATTSTATSSLOT_VALUES))
		{
			int			n = 0;

			for (int i = 0; i < hist.nvalues; i++)
				if (simhash_hamming(DatumGetSimHash(hist.values[i]), center) <= radius)
					n++;
			if (hist.nvalues > 0)
				histmatch = (double) n / hist.nvalues;
			free_attstatsslot(&hist);
		}
		sel = mcvmatch;
		if (histmatch >= 0)
			sel += histmatch * Max(0.0, 1.0 - mcvfrac - stats->stanullfrac);
		sel = Max(sel, floor);
	}
	ReleaseVariableStats(vardata);
	CLAMP_PROBABILITY(sel);
	return sel;
}

/*
 * An operand of a ball operator (<@, @>, &&) or of an index qual, as the
 * planner sees it. Operands are classified here, once, by their declared
 * type and never by their position or by which one is a constant: a
 * constant may stand on either side of every operator, and a simhash
 * constant is a by-value int8 that must never be read as a ball (reading
 * '...'::simhash <@ simhash_ball(fp, 3)'s constant as a ball crashed the
 * server at planning).
 *
 * is_ball: the operand is a hamming_ball (else a simhash); the caller says
 * which by the operator's declared input type. For a ball: simhash_ball(x,
 * r) and simhash_ball_any(x, r) (any function of a simhash and an int4 that
 * returns a ball) give the centre x and the radius r when they are
 * constants once the parameters known to the plan are put in (a custom
 * plan's); a constant ball gives both. The radius is otherwise the one we
 * recommend (a generic plan), and there is no fingerprint expression for
 * a ball column.
 */
void
sh_ball_operand(PlannerInfo *root, Node *node, bool is_ball, ShBallOperand *op)
{
	memset(op, 0, sizeof(*op));
	op->expr = root ? estimate_expression_value(root, node) : node;
	op->is_ball = is_ball;
	op->radius = is_ball ? SH_RECOMMENDED_RADIUS : -1;
	if (IsA(op->expr, Const))
	{
		Const	   *c = (Const *) op->expr;

		op->is_null = c->constisnull;
		if (c->constisnull)
			return;
		op->center_known = true;
		op->radius_known = is_ball;
		if (is_ball)
		{
			op->center = DatumGetHammingBall(c->constvalue)->center;
			op->radius = DatumGetHammingBall(c->constvalue)->radius;
		}
		else
			op->center = DatumGetSimHash(c->constvalue);
		return;
	}
	if (!is_ball)
	{
		op->fp_expr = op->expr;
		return;
	}
	if (IsA(op->expr, FuncExpr) && list_length(((FuncExpr *) op->expr)->args) == 2)
	{
		FuncExpr   *f = (FuncExpr *) op->expr;
		Node	   *x = linitial(f->args);
		Node	   *r = lsecond(f->args);

		/* a simhash (8 bytes, by value) and an int4: hamming_ball's signature */
		if (exprType(r) != INT4OID || get_typlen(exprType(x)) != sizeof(SimHash) ||
			!get_typbyval(exprType(x)))
			return;
		if (root)
		{
			x = estimate_expression_value(root, x);
			r = estimate_expression_value(root, r);
		}
		if (IsA(r, Const))
		{
			op->radius_known = true;
			op->radius = ((Const *) r)->constisnull ? -1 : DatumGetInt32(((Const *) r)->constvalue);
			op->is_null = ((Const *) r)->constisnull;
		}
		if (IsA(x, Const))
		{
			op->is_null |= ((Const *) x)->constisnull;
			op->center_known = !((Const *) x)->constisnull;
			if (op->center_known)
				op->center = DatumGetSimHash(((Const *) x)->constvalue);
		}
		else
			op->fp_expr = x;
	}
}

/*
 * The operands of ball operator opno, classified by its declared input
 * types (a hamming_ball is 16 bytes, a simhash 8).
 */
static void
ball_operator_operands(PlannerInfo *root, Oid opno, List *args,
					   ShBallOperand *left, ShBallOperand *right)
{
	Oid			ltype;
	Oid			rtype;

	op_input_types(opno, &ltype, &rtype);
	sh_ball_operand(root, linitial(args), get_typlen(ltype) == sizeof(HammingBall), left);
	sh_ball_operand(root, lsecond(args), get_typlen(rtype) == sizeof(HammingBall), right);
}

/*
 * The radius a pair of operands compares within: a ball's radius for
 * simhash <@ ball; for ball && ball, the smaller radius.
 */
static int
operands_radius(const ShBallOperand *a, const ShBallOperand *b)
{
	if (a->is_ball && b->is_ball)
		return Min(a->radius, b->radius);
	return a->is_ball ? a->radius : b->radius;
}

/* Is the operand centred on a fingerprint of a row (an expression of columns)? */
static bool
row_centred(const ShBallOperand *op)
{
	return op->fp_expr != NULL && contain_var_clause(op->fp_expr);
}

/*
 * Restriction selectivity of fp <@ ball, ball @> fp and ball && ball: from
 * the column's statistics when one side's centre is a constant and the
 * other is centred on a row's fingerprint; when both are centred on rows
 * (the inner side of a self-join), the share of near pairs; when a centre
 * is unknown at plan time (a parameter of a generic plan, a ball column),
 * the share of uniform fingerprints within the radius.
 */
PG_FUNCTION_INFO_V1(hamming_ball_sel);
Datum
hamming_ball_sel(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			opno = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	int			varRelid = PG_GETARG_INT32(3);
	ShBallOperand a;
	ShBallOperand b;
	int			radius;

	if (list_length(args) != 2)
		PG_RETURN_FLOAT8(hamming_within_prob(SH_RECOMMENDED_RADIUS));
	ball_operator_operands(root, opno, args, &a, &b);
	if (a.is_null || b.is_null)
		PG_RETURN_FLOAT8(0.0);
	radius = operands_radius(&a, &b);
	if (a.center_known && b.center_known)
		PG_RETURN_FLOAT8(simhash_hamming(a.center, b.center) <= radius ? 1.0 : 0.0);
	if (a.center_known && row_centred(&b))
		PG_RETURN_FLOAT8(sh_within_selectivity(root, b.fp_expr, varRelid, a.center, radius));
	if (b.center_known && row_centred(&a))
		PG_RETURN_FLOAT8(sh_within_selectivity(root, a.fp_expr, varRelid, b.center, radius));
	if (row_centred(&a) && row_centred(&b))
		PG_RETURN_FLOAT8(sh_near_pair_selectivity(root, a.is_ball ? b.fp_expr : a.fp_expr,
												  radius));
	/* a centre unknown at plan time (a parameter, a ball column) */
	PG_RETURN_FLOAT8(radius < 0 ? 0.0 : hamming_within_prob(radius));
}

/*
 * Join selectivity of fp <@ simhash_ball(other.fp, r) (and of @> and &&):
 * the share of pairs of rows within r, from the statistics of a side that is
 * centred on a fingerprint expression.
 */
PG_FUNCTION_INFO_V1(hamming_ball_joinsel);
Datum
hamming_ball_joinsel(PG_FUNCTION_ARGS)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			opno = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	ShBallOperand a;
	ShBallOperand b;
	int			radius;

	if (list_length(args) != 2)
		PG_RETURN_FLOAT8(hamming_within_prob(SH_RECOMMENDED_RADIUS));
	ball_operator_operands(root, opno, args, &a, &b);
	if (a.is_null || b.is_null)
		PG_RETURN_FLOAT8(0.0);
	radius = operands_radius(&a, &b);
	if (row_centred(&a) || row_centred(&b))
		PG_RETURN_FLOAT8(sh_near_pair_selectivity(root, row_centred(&a) ? a.fp_expr : b.fp_expr,
												  radius));
	PG_RETURN_FLOAT8(radius < 0 ? 0.0 : hamming_within_prob(radius));
}

/*
 * The share of pairs of rows of var whose fingerprints are within radius
 * bits (NULLs never are), from the column's statistics; returns false when
 * there are none (no ANALYZE since 0.2.0, or not a plain column).
 */
static bool
sh_near_pair_fraction(PlannerInfo *root, Node *var, int radius, double *fraction)
{
	VariableStatData vardata;
	AttStatsSlot sslot;
	bool		found = false;

	examine_variable(root, var, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple) &&
		get_attstatsslot(&sslot, vardata.statsTuple, SH_STATISTIC_KIND_NEAR_PAIRS,
						 InvalidOid, ATTSTATSSLOT_NUMBERS))
	{
		if (sslot.nnumbers == SH_NEAR_PAIRS_NUMBERS)
		{
			double		nullfrac = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac;
			int			r = Max(0, Min(radius, SIMHASH_BITS));

			*fraction = radius < 0 ? 0.0 :
				sslot.numbers[r] * (1.0 - nullfrac) * (1.0 - nullfrac);
			found = true;
		}
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vardata);
	return found;
}

/*
 * The chance that a row of var is within radius of a fingerprint taken from
 * another row like it (a probe of the self-join, or the join clause itself):
 * the share of pairs within radius that ANALYZE measured, never below the
 * chance for random fingerprints (which is all there is without the
 * statistic).
 */
double
sh_near_pair_selectivity(PlannerInfo *root, Node *var, int radius)
{
	double		fraction;
	double		floor = hamming_within_prob(radius);

	if (radius < 0)
		return 0.0;
	if (sh_near_pair_fraction(root, var, radius, &fraction))
		return Max(fraction, floor);
	return floor;
}
