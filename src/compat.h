/*
 * compat.h
 *		The one place for differences between PostgreSQL major versions.
 *
 * The extension is built and tested on PostgreSQL 15. Anything that differs
 * in another major version gets a macro here, never an #if in a module.
 */
#ifndef SIMHASH_COMPAT_H
#define SIMHASH_COMPAT_H

#include "port/pg_bitutils.h"

#if PG_VERSION_NUM < 150000
#error "simhash requires PostgreSQL 15 or later"
#endif

#endif							/* SIMHASH_COMPAT_H */
