/* The path layer: plans (what to do: windows, sieve or direct, locks),
 * the engine (does it), the file's mapping, and the one transfer routine
 * with the staged conversions.  Below: model.h. */
#ifndef LMPIO_PATH_H
#define LMPIO_PATH_H

#include "model.h"
#include "filemap.h"
#include "plan.h"

/* ---- transfer: the one transfer routine and the conversions (transfer.c) - */

/* Moves count items of type between buf and the view of plan p at data byte
 * pos of the view, converting through the bounded staging buffer.  *bytes:
 * native data bytes moved; *file_bytes: file data bytes moved. */
int lmpio__convert(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes, const char *call);
/* The same conversion with the file bytes in memory instead of the view:
 * a write converts into the len bytes at mem (the caller sizes them: the
 * data's size in the representation), a read converts from them (fewer
 * than the data's size: end of file there).  cap: the staging buffer's
 * size (hint lmpio_conversion_buffer_size). */
int lmpio__convert_memory(const lmpio__datarep *rep, int dir, MPI_Offset cap, char *mem, MPI_Offset len, void *buf,
                          MPI_Count count, MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes,
                          const char *call);
/* Memory for the file bytes of a staged transfer, len bytes:
 * the last block freed is kept for the next; _trim gives it back (close). */
char *lmpio__transfer_stage_alloc(size_t len);
void lmpio__transfer_stage_free(char *p, size_t len);
void lmpio__transfer_trim(void);
/* Moves count items of type between buf and data bytes [pos,
 * ...) of p's view; *bytes: native data bytes moved (short at end of file),
 * *fbytes: the file data bytes they fill. */
int lmpio__transfer(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Count *bytes, MPI_Offset *fbytes, const char *call);
/* The same with type's native typemap held, which the caller holds (NULL:
 * looked up).  (Inline: a call less in every small access.) */
static inline int lmpio__transfer_node(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count,
                                       MPI_Datatype type, const lmpio__tm_node *held, MPI_Count *bytes,
                                       MPI_Offset *fbytes, const char *call) {
  *bytes = 0;
  *fbytes = 0;
  if (p->rep) return lmpio__convert(p, pos, buf, count, type, bytes, fbytes, call);
  const lmpio__tm_node *m = held;
  int rc = MPI_SUCCESS;
  if (!held && (rc = lmpio__typemap_get(type, &m, call)) != MPI_SUCCESS) return rc;
  lmpio__stream s;
  rc = lmpio__stream_init(&s, buf, m, count);
  if (rc == MPI_SUCCESS) rc = lmpio__engine_run(p, pos, &s, call);
  else rc = lmpio__err(rc, call, "out of memory");
  *bytes = *fbytes = s.done;
  lmpio__stream_free(&s);
  if (!held) lmpio__typemap_release(m);
  return rc;
}

#endif
