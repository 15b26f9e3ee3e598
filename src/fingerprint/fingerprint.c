/*
 * fingerprint.c
 *		SQL-callable fingerprint functions: from text, from token arrays
 *		(optionally weighted), from tsvector, the (feature, weight)
 *		aggregate and simhash_features() for inspecting what a document
 *		produces.
 *
 * Features are always hashed as UTF-8, whatever the database encoding, so a
 * fingerprint does not depend on where it was computed.
 *
 * The text functions implement a version of the fingerprint specification
 * (doc/specification.md): an optional fourth argument names it, and without it each
 * C entry point has its own default. simhash_text and simhash_features are
 * what extension version 0.1.0's SQL functions are bound to, so they keep
 * giving version 1 (a database not yet updated with ALTER EXTENSION keeps
 * computing the fingerprints it stored); the _v2 entry points, bound by
 * 0.2.0 and later, default to version 2.
 */
#include "simhash.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "tsearch/ts_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "fingerprint/tokenize.h"

/* Defaults when a call does not name the feature mode or size. */
#define DEFAULT_FEATURES	SH_FEATURES_WORDS
#define DEFAULT_WORDS_SIZE	2
#define DEFAULT_CHARS_SIZE	3
#define DEFAULT_MIXED_SIZE	5	/* the verification ruler: word 5-grams */

/*
 * Bytes of s in UTF-8. In a UTF-8 (or SQL_ASCII) database that is s itself;
 * otherwise it is converted, so fingerprints match across encodings.
 */
static const char *
to_utf8(const char *s, size_t len, size_t *outlen)
{
	int			enc = GetDatabaseEncoding();
	char	   *conv;

	if (enc == PG_UTF8 || enc == PG_SQL_ASCII)
	{
		*outlen = len;
		return s;
	}
	conv = (char *) pg_server_to_any(s, (int) len, PG_UTF8);
	*outlen = (conv == s) ? len : strlen(conv);
	return conv;
}

char *
sh_text_to_utf8(text *t, size_t *len)
{
	return (char *) to_utf8(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), len);
}

/*
 * A user's value for an error message: at most SH_QUOTE_MAX bytes of it, cut
 * at a character boundary, "..." marking a cut. An unknown option name can be
 * a whole document passed in the wrong argument; echoing it whole put a
 * 300 kB argument into one message.
 */
#define SH_QUOTE_MAX 40

char *
sh_quote_prefix(const char *s)
{
	int			len = strlen(s);
	int			keep;

	if (len <= SH_QUOTE_MAX)
		return pstrdup(s);
	keep = pg_mbcliplen(s, len, SH_QUOTE_MAX);
	return psprintf("%.*s...", keep, s);
}

ShFeatureKind
sh_parse_feature_mode(text *mode)
{
	char	   *s = text_to_cstring(mode);

	if (strcmp(s, "words") == 0)
		return SH_FEATURES_WORDS;
	if (strcmp(s, "chars") == 0)
		return SH_FEATURES_CHARS;
	if (strcmp(s, "mixed") == 0)
		return SH_FEATURES_MIXED;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown simhash feature mode \"%s\"", sh_quote_prefix(s)),
			 errhint("Valid modes are \"words\" (words and word shingles), \"chars\" (character n-grams) and \"mixed\" (word shingles, and character 3-grams of Han, Kana, Thai and other unsegmented scripts).")));
	return SH_FEATURES_WORDS;	/* keep compiler quiet */
}

/*
 * Read the optional (features, [size]) arguments, from argument argno on,
 * in the form every text function takes (simhash(doc, ...),
 * simhash_features(doc, ...), simhash_jaccard(a, b, ...)).
 */
void
sh_parse_feature_args(FunctionCallInfo fcinfo, int argno, ShFeatureKind *kind, int *size)
{
	*kind = DEFAULT_FEATURES;
	if (PG_NARGS() > argno)
		*kind = sh_parse_feature_mode(PG_GETARG_TEXT_PP(argno));
	*size = sh_default_feature_size(*kind);
	if (PG_NARGS() > argno + 1)
		*size = sh_check_feature_size(*kind, PG_GETARG_INT32(argno + 1));
}

