/*
 * nfkc.h
 *		Unicode NFKC pinned to Unicode 14.0 (nfkc.c), the normalisation step
 *		of the fingerprint specifications. Include after postgres.h or
 *		postgres_fe.h.
 */
#ifndef SIMHASH_NFKC_H
#define SIMHASH_NFKC_H

#include "mb/pg_wchar.h"

/* True when s[0..n) is certainly in NFKC (UAX #15 quick check YES). */
extern bool sh_nfkc_quick_yes(const pg_wchar *s, size_t n);

/* NFKC of s[0..n): palloc'd, NUL-terminated, its length in *outn. */
extern pg_wchar *sh_nfkc(const pg_wchar *s, size_t n, size_t *outn);

#endif							/* SIMHASH_NFKC_H */
