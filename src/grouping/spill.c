/*
 * spill.c
 *		Bytes appended and read back by offset: in memory up to a limit (the
 *		caller's work_mem), then in a temporary file (BufFile).
 *
 * The verified grouping (window.c, window_verified.c) writes each row's text and
 * each text's feature set once and reads some of them back. A partition of a
 * few rows, as the removal scripts give it one component at a time, stays in
 * memory and opens no file; a partition of millions of rows goes to disk.
 */
#include "grouping/spill.h"

#include "utils/memutils.h"

void
spill_init(ShSpill *sp, Size limit)
{
	memset(sp, 0, sizeof(*sp));
	sp->limit = limit;
	sp->cxt = CurrentMemoryContext;
}

/* Move what memory holds to a new temporary file: from now on, the file. */
static void
spill_to_file(ShSpill *sp)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(sp->cxt);

	sp->file = BufFileCreateTemp(false);
	MemoryContextSwitchTo(oldcxt);
	sp->at_end = true;
	if (sp->end > 0)
		BufFileWrite(sp->file, sp->mem, (Size) sp->end);
	if (sp->mem)
		pfree(sp->mem);
	sp->mem = NULL;
	sp->cap = 0;
}

/* Append len bytes; returns the offset they start at. */
int64
spill_append(ShSpill *sp, const void *data, Size len)
{
	int64		at = sp->end;

	if (sp->file == NULL && (Size) sp->end + len > sp->limit)
		spill_to_file(sp);
	if (sp->file != NULL)
	{
		/* a read moved the file's position: back to its end */
		if (!sp->at_end && BufFileSeek(sp->file, 0, (off_t) sp->end, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not seek to byte %lld of a temporary file", (long long) sp->end)));
		sp->at_end = true;
		if (len > 0)
			BufFileWrite(sp->file, unconstify(void *, data), len);
	}
	else
	{
		if ((Size) sp->end + len > sp->cap)
		{
			Size		newcap = Max(Max(sp->cap * 2, (Size) sp->end + len), 8192);

			newcap = Min(newcap, Max(sp->limit, (Size) sp->end + len));
			sp->mem = sp->mem ? repalloc_huge(sp->mem, newcap)
				: MemoryContextAllocHuge(sp->cxt, newcap);
			sp->cap = newcap;
		}
		memcpy(sp->mem + sp->end, data, len);
	}
	sp->end += (int64) len;
	return at;
}

/* Read len bytes from offset, which an append returned. */
void
spill_read(ShSpill *sp, int64 offset, void *dst, Size len)
{
	Assert(offset >= 0 && offset + (int64) len <= sp->end);
	if (len == 0)
		return;
	if (sp->file == NULL)
	{
		memcpy(dst, sp->mem + offset, len);
		return;
	}
	if (BufFileSeek(sp->file, 0, (off_t) offset, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek to byte %lld of a temporary file", (long long) offset)));
	sh_buffile_read_exact(sp->file, dst, len);
	sp->at_end = false;
}

void
spill_free(ShSpill *sp)
{
	if (sp->file)
		BufFileClose(sp->file);
	if (sp->mem)
		pfree(sp->mem);
	memset(sp, 0, sizeof(*sp));
}
