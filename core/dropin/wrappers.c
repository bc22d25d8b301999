/*
 * Every call of the MPI standard's I/O chapter, as MPI_File_* and
 * PMPI_File_* (the MPI_ name an alias of the PMPI_ one, so a profiling
 * tool that wraps MPI_File_x and calls PMPI_File_x still reaches lmpio),
 * over lmpio's public API, which mirrors it one to one.  A call checks its
 * handle, calls lmpio, and hands an error to the file's error handler
 * (errhandler.c).  The error handler calls are in errhandler.c.
 */
#include <stdlib.h>
#include "dropin.h"
#include "calls.h"

#define EXPORT __attribute__((visibility("default")))

/* A handle that is not an open file of the drop-in's: MPI_ERR_FILE, on
 * MPI_FILE_NULL's error handler. */
static int bad_file(MPI_File fh, const char *call) {
  return dropin__error(NULL, MPI_ERR_FILE, call,
                       fh == MPI_FILE_NULL ? "file handle is MPI_FILE_NULL"
                                           : "invalid file handle (not one that MPI_File_open returned)");
}

/* MPI_File_<name>(fh, params...) over lmpio_file_<name>(fh, args...). */
#define ON_FILE(name, params, args)                                                   \
  EXPORT int PMPI_File_##name params {                                               \
    dropin_file *f = dropin__file_get(fh);                                           \
    if (!f) return bad_file(fh, "MPI_File_" #name);                                  \
    return dropin__return(f, lmpio_file_##name args, "MPI_File_" #name);             \
  }                                                                                  \
  EXPORT int MPI_File_##name params __attribute__((alias("PMPI_File_" #name)));

/* File manipulation */

EXPORT int PMPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
  const char *call = "MPI_File_open";
  if (!fh) return dropin__error(NULL, MPI_ERR_ARG, call, "fh is NULL");
  *fh = MPI_FILE_NULL;
  /* Unknown hints in silence, unless LMPIO_HINT_WARNINGS=1: the program
   * was written for any MPI (its hints are other libraries' often). */
  lmpio_set_hint_warnings(0);
  /* The handle first: its allocation failing on one rank fails the open
   * on every rank (lmpio agrees on it) instead of leaving the others open. */
  dropin_file *f = dropin__file_new();
  if (!f) lmpio_fail_next_collective(MPI_ERR_NO_MEM, "out of memory for the file handle");
  int rc = lmpio_file_open(comm, filename, amode, info, f ? &f->fh : &(lmpio_file){LMPIO_FILE_NULL});
  if (rc != MPI_SUCCESS) {
    dropin__file_free(f);
    return dropin__return(NULL, rc, call);
  }
  dropin__file_publish(f);
  *fh = (MPI_File)f;
  return MPI_SUCCESS;
}
EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
  __attribute__((alias("PMPI_File_open")));

EXPORT int PMPI_File_close(MPI_File *fh) {
  const char *call = "MPI_File_close";
  if (!fh) return dropin__error(NULL, MPI_ERR_ARG, call, "fh is NULL");
  dropin_file *f = dropin__file_get(*fh);
  if (!f) return bad_file(*fh, call);
  int rc = lmpio_file_close(&f->fh);
  if (rc != MPI_SUCCESS) dropin__return(f, rc, call);
  if (f->fh == LMPIO_FILE_NULL) { /* closed, even when it failed */
    dropin__file_free(f);
    *fh = MPI_FILE_NULL;
  }
  return rc;
}
EXPORT int MPI_File_close(MPI_File *fh) __attribute__((alias("PMPI_File_close")));

EXPORT int PMPI_File_delete(const char *filename, MPI_Info info) {
  return dropin__return(NULL, lmpio_file_delete(filename, info), "MPI_File_delete");
}
EXPORT int MPI_File_delete(const char *filename, MPI_Info info) __attribute__((alias("PMPI_File_delete")));

/* Data access: every call of the list (lmpio.h's LMPIO_CALLS), with an int
 * count and with an MPI_Count one (the _c calls), and the ends of the split
 * collectives. */
