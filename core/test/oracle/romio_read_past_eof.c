#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int c, char **v) {
  MPI_Init(&c, &v);
  MPI_File f; MPI_Status st; int cnt; MPI_Offset pos;
  MPI_File_open(MPI_COMM_SELF, "/tmp/eof.dat", MPI_MODE_CREATE|MPI_MODE_RDWR|MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &f);
  int data[4] = {1,2,3,4}, buf[16];
  MPI_File_write_at(f, 0, data, 4, MPI_INT, &st);   /* 16 bytes */
  /* contiguous: read 8 ints from int 2 */
  memset(buf, 0x5a, sizeof buf);
  MPI_File_seek(f, 2, MPI_SEEK_SET);
  MPI_File_read(f, buf, 8, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &cnt); MPI_File_get_position(f, &pos);
  printf("contig file+mem: count %d, position %lld (started at 2)\n", cnt, (long long)pos);
  /* noncontiguous memory: vector(8,1,2) */
  MPI_Datatype vec; MPI_Type_vector(8, 1, 2, MPI_INT, &vec); MPI_Type_commit(&vec);
  memset(buf, 0x5a, sizeof buf);
  MPI_File_seek(f, 2, MPI_SEEK_SET);
  MPI_File_read(f, buf, 1, vec, &st);
  MPI_Get_elements(&st, MPI_INT, &cnt); MPI_File_get_position(f, &pos);
  printf("noncontig mem: elements %d (2 exist), position %lld, buf[4]=%#x buf[6]=%#x\n", cnt, (long long)pos, buf[4], buf[6]);
  /* noncontiguous file view: every other int */
  MPI_Datatype ft; MPI_Type_vector(1, 1, 2, MPI_INT, &ft);
  MPI_Datatype ft2; MPI_Type_create_resized(ft, 0, 8, &ft2); MPI_Type_commit(&ft2);
  MPI_File_set_view(f, 0, MPI_INT, ft2, "native", MPI_INFO_NULL);
  memset(buf, 0x5a, sizeof buf);
  MPI_File_read(f, buf, 8, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &cnt); MPI_File_get_position(f, &pos);
  printf("noncontig file: count %d (2 exist), position %lld, buf[2]=%#x\n", cnt, (long long)pos, buf[2]);
  MPI_File_close(&f);
  MPI_Finalize();
}
