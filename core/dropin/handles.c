/*
 * MPI_File handles of the drop-in library.  An MPI_File handed out is the
 * address of a dropin_file (the MPI library's MPI_File is a pointer type in
 * Open MPI and in MPICH), which wraps the lmpio handle, its Fortran integer
 * and its error handler.  MPI_FILE_NULL is the MPI library's own constant
 * (Open MPI: the address of ompi_mpi_file_null; MPICH: 0) and never the
 * address of a dropin_file.  The Fortran integers index one table; 0 is
 * MPI_FILE_NULL, as in Fortran.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "dropin.h"

#define DROPIN_MAGIC 0x6c6d7066u /* "lmpf" */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dropin_file **table; /* table[i]: the file whose Fortran integer is i */
static MPI_Fint table_size;  /* entries in use or free; table[0] stays NULL */
static MPI_Fint table_cap;

/* A free Fortran integer (the lowest), growing the table when full; -1 when
 * out of memory.  Called with the lock held. */
static MPI_Fint take_slot(void) {
  for (MPI_Fint i = 1; i < table_size; i++)
    if (!table[i]) return i;
  if (table_size == 0) table_size = 1; /* 0 is MPI_FILE_NULL */
  if (table_size >= table_cap) {
    MPI_Fint cap = table_cap ? 2 * table_cap : 16;
    dropin_file **t = realloc(table, (size_t)cap * sizeof *t);
    if (!t) return -1;
    for (MPI_Fint i = table_cap; i < cap; i++) t[i] = NULL;
    table = t;
    table_cap = cap;
  }
  return table_size++;
}

dropin_file *dropin__file_get(MPI_File file) {
  if (file == MPI_FILE_NULL) return NULL;
  dropin_file *f = (dropin_file *)file;
  pthread_mutex_lock(&lock);
  /* Only a handle of ours is in the table at its own integer. */
  int ours = 0;
  for (MPI_Fint i = 1; i < table_size && !ours; i++) ours = table[i] == f;
  pthread_mutex_unlock(&lock);
  return ours && f->magic == DROPIN_MAGIC ? f : NULL;
}

dropin_file *dropin__file_of(const struct lmpio_file_s *fh) {
  if (fh == LMPIO_FILE_NULL) return NULL;
  dropin_file *f = NULL;
  pthread_mutex_lock(&lock);
  for (MPI_Fint i = 1; i < table_size && !f; i++)
    if (table[i] && table[i]->fh == fh) f = table[i];
  pthread_mutex_unlock(&lock);
  return f;
}

dropin_file *dropin__file_new(lmpio_file fh) {
  dropin_file *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->magic = DROPIN_MAGIC;
  f->fh = fh;
  f->eh.handle = MPI_ERRHANDLER_NULL;
  pthread_mutex_lock(&lock);
  f->fint = take_slot();
  if (f->fint > 0) table[f->fint] = f;
  pthread_mutex_unlock(&lock);
  if (f->fint < 0 || dropin__eh_assign(&f->eh, dropin__eh_of(NULL)->handle) != MPI_SUCCESS) {
    dropin__file_free(f);
    return NULL;
  }
  return f;
}

void dropin__file_free(dropin_file *f) {
  if (!f) return;
  pthread_mutex_lock(&lock);
  if (f->fint > 0 && f->fint < table_size && table[f->fint] == f) table[f->fint] = NULL;
  pthread_mutex_unlock(&lock);
  dropin__eh_release(&f->eh);
  f->magic = 0;
  free(f);
}

MPI_Fint dropin__file_c2f(MPI_File file) {
  if (file == MPI_FILE_NULL) return 0;
  dropin_file *f = dropin__file_get(file);
  return f ? f->fint : -1;
}

MPI_File dropin__file_f2c(MPI_Fint i) {
  dropin_file *f = NULL;
  pthread_mutex_lock(&lock);
  if (i > 0 && i < table_size) f = table[i];
  pthread_mutex_unlock(&lock);
  return dropin__file_handle(f);
}
