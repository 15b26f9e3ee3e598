/*
 * rewrite.c
 *		Planner support: rewrite radius comparisons on <~> into
 *		simhash_hamming_within(), which an index can answer.
 *
 * "fp <~> q <= 3" parses as "(fp <~> q) <= 3"; the index key is buried in
 * the left argument of a comparison, where the planner never looks for index
 * conditions. The comparison operators between the simhash_distance domain
 * and int2/int4/int8 therefore carry these support functions, which answer
 * SupportRequestSimplify (also during generic planning) by replacing the
 * comparison with a call of simhash_hamming_within(fp, q, radius): a boolean
 * function with the key as a direct argument. See doc/reference.md, "Why isn't my
 * query using an index?".
 *
 * The distance function behind <~> and <-> answers SupportRequestSimplify
 * too, by becoming ((a <-> b::simhash_order)::simhash_distance): the same
 * number, computed by the index's ordering operator <-> (simhash,
 * simhash_order), which returns plain int4. An ORDER BY on it then reaches
 * the index: the planner strips the domain's RelabelType when it files the
 * sort key under int4's btree family, and finds the bare ordering operator
 * the index orders by (a sort key of a domain type never matches an index
 * ordering operator, which is why the distance cannot simply be one
 * operator). A comparison on it is rewritten into simhash_hamming_within() as
 * before, so both spellings use the index in WHERE and in ORDER BY.
 */
#include "simhash.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/selfuncs.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "mih/mih.h"

typedef enum ShCmpKind
{
	SH_CMP_LT,
	SH_CMP_LE,
	SH_CMP_EQ,
	SH_CMP_NE,
	SH_CMP_GE,
	SH_CMP_GT
} ShCmpKind;

/* OIDs of the extension's objects the rewrite builds calls of. */
typedef struct ShCatalog
{
	Oid			simhash_type;
	Oid			distance_fn;	/* the function of <~> (simhash, simhash) */
	Oid			distance2_fn;	/* the function of <-> (simhash, simhash), or 0 */
	Oid			order_type;		/* the simhash_order domain, or 0 before 0.4.0 */
	Oid			order_op;		/* <-> (simhash, simhash_order), or 0 */
	Oid			order_fn;		/* its function */
	Oid			within_fn;		/* simhash_hamming_within(simhash, simhash, int4) */
	Oid			radius_le_fn;	/* simhash_hamming_radius_le(int8) */
	Oid			radius_lt_fn;	/* simhash_hamming_radius_lt(int8) */
} ShCatalog;

static Oid
lookup_function(const char *nspname, const char *name, int nargs, Oid *argtypes)
{
	List	   *qualname = list_make2(makeString(pstrdup(nspname)),
									  makeString(pstrdup(name)));

	return LookupFuncName(qualname, nargs, argtypes, true);
}

/* The function of operator nspname.oprname(left, right), and its OID in *opno. */
static Oid
lookup_operator_fn(const char *nspname, const char *oprname, Oid left, Oid right, Oid *opno)
{
	List	   *qualname = list_make2(makeString(pstrdup(nspname)),
									  makeString(pstrdup(oprname)));
	Oid			op = OpernameGetOprid(qualname, left, right);

	if (opno)
		*opno = op;
	return OidIsValid(op) ? get_opcode(op) : InvalidOid;
}

/*
 * A function by its name since extension 0.4.0, or by its name before (the
 * library serves every database of the cluster, whatever its extension
 * version; simhash--0.3.0--0.4.0.sql renames them).
 */
static Oid
lookup_renamed(const char *nspname, const char *name, const char *oldname,
			   int nargs, Oid *argtypes)
{
	Oid			fn = lookup_function(nspname, name, nargs, argtypes);

	if (!OidIsValid(fn))
		fn = lookup_function(nspname, oldname, nargs, argtypes);
	return fn;
}

/*
 * Find the objects in the schema the comparison function lives in (the
 * extension's schema). Looked up by name every time rather than cached:
 * this runs once per comparison per planning, and a cache would go stale
 * when the extension is dropped and created again.
 */
