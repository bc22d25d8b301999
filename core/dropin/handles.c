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
 * FIRST << k of them, made when the ones before are full), and a closed
 * file's slot is reused by a later open.  A handle is ours when it points
 * at the start of a slot of an arena and that slot is open; anything else
 * (a garbage pointer, a closed file's handle) is not read beyond the
 * arenas' bounds.  The Fortran integer of a slot is its place in the
 * arenas, counted from 1 (0 is MPI_FILE_NULL, as in Fortran).  Opening and
 * closing take a lock among themselves.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dropin.h"

#define FIRST 16  /* slots of arena 0 */
#define ARENAS 24 /* at most FIRST * (2^24 - 1) files open at once */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* over taking and freeing slots, and new arenas */
static dropin_file *arena[ARENAS]; /* arena[k]: FIRST << k slots, set before arenas counts it */
static int arenas;                 /* arenas made (an atomic load and store: read without the lock) */

enum { SLOT_FREE, SLOT_TAKEN, SLOT_OPEN };

/* The arena that holds the slot with Fortran integer i (> 0), and its
 * place there; -1 when there is none. */
static int arena_of_fint(MPI_Fint i, int n, size_t *j) {
  size_t at = (size_t)i - 1, base = 0;
  for (int k = 0; k < n; k++) {
    size_t slots = (size_t)FIRST << k;
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
  int k = arenas;
  if (k == ARENAS) return 0;
  size_t slots = (size_t)FIRST << k;
  dropin_file *a = aligned_alloc(_Alignof(dropin_file), slots * sizeof *a);
  if (!a) return 0;
  memset(a, 0, slots * sizeof *a);
  MPI_Fint base = (MPI_Fint)(FIRST * ((1u << k) - 1));
  for (size_t j = 0; j < slots; j++) a[j].fint = base + (MPI_Fint)j + 1;
  arena[k] = a;
  __atomic_store_n(&arenas, k + 1, __ATOMIC_RELEASE);
  return 1;
}

/* The free slot with the lowest Fortran integer, taken; NULL when out of
 * memory.  Called with the lock held. */
static dropin_file *take_slot(void) {
  for (int k = 0;; k++) {
    if (k == arenas && !grow()) return NULL;
    size_t slots = (size_t)FIRST << k;
    for (size_t j = 0; j < slots; j++)
      if (__atomic_load_n(&arena[k][j].state, __ATOMIC_RELAXED) == SLOT_FREE) {
        __atomic_store_n(&arena[k][j].state, SLOT_TAKEN, __ATOMIC_RELAXED);
        return &arena[k][j];
      }
  }
}

dropin_file *dropin__file_get(MPI_File file) {
  uintptr_t a = (uintptr_t)(void *)file;
  int n = __atomic_load_n(&arenas, __ATOMIC_ACQUIRE);
  for (int k = 0; k < n; k++) {
    uintptr_t at = a - (uintptr_t)arena[k];
    if (at < (sizeof(dropin_file) * FIRST << k)) {
      if (at % sizeof(dropin_file)) return NULL;
      dropin_file *f = &arena[k][at / sizeof(dropin_file)];
      return __atomic_load_n(&f->state, __ATOMIC_ACQUIRE) == SLOT_OPEN ? f : NULL;
    }
  }
  return NULL; /* (MPI_FILE_NULL too) */
}

dropin_file *dropin__file_of(const struct lmpio_file_s *fh) {
  if (fh == LMPIO_FILE_NULL) return NULL;
  dropin_file *f = NULL;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < arenas && !f; k++)
    for (size_t j = 0; j < ((size_t)FIRST << k) && !f; j++)
      if (__atomic_load_n(&arena[k][j].state, __ATOMIC_ACQUIRE) == SLOT_OPEN && arena[k][j].fh == fh) f = &arena[k][j];
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

void dropin__file_publish(dropin_file *f) { __atomic_store_n(&f->state, SLOT_OPEN, __ATOMIC_RELEASE); }

void dropin__file_free(dropin_file *f) {
  if (!f) return;
  /* (not ours from here on: a call that finds the slot free fails) */
  __atomic_store_n(&f->state, SLOT_TAKEN, __ATOMIC_RELEASE);
  dropin__eh_release(&f->eh);
  pthread_mutex_lock(&lock);
  f->fh = LMPIO_FILE_NULL; /* (under the lock: dropin__file_of reads it there) */
  __atomic_store_n(&f->state, SLOT_FREE, __ATOMIC_RELAXED);
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
  int k = arena_of_fint(i, __atomic_load_n(&arenas, __ATOMIC_ACQUIRE), &j);
  dropin_file *f = k < 0 ? NULL : &arena[k][j];
  return dropin__file_handle(f && __atomic_load_n(&f->state, __ATOMIC_ACQUIRE) == SLOT_OPEN ? f : NULL);
}
