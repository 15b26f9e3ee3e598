/*
 * tokenize.c
 *		Turn UTF-8 text into simhash features in one streaming pass.
 *
 * Pipeline, per code point: Unicode NFKC (PostgreSQL's normaliser), simple
 * case folding and classification (our frozen tables, unicode_tables.h),
 * then either tokens (runs of word characters; every character of an
 * unsegmented script such as Han is a token of its own) grouped into word
 * n-grams, or character n-grams over the text with separators collapsed.
 * README.md, "Fingerprint specification", states these rules for users;
 * this file must keep to them exactly, since stored fingerprints depend on
 * them.
 *
 * Memory: one segment buffer of fixed size, plus token and window buffers
 * that grow to the longest token/window seen; nothing is allocated per
 * token. NFKC runs per segment, so a document of hundreds of megabytes never
 * needs a 4-byte-per-character copy of itself.
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#define CHECK_FOR_INTERRUPTS() ((void) 0)
#define repalloc_huge(p, n) repalloc((p), (n))
#else
#include "postgres.h"
#include "miscadmin.h"
#endif

#include "common/unicode_norm.h"
#include "mb/pg_wchar.h"

#include "tokenize.h"
#include "unicode_tables.h"

/*
 * Non-ASCII text is normalised in segments. A segment always ends just
 * before an ASCII character, or, once it holds this many code points, just
 * before a Han ideograph or Hangul syllable; NFKC never combines across such
 * a boundary, so segmenting does not change the result: it is exactly the
 * NFKC of the whole text. A run with no such boundary is one segment, however
 * long (the buffer grows).
 */
#define SEGMENT_TARGET_CPS	65536

/* How many ASCII bytes we process between interrupt checks. */
#define INTERRUPT_INTERVAL	(1 << 20)

#define REPLACEMENT_CHAR	0xFFFD

typedef enum TokState
{
	TOK_NONE = 0,
	TOK_WORD,					/* current token may grow with more letters */
	TOK_SINGLE					/* current token is one unsegmented char (+ marks) */
} TokState;

typedef struct ShTokenizer
{
	ShFeatureKind kind;
	int			n;
	ShEmitFn	emit;
	void	   *arg;

	/* words: the token being built */
	char	   *tok;
	size_t		toklen;
	size_t		tokcap;
	TokState	tokstate;

	/* words, n > 1: the last (up to) n tokens joined by single spaces */
	char	   *win;
	size_t		winlen;
	size_t		wincap;
	int			wintokens;

	/* chars: the last n characters, as a ring */
	pg_wchar	ring[SH_MAX_NGRAM];
	int64		nchars;
	bool		pending_space;
} ShTokenizer;

static void
grow_buffer(char **buf, size_t *cap, size_t need)
{
	size_t		newcap = *cap ? *cap : 64;

	while (newcap < need)
		newcap *= 2;
	if (*buf == NULL)
		*buf = palloc(newcap);
	else
		*buf = repalloc(*buf, newcap);
	*cap = newcap;
}

