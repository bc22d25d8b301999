/* The calls of MPI-IO on a file, written once.  The data access calls are
 * lmpio.h's lists (LMPIO_CALLS, LMPIO_CALLS_END: public, for bindings such
 * as the Lua module's descriptor table); the other calls on an open handle
 * are listed below.  The entries define the data access calls from these
 * lists (access.c, collective.c, shared.c, request.c), the agreement makes
 * its table of the collective ones from them (agree.c), the drop-in wraps
 * both lists (core/dropin/wrappers.c), and calls_test.c checks that each
 * call is lmpio.h's with the parameters the list gives it, that the
 * agreement knows exactly the collective ones, and that each data access
 * call counts under its kind of the statistics.
 *
 * This header includes only lmpio.h (the drop-in includes it as well). */
#ifndef LMPIO_CALLS_H
#define LMPIO_CALLS_H

#include "lmpio.h"

/* The groups the entry files define (names of lmpio.h's lists). */
#define LMPIO__CALLS_INDEPENDENT LMPIO_CALLS_INDEPENDENT
#define LMPIO__CALLS_COLLECTIVE LMPIO_CALLS_COLLECTIVE
#define LMPIO__CALLS_SHARED LMPIO_CALLS_SHARED
#define LMPIO__CALLS_NONBLOCKING LMPIO_CALLS_NONBLOCKING
#define LMPIO__CALLS_SPLIT LMPIO_CALLS_SPLIT
#define LMPIO__CALLS LMPIO_CALLS

/* The other calls on an open handle (not open, delete, nor close, which
 * takes its handle by address; nor the error handler's calls):
 *
 *   X(name, coll, params, args)  a call with parameters after the handle
 *   BARE(name, coll)             one with none
 *     coll    COLL (every rank calls it, the agreement matches it), INDEP
 *     params  the parameters after the handle
 *     args    the same names passed on */
#define LMPIO__CALLS_FILE(X, BARE)                                                                                    \
  X(set_size, COLL, (MPI_Offset size), (size))                                                                        \
  X(preallocate, COLL, (MPI_Offset size), (size))                                                                     \
  X(get_size, INDEP, (MPI_Offset *size), (size))                                                                      \
  X(get_group, INDEP, (MPI_Group *group), (group))                                                                    \
  X(get_amode, INDEP, (int *amode), (amode))                                                                          \
  X(set_info, COLL, (MPI_Info info), (info))                                                                          \
  X(get_info, INDEP, (MPI_Info *info_used), (info_used))                                                              \
  X(set_view, COLL, (MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep, MPI_Info info), \
    (disp, etype, filetype, datarep, info))                                                                           \
  X(get_view, INDEP, (MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype, char *datarep),                  \
    (disp, etype, filetype, datarep))                                                                                 \
  X(seek, INDEP, (MPI_Offset offset, int whence), (offset, whence))                                                   \
  X(get_position, INDEP, (MPI_Offset *offset), (offset))                                                              \
  X(get_byte_offset, INDEP, (MPI_Offset offset, MPI_Offset *disp), (offset, disp))                                    \
  X(seek_shared, COLL, (MPI_Offset offset, int whence), (offset, whence))                                             \
  X(get_position_shared, INDEP, (MPI_Offset *offset), (offset))                                                       \
  X(set_atomicity, COLL, (int flag), (flag))                                                                          \
  X(get_atomicity, INDEP, (int *flag), (flag))                                                                        \
  X(get_type_extent, INDEP, (MPI_Datatype datatype, MPI_Aint *extent), (datatype, extent))                            \
  BARE(sync, COLL)

/* Such a call's parameter list with handle type H, and its arguments
 * passed on with h for the handle. */
#define LMPIO__FILE_CALL_PARAMS(H, params) (H fh, LMPIO__UNPAREN params)
#define LMPIO__FILE_CALL_ARGS(h, args) (h, LMPIO__UNPAREN args)
#define LMPIO__UNPAREN(...) __VA_ARGS__

/* The parameter list of an end of a split collective. */
#define LMPIO__CALL_END_PARAMS(H, dir) (H fh, LMPIO__CALL_BUF_##dir buf, MPI_Status *status)

/* A call's parameter list, with handle type H (lmpio_file, MPI_File) and
 * count type C (int, MPI_Count). */
#define LMPIO__CALL_PARAMS(H, C, pointer, form, dir)                                            \
  (H fh, LMPIO__CALL_OFFSET_##pointer LMPIO__CALL_BUF_##dir buf, C count, MPI_Datatype datatype \
       LMPIO__CALL_TAIL_##form)
#define LMPIO__CALL_OFFSET_EXPLICIT MPI_Offset offset,
#define LMPIO__CALL_OFFSET_INDIVIDUAL
#define LMPIO__CALL_OFFSET_SHARED
#define LMPIO__CALL_BUF_READ void *
#define LMPIO__CALL_BUF_WRITE const void *
#define LMPIO__CALL_TAIL_BLOCKING , MPI_Status *status
#define LMPIO__CALL_TAIL_NONBLOCKING , MPI_Request *request
#define LMPIO__CALL_TAIL_BEGIN

/* The same arguments passed on, with h for the handle. */
#define LMPIO__CALL_ARGS(h, pointer, form) \
  (h, LMPIO__CALL_OFFARG_##pointer buf, count, datatype LMPIO__CALL_TAILARG_##form)
#define LMPIO__CALL_OFFARG_EXPLICIT offset,
#define LMPIO__CALL_OFFARG_INDIVIDUAL
#define LMPIO__CALL_OFFARG_SHARED
#define LMPIO__CALL_TAILARG_BLOCKING , status
#define LMPIO__CALL_TAILARG_NONBLOCKING , request
#define LMPIO__CALL_TAILARG_BEGIN

/* What an entry passes to its run: the explicit offset (0 for a pointer),
 * and whether the individual pointer is used. */
#define LMPIO__CALL_OFFSET_VALUE_EXPLICIT offset
#define LMPIO__CALL_OFFSET_VALUE_INDIVIDUAL 0
#define LMPIO__CALL_OFFSET_VALUE_SHARED 0
#define LMPIO__CALL_USE_FP_EXPLICIT 0
#define LMPIO__CALL_USE_FP_INDIVIDUAL 1
#define LMPIO__CALL_USE_FP_SHARED 0

#endif
