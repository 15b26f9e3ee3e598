/*
 * tok_check.h
 *		Shared by fuzz_tokenize.c and tokenize_unit.c: a feature collector
 *		that checks every feature against the rules of the fingerprint
 *		specification (doc/specification.md, "Fingerprint specification") as it is
 *		emitted, and a reference tokeniser written straight from that text.
 *
 * The reference deliberately shares nothing with src/fingerprint/tokenize.c except the
 * frozen data the specification names (the class and folding tables of
 * src/fingerprint/unicode_tables.h and PostgreSQL's NFKC): it decodes the whole input,
 * normalises it in one piece (no segments, no ASCII fast path), then builds
 * tokens and character streams in the most obvious way. Any difference from
 * sh_tokenize() is a bug in one of the two, or a gap in the specification.
 *
 * Header-only (static functions): each program includes it once.
 */
#ifndef TOK_CHECK_H
#define TOK_CHECK_H

#include "postgres_fe.h"

#include <stdarg.h>

#include "common/unicode_norm.h"
#include "mb/pg_wchar.h"

#include "fingerprint/tokenize.h"
#include "fingerprint/unicode_tables.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- small helpers ---- */

static inline int
tc_class(uint32 c)
{
	if (c >= 0x110000)
		return SH_CLS_SEP;
	return sh_cls_stage2[sh_cls_stage1[c >> 8]][c & 0xFF] & SH_CLS_MASK;
}

static inline bool
tc_needs_fold(uint32 c)
{
	if (c >= 0x110000)
		return false;
	return (sh_cls_stage2[sh_cls_stage1[c >> 8]][c & 0xFF] & SH_CLS_FOLD) != 0;
}

/* simple case folding: plain linear search, unlike the tokeniser's bsearch */
static inline uint32
tc_fold(uint32 c)
{
	for (size_t i = 0; i < lengthof(sh_fold_from); i++)
		if (sh_fold_from[i] == c)
			return sh_fold_to[i];
	return c;
}

static inline void
tc_hexdump(FILE *f, const char *label, const void *data, size_t len)
{
	const unsigned char *p = data;

	fprintf(f, "%s (%zu bytes):", label, len);
	for (size_t i = 0; i < len; i++)
		fprintf(f, "%s%02x", (i % 32) ? " " : "\n  ", p[i]);
	fprintf(f, "\n");
}

/*
 * Strict UTF-8 decoding of one code point; -1 if malformed (bad lead byte,
 * truncated, overlong, surrogate, > U+10FFFF).
 */
