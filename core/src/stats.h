/* Per-file statistics (stats.c): what the calls on a handle did and which
 * path their bytes took.  Counting costs a load and a store per counter
 * (each thread has its own counters: background jobs count from their
 * worker threads); with LMPIO_STATS set, also a clock read per call and
 * per system call, and a summary at close (the only communication). */
#ifndef LMPIO_STATS_H
#define LMPIO_STATS_H

#include <mpi.h>
#include <pthread.h>

/* The counters, in the order of lmpio_stats_name (the public names are in
 * stats.c).  Times are nanoseconds here, seconds outside. */
enum {
  LMPIO__S_POSIX_READS, LMPIO__S_POSIX_WRITES, LMPIO__S_POSIX_BYTES_READ, LMPIO__S_POSIX_BYTES_WRITTEN,
  LMPIO__S_POSIX_READ_TIME, LMPIO__S_POSIX_WRITE_TIME,
  /* calls: kind * 2 + dir (LMPIO__READ 0, LMPIO__WRITE 1) */
  LMPIO__S_CALLS,
  LMPIO__S_CALL_TIME = LMPIO__S_CALLS + 2 * 6, /* + dir */
  /* data bytes by path: path * 2 + dir */
  LMPIO__S_PATH = LMPIO__S_CALL_TIME + 2,
  LMPIO__S_SIEVE_READ_SPAN = LMPIO__S_PATH + 2 * 5, /* file bytes a sieved read read */
  LMPIO__S_SIEVE_FILL,       /* file bytes a sieved write read first (its holes) */
  LMPIO__S_SIEVE_WRITE_SPAN, /* file bytes a sieved write wrote */
  LMPIO__S_LOCKS, LMPIO__S_LOCK_TIME,
  LMPIO__S_N
};
/* Kinds of calls (a shared call also counts as independent, an ordered one
 * as collective, as Darshan counts them). */
enum { LMPIO__K_INDEP, LMPIO__K_COLL, LMPIO__K_SPLIT, LMPIO__K_NB, LMPIO__K_SHARED, LMPIO__K_ORDERED };
/* Paths of data bytes: pieces moved in place, through a sieve window, by
 * two-phase (this rank's data), through a stream, and the windows an
 * aggregator of two-phase moved for everyone (not this rank's data). */
enum { LMPIO__P_DIRECT, LMPIO__P_SIEVED, LMPIO__P_TWOPHASE, LMPIO__P_STREAM, LMPIO__P_AGGREGATOR };

/* A monotonic clock in nanoseconds (no system call: the vDSO). */
long long lmpio__stats_now(void);

/* A handle's counters.  Each thread that counts on a handle has its own
 * block of them, which only it writes (a relaxed load and store: a locked
 * add per counter cost about 8 ns, five of them per small call); readers
 * sum the blocks. */
typedef struct lmpio__stats {
  unsigned long long serial; /* never reused: tells a handle from an earlier one at the same address */
  int timed;                 /* the calls' times are taken (LMPIO_STATS set at open) */
  pthread_mutex_t mu;        /* over the list of blocks (stats.c) */
  struct lmpio__stats_block *blocks;
} lmpio__stats;

/* New counters for a handle (NULL when out of memory: nothing is counted),
 * and their end (when no thread counts on them any more). */
lmpio__stats *lmpio__stats_new(void);
void lmpio__stats_free(lmpio__stats *st);
/* The sum of every thread's counters into v[LMPIO__S_N] (zeros for NULL). */
void lmpio__stats_sum(lmpio__stats *st, long long *v);
/* The values lmpio_file_get_stats returns (at most max; *n: how many there are). */
void lmpio__stats_values(lmpio__stats *st, double *values, int max, int *n);
/* The counters this thread used last (stats.c), and how it finds or makes
 * its block of st's (NULL: out of memory, not counted). */
typedef struct {
  unsigned long long serial;
  long long *v;
} lmpio__stats_last;
extern _Thread_local lmpio__stats_last lmpio__stats_tl __attribute__((visibility("hidden")));
long long *lmpio__stats_attach(lmpio__stats *st);
static inline long long *lmpio__stats_mine(lmpio__stats *st) {
  return lmpio__stats_tl.serial == st->serial ? lmpio__stats_tl.v : lmpio__stats_attach(st);
}
/* This thread's counters of st (NULL: st is NULL, or out of memory), for
 * several adds in a row (finding them reads thread-local storage, a call
 * of __tls_get_addr in a shared library). */
static inline long long *lmpio__stats_counters(lmpio__stats *st) { return st ? lmpio__stats_mine(st) : NULL; }
/* Adds n to counter i of v (NULL: nothing). */
static inline void lmpio__stats_bump(long long *v, int i, long long n) {
  if (v) __atomic_store_n(&v[i], __atomic_load_n(&v[i], __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
/* Adds n to counter i of st (NULL: nothing). */
static inline void lmpio__stats_add(lmpio__stats *st, int i, long long n) {
  lmpio__stats_bump(lmpio__stats_counters(st), i, n);
}
/* Data bytes of direction dir (LMPIO__READ/WRITE) that took path. */
static inline void lmpio__stats_bump_path(long long *v, int path, int dir, long long n) {
  lmpio__stats_bump(v, LMPIO__S_PATH + path * 2 + dir, n);
}
static inline void lmpio__stats_path(lmpio__stats *st, int path, int dir, long long n) {
  lmpio__stats_bump_path(lmpio__stats_counters(st), path, dir, n);
}
/* One call of kind and dir that started at t0 (lmpio__stats_now, when st
 * is timed). */
static inline void lmpio__stats_call(lmpio__stats *st, int kind, int dir, long long t0) {
  if (!st) return;
  lmpio__stats_add(st, LMPIO__S_CALLS + kind * 2 + dir, 1);
  if (st->timed) lmpio__stats_add(st, LMPIO__S_CALL_TIME + dir, lmpio__stats_now() - t0);
}
/* The public entries count themselves: t0 = lmpio__stats_start(st) before
 * the call, lmpio__stats_call after it.  The clock is read only for a
 * handle whose calls are timed: two reads cost about 50 ns here, a third of
 * lmpio's own time in a 4 KiB read_at. */
static inline long long lmpio__stats_start(const lmpio__stats *st) {
  return st && st->timed ? lmpio__stats_now() : 0;
}

/* Whether the environment asks for a summary at close (LMPIO_STATS set and
 * not "0"). */
int lmpio__stats_wanted(void);
/* Close, on every rank when some rank wanted a summary: sums st over comm
 * to rank 0, which prints it to standard error (collective). */
void lmpio__stats_summary(lmpio__stats *st, MPI_Comm comm, const char *path);

#endif
