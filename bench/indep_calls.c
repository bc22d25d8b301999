/*
 * Independent 4 KiB calls of plain MPI (nothing of lmpio), for counting
 * the instructions of one call under callgrind, lmpio's drop-in preloaded
 * or not (bench/README.md, "Instructions per independent 4 KiB call"):
 *
 *   indep_calls read|write N PATH
 *
 * writes 4 MiB to PATH with MPI_File_write (not the call measured), then
 * makes N MPI_File_read_at or MPI_File_write_at calls of 4 KiB, call i at
 * offset 4096 (i mod 1024): up to 1024 calls, each block once.  Exits 1
 * when a call fails.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK = 4096, FILL = 4 << 20 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 4 || (strcmp(argv[1], "read") != 0 && strcmp(argv[1], "write") != 0) || atoi(argv[2]) < 0) {
    fprintf(stderr, "usage: indep_calls read|write N PATH\n");
    MPI_Finalize();
    return 2;
  }
  int write = strcmp(argv[1], "write") == 0, n = atoi(argv[2]), bad = 0;
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_SELF, argv[3], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    fprintf(stderr, "indep_calls: cannot open %s\n", argv[3]);
    MPI_Finalize();
    return 1;
  }
  char *b = malloc(FILL);
  if (!b) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(b, 7, FILL);
  bad |= MPI_File_write(fh, b, FILL, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
  for (int i = 0; i < n; i++) {
    MPI_Offset at = (MPI_Offset)i * BLOCK % FILL;
    bad |= (write ? MPI_File_write_at(fh, at, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE)
                  : MPI_File_read_at(fh, at, b, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE)) != MPI_SUCCESS;
  }
  bad |= MPI_File_close(&fh) != MPI_SUCCESS;
  if (bad) fprintf(stderr, "indep_calls: a call failed\n");
  free(b);
  MPI_Finalize();
  return bad;
}