static inline int
tc_utf8_next(const unsigned char *s, size_t avail, uint32 *cp)
{
	static const unsigned char need[256 - 0x80] = {
		/* 80..BF: continuation bytes, invalid as a lead */
		[0x42] = 2, [0x43] = 2, [0x44] = 2, [0x45] = 2, [0x46] = 2, [0x47] = 2,
		[0x48] = 2, [0x49] = 2, [0x4A] = 2, [0x4B] = 2, [0x4C] = 2, [0x4D] = 2,
		[0x4E] = 2, [0x4F] = 2, [0x50] = 2, [0x51] = 2, [0x52] = 2, [0x53] = 2,
		[0x54] = 2, [0x55] = 2, [0x56] = 2, [0x57] = 2, [0x58] = 2, [0x59] = 2,
		[0x5A] = 2, [0x5B] = 2, [0x5C] = 2, [0x5D] = 2, [0x5E] = 2, [0x5F] = 2,
		[0x60] = 3, [0x61] = 3, [0x62] = 3, [0x63] = 3, [0x64] = 3, [0x65] = 3,
		[0x66] = 3, [0x67] = 3, [0x68] = 3, [0x69] = 3, [0x6A] = 3, [0x6B] = 3,
		[0x6C] = 3, [0x6D] = 3, [0x6E] = 3, [0x6F] = 3,
		[0x70] = 4, [0x71] = 4, [0x72] = 4, [0x73] = 4, [0x74] = 4,
	};
	static const uint32 minval[5] = {0, 0, 0x80, 0x800, 0x10000};
	int			n;
	uint32		v;

	if (s[0] < 0x80)
	{
		*cp = s[0];
		return 1;
	}
	n = need[s[0] - 0x80];
	if (n == 0 || avail < (size_t) n)
		return -1;
	v = s[0] & (0xFF >> (n + 1));
	for (int i = 1; i < n; i++)
	{
		if ((s[i] & 0xC0) != 0x80)
			return -1;
		v = (v << 6) | (s[i] & 0x3F);
	}
	if (v < minval[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return -1;
	*cp = v;
	return n;
}

static inline size_t
tc_put_utf8(uint32 c, char *out)
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

/* ---- growable byte buffer ---- */

typedef struct TcBuf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} TcBuf;

static inline void
tcbuf_reserve(TcBuf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	while (b->len + more > b->cap)
		b->cap = b->cap ? b->cap * 2 : 256;
	b->data = realloc(b->data, b->cap);
	if (b->data == NULL)
	{
		fprintf(stderr, "out of memory\n");
		abort();
	}
}

static inline void
tcbuf_append(TcBuf *b, const void *p, size_t n)
{
	tcbuf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* ---- feature collector ---- */

/*
 * Collects a feature sequence: a digest (count, XOR and sum of the XXH3-64
 * of each feature, and an order-sensitive chain of them) and, when
 * store is set, the features themselves. When check is set, every feature
 * is checked against the specification; the first violation is kept in
 * err (and all later features are still counted).
 */
typedef struct TcFeatures
{
	ShFeatureKind kind;
	int			size;
	bool		store;
	bool		check;

	uint64		count;
	uint64		xor;
	uint64		sum;
	uint64		chain;

	TcBuf		bytes;			/* stored features, back to back */
	size_t	   *ends;			/* ends[i]: end offset of feature i */
	size_t		nends;
	size_t		capends;

	/* for the "only feature may be short" rule */
	uint64		nshort;
	bool		short_has_edge_space;
	/* 'mixed': the same per stream (0: word tokens, 1: single characters) */
	uint64		stream_count[2];
	uint64		stream_nshort[2];

	char		err[512];
} TcFeatures;

static inline void
tcf_init(TcFeatures *f, ShFeatureKind kind, int size, bool store, bool check)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->size = size;
	f->store = store;
	f->check = check;
}

static inline void
tcf_free(TcFeatures *f)
{
	free(f->bytes.data);
	free(f->ends);
	memset(f, 0, sizeof(*f));
}

/* The name of a feature mode, for messages. */
static inline const char *
tc_kind_name(ShFeatureKind kind)
{
	switch (kind)
	{
		case SH_FEATURES_WORDS:
			return "words";
		case SH_FEATURES_CHARS:
			return "chars";
		case SH_FEATURES_MIXED:
			return "mixed";
	}
	return "?";
}

static inline void
tcf_fail(TcFeatures *f, const char *feature, size_t len, const char *fmt,...)
{
	va_list		ap;
	size_t		off;

	if (f->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	off = strlen(f->err);
	snprintf(f->err + off, sizeof(f->err) - off, " [%s size %d, feature #%llu, %zu bytes:",
			 tc_kind_name(f->kind), f->size,
			 (unsigned long long) f->count, len);
	for (size_t i = 0; i < len && i < 48; i++)
	{
		off = strlen(f->err);
		snprintf(f->err + off, sizeof(f->err) - off, " %02x", (unsigned char) feature[i]);
	}
	off = strlen(f->err);
	snprintf(f->err + off, sizeof(f->err) - off, "%s]", len > 48 ? " ..." : "");
}

/*
 * The rules every single feature must obey (specification items 4 and 5):
 *  - not empty, valid UTF-8;
 *  - no separator or ignorable code point, except U+0020 SPACE, and spaces
 *    only where the mode puts them: between the tokens of a word n-gram
 *    (never at the ends, never two in a row), or as the one space that
 *    stands for a run of separators in character n-grams (never two in a
 *    row; never at the ends of the whole text);
 *  - in words mode each space-separated part is one token: a run of word
 *    characters and marks, or one single character followed by marks; a
 *    full window has exactly size tokens;
 *  - in chars mode a full window has exactly size code points;
 *  - in mixed mode a feature's tokens are all words (a full window has size
 *    of them) or all single characters (SH_MIXED_SINGLE_N of them).
 * A feature with fewer tokens / code points than size is allowed only as the
 * only feature of the document (of its stream in mixed mode; checked in
 * tcf_finish).
 */
static inline void
tcf_check_one(TcFeatures *f, const char *feature, size_t len)
{
	const unsigned char *s = (const unsigned char *) feature;
	size_t		pos = 0;
	int			ncp = 0;
	int			ntok = 1;
	int			tokpos = 0;		/* code points in the current token so far */
	bool		tok_single = false;
	int			nsingle = 0;	/* mixed: tokens that start with a single char */
	bool		words_like = (f->kind != SH_FEATURES_CHARS);
	int			limit = f->size;
	uint32		prev = 0;
	bool		first_space = false,
				last_space = false;

	if (len == 0)
	{
		tcf_fail(f, feature, len, "empty feature");
		return;
	}
	while (pos < len)
	{
		uint32		c;
		int			n = tc_utf8_next(s + pos, len - pos, &c);
		int			cls;

		if (n < 0)
		{
			tcf_fail(f, feature, len, "invalid UTF-8 at byte %zu", pos);
			return;
		}
		if (c == ' ')
		{
			if (f->kind == SH_FEATURES_WORDS && f->size == 1)
			{
				tcf_fail(f, feature, len, "U+0020 in a size-1 word feature");
				return;
			}
			if (ncp > 0 && prev == ' ')
			{
				tcf_fail(f, feature, len, "two spaces in a row");
				return;
			}
			if (ncp == 0)
				first_space = true;
			if (words_like)
			{
				if (ncp == 0)
				{
					tcf_fail(f, feature, len, "word n-gram starts with a space");
					return;
				}
				ntok++;
				tokpos = 0;
				tok_single = false;
			}
		}
		else
		{
			cls = tc_class(c);
			if (cls == SH_CLS_SEP || cls == SH_CLS_IGNORE)
			{
				tcf_fail(f, feature, len, "%s code point U+%04X in a feature",
						 cls == SH_CLS_SEP ? "separator" : "ignorable", c);
				return;
			}
			if (words_like)
			{
				/* token = (word|mark)+  or  single mark* */
				if (cls == SH_CLS_SINGLE)
				{
					if (tokpos > 0)
					{
						tcf_fail(f, feature, len, "single-class U+%04X inside a token", c);
						return;
					}
					tok_single = true;
					nsingle++;
				}
				/*
				 * No check of a word character after a single-class one: a
				 * mark extends a single token and may case-fold to a word
				 * letter (U+0345 folds to U+03B9), which is legal. The
				 * comparison with the reference tokeniser covers it.
				 */
				(void) tok_single;
				tokpos++;
			}
		}
		last_space = (c == ' ');
		prev = c;
		ncp++;
		pos += n;
	}
	if (words_like)
	{
		int			stream = 0;

		if (last_space)
		{
			tcf_fail(f, feature, len, "word n-gram ends with a space");
			return;
		}
		if (f->kind == SH_FEATURES_MIXED)
		{
			if (nsingle > 0 && nsingle < ntok)
			{
				tcf_fail(f, feature, len, "%d single characters among %d tokens: a mixed feature holds one stream",
						 nsingle, ntok);
				return;
			}
			stream = (nsingle > 0);
			if (stream == 1)
				limit = SH_MIXED_SINGLE_N;
			else if (f->size == 1 && ntok > 1)
			{
				tcf_fail(f, feature, len, "U+0020 in a size-1 word feature");
				return;
			}
			f->stream_count[stream]++;
		}
		if (ntok > limit)
		{
			tcf_fail(f, feature, len, "%d tokens in a feature of size %d", ntok, limit);
			return;
		}
		if (ntok < limit)
		{
			f->nshort++;
			f->stream_nshort[stream]++;
			f->short_has_edge_space = false;
		}
	}
	else
	{
		if (ncp > f->size)
		{
			tcf_fail(f, feature, len, "%d code points in a feature of size %d", ncp, f->size);
			return;
		}
		if (ncp < f->size)
		{
			f->nshort++;
			f->short_has_edge_space = first_space || last_space;
		}
	}
}

static inline void
tcf_emit(void *arg, const char *feature, size_t len, uint64 hash)
{
	TcFeatures *f = arg;
	uint64		h = XXH3_64bits(feature, len);

	/* specification version 1: every feature is hashed as its bytes */
	if (f->check && hash != h)
		tcf_fail(f, feature, len, "hash %016llx is not XXH3 of the feature's bytes",
				 (unsigned long long) hash);
	if (f->check)
		tcf_check_one(f, feature, len);
	f->count++;
	f->xor ^= h;
	f->sum += h;
	f->chain = f->chain * UINT64CONST(0x100000001B3) + h + 1;
	if (f->store)
	{
		tcbuf_append(&f->bytes, feature, len);
		if (f->nends == f->capends)
		{
			f->capends = f->capends ? f->capends * 2 : 64;
			f->ends = realloc(f->ends, f->capends * sizeof(size_t));
			if (f->ends == NULL)
				abort();
		}
		f->ends[f->nends++] = f->bytes.len;
	}
}

/* document-level rules, after the last feature */
static inline void
tcf_finish(TcFeatures *f)
{
	if (!f->check || f->err[0])
		return;
	if (f->kind == SH_FEATURES_MIXED)
	{
		for (int st = 0; st < 2; st++)
			if (f->stream_nshort[st] > 0 && f->stream_count[st] != 1)
				snprintf(f->err, sizeof(f->err),
						 "%llu short feature(s) among %llu of the %s stream: only the only feature may be short [mixed size %d]",
						 (unsigned long long) f->stream_nshort[st],
						 (unsigned long long) f->stream_count[st],
						 st ? "single characters'" : "words'", f->size);
		return;
	}
	if (f->nshort > 0 && f->count != 1)
		snprintf(f->err, sizeof(f->err),
				 "%llu short feature(s) among %llu: only the only feature may be short [%s size %d]",
				 (unsigned long long) f->nshort, (unsigned long long) f->count,
				 tc_kind_name(f->kind), f->size);
	else if (f->nshort > 0 && f->short_has_edge_space)
		snprintf(f->err, sizeof(f->err),
				 "the whole-text feature starts or ends with a space [chars size %d]", f->size);
}

static inline void
tcf_get(const TcFeatures *f, size_t i, const char **p, size_t *len)
{
	size_t		start = i ? f->ends[i - 1] : 0;

	*p = f->bytes.data + start;
	*len = f->ends[i] - start;
}

static inline bool
tcf_same_digest(const TcFeatures *a, const TcFeatures *b)
{
	return a->count == b->count && a->xor == b->xor && a->sum == b->sum &&
		a->chain == b->chain;
}

/* Both stored: exact comparison; on difference describe the first one. */
static inline bool
tcf_same(const TcFeatures *a, const TcFeatures *b, char *why, size_t whylen)
{
	size_t		n = Min(a->nends, b->nends);

	Assert(a->store && b->store);
	for (size_t i = 0; i < n; i++)
	{
		const char *pa,
				   *pb;
		size_t		la,
					lb;

		tcf_get(a, i, &pa, &la);
		tcf_get(b, i, &pb, &lb);
		if (la != lb || (la > 0 && memcmp(pa, pb, la) != 0))
		{
			snprintf(why, whylen, "feature #%zu differs: \"%.*s\" vs \"%.*s\"",
					 i, (int) Min(la, 80), pa, (int) Min(lb, 80), pb);
			return false;
		}
	}
	if (a->nends != b->nends)
	{
		snprintf(why, whylen, "%zu features vs %zu", a->nends, b->nends);
		return false;
	}
	return true;
}

/* ---- the reference tokeniser ---- */

/*
 * The document after items 1 to 4 of the specification, for both modes at
 * size 1:
 * tokens (words mode) and the collapsed character stream (chars mode).
 */
typedef struct TcRef
{
	TcBuf		tokens;			/* token bytes back to back */
	size_t	   *tokend;
	unsigned char *tokkind;		/* per token: 1 word, 2 single character */
	size_t		ntok;
	uint32	   *chars;			/* chars-mode text, code points */
	size_t		nchars;
} TcRef;

static inline void
tcref_free(TcRef *r)
{
	free(r->tokens.data);
	free(r->tokend);
	free(r->tokkind);
	free(r->chars);
	memset(r, 0, sizeof(*r));
}

/*
 * NFKC of in[0..n) (a NUL-terminated array) into *out. With whole, in one
 * call. Otherwise in pieces split only between two adjacent ASCII
 * characters: an ASCII character is a starter that never decomposes, never
 * reorders and is never the second half of a composition, so neither
 * neighbour can interact across such a split. That is a weaker rule than
 * src/fingerprint/tokenize.c's (it also splits between non-ASCII and ASCII, keeps one
 * ASCII character back, and splits long ASCII-free runs), so the
 * tokeniser's segmenting is still tested; it only spares the (slow,
 * linear-search) frontend normaliser the ASCII bulk of large documents.
 */
static inline pg_wchar *
tc_nfkc(pg_wchar *in, size_t n, bool whole, size_t *outlen)
{
	pg_wchar   *out;
	size_t		len = 0,
				cap = n + 1;
	size_t		start = 0;

	if (whole)
	{
		out = unicode_normalize(UNICODE_NFKC, in);
		if (out == NULL)
			abort();
		while (out[len])
			len++;
		*outlen = len;
		return out;
	}
	out = malloc(cap * sizeof(pg_wchar));
	if (out == NULL)
		abort();
	while (start < n)
	{
		size_t		end = start + 1;
		bool		ascii = in[start] < 0x80;

		while (end < n && !(in[end - 1] < 0x80 && in[end] < 0x80))
		{
			if (in[end] >= 0x80)
				ascii = false;
			end++;
		}
		if (ascii)
		{
			if (len + (end - start) + 1 > cap)
			{
				cap = 2 * (len + (end - start) + 1);
				out = realloc(out, cap * sizeof(pg_wchar));
				if (out == NULL)
					abort();
			}
			memcpy(out + len, in + start, (end - start) * sizeof(pg_wchar));
			len += end - start;
		}
		else
		{
			pg_wchar	saved = in[end];
			pg_wchar   *piece;
			size_t		plen = 0;

			in[end] = 0;
			piece = unicode_normalize(UNICODE_NFKC, in + start);
			in[end] = saved;
			if (piece == NULL)
				abort();
			while (piece[plen])
				plen++;
			if (len + plen + 1 > cap)
			{
				cap = 2 * (len + plen + 1);
				out = realloc(out, cap * sizeof(pg_wchar));
				if (out == NULL)
					abort();
			}
			memcpy(out + len, piece, plen * sizeof(pg_wchar));
			len += plen;
			free(piece);
		}
		start = end;
	}
	out[len] = 0;
	*outlen = len;
	return out;
}

/*
 * Input must not contain NUL bytes (PostgreSQL text never does, and the
 * normaliser takes a NUL-terminated array). whole: see tc_nfkc.
 */
static inline void
tcref_build(TcRef *r, const char *text, size_t len, bool whole)
{
	const unsigned char *s = (const unsigned char *) text;
	pg_wchar   *in = malloc((len + 1) * sizeof(pg_wchar));
	pg_wchar   *norm;
	size_t		n = 0,
				nnorm,
				pos = 0;
	int			state = 0;		/* 0 none, 1 word token, 2 single token */
	bool		pending_space = false;
	size_t		capend = 64;

	memset(r, 0, sizeof(*r));
	if (in == NULL)
		abort();

	/* 1. UTF-8, one U+FFFD per offending byte */
	while (pos < len)
	{
		uint32		c;
		int			k = tc_utf8_next(s + pos, len - pos, &c);

		if (k < 0)
		{
			c = 0xFFFD;
			k = 1;
		}
		if (c == 0)
		{
			fprintf(stderr, "tcref_build: NUL in input\n");
			abort();
		}
		in[n++] = c;
		pos += k;
	}
	in[n] = 0;

	/* 2.1 NFKC */
	norm = tc_nfkc(in, n, whole, &nnorm);
	free(in);

	r->tokend = malloc(capend * sizeof(size_t));
	r->tokkind = malloc(capend);
	r->chars = malloc((2 * nnorm + 1) * sizeof(uint32));
	if (r->tokend == NULL || r->tokkind == NULL || r->chars == NULL)
		abort();

	for (size_t i = 0; i < nnorm; i++)
	{
		uint32		c = norm[i];
		int			cls = tc_class(c);	/* class before folding */
		char		u[4];
		size_t		ulen;

		/* 2.2 simple case folding */
		if (tc_needs_fold(c))
			c = tc_fold(c);
		ulen = tc_put_utf8(c, u);

		/* chars mode: ignorables dropped, separator runs -> one space */
		if (cls == SH_CLS_SEP)
		{
			if (r->nchars > 0)
				pending_space = true;
		}
		else if (cls != SH_CLS_IGNORE)
		{
			if (pending_space)
				r->chars[r->nchars++] = ' ';
			pending_space = false;
			r->chars[r->nchars++] = c;
		}

		/* words mode: token boundaries */
		{
			bool		close = false,
						append = false;
			int			newstate = state;

			switch (cls)
			{
				case SH_CLS_WORD:
					close = (state == 2);
					append = true;
					newstate = 1;
					break;
				case SH_CLS_SINGLE:
					close = (state != 0);
					append = true;
					newstate = 2;
					break;
				case SH_CLS_MARK:
					append = true;
					newstate = state ? state : 1;
					break;
				case SH_CLS_IGNORE:
					break;
				default:
					close = (state != 0);
					newstate = 0;
					break;
			}
			if (close)
			{
				if (r->ntok == capend)
				{
					capend *= 2;
					r->tokend = realloc(r->tokend, capend * sizeof(size_t));
					r->tokkind = realloc(r->tokkind, capend);
					if (r->tokend == NULL || r->tokkind == NULL)
						abort();
				}
				r->tokkind[r->ntok] = (unsigned char) state;
				r->tokend[r->ntok++] = r->tokens.len;
			}
			if (append)
				tcbuf_append(&r->tokens, u, ulen);
			state = newstate;
		}
	}
	if (state != 0)
	{
		if (r->ntok == capend)
		{
			capend *= 2;
			r->tokend = realloc(r->tokend, capend * sizeof(size_t));
			r->tokkind = realloc(r->tokkind, capend);
			if (r->tokend == NULL || r->tokkind == NULL)
				abort();
		}
		r->tokkind[r->ntok] = (unsigned char) state;
		r->tokend[r->ntok++] = r->tokens.len;
	}
	free(norm);
}

/* Section 4: the features of kind/size, fed to emit in document order. */
static inline void
tcref_features(const TcRef *r, ShFeatureKind kind, int size,
			   ShEmitFn emit, void *arg)
{
	TcBuf		b = {0};

	if (kind == SH_FEATURES_MIXED)
	{
		/*
		 * Two streams, word tokens and single characters; an n-gram is
		 * emitted when the token completing it is read; at the end a stream
		 * shorter than its n gives one feature, words first.
		 */
		size_t	   *idx[2];
		size_t		cnt[2] = {0, 0};
		int			nn[2] = {size, SH_MIXED_SINGLE_N};

		idx[0] = malloc((r->ntok + 1) * sizeof(size_t));
		idx[1] = malloc((r->ntok + 1) * sizeof(size_t));
		if (idx[0] == NULL || idx[1] == NULL)
			abort();
		for (size_t t = 0; t < r->ntok; t++)
		{
			int			st = (r->tokkind[t] == 2);
			size_t		from;

			idx[st][cnt[st]++] = t;
			if (cnt[st] < (size_t) nn[st])
				continue;
			from = cnt[st] - nn[st];
			b.len = 0;
			for (size_t k = from; k < cnt[st]; k++)
			{
				size_t		tk = idx[st][k];
				size_t		start = tk ? r->tokend[tk - 1] : 0;

				if (k > from)
					tcbuf_append(&b, " ", 1);
				tcbuf_append(&b, r->tokens.data + start, r->tokend[tk] - start);
			}
			emit(arg, b.data, b.len, XXH3_64bits(b.data, b.len));
		}
		for (int st = 0; st < 2; st++)
		{
			if (cnt[st] == 0 || cnt[st] >= (size_t) nn[st])
				continue;
			b.len = 0;
			for (size_t k = 0; k < cnt[st]; k++)
			{
				size_t		tk = idx[st][k];
				size_t		start = tk ? r->tokend[tk - 1] : 0;

				if (k > 0)
					tcbuf_append(&b, " ", 1);
				tcbuf_append(&b, r->tokens.data + start, r->tokend[tk] - start);
			}
			emit(arg, b.data, b.len, XXH3_64bits(b.data, b.len));
		}
		free(idx[0]);
		free(idx[1]);
	}
	else if (kind == SH_FEATURES_WORDS)
	{
		size_t		nwin;

		if (r->ntok == 0)
			return;
		nwin = (r->ntok < (size_t) size) ? 1 : r->ntok - size + 1;
		for (size_t w = 0; w < nwin; w++)
		{
			size_t		last = Min(w + size, r->ntok);

			b.len = 0;
			for (size_t t = w; t < last; t++)
			{
				size_t		start = t ? r->tokend[t - 1] : 0;

				if (t > w)
					tcbuf_append(&b, " ", 1);
				tcbuf_append(&b, r->tokens.data + start, r->tokend[t] - start);
			}
			emit(arg, b.data, b.len, XXH3_64bits(b.data, b.len));
		}
	}
	else
	{
		size_t		nwin;

		if (r->nchars == 0)
			return;
		nwin = (r->nchars < (size_t) size) ? 1 : r->nchars - size + 1;
		for (size_t w = 0; w < nwin; w++)
		{
			size_t		last = Min(w + size, r->nchars);

			b.len = 0;
			for (size_t k = w; k < last; k++)
			{
				char		u[4];

				tcbuf_append(&b, u, tc_put_utf8(r->chars[k], u));
			}
			emit(arg, b.data, b.len, XXH3_64bits(b.data, b.len));
		}
	}
	free(b.data);
}

#endif							/* TOK_CHECK_H */
