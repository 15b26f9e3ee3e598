/*
 * ball.c
 *		The hamming_ball type: a fingerprint and a radius, the query operand
 *		of "fp <@ hamming_ball(q, r)", which is what the simhash index
 *		answers and what the planner turns "fp <~> q <= r" into.
 *
 * Text form: 16 hex digits, a slash and the radius, e.g. 0123456789abcdef/3,
 * so that EXPLAIN shows a recognisable Index Cond.
 */
#include "simhash.h"

#include <ctype.h>

#include "catalog/pg_type.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "optimizer/optimizer.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "hexfmt.h"
#include "mih/mih.h"

/*
 * A radius a user gives (hamming_ball(), the text and binary forms) is a
 * number of bits, 0..64, like every radius of the API. The planner's own
 * operand for hamming_within(fp, q, r) takes any r (hamming_ball_any):
 * below 0 matches nothing, 64 and more everything.
 */
static void
check_radius(int64 radius, int sqlstate)
{
	if (radius < 0 || radius > SIMHASH_BITS)
		ereport(ERROR,
				(errcode(sqlstate),
				 errmsg("hamming_ball radius must be between 0 and %d bits, got " INT64_FORMAT,
						SIMHASH_BITS, radius),
				 errhint("For \"within any radius\" semantics (below 0 nothing, above 64 everything) use hamming_within(fp, q, r).")));
}

static HammingBall *
make_ball(SimHash center, int32 radius)
{
	HammingBall *ball = palloc0(sizeof(HammingBall));

	ball->center = center;
	ball->radius = radius;
	return ball;
}

PG_FUNCTION_INFO_V1(hamming_ball_in);
Datum
hamming_ball_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	char	   *slash = strchr(str, '/');
	char		hex[SH_HEX_DIGITS + 3];
	uint64_t	center;
	char	   *end;
	long		radius;

	if (slash == NULL || slash - str > (long) sizeof(hex) - 1)
		goto bad;
	memcpy(hex, str, slash - str);
	hex[slash - str] = '\0';
	if (!sh_parse_hex(hex, &center))
		goto bad;
	/* an optional minus sign and digits, nothing else (strtol allows more) */
	if (!(isdigit((unsigned char) slash[1]) ||
		  (slash[1] == '-' && isdigit((unsigned char) slash[2]))))
		goto bad;
	errno = 0;
	radius = strtol(slash + 1, &end, 10);
	if (end == slash + 1 || *end != '\0' || errno != 0 ||
		radius < PG_INT32_MIN || radius > PG_INT32_MAX)
		goto bad;
	check_radius(radius, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	PG_RETURN_POINTER(make_ball(center, (int32) radius));

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type hamming_ball: \"%s\"", str),
			 errdetail("A hamming_ball is a simhash (16 hexadecimal digits), a slash and an integer radius, e.g. 0123456789abcdef/3.")));
	PG_RETURN_NULL();
}

PG_FUNCTION_INFO_V1(hamming_ball_out);
Datum
hamming_ball_out(PG_FUNCTION_ARGS)
{
	HammingBall *ball = DatumGetHammingBall(PG_GETARG_DATUM(0));
	char		hex[SH_HEX_DIGITS + 1];

	sh_format_hex(ball->center, hex);
	PG_RETURN_CSTRING(psprintf("%s/%d", hex, ball->radius));
}

PG_FUNCTION_INFO_V1(hamming_ball_recv);
Datum
hamming_ball_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	SimHash		center = (SimHash) pq_getmsgint64(buf);
	int32		radius = pq_getmsgint(buf, 4);

	check_radius(radius, ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
	PG_RETURN_POINTER(make_ball(center, radius));
}

PG_FUNCTION_INFO_V1(hamming_ball_send);
Datum
hamming_ball_send(PG_FUNCTION_ARGS)
{
	HammingBall *ball = DatumGetHammingBall(PG_GETARG_DATUM(0));
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) ball->center);
	pq_sendint32(&buf, ball->radius);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * hamming_ball(q, r) from extension 0.2.0 on: r must be 0..64.
 */
