/* A small test harness for MPI programs: named cases, checks on every rank,
 * one verdict per case agreed over MPI_COMM_WORLD and printed by rank 0 as
 * "ok <name>" or "not ok <name>" (core/test/check.sh counts these lines). */
#ifndef LMPIO_TESTLIB_H
#define LMPIO_TESTLIB_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lmpio.h"

static int tl_rank, tl_size, tl_case_failed, tl_cases_failed;

/* LMPIO_TEST_SMALL=1 asks for the reduced size of a case that loops over
 * many items (the cluster suite sets it: there every small piece is a round
 * trip to a server); every case still runs, only shorter. */
static inline int tl_small_or(int n, int small) {
  const char *s = getenv("LMPIO_TEST_SMALL");
  return s && strcmp(s, "1") == 0 ? small : n;
}

#define TL_CHECK(cond)                                                           \
  do {                                                                           \
    if (!(cond)) {                                                               \
      tl_case_failed = 1;                                                        \
      fprintf(stderr, "[rank %d] %s:%d: check failed: %s\n", tl_rank, __FILE__,  \
              __LINE__, #cond);                                                  \
    }                                                                            \
  } while (0)

#define TL_EQ(a, b)                                                              \
  do {                                                                           \
    long long tl_a_ = (long long)(a), tl_b_ = (long long)(b);                    \
    if (tl_a_ != tl_b_) {                                                        \
      tl_case_failed = 1;                                                        \
      fprintf(stderr, "[rank %d] %s:%d: %s == %lld, expected %s == %lld\n",      \
              tl_rank, __FILE__, __LINE__, #a, tl_a_, #b, tl_b_);                \
    }                                                                            \
  } while (0)

/* An lmpio call that must return the given class; prints the detailed message. */
#define TL_RC(call, expected)                                                    \
  do {                                                                           \
    int tl_rc_ = (call);                                                         \
    if (tl_rc_ != (expected)) {                                                  \
      tl_case_failed = 1;                                                        \
      fprintf(stderr, "[rank %d] %s:%d: %s returned %s, expected %s (%s)\n",     \
              tl_rank, __FILE__, __LINE__, #call, lmpio_error_class_name(tl_rc_), \
              lmpio_error_class_name(expected), lmpio_last_error_message());     \
    }                                                                            \
  } while (0)
#define TL_OK(call) TL_RC(call, MPI_SUCCESS)

static void tl_init(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &tl_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tl_size);
}

/* Whether name contains one of the |-separated texts of list. */
static int tl_matches(const char *name, const char *list) {
  for (const char *p = list; *p;) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    for (const char *s = name; n && *s; s++)
      if (strncmp(s, p, n) == 0) return 1;
    p += n + (bar != NULL);
  }
  return 0;
}

/* LMPIO_TEST_ONLY=text runs only the cases whose name contains text,
 * LMPIO_TEST_SKIP=text skips them (several texts: a|b). */
static void tl_run(const char *name, void (*fn)(void)) {
  const char *only = getenv("LMPIO_TEST_ONLY"), *skip = getenv("LMPIO_TEST_SKIP");
  if (only && *only && !tl_matches(name, only)) return;
  if (skip && *skip && tl_matches(name, skip)) return;
  tl_case_failed = 0;
  /* LMPIO_TEST_TIMES=1: each case's time as a "# " line (the cluster suite
   * sets it, so that its log says where the time goes) */
  const char *times = getenv("LMPIO_TEST_TIMES");
  double t0 = MPI_Wtime();
  fn();
  int any = 0;
  MPI_Allreduce(&tl_case_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) tl_cases_failed++;
  if (tl_rank == 0) {
    printf("%s %s\n", any ? "not ok" : "ok", name);
    if (times && strcmp(times, "1") == 0) printf("# %.1f s: %s\n", MPI_Wtime() - t0, name);
    fflush(stdout);
  }
}

static int tl_finish(void) {
  MPI_Finalize();
  return tl_cases_failed ? 1 : 0;
}

/* A path that every rank agrees on, in $LMPIO_TEST_DIR (default /tmp);
 * the caller frees it.  Different tags give different files. */
static char *tl_path(const char *tag) {
  static unsigned serial;
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const char *dir = getenv("LMPIO_TEST_DIR");
  if (!dir || !*dir) dir = "/tmp";
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-test-%d-%u-%s", dir, pid, serial++, tag);
  return p;
}

/* Removes a test file from rank 0 after every rank is done with it. */
static void tl_unlink(char *path) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) unlink(path);
  free(path);
}

/* The value of the statistic named name on fh (lmpio_file_get_stats), or
 * -1 when there is none. */
static inline double tl_stat(lmpio_file fh, const char *name) {
  double v[256];
  int n = 0;
  if (lmpio_file_get_stats(fh, v, 256, &n) != MPI_SUCCESS) return -1;
  for (int i = 0; i < n && i < 256; i++)
    if (strcmp(lmpio_stats_name(i), name) == 0) return v[i];
  return -1;
}

#endif
