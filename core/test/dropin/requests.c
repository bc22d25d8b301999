/*
 * Nonblocking file operations that fail in the background (with
 * MPI_THREAD_MULTIPLE lmpio runs them on a worker thread): MPI_Wait,
 * MPI_Test, MPI_Waitall, MPI_Testall, MPI_Waitany, MPI_Testany,
 * MPI_Waitsome, MPI_Testsome and MPI_Request_get_status return the error
 * class, and put it in the status, through the file's error handler
 * (MPI_ERRORS_RETURN by default; a handler set on the file is called with
 * the file), never through MPI_COMM_WORLD's (MPI_ERRORS_ARE_FATAL, left as
 * it is: the program would die).  Message requests in the same calls are
 * completed as before.  Every write to /dev/full fails with ENOSPC.
 */
#include "check.h"

static int calls, last_class;
static MPI_File last_file;

static void handler(MPI_File *fh, int *code, ...) {
  calls++;
  MPI_Error_class(*code, &last_class);
  last_file = *fh;
}

static int class_of(int rc) {
  int cls = -1;
  MPI_Error_class(rc, &cls);
  return cls;
}

static int count_of(const MPI_Status *st) {
  int n = -1;
  MPI_Get_count(st, MPI_INT, &n);
  return n;
}

enum { N = 256 };
static int a[N];

