/*
 * lmpio — the MPI-IO file model as a library.
 *
 * Every function mirrors one C binding of the MPI standard's I/O chapter: same
 * name after the prefix (MPI_File_x -> lmpio_file_x), same arguments in the
 * same order, with the handle type lmpio_file in place of MPI_File.  Return
 * values are MPI error classes (MPI_SUCCESS, MPI_ERR_IO, ...).  When a call
 * fails, lmpio_last_error_message() gives a detailed message for the calling
 * thread: which call, which path, which errno text, which rank.
 *
 * Collective calls (open, close, set_view, set_size, preallocate, sync,
 * set_atomicity, seek_shared and every *_all / *_ordered call) return the same
 * error class on every rank.
 *
 * Statuses are filled so that MPI_Get_count and MPI_Get_elements work on them.
 * Requests are MPI generalized requests: MPI_Wait and MPI_Test work on them.
 * MPI must be initialised before the first call.
 */
#ifndef LMPIO_H
#define LMPIO_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(LMPIO_STATIC)
#define LMPIO_API __attribute__((visibility("default")))
#else
#define LMPIO_API
#endif

#define LMPIO_VERSION "0.1.0"

typedef struct lmpio_file_s *lmpio_file;
#define LMPIO_FILE_NULL ((lmpio_file)0)

/* The data access calls, as lists for bindings that generate their tables
 * from them (the Lua module, the drop-in library, lmpio's own entries):
 * LMPIO_CALLS(X) calls X once per call that takes a count, in the order
 * of the groups below (each has its large-count twin, name_c);
 * LMPIO_CALLS_END(X) once per end of a split collective (no count, no _c).
 *
 *   X(name, pointer, coll, form, dir)
 *     pointer  EXPLICIT (an offset argument), INDIVIDUAL, SHARED
 *     coll     INDEP, COLL (the _all calls), ORDERED
 *     form     BLOCKING (a status), NONBLOCKING (a request), BEGIN (the
 *              first half of a split collective: neither), END (its second
 *              half: buf and a status)
 *     dir      READ (void *buf), WRITE (const void *buf) */
#define LMPIO_CALLS_INDEPENDENT(X)              \
  X(read_at, EXPLICIT, INDEP, BLOCKING, READ)   \
  X(write_at, EXPLICIT, INDEP, BLOCKING, WRITE) \
  X(read, INDIVIDUAL, INDEP, BLOCKING, READ)    \
  X(write, INDIVIDUAL, INDEP, BLOCKING, WRITE)
#define LMPIO_CALLS_COLLECTIVE(X)                  \
  X(read_at_all, EXPLICIT, COLL, BLOCKING, READ)   \
  X(write_at_all, EXPLICIT, COLL, BLOCKING, WRITE) \
  X(read_all, INDIVIDUAL, COLL, BLOCKING, READ)    \
  X(write_all, INDIVIDUAL, COLL, BLOCKING, WRITE)
#define LMPIO_CALLS_SHARED(X)                      \
  X(read_shared, SHARED, INDEP, BLOCKING, READ)    \
  X(write_shared, SHARED, INDEP, BLOCKING, WRITE)  \
  X(read_ordered, SHARED, ORDERED, BLOCKING, READ) \
  X(write_ordered, SHARED, ORDERED, BLOCKING, WRITE)
#define LMPIO_CALLS_NONBLOCKING(X)                    \
  X(iread_at, EXPLICIT, INDEP, NONBLOCKING, READ)     \
  X(iwrite_at, EXPLICIT, INDEP, NONBLOCKING, WRITE)   \
  X(iread, INDIVIDUAL, INDEP, NONBLOCKING, READ)      \
  X(iwrite, INDIVIDUAL, INDEP, NONBLOCKING, WRITE)    \
  X(iread_at_all, EXPLICIT, COLL, NONBLOCKING, READ)  \
  X(iwrite_at_all, EXPLICIT, COLL, NONBLOCKING, WRITE) \
  X(iread_all, INDIVIDUAL, COLL, NONBLOCKING, READ)   \
  X(iwrite_all, INDIVIDUAL, COLL, NONBLOCKING, WRITE) \
  X(iread_shared, SHARED, INDEP, NONBLOCKING, READ)   \
  X(iwrite_shared, SHARED, INDEP, NONBLOCKING, WRITE)
