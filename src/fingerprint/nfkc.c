/*
 * nfkc.c
 *		Unicode NFKC with tables frozen at Unicode 14.0 (nfkc_tables.h), for
 *		the tokeniser.
 *
 * Why not the server's normaliser: its Unicode version follows the
 * PostgreSQL major version (14.0 in 15, 15.1 in 17, 16.0 in 18), so the same
 * text normalised differently, and got another fingerprint, after
 * pg_upgrade whenever it held a character assigned after 14.0 with a
 * decomposition (U+1CCD6, a Unicode 16 "outlined" letter, became a letter on
 * 18 and stayed a symbol on 15). The fingerprint specifications pin NFKC to
 * Unicode 14.0, which is what PostgreSQL 15 used for every fingerprint stored
 * before; characters assigned later are left as they are.
 *
 * The algorithm is UAX #15's: full compatibility decomposition (Hangul
 * syllables algorithmically), canonical ordering of each run of non-starters
 * by combining class (stable), then canonical composition. Like the
 * tokeniser, it has no server dependencies beyond palloc, so the fuzz
 * harness and the unit test (which compares it with PostgreSQL 15's
 * normaliser for every code point) link it outside the server.
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "fingerprint/nfkc.h"
#include "fingerprint/nfkc_tables.h"

/* Hangul syllables (Unicode 3.12, "Conjoining Jamo Behavior") */
#define SBASE	0xAC00
#define LBASE	0x1100
#define VBASE	0x1161
#define TBASE	0x11A7
#define LCOUNT	19
#define VCOUNT	21
#define TCOUNT	28
#define NCOUNT	(VCOUNT * TCOUNT)
#define SCOUNT	(LCOUNT * NCOUNT)

/* Runs of non-starters longer than this are ordered by counting, not insertion. */
#define INSERTION_SORT_MAX 32

static inline const ShNfkcRecord *
nfkc_record(pg_wchar c)
{
	if (c >= 0x110000)
		return &sh_nfkc_records[0];
	return &sh_nfkc_records[sh_nfkc_stage2[sh_nfkc_stage1[c >> 8]][c & 0xFF]];
}

static inline int
nfkc_ccc(pg_wchar c)
{
	return nfkc_record(c)->ccc;
}

/*
 * The quick check of UAX #15 for NFKC: YES means s is normalised; NO and
 * MAYBE mean sh_nfkc must decide.
 */
bool
sh_nfkc_quick_yes(const pg_wchar *s, size_t n)
{
	int			last = 0;

	for (size_t i = 0; i < n; i++)
	{
		const ShNfkcRecord *r;

		if (s[i] < 0xA0)
		{
			last = 0;			/* ASCII, C1: starters, quick check yes */
			continue;
		}
		r = nfkc_record(s[i]);
		if (r->ccc != 0 && last > r->ccc)
			return false;
		if (r->qc != SH_NFKC_QC_YES)
			return false;
		last = r->ccc;
	}
	return true;
}

/* Code points c decomposes into (not counting Hangul's algorithm): 1 if none. */
static inline size_t
decomposed_length(pg_wchar c)
{
	if (c >= SBASE && c < SBASE + SCOUNT)
		return ((c - SBASE) % TCOUNT) ? 3 : 2;
	else
	{
		const ShNfkcRecord *r = nfkc_record(c);

		return r->decomp_len ? r->decomp_len : 1;
	}
}

static size_t
decompose(pg_wchar c, pg_wchar *out)
{
	const ShNfkcRecord *r;

	if (c >= SBASE && c < SBASE + SCOUNT)
	{
		int			s = c - SBASE;
		int			t = s % TCOUNT;

		out[0] = LBASE + s / NCOUNT;
		out[1] = VBASE + (s % NCOUNT) / TCOUNT;
		if (t == 0)
			return 2;
		out[2] = TBASE + t;
		return 3;
	}
	r = nfkc_record(c);
	if (r->decomp_len == 0)
	{
		out[0] = c;
		return 1;
	}
	for (int k = 0; k < r->decomp_len; k++)
		out[k] = sh_nfkc_pool[r->decomp_off + k];
	return r->decomp_len;
}