/* A write to fh that fails (fh is /dev/full) or succeeds (a file). */
static MPI_Request start(MPI_File fh) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_File_iwrite_at(fh, 0, a, N, MPI_INT, &req) != MPI_SUCCESS) req = MPI_REQUEST_NULL;
  return req;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided != MPI_THREAD_MULTIPLE) { /* then every operation completes in its own call */
    check("skip: MPI_THREAD_MULTIPLE not provided", 1);
    MPI_Finalize();
    return 0;
  }
  MPI_File full = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &full);
  check("open /dev/full", rc == MPI_SUCCESS && served_by_lmpio(full));

  MPI_Status st;
  st.MPI_ERROR = -1;
  MPI_Request req = start(full);
  int started = req != MPI_REQUEST_NULL;
  rc = MPI_Wait(&req, &st);
  check("MPI_Wait: MPI_ERR_NO_SPACE returned and in the status (count 0), the program goes on",
        started && class_of(rc) == MPI_ERR_NO_SPACE && class_of(st.MPI_ERROR) == MPI_ERR_NO_SPACE &&
            count_of(&st) == 0 && req == MPI_REQUEST_NULL);

  req = start(full);
  int flag = 0;
  st.MPI_ERROR = -1;
  do rc = MPI_Test(&req, &flag, &st);
  while (!flag && rc == MPI_SUCCESS);
  check("MPI_Test: the class once complete", flag && class_of(rc) == MPI_ERR_NO_SPACE &&
                                                   class_of(st.MPI_ERROR) == MPI_ERR_NO_SPACE &&
                                                   req == MPI_REQUEST_NULL);

  req = start(full);
  flag = 0;
  do rc = MPI_Request_get_status(req, &flag, &st);
  while (!flag && rc == MPI_SUCCESS);
  int rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
  check("MPI_Request_get_status, then MPI_Wait: the class from both",
        flag && class_of(rc) == MPI_ERR_NO_SPACE && class_of(rc2) == MPI_ERR_NO_SPACE && req == MPI_REQUEST_NULL);

  /* File and message requests in one call. */
  int x = 7 + rank, y = 0;
  MPI_Request rs[3];
  MPI_Status sts[3];
  MPI_Irecv(&y, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &rs[0]);
  rs[1] = start(full);
  MPI_Isend(&x, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &rs[2]);
  for (int i = 0; i < 3; i++) sts[i].MPI_ERROR = -1;
  rc = MPI_Waitall(3, rs, sts);
  check("MPI_Waitall: MPI_ERR_IN_STATUS, the class in the file request's status, the message delivered",
        rc == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_SUCCESS &&
            class_of(sts[1].MPI_ERROR) == MPI_ERR_NO_SPACE && sts[2].MPI_ERROR == MPI_SUCCESS && y == x &&
            rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL && rs[2] == MPI_REQUEST_NULL);

  rs[0] = start(full);
  rs[1] = start(full);
  flag = 0;
  do rc = MPI_Testall(2, rs, &flag, sts);
  while (!flag && rc == MPI_SUCCESS);
  check("MPI_Testall: MPI_ERR_IN_STATUS, both statuses", flag && rc == MPI_ERR_IN_STATUS &&
                                                          class_of(sts[0].MPI_ERROR) == MPI_ERR_NO_SPACE &&
                                                          class_of(sts[1].MPI_ERROR) == MPI_ERR_NO_SPACE);

  rs[0] = MPI_REQUEST_NULL;
  rs[1] = start(full);
  int index = -1;
  st.MPI_ERROR = -1;
  rc = MPI_Waitany(2, rs, &index, &st);
  check("MPI_Waitany: its index, the class", index == 1 && class_of(rc) == MPI_ERR_NO_SPACE &&
                                                 class_of(st.MPI_ERROR) == MPI_ERR_NO_SPACE);
  rs[0] = start(full);
  index = -1;
  flag = 0;
  do rc = MPI_Testany(2, rs, &index, &flag, &st);
  while (!flag && rc == MPI_SUCCESS);
  check("MPI_Testany: its index, the class", flag && index == 0 && class_of(rc) == MPI_ERR_NO_SPACE);

  int idx[3], out = 0;
  MPI_Isend(&x, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &rs[0]);
  rs[1] = start(full);
  MPI_Irecv(&y, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &rs[2]);
  int done = 0, failed = 0, bad = 0;
  while (done < 3) {
    rc = MPI_Waitsome(3, rs, &out, idx, sts);
    if (out == MPI_UNDEFINED) break;
    for (int k = 0; k < out; k++) {
      if (idx[k] == 1) failed += class_of(sts[k].MPI_ERROR) == MPI_ERR_NO_SPACE && rc == MPI_ERR_IN_STATUS;
      else bad += sts[k].MPI_ERROR != MPI_SUCCESS && rc == MPI_ERR_IN_STATUS;
    }
    done += out;
  }
  check("MPI_Waitsome: MPI_ERR_IN_STATUS with the class where the file request is", done == 3 && failed == 1 &&
                                                                                  bad == 0);
  rs[0] = start(full);
  out = 0;
  rc = MPI_SUCCESS;
  do rc = MPI_Testsome(1, rs, &out, idx, sts);
  while (out == 0 && rc == MPI_SUCCESS);
  check("MPI_Testsome: MPI_ERR_IN_STATUS with the class", out == 1 && idx[0] == 0 && rc == MPI_ERR_IN_STATUS &&
                                                            class_of(sts[0].MPI_ERROR) == MPI_ERR_NO_SPACE);

  /* A handler set on the file: called with the file and the class. */
  MPI_Errhandler eh;
  MPI_File_create_errhandler(handler, &eh);
  MPI_File_set_errhandler(full, eh);
  MPI_Errhandler_free(&eh);
  calls = 0;
  req = start(full);
  rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  check("the file's own handler is called, with the file and the class",
        calls == 1 && last_file == full && last_class == MPI_ERR_NO_SPACE && class_of(rc) == MPI_ERR_NO_SPACE);
  calls = 0;
  rs[0] = start(full);
  rs[1] = start(full);
  MPI_Status *volatile ignore = MPI_STATUSES_IGNORE; /* (read at run time: GCC 12 takes MPICH's for an array of size 0) */
  rc = MPI_Waitall(2, rs, ignore);
  check("... once per failed request of MPI_Waitall", calls == 2 && rc == MPI_ERR_IN_STATUS);
  MPI_File_set_errhandler(full, MPI_ERRORS_RETURN);
  /* A freed request: nobody to tell; the program goes on. */
  req = start(full);
  MPI_Request_free(&req);
  rc = MPI_File_close(&full);
  check("close after a freed failing request", rc == MPI_SUCCESS && full == MPI_FILE_NULL);

  /* A failed request of a closed file: MPI_FILE_NULL's handler. */
  MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &full);
  req = start(full);
  MPI_File_close(&full);
  MPI_File_create_errhandler(handler, &eh);
  MPI_File_set_errhandler(MPI_FILE_NULL, eh);
  MPI_Errhandler_free(&eh);
  calls = 0;
  rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  check("waited after its file closed: MPI_FILE_NULL's handler",
        calls == 1 && last_file == MPI_FILE_NULL && class_of(rc) == MPI_ERR_NO_SPACE);

  /* Requests that succeed go through as before. */
  char path[512];
  test_path(path, sizeof path, "requests");
  MPI_File fh;
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  for (int i = 0; i < N; i++) a[i] = rank * N + i;
  MPI_File_iwrite_at(fh, (MPI_Offset)rank * N * sizeof(int), a, N, MPI_INT, &rs[0]);
  MPI_Isend(&x, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &rs[1]);
  MPI_Irecv(&y, 1, MPI_INT, 0, 7, MPI_COMM_SELF, &rs[2]);
  rc = MPI_Waitall(3, rs, sts);
  check("a file request that succeeds: MPI_Waitall gives its count", rc == MPI_SUCCESS && count_of(&sts[0]) == N);
  int b[N];
  MPI_File_iread_at(fh, (MPI_Offset)rank * N * sizeof(int), b, N, MPI_INT, &req);
  rc = MPI_Wait(&req, &st);
  check("... MPI_Wait its count and data", rc == MPI_SUCCESS && count_of(&st) == N && memcmp(a, b, sizeof a) == 0);
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Finalize();
  return check_failures != 0;
}
