/*
 * tokenize.c
 *		Turn UTF-8 text into simhash features in one streaming pass.
 *
 * Pipeline, per code point: Unicode NFKC (pinned to Unicode 14.0, nfkc.c), simple
 * case folding and classification (our frozen tables, unicode_tables.h),
 * from specification version 2 Han variant folding (the same tables), then
 * either tokens (runs of word characters; every character of an
 * unsegmented script such as Han is a token of its own) grouped into word
 * n-grams, or character n-grams over the text with separators collapsed.
 * doc/specification.md, "Fingerprint specification", states these rules for users;
 * this file must keep to them exactly, since stored fingerprints depend on
 * them.
 *
 * Runs of ASCII, by far the commonest input, skip the per-code-point
 * pipeline: in words mode they are folded and classified a block of 64
 * bytes at a time (SSE2 where available) and tokens are found from bit masks
 * and passed on in place (see feed_ascii_words); in chars mode each byte is
 * one character of the stream.
 *
 * Features go to one of two sinks: a callback per feature, in document order
 * (sh_tokenize), or batches of feature hashes (sh_tokenize_hashed), which is
 * what a fingerprint needs and is cheaper.
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

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "fingerprint/nfkc.h"
#include "mb/pg_wchar.h"
#include "port/pg_bitutils.h"

#include "fingerprint/feature_hash.h"
#include "fingerprint/tokenize.h"
#include "fingerprint/unicode_tables.h"

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

/* ASCII is classified and tokenised this many bytes at a time. */
#define ASCII_CHUNK			2048

/* Feature hashes are handed to the hash sink this many at a time. */
#define HASH_BATCH			64

#define REPLACEMENT_CHAR	0xFFFD

StaticAssertDecl(ASCII_CHUNK % 64 == 0 && ASCII_CHUNK <= PG_UINT16_MAX,
				 "chunk offsets are uint16, masks cover 64 bytes each");
StaticAssertDecl(INTERRUPT_INTERVAL % ASCII_CHUNK == 0,
				 "an interrupt check interval is whole chunks");

typedef enum TokState
{
	TOK_NONE = 0,
	TOK_WORD,					/* current token may grow with more letters */
	TOK_SINGLE					/* current token is one unsegmented char (+ marks) */
} TokState;

/*
 * The last (up to) n items of a stream, back to back in one byte buffer:
 * tokens joined by single spaces for word n-grams, characters (UTF-8) for
 * character n-grams. The ring start[] holds where each item begins, so the
 * n-gram is the buffer from the oldest item's start to its end; the buffer
 * is compacted (older items dropped) only when it is full.
 */
typedef struct ShWindow
{
	char	   *buf;
	size_t		len;
	size_t		cap;
	size_t		start[SH_MAX_NGRAM];
	int			n;				/* items in an n-gram */
	int			head;			/* slot of the next item: of the oldest when full */
	int			count;			/* items held, at most n */
} ShWindow;

typedef struct ShTokenizer
{
	ShFeatureKind kind;
	int			n;
	bool		fold_variants;	/* specification version 2 and later */

	/* the sink: emit != NULL, or else hashes in batches to hashfn */
	ShEmitFn	emit;
	void	   *arg;
	ShHashBatchFn hashfn;
	int			nhashes;
	uint64		hashes[HASH_BATCH];

	/* words: the token being built when it is not in the input as such */
	char	   *tok;
	size_t		toklen;
	size_t		tokcap;
	TokState	tokstate;

	/* words, n > 1, and chars: the last n items (win.n == n) */
	ShWindow	win;
	/* mixed: the last SH_MIXED_SINGLE_N single characters, a stream of their own */
	ShWindow	swin;
	bool		pending_space;	/* chars: a separator run since the last char */
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

/*
 * The mapping of c in a table of sorted from[] and their to[] (n entries),
 * or c itself when it is not in the table.
 */
static pg_wchar
map_search(const uint32 *from, const uint32 *to, int n, pg_wchar c)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (from[mid] == c)
			return to[mid];
		if (from[mid] < c)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return c;
}

