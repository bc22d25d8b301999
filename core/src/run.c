/* The independent run under the entries, which the background jobs
 * (request.c) share: the blocking independent call (one datatype lookup
 * for the count and the transfer).  The shared
 * and ordered runs live with the shared pointer (pointer.c), the
 * collective one in collrun.c. */
#include "run.h"

#include <stdlib.h>

/* The blocking independent calls: count items of type between buf and the
 * view at `offset` etypes, or at the individual pointer when use_fp (which
 * advances by the whole etypes the data filled); the plan, then the engine
 * or the conversion driver move them.  One function from the checks to the
 * status: every 4 KiB read_at pays for the calls in between. */
int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int dir, MPI_Status *status, const char *call) {
  int rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset at = use_fp ? fh->fp : offset;
  MPI_Count bytes = 0; /* native data bytes moved (short at end of file) */
  const lmpio__tm_node *m = NULL;
  if (at < 0) rc = lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)at);
  else rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  MPI_Offset n;
  lmpio__held h;
  if (rc == MPI_SUCCESS && (rc = lmpio__etypes_of(fh, count, m, &n, call)) == MPI_SUCCESS && n > 0 &&
      (rc = lmpio__transfer_hold(fh, at, n, dir, &h, call)) == MPI_SUCCESS) {
    /* A native view: the type's layout in memory is its layout in the file,
     * looked up once for the count and the transfer. */
    MPI_Offset fbytes = 0;
    rc = lmpio__transfer_node(h.plan, h.pos, buf, count, type, fh->view.rep ? NULL : m, &bytes, &fbytes, call);
    MPI_Offset etypes = lmpio__transfer_release(fh, &h, fbytes);
    if (use_fp) fh->fp += etypes;
  }
  lmpio__typemap_release(m);
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
