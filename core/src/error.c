/* Error classes, the per-thread detailed message, errno mapping, and the
 * agreement that makes collective calls fail the same way on every rank. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MSG_MAX 1024
static _Thread_local char last_message[MSG_MAX];

/* One table for class names and texts. */
#define LMPIO_ERROR_CLASSES(X)                                                 \
  X(MPI_SUCCESS, "no error")                                                   \
  X(MPI_ERR_ARG, "invalid argument")                                           \
  X(MPI_ERR_COUNT, "invalid count")                                            \
  X(MPI_ERR_TYPE, "invalid datatype")                                          \
  X(MPI_ERR_COMM, "invalid communicator")                                      \
  X(MPI_ERR_INFO, "invalid info object")                                       \
  X(MPI_ERR_INFO_VALUE, "invalid info value")                                  \
  X(MPI_ERR_BUFFER, "invalid buffer")                                          \
  X(MPI_ERR_NO_MEM, "out of memory")                                           \
  X(MPI_ERR_FILE, "invalid file handle")                                       \
  X(MPI_ERR_NOT_SAME, "argument not the same on every process")                \
  X(MPI_ERR_AMODE, "invalid access mode")                                      \
  X(MPI_ERR_UNSUPPORTED_DATAREP, "unsupported data representation")            \
  X(MPI_ERR_UNSUPPORTED_OPERATION, "operation not supported")                  \
  X(MPI_ERR_NO_SUCH_FILE, "no such file")                                      \
  X(MPI_ERR_FILE_EXISTS, "file exists")                                        \
  X(MPI_ERR_BAD_FILE, "invalid file name")                                     \
  X(MPI_ERR_ACCESS, "permission denied")                                       \
  X(MPI_ERR_NO_SPACE, "not enough space")                                      \
  X(MPI_ERR_QUOTA, "quota exceeded")                                           \
  X(MPI_ERR_READ_ONLY, "read-only file or file system")                        \
  X(MPI_ERR_FILE_IN_USE, "file in use")                                        \
  X(MPI_ERR_DUP_DATAREP, "data representation already registered")             \
  X(MPI_ERR_CONVERSION, "data conversion failed")                              \
  X(MPI_ERR_IO, "I/O error")                                                   \
  X(MPI_ERR_REQUEST, "invalid request")                                        \
  X(MPI_ERR_OTHER, "other error")                                              \
  X(MPI_ERR_INTERN, "internal error")

const char *lmpio_error_class_name(int cls) {
#define NAME(c, text) if (cls == c) return #c;
  LMPIO_ERROR_CLASSES(NAME)
#undef NAME
  return "MPI_ERR_UNKNOWN";
}

static const char *class_text(int cls) {
#define TEXT(c, text) if (cls == c) return text;
  LMPIO_ERROR_CLASSES(TEXT)
#undef TEXT
  return NULL;
}

int lmpio_error_string(int code, char *string, int *resultlen) {
  if (!string || !resultlen) return MPI_ERR_ARG;
  const char *text = class_text(code);
  if (!text) return MPI_Error_string(code, string, resultlen);
  int n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", lmpio_error_class_name(code), text);
  *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
  return MPI_SUCCESS;
}

const char *lmpio_last_error_message(void) { return last_message; }

static int world_rank(void) {
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int lmpio__err(int cls, const char *call, const char *fmt, ...) {
  int n = snprintf(last_message, MSG_MAX, "%s: ", call);
  if (n < 0 || n >= MSG_MAX) n = 0;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(last_message + n, MSG_MAX - (size_t)n, fmt, ap);
  va_end(ap);
  if (m > 0) n += m;
  if (n < MSG_MAX) snprintf(last_message + n, MSG_MAX - (size_t)n, " (%s, rank %d)",
                            lmpio_error_class_name(cls), world_rank());
  return cls;
}

int lmpio__errno_class(int e) {
  switch (e) {
  case ENOENT: return MPI_ERR_NO_SUCH_FILE;
  case EACCES: case EPERM: return MPI_ERR_ACCESS;
  case EEXIST: return MPI_ERR_FILE_EXISTS;
  case ENOSPC: return MPI_ERR_NO_SPACE;
#ifdef EDQUOT
  case EDQUOT: return MPI_ERR_QUOTA;
#endif
  case EROFS: return MPI_ERR_READ_ONLY;
  case ENAMETOOLONG: case EISDIR: case ENOTDIR: case ELOOP: return MPI_ERR_BAD_FILE;
  case ETXTBSY: case EBUSY: return MPI_ERR_FILE_IN_USE;
  case ENOMEM: return MPI_ERR_NO_MEM;
  case EOPNOTSUPP: return MPI_ERR_UNSUPPORTED_OPERATION;
  default: return MPI_ERR_IO;
  }
}

int lmpio__err_errno(int e, const char *call, const char *what, const char *path) {
  return lmpio__err(lmpio__errno_class(e), call, "%s \"%s\": %s", what,
                    path ? path : "", strerror(e));
}

int lmpio__agree(MPI_Comm comm, int rc, long long same, const char *call) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  /* MAX over (size - rank) for failing ranks finds the lowest failing rank. */
  long long v[3] = {rc != MPI_SUCCESS ? (long long)(size - rank) : 0, same, -same};
  long long r[3];
  if (MPI_Allreduce(v, r, 3, MPI_LONG_LONG, MPI_MAX, comm) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_OTHER, call, "agreement between ranks failed");
  if (r[0] > 0) {
    int root = size - (int)r[0];
    struct { int rc; char msg[MSG_MAX]; } m;
    m.rc = rc;
    if (rank == root) memcpy(m.msg, last_message, MSG_MAX);
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, root, comm);
    if (rank != root && rc == MPI_SUCCESS) { /* a failing rank keeps its own message */
      memcpy(last_message, m.msg, MSG_MAX);
      last_message[MSG_MAX - 1] = '\0';
    }
    return m.rc;
  }
  if (r[1] != -r[2])
    return lmpio__err(MPI_ERR_NOT_SAME, call, "an argument that must match differs between ranks");
  return MPI_SUCCESS;
}
