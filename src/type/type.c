/*
 * type.c
 *		The simhash type: text and binary I/O, casts, ordering and hashing,
 *		bitwise operators.
 *
 * A simhash is 64 bits passed by value like int8. Ordering is by the
 * unsigned 64-bit value, so ORDER BY fp matches the order of the hex text.
 */
#include "simhash.h"

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/sortsupport.h"
#include "utils/varbit.h"

#include "type/hexfmt.h"

/* ---- text and binary I/O ---- */

/*
 * simhash('some words') with an untyped literal calls the input function (it
 * is a cast to the type), not the fingerprint of the words. Say so when the
 * input is text rather than a mistyped fingerprint: it has a letter no hex
 * number has (or a non-ASCII character) and not the length of one.
 */
static bool
looks_like_words(const char *str)
{
	size_t		len = strlen(str);
	bool		wordy = false;

	for (const char *p = str; *p; p++)
	{
		unsigned char c = (unsigned char) *p;

		if (c >= 0x80 || (isalpha(c) && !isxdigit(c) && c != 'x' && c != 'X'))
			wordy = true;
	}
	return wordy && len != 16 && len != 18;
}

PG_FUNCTION_INFO_V1(simhash_in);
Datum
simhash_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	uint64_t	v;

	if (!sh_parse_hex(str, &v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type simhash: \"%s\"", str),
				 errdetail("A simhash is exactly 16 hexadecimal digits, optionally prefixed with 0x."),
				 looks_like_words(str) ?
				 errhint("To fingerprint a text, pass it as text: simhash('...'::text) for a literal, simhash(col::text) for a column of another string type (citext, a domain). A value of such a type alone is read as a simhash value.") : 0));
	PG_RETURN_SIMHASH(v);
}

PG_FUNCTION_INFO_V1(simhash_out);
Datum
simhash_out(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);
	char	   *buf = palloc(SH_HEX_DIGITS + 1);

	sh_format_hex(v, buf);
	PG_RETURN_CSTRING(buf);
}

PG_FUNCTION_INFO_V1(simhash_recv);
Datum
simhash_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_SIMHASH((SimHash) pq_getmsgint64(buf));
}

PG_FUNCTION_INFO_V1(simhash_send);
Datum
simhash_send(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) v);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ---- casts (int8 is binary-coercible and needs no function) ---- */

PG_FUNCTION_INFO_V1(simhash_to_bit);
Datum
simhash_to_bit(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);
	int			len = VARBITTOTALLEN(SIMHASH_BITS);
	VarBit	   *result = (VarBit *) palloc0(len);

	SET_VARSIZE(result, len);
	VARBITLEN(result) = SIMHASH_BITS;
	/* bit strings are stored most significant bit first */
	for (int i = 0; i < 8; i++)
		VARBITS(result)[i] = (bits8) (v >> (56 - 8 * i));
	PG_RETURN_VARBIT_P(result);
}

PG_FUNCTION_INFO_V1(bit_to_simhash);
Datum
bit_to_simhash(PG_FUNCTION_ARGS)
{
	VarBit	   *arg = PG_GETARG_VARBIT_P(0);
	SimHash		v = 0;

	if (VARBITLEN(arg) != SIMHASH_BITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot cast a bit string of length %d to simhash",
						VARBITLEN(arg)),
				 errdetail("A simhash is exactly 64 bits.")));
	for (int i = 0; i < 8; i++)
		v = (v << 8) | VARBITS(arg)[i];
	PG_RETURN_SIMHASH(v);
}

PG_FUNCTION_INFO_V1(simhash_to_bytea);
Datum
simhash_to_bytea(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);
	bytea	   *result = (bytea *) palloc(VARHDRSZ + 8);

	SET_VARSIZE(result, VARHDRSZ + 8);
	/* network (big-endian) order, the same bytes as the binary send format */
	for (int i = 0; i < 8; i++)
		((unsigned char *) VARDATA(result))[i] = (unsigned char) (v >> (56 - 8 * i));
	PG_RETURN_BYTEA_P(result);
}

PG_FUNCTION_INFO_V1(bytea_to_simhash);
Datum
bytea_to_simhash(PG_FUNCTION_ARGS)
{
	bytea	   *arg = PG_GETARG_BYTEA_PP(0);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(arg);
	SimHash		v = 0;

	if (VARSIZE_ANY_EXHDR(arg) != 8)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot cast a bytea of %d bytes to simhash",
						(int) VARSIZE_ANY_EXHDR(arg)),
				 errdetail("A simhash is exactly 8 bytes.")));
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	PG_RETURN_SIMHASH(v);
}

/* ---- ordering (unsigned) and hashing ---- */

static inline int
simhash_cmp_internal(SimHash a, SimHash b)
{
	return (a > b) - (a < b);
}

#define SIMHASH_CMP_FUNC(name, expr) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	SimHash		a = PG_GETARG_SIMHASH(0); \
	SimHash		b = PG_GETARG_SIMHASH(1); \
	PG_RETURN_BOOL(expr); \
}

SIMHASH_CMP_FUNC(simhash_lt, a < b)
SIMHASH_CMP_FUNC(simhash_le, a <= b)
SIMHASH_CMP_FUNC(simhash_eq, a == b)
SIMHASH_CMP_FUNC(simhash_ne, a != b)
SIMHASH_CMP_FUNC(simhash_ge, a >= b)
SIMHASH_CMP_FUNC(simhash_gt, a > b)

PG_FUNCTION_INFO_V1(simhash_cmp);
Datum
simhash_cmp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(simhash_cmp_internal(PG_GETARG_SIMHASH(0),
										 PG_GETARG_SIMHASH(1)));
}

static int
simhash_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	return simhash_cmp_internal(DatumGetSimHash(x), DatumGetSimHash(y));
}

PG_FUNCTION_INFO_V1(simhash_sortsupport);
Datum
simhash_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = simhash_fastcmp;
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(simhash_hash);
Datum
simhash_hash(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);

	return hash_bytes_uint32((uint32) (v ^ (v >> 32)));
}

PG_FUNCTION_INFO_V1(simhash_hash_extended);
Datum
simhash_hash_extended(PG_FUNCTION_ARGS)
{
	SimHash		v = PG_GETARG_SIMHASH(0);
	uint64		seed = (uint64) PG_GETARG_INT64(1);

	return hash_bytes_uint32_extended((uint32) (v ^ (v >> 32)), seed);
}

/* ---- bitwise operators and bit count ---- */

PG_FUNCTION_INFO_V1(simhash_and);
Datum
simhash_and(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH(PG_GETARG_SIMHASH(0) & PG_GETARG_SIMHASH(1));
}

PG_FUNCTION_INFO_V1(simhash_or);
Datum
simhash_or(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH(PG_GETARG_SIMHASH(0) | PG_GETARG_SIMHASH(1));
}

PG_FUNCTION_INFO_V1(simhash_xor);
Datum
simhash_xor(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH(PG_GETARG_SIMHASH(0) ^ PG_GETARG_SIMHASH(1));
}

PG_FUNCTION_INFO_V1(simhash_not);
Datum
simhash_not(PG_FUNCTION_ARGS)
{
	PG_RETURN_SIMHASH(~PG_GETARG_SIMHASH(0));
}

PG_FUNCTION_INFO_V1(simhash_bit_count);
Datum
simhash_bit_count(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(sh_popcount64(PG_GETARG_SIMHASH(0)));
}
