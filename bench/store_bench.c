/* Strided writes of small blocks on one handle, call after call: lmpio
 * against the MPI library's own MPI-IO and plain pwrite of the rank's bytes.
 *
 * Each rank writes `per` bytes through a view of B-byte blocks interleaved
 * over the ranks (disp rank * B, B bytes resized to ranks * B: io_bench's
 * strided workloads), with write_at_all, `reps` times on the same handle,
 * the backends alternating rep by rep.  With `readback`, every rank reads
 * its blocks back after each write (untimed), so the next write finds the
 * file's lines shared by every core (io_bench's pattern).  The time of a
 * call is the slowest rank's, barrier to barrier; MB/s over all ranks' data;
 * the median and the best of the reps after the first three (the first
 * calls map and touch the file).
 *
 * Usage: store_bench [B (8)] [bytes per rank (4 MiB)] [reps (20)] [directory (/dev/shm)] [readback (0)] */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lmpio.h"

enum { LMPIO, MPIIO, POSIX, NB };
static const char *const name[NB] = {"lmpio", "mpiio", "pwrite"};

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long B = argc > 1 ? atol(argv[1]) : 8, per = argc > 2 ? atol(argv[2]) : 4L << 20;
  int reps = argc > 3 ? atoi(argv[3]) : 20, readback = argc > 5 && atoi(argv[5]);
  const char *dir = argc > 4 ? argv[4] : "/dev/shm";
  if (B < 1 || B > 1 << 20 || per < B || per % B || per > 1L << 30 || reps < 4) {
    if (rank == 0) fprintf(stderr, "usage: store_bench [B <= 1 MiB] [bytes per rank: a multiple of B, <= 1 GiB] [reps >= 4] [dir] [readback]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/lmpio_store_bench.%d", dir, (int)getpid() * (rank == 0));
  MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Datatype block, ft;
  MPI_Type_contiguous((int)B, MPI_BYTE, &block);
  MPI_Type_create_resized(block, 0, (MPI_Aint)B * size, &ft);
  MPI_Type_commit(&ft);
  char *buf = malloc((size_t)per), *back = malloc((size_t)per);
  double *t[NB];
  for (int b = 0; b < NB; b++) t[b] = malloc(sizeof(double) * (size_t)reps);
  if (!buf || !back) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(buf, 'a' + rank, (size_t)per);
  int amode = MPI_MODE_CREATE | MPI_MODE_RDWR, rc = 0;
  lmpio_file lf;
  MPI_File mf;
  rc |= lmpio_file_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &lf);
  rc |= lmpio_file_set_size(lf, (MPI_Offset)per * size); /* (no call pays for extending the file) */
  rc |= lmpio_file_set_view(lf, (MPI_Offset)rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  rc |= MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &mf);
  rc |= MPI_File_set_view(mf, (MPI_Offset)rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  int fd = open(path, O_RDWR);
  if (rc != MPI_SUCCESS || fd < 0) {
    fprintf(stderr, "[rank %d] open/set_view failed: %s\n", rank, lmpio_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  long bad = 0;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < NB; k++) {
      int b = r % 2 ? NB - 1 - k : k;
      MPI_Status st;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (b == LMPIO) rc = lmpio_file_write_at_all(lf, 0, buf, (int)per, MPI_BYTE, &st);
      else if (b == MPIIO) rc = MPI_File_write_at_all(mf, 0, buf, (int)per, MPI_BYTE, &st);
      else rc = pwrite(fd, buf, (size_t)per, (off_t)rank * per) == per ? 0 : 1;
      double dt = MPI_Wtime() - t0;
      MPI_Allreduce(&dt, &t[b][r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (rc != 0) {
        fprintf(stderr, "[rank %d] %s write failed\n", rank, name[b]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (readback && b == LMPIO) { /* (and a check of what came back) */
        memset(back, 0, (size_t)per);
        if (lmpio_file_read_at(lf, 0, back, (int)per, MPI_BYTE, &st) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
        bad += memcmp(back, buf, (size_t)per) != 0;
      }
    }
  if (rank == 0) {
    printf("%ld-byte blocks, %d ranks, %ld bytes a rank, %s, %d reps%s: MB/s of all ranks (median, best)\n", B, size,
           per, dir, reps, readback ? ", read back after each" : "");
    double med[NB];
    for (int b = 0; b < NB; b++) {
      qsort(t[b] + 3, (size_t)(reps - 3), sizeof(double), by_value);
      med[b] = (double)per * size / t[b][3 + (reps - 3) / 2] / 1e6;
      printf("  %-7s %10.0f %10.0f\n", name[b], med[b], (double)per * size / t[b][3] / 1e6);
    }
    printf("  lmpio / mpiio %.2f, lmpio / pwrite %.2f (medians)\n", med[LMPIO] / med[MPIIO], med[LMPIO] / med[POSIX]);
  }
  if (bad) fprintf(stderr, "[rank %d] read back differs after %ld writes\n", rank, bad);
  close(fd);
  lmpio_file_close(&lf);
  MPI_File_close(&mf);
  MPI_Type_free(&ft);
  MPI_Type_free(&block);
  if (rank == 0) unlink(path);
  free(buf);
  free(back);
  for (int b = 0; b < NB; b++) free(t[b]);
  MPI_Finalize();
  return bad ? 1 : 0;
}