/* The n of a kind of features when a call does not give it. */
int
sh_default_feature_size(ShFeatureKind kind)
{
	switch (kind)
	{
		case SH_FEATURES_CHARS:
			return DEFAULT_CHARS_SIZE;
		case SH_FEATURES_MIXED:
			return DEFAULT_MIXED_SIZE;
		default:
			return DEFAULT_WORDS_SIZE;
	}
}

/* A size given with a kind of features, checked: returned when in range. */
int
sh_check_feature_size(ShFeatureKind kind, int size)
{
	if (size < SH_MIN_NGRAM || size > SH_MAX_NGRAM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash size must be between %d and %d, got %d",
						SH_MIN_NGRAM, SH_MAX_NGRAM, size),
				 errdetail("The size is the number of %s in each feature.",
						   kind == SH_FEATURES_CHARS ? "characters" : "words")));
	return size;
}

/*
 * Read (doc, [features, [size, [version]]]) in the form all text functions
 * take; default_version applies when the call has no fourth argument.
 */
static void
parse_text_args(FunctionCallInfo fcinfo, int default_version,
				ShFeatureKind *kind, int *size, int *version)
{
	sh_parse_feature_args(fcinfo, 1, kind, size);
	*version = default_version;
	if (PG_NARGS() >= 4)
	{
		*version = PG_GETARG_INT32(3);
		if (*version != SH_SPEC_V1 && *version != SH_SPEC_V2)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash specification version must be %d or %d, got %d",
							SH_SPEC_V1, SH_SPEC_V2, *version),
					 errhint("Version %d is the default; version %d gives the fingerprints of extension version 0.1.0.",
							 SH_SPEC_LATEST, SH_SPEC_V1)));
	}
}

/* ---- simhash(text [, features [, size [, version]]]) ---- */

/*
 * Version 1 counts every feature occurrence; version 2 counts each distinct
 * feature hash once (distinct.c) and folds Han variants (the tokeniser).
 */
static Datum
text_fingerprint(FunctionCallInfo fcinfo, int default_version)
{
	text	   *doc = PG_GETARG_TEXT_PP(0);
	ShFeatureKind kind;
	int			size;
	int			version;
	size_t		len;
	const char *utf8;
	ShCountAccum acc;
	SimHash		result;

	parse_text_args(fcinfo, default_version, &kind, &size, &version);
	utf8 = sh_text_to_utf8(doc, &len);
	sh_count_init(&acc);
	if (version == SH_SPEC_V1)
		sh_tokenize_hashed(utf8, len, kind, size, version, sh_count_hashes, &acc);
	else
	{
		ShDistinct	distinct;

		sh_distinct_init(&distinct, &acc, len);
		sh_tokenize_hashed(utf8, len, kind, size, version, sh_distinct_hashes, &distinct);
		sh_distinct_free(&distinct);
	}
	if (!sh_count_result(&acc, &result))
		PG_RETURN_NULL();		/* no features: no fingerprint */
	PG_RETURN_SIMHASH(result);
}

PG_FUNCTION_INFO_V1(simhash_text);
Datum
simhash_text(PG_FUNCTION_ARGS)
{
	return text_fingerprint(fcinfo, SH_SPEC_V1);
}

PG_FUNCTION_INFO_V1(simhash_text_v2);
Datum
simhash_text_v2(PG_FUNCTION_ARGS)
{
	return text_fingerprint(fcinfo, SH_SPEC_V2);
}

/* ---- simhash(text[]) and simhash(text[], float8[]) ---- */

