/* The shared file pointer's calls: write_shared / read_shared, the ordered
 * collectives, seek_shared and get_position_shared.  The pointer's store
 * and the runs of these calls are pointer.c's. */
#include "run.h"
#include "calls.h"

int lmpio_file_get_position_shared(lmpio_file fh, MPI_Offset *offset) {
  const char *call = "lmpio_file_get_position_shared";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!offset) return lmpio__err(MPI_ERR_ARG, call, "offset is NULL");
  if (fh->amode & MPI_MODE_SEQUENTIAL) /* the standard: no file pointer in a stream */
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  return lmpio__shared_get(fh, offset, call);
}

int lmpio_file_seek_shared(lmpio_file fh, MPI_Offset offset, int whence) {
  const char *call = "lmpio_file_seek_shared";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  lmpio__pipe_enter(fh, call);
  return lmpio__shared_seek(fh, lmpio__pending(MPI_SUCCESS, call), offset, whence, call);
}

static int ordered_call(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                        MPI_Status *status, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  MPI_Count bytes;
  int rc = MPI_SUCCESS;
  if (fh->split.kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  rc = lmpio__ordered(fh, buf, count, type, dir, &bytes, rc, call);
  lmpio__set_status(status, bytes);
  return rc;
}

/* write_shared / read_shared run lmpio__shared_access, the ordered calls
 * ordered_call (by coll: INDEP or ORDERED). */
#define RUN_INDEP lmpio__shared_access
#define RUN_ORDERED ordered_call
#define KIND_INDEP LMPIO__K_SHARED
#define KIND_ORDERED LMPIO__K_ORDERED
#define SHARED(name, pointer, coll, form, dir, C, sfx)                                                   \
  int lmpio_file_##name##sfx LMPIO__CALL_PARAMS(lmpio_file, C, pointer, form, dir) {                       \
    lmpio__stats *st = fh ? fh->stats : NULL;                                                             \
    long long t0 = lmpio__stats_start(st);                                                                \
    int rc = RUN_##coll(fh, (void *)buf, count, datatype, LMPIO__##dir, status, "lmpio_file_" #name #sfx); \
    lmpio__stats_call(st, KIND_##coll, LMPIO__##dir, t0);                                                 \
    return rc;                                                                                            \
  }
#define DEFINE(name, pointer, coll, form, dir) SHARED(name, pointer, coll, form, dir, int, )
#define DEFINE_C(name, pointer, coll, form, dir) SHARED(name, pointer, coll, form, dir, MPI_Count, _c)
LMPIO__CALLS_SHARED(DEFINE)
LMPIO__CALLS_SHARED(DEFINE_C)
