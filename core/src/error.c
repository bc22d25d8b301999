/* Error classes and the per-thread detailed message. */
#include "ground.h"

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

void lmpio__err_set_message(const char *msg) {
  snprintf(last_message, MSG_MAX, "%s", msg);
}

/* A failure a binding asked for (lmpio_fail_next_collective), per thread. */
static _Thread_local int pending_class;
static _Thread_local char pending_message[MSG_MAX];

void lmpio_fail_next_collective(int errorclass, const char *message) {
  pending_class = errorclass == MPI_SUCCESS ? MPI_ERR_ARG : errorclass;
  snprintf(pending_message, MSG_MAX, "%s", message ? message : "invalid argument");
}

static _Thread_local int standin;

int lmpio__take_standin(void) {
  int s = standin;
  standin = 0;
  return s;
}

void lmpio__set_standin(void) { standin = 1; }

int lmpio__pending(int rc, const char *call) {
  if (!pending_class) return rc;
  int cls = pending_class;
  pending_class = 0;
  standin = 1; /* whatever call this is, it stands in for the binding's */
  if (rc != MPI_SUCCESS) return rc;
  return lmpio__err(cls, call, "%s", pending_message);
}

/* Why the last conversion or extent function failed, in its own words
 * (per thread): set through lmpio_conversion_error_detail. */
static _Thread_local char conversion_detail[512];

void lmpio_conversion_error_detail(const char *text) {
  snprintf(conversion_detail, sizeof conversion_detail, "%s", text ? text : "");
}

void lmpio__err_clear_detail(void) { conversion_detail[0] = '\0'; }

void lmpio__err_detail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(conversion_detail, sizeof conversion_detail, fmt, ap);
  va_end(ap);
}

int lmpio__err_conversion(int cls, const char *call, const char *what) {
  int rc = lmpio__err(cls, call, "%s%s%s", what, conversion_detail[0] ? ": " : "", conversion_detail);
  conversion_detail[0] = '\0';
  return rc;
}

/* Conversion and extent functions running on this thread.  A Lua
 * converter that called read_at_all of its own file on the one rank whose
 * data it converted met the other rank's next agreement instead (the
 * outcome of the call they were both in) and left one rank waiting in
 * MPI_Bcast: seen hanging, 2 ranks.  So every agreement refuses such a
 * call (agree.c). */
static _Thread_local int converting;

void lmpio__err_converting(int delta) { converting += delta; }

int lmpio__err_in_conversion(void) { return converting; }
