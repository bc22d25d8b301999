/* Many small collective calls on files shared by part of the job: the ranks
 * split into groups of G, each group opens its own file, and every rank
 * writes one int with write_all and reads it back with read_all, call after
 * call (the pattern of mpi-test-suite's io_with_hole2, and of programs that
 * write a scalar per step).  A plain MPI program: run it as it is for the
 * MPI library's own MPI-IO (--mca io ompio / romio321) and with
 * LD_PRELOAD=liblmpio-mpi.so for lmpio, the same binary.  With more ranks
 * than cores this shows whether a waiting rank gives its core away.
 *
 * Usage: small_calls_bench [calls (2000)] [ranks per file (2)] [directory (/dev/shm)]
 * LMPIO_BENCH_HINTS="key=value,..." passes hints to the open.
 * Prints: "RESULT small_calls ranks=P group=G us_per_call=X" (rank 0; the
 * slowest group's time over 2 calls per step). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_hints.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long calls = argc > 1 ? atol(argv[1]) : 2000;
  int group = argc > 2 ? atoi(argv[2]) : 2;
  const char *dir = argc > 3 ? argv[3] : "/dev/shm";
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (calls < 1 || group < 1) {
    if (rank == 0) fprintf(stderr, "usage: small_calls_bench [calls] [ranks per file] [directory]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, rank / group, rank, &comm);
  int grank, gsize;
  MPI_Comm_rank(comm, &grank);
  MPI_Comm_size(comm, &gsize);
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  char path[512];
  snprintf(path, sizeof path, "%s/small-calls-%d-%d.dat", dir, pid, rank / group);
  MPI_Info info = bench_hints("LMPIO_BENCH_HINTS", NULL);
  MPI_File fh;
  if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh) !=
      MPI_SUCCESS)
    MPI_Abort(MPI_COMM_WORLD, 1);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  /* each rank its own int of every gsize */
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)sizeof(int) * gsize, &ft);
  MPI_Type_commit(&ft);
  MPI_File_set_view(fh, (MPI_Offset)sizeof(int) * grank, MPI_INT, ft, "native", MPI_INFO_NULL);
  int bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long i = 0; i < calls; i++) {
    int v = (int)(i * size + rank), w = -1;
    MPI_File_write_all(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, -1, MPI_SEEK_CUR);
    MPI_File_read_all(fh, &w, 1, MPI_INT, MPI_STATUS_IGNORE);
    bad += w != v;
  }
  double t = MPI_Wtime() - t0, tmax = 0;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_File_close(&fh);
  MPI_Type_free(&ft);
  MPI_Comm_free(&comm);
  if (rank == 0)
    printf("RESULT small_calls ranks=%d group=%d calls=%ld us_per_call=%.2f%s\n", size, group, calls,
           tmax * 1e6 / (2.0 * (double)calls), allbad ? " WRONG DATA" : "");
  MPI_Finalize();
  return allbad != 0;
}
