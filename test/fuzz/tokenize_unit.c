/*
 * tokenize_unit.c
 *		Fixed-input unit run of sh_tokenize() (frontend build of
 *		src/fingerprint/tokenize.c), meant to be run under valgrind.
 *
 * For every case and every mode/size it prints the number of features and
 * the XOR and sum of their XXH3-64 hashes, checks each feature against the
 * spec (tok_check.h) and checks that the whole sequence equals that of the
 * reference tokeniser (NFKC split only between two ASCII characters, see
 * tc_nfkc). Then it asserts known
 * properties of particular inputs. Exit status 1 on any failure.
 *
 * The large cases exercise the segmenting of src/fingerprint/tokenize.c, which must be
 * invisible (doc/specification.md, "Fingerprint specification", item 2: the result is
 * the NFKC of the whole text): a ~5 MB mixed document with a long ASCII-free
 * CJK stretch (crosses the 65,536-code-point target and breaks before a Han
 * ideograph), a 200,000-character Devanagari run without ASCII (no place to
 * break at all: one segment, the buffer grows; it hit the former hard limit
 * of 131,072), and a Han + Devanagari stretch where that former limit fell
 * between a letter and its nukta.
 */
#include "tok_check.h"

static int	failures = 0;
static int	checks = 0;

#define CHECK(cond, ...) \
	do { \
		checks++; \
		if (!(cond)) \
		{ \
			failures++; \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} while (0)

/* ---- building test documents ---- */

static void
append_str(TcBuf *b, const char *s)
{
	tcbuf_append(b, s, strlen(s));
}

static void
append_cp(TcBuf *b, uint32 c)
{
	char		u[4];

	tcbuf_append(b, u, tc_put_utf8(c, u));
}

/* deterministic pseudo-random numbers (xorshift), so runs are comparable */
static uint64 rng_state = UINT64CONST(0x9E3779B97F4A7C15);

static uint32
rng(uint32 n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32) (rng_state % n);
}

static const char *const english[] = {
	"The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog",
	"Fingerprints", "are", "compared", "by", "Hamming", "distance", "and",
	"near", "duplicates", "share", "most", "of", "their", "features", "42",
	"GNU", "General", "Public", "License", "version", "3", "copyright"
};

/*
 * A ~5 MB document: mostly English (ASCII, the fast path), a sprinkle of
 * other scripts every few hundred words, and once an ASCII-free stretch of
 * about 72,000 CJK code points with CJK punctuation, so that a segment
 * passes SEGMENT_TARGET_CPS (65,536) and must end before a Han ideograph.
 */
