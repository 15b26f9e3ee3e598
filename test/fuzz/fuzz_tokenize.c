/*
 * fuzz_tokenize.c
 *		libFuzzer target for sh_tokenize() (src/fingerprint/tokenize.c, frontend build).
 *
 * Input: byte 0 picks the mode (byte % 3: 0 = words, 1 = chars, 2 = mixed)
 * and the size ((byte / 3) % 32 + 1); the rest is the document, arbitrary bytes. NUL
 * bytes are turned into spaces first: PostgreSQL text cannot hold NUL, and
 * the tokeniser is only ever given text.
 *
 * Checks, each failing with abort() and a description on stderr:
 *  1. every feature obeys the specification in doc/specification.md (tok_check.h: valid UTF-8, no separator
 *     except single spaces where the mode puts them, token shape, exact
 *     size except for the only feature of a short document);
 *  2. determinism: a second run gives the same feature sequence;
 *  3. the same sequence as the reference tokeniser of tok_check.h (whole
 *     text NFKC in one call, no segments, no fast paths);
 *  4. across modes: the size-1 word tokens, concatenated, equal the size-1
 *     character stream with its spaces removed;
 *  5. pure-ASCII input with its letters uppercased gives the same features;
 *  6. the hash sink (sh_tokenize_hashed, what simhash() and minhash() use,
 *     with its own fast paths) gives the same multiset of hashes as the
 *     callback per feature.
 */
#include "tok_check.h"

#include <ctype.h>

static void
collect(const char *text, size_t len, ShFeatureKind kind, int size,
		TcFeatures *out)
{
	tcf_init(out, kind, size, true, true);
	sh_tokenize(text, len, kind, size, SH_SPEC_V1, tcf_emit, out);
	tcf_finish(out);
}

/* A growing array of feature hashes, for check 6. */
typedef struct HashList
{
	uint64	   *h;
	size_t		n;
	size_t		cap;
} HashList;

static void
hashlist_add(HashList *l, uint64 h)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? 2 * l->cap : 256;
		l->h = realloc(l->h, l->cap * sizeof(uint64));
		if (l->h == NULL)
			abort();
	}
	l->h[l->n++] = h;
}

static void
hashlist_emit(void *arg, const char *feature, size_t len, uint64 hash)
{
	hashlist_add((HashList *) arg, hash);
}

static void
hashlist_batch(void *arg, const uint64 *hashes, int n)
{
	if (n < 1)
		abort();				/* ShHashBatchFn: n >= 1 */
	for (int i = 0; i < n; i++)
		hashlist_add((HashList *) arg, hashes[i]);
}

static int
cmp_uint64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

static void
die(const char *what, const char *detail, ShFeatureKind kind, int size,
	const char *text, size_t len)
{
	fprintf(stderr, "\nfuzz_tokenize: %s: %s\n  mode %s, size %d\n", what, detail,
			tc_kind_name(kind), size);
	tc_hexdump(stderr, "  text", text, len);
	abort();
}

static void
check_features(const TcFeatures *f, const char *text, size_t len)
{
	if (f->err[0])
		die("spec violation", f->err, f->kind, f->size, text, len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ShFeatureKind kind;
	int			n;
	char	   *text;
	size_t		len;
	bool		ascii = true;
	TcFeatures	a,
				b,
				ref,
				w1,
				c1;
	TcRef		r;
	char		why[512];

	if (size < 1)
		return 0;
	kind = (ShFeatureKind) (data[0] % 3);	/* words, chars, mixed */
	n = (data[0] / 3) % SH_MAX_NGRAM + 1;
	len = size - 1;
	text = malloc(len + 1);
	if (text == NULL)
		abort();
	for (size_t i = 0; i < len; i++)
	{
		text[i] = data[1 + i] ? (char) data[1 + i] : ' ';
		if (data[1 + i] >= 0x80)
			ascii = false;
	}
	text[len] = '\0';

	/* 1 + 2 */
	collect(text, len, kind, n, &a);
	check_features(&a, text, len);
	collect(text, len, kind, n, &b);
	if (!tcf_same(&a, &b, why, sizeof(why)))
		die("not deterministic", why, kind, n, text, len);
	tcf_free(&b);

	/* 3 */
	tcref_build(&r, text, len, true);
	tcf_init(&ref, kind, n, true, false);
	tcref_features(&r, kind, n, tcf_emit, &ref);
	if (!tcf_same(&a, &ref, why, sizeof(why)))
		die("differs from the reference (tokenizer vs reference)", why, kind, n, text, len);
	tcf_free(&ref);
	tcref_free(&r);

	/* 4 */
	collect(text, len, SH_FEATURES_WORDS, 1, &w1);
	check_features(&w1, text, len);
	collect(text, len, SH_FEATURES_CHARS, 1, &c1);
	check_features(&c1, text, len);
	{
		TcBuf		x = {0},
					y = {0};

		for (size_t i = 0; i < w1.nends; i++)
		{
			const char *p;
			size_t		l;

			tcf_get(&w1, i, &p, &l);
			tcbuf_append(&x, p, l);
		}
		for (size_t i = 0; i < c1.nends; i++)
		{
			const char *p;
			size_t		l;

			tcf_get(&c1, i, &p, &l);
			if (!(l == 1 && p[0] == ' '))
				tcbuf_append(&y, p, l);
		}
		if (x.len != y.len || (x.len > 0 && memcmp(x.data, y.data, x.len) != 0))
			die("words tokens and chars stream disagree", "concatenations differ",
				kind, n, text, len);
		free(x.data);
		free(y.data);
	}
	tcf_free(&w1);
	tcf_free(&c1);

	/* 5 */
	if (ascii)
	{
		char	   *upper = malloc(len + 1);

		for (size_t i = 0; i <= len; i++)
			upper[i] = (text[i] >= 'a' && text[i] <= 'z') ? text[i] - 'a' + 'A' : text[i];
		collect(upper, len, kind, n, &b);
		if (!tcf_same(&a, &b, why, sizeof(why)))
			die("uppercased ASCII gives other features", why, kind, n, text, len);
		tcf_free(&b);
		free(upper);
	}

	/* 6, in both specification versions (version 2 folds Han variants) */
	for (int version = SH_SPEC_V1; version <= SH_SPEC_V2; version++)
	{
		HashList	e = {0},
					h = {0};

		sh_tokenize(text, len, kind, n, version, hashlist_emit, &e);
		sh_tokenize_hashed(text, len, kind, n, version, hashlist_batch, &h);
		qsort(e.h, e.n, sizeof(uint64), cmp_uint64);
		qsort(h.h, h.n, sizeof(uint64), cmp_uint64);
		if (e.n != h.n || (e.n > 0 && memcmp(e.h, h.h, e.n * sizeof(uint64)) != 0))
		{
			snprintf(why, sizeof(why), "version %d: %zu hashes by feature, %zu in batches, not the same multiset",
					 version, e.n, h.n);
			die("hash sink differs from the per-feature sink", why, kind, n, text, len);
		}
		free(e.h);
		free(h.h);
	}

	tcf_free(&a);
	free(text);
	return 0;
}
