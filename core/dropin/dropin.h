/*
 * The drop-in library (liblmpio-mpi.so): MPI_File_* and PMPI_File_* over
 * lmpio's public API, so that an unmodified MPI program runs its MPI-IO on
 * lmpio when the library is preloaded.  Internal header of core/dropin/:
 *   handles.c     MPI_File handles: lmpio handles wrapped, MPI_FILE_NULL,
 *                 the Fortran integers of c2f/f2c
 *   errhandler.c  file error handlers: create/set/get/call, and the one
 *                 place that turns an error class into the handler's action
 *   wrappers.c    every call of the I/O chapter, one line each
 *   requests.c    MPI_Wait, MPI_Test and the rest of their family: the
 *                 failure of a file's nonblocking operation goes to the
 *                 file's error handler, other requests pass through
 * Only MPI_File_*, PMPI_File_*, MPI_Register_datarep(_c), the completion
 * calls of requests.c and their PMPI_ twins leave the library
 * (exports.map); everything else is hidden.
 */
#ifndef LMPIO_DROPIN_H
#define LMPIO_DROPIN_H

#include <mpi.h>
#include <stdint.h>
#include "lmpio.h"

/* What a file's error handler is: the MPI handle the program sees, and how
 * the drop-in calls it (kind). */
enum dropin_eh_kind {
  DROPIN_EH_RETURN,  /* MPI_ERRORS_RETURN */
  DROPIN_EH_FATAL,   /* MPI_ERRORS_ARE_FATAL (and MPI_ERRORS_ABORT) */
  DROPIN_EH_C,       /* made by MPI_File_create_errhandler: fn called */
  DROPIN_EH_FORTRAN, /* made by mpi_file_create_errhandler: fn called */
  DROPIN_EH_FOREIGN  /* made by the MPI library some other way: it calls it */
};
typedef struct dropin_eh {
  MPI_Errhandler handle;
  enum dropin_eh_kind kind;
  void (*fn)(void); /* DROPIN_EH_C / DROPIN_EH_FORTRAN */
} dropin_eh;

/* (a cache line each: handles.c keeps them in arrays, and threads using
 * different files do not share lines) */
typedef struct dropin_file {
  _Alignas(64) int state; /* handles.c: free, taken (being opened or closed), open */
  lmpio_file fh;
  MPI_Fint fint; /* its Fortran integer (MPI_File_c2f) */
  dropin_eh eh;  /* holds a reference to eh.handle */
} dropin_file;

/* handles.c */
/* Its arenas of handles, read by dropin__file_get: arena[k] holds
 * DROPIN_FIRST << k slots, made when the ones before are full and never
 * freed; made counts them (an atomic load and store: read without
 * handles.c's lock, after the arena it counts is set). */
#define DROPIN_FIRST 16
#define DROPIN_ARENAS 24 /* at most DROPIN_FIRST * (2^24 - 1) files open at once */
enum { DROPIN_SLOT_FREE, DROPIN_SLOT_TAKEN, DROPIN_SLOT_OPEN };
typedef struct {
  dropin_file *arena[DROPIN_ARENAS];
  int made;
} dropin_arenas;
extern dropin_arenas dropin__handles;
/* The drop-in file behind an MPI_File, or NULL for MPI_FILE_NULL and for
 * anything that is not a handle the drop-in handed out: ours when it
 * points at the start of a slot of an arena (nothing outside the arenas
 * is read) and the slot is open.  Inline: every call checks its handle. */
static inline dropin_file *dropin__file_get(MPI_File file) {
  uintptr_t a = (uintptr_t)(void *)file;
  int n = __atomic_load_n(&dropin__handles.made, __ATOMIC_ACQUIRE);
  for (int k = 0; k < n; k++) {
    uintptr_t at = a - (uintptr_t)dropin__handles.arena[k];
    if (at < (sizeof(dropin_file) * DROPIN_FIRST << k)) {
      if (at % sizeof(dropin_file)) return NULL;
      dropin_file *f = &dropin__handles.arena[k][at / sizeof(dropin_file)];
      return __atomic_load_n(&f->state, __ATOMIC_ACQUIRE) == DROPIN_SLOT_OPEN ? f : NULL;
    }
  }
  return NULL; /* (MPI_FILE_NULL too) */
}
/* The drop-in file of an open lmpio handle, or NULL. */
dropin_file *dropin__file_of(const struct lmpio_file_s *fh);
/* A new handle, for a file being opened into its fh (errhandler copied
 * from MPI_FILE_NULL's); NULL when out of memory.  It is no open file's
 * (dropin__file_get does not find it) until dropin__file_publish. */
dropin_file *dropin__file_new(void);
void dropin__file_publish(dropin_file *f);
void dropin__file_free(dropin_file *f);
/* The MPI_File of f (NULL: MPI_FILE_NULL): its address. */
static inline MPI_File dropin__file_handle(dropin_file *f) { return f ? (MPI_File)f : MPI_FILE_NULL; }
MPI_Fint dropin__file_c2f(MPI_File file);
MPI_File dropin__file_f2c(MPI_Fint i);

/* errhandler.c */
/* MPI_FILE_NULL's error handler (the default of files opened later);
 * f == NULL stands for MPI_FILE_NULL. */
dropin_eh *dropin__eh_of(dropin_file *f);
/* Sets *dst to eh, taking a reference to eh's handle and dropping dst's. */
int dropin__eh_assign(dropin_eh *dst, MPI_Errhandler eh);
void dropin__eh_release(dropin_eh *eh);
/* The end of every call: rc as it came from lmpio; when it is an error,
 * the error handler of f (NULL: MPI_FILE_NULL) acts on it first. */
int dropin__fail(dropin_file *f, int rc, const char *call);
static inline int dropin__return(dropin_file *f, int rc, const char *call) {
  return rc == MPI_SUCCESS ? rc : dropin__fail(f, rc, call); /* (inline: no call on success) */
}
/* An error the drop-in found itself (a bad handle, an argument): recorded
 * as the detailed message of the call, then as dropin__return. */
int dropin__error(dropin_file *f, int cls, const char *call, const char *message);
/* MPI_File_set_errhandler, _get_errhandler, _call_errhandler on f (found
 * by wrappers.c; NULL: MPI_FILE_NULL). */
int dropin__eh_set(dropin_file *f, MPI_Errhandler errhandler, const char *call);
int dropin__eh_get(dropin_file *f, MPI_Errhandler *errhandler, const char *call);
int dropin__eh_call(dropin_file *f, int errorcode, const char *call);

#endif