PG_FUNCTION_INFO_V1(simhash_tokens);
Datum
simhash_tokens(PG_FUNCTION_ARGS)
{
	ArrayType  *tokens = PG_GETARG_ARRAYTYPE_P(0);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	ShCountAccum acc;
	SimHash		result;

	deconstruct_array(tokens, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	sh_count_init(&acc);
	for (int i = 0; i < n; i++)
	{
		size_t		len;
		const char *utf8;

		if (nulls[i])
			continue;			/* a NULL token is no feature */
		utf8 = sh_text_to_utf8(DatumGetTextPP(elems[i]), &len);
		sh_count_add(&acc, sh_feature_hash(utf8, len));
	}
	if (!sh_count_result(&acc, &result))
		PG_RETURN_NULL();
	PG_RETURN_SIMHASH(result);
}

PG_FUNCTION_INFO_V1(simhash_weighted_tokens);
Datum
simhash_weighted_tokens(PG_FUNCTION_ARGS)
{
	ArrayType  *tokens = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *weights = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *telems;
	bool	   *tnulls;
	int			nt;
	Datum	   *welems;
	bool	   *wnulls;
	int			nw;
	ShWeightAccum acc;
	SimHash		result;

	deconstruct_array(tokens, TEXTOID, -1, false, TYPALIGN_INT, &telems, &tnulls, &nt);
	deconstruct_array(weights, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &welems, &wnulls, &nw);
	if (nt != nw)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("simhash tokens and weights must have the same number of elements, got %d tokens and %d weights",
						nt, nw)));
	sh_weight_init(&acc);
	for (int i = 0; i < nt; i++)
	{
		size_t		len;
		const char *utf8;
		float8		w;

		if (tnulls[i])
			continue;
		if (wnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash weight %d is NULL for a non-NULL token", i + 1)));
		w = DatumGetFloat8(welems[i]);
		sh_weight_check(w);
		utf8 = sh_text_to_utf8(DatumGetTextPP(telems[i]), &len);
		sh_weight_add(&acc, sh_feature_hash(utf8, len), w);
	}
	if (!sh_weight_result(&acc, &result))
		PG_RETURN_NULL();
	PG_RETURN_SIMHASH(result);
}

/* ---- simhash(tsvector [, label weights]) ---- */

/*
 * Each lexeme is a feature weighted by its number of positions (a lexeme
 * stored without positions counts once). With label weights {D, C, B, A}
 * (the order ts_rank uses), each position counts the weight of its label
 * and a lexeme without positions counts the D weight.
 */
static Datum
tsvector_fingerprint(FunctionCallInfo fcinfo, const float8 *labelw)
{
	TSVector	tsv = PG_GETARG_TSVECTOR(0);
	WordEntry  *entries = ARRPTR(tsv);
	char	   *lexemes = STRPTR(tsv);
	ShWeightAccum acc;
	SimHash		result;

	sh_weight_init(&acc);
	for (int i = 0; i < tsv->size; i++)
	{
		WordEntry  *we = &entries[i];
		int			npos = we->haspos ? POSDATALEN(tsv, we) : 0;
		float8		w = 0;
		size_t		len;
		const char *utf8;

		if (labelw == NULL)
			w = npos > 0 ? npos : 1;
		else if (npos == 0)
			w = labelw[0];
		else
		{
			WordEntryPos *pos = POSDATAPTR(tsv, we);

			for (int j = 0; j < npos; j++)
				w += labelw[WEP_GETWEIGHT(pos[j])];
		}
		utf8 = to_utf8(lexemes + we->pos, we->len, &len);
		sh_weight_add(&acc, sh_feature_hash(utf8, len), w);
	}
	if (!sh_weight_result(&acc, &result))
		PG_RETURN_NULL();
	PG_RETURN_SIMHASH(result);
}

PG_FUNCTION_INFO_V1(simhash_tsvector);
Datum
simhash_tsvector(PG_FUNCTION_ARGS)
{
	return tsvector_fingerprint(fcinfo, NULL);
}

PG_FUNCTION_INFO_V1(simhash_tsvector_weighted);
Datum
simhash_tsvector_weighted(PG_FUNCTION_ARGS)
{
	ArrayType  *weights = PG_GETARG_ARRAYTYPE_P(1);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	float8		labelw[4];

	deconstruct_array(weights, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
					  TYPALIGN_DOUBLE, &elems, &nulls, &n);
	if (n != 4)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("simhash label weights must have 4 elements {D, C, B, A}, got %d", n)));
	for (int i = 0; i < 4; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash label weights must not contain NULL")));
		labelw[i] = DatumGetFloat8(elems[i]);
		sh_weight_check(labelw[i]);
	}
	return tsvector_fingerprint(fcinfo, labelw);
}

