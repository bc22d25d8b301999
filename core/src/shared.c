/* The shared file pointer's calls: write_shared / read_shared, the ordered
 * collectives, seek_shared and get_position_shared.  The pointer's store
 * is pointer.c's, the transfers run.c's. */
#include "run.h"

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

#define SHARED(name, fn, args, buf, dir)                                                   \
  int lmpio_file_##name args {                                                             \
    LMPIO__COUNTED(fh, fn == ordered_call ? LMPIO__K_ORDERED : LMPIO__K_SHARED, dir,       \
                   fn(fh, (void *)buf, count, datatype, dir, status, "lmpio_file_" #name)); \
  }
SHARED(read_ordered, ordered_call, (lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__READ)
SHARED(write_ordered, ordered_call, (lmpio_file fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__WRITE)
SHARED(read_ordered_c, ordered_call, (lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__READ)
SHARED(write_ordered_c, ordered_call, (lmpio_file fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__WRITE)
SHARED(read_shared, lmpio__shared_access, (lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__READ)
SHARED(write_shared, lmpio__shared_access, (lmpio_file fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__WRITE)
SHARED(read_shared_c, lmpio__shared_access, (lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__READ)
SHARED(write_shared_c, lmpio__shared_access, (lmpio_file fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), buf, LMPIO__WRITE)
