/* The price of locking every sieved write (issue 9, item 1): one rank
 * writes 8-byte blocks with 8-byte holes through a strided view (data
 * sieving: read, modify, write back), which now holds an exclusive
 * byte-range lock per window even on a one-rank communicator.  Prints the
 * MB/s; run it against two builds (see bench/README.md). */
#include <lmpio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *path = argc > 1 ? argv[1] : "/tmp/lmpio-lock-bench.dat";
  long mb = argc > 2 ? atol(argv[2]) : 32;
  size_t n = (size_t)mb << 20;
  char *buf = malloc(n);
  memset(buf, 7, n);
  MPI_Datatype b, t;
  MPI_Type_contiguous(8, MPI_BYTE, &b);
  MPI_Type_create_resized(b, 0, 16, &t);
  MPI_Type_commit(&t);
  lmpio_file fh;
  if (lmpio_file_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) return 1;
  lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL);
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = MPI_Wtime();
    if (lmpio_file_write_at(fh, 0, buf, (int)n, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 1;
    double dt = MPI_Wtime() - t0;
    if (dt < best) best = dt;
  }
  printf("lock_bench: %ld MiB of 8-byte blocks with 8-byte holes, sieved, 1 rank: %.0f MB/s\n", mb, n / best / 1e6);
  lmpio_file_close(&fh);
  unlink(path);
  MPI_Type_free(&b);
  MPI_Type_free(&t);
  free(buf);
  MPI_Finalize();
  return 0;
}