/* ---- simhash_agg(feature text [, weight float8]) ---- */

static ShWeightAccum *
agg_state(FunctionCallInfo fcinfo)
{
	MemoryContext aggcxt;
	ShWeightAccum *acc;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "simhash_agg transition function called in non-aggregate context");
	if (!PG_ARGISNULL(0))
		return (ShWeightAccum *) PG_GETARG_POINTER(0);
	acc = (ShWeightAccum *) MemoryContextAlloc(aggcxt, sizeof(ShWeightAccum));
	sh_weight_init(acc);
	return acc;
}

/* Rows with a NULL feature or a NULL weight are skipped, like other aggregates. */
PG_FUNCTION_INFO_V1(simhash_agg_trans);
Datum
simhash_agg_trans(PG_FUNCTION_ARGS)
{
	ShWeightAccum *acc = agg_state(fcinfo);
	float8		w = 1.0;
	size_t		len;
	const char *utf8;

	if (PG_ARGISNULL(1) || (PG_NARGS() > 2 && PG_ARGISNULL(2)))
		PG_RETURN_POINTER(acc);
	if (PG_NARGS() > 2)
	{
		w = PG_GETARG_FLOAT8(2);
		sh_weight_check(w);
	}
	utf8 = sh_text_to_utf8(PG_GETARG_TEXT_PP(1), &len);
	sh_weight_add(acc, sh_feature_hash(utf8, len), w);
	PG_RETURN_POINTER(acc);
}

PG_FUNCTION_INFO_V1(simhash_agg_combine);
Datum
simhash_agg_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	ShWeightAccum *a;
	ShWeightAccum *b;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "simhash_agg combine function called in non-aggregate context");
	if (PG_ARGISNULL(1))
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	b = (ShWeightAccum *) PG_GETARG_POINTER(1);
	if (PG_ARGISNULL(0))
	{
		a = (ShWeightAccum *) MemoryContextAlloc(aggcxt, sizeof(ShWeightAccum));
		memcpy(a, b, sizeof(ShWeightAccum));
		PG_RETURN_POINTER(a);
	}
	a = (ShWeightAccum *) PG_GETARG_POINTER(0);
	for (int i = 0; i < SIMHASH_BITS; i++)
		a->sums[i] += b->sums[i];
	a->total += b->total;
	a->npositive += b->npositive;
	PG_RETURN_POINTER(a);
}

PG_FUNCTION_INFO_V1(simhash_agg_final);
Datum
simhash_agg_final(PG_FUNCTION_ARGS)
{
	SimHash		result;

	if (PG_ARGISNULL(0) ||
		!sh_weight_result((ShWeightAccum *) PG_GETARG_POINTER(0), &result))
		PG_RETURN_NULL();
	PG_RETURN_SIMHASH(result);
}

PG_FUNCTION_INFO_V1(simhash_agg_serialize);
Datum
simhash_agg_serialize(PG_FUNCTION_ARGS)
{
	ShWeightAccum *acc = (ShWeightAccum *) PG_GETARG_POINTER(0);
	bytea	   *out = (bytea *) palloc(VARHDRSZ + sizeof(ShWeightAccum));

	SET_VARSIZE(out, VARHDRSZ + sizeof(ShWeightAccum));
	memcpy(VARDATA(out), acc, sizeof(ShWeightAccum));
	PG_RETURN_BYTEA_P(out);
}

PG_FUNCTION_INFO_V1(simhash_agg_deserialize);
Datum
simhash_agg_deserialize(PG_FUNCTION_ARGS)
{
	bytea	   *in = PG_GETARG_BYTEA_PP(0);
	ShWeightAccum *acc;

	if (VARSIZE_ANY_EXHDR(in) != sizeof(ShWeightAccum))
		elog(ERROR, "invalid simhash_agg state of %d bytes", (int) VARSIZE_ANY_EXHDR(in));
	acc = (ShWeightAccum *) palloc(sizeof(ShWeightAccum));
	memcpy(acc, VARDATA_ANY(in), sizeof(ShWeightAccum));
	PG_RETURN_POINTER(acc);
}

