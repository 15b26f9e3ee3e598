/*
 * hexfmt.h
 *		Text form of a simhash: parse and format 16 hexadecimal digits.
 *
 * Kept free of server calls so that the fuzz harness can exercise the exact
 * parser that the type's input function uses.
 */
#ifndef SIMHASH_HEXFMT_H
#define SIMHASH_HEXFMT_H

#include <stdbool.h>
#include <stdint.h>

#define SH_HEX_DIGITS 16

static inline int
sh_hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Parse a NUL-terminated string: exactly 16 hex digits in either case,
 * optionally preceded by "0x" or "0X"; nothing else, not even white space.
 * Returns false (leaving *out alone) for anything else.
 */
static inline bool
sh_parse_hex(const char *s, uint64_t *out)
{
	uint64_t	v = 0;
	int			i;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (i = 0; i < SH_HEX_DIGITS; i++)
	{
		int			d = sh_hex_value(s[i]);

		if (d < 0)
			return false;		/* also catches a NUL before 16 digits */
		v = (v << 4) | (uint64_t) d;
	}
	if (s[SH_HEX_DIGITS] != '\0')
		return false;
	*out = v;
	return true;
}

/* Format as 16 lowercase hex digits, most significant first, NUL-terminated. */
static inline void
sh_format_hex(uint64_t v, char out[SH_HEX_DIGITS + 1])
{
	static const char digits[] = "0123456789abcdef";
	int			i;

	for (i = SH_HEX_DIGITS - 1; i >= 0; i--)
	{
		out[i] = digits[v & 0xF];
		v >>= 4;
	}
	out[SH_HEX_DIGITS] = '\0';
}

#endif							/* SIMHASH_HEXFMT_H */