static inline int
encode_utf8(pg_wchar c, char *out)
{
	if (c < 0x80)
	{
		out[0] = (char) c;
		return 1;
	}
	if (c < 0x800)
	{
		out[0] = (char) (0xC0 | (c >> 6));
		out[1] = (char) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		out[0] = (char) (0xE0 | (c >> 12));
		out[1] = (char) (0x80 | ((c >> 6) & 0x3F));
		out[2] = (char) (0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (c >> 18));
	out[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	out[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}

/*
 * Decode one code point at s (avail > 0 bytes). Malformed input (bad lead
 * byte, truncated or overlong sequence, surrogate, > U+10FFFF) yields
 * U+FFFD and consumes one byte, so every byte string has one defined result.
 */
static inline int
decode_utf8(const unsigned char *s, size_t avail, pg_wchar *cp)
{
	unsigned char b0 = s[0];
	pg_wchar	c;
	int			len;
	pg_wchar	min;

	if (b0 < 0x80)
	{
		*cp = b0;
		return 1;
	}
	if (b0 >= 0xC2 && b0 <= 0xDF)
	{
		len = 2;
		c = b0 & 0x1F;
		min = 0x80;
	}
	else if (b0 >= 0xE0 && b0 <= 0xEF)
	{
		len = 3;
		c = b0 & 0x0F;
		min = 0x800;
	}
	else if (b0 >= 0xF0 && b0 <= 0xF4)
	{
		len = 4;
		c = b0 & 0x07;
		min = 0x10000;
	}
	else
		goto bad;

	if (avail < (size_t) len)
		goto bad;
	for (int i = 1; i < len; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			goto bad;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		goto bad;
	*cp = c;
	return len;

bad:
	*cp = REPLACEMENT_CHAR;
	return 1;
}

static inline uint8
char_class(pg_wchar c)
{
	if (c >= 0x110000)
		return SH_CLS_SEP;
	return sh_cls_stage2[sh_cls_stage1[c >> 8]][c & 0xFF];
}

/* Simple case folding; only called for characters flagged SH_CLS_FOLD. */
static pg_wchar
fold_char(pg_wchar c)
{
	int			lo = 0;
	int			hi = lengthof(sh_fold_from) - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (sh_fold_from[mid] == c)
			return sh_fold_to[mid];
		if (sh_fold_from[mid] < c)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return c;
}

/* ---- words and word n-grams ---- */

static void
window_push_token(ShTokenizer *t)
{
	/* drop the oldest token when the window is full */
	if (t->wintokens == t->n)
	{
		char	   *sp = memchr(t->win, ' ', t->winlen);

		/* n > 1, so a full window has a separator */
		Assert(sp != NULL);
		t->winlen -= (sp + 1 - t->win);
		memmove(t->win, sp + 1, t->winlen);
		t->wintokens--;
	}
	if (t->winlen + t->toklen + 1 > t->wincap)
		grow_buffer(&t->win, &t->wincap, t->winlen + t->toklen + 1);
	if (t->wintokens > 0)
		t->win[t->winlen++] = ' ';
	memcpy(t->win + t->winlen, t->tok, t->toklen);
	t->winlen += t->toklen;
	t->wintokens++;
	if (t->wintokens == t->n)
		t->emit(t->arg, t->win, t->winlen);
}

static inline void
end_token(ShTokenizer *t)
{
	if (t->tokstate == TOK_NONE)
		return;
	if (t->n == 1)
		t->emit(t->arg, t->tok, t->toklen);
	else
		window_push_token(t);
	t->toklen = 0;
	t->tokstate = TOK_NONE;
}

static inline void
token_append(ShTokenizer *t, pg_wchar c)
{
	if (t->toklen + 4 > t->tokcap)
		grow_buffer(&t->tok, &t->tokcap, t->toklen + 4);
	if (c < 0x80)
		t->tok[t->toklen++] = (char) c;
	else
		t->toklen += encode_utf8(c, t->tok + t->toklen);
}

static inline void
feed_word_char(ShTokenizer *t, pg_wchar c, uint8 cls)
{
	switch (cls & SH_CLS_MASK)
	{
		case SH_CLS_WORD:
			if (t->tokstate == TOK_SINGLE)
				end_token(t);
			t->tokstate = TOK_WORD;
			token_append(t, c);
			break;
		case SH_CLS_SINGLE:
			end_token(t);
			t->tokstate = TOK_SINGLE;
			token_append(t, c);
			break;
		case SH_CLS_MARK:
			/* a combining mark extends whatever token it follows */
			if (t->tokstate == TOK_NONE)
				t->tokstate = TOK_WORD;
			token_append(t, c);
			break;
		case SH_CLS_IGNORE:
			break;
		default:				/* separator */
			end_token(t);
			break;
	}
}

/* ---- character n-grams ---- */

static void
emit_char_ngram(ShTokenizer *t, int count)
{
	char		buf[SH_MAX_NGRAM * 4];
	int			len = 0;
	int64		first = t->nchars - count;

	for (int64 i = first; i < t->nchars; i++)
		len += encode_utf8(t->ring[i % t->n], buf + len);
	t->emit(t->arg, buf, len);
}

static inline void
chars_push(ShTokenizer *t, pg_wchar c)
{
	t->ring[t->nchars % t->n] = c;
	t->nchars++;
	if (t->nchars >= t->n)
		emit_char_ngram(t, t->n);
}

static inline void
feed_ngram_char(ShTokenizer *t, pg_wchar c, uint8 cls)
{
	switch (cls & SH_CLS_MASK)
	{
		case SH_CLS_IGNORE:
			break;
		case SH_CLS_SEP:
			/* a run of separators becomes one space between characters */
			if (t->nchars > 0)
				t->pending_space = true;
			break;
		default:
			if (t->pending_space)
			{
				chars_push(t, ' ');
				t->pending_space = false;
			}
			chars_push(t, c);
			break;
	}
}

/* ---- the pipeline ---- */

static inline void
feed_char(ShTokenizer *t, pg_wchar c)
{
	uint8		cls = char_class(c);

	if (cls & SH_CLS_FOLD)
		c = fold_char(c);
	if (t->kind == SH_FEATURES_WORDS)
		feed_word_char(t, c, cls);
	else
		feed_ngram_char(t, c, cls);
}

/*
 * ASCII in words mode is by far the commonest input, so it has its own loop:
 * whole runs of word characters are lowered and copied into the token at
 * once. The two tables are derived from the Unicode tables at first use, so
 * the rules stay in one place.
 */
static bool ascii_ready = false;
static char ascii_word_folded[128];	/* folded char, or 0 for a separator */

static void
init_ascii_tables(void)
{
	for (int c = 0; c < 128; c++)
	{
		uint8		cls = char_class(c);

		/* ASCII has only word characters and separators */
		Assert((cls & SH_CLS_MASK) == SH_CLS_WORD || (cls & SH_CLS_MASK) == SH_CLS_SEP);
		if ((cls & SH_CLS_MASK) == SH_CLS_WORD)
			ascii_word_folded[c] = (char) ((cls & SH_CLS_FOLD) ? fold_char(c) : c);
		else
			ascii_word_folded[c] = 0;
	}
	ascii_ready = true;
}

static void
feed_ascii_words(ShTokenizer *t, const unsigned char *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		char		f = ascii_word_folded[s[i]];

		if (f != 0)
		{
			char	   *dst;
			size_t		n;

			if (t->tokstate == TOK_SINGLE)
				end_token(t);
			/* room for the rest of this ASCII run: no check per character */
			if (t->toklen + (len - i) > t->tokcap)
				grow_buffer(&t->tok, &t->tokcap, t->toklen + (len - i));
			dst = t->tok;
			n = t->toklen;
			do
			{
				dst[n++] = f;
				i++;
			} while (i < len && (f = ascii_word_folded[s[i]]) != 0);
			t->toklen = n;
			t->tokstate = TOK_WORD;
		}
		else
		{
			end_token(t);
			i++;
		}
	}
}

/* ASCII needs no normalisation: feed it straight through. */
static void
feed_ascii(ShTokenizer *t, const unsigned char *s, size_t len)
{
	size_t		done = 0;

	while (done < len)
	{
		size_t		n = Min(len - done, INTERRUPT_INTERVAL);

		CHECK_FOR_INTERRUPTS();
		if (t->kind == SH_FEATURES_WORDS)
			feed_ascii_words(t, s + done, n);
		else
		{
			for (size_t i = 0; i < n; i++)
				feed_char(t, s[done + i]);
		}
		done += n;
	}
}

/* A code point before which NFKC never combines: see SEGMENT_TARGET_CPS. */
static inline bool
is_safe_boundary(pg_wchar c)
{
	return c < 0x80 ||
		(c >= 0x4E00 && c <= 0x9FFF) ||
		(c >= 0x3400 && c <= 0x4DBF) ||
		(c >= 0xAC00 && c <= 0xD7A3);
}

/*
 * Normalise and feed the segment that starts at s. Returns the number of
 * bytes consumed. The segment may start with one ASCII character (kept back
 * by the caller because a following combining mark may compose with it) and
 * ends before the next ASCII byte or at a safe boundary.
 */
static size_t
feed_segment(ShTokenizer *t, const unsigned char *s, size_t avail,
			 pg_wchar **wbufp, size_t *wbufcap)
{
	pg_wchar   *wbuf = *wbufp;
	size_t		pos = 0;
	size_t		ncp = 0;
	pg_wchar   *norm;

	while (pos < avail)
	{
		pg_wchar	c;
		int			clen;

		if (s[pos] < 0x80 && pos > 0)
			break;
		clen = decode_utf8(s + pos, avail - pos, &c);
		if (ncp >= SEGMENT_TARGET_CPS && is_safe_boundary(c))
			break;
		if ((size_t) ncp + 1 >= *wbufcap)
		{
			*wbufcap *= 2;
			wbuf = *wbufp = repalloc_huge(wbuf, *wbufcap * sizeof(pg_wchar));
		}
		wbuf[ncp++] = c;
		pos += clen;
	}
	wbuf[ncp] = 0;

#ifndef FRONTEND
	/* the quick check is exact for YES; NO and MAYBE need the real thing */
	if (unicode_is_normalized_quickcheck(UNICODE_NFKC, wbuf) == UNICODE_NORM_QC_YES)
		norm = NULL;
	else
#endif
		norm = unicode_normalize(UNICODE_NFKC, wbuf);

	if (norm == NULL)
	{
#ifdef FRONTEND
		/* frontend unicode_normalize reports OOM with NULL */
		if (wbuf[0] != 0)
		{
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
#endif
		for (size_t i = 0; i < ncp; i++)
			feed_char(t, wbuf[i]);
	}
	else
	{
		for (pg_wchar *p = norm; *p; p++)
			feed_char(t, *p);
		pfree(norm);
	}
	return pos;
}

void
sh_tokenize(const char *text, size_t len, ShFeatureKind kind, int size,
			ShEmitFn emit, void *arg)
{
	const unsigned char *s = (const unsigned char *) text;
	ShTokenizer t;
	pg_wchar   *wbuf = NULL;
	size_t		wbufcap = 0;
	size_t		i = 0;

	Assert(size >= SH_MIN_NGRAM && size <= SH_MAX_NGRAM);
	if (!ascii_ready)
		init_ascii_tables();
	memset(&t, 0, sizeof(t));
	t.kind = kind;
	t.n = size;
	t.emit = emit;
	t.arg = arg;

	while (i < len)
	{
		size_t		j = i;
		size_t		segstart;

		/* skip ASCII eight bytes at a time */
		while (j + 8 <= len)
		{
			uint64		w;

			memcpy(&w, s + j, sizeof(w));
			if (w & UINT64CONST(0x8080808080808080))
				break;
			j += 8;
		}
		while (j < len && s[j] < 0x80)
			j++;
		if (j == len)
		{
			feed_ascii(&t, s + i, len - i);
			break;
		}
		/*
		 * Keep the ASCII character before the non-ASCII run for NFKC (a
		 * combining mark may compose with it); not a NUL, which would end the
		 * normaliser's input (text never holds one, but keep every byte
		 * string well defined).
		 */
		segstart = (j > i && s[j - 1] != 0) ? j - 1 : j;
		feed_ascii(&t, s + i, segstart - i);
		if (wbuf == NULL)
		{
			/* no more code points than bytes: short texts get a small buffer */
			wbufcap = Min(SEGMENT_TARGET_CPS, len - segstart) + 2;
			wbuf = palloc(wbufcap * sizeof(pg_wchar));
		}
		CHECK_FOR_INTERRUPTS();
		i = segstart + feed_segment(&t, s + segstart, len - segstart, &wbuf, &wbufcap);
	}

	/* flush */
	if (kind == SH_FEATURES_WORDS)
	{
		end_token(&t);
		/* fewer tokens than n: the whole document is one feature */
		if (t.n > 1 && t.wintokens > 0 && t.wintokens < t.n)
			emit(arg, t.win, t.winlen);
	}
	else if (t.nchars > 0 && t.nchars < t.n)
		emit_char_ngram(&t, (int) t.nchars);

	if (t.tok)
		pfree(t.tok);
	if (t.win)
		pfree(t.win);
	if (wbuf)
		pfree(wbuf);
}
