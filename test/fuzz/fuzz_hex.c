/*
 * fuzz_hex.c
 *		libFuzzer target for sh_parse_hex() / sh_format_hex() (src/type/hexfmt.h),
 *		the parser behind the simhash type's input function.
 *
 * The input is copied and NUL-terminated (a NUL inside it ends the string,
 * as it would for a cstring). Checks, each failing with abort():
 *  - the parser accepts exactly what the harness's own, independent reading
 *    of the rule accepts: 16 hex digits of either case, optionally after
 *    "0x" or "0X", nothing else;
 *  - on acceptance, the value equals the harness's own conversion, and
 *    format(v) equals the input's digits lowercased (without the prefix),
 *    and parse(format(v)) == v;
 *  - on rejection, the output variable is left alone.
 * Every value also goes format -> parse regardless of the input text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "type/hexfmt.h"

static void
fail(const char *what, const char *s)
{
	fprintf(stderr, "\nfuzz_hex: %s\n  input (%zu bytes):", what, strlen(s));
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
		fprintf(stderr, " %02x", *p);
	fprintf(stderr, "\n");
	abort();
}

/* independent check of the accepted syntax; returns the digits or NULL */
static const char *
expected_digits(const char *s)
{
	size_t		len = strlen(s);
	const char *d = s;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
	{
		d = s + 2;
		len -= 2;
	}
	if (len != 16)
		return NULL;
	for (size_t i = 0; i < 16; i++)
		if (strchr("0123456789abcdefABCDEF", d[i]) == NULL || d[i] == '\0')
			return NULL;
	return d;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *s = malloc(size + 1);
	const char *digits;
	const uint64_t sentinel = UINT64_C(0x5A5A5A5A5A5A5A5A);
	uint64_t	v = sentinel;
	bool		ok;

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';

	ok = sh_parse_hex(s, &v);
	digits = expected_digits(s);

	if (ok && digits == NULL)
		fail("accepted an input that is not [0x|0X] + 16 hex digits", s);
	if (!ok && digits != NULL)
		fail("rejected a valid input", s);

	if (!ok)
	{
		if (v != sentinel)
			fail("rejection changed the output value", s);
	}
	else
	{
		char		out[SH_HEX_DIGITS + 1];
		char		lower[SH_HEX_DIGITS + 1];
		uint64_t	mine = 0;
		uint64_t	back = ~v;

		for (int i = 0; i < 16; i++)
		{
			char		c = digits[i];
			int			d = (c <= '9') ? c - '0' : (c | 0x20) - 'a' + 10;

			lower[i] = (char) (c >= 'A' && c <= 'F' ? c + ('a' - 'A') : c);
			mine = (mine << 4) | (uint64_t) d;
		}
		lower[16] = '\0';
		if (mine != v)
			fail("parsed value differs from the harness's own conversion", s);

		memset(out, 'X', sizeof(out));
		sh_format_hex(v, out);
		if (out[16] != '\0' || strcmp(out, lower) != 0)
			fail("format(parse(s)) is not s lowercased without prefix", s);
		if (!sh_parse_hex(out, &back) || back != v)
			fail("parse(format(v)) != v", s);
	}

	/* format -> parse for the first 8 bytes read as a number, whatever they are */
	if (size >= 8)
	{
		uint64_t	x;
		uint64_t	y = 0;
		char		out[SH_HEX_DIGITS + 1];
		char		pref[SH_HEX_DIGITS + 3] = "0X";

		memcpy(&x, data, 8);
		sh_format_hex(x, out);
		if (strlen(out) != 16 || strspn(out, "0123456789abcdef") != 16)
			fail("format produced something other than 16 lowercase hex digits", out);
		if (!sh_parse_hex(out, &y) || y != x)
			fail("parse(format(x)) != x for raw x", out);
		memcpy(pref + 2, out, 17);
		y = 0;
		if (!sh_parse_hex(pref, &y) || y != x)
			fail("parse(\"0X\" + format(x)) != x", pref);
	}

	free(s);
	return 0;
}
