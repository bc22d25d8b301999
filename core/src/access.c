/* Independent data access: explicit offsets and individual pointers, and
 * the individual pointer's seek and position.  The run layer (run.c) checks,
 * counts and moves; the plan, the engine and the conversion driver move the
 * data. */
#include "run.h"
#include "calls.h"

#include <errno.h>

#define INDEPENDENT(name, pointer, coll, form, dir, C, sfx)                                             \
  int lmpio_file_##name##sfx LMPIO__CALL_PARAMS(lmpio_file, C, pointer, form, dir) {                       \
    lmpio__stats *st = fh ? fh->stats : NULL;                                                             \
    long long t0 = lmpio__stats_start(st);                                                                \
    int rc = lmpio__independent(fh, LMPIO__CALL_OFFSET_VALUE_##pointer, LMPIO__CALL_USE_FP_##pointer,     \
                                (void *)buf, count, datatype, LMPIO__##dir, status, "lmpio_file_" #name #sfx); \
    lmpio__stats_call(st, LMPIO__K_INDEP, LMPIO__##dir, t0);                                              \
    return rc;                                                                                            \
  }
#define DEFINE(name, pointer, coll, form, dir) INDEPENDENT(name, pointer, coll, form, dir, int, )
#define DEFINE_C(name, pointer, coll, form, dir) INDEPENDENT(name, pointer, coll, form, dir, MPI_Count, _c)
LMPIO__CALLS_INDEPENDENT(DEFINE)
LMPIO__CALLS_INDEPENDENT(DEFINE_C)

int lmpio_file_seek(lmpio_file fh, MPI_Offset offset, int whence) {
  const char *call = "lmpio_file_seek";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (fh->amode & MPI_MODE_SEQUENTIAL)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "seek is not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  MPI_Offset base;
  switch (whence) {
  case MPI_SEEK_SET: base = 0; break;
  case MPI_SEEK_CUR: base = fh->fp; break;
  case MPI_SEEK_END: {
    MPI_Offset size;
    if (fh->drv->size(fh->fd, &size) < 0) return lmpio__os_error(errno, call, "cannot stat", fh->path);
    /* End of file in this view: the etypes that start before it, rounded up. */
    MPI_Offset data = lmpio__view_data_before(&fh->view, size);
    base = data / fh->view.esize + (data % fh->view.esize != 0);
    break;
  }
  default:
    return lmpio__err(MPI_ERR_ARG, call, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  }
  MPI_Offset to;
  if (!lmpio__add_ok(base, offset, &to))
    return lmpio__err(MPI_ERR_ARG, call, "seek to %lld + %lld overflows a 64-bit offset", (long long)base,
                      (long long)offset);
  if (to < 0) return lmpio__err(MPI_ERR_ARG, call, "seek to negative offset %lld", (long long)to);
  /* An offset no byte of the file can have is refused here, not wrapped later. */
  MPI_Offset pos, byte;
  int rc = MPI_SUCCESS;
  if (!lmpio__mul_ok(to, fh->view.esize, &pos) || (rc = lmpio__view_byte(&fh->view, pos, &byte, call)) != MPI_SUCCESS)
    return rc != MPI_SUCCESS ? rc : lmpio__err(MPI_ERR_ARG, call, "offset %lld (etypes of %lld bytes) overflows a 64-bit file position",
                                               (long long)to, (long long)fh->view.esize);
  fh->fp = to;
  return MPI_SUCCESS;
}

int lmpio_file_get_position(lmpio_file fh, MPI_Offset *offset) {
  const char *call = "lmpio_file_get_position";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!offset) return lmpio__err(MPI_ERR_ARG, call, "offset is NULL");
  *offset = fh->fp;
  return MPI_SUCCESS;
}
