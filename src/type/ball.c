/*
 * ball.c
 *		The hamming_ball type: a fingerprint and a radius, the query operand
 *		of "fp <@ simhash_ball(q, r)", which is what the simhash index
 *		answers and what the planner turns "fp <~> q <= r" into; its
 *		operators. Their estimators are in selectivity.c.
 *
 * The C symbols keep the names of the SQL functions before extension 0.4.0
 * (hamming_ball_contains is simhash_contained_by_ball, the function of <@,
 * hamming_ball_contained is simhash_ball_contains, of @>): the renamed
 * functions of a 0.4.0 database and the old ones of a 0.3.0 database both
 * call them.
 *
 * Text form: 16 hex digits, a slash and the radius, e.g. 0123456789abcdef/3,
 * so that EXPLAIN shows a recognisable Index Cond.
 */
#include "simhash.h"

#include <ctype.h>

#include "libpq/pqformat.h"
#include "utils/builtins.h"

#include "type/ball.h"
#include "type/hexfmt.h"

/*
 * A radius a user gives (simhash_ball(), the text and binary forms) is a
 * number of bits, 0..64, like every radius of the API. The planner's own
 * operand for simhash_hamming_within(fp, q, r) takes any r (simhash_ball_any):
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
				 errhint("For \"within any radius\" semantics (below 0 nothing, above 64 everything) use simhash_hamming_within(fp, q, r).")));
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
 * simhash_ball(q, r) (hamming_ball before 0.4.0) from extension 0.2.0 on:
 * r must be 0..64.
 */
PG_FUNCTION_INFO_V1(hamming_ball_make_checked);
Datum
hamming_ball_make_checked(PG_FUNCTION_ARGS)
{
	check_radius(PG_GETARG_INT32(1), ERRCODE_INVALID_PARAMETER_VALUE);
	PG_RETURN_POINTER(make_ball(PG_GETARG_SIMHASH(0), PG_GETARG_INT32(1)));
}

/*
 * Any radius: simhash_ball_any(q, r), which the planner builds for
 * simhash_hamming_within(fp, q, r) when r is not a constant in 0..64 (and
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
 * radii r (simhash_ball(fp, r) in a constraint) it is "within r bits".
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
