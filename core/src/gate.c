/* Direct writes without byte-range locks: the sieve gate.
 *
 * A sieved write reads its window, fills in its pieces and writes the whole
 * window back, holes included: a rank that writes into one of those holes
 * at the same time loses its bytes.  So a sieve holds an exclusive lock on
 * its window, and a direct write of a handle whose views have holes held a
 * shared one: two fcntl calls a write, and the kernel's lock list of the
 * inode is one spinlock for every rank (a collective write of one int a
 * rank at 2 ranks: about 0.8 us of the call's 1.5, against OMPIO's 0.8 in
 * all; OMPIO locks nothing).
 *
 * A writable handle of more than one rank on a local file system, whose
 * ranks share one kernel, has a gate instead: in memory every rank of the
 * handle maps (beside the shared pointer in its helper, pointer.c), a count of sieves
 * under way and, per rank, of direct writes under way.  A direct write
 * counts itself in, then looks at the sieves: none, and it goes without a
 * lock; otherwise it counts itself out and takes the lock as before.  A
 * sieve counts itself among the sieves, then waits for every rank's direct
 * writes to drain.  Both orders are sequentially consistent, so of a write
 * and a sieve that start together at least one sees the other (Dekker's
 * argument); a direct write that sees the sieve and falls back to its lock
 * is excluded by the sieve's lock, as before.
 *
 * Sieves of other handles of the file (another communicator, another
 * program) do not see this memory.  So every rank of a gated handle holds,
 * while the handle is open, an exclusive open-file-description lock on a
 * byte of its own far past any data (GATE_BASE + the handle's 40-bit id
 * << 20 + rank), and a sieve on a local file system first takes a shared
 * lock, without waiting, over those bytes (but its own handle's block): a
 * gated handle of someone else is open when it cannot, and the sieve then
 * writes its pieces one by one (only its own bytes; slower, never wrong).
 * A handle opening takes its byte once the sieves under way are done.
 * Sieves do not exclude each other there (shared locks).  (Not at one rank:
 * a program whose ranks each open the file on MPI_COMM_SELF would make
 * every sieve of the others piece by piece.)
 *
 * A rank that died inside a direct write leaves its count up: a sieve that
 * waits more than a second for the counts to drain writes its pieces one by
 * one instead of waiting longer. */
#include "ground.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LINE 64
#define GATE_BASE ((MPI_Offset)1 << 62)
#define ID_BITS 40
#define RANK_BITS 20
#define GATE_SPAN ((MPI_Offset)1 << (ID_BITS + RANK_BITS))
#define DRAIN_NS 1000000000LL

typedef struct {
  _Alignas(LINE) _Atomic long n;
} counter;

struct lmpio__gate {
  counter *sieves;  /* sieves of the handle under way */
  counter *direct;  /* [size]: direct writes under way without their lock, per rank */
  int rank, size, fd;
  MPI_Offset block; /* the handle's bytes: [block, block + 2^RANK_BITS) */
};

size_t lmpio__gate_bytes(int size) { return (size_t)LINE * (1 + (size_t)size); }

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Whether a failed lock says the kernel or file system has no OFD locks
 * there (then no gate can be open either); any other failure (the bytes
 * are held, or an error) is taken as a gate open. */
static int no_ofd_locks(void) { return errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP; }

lmpio__gate *lmpio__gate_open(void *mem, int rank, int size, int fd, unsigned long long id) {
  if (!mem || size < 2 || size >= (1 << RANK_BITS) || rank < 0 || rank >= size) return NULL;
  lmpio__gate *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->sieves = mem;
  g->direct = g->sieves + 1;
  g->rank = rank;
  g->size = size;
  g->fd = fd;
  g->block = GATE_BASE + (MPI_Offset)(id & ((1ULL << ID_BITS) - 1)) * ((MPI_Offset)1 << RANK_BITS);
  /* After the other handles' sieves under way; a second at most (a
   * descriptor that never lets go of its range: no gate, the locks as
   * before; so too without OFD locks). */
  for (long long t0 = now_ns(); lmpio__os_try_lock(fd, F_WRLCK, g->block + rank, 1) < 0;) {
    if (no_ofd_locks() || now_ns() - t0 > DRAIN_NS) {
      free(g);
      return NULL;
    }
    struct timespec nap = {0, 20000};
    nanosleep(&nap, NULL);
  }
  return g;
}

void lmpio__gate_close(lmpio__gate *g) {
  if (!g) return;
  lmpio__os_try_lock(g->fd, F_UNLCK, g->block + g->rank, 1);
  free(g);
}

int lmpio__gate_direct_begin(lmpio__gate *g) {
  if (!g) return 0;
  atomic_fetch_add(&g->direct[g->rank].n, 1);
  if (atomic_load(&g->sieves->n) == 0) return 1;
  atomic_fetch_sub(&g->direct[g->rank].n, 1);
  return 0;
}

void lmpio__gate_direct_end(lmpio__gate *g) { atomic_fetch_sub_explicit(&g->direct[g->rank].n, 1, memory_order_release); }

/* Shared locks over the gate bytes of every other handle (type F_RDLCK), or
 * their release (F_UNLCK): 0, or -1 when another handle's byte may be held. */
static int others(int fd, const lmpio__gate *g, short type) {
  MPI_Offset lo = g ? g->block : GATE_BASE, hi = g ? g->block + ((MPI_Offset)1 << RANK_BITS) : GATE_BASE;
  if (lo > GATE_BASE && lmpio__os_try_lock(fd, type, GATE_BASE, lo - GATE_BASE) < 0 && type != F_UNLCK && !no_ofd_locks())
    return -1;
  if (hi < GATE_BASE + GATE_SPAN && lmpio__os_try_lock(fd, type, hi, GATE_BASE + GATE_SPAN - hi) < 0 && type != F_UNLCK &&
      !no_ofd_locks()) {
    if (lo > GATE_BASE) lmpio__os_try_lock(fd, F_UNLCK, GATE_BASE, lo - GATE_BASE);
    return -1;
  }
  return 0;
}

int lmpio__gate_sieve_begin(lmpio__gate *g, int fd) {
  if (g) {
    atomic_fetch_add(&g->sieves->n, 1);
    unsigned round = 0;
    long long t0 = 0;
    for (;;) {
      long busy = 0;
      for (int r = 0; r < g->size; r++) busy += atomic_load(&g->direct[r].n);
      if (busy == 0) break;
      if (lmpio__os_wait_round(&round, 256, LMPIO__OS_YIELDS)) {
        long long t = now_ns();
        if (!t0) t0 = t;
        else if (t - t0 > DRAIN_NS) { /* a rank stuck (or dead) inside a write: piece by piece */
          atomic_fetch_sub(&g->sieves->n, 1);
          return 0;
        }
        sched_yield();
      }
    }
  }
  if (others(fd, g, F_RDLCK) == 0) return 1;
  if (g) atomic_fetch_sub(&g->sieves->n, 1);
  return 0;
}

void lmpio__gate_sieve_end(lmpio__gate *g, int fd) {
  others(fd, g, F_UNLCK);
  if (g) atomic_fetch_sub(&g->sieves->n, 1);
}
