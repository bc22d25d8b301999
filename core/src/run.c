/* The runs under the entries, which the background jobs (request.c) share:
 * the independent transfer on a handle (one datatype lookup for the count
 * and the transfer), the blocking independent call, write_shared /
 * read_shared (the pointer reserved, then the transfer) and the ordered
 * collectives (one prefix sum, the pointer moved once, then the transfer in
 * parallel).  Streams go through stream.c's server instead. */
#include "run.h"

#include <stdlib.h>

/* The transfer of n etypes, count items of type whose layout in the file
 * is m (the caller's), at etype offset of fh's view. */
static int access_held(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                       const lmpio__tm_node *m, MPI_Offset n, MPI_Count *bytes, MPI_Offset *etypes,
                       const char *call) {
  MPI_Offset pos, fbytes = 0;
  int rc;
  if (n == 0) return MPI_SUCCESS;
  if ((rc = lmpio__check_range(&fh->view, offset, n, &pos, call)) != MPI_SUCCESS) return rc;
  lmpio__hold(fh);
  lmpio__plan own;
  const lmpio__plan *p = lmpio__plan_of(fh, dir, &own);
  /* A native view: the type's layout in memory is its layout in the file,
   * looked up once for the count and the transfer. */
  rc = lmpio__transfer_node(p, pos, buf, count, type, fh->view.rep ? NULL : m, bytes, &fbytes, call);
  if (p == &own) lmpio__plan_free(&own);
  lmpio__release(fh);
  *etypes = fh->view.esize == 1 ? fbytes : fbytes / fh->view.esize;
  return rc;
}

int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call) {
  *bytes = 0;
  *etypes = 0;
  if (offset < 0) return lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  const lmpio__tm_node *m;
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset n;
  if ((rc = lmpio__etypes_of(fh, count, m, &n, call)) == MPI_SUCCESS)
    rc = access_held(fh, offset, buf, count, type, dir, m, n, bytes, etypes, call);
  lmpio__typemap_release(m);
  return rc;
}

int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int dir, MPI_Status *status, const char *call) {
  int rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Count bytes = 0;
  MPI_Offset etypes = 0;
  rc = lmpio__access(fh, use_fp ? fh->fp : offset, buf, count, type, dir, &bytes, &etypes, call);
  if (use_fp) fh->fp += etypes;
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio__shared_access(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                         MPI_Status *status, const char *call) {
  MPI_Offset at, n;
  MPI_Count bytes = 0;
  if (fh != LMPIO_FILE_NULL && fh->drv->id == LMPIO__FS_STREAM) {
    lmpio__shared_note_move(fh);
    int rc = lmpio__pipe_shared(fh, buf, count, type, dir, &bytes, call);
    lmpio__set_status(status, bytes);
    return rc;
  }
  const lmpio__tm_node *m;
  int rc = lmpio__shared_reserve(fh, count, type, dir, &at, &n, &m, call);
  if (rc == MPI_SUCCESS && n > 0) {
    MPI_Offset moved;
    rc = access_held(fh, at, buf, count, type, dir, m, n, &bytes, &moved, call);
  }
  if (m) lmpio__typemap_release(m);
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio__ordered(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                   MPI_Count *bytes, int pre_rc, const char *call) {
  *bytes = 0;
  if (fh->drv->id == LMPIO__FS_STREAM) {
    lmpio__shared_note_move(fh);
    return lmpio__pipe_ordered(fh, buf, count, type, dir, bytes, pre_rc, call);
  }
  MPI_Offset at, n, moved;
  int agreed;
  const lmpio__tm_node *m;
  int rc = lmpio__ordered_reserve(fh, count, type, dir, pre_rc, &at, &n, &agreed, &m, call);
  if (rc == MPI_SUCCESS && n > 0) rc = access_held(fh, at, buf, count, type, dir, m, n, bytes, &moved, call);
  if (m) lmpio__typemap_release(m);
  if (rc != MPI_SUCCESS && agreed) return rc;
  if (fh->size == 1) return rc;
  /* A collective call succeeds or fails on every rank alike (DESIGN.md), so
   * the outcome of the transfers is agreed even though it costs a second
   * collective: a storage or conversion error met by one rank fails the call
   * everywhere. */
  return lmpio__agree(fh->comm, rc, 0, call);
}

/* read_records_ordered's state (records.c), freed at close. */
void lmpio__records_free(lmpio_file fh) {
  lmpio__records *r = fh->records;
  if (!r) return;
  if (r->comm != MPI_COMM_NULL) MPI_Comm_free(&r->comm);
  free(r->carry);
  free(r);
  fh->records = NULL;
}
