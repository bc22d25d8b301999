/* The one transfer routine under every entry: a plan, a position in the
 * view's data and the caller's memory.  Native views go straight to the
 * engine; other representations through the conversion driver, which feeds
 * the engine in bounded pieces.  Independent, collective (when the ranks do
 * not aggregate), shared-pointer, ordered and background calls all end here,
 * each with the plan it built once. */
#include "internal.h"

int lmpio__transfer(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Count *bytes, MPI_Offset *fbytes, const char *call) {
  return lmpio__transfer_node(p, pos, buf, count, type, NULL, bytes, fbytes, call);
}

int lmpio__transfer_node(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                         const lmpio__tm_node *held, MPI_Count *bytes, MPI_Offset *fbytes, const char *call) {
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
