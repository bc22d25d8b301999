/*
 * MPI_ERRORS_ARE_FATAL set on MPI_FILE_NULL is inherited by a file opened
 * after; an error on that file aborts the job, with lmpio's detailed
 * message.  check.sh runs it expecting a non-zero exit and the message.
 */
#include "check.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char path[512];
  test_path(path, sizeof path, "fatal");
  MPI_File fh;
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                MPI_INFO_NULL, &fh);
  int buf[4];
  MPI_File_read_at(fh, 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE); /* aborts */
  check("reached past an error under MPI_ERRORS_ARE_FATAL", 0);
  MPI_File_close(&fh);
  MPI_Finalize();
  return 0;
}
