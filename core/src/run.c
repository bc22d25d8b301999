/* The independent run under the entries, which the background jobs
 * (request.c) share: the transfer on a handle (one datatype lookup for the
 * count and the transfer) and the blocking independent call.  The shared
 * and ordered runs live with the shared pointer (pointer.c), the
 * collective one in collrun.c. */
#include "run.h"

#include <stdlib.h>

int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call) {
  *bytes = 0;
  *etypes = 0;
  if (offset < 0) return lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  const lmpio__tm_node *m;
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset n;
  lmpio__held h;
  if ((rc = lmpio__etypes_of(fh, count, m, &n, call)) == MPI_SUCCESS && n > 0 &&
      (rc = lmpio__transfer_hold(fh, offset, n, dir, &h, call)) == MPI_SUCCESS) {
    /* A native view: the type's layout in memory is its layout in the file,
     * looked up once for the count and the transfer. */
    MPI_Offset fbytes = 0;
    rc = lmpio__transfer_node(h.plan, h.pos, buf, count, type, fh->view.rep ? NULL : m, bytes, &fbytes, call);
    *etypes = lmpio__transfer_release(fh, &h, fbytes);
  }
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

/* read_records_ordered's state (records.c), freed at close. */
void lmpio__records_free(lmpio_file fh) {
  lmpio__records *r = fh->records;
  if (!r) return;
  if (r->comm != MPI_COMM_NULL) MPI_Comm_free(&r->comm);
  free(r->carry);
  free(r);
  fh->records = NULL;
}
