/* The collective data access calls (*_all).  For now each rank does its part
 * as an independent access between two agreements: the arguments first, so
 * that no rank writes when another passed bad ones, then the outcome, so that
 * every rank returns the same class.  Two-phase collective buffering will
 * replace the middle step. */
#include "internal.h"

static int collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                      MPI_Datatype type, int dir, MPI_Status *status, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc == MPI_SUCCESS && !use_fp && offset < 0)
    rc = lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  /* A count that is not whole etypes on one rank must stop every rank
   * before anything is written. */
  MPI_Offset n;
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &n, call);
  rc = lmpio__agree(fh->comm, rc, 0, call);
  MPI_Count bytes = 0;
  MPI_Offset etypes = 0;
  if (rc == MPI_SUCCESS) {
    rc = lmpio__access(fh, use_fp ? fh->fp : offset, buf, count, type, dir, &bytes, &etypes, call);
    if (use_fp) fh->fp += etypes;
    rc = lmpio__agree(fh->comm, rc, 0, call);
  }
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio_file_read_at_all(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                           MPI_Datatype datatype, MPI_Status *status) {
  return collective(fh, offset, 0, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_at_all");
}

int lmpio_file_write_at_all(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                            MPI_Datatype datatype, MPI_Status *status) {
  return collective(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, status,
                    "lmpio_file_write_at_all");
}

int lmpio_file_read_all(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                        MPI_Status *status) {
  return collective(fh, 0, 1, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_all");
}

int lmpio_file_write_all(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                         MPI_Status *status) {
  return collective(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, status,
                    "lmpio_file_write_all");
}
