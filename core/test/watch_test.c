/* Long waits explain themselves (watch.c): with LMPIO_HANG_REPORT=1, a rank
 * that waits in a collective call for a rank that comes late prints
 * "lmpio: rank R has waited S s in CALL (WHERE)" on standard error, again at
 * doubling intervals; a binding's own blocking call, wrapped in
 * lmpio_watch_begin/end, is reported the same way; nested pairs count as
 * one; a wait shorter than the interval prints nothing. */
#include "testlib.h"

#include <fcntl.h>

/* Standard error of this process into a file while fn runs; its text. */
static void stderr_during(void (*fn)(void), char *out, size_t n) {
  char name[] = "/tmp/lmpio-watch-XXXXXX";
  int fd = mkstemp(name);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t got = pread(fd, out, n - 1, 0);
  out[got > 0 ? got : 0] = '\0';
  close(fd);
  unlink(name);
}

static void where(void *arg, char *buf, size_t n) { snprintf(buf, n, "%s:%d", (const char *)arg, 42); }

static char *path;
static lmpio_file fh;

/* The last rank comes 2.6 s late into write_at_all. */
static void late_collective(void) {
  int v = tl_rank;
  if (tl_rank == tl_size - 1) usleep(2600000);
  TL_OK(lmpio_file_write_at_all(fh, 4 * tl_rank, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
}

/* A binding's blocking call: a barrier the last rank comes to 1.4 s late;
 * a nested pair inside it. */
static void late_barrier(void) {
  if (tl_rank == tl_size - 1) usleep(1400000);
  lmpio_watch_begin("barrier");
  lmpio_watch_begin("inner");
  lmpio_watch_end();
  MPI_Barrier(MPI_COMM_WORLD);
  lmpio_watch_end();
}

/* Everyone on time: nothing to say. */
static void on_time(void) {
  int v = tl_rank;
  TL_OK(lmpio_file_write_at_all(fh, 4 * tl_rank, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  lmpio_watch_begin("barrier");
  MPI_Barrier(MPI_COMM_WORLD);
  lmpio_watch_end();
}

static void test_reports(void) {
  if (tl_size < 2) return;
  path = tl_path("watch");
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  lmpio_watch_where(where, "script.lua");
  char out[4096], want[200];
  stderr_during(late_collective, out, sizeof out);
  if (tl_rank < tl_size - 1) {
    snprintf(want, sizeof want, "lmpio: rank %d has waited 1 s in write_at_all (script.lua:42)\n", tl_rank);
    TL_CHECK(strstr(out, want) != NULL);
    /* again about a second later (a loaded machine may print it late) */
    const char *again = strstr(out, want);
    TL_CHECK(again && strstr(again + 1, "s in write_at_all (script.lua:42)\n") != NULL);
  } else {
    TL_CHECK(out[0] == '\0');
  }
  if (tl_case_failed) fprintf(stdout, "[rank %d] standard error: %s\n", tl_rank, out);
  stderr_during(late_barrier, out, sizeof out);
  if (tl_rank < tl_size - 1) {
    snprintf(want, sizeof want, "lmpio: rank %d has waited 1 s in barrier (script.lua:42)\n", tl_rank);
    TL_CHECK(strstr(out, want) != NULL);
    TL_CHECK(strstr(out, "inner") == NULL && strstr(out, "2 s") == NULL);
  }
  stderr_during(on_time, out, sizeof out);
  TL_CHECK(out[0] == '\0');
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  setenv("LMPIO_HANG_REPORT", "1", 1); /* (read at the first wait) */
  tl_init(&argc, &argv);
  tl_run("a rank waiting past LMPIO_HANG_REPORT names its call and place, again later", test_reports);
  return tl_finish();
}
