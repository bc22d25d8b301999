/* The communicator of a file handle: a duplicate of the caller's, kept on
 * the caller's communicator (an attribute) when the handle closes, for the
 * next open on it.  MPI_Comm_dup costs Open MPI a context id, an agreement
 * of its own (about 17 us at 2 ranks against 0.4 us for an MPI_Allreduce,
 * measured), and the duplicate's shared segment of the agreement
 * (exchange.c) is made again after 128 calls on each new one: a program
 * that opens a file per step on one communicator pays both once.
 *
 * At most one duplicate is kept per communicator, used by one handle at a
 * time (a second handle open at once gets a duplicate of its own, freed at
 * its close).  Whether to take the kept one is agreed by the caller (every
 * rank must have it idle).  It goes when the caller's communicator is
 * freed; at MPI_Finalize, MPI frees it (MPI_COMM_SELF's attributes go
 * first, then no MPI call is made here). */
#include "ground.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
  MPI_Comm dup;
  int busy;    /* a handle has it */
  int orphan;  /* the caller's communicator was freed while busy: the handle frees it */
  /* The shared pointer's helper of its last handle, mapped (pointer.c): the
   * next handle on one node takes it instead of making one. */
  void *page;
  size_t page_len;
  int page_fd;
} kept;

static int keyval = MPI_KEYVAL_INVALID, self_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int finalizing;

static void free_dup(MPI_Comm *dup) {
  lmpio__exchange_detach(*dup);
  MPI_Comm_free(dup);
}

static void free_kept(kept *k) {
  if (k->page) lmpio__os_munmap(k->page, k->page_len);
  if (k->page_fd >= 0) lmpio__os_close(k->page_fd);
  free(k);
}

/* The caller's communicator is freed (or MPI finalizes). */
static int drop(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)extra;
  kept *k = value;
  if (k->busy) {
    k->orphan = 1;
  } else {
    if (!finalizing) free_dup(&k->dup);
    free_kept(k);
  }
  return MPI_SUCCESS;
}

static int self_gone(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  finalizing = 1;
  return MPI_SUCCESS;
}

static void make_keys(void) {
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop, &keyval, NULL) != MPI_SUCCESS) keyval = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_gone, &self_keyval, NULL) != MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL) != MPI_SUCCESS)
    keyval = MPI_KEYVAL_INVALID; /* (not knowing when MPI finalizes, keep nothing) */
}

static kept *kept_of(MPI_Comm comm) {
  pthread_once(&once, make_keys);
  if (keyval == MPI_KEYVAL_INVALID) return NULL;
  void *v = NULL;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS || !flag) return NULL;
  return v;
}

int lmpio__handle_comm_idle(MPI_Comm comm) {
  const kept *k = kept_of(comm);
  return k && !k->busy;
}

int lmpio__handle_comm_take(MPI_Comm comm, int reuse, MPI_Comm *dup, void **slot) {
  *slot = NULL;
  kept *k = kept_of(comm);
  if (reuse && k && !k->busy) {
    k->busy = 1;
    *dup = k->dup;
    *slot = k;
    return MPI_SUCCESS;
  }
  if (MPI_Comm_dup(comm, dup) != MPI_SUCCESS) return MPI_ERR_COMM;
  if (k || keyval == MPI_KEYVAL_INVALID) return MPI_SUCCESS; /* (one kept already, busy: this one is not) */
  k = calloc(1, sizeof *k);
  if (!k) return MPI_SUCCESS;
  k->dup = *dup;
  k->busy = 1;
  k->page_fd = -1;
  if (MPI_Comm_set_attr(comm, keyval, k) != MPI_SUCCESS) {
    free_kept(k);
    return MPI_SUCCESS;
  }
  *slot = k;
  return MPI_SUCCESS;
}

void lmpio__handle_comm_release(MPI_Comm *dup, void *slot) {
  kept *k = slot;
  if (!k) {
    free_dup(dup);
  } else if (k->orphan) {
    free_dup(dup);
    free_kept(k);
  } else {
    k->busy = 0;
  }
  *dup = MPI_COMM_NULL;
}

int lmpio__handle_comm_page(void *slot, int take, void **page, int *fd) {
  kept *k = slot;
  if (!k || !k->page) return 0;
  if (take) {
    *page = k->page;
    *fd = k->page_fd;
    k->page = NULL;
    k->page_fd = -1;
  }
  return 1;
}

int lmpio__handle_comm_keep_page(void *slot, void *page, size_t len, int fd) {
  kept *k = slot;
  if (!k || k->page || k->orphan) return 0;
  k->page = page;
  k->page_len = len;
  k->page_fd = fd;
  return 1;
}