/* ---- simhash_features(doc [, features [, size [, version]]]) ---- */

/* One distinct feature; chained by hash for the rare XXH3 collision. */
typedef struct FeatureItem
{
	char	   *text;
	size_t		len;
	uint64		hash;
	int64		count;
	int			next;			/* next item with the same hash, or -1 */
} FeatureItem;

typedef struct FeatureEntry
{
	uint64		hash;			/* key */
	int			first;			/* first item with this hash */
} FeatureEntry;

typedef struct FeatureList
{
	bool		distinct;		/* version 2: weight 1 per distinct hash */
	HTAB	   *byhash;
	FeatureItem *items;
	int			nitems;
	int			capacity;
} FeatureList;

static void
emit_to_list(void *arg, const char *feature, size_t len, uint64 h)
{
	FeatureList *fl = (FeatureList *) arg;
	FeatureEntry *e;
	bool		found;
	int			idx;

	e = (FeatureEntry *) hash_search(fl->byhash, &h, HASH_ENTER, &found);
	if (found)
	{
		for (idx = e->first; idx >= 0; idx = fl->items[idx].next)
		{
			FeatureItem *it = &fl->items[idx];

			if (it->len == len && memcmp(it->text, feature, len) == 0)
			{
				if (!fl->distinct)
					it->count++;
				return;
			}
		}
	}
	if (fl->nitems == fl->capacity)
	{
		fl->capacity *= 2;
		fl->items = repalloc(fl->items, fl->capacity * sizeof(FeatureItem));
	}
	idx = fl->nitems++;
	fl->items[idx].text = pnstrdup(feature, len);
	fl->items[idx].len = len;
	fl->items[idx].hash = h;
	/*
	 * In version 2 a feature's weight is 1, or 0 for a second feature with
	 * the same 64-bit hash (a collision: the fingerprint counts the hash
	 * once), so that simhash_agg over these rows equals simhash(doc).
	 */
	fl->items[idx].count = (fl->distinct && found) ? 0 : 1;
	fl->items[idx].next = found ? e->first : -1;
	e->first = idx;
}

static Datum
list_features(FunctionCallInfo fcinfo, int default_version)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	text	   *doc = PG_GETARG_TEXT_PP(0);
	ShFeatureKind kind;
	int			size;
	int			version;
	size_t		len;
	const char *utf8;
	FeatureList fl;
	HASHCTL		ctl;

	parse_text_args(fcinfo, default_version, &kind, &size, &version);
	InitMaterializedSRF(fcinfo, 0);

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(FeatureEntry);
	ctl.hcxt = CurrentMemoryContext;
	fl.byhash = hash_create("simhash features", 256, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	fl.distinct = (version >= SH_SPEC_V2);
	fl.capacity = 256;
	fl.nitems = 0;
	fl.items = palloc(fl.capacity * sizeof(FeatureItem));

	utf8 = sh_text_to_utf8(doc, &len);
	sh_tokenize(utf8, len, kind, size, version, emit_to_list, &fl);

	for (int i = 0; i < fl.nitems; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		char	   *server = pg_any_to_server(fl.items[i].text, (int) fl.items[i].len, PG_UTF8);

		values[0] = PointerGetDatum(cstring_to_text(server));
		values[1] = Float8GetDatum((float8) fl.items[i].count);
		values[2] = SimHashGetDatum(fl.items[i].hash);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_features);
Datum
simhash_features(PG_FUNCTION_ARGS)
{
	return list_features(fcinfo, SH_SPEC_V1);
}

PG_FUNCTION_INFO_V1(simhash_features_v2);
Datum
simhash_features_v2(PG_FUNCTION_ARGS)
{
	return list_features(fcinfo, SH_SPEC_V2);
}