static void
build_mixed_doc(TcBuf *b, size_t target)
{
	static const char *const sprinkle[] = {
		"caf\xc3\xa9 na\xc3\xafve", /* composed */
		"cafe\xcc\x81 nai\xcc\x88ve",	/* decomposed */
		"Stra\xc3\x9f" "e \xc3\x84rger",
		"\xce\x9a\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1 \xce\xba\xcf\x8c\xcf\x83\xce\xbc\xce\xb5",
		"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xd0\xbc\xd0\xb8\xd1\x80",
		"\xe4\xb8\xad\xe6\x96\x87\xe5\x88\x86\xe8\xaf\x8d",
		"\xe3\x83\xa9\xe3\x83\xbc\xe3\x83\xa1\xe3\x83\xb3\xe3\x82\x92\xe9\xa3\x9f\xe3\x81\xb9\xe3\x82\x8b",
		"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xed\x85\x8d\xec\x8a\xa4\xed\x8a\xb8",
		"\xe0\xb8\xa0\xe0\xb8\xb2\xe0\xb8\xa9\xe0\xb8\xb2\xe0\xb9\x84\xe0\xb8\x97\xe0\xb8\xa2",
		"\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xe2\x9d\xa4\xef\xb8\x8f",
		"\xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9",
		"\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xe2\x91\xa0 \xef\xac\x81",
		"\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
		"bad\xff\xfe bytes\xc0\xaf",
	};
	bool		cjk_done = false;

	while (b->len < target)
	{
		int			words = 200 + rng(400);

		for (int i = 0; i < words; i++)
		{
			append_str(b, english[rng(lengthof(english))]);
			append_str(b, rng(12) ? " " : ", ");
		}
		append_str(b, sprinkle[rng(lengthof(sprinkle))]);
		append_str(b, ".\n");

		if (!cjk_done && b->len > target / 2)
		{
			/* ASCII-free: ideographs, kana, Hangul, fullwidth punctuation */
			for (int i = 0; i < 72000; i++)
			{
				uint32		r = rng(100);

				if (r < 70)
					append_cp(b, 0x4E00 + rng(0x5000));
				else if (r < 80)
					append_cp(b, 0x3041 + rng(0x50));	/* hiragana */
				else if (r < 88)
					append_cp(b, 0xAC00 + rng(0x2BA4));	/* Hangul syllables */
				else if (r < 90)
				{
					append_cp(b, 0x304B);	/* か + combining dakuten -> が */
					append_cp(b, 0x3099);
				}
				else if (r < 95)
					append_cp(b, r & 1 ? 0x3001 : 0x3002);	/* 、 。 */
				else
					append_cp(b, 0xFF10 + rng(10));	/* fullwidth digits */
			}
			append_str(b, "\n");
			cjk_done = true;
		}
	}
}

/* n code points of Devanagari words separated by danda, no ASCII at all */
static void
build_devanagari(TcBuf *b, size_t ncp)
{
	/*
	 * नमस्ते, दुनिया, भारत (consonants, vowel signs, virama), and न + nukta +
	 * ा (NFKC composes the first two to ऩ), then ।
	 */
	static const uint32 words[][8] = {
		{0x0928, 0x092E, 0x0938, 0x094D, 0x0924, 0x0947},
		{0x0926, 0x0941, 0x0928, 0x093F, 0x092F, 0x093E},
		{0x092D, 0x093E, 0x0930, 0x0924},
		{0x0928, 0x093C, 0x093E},
	};
	static const int lens[] = {6, 6, 4, 3};
	size_t		n = 0;

	while (n < ncp)
	{
		int			w = rng(lengthof(lens));

		for (int i = 0; i < lens[w] && n < ncp; i++, n++)
			append_cp(b, words[w][i]);
		if (n < ncp)
		{
			append_cp(b, 0x0964);
			n++;
		}
	}
}

/* ---- running cases ---- */

typedef struct Config
{
	ShFeatureKind kind;
	int			size;
} Config;

static const Config small_configs[] = {
	{SH_FEATURES_WORDS, 1}, {SH_FEATURES_WORDS, 2}, {SH_FEATURES_WORDS, 3},
	{SH_FEATURES_WORDS, 5}, {SH_FEATURES_WORDS, 32},
	{SH_FEATURES_CHARS, 1}, {SH_FEATURES_CHARS, 2}, {SH_FEATURES_CHARS, 3},
	{SH_FEATURES_CHARS, 5}, {SH_FEATURES_CHARS, 32},
	{SH_FEATURES_MIXED, 1}, {SH_FEATURES_MIXED, 2}, {SH_FEATURES_MIXED, 5},
};

/* the large cases: fewer sizes, the frontend normaliser is slow (valgrind) */
static const Config large_configs[] = {
	{SH_FEATURES_WORDS, 1}, {SH_FEATURES_CHARS, 3},
};

static TcFeatures
run(const char *text, size_t len, ShFeatureKind kind, int size, bool store)
{
	TcFeatures	f;

	tcf_init(&f, kind, size, store, true);
	sh_tokenize(text, len, kind, size, SH_SPEC_V1, tcf_emit, &f);
	tcf_finish(&f);
	return f;
}

