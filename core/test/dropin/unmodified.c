/*
 * What programs written for any MPI do, and must get as on OMPIO and ROMIO:
 * a rank with nothing to do joins a collective with write_all(NULL, 0)
 * while the others call write_at_all (PnetCDF's ncmpio_getput_zero_req;
 * the same for reads), and hints of other MPI-IO implementations (ROMIO's
 * start_iodevice, pfs_svr_buf, ...) pass without a word on standard error.
 */
#include <fcntl.h>

#include "check.h"

/* Standard error of this process into a file while fn runs; returns the
 * bytes written there (rank 0's are the ones that matter). */
static long stderr_during(void (*fn)(const char *), const char *path, char *out, size_t n) {
  char name[600];
  snprintf(name, sizeof name, "%s.stderr.%d", path, (int)getpid());
  fflush(stderr);
  int saved = dup(2), fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
  dup2(fd, 2);
  fn(path);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  long len = (long)lseek(fd, 0, SEEK_END);
  ssize_t got = pread(fd, out, n - 1, 0);
  out[got > 0 ? got : 0] = '\0';
  close(fd);
  unlink(name);
  return len;
}

static MPI_Info romio_hints(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  /* (as ROMIO's file_info test passes them) */
  MPI_Info_set(info, "cb_buffer_size", "8388608");
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_Info_set(info, "ind_rd_buffer_size", "2097152");
  MPI_Info_set(info, "striping_factor", "4");
  MPI_Info_set(info, "striping_unit", "131072");
  MPI_Info_set(info, "start_iodevice", "2");
  MPI_Info_set(info, "pfs_svr_buf", "true");
  /* other file systems' and OMPIO's */
  MPI_Info_set(info, "IBM_largeblock_io", "true");
  MPI_Info_set(info, "romio_lustre_co_ratio", "2");
  MPI_Info_set(info, "panfs_layout_type", "2");
  MPI_Info_set(info, "stripe_width", "4");
  MPI_Info_set(info, "gpfsAccessRange", "0");
  MPI_Info_set(info, "num_aggregators", "1");
  return info;
}

static int opened_ok;

static void with_hints(const char *path) {
  MPI_Info info = romio_hints();
  MPI_File fh;
  opened_ok = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) == MPI_SUCCESS;
  if (opened_ok) {
    opened_ok = MPI_File_set_info(fh, info) == MPI_SUCCESS &&
                MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info) == MPI_SUCCESS;
    MPI_File_close(&fh);
  }
  MPI_Info_free(&info);
}

static void with_a_slip(const char *path) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "strping_unit", "65536");
  MPI_File fh;
  opened_ok = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) == MPI_SUCCESS;
  if (opened_ok) MPI_File_close(&fh);
  MPI_Info_free(&info);
}

static void hints(const char *path) {
  char out[1024];
  long n = stderr_during(with_hints, path, out, sizeof out);
  check("an unmodified program's hints (ROMIO's, OMPIO's) open, set_info, set_view", opened_ok);
  if (n) fprintf(stdout, "standard error: %s\n", out);
  check("... print nothing on standard error", n == 0);
  n = stderr_during(with_a_slip, path, out, sizeof out);
  check("an unknown key prints nothing either by default under the drop-in", opened_ok && n == 0);
  setenv("LMPIO_HINT_WARNINGS", "1", 1);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  n = stderr_during(with_a_slip, path, out, sizeof out);
  check("LMPIO_HINT_WARNINGS=1: rank 0 names the unknown key",
        opened_ok && (rank != 0 || strstr(out, "hint \"strping_unit\" is not known") != NULL));
  unsetenv("LMPIO_HINT_WARNINGS");
  MPI_File_delete(path, MPI_INFO_NULL);
}

/* The last rank joins each collective with the individual pointer's form
 * and nothing to move; the others move two ints at explicit offsets. */
static void zero_count_joins(const char *path, int rank, int size) {
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  check("open", rc == MPI_SUCCESS);
  int idle = size - 1, v[2] = {rank + 1, 100 + rank}, w[2] = {0, 0}, n = -1;
  MPI_Status st;
  rc = rank == idle ? MPI_File_write_all(fh, NULL, 0, MPI_BYTE, &st)
                    : MPI_File_write_at_all(fh, 8 * (MPI_Offset)rank, v, 2, MPI_INT, &st);
  MPI_Get_count(&st, MPI_INT, &n);
  check("write_all(NULL, 0) on one rank meets write_at_all on the others", rc == MPI_SUCCESS);
  check("... each rank's count", n == (rank == idle ? 0 : 2));
  rc = rank == idle ? MPI_File_read_all(fh, NULL, 0, MPI_BYTE, &st)
                    : MPI_File_read_at_all(fh, 8 * (MPI_Offset)rank, w, 2, MPI_INT, &st);
  check("read_all(NULL, 0) on one rank meets read_at_all on the others", rc == MPI_SUCCESS);
  check("... the data written", rank == idle || (w[0] == v[0] && w[1] == v[1]));
  MPI_Request rq;
  rc = rank == idle ? MPI_File_iwrite_all(fh, NULL, 0, MPI_BYTE, &rq)
                    : MPI_File_iwrite_at_all(fh, 64 + 8 * (MPI_Offset)rank, v, 2, MPI_INT, &rq);
  if (rc == MPI_SUCCESS) rc = MPI_Wait(&rq, &st);
  check("iwrite_all(NULL, 0) meets iwrite_at_all", rc == MPI_SUCCESS);
  MPI_Offset fsize = -1;
  MPI_File_get_size(fh, &fsize);
  check("... the file holds the data of the ranks that had some", fsize == (size == 1 ? 0 : 64 + 8 * (size - 1)));
  MPI_File_close(&fh);
  MPI_File_delete(path, MPI_INFO_NULL);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char path[512];
  test_path(path, sizeof path, "unmodified");
  zero_count_joins(path, rank, size);
  hints(path);
  MPI_Finalize();
  return check_failures != 0;
}
