/* The reference for spec/reference_spec.lua: writes a known pattern with the
 * MPI library's own MPI-IO (MPI_File_*), so that the same sequence done from
 * Lua through lmpio can be compared byte for byte.  Usage: mpiio_ref PATH */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != MPI_SUCCESS) {                                                  \
      char s_[MPI_MAX_ERROR_STRING];                                           \
      int n_ = 0;                                                              \
      MPI_Error_string(rc_, s_, &n_);                                          \
      fprintf(stderr, "%s failed: %s\n", #call, s_);                           \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_File fh;
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL);
  CHECK(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  CHECK(MPI_File_set_size(fh, 0));

  /* 1. Interleaved ints: rank r owns every size-th int from int r. */
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)size * 4, &ft);
  MPI_Type_commit(&ft);
  CHECK(MPI_File_set_view(fh, rank * 4, MPI_INT, ft, "native", MPI_INFO_NULL));
  int v[5];
  for (int i = 0; i < 5; i++) v[i] = rank * 100 + i;
  CHECK(MPI_File_write_at_all(fh, 0, v, 5, MPI_INT, MPI_STATUS_IGNORE));
  MPI_Type_free(&ft);

  /* 2. Doubles through a vector filetype (blocks of 2 of every 2*size),
   *    written with the individual pointer after a seek. */
  MPI_Offset base = (MPI_Offset)size * 5 * 4;
  MPI_Datatype vec, vft;
  MPI_Type_vector(2, 2, 2 * size, MPI_DOUBLE, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)4 * size * 8, &vft);
  MPI_Type_commit(&vft);
  CHECK(MPI_File_set_view(fh, base + rank * 2 * 8, MPI_DOUBLE, vft, "native", MPI_INFO_NULL));
  double d[8];
  for (int i = 0; i < 8; i++) d[i] = rank + i / 8.0;
  CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  CHECK(MPI_File_write_all(fh, d, 8, MPI_DOUBLE, MPI_STATUS_IGNORE));
  MPI_Type_free(&vec);
  MPI_Type_free(&vft);

  /* 3. Text lines in rank order through the shared pointer. */
  base += (MPI_Offset)size * 8 * 8;
  CHECK(MPI_File_set_view(fh, base, MPI_CHAR, MPI_CHAR, "native", MPI_INFO_NULL));
  char line[64];
  snprintf(line, sizeof line, "rank %d of %d%.*s\n", rank, size, rank, "!!!!!!!!!!!!!!!!");
  CHECK(MPI_File_write_ordered(fh, line, (int)strlen(line), MPI_CHAR, MPI_STATUS_IGNORE));

  CHECK(MPI_File_close(&fh));
  MPI_Finalize();
  return 0;
}