PG_FUNCTION_INFO_V1(hamming_ball_make_checked);
Datum
hamming_ball_make_checked(PG_FUNCTION_ARGS)
{
	check_radius(PG_GETARG_INT32(1), ERRCODE_INVALID_PARAMETER_VALUE);
	PG_RETURN_POINTER(make_ball(PG_GETARG_SIMHASH(0), PG_GETARG_INT32(1)));
}

/*
 * Any radius: hamming_ball_any(q, r), which the planner builds for
 * hamming_within(fp, q, r) when r is not a constant in 0..64 (and
 * hamming_ball(q, r) of extension 0.1.0, which is bound here).
 */
PG_FUNCTION_INFO_V1(hamming_ball_make);
Datum
hamming_ball_make(PG_FUNCTION_ARGS)
{
	PG_RETURN_POINTER(make_ball(PG_GETARG_SIMHASH(0), PG_GETARG_INT32(1)));
}

PG_FUNCTION_INFO_V1(hamming_ball_contains);
Datum
hamming_ball_contains(PG_FUNCTION_ARGS)
{
	SimHash		fp = PG_GETARG_SIMHASH(0);
	HammingBall *ball = DatumGetHammingBall(PG_GETARG_DATUM(1));

	PG_RETURN_BOOL(simhash_hamming(fp, ball->center) <= ball->radius);
}

/*
 * a && b: each ball holds the other's centre, that is the centres are within
 * the smaller radius of each other. Symmetric, as EXCLUDE needs; with equal
 * radii r (hamming_ball(fp, r) in a constraint) it is "within r bits".
 */
PG_FUNCTION_INFO_V1(hamming_ball_near);
Datum
hamming_ball_near(PG_FUNCTION_ARGS)
{
	HammingBall *a = DatumGetHammingBall(PG_GETARG_DATUM(0));
	HammingBall *b = DatumGetHammingBall(PG_GETARG_DATUM(1));

	PG_RETURN_BOOL(simhash_hamming(a->center, b->center) <= Min(a->radius, b->radius));
}

PG_FUNCTION_INFO_V1(hamming_ball_contained);
Datum
hamming_ball_contained(PG_FUNCTION_ARGS)
{
	HammingBall *ball = DatumGetHammingBall(PG_GETARG_DATUM(0));
	SimHash		fp = PG_GETARG_SIMHASH(1);

	PG_RETURN_BOOL(simhash_hamming(fp, ball->center) <= ball->radius);
}

/*
 * An operand of a ball operator (<@, @>, &&) or of an index qual, as the
 * planner sees it. Operands are classified here, once, by their declared
 * type and never by their position or by which one is a constant: a
 * constant may stand on either side of every operator, and a simhash
 * constant is a by-value int8 that must never be read as a ball (reading
 * '...'::simhash <@ hamming_ball(fp, 3)'s constant as a ball crashed the
 * server, issue 22).
 *
 * is_ball: the operand is a hamming_ball (else a simhash); the caller says
 * which by the operator's declared input type. For a ball: hamming_ball(x,
 * r) and hamming_ball_any(x, r) (any function of a simhash and an int4 that
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
		PG_RETURN_FLOAT8(mih_within_selectivity(root, b.fp_expr, varRelid, a.center, radius));
	if (b.center_known && row_centred(&a))
		PG_RETURN_FLOAT8(mih_within_selectivity(root, a.fp_expr, varRelid, b.center, radius));
	if (row_centred(&a) && row_centred(&b))
		PG_RETURN_FLOAT8(sh_near_pair_selectivity(root, a.is_ball ? b.fp_expr : a.fp_expr,
												  radius));
	/* a centre unknown at plan time (a parameter, a ball column) */
	PG_RETURN_FLOAT8(radius < 0 ? 0.0 : hamming_within_prob(radius));
}

/*
 * Join selectivity of fp <@ hamming_ball(other.fp, r) (and of @> and &&):
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
