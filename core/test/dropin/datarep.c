/*
 * A user-defined data representation registered with MPI_Register_datarep
 * (which Open MPI 4.1's own MPI-IO refuses): "be16-int" keeps each int as a
 * 2-byte big-endian number, so the extent callback scales the view and the
 * conversion functions are called with positions.
 */
#include "check.h"
#include <stdint.h>

static int extent_calls, read_calls, write_calls;

static int extent_fn(MPI_Datatype type, MPI_Aint *extent, void *state) {
  (void)state;
  extent_calls++;
  if (type != MPI_INT) return MPI_ERR_TYPE;
  *extent = 2;
  return MPI_SUCCESS;
}

static int write_fn(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position,
                    void *state) {
  (void)state;
  if (type != MPI_INT) return MPI_ERR_TYPE;
  write_calls++;
  const int *src = (const int *)userbuf + position;
  unsigned char *dst = filebuf;
  for (int i = 0; i < count; i++) {
    dst[2 * i] = (unsigned char)((src[i] >> 8) & 0xff);
    dst[2 * i + 1] = (unsigned char)(src[i] & 0xff);
  }
  return MPI_SUCCESS;
}

static int read_fn(void *userbuf, MPI_Datatype type, int count, void *filebuf, MPI_Offset position,
                   void *state) {
  (void)state;
  if (type != MPI_INT) return MPI_ERR_TYPE;
  read_calls++;
  int *dst = (int *)userbuf + position;
  const unsigned char *src = filebuf;
  for (int i = 0; i < count; i++) dst[i] = (int16_t)((src[2 * i] << 8) | src[2 * i + 1]);
  return MPI_SUCCESS;
}

#define N 100

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[512];
  test_path(path, sizeof path, "datarep");

  int rc = MPI_Register_datarep("be16-int", read_fn, write_fn, extent_fn, NULL);
  check("MPI_Register_datarep", rc == MPI_SUCCESS);
  int cls = -1;
  rc = MPI_Register_datarep("be16-int", read_fn, write_fn, extent_fn, NULL);
  MPI_Error_class(rc, &cls);
  check("registering it twice: MPI_ERR_DUP_DATAREP", cls == MPI_ERR_DUP_DATAREP);

  MPI_File fh;
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  check("open, served by lmpio", rc == MPI_SUCCESS && served_by_lmpio(fh));
  rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "be16-int", MPI_INFO_NULL);
  check("set_view with the user datarep", rc == MPI_SUCCESS && extent_calls > 0);
  MPI_Aint ext = 0;
  MPI_File_get_type_extent(fh, MPI_INT, &ext);
  check("get_type_extent from the extent callback", ext == 2);
  int out[N], in[N];
  for (int i = 0; i < N; i++) out[i] = (rank * N + i) * (i % 2 ? -1 : 1);
  MPI_Status st;
  rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * N, out, N, MPI_INT, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  check("write_at_all converts", rc == MPI_SUCCESS && write_calls > 0 && count == N);
  MPI_Offset fsize = 0;
  MPI_File_get_size(fh, &fsize);
  check("file holds 2 bytes per int", fsize == (MPI_Offset)2 * N * size);

  /* The bytes, through the native representation. */
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  unsigned char raw[2 * N];
  MPI_File_read_at(fh, (MPI_Offset)2 * rank * N, raw, 2 * N, MPI_BYTE, &st);
  int right = 1;
  for (int i = 0; i < N; i++)
    right = right && raw[2 * i] == ((out[i] >> 8) & 0xff) && raw[2 * i + 1] == (out[i] & 0xff);
  check("big-endian 16-bit bytes in the file", right);

  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "be16-int", MPI_INFO_NULL);
  memset(in, 0, sizeof in);
  rc = MPI_File_read_at_all(fh, (MPI_Offset)rank * N, in, N, MPI_INT, &st);
  check("read_at_all converts back", rc == MPI_SUCCESS && read_calls > 0 && memcmp(in, out, sizeof in) == 0);
  char rep[MPI_MAX_DATAREP_STRING + 1];
  MPI_Offset disp;
  MPI_Datatype et, ft;
  MPI_File_get_view(fh, &disp, &et, &ft, rep);
  check("get_view names it", strcmp(rep, "be16-int") == 0);
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Finalize();
  return check_failures != 0;
}
