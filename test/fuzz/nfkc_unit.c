/*
 * nfkc_unit.c
 *		The tokeniser's pinned NFKC (src/fingerprint/nfkc.c, Unicode 14.0) against
 *		PostgreSQL's own normaliser, linked from libpgcommon.
 *
 * Against PostgreSQL 15, whose normaliser has Unicode 14.0 data, the two
 * must agree everywhere: every code point alone, random pairs of the code
 * points that take part in normalisation (those with a decomposition, a
 * combining class or a composition), and random sequences of them with
 * letters and Hangul between. (PostgreSQL's frontend normaliser looks up
 * compositions by a linear search, which bounds how many fit in a test run.) A later PostgreSQL's data differs on purpose for code points
 * assigned after Unicode 14.0, so against one only the invariants below are
 * checked, and the program says so.
 *
 * Also checked everywhere: a quick check YES of ours means NFKC leaves the
 * text unchanged; the normaliser is idempotent; a run of 100,000 marks with
 * mixed combining classes is ordered stably (the counting sort).
 *
 * Exit status 1 on any failure; the last line is
 * "nfkc_unit: N checks, N failed".
 */
#include "postgres_fe.h"

#include "common/unicode_norm.h"
#include "fingerprint/nfkc.h"
#include "fingerprint/nfkc_tables.h"			/* only to find the first code points of compositions */

static long checks = 0;
static long failures = 0;
static bool exact = false;		/* PostgreSQL 15: Unicode 14.0, must be equal */

static size_t
wlen(const pg_wchar *s)
{
	size_t		n = 0;

	while (s[n])
		n++;
	return n;
}

static void
show(const char *label, const pg_wchar *s, size_t n)
{
	printf("  %s:", label);
	for (size_t i = 0; i < n && i < 24; i++)
		printf(" U+%04X", (unsigned) s[i]);
	printf("\n");
}

/* ours against PostgreSQL's for s[0..n) (NUL-terminated) */
static void
compare(const pg_wchar *s, size_t n)
{
	size_t		on;
	pg_wchar   *ours = sh_nfkc(s, n, &on);
	pg_wchar   *theirs = unicode_normalize(UNICODE_NFKC, s);
	size_t		tn = wlen(theirs);
	bool		same = (on == tn && memcmp(ours, theirs, on * sizeof(pg_wchar)) == 0);

	checks++;
	if (!same && exact)
	{
		if (failures++ < 20)
		{
			printf("FAIL NFKC differs from PostgreSQL's\n");
			show("input", s, n);
			show("ours", ours, on);
			show("postgres", theirs, tn);
		}
	}
	/* a quick check YES must leave the text as it is */
	if (sh_nfkc_quick_yes(s, n) && !(on == n && memcmp(ours, s, n * sizeof(pg_wchar)) == 0))
	{
		if (failures++ < 20)
		{
			printf("FAIL quick check YES but NFKC changes the text\n");
			show("input", s, n);
		}
	}
	/* idempotent */
	{
		size_t		an;
		pg_wchar   *again = sh_nfkc(ours, on, &an);

		if (!(an == on && memcmp(again, ours, on * sizeof(pg_wchar)) == 0) && failures++ < 20)
		{
			printf("FAIL NFKC is not idempotent\n");
			show("input", s, n);
		}
		pfree(again);
	}
	pfree(ours);
	free(theirs);
}

static uint64
next_random(uint64 *state)
{
	uint64		z = (*state += UINT64CONST(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64CONST(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64CONST(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

int
main(void)
{
	pg_wchar	s[16];
	pg_wchar   *active;
	size_t		nactive = 0;
	uint64		rnd = 20261126;
	bool	   *composes_first;
	long		before;

	setvbuf(stdout, NULL, _IOLBF, 0);
	exact = (PG_VERSION_NUM / 10000 == 15);
	printf("nfkc_unit: PostgreSQL %d's normaliser; %s\n", PG_VERSION_NUM / 10000,
		   exact ? "Unicode 14.0, the results must be equal"
		   : "newer Unicode data, only the invariants are checked");

	/* every code point alone; collect those that take part in normalisation */
	active = malloc(sizeof(pg_wchar) * 0x110000);
	composes_first = calloc(0x110000, 1);
	for (size_t k = 0; k < lengthof(sh_nfkc_comp_key); k++)
		composes_first[sh_nfkc_comp_key[k] >> 21] = true;
	for (pg_wchar c = 1; c < 0x110000; c++)
	{
		size_t		on;
		pg_wchar   *o;

		if (c >= 0xD800 && c <= 0xDFFF)
			continue;
		s[0] = c;
		s[1] = 0;
		compare(s, 1);
		o = sh_nfkc(s, 1, &on);
		/* changed, not quick-check YES (marks, composition seconds), or ... */
		if (!sh_nfkc_quick_yes(s, 1) || on != 1 || o[0] != c)
			active[nactive++] = c;
		else
		{
			/* ... the first code point of a composition */
			if (composes_first[c])
				active[nactive++] = c;
		}
		pfree(o);
	}
	printf("single code points: %ld checks, %ld failed; %zu take part in normalisation\n",
		   checks, failures, nactive);

	/* random pairs of those */
	before = failures;
	for (long k = 0; k < 300000; k++)
	{
		s[0] = active[next_random(&rnd) % nactive];
		s[1] = active[next_random(&rnd) % nactive];
		s[2] = 0;
		compare(s, 2);
	}
	printf("pairs: 300000 random, %ld failed\n", failures - before);

	/* sequences of 3 to 12, from the active set, Hangul jamo and plain letters */
	before = failures;
	for (long k = 0; k < 100000; k++)
	{
		int			n = 3 + next_random(&rnd) % 10;

		for (int i = 0; i < n; i++)
		{
			uint64		r = next_random(&rnd);

			switch (r % 8)
			{
				case 0:
					s[i] = 'a' + (r >> 8) % 26;
					break;
				case 1:
					s[i] = 0x1100 + (r >> 8) % 0x100;	/* jamo */
					break;
				case 2:
					s[i] = 0xAC00 + (r >> 8) % 11172;	/* syllables */
					break;
				default:
					s[i] = active[(r >> 8) % nactive];
			}
		}
		s[n] = 0;
		compare(s, n);
	}
	printf("sequences: 100000 random of 3 to 12, %ld failed\n", failures - before);

	/* a long run of marks: ordered stably by combining class (the counting sort) */
	{
		size_t		n = 100001;
		pg_wchar   *run = malloc(sizeof(pg_wchar) * (n + 1));
		static const pg_wchar marks[] = {0x0301, 0x0323, 0x0300, 0x0327, 0x05B0, 0x0328, 0x0345};

		run[0] = 'e';
		for (size_t i = 1; i < n; i++)
			run[i] = marks[next_random(&rnd) % lengthof(marks)];
		run[n] = 0;
		before = failures;
		compare(run, n);
		printf("a run of 100000 marks: %s\n", failures == before ? "ok" : "FAILED");
		free(run);
	}

	free(active);
	free(composes_first);
	printf("nfkc_unit: %ld checks, %ld failed\n", checks, failures);
	return failures ? 1 : 0;
}