/* Simple case folding; see fold_char for the callers. */
static pg_wchar
fold_char_search(pg_wchar c)
{
	return map_search(sh_fold_from, sh_fold_to, lengthof(sh_fold_from), c);
}

/*
 * Han variant folding (specification version 2); only called for characters
 * flagged SH_CLS_VARIANT, all of which are in the table.
 */
static inline pg_wchar
variant_char(pg_wchar c)
{
	return map_search(sh_variant_from, sh_variant_to, lengthof(sh_variant_from), c);
}

/*
 * The ASCII tables, derived from the Unicode tables at first use so the rules
 * stay in one place: the folded character for a word character, 0 for a
 * separator (ASCII has no other classes).
 */
static bool ascii_ready = false;
static char ascii_word_folded[128];

static void
init_ascii_tables(void)
{
	for (int c = 0; c < 128; c++)
	{
		uint8		cls = char_class(c);

		Assert((cls & SH_CLS_MASK) == SH_CLS_WORD || (cls & SH_CLS_MASK) == SH_CLS_SEP);
		if ((cls & SH_CLS_MASK) == SH_CLS_WORD)
			ascii_word_folded[c] = (char) ((cls & SH_CLS_FOLD) ? fold_char_search(c) : c);
		else
			ascii_word_folded[c] = 0;

		/* classify_block() hard-codes these rules for SSE2 */
		Assert((ascii_word_folded[c] != 0) ==
			   ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')));
		Assert(ascii_word_folded[c] == 0 ||
			   ascii_word_folded[c] == ((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c));
	}
	ascii_ready = true;
}

/* Simple case folding; only called for characters flagged SH_CLS_FOLD. */
static inline pg_wchar
fold_char(pg_wchar c)
{
	if (c < 0x80)
		return (pg_wchar) (unsigned char) ascii_word_folded[c];
	return fold_char_search(c);
}

/* ---- the sinks ---- */

/*
 * For the hot loops that hash features for the hash sink: inline all they
 * call, XXH3 included, which the compiler would otherwise call out of line.
 */
#if defined(__GNUC__) || defined(__clang__)
#define HASH_LOOP __attribute__((flatten))
#else
#define HASH_LOOP
#endif

static void
flush_hashes(ShTokenizer *t)
{
	if (t->nhashes > 0)
		t->hashfn(t->arg, t->hashes, t->nhashes);
	t->nhashes = 0;
}

static inline void
add_hash(ShTokenizer *t, uint64 h)
{
	t->hashes[t->nhashes++] = h;
	if (t->nhashes == HASH_BATCH)
		flush_hashes(t);
}

/* One feature occurrence, to whichever sink the tokeniser has. */
static inline void
emit_feature(ShTokenizer *t, const char *feature, size_t len)
{
	uint64		h = sh_hash_feature(feature, len);

	if (t->emit)
		t->emit(t->arg, feature, len, h);
	else
		add_hash(t, h);
}

/* ---- the window of the last n items ---- */

/*
 * Make room for need more bytes: first drop what the next n-gram no longer
 * needs (all but the last n - 1 items), then grow if the buffer would still
 * be more than half full, so that compacting stays rare.
 */
static void
window_reserve(ShWindow *w, size_t need)
{
	int			keep;
	size_t		from;

	if (w->len + need <= w->cap)
		return;
	keep = Min(w->count, w->n - 1);
	if (keep > 0)
	{
		int			slot = w->head - keep;

		if (slot < 0)
			slot += w->n;
		from = w->start[slot];
		for (int k = 0; k < keep; k++)
		{
			w->start[slot] -= from;
			if (++slot == w->n)
				slot = 0;
		}
	}
	else
		from = w->len;
	if (from > 0)
	{
		memmove(w->buf, w->buf + from, w->len - from);
		w->len -= from;
	}
	if (w->len + need > w->cap / 2)
		grow_buffer(&w->buf, &w->cap, 2 * (w->len + need));
}

/* No n-gram yet: the window is not full. */
#define NO_NGRAM	SIZE_MAX

/*
 * The item starting at buf[from], already written, is the next one. Returns
 * where the n-gram it completes starts (it ends where the item ends), or
 * NO_NGRAM.
 *
 * The fast paths write a whole chunk's items first and add them after: an
 * n-gram hashed right after its bytes were stored one by one would make
 * the CPU wait for the stores (they cannot be forwarded to a wider load).
 */
static inline size_t
window_next(ShWindow *w, size_t from)
{
	w->start[w->head] = from;
	if (++w->head == w->n)
		w->head = 0;
	if (w->count < w->n)
	{
		w->count++;
		if (w->count < w->n)
			return NO_NGRAM;
	}
	/* full: the slot of the next item holds the oldest item */
	return w->start[w->head];
}

/* Add the item at buf[from .. to - 1] and emit the n-gram it completes. */
static inline void
window_add(ShTokenizer *t, ShWindow *w, size_t from, size_t to)
{
	size_t		ngram = window_next(w, from);

	if (ngram != NO_NGRAM)
		emit_feature(t, w->buf + ngram, to - ngram);
}

/* Append an item, after a space for word n-grams, and add it. */
static inline void
window_push(ShTokenizer *t, ShWindow *w, const char *item, size_t len, bool join)
{
	window_reserve(w, len + 1);
	if (join && w->count > 0)
		w->buf[w->len++] = ' ';
	memcpy(w->buf + w->len, item, len);
	w->len += len;
	window_add(t, w, w->len - len, w->len);
}

/* At the end of the text: fewer than n items make one feature. */
static void
window_flush(ShTokenizer *t, ShWindow *w)
{
	if (w->count > 0 && w->count < w->n)
	{
		/* never full, so never compacted: the first item is at 0 */
		Assert(w->start[0] == 0);
		emit_feature(t, w->buf, w->len);
	}
}

/* ---- words and word n-grams ---- */

static inline void
word_feature(ShTokenizer *t, const char *token, size_t len)
{
	if (t->n == 1)
		emit_feature(t, token, len);
	else
		window_push(t, &t->win, token, len, true);
}

/*
 * The token just read is complete: a feature of the word stream, or in
 * 'mixed' mode, a single character (with its marks) goes to the stream of
 * single characters, whose n-grams are SH_MIXED_SINGLE_N long.
 */
static inline void
end_token(ShTokenizer *t)
{
	if (t->tokstate == TOK_NONE)
		return;
	if (t->tokstate == TOK_SINGLE && t->kind == SH_FEATURES_MIXED)
		window_push(t, &t->swin, t->tok, t->toklen, true);
	else
		word_feature(t, t->tok, t->toklen);
	t->toklen = 0;
	t->tokstate = TOK_NONE;
}

static inline void
token_append_bytes(ShTokenizer *t, const char *p, size_t len)
{
	if (t->toklen + len > t->tokcap)
		grow_buffer(&t->tok, &t->tokcap, t->toklen + len);
	memcpy(t->tok + t->toklen, p, len);
	t->toklen += len;
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

static inline void
feed_ngram_char(ShTokenizer *t, pg_wchar c, uint8 cls)
{
	char		buf[4];

	switch (cls & SH_CLS_MASK)
	{
		case SH_CLS_IGNORE:
			break;
		case SH_CLS_SEP:
			/* a run of separators becomes one space between characters */
			if (t->win.count > 0)
				t->pending_space = true;
			break;
		default:
			if (t->pending_space)
			{
				window_push(t, &t->win, " ", 1, false);
				t->pending_space = false;
			}
			window_push(t, &t->win, buf, encode_utf8(c, buf), false);
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
	/* a variant and its representative share their class: cls stays right */
	if ((cls & SH_CLS_VARIANT) && t->fold_variants)
		c = variant_char(c);
	if (t->kind == SH_FEATURES_CHARS)
		feed_ngram_char(t, c, cls);
	else
		feed_word_char(t, c, cls);
}

#ifdef __SSE2__
/*
 * 0xFF in each byte of x in lo .. lo + n - 1, else 0. Only for ASCII bytes
 * (< 0x80), so that a signed compare does: adding 0x80 - lo wraps that range
 * to -128 .. -128 + n - 1 and nothing else below -128 + n.
 */
static inline __m128i
bytes_in_range(__m128i x, char lo, int n)
{
	return _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8((char) (0x80 - lo))),
						  _mm_set1_epi8((char) (0x80 + n)));
}
#endif

/*
 * Fold the 64 ASCII bytes at in into out, and return the mask of word
 * characters among them (bit i for byte i). Separators may come out as
 * anything: only word characters are read from out.
 */
static inline uint64
classify_block(const unsigned char *in, char *out)
{
	uint64		mask = 0;

#ifdef __SSE2__
	/*
	 * The rules of the tables (checked in init_ascii_tables): word characters
	 * are [0-9A-Za-z], and folding adds 0x20 to [A-Z].
	 */
	const __m128i case_bit = _mm_set1_epi8(0x20);

	for (int k = 0; k < 4; k++)
	{
		__m128i		c = _mm_loadu_si128((const __m128i *) (in + 16 * k));
		__m128i		alpha = bytes_in_range(_mm_or_si128(c, case_bit), 'a', 26);
		__m128i		digit = bytes_in_range(c, '0', 10);
		__m128i		upper = bytes_in_range(c, 'A', 26);

		_mm_storeu_si128((__m128i *) (out + 16 * k),
						 _mm_or_si128(c, _mm_and_si128(upper, case_bit)));
		mask |= (uint64) (uint16) _mm_movemask_epi8(_mm_or_si128(alpha, digit)) << (16 * k);
	}
#else
	for (int i = 0; i < 64; i++)
	{
		char		f = ascii_word_folded[in[i]];

		out[i] = f;
		mask |= (uint64) (f != 0) << i;
	}
#endif
	return mask;
}

/*
 * The tokens of a chunk of ASCII, each as its start | length << 16, in lists:
 * in document order in list[0], or by length in three lists (see
 * find_tokens).
 */
typedef struct ChunkTokens
{
	int			n[3];
	uint32		list[3][ASCII_CHUNK / 2];	/* a token and a separator take 2 bytes */
} ChunkTokens;

#define TOKEN_START(tok)	((tok) & 0xFFFF)
#define TOKEN_LEN(tok)		((tok) >> 16)

/*
 * Record a token. By length, it goes into the list for XXH3's code path
 * for its length (1-3, 4-8, more bytes): every list gets it, and only its
 * own count grows, which costs no branch.
 */
static pg_attribute_always_inline void
add_token(uint32 **list, int *n, int start, int len, bool by_length)
{
	uint32		tok = (uint32) start | (uint32) len << 16;

	list[0][n[0]] = tok;
	if (!by_length)
	{
		n[0]++;
		return;
	}
	list[1][n[1]] = tok;
	list[2][n[2]] = tok;
	n[0] += (len <= 3);
	n[1] += ((unsigned) len - 4 <= 8 - 4);
	n[2] += (len > 8);
}

/*
 * The length of a token of more than 64 bytes starting at bit start of
 * block b: the distance to the first separator after it (there is one: no
 * token runs to the end of the chunk).
 */
static pg_noinline int
long_token_len(const uint64 *masks, int nblocks, int b, int start)
{
	int			pos = 64 * b + start;
	int			i = pos + 64;	/* the 64 bytes from start are word characters */

	while (masks[i / 64] & (UINT64CONST(1) << (i % 64)))
	{
		i++;
		Assert(i < 64 * nblocks);
	}
	return i - pos;
}

/*
 * The tokens of the word masks of a chunk, into ct. No token may run to
 * the end of the last block (see feed_ascii_words_chunk). A token is found
 * from its start bit: it ends at the next separator, looked for in the 64
 * bytes from its start, over this block and the next (a token of more than
 * 64 bytes takes a loop, out of line). Looking into the next block, rather
 * than carrying a token that runs to the end of the block over to the next
 * one, spares the branches on whether it does (mispredicted about once a
 * block, every ten tokens or so).
 */
static pg_attribute_always_inline void
find_tokens(const uint64 *masks, int nblocks, ChunkTokens *ct, bool by_length)
{
	uint32	   *list[3] = {ct->list[0], ct->list[1], ct->list[2]};
	int			n[3] = {0, 0, 0};
	uint64		carry = 0;		/* whether the last byte of the block before is a word character */

	for (int b = 0; b < nblocks; b++)
	{
		uint64		w = masks[b];
		uint64		next = (b + 1 < nblocks) ? masks[b + 1] : 0;
		uint64		starts = w & ~((w << 1) | carry);
		int			base = 64 * b;

		carry = w >> 63;
		while (starts)
		{
			int			start = pg_rightmost_one_pos64(starts);

			/*
			 * Bit i: whether byte base + start + i is a separator, for i <
			 * 64 (next << (64 - start), in two steps: a shift by 64 is
			 * undefined).
			 */
			uint64		after = ~((w >> start) | ((next << 1) << (63 - start)));
			int			len;

			starts &= starts - 1;
			if (likely(after != 0))
				len = pg_rightmost_one_pos64(after);
			else
				len = long_token_len(masks, nblocks, b, start);
			add_token(list, n, base + start, len, by_length);
		}
	}
	for (int g = 0; g < 3; g++)
		ct->n[g] = by_length ? n[g] : (g == 0 ? n[0] : 0);
}

/*
 * Hash the tokens of a chunk, found by length, for the hash sink: the
 * hottest loop of simhash(text).
 */
HASH_LOOP static void
hash_token_groups(ShTokenizer *t, const char *folded, const ChunkTokens *ct)
{
	for (int g = 0; g < 3; g++)
		for (int k = 0; k < ct->n[g]; k++)
			add_hash(t, sh_hash_feature(folded + TOKEN_START(ct->list[g][k]),
										TOKEN_LEN(ct->list[g][k])));
}

/*
 * Hash the count n-grams of a chunk for the hash sink, into a local array
 * handed over in one call: counting them into t->hashes one by one chained
 * every hash to the store of the count before it. N-gram j runs from the
 * start of item j to the end of item j + n - 1 (see window_add_tokens for
 * the arrays).
 */
HASH_LOOP static void
hash_ngrams(ShTokenizer *t, const char *buf, const size_t *item_start,
			const size_t *ngram_end, int count)
{
	uint64		hashes[ASCII_CHUNK / 2];

	Assert(count <= ASCII_CHUNK / 2);
	if (count == 0)
		return;
	for (int j = 0; j < count; j++)
		hashes[j] = sh_hash_feature(buf + item_start[j], ngram_end[j] - item_start[j]);
	flush_hashes(t);			/* those before, in order */
	t->hashfn(t->arg, hashes, count);
}

/*
 * Word n-grams (n > 1): the tokens of a chunk are written to the window
 * buffer, and only then are the n-grams hashed or emitted (hashing bytes
 * just stored would wait for the stores). Where items start is kept in a
 * local array (the window's last n - 1 items, then the chunk's), not the
 * window's ring, which is rewritten once at the end: updating the ring in
 * memory token by token made each token wait for the store of the one
 * before.
 *
 * The n-grams completed here are those ending at the chunk's tokens from
 * item n - 1 on: n-gram j is items j .. j + n - 1, and since at most n - 1
 * items come from the window, its last item is always one of the chunk's,
 * whose end is noted as it is written. So the loop over tokens stores
 * where each starts and ends and nothing else, with no branch on whether a
 * token completes an n-gram.
 */
static void
window_add_tokens(ShTokenizer *t, const char *folded, const uint32 *tokens, int ntokens)
{
	ShWindow   *w = &t->win;
	int			n = t->n;
	int			before;			/* items of the window that start n-grams here */
	int			nitems;
	int			nngrams;
	int			count;
	size_t		need;
	size_t		len;
	size_t		sep;
	char	   *buf;
	size_t		item_start[SH_MAX_NGRAM + ASCII_CHUNK / 2];
	size_t		token_end[ASCII_CHUNK / 2];

	Assert(n > 1);
	if (ntokens == 0)
		return;
	/*
	 * Each token and the space before it: no more than the chunk's bytes from
	 * the first token's start to the last one's end, plus one. Short tokens
	 * are copied as 16 bytes (folded has room to read them).
	 */
	need = TOKEN_START(tokens[ntokens - 1]) + TOKEN_LEN(tokens[ntokens - 1]) -
		TOKEN_START(tokens[0]) + 1;
	window_reserve(w, need + 16);

	/* the window's last n - 1 items, oldest first (after any compaction) */
	before = Min(w->count, n - 1);
	for (int i = 0; i < before; i++)
	{
		int			slot = w->head - before + i;

		if (slot < 0)
			slot += n;
		item_start[i] = w->start[slot];
	}

	buf = w->buf;
	len = w->len;
	sep = (w->count > 0);		/* a space before the first token? */
	for (int k = 0; k < ntokens; k++)
	{
		const char *src = folded + TOKEN_START(tokens[k]);
		size_t		toklen = TOKEN_LEN(tokens[k]);

		/* the space is written always, kept only after an item */
		buf[len] = ' ';
		len += sep;
		sep = 1;
		item_start[before + k] = len;
		if (toklen <= 16)
			memcpy(buf + len, src, 16);
		else
			memcpy(buf + len, src, toklen);
		len += toklen;
		token_end[k] = len;
	}
	Assert(len <= w->len + need);
	w->len = len;

	/* the ring: the last n items (or all, fewer), oldest in slot 0 */
	nitems = before + ntokens;
	count = Min(w->count + ntokens, n);
	Assert(count == Min(nitems, n));
	for (int i = 0; i < count; i++)
		w->start[i] = item_start[nitems - count + i];
	w->head = (count == n) ? 0 : count;
	w->count = count;

	/* n-gram j ends with item j + n - 1, the chunk's token j + n - 1 - before */
	nngrams = nitems - (n - 1);
	if (nngrams <= 0)
		return;
	if (t->emit)
	{
		for (int j = 0; j < nngrams; j++)
			emit_feature(t, buf + item_start[j],
						 token_end[j + n - 1 - before] - item_start[j]);
	}
	else
		hash_ngrams(t, buf, item_start, token_end + (n - 1 - before), nngrams);
}

/* Clear the bits from..to - 1 of the masks. */
static void
clear_mask_bits(uint64 *masks, size_t from, size_t to)
{
	for (size_t i = from; i < to;)
	{
		size_t		bit = i % 64;
		size_t		nbits = Min(64 - bit, to - i);
		uint64		range = (nbits == 64) ? ~UINT64CONST(0) :
			((UINT64CONST(1) << nbits) - 1) << bit;

		masks[i / 64] &= ~range;
		i += nbits;
	}
}

/*
 * Words mode, one chunk (len <= ASCII_CHUNK bytes) of ASCII text.
 *
 * The chunk is folded into a buffer and classified into bit masks of word
 * characters (classify_block), and tokens are found from the masks
 * (find_tokens) and passed on from the folded buffer as they stand. Only a
 * token that continues one from before the chunk, or may continue after it,
 * goes through the token buffer; they are taken out of the masks first.
 */
static void
feed_ascii_words_chunk(ShTokenizer *t, const unsigned char *s, size_t len)
{
	char		folded[ASCII_CHUNK + 16];	/* see window_add_tokens */
	uint64		masks[ASCII_CHUNK / 64];
	ChunkTokens ct;
	size_t		nblocks = (len + 63) / 64;
	size_t		full = len / 64;
	size_t		tail;
	bool		by_length;

	Assert(len > 0 && len <= ASCII_CHUNK);
	for (size_t b = 0; b < full; b++)
		masks[b] = classify_block(s + 64 * b, folded + 64 * b);
	if (full < nblocks)
	{
		/* the tail, padded with NULs: separators */
		unsigned char pad[64] = {0};

		memcpy(pad, s + 64 * full, len - 64 * full);
		masks[full] = classify_block(pad, folded + 64 * full);
	}

	/* the token before the chunk ends here, or grows with the first word */
	if (t->tokstate == TOK_WORD && (masks[0] & 1))
	{
		size_t		b = 0;
		size_t		head;

		while (b < nblocks && masks[b] == ~UINT64CONST(0))
			b++;
		head = (b == nblocks) ? len :
			Min(len, 64 * b + pg_rightmost_one_pos64(~masks[b]));
		token_append_bytes(t, folded, head);
		if (head == len)
			return;
		clear_mask_bits(masks, 0, head);
	}
	end_token(t);

	/* the last word, if it reaches the end of the chunk, may go on after it */
	tail = len;
	if (masks[(len - 1) / 64] & (UINT64CONST(1) << ((len - 1) % 64)))
	{
		while (tail > 0 && (masks[(tail - 1) / 64] & (UINT64CONST(1) << ((tail - 1) % 64))))
			tail--;
		clear_mask_bits(masks, tail, len);
	}

	by_length = (t->n == 1 && t->emit == NULL);
	if (by_length)
		find_tokens(masks, nblocks, &ct, true);
	else
		find_tokens(masks, nblocks, &ct, false);

	if (by_length)
		hash_token_groups(t, folded, &ct);
	else if (t->n == 1)
	{
		for (int k = 0; k < ct.n[0]; k++)
			emit_feature(t, folded + TOKEN_START(ct.list[0][k]), TOKEN_LEN(ct.list[0][k]));
	}
	else
		window_add_tokens(t, folded, ct.list[0], ct.n[0]);

	if (tail < len)
	{
		token_append_bytes(t, folded + tail, len - tail);
		t->tokstate = TOK_WORD;
	}
}

/*
 * Hash the count n-grams of n bytes starting at p, p + 1, ..., for the hash
 * sink.
 */
HASH_LOOP static void
hash_char_ngrams(ShTokenizer *t, const char *p, size_t count, int n)
{
	for (size_t i = 0; i < count; i++)
		add_hash(t, sh_hash_feature(p + i, n));
}

/*
 * Chars mode, ASCII: every byte is one character, folded, or a separator.
 * A chunk's stream goes into the window buffer first, then its characters
 * are added (see window_add).
 */
static void
feed_ascii_chars(ShTokenizer *t, const unsigned char *s, size_t len)
{
	ShWindow   *w = &t->win;
	int			n = t->n;

	for (size_t done = 0; done < len;)
	{
		size_t		chunk = Min(len - done, ASCII_CHUNK);
		size_t		from;
		size_t		end;
		size_t		i;
		bool		any;
		bool		space = t->pending_space;

		/*
		 * Every byte adds at most one byte, plus one pending space; and one
		 * more for the last byte the loop may write without keeping it.
		 */
		window_reserve(w, chunk + 2);
		from = end = w->len;
		any = (w->count > 0);
		for (i = done; i < done + chunk; i++)
		{
			char		f = ascii_word_folded[s[i]];
			bool		word = (f != 0);

			/* without branches: a separator run becomes one space */
			w->buf[end] = ' ';
			end += (word & space);
			w->buf[end] = f;
			end += word;
			any |= word;
			space = !word & any;
		}
		t->pending_space = space;
		w->len = end;

		/* until the window holds only this chunk's characters, use the ring */
		for (i = from; i < end && i < from + n - 1; i++)
			window_add(t, w, i, i + 1);
		if (i < end)
		{
			/* then each n-gram is the n bytes up to its character */
			if (t->emit)
			{
				for (; i < end; i++)
					emit_feature(t, w->buf + i + 1 - n, n);
			}
			else
				hash_char_ngrams(t, w->buf + i + 1 - n, end - i, n);
			for (int k = 0; k < n; k++)
				w->start[k] = end - n + k;
			w->head = 0;
			w->count = n;
		}
		done += chunk;
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
		if (t->kind != SH_FEATURES_CHARS)
		{
			/* ASCII has no single characters: 'mixed' reads it as words */
			for (size_t i = 0; i < n; i += ASCII_CHUNK)
				feed_ascii_words_chunk(t, s + done + i, Min(n - i, ASCII_CHUNK));
		}
		else
			feed_ascii_chars(t, s + done, n);
		done += n;
	}
}

/* Whether any of the 64 bytes at p is not ASCII (>= 0x80). */
static inline bool
has_high_bit_64(const unsigned char *p)
{
#ifdef __SSE2__
	__m128i		a = _mm_or_si128(_mm_loadu_si128((const __m128i *) p),
								 _mm_loadu_si128((const __m128i *) (p + 16)));
	__m128i		b = _mm_or_si128(_mm_loadu_si128((const __m128i *) (p + 32)),
								 _mm_loadu_si128((const __m128i *) (p + 48)));

	return _mm_movemask_epi8(_mm_or_si128(a, b)) != 0;
#else
	uint64		w[8];

	memcpy(w, p, sizeof(w));
	return ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) &
			UINT64CONST(0x8080808080808080)) != 0;
#endif
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

	/* the quick check is exact for YES; NO and MAYBE need the real thing */
	if (sh_nfkc_quick_yes(wbuf, ncp))
	{
		for (size_t i = 0; i < ncp; i++)
			feed_char(t, wbuf[i]);
	}
	else
	{
		size_t		nlen;

		norm = sh_nfkc(wbuf, ncp, &nlen);
		for (size_t i = 0; i < nlen; i++)
			feed_char(t, norm[i]);
		pfree(norm);
	}
	return pos;
}

