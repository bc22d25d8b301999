/* Quickstart: every rank owns every size-th block of 4 ints of one file,
 * through a view; all ranks write their blocks collectively, read them back,
 * verify, and rank 0 prints who owns which bytes of the start of the file.
 *
 *   mpirun -n 4 build/examples/quickstart [path]        */
#include <lmpio.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 4    /* ints per block */
#define NBLOCKS 64 /* blocks per rank */

static void die(int rc, const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, lmpio_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, rc);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *path = argc > 1 ? argv[1] : "/tmp/lmpio-quickstart.dat";

  /* Filetype: one block of BLOCK ints, then room for the other ranks' blocks. */
  MPI_Datatype block, filetype;
  MPI_Type_contiguous(BLOCK, MPI_INT, &block);
  MPI_Type_create_resized(block, 0, (MPI_Aint)(size * BLOCK * sizeof(int)), &filetype);
  MPI_Type_commit(&filetype);

  lmpio_file fh;
  if ((rc = lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                            MPI_INFO_NULL, &fh)) != MPI_SUCCESS)
    die(rc, "open");
  if ((rc = lmpio_file_set_size(fh, 0)) != MPI_SUCCESS) die(rc, "set_size"); /* start empty */
  if ((rc = lmpio_file_set_view(fh, (MPI_Offset)rank * BLOCK * sizeof(int), MPI_INT, filetype, "native", MPI_INFO_NULL)) != MPI_SUCCESS)
    die(rc, "set_view");

  int n = BLOCK * NBLOCKS, *out = malloc(sizeof(int) * n), *in = malloc(sizeof(int) * n);
  for (int i = 0; i < n; i++) out[i] = rank * 1000000 + i;
  MPI_Status st;
  if ((rc = lmpio_file_write_at_all(fh, 0, out, n, MPI_INT, &st)) != MPI_SUCCESS) die(rc, "write_at_all");
  if ((rc = lmpio_file_read_at_all(fh, 0, in, n, MPI_INT, &st)) != MPI_SUCCESS) die(rc, "read_at_all");
  int got, bad = 0;
  MPI_Get_count(&st, MPI_INT, &got);
  for (int i = 0; i < n; i++) bad += in[i] != out[i];
  if (got != n) bad++;
  int allbad;
  MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  /* Rank 0 reads the start of the file through the default byte view. */
  if ((rc = lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL)) != MPI_SUCCESS)
    die(rc, "set_view");
  if (rank == 0) {
    int head[64];
    lmpio_file_read_at(fh, 0, head, (int)sizeof head, MPI_BYTE, &st);
    MPI_Offset fsize;
    lmpio_file_get_size(fh, &fsize);
    printf("%d ranks wrote %lld bytes to %s; %s\n", size, (long long)fsize, path,
           allbad ? "VERIFY FAILED" : "every rank read back its own data");
    printf("owner of each 4-byte int in the first %zu bytes:\n  ", sizeof head);
    for (int i = 0; i < 64; i++) printf("%d", head[i] / 1000000);
    printf("\n");
  }
  lmpio_file_close(&fh);
  MPI_Type_free(&block);
  MPI_Type_free(&filetype);
  free(out);
  free(in);
  MPI_Finalize();
  return allbad ? 1 : 0;
}
