#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int c, char **v) {
  MPI_Init(&c, &v);
  int n = 3, bl[3] = {atoi(v[1]), atoi(v[2]), atoi(v[3])};
  MPI_Aint d[3] = {0, 16, 32};
  MPI_Datatype t; MPI_Type_create_hindexed(n, bl, d, MPI_INT, &t); MPI_Type_commit(&t);
  MPI_File f;
  MPI_File_open(MPI_COMM_SELF, "/tmp/zl.dat", MPI_MODE_CREATE|MPI_MODE_RDWR|MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &f);
  for (int i = 0; i < 20; i++) MPI_File_set_view(f, 0, MPI_INT, t, "native", MPI_INFO_NULL);
  int buf[8] = {0}; MPI_Status st;
  int rc = MPI_File_write_at(f, 0, buf, 2, MPI_INT, &st);
  printf("blocks %s %s %s: write rc %d\n", v[1], v[2], v[3], rc);
  MPI_File_close(&f);
  MPI_Finalize();
}
