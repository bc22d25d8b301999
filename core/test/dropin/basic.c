/*
 * The MPI-IO chapter through plain MPI_File_* calls: lmpio serves them when
 * liblmpio-mpi.so is preloaded (get_info has lmpio_version), and the data
 * are right: views, collective, ordered, shared-pointer, nonblocking and
 * split collective calls, statuses, handles between C and Fortran.
 */
#include "check.h"

#define N 8

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[512];
  test_path(path, sizeof path, "basic");

  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  check("open", rc == MPI_SUCCESS && fh != MPI_FILE_NULL);
  check("served by lmpio (lmpio_version in get_info)", served_by_lmpio(fh));

  int amode = 0;
  MPI_File_get_amode(fh, &amode);
  check("get_amode", amode == (MPI_MODE_CREATE | MPI_MODE_RDWR));
  MPI_Group g, wg;
  int cmp = MPI_UNEQUAL;
  MPI_File_get_group(fh, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_compare(g, wg, &cmp);
  check("get_group", cmp == MPI_IDENT);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);

  /* A view that interleaves the ranks int by int. */
  MPI_Datatype ftype;
  MPI_Type_vector(N, 1, size, MPI_INT, &ftype);
  MPI_Datatype rtype;
  MPI_Type_create_resized(ftype, 0, (MPI_Aint)(N * size * sizeof(int)), &rtype);
  MPI_Type_commit(&rtype);
  rc = MPI_File_set_view(fh, (MPI_Offset)(rank * sizeof(int)), MPI_INT, rtype, "native", MPI_INFO_NULL);
  check("set_view", rc == MPI_SUCCESS);
  int out[N], in[N];
  for (int i = 0; i < N; i++) out[i] = rank * 1000 + i;
  MPI_Status st;
  rc = MPI_File_write_at_all(fh, 0, out, N, MPI_INT, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  check("write_at_all with a view, status count", rc == MPI_SUCCESS && count == N);
  MPI_Offset fsize = 0;
  MPI_File_get_size(fh, &fsize);
  check("get_size", fsize == (MPI_Offset)(N * size * sizeof(int)));

  /* Every int where the view put it, seen through a plain view. */
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  int *all = malloc(sizeof(int) * N * size);
  rc = MPI_File_read_at(fh, 0, all, N * size, MPI_INT, &st);
  int right = rc == MPI_SUCCESS;
  for (int i = 0; i < N * size; i++) right = right && all[i] == (i % size) * 1000 + i / size;
  check("interleaved layout in the file", right);
  free(all);

  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  MPI_File_set_view(fh, (MPI_Offset)(rank * sizeof(int)), MPI_INT, rtype, "native", MPI_INFO_NULL);
  MPI_File_get_view(fh, &disp, &et, &ft, rep);
  check("get_view", disp == (MPI_Offset)(rank * sizeof(int)) && strcmp(rep, "native") == 0);
  if (ft != MPI_INT) MPI_Type_free(&ft);
  MPI_Offset boff = -1;
  MPI_File_get_byte_offset(fh, 1, &boff);
  check("get_byte_offset", boff == (MPI_Offset)((rank + size) * sizeof(int)));

  /* Individual pointer, collective read. */
  memset(in, 0, sizeof in);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  rc = MPI_File_read_all(fh, in, N, MPI_INT, &st);
  MPI_Offset pos = -1;
  MPI_File_get_position(fh, &pos);
  check("read_all back through the view", rc == MPI_SUCCESS && memcmp(in, out, sizeof in) == 0 && pos == N);

  /* Reading past the end: a short count. */
  rc = MPI_File_read_at(fh, N - 2, in, N, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  int elements = -1;
  MPI_Get_elements(&st, MPI_INT, &elements);
  check("read at end of file: count and elements short", rc == MPI_SUCCESS && count == 2 && elements == 2);

  /* Nonblocking: real MPI requests. */
  MPI_Request req;
  for (int i = 0; i < N; i++) out[i] = -(rank * 1000 + i);
  rc = MPI_File_iwrite_at(fh, 0, out, N, MPI_INT, &req);
  int rc2 = MPI_Wait(&req, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  check("iwrite_at + MPI_Wait", rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && count == N && req == MPI_REQUEST_NULL);
  memset(in, 0, sizeof in);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  rc = MPI_File_iread(fh, in, N, MPI_INT, &req);
  int done = 0;
  while (!done) MPI_Test(&req, &done, &st);
  check("iread + MPI_Test", rc == MPI_SUCCESS && memcmp(in, out, sizeof in) == 0);
  rc = MPI_File_iread_at_all(fh, 0, in, N, MPI_INT, &req);
  rc2 = MPI_Request_free(&req);
  MPI_Barrier(MPI_COMM_WORLD);
  check("iread_at_all + MPI_Request_free", rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && req == MPI_REQUEST_NULL);
  MPI_Request reqs[2];
  rc = MPI_File_iwrite_at_all(fh, 0, out, N, MPI_INT, &reqs[0]);
  rc2 = MPI_File_iread_at(fh, 0, in, N, MPI_INT, &reqs[1]);
  MPI_Status sts[2];
  int rc3 = MPI_Waitall(2, reqs, sts);
  check("iwrite_at_all, iread_at, MPI_Waitall", rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && rc3 == MPI_SUCCESS);

  /* Split collective. */
  memset(in, 0, sizeof in);
  rc = MPI_File_read_at_all_begin(fh, 0, in, N, MPI_INT);
  rc2 = MPI_File_read_at_all_end(fh, in, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  check("read_at_all_begin/end", rc == MPI_SUCCESS && rc2 == MPI_SUCCESS && count == N &&
                                     memcmp(in, out, sizeof in) == 0);
  MPI_Type_free(&rtype);
  MPI_Type_free(&ftype);

  /* Shared pointer and ordered calls on a plain byte view. */
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  MPI_File_set_size(fh, 0);
  for (int i = 0; i <= rank; i++) out[i] = rank;
  rc = MPI_File_write_ordered(fh, out, rank + 1, MPI_INT, &st);
  MPI_Offset sp = -1;
  MPI_File_get_position_shared(fh, &sp);
  int total = size * (size + 1) / 2;
  check("write_ordered moves the shared pointer", rc == MPI_SUCCESS && sp == total);
  int *ord = malloc(sizeof(int) * total);
  MPI_File_read_at(fh, 0, ord, total, MPI_INT, &st);
  right = 1;
  for (int r = 0, k = 0; r < size; r++)
    for (int i = 0; i <= r; i++) right = right && ord[k++] == r;
  check("write_ordered: rank order in the file", right);
  MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
  memset(in, 0xff, sizeof in);
  rc = MPI_File_read_ordered(fh, in, rank + 1, MPI_INT, &st);
  right = rc == MPI_SUCCESS;
  int base = rank * (rank + 1) / 2;
  for (int i = 0; i <= rank; i++) right = right && in[i] == ord[base + i];
  check("read_ordered", right);
  free(ord);
  MPI_File_seek_shared(fh, 0, MPI_SEEK_END);
  int one = 100 + rank;
  rc = MPI_File_write_shared(fh, &one, 1, MPI_INT, &st);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_get_size(fh, &fsize);
  check("write_shared appends one int per rank", rc == MPI_SUCCESS && fsize == (MPI_Offset)((total + size) * sizeof(int)));

  /* Handles between C and Fortran. */
  MPI_Fint fint = MPI_File_c2f(fh);
  check("c2f / f2c", fint != 0 && MPI_File_f2c(fint) == fh && MPI_File_c2f(MPI_FILE_NULL) == 0 &&
                         MPI_File_f2c(0) == MPI_FILE_NULL);

  MPI_Aint ext = 0;
  MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext);
  check("get_type_extent", ext == sizeof(double));
  int flag = 0;
  MPI_File_set_atomicity(fh, 1);
  MPI_File_get_atomicity(fh, &flag);
  check("set/get_atomicity", flag == 1);
  check("sync", MPI_File_sync(fh) == MPI_SUCCESS);
  check("preallocate", MPI_File_preallocate(fh, 4096) == MPI_SUCCESS);

  rc = MPI_File_close(&fh);
  check("close sets MPI_FILE_NULL", rc == MPI_SUCCESS && fh == MPI_FILE_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    rc = MPI_File_delete(path, MPI_INFO_NULL);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  check("delete", rc == MPI_SUCCESS && access(path, F_OK) != 0);

  /* Delete on close. */
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &fh);
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  check("MPI_MODE_DELETE_ON_CLOSE", rc == MPI_SUCCESS && access(path, F_OK) != 0);

  /* Hint values in capitals, as programs written for ROMIO pass them. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "ENABLE");
  MPI_Info_set(info, "romio_ds_read", "DISABLE");
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  MPI_Info_free(&info);
  check("hint values in capitals (romio_cb_write=ENABLE)", rc == MPI_SUCCESS);

  MPI_Finalize();
  return check_failures != 0;
}