static bool
lookup_catalog(Oid cmpfn, ShCatalog *cat)
{
	Oid			nsp = get_func_namespace(cmpfn);
	char	   *nspname = get_namespace_name(nsp);
	Oid			args[3];

	if (nspname == NULL)
		return false;
	cat->simhash_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										CStringGetDatum("simhash"),
										ObjectIdGetDatum(nsp));
	if (!OidIsValid(cat->simhash_type))
		return false;
	args[0] = args[1] = cat->simhash_type;
	args[2] = INT4OID;
	/* the distance functions by their operators, whatever their names */
	cat->distance_fn = lookup_operator_fn(nspname, "<~>", cat->simhash_type,
										  cat->simhash_type, NULL);
	cat->order_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
									  CStringGetDatum("simhash_order"),
									  ObjectIdGetDatum(nsp));
	cat->distance2_fn = cat->order_fn = InvalidOid;
	cat->order_op = InvalidOid;
	if (OidIsValid(cat->order_type))
	{
		cat->distance2_fn = lookup_operator_fn(nspname, "<->", cat->simhash_type,
											   cat->simhash_type, NULL);
		cat->order_fn = lookup_operator_fn(nspname, "<->", cat->simhash_type,
										   cat->order_type, &cat->order_op);
	}
	cat->within_fn = lookup_renamed(nspname, "simhash_hamming_within",
									"hamming_within", 3, args);
	args[0] = INT8OID;
	cat->radius_le_fn = lookup_renamed(nspname, "simhash_hamming_radius_le",
									   "hamming_radius_le", 1, args);
	cat->radius_lt_fn = lookup_renamed(nspname, "simhash_hamming_radius_lt",
									   "hamming_radius_lt", 1, args);
	return OidIsValid(cat->distance_fn) && OidIsValid(cat->within_fn) &&
		OidIsValid(cat->radius_le_fn) && OidIsValid(cat->radius_lt_fn);
}

/* Strip the RelabelTypes of a node (a domain's, or an implicit cast's). */
static Node *
strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

/* Is funcid one of the distance functions (of <~>, <->, the ordering <->)? */
static bool
is_distance_fn(Oid funcid, const ShCatalog *cat)
{
	return OidIsValid(funcid) &&
		(funcid == cat->distance_fn || funcid == cat->distance2_fn ||
		 funcid == cat->order_fn);
}

/*
 * Is node a Hamming distance between two fingerprints: a call of a distance
 * function (as an operator or by name), or what simplify_distance made of
 * one? Return its two arguments, as simhash (a simhash_order's RelabelType
 * taken off).
 */
static bool
is_distance_call(Node *node, const ShCatalog *cat, List **args)
{
	List	   *found = NIL;

	node = strip_relabel(node);
	if (IsA(node, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) node;

		set_opfuncid(op);
		if (is_distance_fn(op->opfuncid, cat))
			found = op->args;
	}
	else if (IsA(node, FuncExpr))
	{
		FuncExpr   *fn = (FuncExpr *) node;

		if (is_distance_fn(fn->funcid, cat))
			found = fn->args;
	}
	if (list_length(found) != 2)
		return false;
	*args = list_make2(strip_relabel(linitial(found)), strip_relabel(lsecond(found)));
	return true;
}

static ShCmpKind
commute(ShCmpKind kind)
{
	switch (kind)
	{
		case SH_CMP_LT:
			return SH_CMP_GT;
		case SH_CMP_LE:
			return SH_CMP_GE;
		case SH_CMP_GE:
			return SH_CMP_LE;
		case SH_CMP_GT:
			return SH_CMP_LT;
		default:
			return kind;
	}
}

/*
 * The int4 radius expression for "distance <= bound" (strict_less false) or
 * "distance < bound" (true). A constant bound is folded here; otherwise the
 * bound goes through hamming_radius_le/lt(int8), which clamp it (and are
 * strict, so a NULL bound still yields NULL). *isnull is set for a NULL
 * constant bound.
 */
