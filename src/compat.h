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

/* 16: varlena macros moved out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/* 16: a relation's storage is named by a RelFileLocator */
#if PG_VERSION_NUM >= 160000
#define SH_SMGR_LOCATOR(smgr)	(&(smgr)->smgr_rlocator.locator)
#else
#define SH_SMGR_LOCATOR(smgr)	(&(smgr)->smgr_rnode.node)
#endif

/* 16: a relation's file number */
#if PG_VERSION_NUM >= 160000
#define SH_REL_FILENUMBER(rel)	((rel)->rd_locator.relNumber)
#define SH_REL_LOCATOR(rel)		((rel)->rd_locator)
#else
typedef Oid RelFileNumber;
#define SH_REL_FILENUMBER(rel)	((rel)->rd_node.relNode)
#define SH_REL_LOCATOR(rel)		((rel)->rd_node)
#endif

/* 16: ownership checks take the catalog */
#include "utils/acl.h"
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_class_d.h"
#define sh_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define sh_class_ownercheck(relid, roleid)	pg_class_ownercheck((relid), (roleid))
#endif

/* 18: vacuum_delay_point() says whether ANALYZE calls it */
#if PG_VERSION_NUM >= 180000
#define sh_vacuum_delay_point()		vacuum_delay_point(false)
#define sh_analyze_delay_point()	vacuum_delay_point(true)
#else
#define sh_vacuum_delay_point()		vacuum_delay_point()
#define sh_analyze_delay_point()	vacuum_delay_point()
#endif

/* 18: a function that does not return is declared pg_noreturn, before it */
#if PG_VERSION_NUM >= 180000
#define SH_NORETURN_BEGIN	pg_noreturn
#define SH_NORETURN_END
#else
#define SH_NORETURN_BEGIN
#define SH_NORETURN_END		pg_attribute_noreturn()
#endif

/*
 * 16: a read of a temporary file that must return every byte it asks for
 * is BufFileReadExact(), which errors on a short read; before, BufFileRead()
 * returned the count. Used with storage/buffile.h included.
 */
#if PG_VERSION_NUM >= 160000
#define sh_buffile_read_exact(file, ptr, size)	BufFileReadExact((file), (ptr), (size))
#else
#define sh_buffile_read_exact(file, ptr, size) \
	do { \
		size_t		sh_want_ = (size); \
		if (BufFileRead((file), (ptr), sh_want_) != sh_want_) \
			ereport(ERROR, \
					(errcode_for_file_access(), \
					 errmsg("could not read %zu bytes from a temporary file", sh_want_))); \
	} while (0)
#endif

#endif							/* SIMHASH_COMPAT_H */