static const char *
kname(ShFeatureKind k)
{
	return tc_kind_name(k);
}

/*
 * Run all configs of one case: print the digests, check the spec rules and
 * compare with the reference. Returns true if all matched the reference.
 */
static bool
run_case(const char *name, const char *text, size_t len,
		 const Config *configs, int nconfigs, bool expect_ref_match)
{
	TcRef		r;
	bool		all_match = true;

	tcref_build(&r, text, len, false);
	for (int i = 0; i < nconfigs; i++)
	{
		TcFeatures	f = run(text, len, configs[i].kind, configs[i].size, false);
		TcFeatures	ref;

		tcf_init(&ref, configs[i].kind, configs[i].size, false, false);
		tcref_features(&r, configs[i].kind, configs[i].size, tcf_emit, &ref);

		printf("%-26s %s %2d  count=%-8llu xor=%016llx sum=%016llx\n",
			   name, kname(configs[i].kind), configs[i].size,
			   (unsigned long long) f.count, (unsigned long long) f.xor,
			   (unsigned long long) f.sum);
		CHECK(f.err[0] == 0, "%s: spec violation: %s", name, f.err);
		if (!tcf_same_digest(&f, &ref))
		{
			all_match = false;
			if (expect_ref_match)
				CHECK(false, "%s %s %d: differs from the reference tokeniser "
					  "(count %llu vs %llu, xor %016llx vs %016llx)",
					  name, kname(configs[i].kind), configs[i].size,
					  (unsigned long long) f.count, (unsigned long long) ref.count,
					  (unsigned long long) f.xor, (unsigned long long) ref.xor);
		}
		tcf_free(&f);
		tcf_free(&ref);
	}
	tcref_free(&r);
	return all_match;
}

static void
small_case(const char *name, const char *text)
{
	run_case(name, text, strlen(text), small_configs, lengthof(small_configs), true);
}

/* ---- known properties ---- */

/* the features of text in words/chars mode of size, as exactly these strings */
static void
expect_features(const char *text, ShFeatureKind kind, int size,
				int nexp, const char *const *exp)
{
	TcFeatures	f = run(text, strlen(text), kind, size, true);
	bool		ok = f.nends == (size_t) nexp;

	for (int i = 0; ok && i < nexp; i++)
	{
		const char *p;
		size_t		l;

		tcf_get(&f, i, &p, &l);
		ok = (l == strlen(exp[i]) && memcmp(p, exp[i], l) == 0);
	}
	if (!ok)
	{
		printf("  got %zu feature(s):", f.nends);
		for (size_t i = 0; i < f.nends; i++)
		{
			const char *p;
			size_t		l;

			tcf_get(&f, i, &p, &l);
			printf(" [%.*s]", (int) l, p);
		}
		printf("\n");
	}
	CHECK(ok, "features of \"%s\" (%s %d) are not the %d expected", text, kname(kind), size, nexp);
	tcf_free(&f);
}

#define EXPECT(text, kind, size, ...) \
	do { \
		static const char *const exp_[] = {__VA_ARGS__}; \
		expect_features(text, kind, size, lengthof(exp_), exp_); \
	} while (0)

#define EXPECT_NONE(text, kind, size) expect_features(text, kind, size, 0, NULL)

/* two texts give the same features in every small config */
static void
expect_same(const char *what, const char *a, const char *b)
{
	for (int i = 0; i < (int) lengthof(small_configs); i++)
	{
		TcFeatures	fa = run(a, strlen(a), small_configs[i].kind, small_configs[i].size, true);
		TcFeatures	fb = run(b, strlen(b), small_configs[i].kind, small_configs[i].size, true);
		char		why[512];

		CHECK(fa.count > 0, "%s: no features", what);
		CHECK(tcf_same(&fa, &fb, why, sizeof(why)), "%s (%s %d): %s", what,
			  kname(small_configs[i].kind), small_configs[i].size, why);
		tcf_free(&fa);
		tcf_free(&fb);
	}
}