static Node *
make_radius(Node *bound, bool strict_less, const ShCatalog *cat, bool *isnull)
{
	Oid			btype = getBaseType(exprType(bound));

	*isnull = false;
	if (IsA(bound, Const))
	{
		Const	   *c = (Const *) bound;
		int64		v;

		if (c->constisnull)
		{
			*isnull = true;
			return NULL;
		}
		if (btype == INT2OID)
			v = DatumGetInt16(c->constvalue);
		else if (btype == INT4OID)
			v = DatumGetInt32(c->constvalue);
		else
			v = DatumGetInt64(c->constvalue);
		return (Node *) makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
								  Int32GetDatum(simhash_radius_from_bound(v, strict_less)),
								  false, true);
	}

	if (btype == INT4OID && exprType(bound) != INT4OID)
		bound = (Node *) makeRelabelType((Expr *) bound, INT4OID, -1,
										 InvalidOid, COERCE_IMPLICIT_CAST);
	/* simhash_hamming_within() handles any int4 radius, so "<= int4" needs no clamp */
	if (btype == INT4OID && !strict_less)
		return bound;
	if (btype == INT2OID)
		bound = (Node *) makeFuncExpr(F_INT8_INT2, INT8OID, list_make1(bound),
									  InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
	else if (btype == INT4OID)
		bound = (Node *) makeFuncExpr(F_INT8_INT4, INT8OID, list_make1(bound),
									  InvalidOid, InvalidOid, COERCE_IMPLICIT_CAST);
	return (Node *) makeFuncExpr(strict_less ? cat->radius_lt_fn : cat->radius_le_fn,
								 INT4OID, list_make1(bound),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

static Node *
make_within(List *distargs, Node *radius, const ShCatalog *cat)
{
	return (Node *) makeFuncExpr(cat->within_fn, BOOLOID,
								 list_make3(linitial(distargs), lsecond(distargs), radius),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

static Node *
simplify_comparison(SupportRequestSimplify *req, ShCmpKind kind)
{
	FuncExpr   *cmp = req->fcall;
	ShCatalog	cat;
	List	   *distargs;
	Node	   *bound;
	Node	   *le = NULL;
	Node	   *lt = NULL;
	bool		le_null = false;
	bool		lt_null = false;

	if (list_length(cmp->args) != 2 || !lookup_catalog(cmp->funcid, &cat))
		return NULL;

	if (is_distance_call(linitial(cmp->args), &cat, &distargs))
		bound = lsecond(cmp->args);
	else if (is_distance_call(lsecond(cmp->args), &cat, &distargs))
	{
		bound = linitial(cmp->args);
		kind = commute(kind);
	}
	else
		return NULL;			/* e.g. a stored distance column: leave it */

	/*
	 * = and <> need two within calls, which evaluates the fingerprints and
	 * the bound twice: only do that when it cannot change the meaning.
	 */
	if ((kind == SH_CMP_EQ || kind == SH_CMP_NE) &&
		(contain_volatile_functions((Node *) cmp->args) ||
		 contain_subplans((Node *) cmp->args)))
		return NULL;

	if (kind != SH_CMP_LT && kind != SH_CMP_GE)
		le = make_radius(bound, false, &cat, &le_null);
	if (kind != SH_CMP_LE && kind != SH_CMP_GT)
		lt = make_radius(bound, true, &cat, &lt_null);
	if (le_null || lt_null)
		return (Node *) makeBoolConst(false, true);		/* NULL bound */

	switch (kind)
	{
		case SH_CMP_LE:			/* d <= k */
			return make_within(distargs, le, &cat);
		case SH_CMP_LT:			/* d <= k - 1 */
			return make_within(distargs, lt, &cat);
		case SH_CMP_GT:			/* NOT d <= k */
			return (Node *) makeBoolExpr(NOT_EXPR,
										 list_make1(make_within(distargs, le, &cat)), -1);
		case SH_CMP_GE:			/* NOT d <= k - 1 */
			return (Node *) makeBoolExpr(NOT_EXPR,
										 list_make1(make_within(distargs, lt, &cat)), -1);
		case SH_CMP_EQ:			/* d <= k AND NOT d <= k - 1 */
			return (Node *) makeBoolExpr(AND_EXPR,
										 list_make2(make_within(distargs, le, &cat),
													makeBoolExpr(NOT_EXPR,
																 list_make1(make_within(copyObject(distargs), lt, &cat)),
																 -1)),
										 -1);
		case SH_CMP_NE:			/* NOT d <= k OR d <= k - 1 */
			return (Node *) makeBoolExpr(OR_EXPR,
										 list_make2(makeBoolExpr(NOT_EXPR,
																 list_make1(make_within(distargs, le, &cat)),
																 -1),
													make_within(copyObject(distargs), lt, &cat)),
										 -1);
	}
	return NULL;
}

static Node *
distance_cmp_support(Node *rawreq, ShCmpKind kind)
{
	if (IsA(rawreq, SupportRequestSimplify))
		return simplify_comparison((SupportRequestSimplify *) rawreq, kind);
	return NULL;
}

/* One support function per comparison, so each knows which one it serves. */
#define DISTANCE_CMP_SUPPORT(name, kind) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	PG_RETURN_POINTER(distance_cmp_support((Node *) PG_GETARG_POINTER(0), kind)); \
}

DISTANCE_CMP_SUPPORT(simhash_distance_lt_support, SH_CMP_LT)
DISTANCE_CMP_SUPPORT(simhash_distance_le_support, SH_CMP_LE)
DISTANCE_CMP_SUPPORT(simhash_distance_eq_support, SH_CMP_EQ)
DISTANCE_CMP_SUPPORT(simhash_distance_ne_support, SH_CMP_NE)
DISTANCE_CMP_SUPPORT(simhash_distance_ge_support, SH_CMP_GE)
DISTANCE_CMP_SUPPORT(simhash_distance_gt_support, SH_CMP_GT)

/*
 * SupportRequestSimplify for the distance function of <~> and <-> (and for
 * simhash_hamming(), its int4 twin): a call d(a, b) becomes
 * ((a <-> b::simhash_order)::simhash_distance), see the header. The argument without Vars of this query level goes to the right
 * (the distance is symmetric), so that ORDER BY q <-> fp finds the index on
 * fp as ORDER BY fp <-> q does. In a database whose extension predates
 * simhash_order nothing changes.
 */
static Node *
simplify_distance(SupportRequestSimplify *req)
{
	FuncExpr   *fn = req->fcall;
	ShCatalog	cat;
	Node	   *a;
	Node	   *b;
	OpExpr	   *op;

	if (list_length(fn->args) != 2 || !lookup_catalog(fn->funcid, &cat) ||
		!OidIsValid(cat.order_op) || !OidIsValid(cat.order_fn))
		return NULL;
	a = linitial(fn->args);
	b = lsecond(fn->args);
	if (!contain_var_clause(a) && contain_var_clause(b))
	{
		Node	   *t = a;

		a = b;
		b = t;
	}
	if (exprType(a) != cat.simhash_type || exprType(b) != cat.simhash_type)
		return NULL;
	op = (OpExpr *) make_opclause(cat.order_op, INT4OID, false, (Expr *) a,
								  (Expr *) makeRelabelType((Expr *) b, cat.order_type, -1,
														   InvalidOid, COERCE_IMPLICIT_CAST),
								  InvalidOid, InvalidOid);
	op->opfuncid = cat.order_fn;
	op->location = fn->location;
	/* the call's own type: simhash_distance, or int4 for simhash_hamming() */
	if (fn->funcresulttype == INT4OID)
		return (Node *) op;
	return (Node *) makeRelabelType((Expr *) op, fn->funcresulttype, -1, InvalidOid,
									COERCE_IMPLICIT_CAST);
}

PG_FUNCTION_INFO_V1(simhash_distance_support);
Datum
simhash_distance_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(simplify_distance((SupportRequestSimplify *) rawreq));
	PG_RETURN_POINTER(NULL);
}

/* ---- simhash_hamming_within(a, b, r): index conditions and selectivity ---- */

/*
 * OIDs the index condition needs, in the schema of simhash_hamming_within: the
 * type, simhash_ball(q, r) for a constant radius of 0..64 and
 * simhash_ball_any(q, r) for any other (*anyfn is *ballfn in a database
 * still at extension 0.1.0, whose hamming_ball takes any radius).
 */
static bool
lookup_ball(Oid withinfn, Oid *balltype, Oid *ballfn, Oid *anyfn)
{
	Oid			nsp = get_func_namespace(withinfn);
	char	   *nspname = get_namespace_name(nsp);
	Oid			args[2];

	if (nspname == NULL)
		return false;
	*balltype = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								CStringGetDatum("hamming_ball"), ObjectIdGetDatum(nsp));
	if (!OidIsValid(*balltype))
		return false;
	args[0] = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							  CStringGetDatum("simhash"), ObjectIdGetDatum(nsp));
	args[1] = INT4OID;
	*ballfn = lookup_renamed(nspname, "simhash_ball", "hamming_ball", 2, args);
	*anyfn = lookup_renamed(nspname, "simhash_ball_any", "hamming_ball_any", 2, args);
	if (!OidIsValid(*anyfn))
		*anyfn = *ballfn;
	return OidIsValid(*ballfn);
}

