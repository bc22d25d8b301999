/* The agreement's exchange alone (exchange.c): microseconds per
 * lmpio__exchange on a communicator of the whole job, through its shared
 * segment once attached, for records of a few shapes: the first agreement's
 * record of a call with nothing to add (12 longs, 11 of them zero: an
 * independent read_at_all or write_at_all), lmpio__agree's 3 longs, and
 * full records of 7, 12 and 64 longs; and MPI_Allgather of 12 longs for
 * reference.  Best of `reps` repetitions of `calls` exchanges, the slowest
 * rank's time, between barriers.
 *
 * Usage: exchange_bench [calls (200000)] [reps (5)] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ground.h"

enum { MAXN = 64 };

static double one(MPI_Comm comm, int mpi, const long long *mine, int n, long calls) {
  long long all[64 * MAXN];
  MPI_Barrier(comm);
  double t0 = MPI_Wtime();
  for (long i = 0; i < calls; i++) {
    if (mpi) MPI_Allgather(mine, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, comm);
    else if (lmpio__exchange(comm, mine, n, all) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double t = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long calls = argc > 1 ? atol(argv[1]) : 200000;
  int reps = argc > 2 ? atoi(argv[2]) : 5, rank, size;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
  lmpio__exchange_attach(comm);
  long long mine[MAXN];
  for (int i = 0; i < MAXN; i++) mine[i] = rank * 1000 + i + 1;
  one(comm, 0, mine, 3, 1000); /* past the attach */
  struct { const char *name; int n, used, mpi; } cases[] = {
    {"first agreement, nothing added (12, 1 used)", 12, 1, 0},
    {"agree (3, 2 used)", 3, 2, 0},
    {"write_ordered's first agreement (12, 5 used)", 12, 5, 0},
    {"record of 7", 7, 7, 0},
    {"record of 12", 12, 12, 0},
    {"record of 64", 64, 64, 0},
    {"MPI_Allgather of 12", 12, 12, 1},
  };
  if (rank == 0)
    printf("exchange_bench: %d ranks, %ld exchanges x %d, shared segment: %s\n", size, calls, reps,
           lmpio__exchange_shared(comm) ? "yes" : "no");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    long long rec[MAXN];
    memset(rec, 0, sizeof rec);
    memcpy(rec, mine, sizeof(long long) * (size_t)cases[c].used);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      double t = one(comm, cases[c].mpi, rec, cases[c].n, calls);
      if (t < best) best = t;
    }
    if (rank == 0) printf("%-46s %8.3f us\n", cases[c].name, best / (double)calls * 1e6);
  }
  lmpio__exchange_detach(comm);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
