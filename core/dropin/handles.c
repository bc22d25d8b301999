/*
 * MPI_File handles of the drop-in library.  An MPI_File handed out is the
 * address of a dropin_file (the MPI library's MPI_File is a pointer type in
 * Open MPI and in MPICH), which wraps the lmpio handle, its Fortran integer
 * and its error handler.  MPI_FILE_NULL is the MPI library's own constant
 * (Open MPI: the address of ompi_mpi_file_null; MPICH: 0) and never the
 * address of a dropin_file.
 *
 * Every call checks its handle, so the check takes no lock: the
 * dropin_files live in arenas that are never freed (arena k holds
 * DROPIN_FIRST << k of them, made when the ones before are full), and a closed
 * file's slot is reused by a later open.  A handle is ours when it points
 * at the start of a slot of an arena and that slot is open (the check,
 * dropin__file_get, is inline in dropin.h); anything else (a garbage
 * pointer, a closed file's handle) is not read beyond the arenas' bounds.  The Fortran integer of a slot is its place in the
 * arenas, counted from 1 (0 is MPI_FILE_NULL, as in Fortran).  Opening and
 * closing take a lock among themselves.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dropin.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* over taking and freeing slots, and new arenas */
dropin_arenas dropin__handles;

/* The arena that holds the slot with Fortran integer i (> 0), and its
 * place there; -1 when there is none. */
static int arena_of_fint(MPI_Fint i, int n, size_t *j) {
  size_t at = (size_t)i - 1, base = 0;
  for (int k = 0; k < n; k++) {
    size_t slots = (size_t)DROPIN_FIRST << k;
    if (at < base + slots) {
      *j = at - base;
      return k;
    }
    base += slots;
  }
  return -1;
}

/* A new arena, its slots numbered after the previous ones'; 0 when out of
 * memory.  Called with the lock held. */
static int grow(void) {
  int k = dropin__handles.made;
  if (k == DROPIN_ARENAS) return 0;
  size_t slots = (size_t)DROPIN_FIRST << k;
  dropin_file *a = aligned_alloc(_Alignof(dropin_file), slots * sizeof *a);
  if (!a) return 0;
  memset(a, 0, slots * sizeof *a);
  MPI_Fint base = (MPI_Fint)(DROPIN_FIRST * ((1u << k) - 1));
  for (size_t j = 0; j < slots; j++) a[j].fint = base + (MPI_Fint)j + 1;
  dropin__handles.arena[k] = a;
  __atomic_store_n(&dropin__handles.made, k + 1, __ATOMIC_RELEASE);
  return 1;
}

/* The free slot with the lowest Fortran integer, taken; NULL when out of
 * memory.  Called with the lock held. */
static dropin_file *take_slot(void) {
  for (int k = 0;; k++) {
    if (k == dropin__handles.made && !grow()) return NULL;
    dropin_file *a = dropin__handles.arena[k];
    for (size_t j = 0; j < ((size_t)DROPIN_FIRST << k); j++)
      if (__atomic_load_n(&a[j].state, __ATOMIC_RELAXED) == DROPIN_SLOT_FREE) {
        __atomic_store_n(&a[j].state, DROPIN_SLOT_TAKEN, __ATOMIC_RELAXED);
        return &a[j];
      }
  }
}

dropin_file *dropin__file_of(const struct lmpio_file_s *fh) {
  if (fh == LMPIO_FILE_NULL) return NULL;
  dropin_file *f = NULL;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < dropin__handles.made && !f; k++) {
    dropin_file *a = dropin__handles.arena[k];
    for (size_t j = 0; j < ((size_t)DROPIN_FIRST << k) && !f; j++)
      if (__atomic_load_n(&a[j].state, __ATOMIC_ACQUIRE) == DROPIN_SLOT_OPEN && a[j].fh == fh) f = &a[j];
  }
  pthread_mutex_unlock(&lock);
  return f;
}

dropin_file *dropin__file_new(void) {
  pthread_mutex_lock(&lock);
  dropin_file *f = take_slot();
  pthread_mutex_unlock(&lock);
  if (!f) return NULL;
  f->fh = LMPIO_FILE_NULL;
  f->eh.handle = MPI_ERRHANDLER_NULL;
  f->eh.fn = NULL;
  if (dropin__eh_assign(&f->eh, dropin__eh_of(NULL)->handle) != MPI_SUCCESS) {
    dropin__file_free(f);
    return NULL;
  }
  return f;
}

void dropin__file_publish(dropin_file *f) { __atomic_store_n(&f->state, DROPIN_SLOT_OPEN, __ATOMIC_RELEASE); }

void dropin__file_free(dropin_file *f) {
  if (!f) return;
  /* (not ours from here on: a call that finds the slot free fails) */
  __atomic_store_n(&f->state, DROPIN_SLOT_TAKEN, __ATOMIC_RELEASE);
  dropin__eh_release(&f->eh);
  pthread_mutex_lock(&lock);
  f->fh = LMPIO_FILE_NULL; /* (under the lock: dropin__file_of reads it there) */
  __atomic_store_n(&f->state, DROPIN_SLOT_FREE, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&lock);
}

MPI_Fint dropin__file_c2f(MPI_File file) {
  if (file == MPI_FILE_NULL) return 0;
  dropin_file *f = dropin__file_get(file);
  return f ? f->fint : -1;
}

MPI_File dropin__file_f2c(MPI_Fint i) {
  if (i <= 0) return MPI_FILE_NULL;
  size_t j = 0;
  int k = arena_of_fint(i, __atomic_load_n(&dropin__handles.made, __ATOMIC_ACQUIRE), &j);
  dropin_file *f = k < 0 ? NULL : &dropin__handles.arena[k][j];
  return dropin__file_handle(f && __atomic_load_n(&f->state, __ATOMIC_ACQUIRE) == DROPIN_SLOT_OPEN ? f : NULL);
}