#define LMPIO_CALLS_SPLIT(X)                              \
  X(read_at_all_begin, EXPLICIT, COLL, BEGIN, READ)       \
  X(write_at_all_begin, EXPLICIT, COLL, BEGIN, WRITE)     \
  X(read_all_begin, INDIVIDUAL, COLL, BEGIN, READ)        \
  X(write_all_begin, INDIVIDUAL, COLL, BEGIN, WRITE)      \
  X(read_ordered_begin, SHARED, ORDERED, BEGIN, READ)     \
  X(write_ordered_begin, SHARED, ORDERED, BEGIN, WRITE)
#define LMPIO_CALLS(X)          \
  LMPIO_CALLS_INDEPENDENT(X)    \
  LMPIO_CALLS_COLLECTIVE(X)     \
  LMPIO_CALLS_SHARED(X)         \
  LMPIO_CALLS_NONBLOCKING(X)    \
  LMPIO_CALLS_SPLIT(X)
#define LMPIO_CALLS_END(X)                           \
  X(read_at_all_end, EXPLICIT, COLL, END, READ)      \
  X(write_at_all_end, EXPLICIT, COLL, END, WRITE)    \
  X(read_all_end, INDIVIDUAL, COLL, END, READ)       \
  X(write_all_end, INDIVIDUAL, COLL, END, WRITE)     \
  X(read_ordered_end, SHARED, ORDERED, END, READ)    \
  X(write_ordered_end, SHARED, ORDERED, END, WRITE)

/* File manipulation */
LMPIO_API int lmpio_file_open(MPI_Comm comm, const char *filename, int amode,
                              MPI_Info info, lmpio_file *fh);
LMPIO_API int lmpio_file_close(lmpio_file *fh);
LMPIO_API int lmpio_file_delete(const char *filename, MPI_Info info);
LMPIO_API int lmpio_file_set_size(lmpio_file fh, MPI_Offset size);
LMPIO_API int lmpio_file_preallocate(lmpio_file fh, MPI_Offset size);
LMPIO_API int lmpio_file_get_size(lmpio_file fh, MPI_Offset *size);
LMPIO_API int lmpio_file_get_group(lmpio_file fh, MPI_Group *group);
LMPIO_API int lmpio_file_get_amode(lmpio_file fh, int *amode);
LMPIO_API int lmpio_file_set_info(lmpio_file fh, MPI_Info info);
LMPIO_API int lmpio_file_get_info(lmpio_file fh, MPI_Info *info_used);

/* File views */
LMPIO_API int lmpio_file_set_view(lmpio_file fh, MPI_Offset disp, MPI_Datatype etype,
                                  MPI_Datatype filetype, const char *datarep,
                                  MPI_Info info);
LMPIO_API int lmpio_file_get_view(lmpio_file fh, MPI_Offset *disp, MPI_Datatype *etype,
                                  MPI_Datatype *filetype, char *datarep);

