/*
 * File error handlers of the drop-in library, as the standard defines them:
 * every file has one, MPI_FILE_NULL's (MPI_ERRORS_RETURN at first) is
 * inherited by the files opened after it is set, and errors of calls
 * without a file (open, delete, MPI_Register_datarep) go to MPI_FILE_NULL's.
 *
 * Handlers are the MPI library's own MPI_Errhandler objects, so a program
 * frees, compares and converts them (MPI_Errhandler_c2f) with the MPI
 * library.  MPI_File_create_errhandler makes one with the library's own
 * call and records its function here, so the drop-in calls it with the
 * drop-in's file handle.  A handler made another way (by the library's C++
 * or mpi_f08 bindings) is one the drop-in cannot call directly: the library
 * calls it, through its own MPI_FILE_NULL (the handler then sees
 * MPI_FILE_NULL as the file).  Open MPI counts references to handlers: the
 * drop-in takes one for every file that holds a handler and for every
 * handler MPI_File_get_errhandler returns, through the library's own
 * MPI_FILE_NULL (set, then get, takes one), and drops it with
 * MPI_Errhandler_free (MPICH: the same through a private communicator).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dropin.h"

/* The MPI library's own file error-handler calls, behind ours. */
static struct {
  int looked;
  int (*create)(MPI_File_errhandler_function *, MPI_Errhandler *);
  int (*set)(MPI_File, MPI_Errhandler);
  int (*get)(MPI_File, MPI_Errhandler *);
  int (*call)(MPI_File, int);
} real;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Handlers made by MPI_File_create_errhandler (and its Fortran binding):
 * newest first, so a handle the library reused names its newest handler. */
typedef struct created {
  dropin_eh eh;
  struct created *next;
} created;
static created *made;

static dropin_eh null_eh = {MPI_ERRHANDLER_NULL, DROPIN_EH_RETURN, NULL};

static void look_up_real(void) {
  if (real.looked) return;
  real.looked = 1;
  *(void **)&real.create = dlsym(RTLD_NEXT, "PMPI_File_create_errhandler");
  *(void **)&real.set = dlsym(RTLD_NEXT, "PMPI_File_set_errhandler");
  *(void **)&real.get = dlsym(RTLD_NEXT, "PMPI_File_get_errhandler");
  *(void **)&real.call = dlsym(RTLD_NEXT, "PMPI_File_call_errhandler");
}

#ifdef OPEN_MPI
/* A reference to eh for the caller (*held is eh); MPI_ERR_ARG when the
 * library says eh is not a file error handler.  Open MPI's own
 * MPI_FILE_NULL is the scratch slot: set, then get, takes one.  Lock held. */