/*
 * simhash_hamming_within(a, b, r) with a (or b) an index key of a simhash index
 * becomes "key <@ simhash_ball(other, r)". Which side is the key is decided
 * here, per index, so a join can drive the index from either side.
 */
static List *
within_index_condition(SupportRequestIndexCondition *req)
{
	FuncExpr   *fn;
	Node	   *key;
	Node	   *other;
	Node	   *radius;
	Oid			keytype;
	Oid			balltype;
	Oid			ballfn;
	Oid			anyfn;
	Oid			opno;
	Expr	   *ball;
	OpExpr	   *op;

	if (!IsA(req->node, FuncExpr) || req->indexarg > 1)
		return NIL;
	fn = (FuncExpr *) req->node;
	if (list_length(fn->args) != 3)
		return NIL;
	key = list_nth(fn->args, req->indexarg);
	other = list_nth(fn->args, 1 - req->indexarg);
	radius = lthird(fn->args);
	keytype = exprType(key);

	if (!lookup_ball(fn->funcid, &balltype, &ballfn, &anyfn))
		return NIL;
	opno = get_opfamily_member(req->opfamily, keytype, balltype, MIH_STRATEGY_WITHIN);
	if (!OidIsValid(opno))
		return NIL;				/* not our index (a btree on fp, say) */

	/* the other operands must be computable before the index scan */
	if (bms_is_member(req->index->rel->relid, pull_varnos(req->root, other)) ||
		bms_is_member(req->index->rel->relid, pull_varnos(req->root, radius)) ||
		contain_volatile_functions(other) || contain_volatile_functions(radius))
		return NIL;

	if (IsA(other, Const) && IsA(radius, Const))
	{
		Const	   *c = (Const *) other;
		Const	   *r = (Const *) radius;

		if (c->constisnull || r->constisnull)
			ball = (Expr *) makeNullConst(balltype, -1, InvalidOid);
		else
		{
			HammingBall *hb = palloc0(sizeof(HammingBall));

			hb->center = DatumGetSimHash(c->constvalue);
			/* -1 matches nothing, 64 everything: the same for any r beyond */
			hb->radius = Max(-1, Min(DatumGetInt32(r->constvalue), SIMHASH_BITS));
			ball = (Expr *) makeConst(balltype, -1, InvalidOid, sizeof(HammingBall),
									  PointerGetDatum(hb), false, false);
		}
	}
	else
	{
		Const	   *r = IsA(radius, Const) ? (Const *) radius : NULL;
		bool		checked = (r != NULL && !r->constisnull &&
							   DatumGetInt32(r->constvalue) >= 0 &&
							   DatumGetInt32(r->constvalue) <= SIMHASH_BITS);

		ball = (Expr *) makeFuncExpr(checked ? ballfn : anyfn, balltype,
									 list_make2(other, radius),
									 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	}

	op = (OpExpr *) make_opclause(opno, BOOLOID, false, (Expr *) key, ball,
								  InvalidOid, InvalidOid);
	op->opfuncid = get_opcode(opno);
	req->lossy = false;			/* the index checks the whole distance */
	return list_make1(op);
}

static Selectivity
within_selectivity(SupportRequestSelectivity *req)
{
	Node	   *a;
	Node	   *b;
	Node	   *r;
	int			radius = SH_RECOMMENDED_RADIUS;	/* when it is not known */

	if (list_length(req->args) != 3)
		return hamming_within_prob(radius);
	a = estimate_expression_value(req->root, linitial(req->args));
	b = estimate_expression_value(req->root, lsecond(req->args));
	r = estimate_expression_value(req->root, lthird(req->args));
	if (IsA(r, Const))
	{
		if (((Const *) r)->constisnull)
			return 0;
		radius = DatumGetInt32(((Const *) r)->constvalue);
	}
	if (!req->is_join)
	{
		if (IsA(b, Const) && !IsA(a, Const))
			return ((Const *) b)->constisnull ? 0 :
				sh_within_selectivity(req->root, a, req->varRelid,
									   DatumGetSimHash(((Const *) b)->constvalue), radius);
		if (IsA(a, Const) && !IsA(b, Const))
			return ((Const *) a)->constisnull ? 0 :
				sh_within_selectivity(req->root, b, req->varRelid,
									   DatumGetSimHash(((Const *) a)->constvalue), radius);
	}
	/* two rows' fingerprints (a join): how many pairs are that close */
	return sh_near_pair_selectivity(req->root, IsA(a, Const) ? b : a, radius);
}

PG_FUNCTION_INFO_V1(simhash_within_support);
Datum
simhash_within_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestIndexCondition))
		PG_RETURN_POINTER(within_index_condition((SupportRequestIndexCondition *) rawreq));
	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;

		req->selectivity = within_selectivity(req);
		CLAMP_PROBABILITY(req->selectivity);
		PG_RETURN_POINTER(req);
	}
	PG_RETURN_POINTER(NULL);
}