/*
 * Stable sort of buf[0..n) by combining class. Runs are short in real text;
 * a long one (an adversary's 60,000 marks) is sorted by counting, so the
 * cost stays linear.
 */
static void
order_run(pg_wchar *buf, size_t n, pg_wchar *tmp)
{
	if (n <= INSERTION_SORT_MAX)
	{
		for (size_t i = 1; i < n; i++)
		{
			pg_wchar	c = buf[i];
			int			cc = nfkc_ccc(c);
			size_t		j = i;

			while (j > 0 && nfkc_ccc(buf[j - 1]) > cc)
			{
				buf[j] = buf[j - 1];
				j--;
			}
			buf[j] = c;
		}
	}
	else
	{
		size_t		start[257] = {0};

		for (size_t i = 0; i < n; i++)
			start[nfkc_ccc(buf[i]) + 1]++;
		for (int k = 1; k <= 256; k++)
			start[k] += start[k - 1];
		for (size_t i = 0; i < n; i++)
			tmp[start[nfkc_ccc(buf[i])]++] = buf[i];
		memcpy(buf, tmp, n * sizeof(pg_wchar));
	}
}

/* The primary composite of a and b, or 0 when there is none. */
static pg_wchar
compose_pair(pg_wchar a, pg_wchar b)
{
	uint64		key;
	int			lo = 0;
	int			hi = lengthof(sh_nfkc_comp_key) - 1;

	if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
		return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
	if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 &&
		b > TBASE && b < TBASE + TCOUNT)
		return a + (b - TBASE);
	key = ((uint64) a << 21) | b;
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (sh_nfkc_comp_key[mid] == key)
			return sh_nfkc_comp_to[mid];
		if (sh_nfkc_comp_key[mid] < key)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

/*
 * NFKC of s[0..n), palloc'd and NUL-terminated; *outn is its length. The
 * result is never longer than the decomposition, which is at most 18 times
 * the input (U+FDFA).
 */
pg_wchar *
sh_nfkc(const pg_wchar *s, size_t n, size_t *outn)
{
	size_t		len = 0;
	pg_wchar   *buf;
	pg_wchar   *tmp = NULL;
	size_t		i;
	size_t		starter;
	pg_wchar	starter_ch;
	int			last_cc;
	size_t		out;

	for (i = 0; i < n; i++)
		len += decomposed_length(s[i]);
	buf = palloc((len + 1) * sizeof(pg_wchar));
	len = 0;
	for (i = 0; i < n; i++)
		len += decompose(s[i], buf + len);

	/* canonical ordering, run by run of non-starters */
	i = 0;
	while (i < len)
	{
		size_t		j;

		if (nfkc_ccc(buf[i]) == 0)
		{
			i++;
			continue;
		}
		for (j = i + 1; j < len && nfkc_ccc(buf[j]) != 0; j++)
			;
		if (j - i > 1)
		{
			if (j - i > INSERTION_SORT_MAX && tmp == NULL)
				tmp = palloc(len * sizeof(pg_wchar));
			order_run(buf + i, j - i, tmp);
		}
		i = j;
	}
	if (tmp)
		pfree(tmp);

	/* canonical composition */
	if (len == 0)
	{
		buf[0] = 0;
		*outn = 0;
		return buf;
	}
	starter = 0;
	starter_ch = buf[0];
	last_cc = nfkc_ccc(starter_ch) == 0 ? 0 : 256;	/* no starter yet: blocked */
	out = 1;
	for (i = 1; i < len; i++)
	{
		pg_wchar	c = buf[i];
		int			cc = nfkc_ccc(c);

		/* c reaches the starter unless a character between blocks it */
		if (last_cc < cc || last_cc == 0)
		{
			pg_wchar	composite = compose_pair(starter_ch, c);

			if (composite != 0)
			{
				buf[starter] = composite;
				starter_ch = composite;
				continue;
			}
		}
		if (cc == 0)
		{
			starter = out;
			starter_ch = c;
		}
		last_cc = cc;
		buf[out++] = c;
	}
	buf[out] = 0;
	*outn = out;
	return buf;
}
