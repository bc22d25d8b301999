/* Long waits explain themselves (watch.c): with LMPIO_HANG_REPORT=1, a rank
 * that waits in a collective call for a rank that comes late prints
 * "lmpio: rank R has waited S s in CALL (WHERE)" on standard error, again at
 * doubling intervals; a binding's own blocking call, wrapped in
 * lmpio_watch_begin/end, is reported the same way; nested pairs count as
 * one; a wait shorter than the interval prints nothing; a wait that is a
 * loop of its own reports itself (lmpio_watch_tick); a pause around the
 * binding's code keeps the where function out until the resume. */
#include "testlib.h"
#include "internals.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

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
    /* the nested pair says nothing (whether the barrier ended before its
     * report at 2 s depends on the machine's load: 4 ranks on 2 busy cores
     * took longer) */
    TL_CHECK(strstr(out, "inner") == NULL);
  }
  stderr_during(on_time, out, sizeof out);
  TL_CHECK(out[0] == '\0');
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* A loop of its own, 1.3 s long: reports itself once, at 1 s; one of 0.5 s
 * says nothing, and so does one inside a watched call. */
static void ticking(double seconds, const char *call) {
  lmpio_watch_loop loop = {0, 0};
  double start = MPI_Wtime();
  while (MPI_Wtime() - start < seconds) {
    lmpio_watch_tick(&loop, call);
    usleep(2000);
  }
}
static void long_loop(void) { ticking(1.3, "recv"); }
static void short_loop(void) { ticking(0.5, "send"); }
static void nested_loop(void) {
  lmpio_watch_begin("outer");
  ticking(0.5, "inner");
  lmpio_watch_end();
}

static void test_tick(void) {
  lmpio_watch_where(where, "script.lua");
  char out[4096], want[200];
  stderr_during(long_loop, out, sizeof out);
  snprintf(want, sizeof want, "lmpio: rank %d has waited ", tl_rank); /* (1 s, later on a loaded machine) */
  const char *end = strstr(out, " s in recv (script.lua:42)\n");
  TL_CHECK(strncmp(out, want, strlen(want)) == 0 && end && end[strlen(" s in recv (script.lua:42)\n")] == '\0');
  if (tl_case_failed) fprintf(stdout, "[rank %d] standard error: %s\n", tl_rank, out);
  stderr_during(short_loop, out, sizeof out);
  TL_CHECK(out[0] == '\0');
  stderr_during(nested_loop, out, sizeof out);
  TL_CHECK(out[0] == '\0');
}

/* A watched wait that pauses (a conversion function runs) past the moment
 * its report is due: the where function is not called until the resume,
 * then the report comes. */
static _Atomic int pausing, called_while_paused;
static void where_checked(void *arg, char *buf, size_t n) {
  if (atomic_load(&pausing)) atomic_store(&called_while_paused, 1);
  where(arg, buf, n);
}
static void paused_wait(void) {
  lmpio_watch_begin("wait");
  atomic_store(&pausing, 1);
  lmpio__watch_pause();
  usleep(1300000);
  atomic_store(&pausing, 0);
  lmpio__watch_resume();
  usleep(700000);
  lmpio_watch_end();
}

static void test_pause(void) {
  lmpio_watch_where(where_checked, "script.lua");
  char out[4096], want[200];
  stderr_during(paused_wait, out, sizeof out);
  snprintf(want, sizeof want, "lmpio: rank %d has waited ", tl_rank);
  TL_CHECK(strncmp(out, want, strlen(want)) == 0 && strstr(out, " s in wait (script.lua:42)\n") != NULL);
  TL_CHECK(atomic_load(&called_while_paused) == 0);
  if (tl_case_failed) fprintf(stdout, "[rank %d] standard error: %s\n", tl_rank, out);
  lmpio_watch_where(where, "script.lua");
}

/* The shared library (build/lib/liblmpio.so, beside this test's folder),
 * loaded, made to start its watchdog, unloaded, as the Lua module's is when
 * its state closes: the process goes on (it crashed when the watchdog
 * outlived the library's code). */
static void test_unload(void) {
  char exe[4096], lib[4200];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  snprintf(lib, sizeof lib, "%s/../lib/liblmpio.so", dirname(exe));
  if (access(lib, R_OK) != 0) return; /* (a build without the shared library) */
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  TL_CHECK(h != NULL);
  if (!h) return;
  void (*begin)(const char *) = (void (*)(const char *))dlsym(h, "lmpio_watch_begin");
  void (*end)(void) = (void (*)(void))dlsym(h, "lmpio_watch_end");
  TL_CHECK(begin && end);
  if (begin && end) {
    begin("unload"); /* (starts that copy's watchdog) */
    end();
  }
  TL_CHECK(dlclose(h) == 0);
  usleep(600000); /* (more than a tick of the watchdog) */
  TL_CHECK(1);
}

/* A child forked while the watchdog runs (which it does not have) exits
 * at once: the library's destructor does not wait for a watchdog that is
 * the parent's. */
static void test_fork(void) {
  lmpio_watch_begin("fork"); /* (the watchdog runs) */
  lmpio_watch_end();
  pid_t child = fork();
  if (child == 0) exit(0);
  TL_CHECK(child > 0);
  if (child <= 0) return;
  int status = 0, done = 0;
  for (int i = 0; i < 100 && !done; i++) {
    done = waitpid(child, &status, WNOHANG) == child;
    if (!done) usleep(50000);
  }
  if (!done) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  TL_CHECK(done);
}

int main(int argc, char **argv) {
  setenv("LMPIO_HANG_REPORT", "1", 1); /* (read at the first wait) */
  tl_init(&argc, &argv);
  tl_run("a rank waiting past LMPIO_HANG_REPORT names its call and place, again later", test_reports);
  tl_run("a wait that is a loop of its own reports itself (lmpio_watch_tick)", test_tick);
  tl_run("a report due while the binding's code runs waits for it (pause, resume)", test_pause);
  tl_run("unloading the library stops its watchdog (the process goes on)", test_unload);
  tl_run("a forked child exits without waiting for the parent's watchdog", test_fork);
  return tl_finish();
}
