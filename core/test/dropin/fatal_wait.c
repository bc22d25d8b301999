/*
 * MPI_ERRORS_ARE_FATAL set on a file: a nonblocking write that fails in the
 * background (MPI_THREAD_MULTIPLE; every write to /dev/full fails) aborts
 * the job at MPI_Wait, through the file's handler, with lmpio's detailed
 * message.  check.sh runs it expecting a non-zero exit and the message.
 */
#include "check.h"

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_File fh;
  MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL);
  int buf[64] = {0};
  MPI_Request req;
  MPI_File_iwrite_at(fh, 0, buf, 64, MPI_INT, &req); /* aborts here without threads */
  MPI_Wait(&req, MPI_STATUS_IGNORE);                  /* aborts */
  check("reached past an error under MPI_ERRORS_ARE_FATAL", 0);
  MPI_File_close(&fh);
  MPI_Finalize();
  return 0;
}
