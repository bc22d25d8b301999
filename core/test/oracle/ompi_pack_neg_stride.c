#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "lmpio.h"
/* lmpio read into a memory type whose typemap goes backwards (vector with stride -1) */
int main(int c, char **v) {
  MPI_Init(&c, &v);
  MPI_Datatype vec, ib, t;
  MPI_Type_vector(2, 1, -1, MPI_BYTE, &vec);            /* bytes at 0, -1 */
  int d[4] = {0, 1, 3, 4};
  MPI_Type_create_indexed_block(4, 1, d, vec, &ib);     /* extent of vec is 2 */
  MPI_Type_contiguous(1, ib, &t);
  MPI_Type_commit(&t);
  char data[8] = {10, 11, 12, 13, 14, 15, 16, 17};
  lmpio_file fh;
  lmpio_file_open(MPI_COMM_SELF, "/tmp/neg.dat", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  lmpio_file_write_at(fh, 0, data, 8, MPI_BYTE, MPI_STATUS_IGNORE);
  char got[16], want[16];
  memset(got, 0, 16); memset(want, 0, 16);
  lmpio_file_read_at(fh, 0, got + 4, 1, t, MPI_STATUS_IGNORE);
  int pos = 0;
  MPI_Unpack(data, 8, &pos, want + 4, 1, t, MPI_COMM_SELF);
  for (int i = 0; i < 16; i++) printf("%d/%d ", got[i], want[i]);
  printf("\n%s\n", memcmp(got, want, 16) ? "MISMATCH (lmpio/MPI_Unpack)" : "same");
  lmpio_file_close(&fh);
  MPI_Finalize();
}
