/* Per-file statistics: the counters of stats.h under public names (Darshan's
 * where one fits: POSIX_* for the system calls, MPIIO_* for the calls of the
 * I/O chapter; LMPIO_* for the paths that only lmpio has), the public
 * lmpio_file_get_stats, and the summary LMPIO_STATS prints at close. */
#include "ground.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

long long lmpio__stats_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- counters: a block per thread --------------------------------------- */

typedef struct lmpio__stats_block {
  long long v[LMPIO__S_N];
  const void *owner; /* the thread: the address of its `me` */
  struct lmpio__stats_block *next;
} block;

static unsigned long long serials;
static _Thread_local char me;
_Thread_local lmpio__stats_last lmpio__stats_tl; /* (serial 0: no handle's) */

lmpio__stats *lmpio__stats_new(void) {
  lmpio__stats *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  pthread_mutex_init(&st->mu, NULL);
  st->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
  st->timed = lmpio__stats_wanted();
  return st;
}

void lmpio__stats_free(lmpio__stats *st) {
  if (!st) return;
  for (block *b = st->blocks, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  pthread_mutex_destroy(&st->mu);
  free(st);
}

long long *lmpio__stats_attach(lmpio__stats *st) {
  pthread_mutex_lock(&st->mu);
  block *b = st->blocks;
  while (b && b->owner != &me) b = b->next;
  if (!b && (b = calloc(1, sizeof *b)) != NULL) {
    b->owner = &me; /* (a thread that ended left its block to the next one at its address) */
    b->next = st->blocks;
    st->blocks = b;
  }
  pthread_mutex_unlock(&st->mu);
  if (!b) return NULL; /* out of memory: not counted */
  lmpio__stats_tl.serial = st->serial;
  lmpio__stats_tl.v = b->v;
  return b->v;
}

void lmpio__stats_sum(lmpio__stats *st, long long *v) {
  memset(v, 0, sizeof(long long) * LMPIO__S_N);
  if (!st) return;
  pthread_mutex_lock(&st->mu);
  for (const block *b = st->blocks; b; b = b->next)
    for (int i = 0; i < LMPIO__S_N; i++) v[i] += __atomic_load_n(&b->v[i], __ATOMIC_RELAXED);
  pthread_mutex_unlock(&st->mu);
}

int lmpio__stats_wanted(void) {
  const char *e = getenv("LMPIO_STATS");
  return e && *e && strcmp(e, "0") != 0;
}

/* ---- public names ------------------------------------------------------- */

/* How a public value comes from the counters. */
enum { RAW, SECONDS, SUM2, RATIO };
typedef struct {
  const char *name;
  int how;
  int a, b, c; /* RAW/SECONDS: a; SUM2: a + b; RATIO: a / b, or (a + c) / b when c >= 0 */
} stat_def;

#define CALLS(k, d) (LMPIO__S_CALLS + (k) * 2 + (d))
#define PATH(p, d) (LMPIO__S_PATH + (p) * 2 + (d))
/* MPIIO_BYTES_*: the data of this rank's calls, whichever path it took. */
enum { BYTES_READ = -2, BYTES_WRITTEN = -3 };
static const stat_def defs[] = {
    {"POSIX_READS", RAW, LMPIO__S_POSIX_READS, 0, 0},
    {"POSIX_WRITES", RAW, LMPIO__S_POSIX_WRITES, 0, 0},
    {"POSIX_BYTES_READ", RAW, LMPIO__S_POSIX_BYTES_READ, 0, 0},
    {"POSIX_BYTES_WRITTEN", RAW, LMPIO__S_POSIX_BYTES_WRITTEN, 0, 0},
    {"POSIX_F_READ_TIME", SECONDS, LMPIO__S_POSIX_READ_TIME, 0, 0},
    {"POSIX_F_WRITE_TIME", SECONDS, LMPIO__S_POSIX_WRITE_TIME, 0, 0},
    {"MPIIO_INDEP_READS", SUM2, CALLS(LMPIO__K_INDEP, 0), CALLS(LMPIO__K_SHARED, 0), 0},
    {"MPIIO_INDEP_WRITES", SUM2, CALLS(LMPIO__K_INDEP, 1), CALLS(LMPIO__K_SHARED, 1), 0},
    {"MPIIO_COLL_READS", SUM2, CALLS(LMPIO__K_COLL, 0), CALLS(LMPIO__K_ORDERED, 0), 0},
    {"MPIIO_COLL_WRITES", SUM2, CALLS(LMPIO__K_COLL, 1), CALLS(LMPIO__K_ORDERED, 1), 0},
    {"MPIIO_SPLIT_READS", RAW, CALLS(LMPIO__K_SPLIT, 0), 0, 0},
    {"MPIIO_SPLIT_WRITES", RAW, CALLS(LMPIO__K_SPLIT, 1), 0, 0},
    {"MPIIO_NB_READS", RAW, CALLS(LMPIO__K_NB, 0), 0, 0},
    {"MPIIO_NB_WRITES", RAW, CALLS(LMPIO__K_NB, 1), 0, 0},
    {"MPIIO_BYTES_READ", RAW, BYTES_READ, 0, 0},
    {"MPIIO_BYTES_WRITTEN", RAW, BYTES_WRITTEN, 0, 0},
    {"MPIIO_F_READ_TIME", SECONDS, LMPIO__S_CALL_TIME + 0, 0, 0},
    {"MPIIO_F_WRITE_TIME", SECONDS, LMPIO__S_CALL_TIME + 1, 0, 0},
    {"LMPIO_SHARED_READS", RAW, CALLS(LMPIO__K_SHARED, 0), 0, 0},
    {"LMPIO_SHARED_WRITES", RAW, CALLS(LMPIO__K_SHARED, 1), 0, 0},
    {"LMPIO_ORDERED_READS", RAW, CALLS(LMPIO__K_ORDERED, 0), 0, 0},
    {"LMPIO_ORDERED_WRITES", RAW, CALLS(LMPIO__K_ORDERED, 1), 0, 0},
    {"LMPIO_DIRECT_BYTES_READ", RAW, PATH(LMPIO__P_DIRECT, 0), 0, 0},
    {"LMPIO_DIRECT_BYTES_WRITTEN", RAW, PATH(LMPIO__P_DIRECT, 1), 0, 0},
    {"LMPIO_SIEVED_BYTES_READ", RAW, PATH(LMPIO__P_SIEVED, 0), 0, 0},
    {"LMPIO_SIEVED_BYTES_WRITTEN", RAW, PATH(LMPIO__P_SIEVED, 1), 0, 0},
    {"LMPIO_SIEVE_READ_SPAN", RAW, LMPIO__S_SIEVE_READ_SPAN, 0, 0},
    {"LMPIO_SIEVE_WRITE_FILL", RAW, LMPIO__S_SIEVE_FILL, 0, 0},
    {"LMPIO_SIEVE_WRITE_SPAN", RAW, LMPIO__S_SIEVE_WRITE_SPAN, 0, 0},
    {"LMPIO_SIEVE_READ_AMPLIFICATION", RATIO, LMPIO__S_SIEVE_READ_SPAN, PATH(LMPIO__P_SIEVED, 0), -1},
    {"LMPIO_SIEVE_WRITE_AMPLIFICATION", RATIO, LMPIO__S_SIEVE_WRITE_SPAN, PATH(LMPIO__P_SIEVED, 1),
     LMPIO__S_SIEVE_FILL},
    {"LMPIO_TWOPHASE_BYTES_READ", RAW, PATH(LMPIO__P_TWOPHASE, 0), 0, 0},
    {"LMPIO_TWOPHASE_BYTES_WRITTEN", RAW, PATH(LMPIO__P_TWOPHASE, 1), 0, 0},
    {"LMPIO_AGGREGATOR_BYTES_READ", RAW, PATH(LMPIO__P_AGGREGATOR, 0), 0, 0},
    {"LMPIO_AGGREGATOR_BYTES_WRITTEN", RAW, PATH(LMPIO__P_AGGREGATOR, 1), 0, 0},
    {"LMPIO_STREAM_BYTES_READ", RAW, PATH(LMPIO__P_STREAM, 0), 0, 0},
    {"LMPIO_STREAM_BYTES_WRITTEN", RAW, PATH(LMPIO__P_STREAM, 1), 0, 0},
    {"LMPIO_LOCKS", RAW, LMPIO__S_LOCKS, 0, 0},
    {"LMPIO_F_LOCK_TIME", SECONDS, LMPIO__S_LOCK_TIME, 0, 0},
};
#define NDEFS (int)(sizeof defs / sizeof defs[0])

static double raw(const long long *v, int i) {
  if (i == BYTES_READ || i == BYTES_WRITTEN) {
    int d = i == BYTES_READ ? 0 : 1;
    return (double)(v[PATH(LMPIO__P_DIRECT, d)] + v[PATH(LMPIO__P_SIEVED, d)] + v[PATH(LMPIO__P_TWOPHASE, d)] +
                    v[PATH(LMPIO__P_STREAM, d)]);
  }
  return (double)v[i];
}

static double value(const long long *v, const stat_def *d) {
  switch (d->how) {
  case SECONDS: return raw(v, d->a) * 1e-9;
  case SUM2: return raw(v, d->a) + raw(v, d->b);
  case RATIO: {
    double den = raw(v, d->b);
    return den > 0 ? (raw(v, d->a) + (d->c >= 0 ? raw(v, d->c) : 0)) / den : 0;
  }
  default: return raw(v, d->a);
  }
}

const char *lmpio_stats_name(int i) { return i >= 0 && i < NDEFS ? defs[i].name : NULL; }


void lmpio__stats_summary(lmpio__stats *st, MPI_Comm comm, const char *path) {
  long long mine[LMPIO__S_N], sum[LMPIO__S_N];
  lmpio__stats_sum(st, mine);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (MPI_Reduce(mine, sum, LMPIO__S_N, MPI_LONG_LONG, MPI_SUM, 0, comm) != MPI_SUCCESS || rank != 0) return;
  /* One write, so that other ranks' output does not cut through it. */
  char buf[4096];
  size_t used = 0;
  int w = snprintf(buf, sizeof buf, "lmpio: statistics of \"%s\", summed over %d rank%s:\n", path, size,
                   size == 1 ? "" : "s");
  used = w > 0 && (size_t)w < sizeof buf ? (size_t)w : 0;
  for (int i = 0; i < NDEFS && used < sizeof buf; i++) {
    double x = value(sum, &defs[i]);
    if (defs[i].how == SECONDS || defs[i].how == RATIO) w = snprintf(buf + used, sizeof buf - used, "lmpio:   %-32s %.6f\n", defs[i].name, x);
    else w = snprintf(buf + used, sizeof buf - used, "lmpio:   %-32s %.0f\n", defs[i].name, x);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (used > sizeof buf - 1) used = sizeof buf - 1;
  fwrite(buf, 1, used, stderr);
  fflush(stderr);
}

void lmpio__stats_values(lmpio__stats *st, double *values, int max, int *n) {
  long long v[LMPIO__S_N];
  lmpio__stats_sum(st, v);
  for (int i = 0; i < NDEFS && i < max; i++) values[i] = value(v, &defs[i]);
  if (n) *n = NDEFS;
}