static int hold(MPI_Errhandler eh, MPI_Errhandler *held) {
  look_up_real();
  *held = eh;
  if (!real.set || !real.get) return MPI_SUCCESS;
  int rc = real.set(MPI_FILE_NULL, eh);
  if (rc != MPI_SUCCESS) return MPI_ERR_ARG;
  rc = real.get(MPI_FILE_NULL, held);
  real.set(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  return rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_ARG;
}
#else
static int is_ours(MPI_Errhandler eh);
/* MPICH: its MPI-IO (ROMIO) takes no reference to handlers; its
 * communicators do, and do not look at the kind of handler.  The scratch
 * slot is a private communicator; a handler neither predefined nor made by
 * MPI_File_create_errhandler is not a file's (MPI_ERR_ARG).  Lock held. */
static int hold(MPI_Errhandler eh, MPI_Errhandler *held) {
  static MPI_Comm slot = MPI_COMM_NULL;
  *held = eh;
  int predefined = eh == MPI_ERRORS_RETURN || eh == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
  predefined = predefined || eh == MPI_ERRORS_ABORT;
#endif
  if (!predefined && !is_ours(eh))
    return MPI_ERR_ARG;
  if (slot == MPI_COMM_NULL && MPI_Comm_dup(MPI_COMM_SELF, &slot) != MPI_SUCCESS) return MPI_ERR_INTERN;
  if (MPI_Comm_set_errhandler(slot, eh) != MPI_SUCCESS || MPI_Comm_get_errhandler(slot, held) != MPI_SUCCESS)
    return MPI_ERR_ARG;
  MPI_Comm_set_errhandler(slot, MPI_ERRORS_RETURN);
  return MPI_SUCCESS;
}
#endif

static void drop(MPI_Errhandler eh) {
  if (eh != MPI_ERRHANDLER_NULL) MPI_Errhandler_free(&eh);
}

/* How the drop-in calls eh.  Lock held. */
static dropin_eh classify(MPI_Errhandler handle) {
  dropin_eh eh = {handle, DROPIN_EH_FOREIGN, NULL};
  if (handle == MPI_ERRORS_RETURN) eh.kind = DROPIN_EH_RETURN;
  else if (handle == MPI_ERRORS_ARE_FATAL) eh.kind = DROPIN_EH_FATAL;
#ifdef MPI_ERRORS_ABORT
  else if (handle == MPI_ERRORS_ABORT) eh.kind = DROPIN_EH_FATAL;
#endif
  else
    for (created *c = made; c; c = c->next)
      if (c->eh.handle == handle) return c->eh;
  return eh;
}

#ifndef OPEN_MPI
static int is_ours(MPI_Errhandler eh) {
  for (created *c = made; c; c = c->next)
    if (c->eh.handle == eh) return 1;
  return 0;
}
#endif

/* Lock held. */
static dropin_eh *null_handler(void) {
  if (null_eh.handle == MPI_ERRHANDLER_NULL && hold(MPI_ERRORS_RETURN, &null_eh.handle) != MPI_SUCCESS)
    null_eh.handle = MPI_ERRORS_RETURN;
  return &null_eh;
}

dropin_eh *dropin__eh_of(dropin_file *f) {
  if (f) return &f->eh;
  pthread_mutex_lock(&lock);
  dropin_eh *eh = null_handler();
  pthread_mutex_unlock(&lock);
  return eh;
}

int dropin__eh_assign(dropin_eh *dst, MPI_Errhandler handle) {
  if (handle == MPI_ERRHANDLER_NULL) return MPI_ERR_ARG;
  pthread_mutex_lock(&lock);
  if (dst == &null_eh) null_handler();
  MPI_Errhandler held;
  int rc = hold(handle, &held);
  if (rc == MPI_SUCCESS) {
    drop(dst->handle);
    *dst = classify(held);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

void dropin__eh_release(dropin_eh *eh) {
  pthread_mutex_lock(&lock);
  drop(eh->handle);
  eh->handle = MPI_ERRHANDLER_NULL;
  pthread_mutex_unlock(&lock);
}

/* The handler eh acts on error code rc of call on file f (NULL:
 * MPI_FILE_NULL); message is the detailed text, for MPI_ERRORS_ARE_FATAL. */
static void invoke(dropin_eh eh, dropin_file *f, int rc, const char *call, const char *message) {
  switch (eh.kind) {
  case DROPIN_EH_RETURN:
    break;
  case DROPIN_EH_FATAL: {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0, rank = -1;
    if (!message || !*message) {
      MPI_Error_string(rc, text, &len);
      message = text;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "lmpio-mpi: rank %d: %s failed, MPI_ERRORS_ARE_FATAL: %s\n", rank, call, message);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, rc);
    break;
  }
  case DROPIN_EH_C: {
    MPI_File handle = dropin__file_handle(f);
    int code = rc;
    ((MPI_File_errhandler_function *)eh.fn)(&handle, &code);
    break;
  }
  case DROPIN_EH_FORTRAN: {
    MPI_Fint handle = f ? f->fint : 0, code = rc;
    ((void (*)(MPI_Fint *, MPI_Fint *))eh.fn)(&handle, &code);
    break;
  }
  case DROPIN_EH_FOREIGN:
    pthread_mutex_lock(&lock);
    look_up_real();
    if (real.set && real.call && real.set(MPI_FILE_NULL, eh.handle) == MPI_SUCCESS) {
      pthread_mutex_unlock(&lock); /* the handler may call the drop-in */
      real.call(MPI_FILE_NULL, rc);
      pthread_mutex_lock(&lock);
      real.set(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    }
    pthread_mutex_unlock(&lock);
    break;
  }
}

int dropin__fail(dropin_file *f, int rc, const char *call) {
  invoke(*dropin__eh_of(f), f, rc, call, lmpio_last_error_message());
  return rc;
}

int dropin__error(dropin_file *f, int cls, const char *call, const char *message) {
  invoke(*dropin__eh_of(f), f, cls, call, message);
  return cls;
}

/* The file error-handler calls of the I/O chapter. */
#define EXPORT __attribute__((visibility("default")))

EXPORT int PMPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler) {
  const char *call = "MPI_File_create_errhandler";
  if (!function || !errhandler) return dropin__error(NULL, MPI_ERR_ARG, call, "NULL function or errhandler");
  created *c = malloc(sizeof *c);
  if (!c) return dropin__error(NULL, MPI_ERR_NO_MEM, call, "out of memory");
  look_up_real();
  int rc = real.create ? real.create(function, errhandler) : MPI_ERR_INTERN;
  if (rc != MPI_SUCCESS) {
    free(c);
    return dropin__error(NULL, rc, call, "the MPI library could not create the error handler");
  }
  c->eh.handle = *errhandler;
  c->eh.kind = DROPIN_EH_C;
  c->eh.fn = (void (*)(void))function;
  pthread_mutex_lock(&lock);
  c->next = made;
  made = c;
  pthread_mutex_unlock(&lock);
  return MPI_SUCCESS;
}

/* MPI_File_set_errhandler, _get_errhandler and _call_errhandler once
 * wrappers.c found the file (f NULL: MPI_FILE_NULL). */
int dropin__eh_set(dropin_file *f, MPI_Errhandler errhandler, const char *call) {
  int rc = dropin__eh_assign(dropin__eh_of(f), errhandler);
  return rc == MPI_SUCCESS ? rc : dropin__error(f, rc, call, "not a file error handler");
}

int dropin__eh_get(dropin_file *f, MPI_Errhandler *errhandler, const char *call) {
  if (!errhandler) return dropin__error(f, MPI_ERR_ARG, call, "errhandler is NULL");
  dropin_eh *eh = dropin__eh_of(f);
  pthread_mutex_lock(&lock);
  int rc = hold(eh->handle, errhandler);
  pthread_mutex_unlock(&lock);
  return rc == MPI_SUCCESS ? rc : dropin__error(f, rc, call, "cannot take a reference to the handler");
}

int dropin__eh_call(dropin_file *f, int errorcode, const char *call) {
  char text[MPI_MAX_ERROR_STRING + 64];
  char name[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(errorcode, name, &len);
  snprintf(text, sizeof text, "error code %d (%s)", errorcode, name);
  invoke(*dropin__eh_of(f), f, errorcode, call, text);
  return MPI_SUCCESS;
}

EXPORT int MPI_File_create_errhandler(MPI_File_errhandler_function *function, MPI_Errhandler *errhandler)
  __attribute__((alias("PMPI_File_create_errhandler")));

/* The Fortran binding of MPI_File_create_errhandler (mpif.h and the mpi
 * module): the library's own would make a handler the drop-in cannot call
 * with the file's Fortran integer.  The handler is made by the C call with
 * a placeholder function, and the Fortran function is recorded. */
static void fortran_placeholder(MPI_File *file, int *code, ...) {
  (void)file;
  (void)code;
}

static void fortran_create_errhandler(void (*function)(MPI_Fint *, MPI_Fint *), MPI_Fint *errhandler,
                                      MPI_Fint *ierr) {
  MPI_Errhandler eh;
  int rc = PMPI_File_create_errhandler(fortran_placeholder, &eh);
  if (rc == MPI_SUCCESS) {
    pthread_mutex_lock(&lock);
    for (created *c = made; c; c = c->next)
      if (c->eh.handle == eh) { /* the newest with this handle: the one just made */
        c->eh.kind = DROPIN_EH_FORTRAN;
        c->eh.fn = (void (*)(void))function;
        break;
      }
    pthread_mutex_unlock(&lock);
    *errhandler = MPI_Errhandler_c2f(eh);
  }
  if (ierr) *ierr = rc;
}
#define FORTRAN_ALIAS(name) \
  EXPORT void name(void (*function)(MPI_Fint *, MPI_Fint *), MPI_Fint *errhandler, MPI_Fint *ierr) \
    __attribute__((alias("fortran_create_errhandler")));
FORTRAN_ALIAS(mpi_file_create_errhandler)
FORTRAN_ALIAS(mpi_file_create_errhandler_)
FORTRAN_ALIAS(mpi_file_create_errhandler__)
FORTRAN_ALIAS(MPI_FILE_CREATE_ERRHANDLER)
FORTRAN_ALIAS(pmpi_file_create_errhandler)
FORTRAN_ALIAS(pmpi_file_create_errhandler_)
FORTRAN_ALIAS(pmpi_file_create_errhandler__)
FORTRAN_ALIAS(PMPI_FILE_CREATE_ERRHANDLER)
#ifdef OPEN_MPI
/* What Open MPI's mpi_f08 module calls. */
FORTRAN_ALIAS(ompi_file_create_errhandler_f)
#endif
