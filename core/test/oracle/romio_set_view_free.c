#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* ROMIO 3.2.1: invalid free in ADIOI_Optimize_flattened at MPI_File_set_view */
int main(int c, char **v) {
  MPI_Init(&c, &v);
  int disp_ib[2] = {0, 5};
  MPI_Datatype ib; MPI_Type_create_indexed_block(2, 3, disp_ib, MPI_INT, &ib);
  int bl[4] = {3, 0, 2, 0};
  MPI_Aint d[4] = {12, 108, 112, 188};
  if (c > 1) { bl[1] = 1; bl[3] = 1; }   /* no zero-length blocks: no error */
  MPI_Datatype t; MPI_Type_create_hindexed(4, bl, d, ib, &t); MPI_Type_commit(&t);
  MPI_File f;
  MPI_File_open(MPI_COMM_SELF, "/tmp/zl2.dat", MPI_MODE_CREATE|MPI_MODE_RDWR|MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &f);
  int rc = MPI_File_set_view(f, 32, MPI_INT, t, "native", MPI_INFO_NULL);
  printf("set_view rc %d\n", rc);
  MPI_File_close(&f);
  MPI_Finalize();
}
