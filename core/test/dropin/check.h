/*
 * Checks of the drop-in tests: programs written against plain MPI (mpi.h
 * only, nothing of lmpio), run under LD_PRELOAD=liblmpio-mpi.so.  A check
 * holds when it holds on every rank; rank 0 prints "ok NAME" or
 * "not ok NAME" (the lines core/test/check.sh counts).
 */
#ifndef DROPIN_CHECK_H
#define DROPIN_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures;

static inline void check(const char *name, int cond) {
  int all = 0, rank = 0;
  cond = cond != 0;
  MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!cond) fprintf(stderr, "rank %d: %s failed\n", rank, name);
  if (rank == 0) printf("%sok %s\n", all ? "" : "not ", name);
  fflush(stdout);
  if (!all) check_failures++;
}

/* Whether lmpio serves the file: its info has the key lmpio_version. */
static inline int served_by_lmpio(MPI_File fh) {
  MPI_Info info;
  int flag = 0;
  char value[MPI_MAX_INFO_VAL + 1];
  if (MPI_File_get_info(fh, &info) != MPI_SUCCESS) return 0;
  MPI_Info_get(info, "lmpio_version", MPI_MAX_INFO_VAL, value, &flag);
  MPI_Info_free(&info);
  return flag;
}

/* A file name in TMPDIR, the same on every rank. */
static inline void test_path(char *path, size_t size, const char *name) {
  const char *dir = getenv("TMPDIR");
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, size, "%s/lmpio-dropin-%s-%d.dat", dir && *dir ? dir : "/tmp", name, pid);
}
#endif
