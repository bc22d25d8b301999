/* The data access calls of MPI-IO, written once.  The entries define them
 * from these lists (access.c, collective.c, shared.c, request.c), the
 * drop-in wraps them (core/dropin/wrappers.c), and calls_test.c checks
 * that each is in lmpio.h and that the agreement knows every collective
 * one.  Every call also has its large-count twin, name_c, whose count is
 * an MPI_Count.
 *
 *   X(name, pointer, coll, form, dir)
 *     pointer  EXPLICIT (an offset argument), INDIVIDUAL, SHARED
 *     coll     INDEP, COLL (the _all calls), ORDERED
 *     form     BLOCKING (a status), NONBLOCKING (a request), BEGIN (the
 *              first half of a split collective: neither)
 *     dir      READ (void *buf), WRITE (const void *buf)
 *
 * This header includes nothing (the drop-in includes it as well). */
#ifndef LMPIO_CALLS_H
#define LMPIO_CALLS_H

#define LMPIO__CALLS_INDEPENDENT(X)             \
  X(read_at, EXPLICIT, INDEP, BLOCKING, READ)   \
  X(write_at, EXPLICIT, INDEP, BLOCKING, WRITE) \
  X(read, INDIVIDUAL, INDEP, BLOCKING, READ)    \
  X(write, INDIVIDUAL, INDEP, BLOCKING, WRITE)

#define LMPIO__CALLS_COLLECTIVE(X)                  \
  X(read_at_all, EXPLICIT, COLL, BLOCKING, READ)    \
  X(write_at_all, EXPLICIT, COLL, BLOCKING, WRITE)  \
  X(read_all, INDIVIDUAL, COLL, BLOCKING, READ)     \
  X(write_all, INDIVIDUAL, COLL, BLOCKING, WRITE)

#define LMPIO__CALLS_SHARED(X)                        \
  X(read_shared, SHARED, INDEP, BLOCKING, READ)       \
  X(write_shared, SHARED, INDEP, BLOCKING, WRITE)     \
  X(read_ordered, SHARED, ORDERED, BLOCKING, READ)    \
  X(write_ordered, SHARED, ORDERED, BLOCKING, WRITE)

#define LMPIO__CALLS_NONBLOCKING(X)                     \
  X(iread_at, EXPLICIT, INDEP, NONBLOCKING, READ)       \
  X(iwrite_at, EXPLICIT, INDEP, NONBLOCKING, WRITE)     \
  X(iread, INDIVIDUAL, INDEP, NONBLOCKING, READ)        \
  X(iwrite, INDIVIDUAL, INDEP, NONBLOCKING, WRITE)      \
  X(iread_at_all, EXPLICIT, COLL, NONBLOCKING, READ)    \
  X(iwrite_at_all, EXPLICIT, COLL, NONBLOCKING, WRITE)  \
  X(iread_all, INDIVIDUAL, COLL, NONBLOCKING, READ)     \
  X(iwrite_all, INDIVIDUAL, COLL, NONBLOCKING, WRITE)   \
  X(iread_shared, SHARED, INDEP, NONBLOCKING, READ)     \
  X(iwrite_shared, SHARED, INDEP, NONBLOCKING, WRITE)

#define LMPIO__CALLS_SPLIT(X)                               \
  X(read_at_all_begin, EXPLICIT, COLL, BEGIN, READ)         \
  X(write_at_all_begin, EXPLICIT, COLL, BEGIN, WRITE)       \
  X(read_all_begin, INDIVIDUAL, COLL, BEGIN, READ)          \
  X(write_all_begin, INDIVIDUAL, COLL, BEGIN, WRITE)        \
  X(read_ordered_begin, SHARED, ORDERED, BEGIN, READ)       \
  X(write_ordered_begin, SHARED, ORDERED, BEGIN, WRITE)

#define LMPIO__CALLS(X)          \
  LMPIO__CALLS_INDEPENDENT(X)    \
  LMPIO__CALLS_COLLECTIVE(X)     \
  LMPIO__CALLS_SHARED(X)         \
  LMPIO__CALLS_NONBLOCKING(X)    \
  LMPIO__CALLS_SPLIT(X)

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