/* The tokeniser proper, for either sink. */
static void
tokenize(ShTokenizer *t, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *) text;
	pg_wchar   *wbuf = NULL;
	size_t		wbufcap = 0;
	size_t		i = 0;

	Assert(t->n >= SH_MIN_NGRAM && t->n <= SH_MAX_NGRAM);
	if (!ascii_ready)
		init_ascii_tables();

	while (i < len)
	{
		size_t		j = i;
		size_t		segstart;

		/*
		 * Skip ASCII 64 bytes at a time, then eight, then one: this finds
		 * the first non-ASCII byte exactly as a byte-by-byte scan does. (The
		 * eight-byte loop alone took 7% of minhash(text) on mostly ASCII
		 * text.)
		 */
		while (j + 64 <= len && !has_high_bit_64(s + j))
			j += 64;
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
			feed_ascii(t, s + i, len - i);
			break;
		}
		/*
		 * Keep the ASCII character before the non-ASCII run for NFKC (a
		 * combining mark may compose with it); not a NUL, which would end the
		 * normaliser's input (text never holds one, but keep every byte
		 * string well defined).
		 */
		segstart = (j > i && s[j - 1] != 0) ? j - 1 : j;
		feed_ascii(t, s + i, segstart - i);
		if (wbuf == NULL)
		{
			/* no more code points than bytes: short texts get a small buffer */
			wbufcap = Min(SEGMENT_TARGET_CPS, len - segstart) + 2;
			wbuf = palloc(wbufcap * sizeof(pg_wchar));
		}
		CHECK_FOR_INTERRUPTS();
		i = segstart + feed_segment(t, s + segstart, len - segstart, &wbuf, &wbufcap);
	}

	/* flush: the word stream's short feature before the single characters' */
	if (t->kind != SH_FEATURES_CHARS)
		end_token(t);
	window_flush(t, &t->win);
	if (t->kind == SH_FEATURES_MIXED)
		window_flush(t, &t->swin);
	if (t->emit == NULL)
		flush_hashes(t);

	if (t->tok)
		pfree(t->tok);
	if (t->win.buf)
		pfree(t->win.buf);
	if (t->swin.buf)
		pfree(t->swin.buf);
	if (wbuf)
		pfree(wbuf);
}

static void
init_tokenizer(ShTokenizer *t, ShFeatureKind kind, int size, int version)
{
	Assert(version == SH_SPEC_V1 || version == SH_SPEC_V2);
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->n = size;
	t->win.n = size;
	t->swin.n = SH_MIXED_SINGLE_N;
	t->fold_variants = (version >= SH_SPEC_V2);
}

void
sh_tokenize(const char *text, size_t len, ShFeatureKind kind, int size,
			int version, ShEmitFn emit, void *arg)
{
	ShTokenizer t;

	init_tokenizer(&t, kind, size, version);
	t.emit = emit;
	t.arg = arg;
	tokenize(&t, text, len);
}

void
sh_tokenize_hashed(const char *text, size_t len, ShFeatureKind kind, int size,
				   int version, ShHashBatchFn fn, void *arg)
{
	ShTokenizer t;

	init_tokenizer(&t, kind, size, version);
	t.hashfn = fn;
	t.arg = arg;
	tokenize(&t, text, len);
}