/* Data access with explicit offsets */
LMPIO_API int lmpio_file_read_at(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                                 MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_at_all(lmpio_file fh, MPI_Offset offset, void *buf,
                                     int count, MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_at(lmpio_file fh, MPI_Offset offset, const void *buf,
                                  int count, MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_at_all(lmpio_file fh, MPI_Offset offset, const void *buf,
                                      int count, MPI_Datatype datatype, MPI_Status *status);

/* Data access with individual file pointers */
LMPIO_API int lmpio_file_read(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                              MPI_Status *status);
LMPIO_API int lmpio_file_read_all(lmpio_file fh, void *buf, int count,
                                  MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write(lmpio_file fh, const void *buf, int count,
                               MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_all(lmpio_file fh, const void *buf, int count,
                                   MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_seek(lmpio_file fh, MPI_Offset offset, int whence);
LMPIO_API int lmpio_file_get_position(lmpio_file fh, MPI_Offset *offset);
LMPIO_API int lmpio_file_get_byte_offset(lmpio_file fh, MPI_Offset offset,
                                         MPI_Offset *disp);

/* Data access with shared file pointers.  The pointer lives in a helper
 * file that open creates beside the data file and removes from the
 * directory at once (every rank keeps it open), so it works across
 * machines, needs no help from other ranks, and leaves nothing behind.
 * lmpio_file_delete also removes helpers a crash may have left. */
LMPIO_API int lmpio_file_read_shared(lmpio_file fh, void *buf, int count,
                                     MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_shared(lmpio_file fh, const void *buf, int count,
                                      MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_ordered(lmpio_file fh, void *buf, int count,
                                      MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_ordered(lmpio_file fh, const void *buf, int count,
                                       MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_seek_shared(lmpio_file fh, MPI_Offset offset, int whence);
LMPIO_API int lmpio_file_get_position_shared(lmpio_file fh, MPI_Offset *offset);

/* Nonblocking data access.  The operation is carried out by the initiating
 * call (as the standard allows); the request is an MPI generalized request,
 * already complete, so MPI_Wait/MPI_Test/MPI_Waitall give its status.  An
 * error returns its class from the call itself, with *request set to
 * MPI_REQUEST_NULL; pointers advance when the call is initiated. */
LMPIO_API int lmpio_file_iread_at(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                                  MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_at(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                                   MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_at_all(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                                      MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_at_all(lmpio_file fh, MPI_Offset offset, const void *buf,
                                       int count, MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                               MPI_Request *request);
LMPIO_API int lmpio_file_iwrite(lmpio_file fh, const void *buf, int count,
                                MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_all(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                                   MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_all(lmpio_file fh, const void *buf, int count,
                                    MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_shared(lmpio_file fh, void *buf, int count,
                                      MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_shared(lmpio_file fh, const void *buf, int count,
                                       MPI_Datatype datatype, MPI_Request *request);

/* Split collective data access.  One split collective may be active per
 * file handle; _end must name the kind and the buffer of its _begin. */
LMPIO_API int lmpio_file_read_at_all_begin(lmpio_file fh, MPI_Offset offset, void *buf,
                                           int count, MPI_Datatype datatype);
LMPIO_API int lmpio_file_read_at_all_end(lmpio_file fh, void *buf, MPI_Status *status);
LMPIO_API int lmpio_file_write_at_all_begin(lmpio_file fh, MPI_Offset offset, const void *buf,
                                            int count, MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_at_all_end(lmpio_file fh, const void *buf, MPI_Status *status);
LMPIO_API int lmpio_file_read_all_begin(lmpio_file fh, void *buf, int count,
                                        MPI_Datatype datatype);
LMPIO_API int lmpio_file_read_all_end(lmpio_file fh, void *buf, MPI_Status *status);
LMPIO_API int lmpio_file_write_all_begin(lmpio_file fh, const void *buf, int count,
                                         MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_all_end(lmpio_file fh, const void *buf, MPI_Status *status);
LMPIO_API int lmpio_file_read_ordered_begin(lmpio_file fh, void *buf, int count,
                                            MPI_Datatype datatype);
LMPIO_API int lmpio_file_read_ordered_end(lmpio_file fh, void *buf, MPI_Status *status);
LMPIO_API int lmpio_file_write_ordered_begin(lmpio_file fh, const void *buf, int count,
                                             MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_ordered_end(lmpio_file fh, const void *buf, MPI_Status *status);

/* Consistency and semantics */
LMPIO_API int lmpio_file_set_atomicity(lmpio_file fh, int flag);
LMPIO_API int lmpio_file_get_atomicity(lmpio_file fh, int *flag);
LMPIO_API int lmpio_file_sync(lmpio_file fh);

/* Data representations: "native", "internal" (lmpio uses the external32
 * layout for it) and "external32" are predefined; others are registered
 * with conversion functions and an extent function, as in MPI. */
LMPIO_API int lmpio_register_datarep(const char *datarep,
                                     MPI_Datarep_conversion_function *read_conversion_fn,
                                     MPI_Datarep_conversion_function *write_conversion_fn,
                                     MPI_Datarep_extent_function *dtype_file_extent_fn,
                                     void *extra_state);
LMPIO_API int lmpio_file_get_type_extent(lmpio_file fh, MPI_Datatype datatype, MPI_Aint *extent);
/* For conversion functions (an lmpio extension): says why the conversion
 * that is about to return an error failed.  The text is appended to the
 * MPI_ERR_CONVERSION message of the call, on every rank of a collective call
 * (per thread; used by the next failing conversion, then cleared). */
LMPIO_API void lmpio_conversion_error_detail(const char *text);

/* Large counts (MPI-4.0).  Every data access call and get_type_extent has
 * a variant with an MPI_Count count (the name ends in _c), as MPI-4.0 names
 * them; Open MPI 4.1's headers lack them, so lmpio declares what it needs.
 * Conversion functions of representations registered with
 * lmpio_register_datarep_c take an MPI_Count count. */
typedef int lmpio_datarep_conversion_function_c(void *userbuf, MPI_Datatype datatype, MPI_Count count,
                                                void *filebuf, MPI_Offset position, void *extra_state);
#define LMPIO_CONVERSION_FN_NULL_C ((lmpio_datarep_conversion_function_c *)0)
LMPIO_API int lmpio_register_datarep_c(const char *datarep,
                                       lmpio_datarep_conversion_function_c *read_conversion_fn,
                                       lmpio_datarep_conversion_function_c *write_conversion_fn,
                                       MPI_Datarep_extent_function *dtype_file_extent_fn,
                                       void *extra_state);
LMPIO_API int lmpio_file_get_type_extent_c(lmpio_file fh, MPI_Datatype datatype, MPI_Count *extent);
LMPIO_API int lmpio_file_read_at_c(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count,
                                   MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_at_all_c(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count,
                                       MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_at_c(lmpio_file fh, MPI_Offset offset, const void *buf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_at_all_c(lmpio_file fh, MPI_Offset offset, const void *buf,
                                        MPI_Count count, MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_c(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                MPI_Status *status);
LMPIO_API int lmpio_file_read_all_c(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Status *status);
LMPIO_API int lmpio_file_write_c(lmpio_file fh, const void *buf, MPI_Count count, MPI_Datatype datatype,
                                 MPI_Status *status);
LMPIO_API int lmpio_file_write_all_c(lmpio_file fh, const void *buf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_shared_c(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                       MPI_Status *status);
LMPIO_API int lmpio_file_write_shared_c(lmpio_file fh, const void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_read_ordered_c(lmpio_file fh, void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_write_ordered_c(lmpio_file fh, const void *buf, MPI_Count count,
                                         MPI_Datatype datatype, MPI_Status *status);
LMPIO_API int lmpio_file_iread_at_c(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_at_c(lmpio_file fh, MPI_Offset offset, const void *buf,
                                     MPI_Count count, MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_at_all_c(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_at_all_c(lmpio_file fh, MPI_Offset offset, const void *buf,
                                         MPI_Count count, MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_c(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                 MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_c(lmpio_file fh, const void *buf, MPI_Count count,
                                  MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_all_c(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype,
                                     MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_all_c(lmpio_file fh, const void *buf, MPI_Count count,
                                      MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iread_shared_c(lmpio_file fh, void *buf, MPI_Count count,
                                        MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_iwrite_shared_c(lmpio_file fh, const void *buf, MPI_Count count,
                                         MPI_Datatype datatype, MPI_Request *request);
LMPIO_API int lmpio_file_read_at_all_begin_c(lmpio_file fh, MPI_Offset offset, void *buf,
                                             MPI_Count count, MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_at_all_begin_c(lmpio_file fh, MPI_Offset offset, const void *buf,
                                              MPI_Count count, MPI_Datatype datatype);
LMPIO_API int lmpio_file_read_all_begin_c(lmpio_file fh, void *buf, MPI_Count count,
                                          MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_all_begin_c(lmpio_file fh, const void *buf, MPI_Count count,
                                           MPI_Datatype datatype);
LMPIO_API int lmpio_file_read_ordered_begin_c(lmpio_file fh, void *buf, MPI_Count count,
                                              MPI_Datatype datatype);
LMPIO_API int lmpio_file_write_ordered_begin_c(lmpio_file fh, const void *buf, MPI_Count count,
                                               MPI_Datatype datatype);

/* For bindings (an lmpio extension): makes the next collective call of this
 * thread (any *_all, *_ordered, split _begin, set_view, set_size,
 * preallocate, set_info, set_atomicity, sync, seek_shared, close) fail on
 * every rank with errorclass and message, as if this rank had found its
 * arguments invalid: the ranks agree on it and nothing is transferred.  A
 * binding that finds an argument error before a collective call uses it so
 * that the other ranks fail too instead of waiting. */
LMPIO_API void lmpio_fail_next_collective(int errorclass, const char *message);
/* For bindings: the collective calls of this thread (flag 1, until 0) are
 * those of a program that is ending, such as the close of the files a
 * script left open.  Ranks that enter different collective calls on a file
 * all fail with MPI_ERR_NOT_SAME and a message naming both calls and ranks;
 * with this flag it says the rank's script ended ("rank 1 is closing the
 * file (its script ended) while rank 0 called write_at_all"). */
LMPIO_API void lmpio_set_exiting(int flag);

/* For layers over lmpio (an lmpio extension): whether unknown hint keys are
 * reported on standard error when neither the hint lmpio_hint_warnings nor
 * LMPIO_HINT_WARNINGS (0 or 1) says (1 by default).  The drop-in library
 * sets 0: the programs it serves were not written for lmpio, and the
 * standard says an implementation ignores the hints it does not know. */
LMPIO_API void lmpio_set_hint_warnings(int on);

/* For layers over lmpio (an lmpio extension; the drop-in library uses it):
 * who hears of a nonblocking operation that failed in the background.  By
 * default its request completes with the error, which MPI hands to
 * MPI_COMM_WORLD's error handler (MPI's rule for generalized requests) in
 * MPI_Wait, MPI_Test, MPI_Waitall, ...  Between lmpio_request_failures(fn,
 * arg) and lmpio_request_failures(NULL, NULL) on a thread, the requests
 * that MPI completes on that thread complete as successes for MPI (their
 * status counts 0 bytes) and fn is called, on that thread, for each one
 * that failed: its request handle, the file it was started on
 * (LMPIO_FILE_NULL once that file is closed), its error class and message,
 * so that the caller reports them itself. */
typedef void lmpio_request_failure_fn(void *arg, MPI_Request request, lmpio_file fh, int errorclass,
                                      const char *message);
LMPIO_API void lmpio_request_failures(lmpio_request_failure_fn *fn, void *arg);

/* Long waits (an lmpio extension): a thread that has waited
 * LMPIO_HANG_REPORT seconds (60 by default; 0: never) inside one blocking
 * call of lmpio prints "lmpio: rank R has waited S s in CALL (WHERE)" on
 * standard error, and again at doubling intervals.  lmpio's collective
 * calls watch their own waits; a binding wraps its own blocking calls
 * (communicator collectives, message waits) in lmpio_watch_begin(name) ...
 * lmpio_watch_end() (nested pairs count as the outer one; one clock read a
 * call), and gives the place WHERE with lmpio_watch_where: fn(arg, buf, n)
 * is called from another thread while this thread is inside the call
 * (never after it returned, nor while a conversion function of a user
 * representation runs inside it), and writes the place into buf, e.g. the
 * script's "file.lua:12".
 * A wait that is a loop of the binding's own, running its code between
 * polls (which no other thread may then read), reports itself instead:
 * with an lmpio_watch_loop zeroed before the loop, it calls
 * lmpio_watch_tick(&loop, name) between polls (one clock read; the first
 * starts the clock), which prints the report when one is due, calling this
 * thread's where function itself.  Inside a watched call a tick says
 * nothing (that call is reported). */
typedef void lmpio_where_fn(void *arg, char *buf, size_t n);
typedef struct {
  double since, next;
} lmpio_watch_loop;
LMPIO_API void lmpio_watch_begin(const char *call);
LMPIO_API void lmpio_watch_end(void);
LMPIO_API void lmpio_watch_where(lmpio_where_fn *fn, void *arg);
LMPIO_API void lmpio_watch_tick(lmpio_watch_loop *loop, const char *call);

/* Errors.  lmpio_error_string mirrors MPI_Error_string for the classes lmpio
 * returns; lmpio_error_class_name gives the class's name ("MPI_ERR_IO"). */
LMPIO_API int lmpio_error_string(int errorcode, char *string, int *resultlen);
LMPIO_API const char *lmpio_error_class_name(int errorclass);
/* The detailed message of the last failed lmpio call on this thread, or "". */
LMPIO_API const char *lmpio_last_error_message(void);

/* Predefined items (an lmpio extension, for conversion functions): a walker
 * goes through count instances of a datatype laid out from byte 0 of a
 * buffer (instance i at i * extent), one predefined item after another in
 * typemap order -- the order in which the count and position arguments of a
 * conversion function count items.  A pair type such as MPI_DOUBLE_INT is two
 * items.  The walker keeps what it needs of the datatype: freeing the
 * datatype does not end the walk.  Close every walker that opened. */
typedef struct lmpio_items_s *lmpio_items;
LMPIO_API int lmpio_items_open(MPI_Datatype datatype, MPI_Count count, lmpio_items *items);
/* The next items: up to max of one predefined type lying back to back from
 * byte *offset of the buffer; *basic is their type, *item_size the bytes of
 * one (any of the three may be NULL).  Returns how many, 0 at the end. */
LMPIO_API MPI_Count lmpio_items_next(lmpio_items items, MPI_Count max, MPI_Aint *offset,
                                     MPI_Datatype *basic, MPI_Count *item_size);
/* Passes over n items (whole instances without walking them); returns how
 * many, fewer than n at the end. */
LMPIO_API MPI_Count lmpio_items_skip(lmpio_items items, MPI_Count n);
LMPIO_API void lmpio_items_close(lmpio_items items);
/* Where one instance of a datatype has its data bytes, as lmpio lays them
 * out (an lmpio extension): [*data_lb, *data_ub) from the instance's start
 * (0, 0 when it has none), and the extent that places instance i at
 * i * extent.  MPI_Type_get_true_extent does not always agree: Open MPI
 * answers true lb 0 for MPI_Type_create_hvector(100, 3, -1, MPI_BYTE), whose
 * bytes lie at -99..2. */
LMPIO_API int lmpio_type_data_bounds(MPI_Datatype datatype, MPI_Aint *data_lb, MPI_Aint *data_ub,
                                     MPI_Aint *extent);

/* Records in rank order (an lmpio extension, for text and other records
 * ending with a one-byte separator; collective).  Each rank reads about max
 * bytes with read_ordered through the shared pointer, then the ranks move
 * the pieces of records that straddle them so that every rank holds whole
 * records only, in rank order, none split across ranks, none lost; a record
 * not yet ended is kept for the next call (end of input ends the last one).
 * *records receives a buffer (free it with free(); NULL when *len is 0) of
 * *len bytes: this rank's records, each ending with sep (the last of the
 * input perhaps without).  *more is 0 on every rank at once when the input
 * is exhausted, 1 otherwise (then *len may be 0 on some rank).  Works on
 * regular files and streams whose view counts bytes (an etype of one byte);
 * every rank must pass the same sep. */
LMPIO_API int lmpio_file_read_records_ordered(lmpio_file fh, int sep, MPI_Count max, char **records,
                                              MPI_Count *len, int *more);
/* Ends a pass of read_records_ordered before the end of its input (a loop
 * left early): the unfinished record it keeps for the next call is
 * dropped, so the next call starts with the bytes at the shared pointer.
 * Local (the record is kept by rank 0 only): may be called on any rank at
 * any time.  Moving the shared pointer (seek_shared, set_view, any access
 * through it other than read_records_ordered's own) drops it too. */
LMPIO_API int lmpio_file_drop_records(lmpio_file fh);

/* Statistics of the calls on fh by this process (an lmpio extension,
 * local): calls, bytes and time, and the path each byte took.  Writes up to
 * max values into values[0..max-1], value i named lmpio_stats_name(i), and
 * the number of values into *n (may be NULL).  Counts are whole numbers,
 * times seconds (names ending in _TIME), ratios the rest (names ending in
 * _AMPLIFICATION).  README "Statistics" lists them. */
LMPIO_API int lmpio_file_get_stats(lmpio_file fh, double *values, int max, int *n);
/* The name of statistic i ("POSIX_READS", "MPIIO_COLL_WRITES", ...), or NULL
 * past the last. */
LMPIO_API const char *lmpio_stats_name(int i);

#ifdef __cplusplus
}
#endif
#endif