static void
known_properties(void)
{
	const ShFeatureKind W = SH_FEATURES_WORDS,
				C = SH_FEATURES_CHARS;

	/* NFKC: composed and decomposed, fullwidth and compatibility forms */
	expect_same("composed == decomposed caf\xc3\xa9",
				"Un caf\xc3\xa9 tr\xc3\xa8s noir", "Un cafe\xcc\x81 tre\xcc\x80s noir");
	expect_same("\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 == abc", "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3", "abc");
	expect_same("case folding", "HELLO World", "hello world");
	expect_same("\xef\xac\x81 ligature", "\xef\xac\x81le", "file");
	expect_same("conjoining jamo == Hangul syllable", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab",
				"\xed\x95\x9c");
	expect_same("dakuten composes", "\xe3\x81\xb8\xe3\x82\x99", "\xe3\x81\xb9");
	expect_same("ignorables never split", "soft\xc2\xadware", "software");
	EXPECT("caf\xc3\xa9", W, 1, "caf\xc3\xa9");
	EXPECT("CAF\xc3\x89", W, 1, "caf\xc3\xa9");
	EXPECT("Stra\xc3\x9f" "e", W, 1, "stra\xc3\x9f" "e");	/* ß stays ß */

	/* tokens and word n-grams */
	EXPECT("The quick, brown fox!", W, 1, "the", "quick", "brown", "fox");
	EXPECT("The quick, brown fox!", W, 2, "the quick", "quick brown", "brown fox");
	EXPECT("a b", W, 3, "a b");		/* fewer tokens than n: one feature */
	EXPECT("\xe4\xb8\xad\xe6\x96\x87\xe5\x88\x86\xe8\xaf\x8d\xef\xbc\x8c\xe6\xb5\x8b\xe8\xaf\x95\xe3\x80\x82", W, 1,
		   "\xe4\xb8\xad", "\xe6\x96\x87", "\xe5\x88\x86", "\xe8\xaf\x8d", "\xe6\xb5\x8b", "\xe8\xaf\x95");
	/* ラーメンを食べる: every kana, ー and 食 is a token of its own */
	EXPECT("\xe3\x83\xa9\xe3\x83\xbc\xe3\x83\xa1\xe3\x83\xb3\xe3\x82\x92\xe9\xa3\x9f\xe3\x81\xb9\xe3\x82\x8b", W, 1,
		   "\xe3\x83\xa9", "\xe3\x83\xbc", "\xe3\x83\xa1", "\xe3\x83\xb3", "\xe3\x82\x92",
		   "\xe9\xa3\x9f", "\xe3\x81\xb9", "\xe3\x82\x8b");
	/* halfwidth ｶﾞ -> ガ */
	EXPECT("\xef\xbd\xb6\xef\xbe\x9e", W, 1, "\xe3\x82\xac");
	EXPECT("\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xed\x85\x8d\xec\x8a\xa4\xed\x8a\xb8", W, 1,
		   "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4", "\xed\x85\x8d\xec\x8a\xa4\xed\x8a\xb8");
	/* ภาษาไทย: seven Thai letters, seven tokens */
	EXPECT("\xe0\xb8\xa0\xe0\xb8\xb2\xe0\xb8\xa9\xe0\xb8\xb2\xe0\xb9\x84\xe0\xb8\x97\xe0\xb8\xa2", W, 1,
		   "\xe0\xb8\xa0", "\xe0\xb8\xb2", "\xe0\xb8\xa9", "\xe0\xb8\xb2", "\xe0\xb9\x84",
		   "\xe0\xb8\x97", "\xe0\xb8\xa2");
	/* Thai mark (mai ek) extends the single-character token */
	EXPECT("\xe0\xb8\x81\xe0\xb9\x88", W, 1, "\xe0\xb8\x81\xe0\xb9\x88");
	/* family emoji: ZWJ ignored, three emoji tokens; VS16 dropped */
	EXPECT("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", W, 1,
		   "\xf0\x9f\x91\xa8", "\xf0\x9f\x91\xa9", "\xf0\x9f\x91\xa7");
	EXPECT("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", C, 3,
		   "\xf0\x9f\x91\xa8\xf0\x9f\x91\xa9\xf0\x9f\x91\xa7");
	EXPECT("I \xe2\x9d\xa4\xef\xb8\x8f it", W, 1, "i", "\xe2\x9d\xa4", "it");
	/* a combining mark with nothing before it starts a word */
	EXPECT(" \xcc\x81x", W, 1, "\xcc\x81x");

	/* character n-grams: separator runs -> one space, none at the ends */
	EXPECT("  Hello,  World!  ", C, 3,
		   "hel", "ell", "llo", "lo ", "o w", " wo", "wor", "orl", "rld");
	EXPECT("ab", C, 5, "ab");
	EXPECT("\xe4\xb8\xad\xe6\x96\x87\xe3\x80\x82\xe6\xb5\x8b", C, 2,
		   "\xe4\xb8\xad\xe6\x96\x87", "\xe6\x96\x87 ", " \xe6\xb5\x8b");

	/* malformed UTF-8: one U+FFFD (a single-character token) per bad byte */
#define FFFD "\xef\xbf\xbd"
	EXPECT("\xff\xfe", W, 1, FFFD, FFFD);
	EXPECT("a\xc0\xaf" "b", W, 1, "a", FFFD, FFFD, "b");	/* overlong */
	EXPECT("\xed\xa0\x80", W, 1, FFFD, FFFD, FFFD);	/* surrogate */
	EXPECT("\xe4\xb8x", W, 1, FFFD, FFFD, "x");	/* truncated */
	EXPECT("\xf4\x90\x80\x80", W, 1, FFFD, FFFD, FFFD, FFFD);	/* > U+10FFFF */
	EXPECT("x\xf0\x9f", C, 1, "x", FFFD, FFFD);	/* truncated at the end */

	/* no features */
	for (int s = 1; s <= SH_MAX_NGRAM; s += 31)
	{
		EXPECT_NONE("", W, s);
		EXPECT_NONE("", C, s);
		EXPECT_NONE(" \t,.;!? \xe3\x80\x80\xc2\xad\xe2\x80\x8b\xef\xb8\x8f ", W, s);
		EXPECT_NONE(" \t,.;!? \xe3\x80\x80\xc2\xad\xe2\x80\x8b\xef\xb8\x8f ", C, s);
	}
}