#define WRAP(name, pointer, coll, form, dir)                                                \
  ON_FILE(name, LMPIO__CALL_PARAMS(MPI_File, int, pointer, form, dir), LMPIO__CALL_ARGS(f->fh, pointer, form))
#define WRAP_C(name, pointer, coll, form, dir)                                              \
  ON_FILE(name##_c, LMPIO__CALL_PARAMS(MPI_File, MPI_Count, pointer, form, dir),              \
          LMPIO__CALL_ARGS(f->fh, pointer, form))
#define WRAP_END(name, pointer, coll, form, dir) \
  ON_FILE(name, LMPIO__CALL_END_PARAMS(MPI_File, dir), (f->fh, buf, status))
LMPIO__CALLS(WRAP)
LMPIO_CALLS_END(WRAP_END)

/* The other calls on an open handle (the second list of calls.h).  lmpio's
 * info carries the key lmpio_version beside the hints. */
#define WRAP_FILE(name, coll, params, args) \
  ON_FILE(name, LMPIO__FILE_CALL_PARAMS(MPI_File, params), LMPIO__FILE_CALL_ARGS(f->fh, args))
#define WRAP_BARE(name, coll) ON_FILE(name, (MPI_File fh), (f->fh))
LMPIO__CALLS_FILE(WRAP_FILE, WRAP_BARE)

/* Data representations */
EXPORT int PMPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                                 MPI_Datarep_conversion_function *write_conversion_fn,
                                 MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  return dropin__return(NULL,
                        lmpio_register_datarep(datarep, read_conversion_fn, write_conversion_fn,
                                               dtype_file_extent_fn, extra_state),
                        "MPI_Register_datarep");
}
EXPORT int MPI_Register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                                MPI_Datarep_conversion_function *write_conversion_fn,
                                MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
  __attribute__((alias("PMPI_Register_datarep")));

/* Large counts: where the MPI library's header declares the MPI-4.0 _c
 * calls (MPICH 4; Open MPI 4.1 does not), they are lmpio's too. */
#if MPI_VERSION >= 4
LMPIO__CALLS(WRAP_C)
ON_FILE(get_type_extent_c, (MPI_File fh, MPI_Datatype datatype, MPI_Count *extent), (f->fh, datatype, extent))

EXPORT int PMPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                   MPI_Datarep_conversion_function_c *write_conversion_fn,
                                   MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  return dropin__return(NULL,
                        lmpio_register_datarep_c(datarep, read_conversion_fn, write_conversion_fn,
                                                 dtype_file_extent_fn, extra_state),
                        "MPI_Register_datarep_c");
}
EXPORT int MPI_Register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                  MPI_Datarep_conversion_function_c *write_conversion_fn,
                                  MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
  __attribute__((alias("PMPI_Register_datarep_c")));
#endif

/* Handles between C and Fortran */
EXPORT MPI_Fint PMPI_File_c2f(MPI_File file) { return dropin__file_c2f(file); }
EXPORT MPI_Fint MPI_File_c2f(MPI_File file) __attribute__((alias("PMPI_File_c2f")));
EXPORT MPI_File PMPI_File_f2c(MPI_Fint file) { return dropin__file_f2c(file); }
EXPORT MPI_File MPI_File_f2c(MPI_Fint file) __attribute__((alias("PMPI_File_f2c")));

/* The file error-handler calls on a file (errhandler.c does the rest). */
#define ON_EH(name, params, fn, arg)                                                                  \
  EXPORT int PMPI_File_##name params {                                                             \
    dropin_file *f = dropin__file_get(file);                                                       \
    if (file != MPI_FILE_NULL && !f) return dropin__error(NULL, MPI_ERR_FILE, "MPI_File_" #name, "invalid file handle"); \
    return dropin__eh_##fn(f, arg, "MPI_File_" #name);                                             \
  }                                                                                                \
  EXPORT int MPI_File_##name params __attribute__((alias("PMPI_File_" #name)));
ON_EH(set_errhandler, (MPI_File file, MPI_Errhandler errhandler), set, errhandler)
ON_EH(get_errhandler, (MPI_File file, MPI_Errhandler *errhandler), get, errhandler)
ON_EH(call_errhandler, (MPI_File file, int errorcode), call, errorcode)
