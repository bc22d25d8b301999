/* Per-file statistics (stats.c): what the calls on a handle did and which
 * path their bytes took.  Counting costs a relaxed atomic add per counter
 * (background jobs count from their worker threads) and a clock read per
 * call and per system call; nothing is communicated unless LMPIO_STATS asks
 * for a summary at close. */
#ifndef LMPIO_STATS_H
#define LMPIO_STATS_H

#include <mpi.h>

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

typedef struct lmpio__stats {
  long long v[LMPIO__S_N];
} lmpio__stats;

/* A monotonic clock in nanoseconds (no system call: the vDSO). */
long long lmpio__stats_now(void);
/* lmpio__stats_now when the system calls are timed (LMPIO_STATS set), else 0. */
long long lmpio__stats_io_now(void);
/* Adds n to counter i of st (NULL: nothing). */
static inline void lmpio__stats_add(lmpio__stats *st, int i, long long n) {
  if (st) __atomic_fetch_add(&st->v[i], n, __ATOMIC_RELAXED);
}
/* Data bytes of direction dir (LMPIO__READ/WRITE) that took path. */
static inline void lmpio__stats_path(lmpio__stats *st, int path, int dir, long long n) {
  lmpio__stats_add(st, LMPIO__S_PATH + path * 2 + dir, n);
}
/* One call of kind and dir that started at t0 (lmpio__stats_now). */
void lmpio__stats_call(lmpio__stats *st, int kind, int dir, long long t0);
/* The public entries count themselves through this: expr is the call. */
#define LMPIO__COUNTED(fh, kind, dir, expr)                                                  \
  do {                                                                                       \
    long long lmpio_t0_ = lmpio__stats_now();                                                \
    lmpio__stats *lmpio_st_ = (fh) ? (fh)->stats : NULL;                                      \
    int lmpio_rc_ = (expr);                                                                  \
    lmpio__stats_call(lmpio_st_, (kind), (dir), lmpio_t0_);                                  \
    return lmpio_rc_;                                                                        \
  } while (0)

/* Whether the environment asks for a summary at close (LMPIO_STATS set and
 * not "0"). */
int lmpio__stats_wanted(void);
/* Close, on every rank when some rank wanted a summary: sums st over comm
 * to rank 0, which prints it to standard error (collective). */
void lmpio__stats_summary(const lmpio__stats *st, MPI_Comm comm, const char *path);

#endif