int
main(void)
{
	TcBuf		doc = {0};

	setvbuf(stdout, NULL, _IOLBF, 0);

	/* ---- small fixed inputs, all sizes ---- */
	small_case("empty", "");
	small_case("ascii", "The quick brown fox jumps over the lazy dog. 1, 2, 3: GO!");
	small_case("latin-composed", "Un caf\xc3\xa9 tr\xc3\xa8s na\xc3\xafve \xc3\x80 bient\xc3\xb4t");
	small_case("latin-decomposed", "Un cafe\xcc\x81 tre\xcc\x80s nai\xcc\x88ve A\xcc\x80 biento\xcc\x82t");
	small_case("chinese", "\xe4\xb8\xad\xe6\x96\x87\xe5\x88\x86\xe8\xaf\x8d\xef\xbc\x8c\xe6\xb5\x8b\xe8\xaf\x95\xe3\x80\x82\xe6\x96\x87\xe6\x9c\xac");
	small_case("japanese", "\xe3\x83\xa9\xe3\x83\xbc\xe3\x83\xa1\xe3\x83\xb3\xe3\x82\x92\xe9\xa3\x9f\xe3\x81\xb9\xe3\x82\x8b\xe3\x80\x82\xe3\x82\xb3\xe3\x83\xbc\xe3\x83\x92\xe3\x83\xbc \xef\xbd\xb6\xef\xbe\x9e\xef\xbe\x83\xef\xbd\xb0");
	small_case("korean", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xed\x85\x8d\xec\x8a\xa4\xed\x8a\xb8\xeb\x8a\x94 \xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab");
	small_case("thai", "\xe0\xb8\xa0\xe0\xb8\xb2\xe0\xb8\xa9\xe0\xb8\xb2\xe0\xb9\x84\xe0\xb8\x97\xe0\xb8\xa2 \xe0\xb8\x81\xe0\xb8\xb3\xe0\xb9\x88\xe0\xb8\xa5\xe0\xb8\xb1\xe0\xb8\x87");
	small_case("emoji", "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 \xe2\x9d\xa4\xef\xb8\x8f \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd \xf0\x9f\x87\xab\xf0\x9f\x87\xb7 \xc2\xa9 2024");
	small_case("invalid-utf8", "ok \xff\xfe a\xc0\xaf b\xed\xa0\x80 c\xe4\xb8 d\xf4\x90\x80\x80 \x80\xbf e\xf0\x9f");
	small_case("marks-alone", "\xcc\x81\xcc\x81 e\xcc\xa3\xcc\x81 \xe0\xa4\xa8\xe0\xa4\xbc \xe2\x84\xab A\xcc\x8a");
	small_case("separators-only", " \t,.;!? \xe3\x80\x80\xc2\xad\xe2\x80\x8b\xef\xb8\x8f ");

	/* ---- large inputs ---- */
	build_mixed_doc(&doc, 5 * 1024 * 1024);
	printf("(mixed document: %zu bytes)\n", doc.len);
	run_case("mixed-5MB", doc.data, doc.len, large_configs, lengthof(large_configs), true);

	doc.len = 0;
	build_devanagari(&doc, 200000);
	printf("(Devanagari run: 200000 code points, %zu bytes)\n", doc.len);
	run_case("devanagari-200k", doc.data, doc.len, large_configs, 1, true);

	/*
	 * 65,535 Han ideographs, then 66,000 code points of न U+0928 + nukta
	 * U+093C pairs (NFKC composes each to ऩ U+0929), all without ASCII. The
	 * segment cannot end in the pairs, so it holds 131,535 code points; the
	 * former hard limit of 131,072 cut it 65,537 code points into the pairs,
	 * between a न and its nukta, leaving that pair uncomposed (fixed in
	 * 9869ba7). Both the reference comparison and the count of uncomposed
	 * pairs are asserted.
	 */
	doc.len = 0;
	for (int i = 0; i < 65535; i++)
		append_cp(&doc, 0x4E00 + (i % 0x5000));
	for (int i = 0; i < 33000; i++)
	{
		append_cp(&doc, 0x0928);
		append_cp(&doc, 0x093C);
	}
	run_case("han+nukta-pairs", doc.data, doc.len, large_configs, 1, true);
	{
		TcFeatures	f = run(doc.data, doc.len, SH_FEATURES_WORDS, 1, true);
		const char *p;
		size_t		l;
		int			uncomposed = 0;
		long		where = -1;

		/* the last feature is the one Devanagari token */
		tcf_get(&f, f.nends - 1, &p, &l);
		for (size_t k = 0; k + 6 <= l; k += 3)
			if (memcmp(p + k, "\xe0\xa4\xa8\xe0\xa4\xbc", 6) == 0)
			{
				uncomposed++;
				where = (long) (k / 3);
			}
		CHECK(uncomposed == 0 && l == 33000 * 3,
			  "han+nukta-pairs: %d pair(s) left uncomposed (the last at code point %ld "
			  "of the %zu-byte token): the segment was cut inside a combining sequence",
			  uncomposed, where, l);
		tcf_free(&f);
	}
	free(doc.data);

	/* ---- properties ---- */
	known_properties();

	printf("tokenize_unit: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
