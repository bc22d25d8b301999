#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "lmpio.h"
/* lmpio write with a memory type that contains an empty struct (blocklength 0) */
int main(int c, char **v) {
  MPI_Init(&c, &v);
  MPI_Datatype e, hv, t;
  int b0 = 0; MPI_Aint d0 = 1; MPI_Datatype dt0 = MPI_DOUBLE;
  MPI_Type_create_struct(1, &b0, &d0, &dt0, &e);                 /* struct(0*double@1): empty */
  MPI_Type_create_hvector(2, 3, 11, e, &hv);                      /* still empty */
  int bl[2] = {1, 2}; MPI_Aint dd[2] = {3, 19}; MPI_Datatype ts[2] = {MPI_DOUBLE, hv};
  MPI_Type_create_struct(2, bl, dd, ts, &t);
  MPI_Type_commit(&t);
  MPI_Aint lb, ext, elb, eext, hlb, hext; MPI_Type_get_extent(t, &lb, &ext);
  MPI_Type_get_extent(e, &elb, &eext); MPI_Type_get_extent(hv, &hlb, &hext);
  printf("MPI: empty struct lb %ld extent %ld; hvector lb %ld extent %ld; outer lb %ld extent %ld\n",
         (long)elb, (long)eext, (long)hlb, (long)hext, (long)lb, (long)ext);
  unsigned char mem[256], want[64], got[64];
  for (int i = 0; i < 256; i++) mem[i] = (unsigned char)i;
  int pos = 0;
  MPI_Pack(mem, 3, t, want, 64, &pos, MPI_COMM_SELF);
  lmpio_file fh;
  lmpio_file_open(MPI_COMM_SELF, "/tmp/zs.dat", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  lmpio_file_set_size(fh, 0);
  lmpio_file_write_at(fh, 0, mem, 3, t, MPI_STATUS_IGNORE);
  lmpio_file_read_at(fh, 0, got, 24, MPI_BYTE, MPI_STATUS_IGNORE);
  printf("MPI_Pack: "); for (int i = 0; i < 24; i += 8) printf("%d ", want[i]);
  printf("\nlmpio:    "); for (int i = 0; i < 24; i += 8) printf("%d ", got[i]);
  printf("\n%s\n", memcmp(want, got, 24) ? "MISMATCH" : "same");
  lmpio_file_close(&fh);
  MPI_Finalize();
}
