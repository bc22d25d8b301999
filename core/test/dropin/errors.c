/*
 * File error handlers through plain MPI calls, served by lmpio: the
 * default MPI_ERRORS_RETURN, a handler set on MPI_FILE_NULL (errors of
 * open and delete, and inherited by files opened after), a handler set on
 * a file, MPI_File_call_errhandler, get_errhandler, bad handles, and the
 * error classes and strings the MPI library gives for lmpio's codes.
 */
#include "check.h"

static int calls, last_class;
static MPI_File last_file;

static void handler(MPI_File *fh, int *code, ...) {
  calls++;
  MPI_Error_class(*code, &last_class);
  last_file = *fh;
}

static int calls2;
static void handler2(MPI_File *fh, int *code, ...) {
  (void)fh;
  (void)code;
  calls2++;
}

static void comm_handler(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  (void)code;
}

static int class_of(int rc) {
  int cls = -1;
  MPI_Error_class(rc, &cls);
  return cls;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[512], missing[600];
  test_path(path, sizeof path, "errors");
  snprintf(missing, sizeof missing, "%s.missing/none", path);

  /* The default on MPI_FILE_NULL is MPI_ERRORS_RETURN. */
  MPI_Errhandler eh;
  MPI_File_get_errhandler(MPI_FILE_NULL, &eh);
  check("default errhandler of MPI_FILE_NULL is MPI_ERRORS_RETURN", eh == MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh);
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  check("open of a missing file returns MPI_ERR_NO_SUCH_FILE", class_of(rc) == MPI_ERR_NO_SUCH_FILE &&
                                                                   fh == MPI_FILE_NULL);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  check("MPI_Error_string gives text for it", MPI_Error_string(rc, text, &len) == MPI_SUCCESS && len > 0);

  /* A handler on MPI_FILE_NULL: called for open and delete errors. */
  MPI_Errhandler mine, other;
  check("create_errhandler", MPI_File_create_errhandler(handler, &mine) == MPI_SUCCESS);
  MPI_File_create_errhandler(handler2, &other);
  MPI_File_set_errhandler(MPI_FILE_NULL, mine);
  MPI_File_get_errhandler(MPI_FILE_NULL, &eh);
  check("get_errhandler gives the handler set on MPI_FILE_NULL", eh == mine);
  MPI_Errhandler_free(&eh);
  rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  check("user handler called on open error with the class and MPI_FILE_NULL",
        calls == 1 && last_class == MPI_ERR_NO_SUCH_FILE && last_file == MPI_FILE_NULL &&
            class_of(rc) == MPI_ERR_NO_SUCH_FILE);
  rc = MPI_File_delete(missing, MPI_INFO_NULL);
  check("user handler called on delete error", calls == 2 && last_class == MPI_ERR_NO_SUCH_FILE);

  /* Inherited by a file opened now, and still set after the handle is
   * freed by the program. */
  MPI_Errhandler_free(&mine);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  check("open", rc == MPI_SUCCESS && served_by_lmpio(fh));
  int buf[4] = {0};
  calls = 0;
  rc = MPI_File_read_at(fh, 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  check("read on a write-only file: MPI_ERR_ACCESS, inherited handler called with the file",
        class_of(rc) == MPI_ERR_ACCESS && calls == 1 && last_class == MPI_ERR_ACCESS && last_file == fh);
  rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-representation", MPI_INFO_NULL);
  check("unknown datarep: MPI_ERR_UNSUPPORTED_DATAREP on every rank",
        class_of(rc) == MPI_ERR_UNSUPPORTED_DATAREP && calls == 2);

  /* MPI_File_call_errhandler calls the file's handler with the code. */
  calls = 0;
  rc = MPI_File_call_errhandler(fh, MPI_ERR_OTHER);
  check("call_errhandler", rc == MPI_SUCCESS && calls == 1 && last_class == MPI_ERR_OTHER && last_file == fh);

  /* A handler set on the file itself replaces it, for that file only. */
  MPI_File_set_errhandler(fh, other);
  calls = calls2 = 0;
  MPI_File_read_at(fh, 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  MPI_File_call_errhandler(MPI_FILE_NULL, MPI_ERR_IO);
  check("set_errhandler on a file", calls2 == 1 && calls == 1 && last_class == MPI_ERR_IO);
  MPI_File_get_errhandler(fh, &eh);
  check("get_errhandler of the file", eh == other);
  MPI_Errhandler_free(&eh);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  calls2 = 0;
  rc = MPI_File_read_at(fh, 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  check("MPI_ERRORS_RETURN on the file", class_of(rc) == MPI_ERR_ACCESS && calls2 == 0);
  /* A communicator's handler is not a file's. */
  MPI_Errhandler ceh;
  MPI_Comm_create_errhandler(comm_handler, &ceh);
  rc = MPI_File_set_errhandler(fh, ceh);
  MPI_Errhandler_free(&ceh);
  check("set_errhandler with a communicator's handler: MPI_ERR_ARG", class_of(rc) == MPI_ERR_ARG);
  rc = MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  check("set_errhandler MPI_ERRORS_ARE_FATAL accepted", rc == MPI_SUCCESS);

  rc = MPI_File_close(&fh);
  check("close", rc == MPI_SUCCESS);

  /* Bad handles: MPI_ERR_FILE, on MPI_FILE_NULL's handler. */
  calls = 0;
  rc = MPI_File_get_size(MPI_FILE_NULL, &(MPI_Offset){0});
  check("MPI_FILE_NULL as a file: MPI_ERR_FILE, handler called", class_of(rc) == MPI_ERR_FILE && calls == 1 &&
                                                                   last_class == MPI_ERR_FILE);
  int junk[16] = {0};
  rc = MPI_File_sync((MPI_File)(void *)junk);
  check("a pointer that is no file: MPI_ERR_FILE", class_of(rc) == MPI_ERR_FILE);
  /* The handle of a closed file (its copy, which close did not reset), and
   * a pointer into an open file's handle that is not the handle. */
  MPI_File open1 = MPI_FILE_NULL, open2 = MPI_FILE_NULL;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &open1);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &open2);
  MPI_File stale = open1;
  MPI_Fint stale_fint = MPI_File_c2f(open1);
  MPI_File_close(&open1);
  calls = 0;
  rc = MPI_File_read_at(stale, 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  check("a closed file's handle: MPI_ERR_FILE, on MPI_FILE_NULL's handler",
        class_of(rc) == MPI_ERR_FILE && calls == 1 && last_class == MPI_ERR_FILE);
  check("... and MPI_File_close of it: MPI_ERR_FILE", class_of(MPI_File_close(&stale)) == MPI_ERR_FILE);
  check("a closed file's Fortran integer: f2c gives MPI_FILE_NULL, c2f of its handle -1",
        stale_fint > 0 && MPI_File_f2c(stale_fint) == MPI_FILE_NULL && MPI_File_c2f(stale) == -1);
  rc = MPI_File_write_at((MPI_File)(void *)((char *)(void *)open2 + 8), 0, buf, 4, MPI_INT, MPI_STATUS_IGNORE);
  check("a pointer into a file's handle: MPI_ERR_FILE", class_of(rc) == MPI_ERR_FILE);
  rc = MPI_File_get_size((MPI_File)(void *)((char *)(void *)open2 - 1), &(MPI_Offset){0});
  check("a pointer just before a file's handle: MPI_ERR_FILE", class_of(rc) == MPI_ERR_FILE);
  check("f2c of integers no file has: MPI_FILE_NULL",
        MPI_File_f2c(-1) == MPI_FILE_NULL && MPI_File_f2c(1 << 30) == MPI_FILE_NULL);
  MPI_Offset size2 = -1;
  check("the other file still open", MPI_File_get_size(open2, &size2) == MPI_SUCCESS && size2 >= 0 &&
                                         MPI_File_f2c(MPI_File_c2f(open2)) == open2);
  MPI_File_close(&open2);

  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&other);
  calls = 0;
  rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  check("MPI_ERRORS_RETURN restored on MPI_FILE_NULL", class_of(rc) == MPI_ERR_NO_SUCH_FILE && calls == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  MPI_Finalize();
  return check_failures != 0;
}
