/* The agreement's exchanges (exchange.c): through MPI for a file's first 15,
 * through a shared segment from the 16th on when every rank is on one node
 * (LMPIO_SHM_AGREEMENT=0: always MPI; check.sh runs both, and the results
 * must be the same).  Long mixed sequences of collective calls across the
 * attach point, with their results checked; mismatched calls, failures on
 * one rank, several files, closes and failed opens at every position around
 * the attach; and the exchange itself under skew, with records longer than
 * a slot. */
#include "testlib.h"
#include "internals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <sched.h>
#include <stdint.h>

/* LMPIO_SHM_AGREEMENT=0 on some rank (every rank's exchanges then go
 * through MPI: check.sh also runs the test with it on one rank only). */
static int shm_off;
/* Whether this MPI makes shared windows (not under --mca osc pt2pt, say:
 * then lmpio goes on through MPI's collectives, and must not abort). */
static int windows;

static void probe_windows(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  void *base;
  MPI_Win win;
  int got = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, comm, &base, &win) == MPI_SUCCESS;
  if (got) MPI_Win_free(&win);
  MPI_Allreduce(&got, &windows, 1, MPI_INT, MPI_LAND, comm);
  MPI_Comm_free(&comm);
}

/* Whether a file's exchanges should have moved to shared memory by now
 * (the reduced first agreement, LMPIO_AGREE_GATHER_MAX, is no exchange:
 * a file may not have made 16). */
static int expect_shm(void) {
  const char *reduced = getenv("LMPIO_AGREE_GATHER_MAX");
  if (reduced && *reduced) return -1;
  return tl_size > 1 && !shm_off && windows;
}

#define TL_SHM(comm, want)                                                  \
  do {                                                                      \
    if (expect_shm() >= 0) TL_EQ(lmpio__exchange_shared(comm), (want));     \
  } while (0)

static MPI_Info cb_info(int twophase) {
  MPI_Info info = MPI_INFO_NULL;
  if (twophase) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    MPI_Info_set(info, "romio_cb_read", "enable");
  }
  return info;
}

static int val(int c, int what, int j) { return c * 100000 + what * 16 + j; }

/* One cycle of ten collective calls of nine kinds on fh, every result
 * checked: a view (native or external32), atomicity, truncation,
 * write_at_all, sync, read_at_all of another rank's part, seek_shared,
 * write_ordered, write_all through the individual pointer, then the whole
 * file read back. */
static void cycle(lmpio_file fh, int c, MPI_Info info) {
  int n = tl_size, me = tl_rank;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, c % 2 ? "external32" : "native", info));
  TL_OK(lmpio_file_set_atomicity(fh, c % 3 == 2));
  TL_OK(lmpio_file_set_size(fh, 0));
  int w[4], r[4];
  for (int j = 0; j < 4; j++) w[j] = val(c, me, j);
  TL_OK(lmpio_file_write_at_all(fh, 4 * me, w, 4, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_sync(fh));
  int other = (me + 1) % n;
  TL_OK(lmpio_file_read_at_all(fh, 4 * other, r, 4, MPI_INT, MPI_STATUS_IGNORE));
  for (int j = 0; j < 4; j++) TL_EQ(r[j], val(c, other, j));
  TL_OK(lmpio_file_seek_shared(fh, 4 * n, MPI_SEEK_SET));
  MPI_Offset at = -1;
  TL_OK(lmpio_file_get_position_shared(fh, &at));
  TL_EQ(at, 4 * n);
  int o[2] = {val(c, 100 + me, 0), val(c, 100 + me, 1)};
  TL_OK(lmpio_file_write_ordered(fh, o, 2, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_position_shared(fh, &at));
  TL_EQ(at, 6 * n);
  TL_OK(lmpio_file_seek(fh, 6 * n + me, MPI_SEEK_SET));
  int one = val(c, 200 + me, 0);
  TL_OK(lmpio_file_write_all(fh, &one, 1, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_position(fh, &at));
  TL_EQ(at, 6 * n + me + 1);
  int *all = malloc(sizeof(int) * 7 * (size_t)n);
  MPI_Status st;
  TL_OK(lmpio_file_read_at_all(fh, 0, all, 7 * n, MPI_INT, &st));
  int got = -1;
  MPI_Get_count(&st, MPI_INT, &got);
  TL_EQ(got, 7 * n);
  for (int q = 0; q < n; q++) {
    for (int j = 0; j < 4; j++) TL_EQ(all[4 * q + j], val(c, q, j));
    TL_EQ(all[4 * n + 2 * q], val(c, 100 + q, 0));
    TL_EQ(all[4 * n + 2 * q + 1], val(c, 100 + q, 1));
    TL_EQ(all[6 * n + q], val(c, 200 + q, 0));
  }
  free(all);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 7 * n * 4);
}

static void mixed_calls(int twophase) {
  char *path = tl_path("mixed");
  MPI_Info info = cb_info(twophase);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  for (int c = 0; c < 30 && !tl_case_failed; c++) cycle(fh, c, info);
  TL_SHM(fh->comm, expect_shm());
  TL_OK(lmpio_file_close(&fh));
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  tl_unlink(path);
}

static void test_mixed_independent(void) { mixed_calls(0); }
static void test_mixed_twophase(void) { mixed_calls(1); }

/* A file closed after k syncs, for every k around the attach (the segment
 * made in close's own exchanges, freed right after), some deleting
 * themselves on close; and failed opens, which never reach it. */
static void test_close_at_every_position(void) {
  char *path = tl_path("closek");
  for (int k = 0; k < 24 && !tl_case_failed; k++) {
    lmpio_file fh;
    int am = MPI_MODE_CREATE | MPI_MODE_RDWR | (k % 2 ? MPI_MODE_DELETE_ON_CLOSE : 0);
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, am, MPI_INFO_NULL, &fh));
    int v = k * 10 + tl_rank;
    TL_OK(lmpio_file_write_at_all(fh, 4 * tl_rank, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
    for (int i = 0; i < k; i++) TL_OK(lmpio_file_sync(fh));
    TL_OK(lmpio_file_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    TL_EQ(access(path, F_OK) == 0, k % 2 == 0);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  tl_unlink(path);
  char *none = tl_path("none");
  for (int k = 0; k < 20; k++) {
    lmpio_file fh;
    TL_RC(lmpio_file_open(MPI_COMM_WORLD, none, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    TL_CHECK(fh == LMPIO_FILE_NULL);
  }
  free(none);
}

/* Every rank's message names both calls (rank 0's and the odd rank's). */
static void check_mismatch(int rc, int odd, const char *mine0, const char *theirs) {
  TL_EQ(rc, MPI_ERR_NOT_SAME);
  char want[200];
  snprintf(want, sizeof want, "rank %d %s while rank 0 called %s", odd, theirs, mine0);
  if (!strstr(lmpio_last_error_message(), want)) {
    TL_CHECK(!"the message names both calls");
    fprintf(stderr, "[rank %d] want \"%s\", got: %s\n", tl_rank, want, lmpio_last_error_message());
  }
}

/* After k syncs (k around the attach), ranks enter different calls: the
 * last rank closes while the others write_at_all; then the last rank
 * set_view's while the others sync; then rank 0 closes while the others
 * write_at_all.  Every rank fails with MPI_ERR_NOT_SAME, the handle stays
 * open, and the calls that follow work. */
static void mismatches(int twophase) {
  if (tl_size < 2) return;
  char *path = tl_path("mismatch");
  MPI_Info info = cb_info(twophase);
  int last = tl_size - 1;
  for (int k = 0; k < 22 && !tl_case_failed; k++) {
    lmpio_file fh;
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    for (int i = 0; i < k; i++) TL_OK(lmpio_file_sync(fh));
    int v[2] = {k, tl_rank}, w[2] = {-1, -1};
    int rc = tl_rank == last ? lmpio_file_close(&fh) : lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
    check_mismatch(rc, last, "write_at_all", "called close");
    TL_CHECK(fh != LMPIO_FILE_NULL);
    rc = tl_rank == last ? lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", info) : lmpio_file_sync(fh);
    check_mismatch(rc, last, "sync", "called set_view");
    rc = tl_rank == 0 ? lmpio_file_close(&fh) : lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
    check_mismatch(rc, 1, "close", "called write_at_all");
    TL_CHECK(fh != LMPIO_FILE_NULL);
    rc = tl_rank == 0 ? lmpio_file_sync(fh) : lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", info);
    check_mismatch(rc, 1, "sync", "called set_view");
    /* and the handle works on, through either path */
    TL_OK(lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE));
    int other = (tl_rank + 1) % tl_size;
    TL_OK(lmpio_file_read_at_all(fh, 8 * other, w, 2, MPI_INT, MPI_STATUS_IGNORE));
    TL_EQ(w[0], k);
    TL_EQ(w[1], other);
    if (k >= 12) TL_SHM(fh->comm, expect_shm());
    TL_OK(lmpio_file_close(&fh));
  }
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  tl_unlink(path);
}

static void test_mismatch_independent(void) { mismatches(0); }
static void test_mismatch_twophase(void) { mismatches(1); }

static int fail_errno; /* this rank's pwrite fails with it (0: never) */

static ssize_t failing_pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (fail_errno) {
    errno = fail_errno;
    return -1;
  }
  return lmpio__os_real.pwrite(fd, buf, n, off);
}

/* After k syncs: a write failing on the last rank only (ENOSPC) fails
 * write_at_all on every rank with its class and message (the broadcast
 * after an exchange through the segment); a binding's failure on rank 0
 * in set_size, set_view, write_ordered and close does too; the file works
 * on. */
static void failures(int twophase) {
  char *path = tl_path("fail");
  MPI_Info info = cb_info(twophase);
  int last = tl_size - 1;
  for (int k = 0; k < 22 && !tl_case_failed; k += 3) {
    lmpio_file fh;
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    for (int i = 0; i < k; i++) TL_OK(lmpio_file_sync(fh));
    int v[2] = {k, tl_rank};
    fail_errno = tl_rank == last ? ENOSPC : 0;
    lmpio__os.pwrite = failing_pwrite;
    int rc = lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
    lmpio__os.pwrite = lmpio__os_real.pwrite;
    fail_errno = 0;
    TL_EQ(rc, MPI_ERR_NO_SPACE);
    TL_CHECK(strstr(lmpio_last_error_message(), "MPI_ERR_NO_SPACE") != NULL);
    if (tl_rank == 0) lmpio_fail_next_collective(MPI_ERR_ARG, "bad size on rank 0");
    TL_RC(lmpio_file_set_size(fh, 100), MPI_ERR_ARG);
    TL_CHECK(strstr(lmpio_last_error_message(), "bad size on rank 0") != NULL);
    if (tl_rank == 0) lmpio_fail_next_collective(MPI_ERR_TYPE, "bad etype on rank 0");
    TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", info), MPI_ERR_TYPE);
    TL_CHECK(strstr(lmpio_last_error_message(), "bad etype on rank 0") != NULL);
    if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_COUNT, "bad count on the last rank");
    TL_RC(lmpio_file_write_ordered(fh, v, 2, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
    TL_CHECK(strstr(lmpio_last_error_message(), "bad count on the last rank") != NULL);
    if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_ARG, "bad close");
    TL_RC(lmpio_file_close(&fh), MPI_ERR_ARG);
    TL_CHECK(fh != LMPIO_FILE_NULL);
    TL_OK(lmpio_file_set_size(fh, 0));
    TL_OK(lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE));
    MPI_Offset size = -1;
    TL_OK(lmpio_file_get_size(fh, &size));
    TL_EQ(size, 8 * tl_size);
    TL_OK(lmpio_file_close(&fh));
  }
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  tl_unlink(path);
}

static void test_failures_independent(void) { failures(0); }
static void test_failures_twophase(void) { failures(1); }

/* Four files at once (two on MPI_COMM_WORLD, one on it with the ranks
 * reversed, one on half of the ranks), each crossing its own attach at its
 * own time, calls interleaved; a short-lived file opened and closed now and
 * then between them; nonblocking and split collectives among them (their
 * worker's communicator has no segment).  Contents checked at the end. */
static void test_several_files(void) {
  MPI_Comm rev, half;
  MPI_Comm_split(MPI_COMM_WORLD, 0, tl_size - tl_rank, &rev);
  MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &half);
  int rrank, hrank, hsize;
  MPI_Comm_rank(rev, &rrank);
  MPI_Comm_rank(half, &hrank);
  MPI_Comm_size(half, &hsize);
  MPI_Comm comms[4] = {MPI_COMM_WORLD, MPI_COMM_WORLD, rev, half};
  int ranks[4] = {tl_rank, tl_rank, rrank, hrank};
  char *paths[4], *tmp = tl_path("short");
  lmpio_file fh[4];
  for (int f = 0; f < 4; f++) {
    char tag[32]; /* (gcc -O1 cannot bound %d to one digit) */
    snprintf(tag, sizeof tag, "file%d%s", f, f == 3 ? (tl_rank % 2 ? "o" : "e") : "");
    paths[f] = tl_path(tag);
    MPI_Info info = cb_info(f == 1);
    TL_OK(lmpio_file_open(comms[f], paths[f], MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh[f]));
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  }
  const int rounds = 40;
  for (int i = 0; i < rounds && !tl_case_failed; i++) {
    for (int f = 0; f < 4; f++) {
      int f2 = (f + i) % 4; /* a different order every round, the same on every rank */
      int v = i * 1000 + f2 * 100 + ranks[f2];
      MPI_Offset at = (MPI_Offset)(i * tl_size + ranks[f2]) * 4;
      MPI_Request req;
      switch ((i + f2) % 4) {
      case 0: TL_OK(lmpio_file_write_at_all(fh[f2], at, &v, 1, MPI_INT, MPI_STATUS_IGNORE)); break;
      case 1:
        TL_OK(lmpio_file_iwrite_at_all(fh[f2], at, &v, 1, MPI_INT, &req));
        TL_OK(lmpio_file_sync(fh[f2])); /* (waits for it) */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
      case 2:
        TL_OK(lmpio_file_write_at_all_begin(fh[f2], at, &v, 1, MPI_INT));
        TL_OK(lmpio_file_write_at_all_end(fh[f2], &v, MPI_STATUS_IGNORE));
        break;
      default:
        TL_OK(lmpio_file_seek_shared(fh[f2], 0, MPI_SEEK_SET));
        TL_OK(lmpio_file_write_at_all(fh[f2], at, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
      }
    }
    if (i % 7 == 3) {
      lmpio_file t;
      TL_OK(lmpio_file_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &t));
      TL_OK(lmpio_file_write_at_all(t, 4 * tl_rank, &i, 1, MPI_INT, MPI_STATUS_IGNORE));
      TL_OK(lmpio_file_close(&t));
    }
  }
  for (int f = 0; f < 4; f++) {
    int n = f == 3 ? hsize : tl_size;
    int *all = malloc(sizeof(int) * (size_t)(rounds * tl_size));
    TL_OK(lmpio_file_read_at_all(fh[f], 0, all, rounds * tl_size, MPI_INT, MPI_STATUS_IGNORE));
    for (int i = 0; i < rounds && !tl_case_failed; i++)
      for (int q = 0; q < n; q++) TL_EQ(all[i * tl_size + q], i * 1000 + f * 100 + q);
    free(all);
    int size = 0;
    MPI_Comm_size(comms[f], &size);
    TL_SHM(fh[f]->comm, expect_shm() && size > 1);
  }
  for (int f = 3; f >= 0; f--) { /* closed in another order than opened */
    TL_OK(lmpio_file_close(&fh[f]));
    MPI_Barrier(comms[f]);
    if (ranks[f] == 0) unlink(paths[f]);
    free(paths[f]);
  }
  free(tmp);
  MPI_Comm_free(&rev);
  MPI_Comm_free(&half);
}

/* The exchange itself, on a communicator of its own: thousands of
 * exchanges of every length from 1 to 100 longs (above 64, MPI's), all
 * gathers or maxima, with one rank or another late now and then so the
 * others run an exchange ahead: every record is the one of its exchange. */
static void test_exchange_under_skew(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  TL_OK(lmpio__exchange_attach(comm));
  int n = tl_size;
  long long mine[100], *all = malloc(sizeof(long long) * 100 * (size_t)n), max[100];
  unsigned seed = 12345; /* the same sequence on every rank */
  for (int it = 0; it < 3000 && !tl_case_failed; it++) {
    seed = seed * 1103515245u + 12345u;
    int len = 1 + (int)((seed >> 8) % 100), kind = (int)((seed >> 20) & 1);
    int late = (int)((seed >> 4) % (unsigned)(4 * n));
    if (late == tl_rank) /* a rank late by a few microseconds to a millisecond */
      usleep((seed >> 12) % 3 ? 2 : 1000);
    for (int i = 0; i < len; i++) mine[i] = (long long)it * 1000000 + tl_rank * 1000 + i;
    if (kind) {
      TL_OK(lmpio__exchange(comm, mine, len, all));
      for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) TL_EQ(all[q * len + i], (long long)it * 1000000 + q * 1000 + i);
    } else {
      TL_OK(lmpio__exchange_max(comm, mine, len, max));
      for (int i = 0; i < len; i++) TL_EQ(max[i], (long long)it * 1000000 + (n - 1) * 1000 + i);
    }
  }
  TL_EQ(lmpio__exchange_shared(comm), tl_size > 1 && !shm_off && windows);
  /* (a stamp and 7 values share a line only if the records start on one:
   * Open MPI's shared windows start 8 bytes past one, seen) */
  TL_EQ((unsigned long)(uintptr_t)lmpio__exchange_records(comm) % 64, 0);
  lmpio__exchange_detach(comm);
  TL_EQ(lmpio__exchange_shared(comm), 0);
  free(all);
  MPI_Comm_free(&comm);
}

/* A record's trailing zeros are not sent through the segment (its stamp
 * says how many values came): records whose last values are zero, as many
 * as a rank likes (a different cut on every rank, the whole record now and
 * then), each after longer records in the same buffer, read back with
 * zeros where the zeros were and not the values of an exchange before;
 * gathers and maxima, with one rank late now and then. */
static void test_exchange_trailing_zeros(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  TL_OK(lmpio__exchange_attach(comm));
  int n = tl_size;
  long long mine[70], *all = malloc(sizeof(long long) * 70 * (size_t)n), max[70];
  unsigned seed = 777; /* the same sequence on every rank */
  for (int it = 0; it < 3000 && !tl_case_failed; it++) {
    seed = seed * 1103515245u + 12345u;
    int len = 1 + (int)((seed >> 8) % 70), kind = (int)((seed >> 20) & 1);
    if ((int)((seed >> 4) % (unsigned)(8 * n)) == tl_rank) usleep(2);
    /* rank q sends its first cut(q) values, the rest zeros */
#define CUT(q) ((int)(((seed >> 12) + 7u * (unsigned)(q)) % (unsigned)(len + 1)))
#define VAL(q, i) ((i) < CUT(q) ? (long long)it * 1000000 + (q) * 1000 + (i) + 1 : 0)
    for (int i = 0; i < len; i++) mine[i] = VAL(tl_rank, i);
    if (kind) {
      TL_OK(lmpio__exchange(comm, mine, len, all));
      for (int q = 0; q < n; q++)
        for (int i = 0; i < len; i++) TL_EQ(all[q * len + i], VAL(q, i));
    } else {
      TL_OK(lmpio__exchange_max(comm, mine, len, max));
      for (int i = 0; i < len; i++) {
        long long want = 0;
        for (int q = 0; q < n; q++)
          if (VAL(q, i) > want) want = VAL(q, i);
        TL_EQ(max[i], want);
      }
    }
#undef VAL
#undef CUT
  }
  TL_EQ(lmpio__exchange_shared(comm), tl_size > 1 && !shm_off && windows);
  lmpio__exchange_detach(comm);
  free(all);
  MPI_Comm_free(&comm);
}

/* Many small collective calls with more ranks than processors: at 4 ranks,
 * two files of 2 ranks each, on 2 processors (each file's ranks on both),
 * one int per write_all and read_all.  Each file's communicator has no more ranks
 * than processors, and a waiting rank used to spin up to 2^20 turns on
 * that count alone, while the rank it waited for had no processor:
 * 1.5-10 ms a call (mpi-test-suite's io_with_hole2 ran past 600 s).  A
 * waiting rank now gives its processor away whatever its communicator:
 * about 10 us a call here (bench/small_calls_bench.c measures it).  The
 * bound is generous, not a timing: 20000 calls in 40 s (they took 60-200 s
 * before, under 1 s after; an alarm ends a run past it). */
static void test_many_small_calls(void) {
  if (tl_size != 4 || expect_shm() <= 0) return;
  cpu_set_t old, two;
  TL_CHECK(sched_getaffinity(0, sizeof old, &old) == 0);
  int cpus[2] = {-1, -1}, k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
    if (CPU_ISSET(c, &old)) cpus[k++] = c;
  MPI_Allreduce(MPI_IN_PLACE, cpus, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD); /* (the same two on every rank) */
  CPU_ZERO(&two);
  for (int i = 0; i < 2; i++)
    if (cpus[i] >= 0) CPU_SET(cpus[i], &two);
  sched_setaffinity(0, sizeof two, &two); /* (where it is refused, the machine's own processors) */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, tl_rank / 2, tl_rank, &half);
  char *path = tl_path(tl_rank < 2 ? "smallA" : "smallB");
  lmpio_file fh;
  TL_OK(lmpio_file_open(half, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, (tl_rank % 2) * (MPI_Offset)sizeof(int), MPI_INT, ft, "native", MPI_INFO_NULL));
  alarm(40);
  int wrong = 0;
  for (int i = 0; i < 10000 && !tl_case_failed; i++) {
    /* Once the segment is made (at 2 processors for 2 ranks a file), the
     * machine's load changes: a file's two ranks now share one processor
     * (as the scheduler may place them at any time). */
    if (i == 40 && cpus[1] >= 0) {
      CPU_ZERO(&two);
      CPU_SET(cpus[tl_rank / 2], &two);
      sched_setaffinity(0, sizeof two, &two);
    }
    int v = i * 4 + tl_rank, w = -1;
    TL_OK(lmpio_file_write_all(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
    TL_OK(lmpio_file_seek(fh, -1, MPI_SEEK_CUR));
    TL_OK(lmpio_file_read_all(fh, &w, 1, MPI_INT, MPI_STATUS_IGNORE));
    wrong += w != v;
  }
  alarm(0);
  TL_EQ(wrong, 0);
  TL_CHECK(lmpio__exchange_shared(fh->comm));
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&ft);
  MPI_Comm_free(&half);
  tl_unlink(path);
  sched_setaffinity(0, sizeof old, &old);
}

/* How long a wait spins depends on the processors the ranks have: those
 * online, within a container's quota (cgroup cpu.max, or v1's cfs quota),
 * read from a made-up cgroup tree here. */
/* Writes text into file rel of the made-up tree top; p: the path written. */
static void put(char *p, size_t n, const char *top, const char *rel, const char *text) {
  snprintf(p, n, "%s%s", top, rel);
  FILE *f = fopen(p, "w");
  TL_CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void test_processors(void) {
  TL_EQ(lmpio__os_quota_cpus("max 100000\n"), 0);
  TL_EQ(lmpio__os_quota_cpus("200000 100000\n"), 2);
  TL_EQ(lmpio__os_quota_cpus("150000 100000"), 2);
  TL_EQ(lmpio__os_quota_cpus("50000 100000"), 1);
  TL_EQ(lmpio__os_quota_cpus("-1 100000"), 0); /* (cgroup v1: no quota) */
  TL_EQ(lmpio__os_quota_cpus(""), 0);
  TL_EQ(lmpio__os_quota_cpus("12 0"), 0);
  char top[256], p[512];
  snprintf(top, sizeof top, "/tmp/lmpio-cgroup-%d-%d", (int)getpid(), tl_rank);
  const char *dirs[] = {"", "/a", "/a/b", "/cpu", "/cpu/job", "/cpu/job/step"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(p, sizeof p, "%s%s", top, dirs[i]);
    mkdir(p, 0700);
  }
  /* v2: the parent's 2 processors bind the child without a limit */
  put(p, sizeof p, top, "/a/cpu.max", "200000 100000\n");
  put(p, sizeof p, top, "/a/b/cpu.max", "max 100000\n");
  put(p, sizeof p, top, "/self", "0::/a/b\n");
  TL_EQ(lmpio__os_cgroup_cpus(p, top), 2);
  put(p, sizeof p, top, "/self", "0::/\n");
  TL_EQ(lmpio__os_cgroup_cpus(p, top), 0);
  /* v1: the cpu controller's quota (3.5 processors: 4), other lines skipped */
  put(p, sizeof p, top, "/cpu/job/step/cpu.cfs_quota_us", "350000\n");
  put(p, sizeof p, top, "/cpu/job/step/cpu.cfs_period_us", "100000\n");
  put(p, sizeof p, top, "/self", "4:memory:/job\n3:cpu,cpuacct:/job/step\n0::/\n");
  TL_EQ(lmpio__os_cgroup_cpus(p, top), 4);
  TL_EQ(lmpio__os_cgroup_cpus("/nonexistent/cgroup", top), 0);
  long n = lmpio__os_processors();
  TL_CHECK(n >= 1 && n <= sysconf(_SC_NPROCESSORS_ONLN));
  TL_EQ(lmpio__os_spin_turns((int)n + 1) < lmpio__os_spin_turns((int)n), 1);
  /* ranks that mpirun bound to a core each (an affinity of one) still have
   * a processor each: the long spin */
  long q = lmpio__os_cgroup_cpus("/proc/self/cgroup", "/sys/fs/cgroup");
  int own = tl_size <= sysconf(_SC_NPROCESSORS_ONLN) && (q == 0 || tl_size <= q);
  TL_EQ(lmpio__os_spin_turns(tl_size) == lmpio__os_spin_turns(1), own);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", top);
  TL_EQ(system(cmd), 0);
}

/* The turns of a wait (lmpio__os_wait_round): pauses, then yields, then a
 * sleep; and the yields after the exchange's pauses: none where each rank
 * has a processor and no rank awaited runs on this one (a yield there
 * hands the processor to another program: beside busy ones, for a time
 * slice). */
static unsigned turns_before_sleep(unsigned pauses, unsigned yields) {
  unsigned round = 0, turns = 0;
  while (!lmpio__os_wait_round(&round, pauses, yields) && turns < 1000) turns++;
  TL_EQ(lmpio__os_wait_round(&round, pauses, yields), 1); /* (and sleeps from then on) */
  return turns;
}

static void test_wait_yields(void) {
  TL_EQ(turns_before_sleep(4, 0), 4);
  TL_EQ(turns_before_sleep(4, 3), 7);
  TL_EQ(turns_before_sleep(0, LMPIO__OS_YIELDS), LMPIO__OS_YIELDS);
  long n = lmpio__os_processors();
  unsigned own = lmpio__os_spin_turns((int)n), shared = lmpio__os_spin_turns((int)n + 1);
  TL_EQ(lmpio__os_wait_yields(own, 0), 0);
  TL_EQ(lmpio__os_wait_yields(own, 1), LMPIO__OS_YIELDS);
  TL_EQ(lmpio__os_wait_yields(shared, 0), LMPIO__OS_YIELDS);
  TL_EQ(lmpio__os_wait_yields(shared, 1), LMPIO__OS_YIELDS);
  int cpu = lmpio__os_cpu();
  TL_CHECK(cpu >= -1 && cpu < sysconf(_SC_NPROCESSORS_CONF));
}

/* Pausing only while every rank awaited may be running on another
 * processor: with more ranks than processors the others are not. */
static void test_pausing_helps(void) {
  TL_EQ(lmpio__os_pausing_helps(1, 2), 1); /* 2 ranks on 2 processors, or the last of more */
  TL_EQ(lmpio__os_pausing_helps(2, 2), 0);
  TL_EQ(lmpio__os_pausing_helps(15, 2), 0); /* the first of 16 ranks on 2 */
  TL_EQ(lmpio__os_pausing_helps(7, 8), 1);
  TL_EQ(lmpio__os_pausing_helps(8, 8), 0);
  TL_EQ(lmpio__os_pausing_helps(63, 0), 1); /* processors not known: as before */
  long n = lmpio__os_processors();
  TL_EQ(lmpio__os_pausing_helps((int)n - 1, n), 1); /* ranks no more than processors: always */
}

/* ---- handles reused, ranks stopped, threads --------------------------------- */

/* Whether a communicator of this test's own, attached, has its segment
 * after 16 exchanges (not a file's: the reduced first agreement does not
 * matter here). */
static int segment_expected(void) { return tl_size > 1 && !shm_off && windows; }

static void exchange_checked(MPI_Comm comm, long long tag, int len) {
  long long mine[16], all[16 * 64];
  for (int i = 0; i < len; i++) mine[i] = tag * 1000 + tl_rank * 16 + i;
  TL_OK(lmpio__exchange(comm, mine, len, all));
  for (int q = 0; q < tl_size; q++)
    for (int i = 0; i < len; i++) TL_EQ(all[q * len + i], tag * 1000 + q * 16 + i);
}

static int threads; /* MPI_THREAD_MULTIPLE */

/* comms[0] detached and freed, then comms[1] made (in one thread, whose
 * memory the next communicator is likely made from). */
static void *detach_free_dup(void *arg) {
  MPI_Comm *comms = arg;
  lmpio__exchange_detach(comms[0]);
  MPI_Comm_free(&comms[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  return NULL;
}

/* MPI hands the handle of a freed communicator to the next one made (Open
 * MPI does): a thread's last segment (exchange.c) must not outlive its
 * communicator.  A segment made and used, detached and its communicator
 * freed (by this thread, or by another one); the next communicator, at the same handle or not, has none until
 * attached, and its exchanges are right either way. */
static void test_freed_handle_reused(void) {
  int same = 0;
  for (int round = 0; round < 6 && !tl_case_failed; round++) {
    MPI_Comm comms[2], c, d;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    TL_OK(lmpio__exchange_attach(c));
    for (int it = 0; it < 20; it++) exchange_checked(c, round * 100 + it, 1 + it % 16);
    TL_EQ(lmpio__exchange_shared(c), segment_expected());
    MPI_Comm was = c;
    comms[0] = c;
    if (threads && round % 2) { /* by another thread: this one's last segment still names it */
      pthread_t t;
      pthread_create(&t, NULL, detach_free_dup, comms);
      pthread_join(t, NULL);
    } else {
      detach_free_dup(comms);
    }
    d = comms[1];
    same += d == was;
    TL_EQ(lmpio__exchange_shared(d), 0);
    TL_CHECK(lmpio__exchange_records(d) == NULL);
    for (int it = 0; it < 20; it++) exchange_checked(d, round * 100 + 50 + it, 1 + it % 16);
    if (round % 2) { /* and attached in turn: a segment of its own */
      TL_OK(lmpio__exchange_attach(d));
      for (int it = 0; it < 20; it++) exchange_checked(d, round * 100 + 70 + it, 1 + it % 16);
      TL_EQ(lmpio__exchange_shared(d), segment_expected());
      lmpio__exchange_detach(d);
    }
    MPI_Comm_free(&d);
  }
  if (tl_rank == 0 && same < 6) printf("# %d of 6 freed handles were reused here\n", same);
}

/* A child that stops this rank (SIGSTOP) at whatever point it has reached,
 * and lets it go on ms milliseconds later. */
static pid_t stop_me(int ms) {
  pid_t me = getpid(), c = fork();
  if (c == 0) { /* (only calls safe in the child of a threaded process) */
    struct timespec t = {0, (long)ms * 1000000L};
    kill(me, SIGSTOP);
    nanosleep(&t, NULL);
    kill(me, SIGCONT);
    _exit(0);
  }
  return c;
}

/* Ranks stopped for 20-50 ms now and then, each in turn, wherever they
 * are (publishing, waiting, asleep): the others wait (through every stage
 * of the wait) and every record is that of its exchange. */
static void test_stopped_ranks(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  TL_OK(lmpio__exchange_attach(comm));
  long long mine[20], max[20];
  pid_t kids[32];
  int nk = 0;
  alarm(60); /* (a hang ends the run) */
  for (int it = 0; it < 400 && !tl_case_failed; it++) {
    if (it % 37 == 20 && (it / 37) % tl_size == tl_rank && nk < 32) kids[nk++] = stop_me(20 + (it % 3) * 15);
    int len = 1 + it % 16;
    if (it % 2) {
      exchange_checked(comm, it, len);
    } else {
      for (int i = 0; i < len; i++) mine[i] = (long long)it * 1000 + tl_rank * 16 + i;
      TL_OK(lmpio__exchange_max(comm, mine, len, max));
      for (int i = 0; i < len; i++) TL_EQ(max[i], (long long)it * 1000 + (tl_size - 1) * 16 + i);
    }
  }
  alarm(0);
  for (int k = 0; k < nk; k++) TL_EQ(waitpid(kids[k], NULL, 0), kids[k]);
  TL_EQ(lmpio__exchange_shared(comm), segment_expected());
  lmpio__exchange_detach(comm);
  MPI_Comm_free(&comm);
}

/* Two threads, each on a communicator of its own (MPI_THREAD_MULTIPLE):
 * each makes segments, uses them, detaches them (which voids every
 * thread's last segment) and frees their communicators while the other
 * goes on; then each opens, uses and closes files on its own, its
 * communicator freed and made again between. */
typedef struct {
  MPI_Comm comm;
  char *path;
  int id, failed;
} thread_job;

static void *thread_exchanges(void *arg) {
  thread_job *j = arg;
  long long mine[8], all[8 * 64];
  for (int round = 0; round < 8; round++) {
    MPI_Comm c;
    MPI_Comm_dup(j->comm, &c);
    lmpio__exchange_attach(c);
    for (int it = 0; it < 40; it++) {
      long long tag = (j->id * 100 + round) * 100 + it;
      for (int i = 0; i < 8; i++) mine[i] = tag * 1000 + tl_rank * 8 + i;
      if (lmpio__exchange(c, mine, 8, all) != MPI_SUCCESS) j->failed = 1;
      for (int q = 0; q < tl_size; q++)
        for (int i = 0; i < 8; i++) j->failed |= (all[q * 8 + i] != tag * 1000 + q * 8 + i) << 1;
    }
    j->failed |= (lmpio__exchange_shared(c) != segment_expected()) << 2;
    lmpio__exchange_detach(c);
    j->failed |= (lmpio__exchange_shared(c) != 0) << 3;
    MPI_Comm_free(&c);
  }
  return NULL;
}

static void *thread_files(void *arg) {
  thread_job *j = arg;
  int me = tl_rank, n = tl_size, other = (me + 1) % n;
  for (int round = 0; round < 4; round++) {
    lmpio_file fh;
    if (lmpio_file_open(j->comm, j->path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
      j->failed |= 16;
      return NULL;
    }
    for (int it = 0; it < 24; it++) {
      int v = (j->id * 10 + round) * 1000 + it * 10 + me, w = -1;
      j->failed |= (lmpio_file_write_at_all(fh, 4 * me, &v, 1, MPI_INT, MPI_STATUS_IGNORE) != MPI_SUCCESS) << 5;
      j->failed |= (lmpio_file_sync(fh) != MPI_SUCCESS) << 5;
      j->failed |= (lmpio_file_read_at_all(fh, 4 * other, &w, 1, MPI_INT, MPI_STATUS_IGNORE) != MPI_SUCCESS) << 5;
      j->failed |= (w != (j->id * 10 + round) * 1000 + it * 10 + other) << 6;
      j->failed |= (lmpio_file_sync(fh) != MPI_SUCCESS) << 5;
    }
    j->failed |= (lmpio_file_close(&fh) != MPI_SUCCESS) << 7;
    if (round % 2) { /* the caller's communicator (and the duplicate kept on it) freed, another made */
      MPI_Comm c;
      MPI_Comm_dup(j->comm, &c);
      MPI_Comm_free(&j->comm);
      j->comm = c;
    }
  }
  return NULL;
}

static void test_two_threads(void) {
  if (!threads) {
    if (tl_rank == 0) printf("# skipped: MPI_THREAD_MULTIPLE not provided\n");
    return;
  }
  void *(*bodies[2])(void *) = {thread_exchanges, thread_files};
  for (int b = 0; b < 2; b++) {
    thread_job j[2];
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
      MPI_Comm_dup(MPI_COMM_WORLD, &j[k].comm);
      j[k].id = k;
      j[k].failed = 0;
      j[k].path = tl_path(k ? "threadB" : "threadA");
    }
    for (int k = 0; k < 2; k++) pthread_create(&t[k], NULL, bodies[b], &j[k]);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    for (int k = 0; k < 2; k++) {
      TL_EQ(j[k].failed, 0);
      MPI_Comm_free(&j[k].comm);
      tl_unlink(j[k].path);
    }
  }
}

int main(int argc, char **argv) {
  setenv("LMPIO_SHM_AGREEMENT_AT", "16", 1); /* the attach inside this test's sequences */
  int provided = 0;
  (void)tl_init; /* MPI_Init: one case needs threads */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &tl_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tl_size);
  threads = provided == MPI_THREAD_MULTIPLE;
  const char *env = getenv("LMPIO_SHM_AGREEMENT");
  int off = env && strcmp(env, "0") == 0;
  MPI_Allreduce(&off, &shm_off, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  probe_windows();
  tl_run("exchange: a wait's spin follows the processors the ranks may use (online, cgroup quota)", test_processors);
  tl_run("exchange: a wait yields its processor only where a rank awaited runs, then sleeps", test_wait_yields);
  tl_run("exchange: a wait pauses only while the ranks awaited may all be running", test_pausing_helps);
  tl_run("exchange: records of every length under skew, each of its own exchange", test_exchange_under_skew);
  tl_run("exchange: records ending in zeros, a different number on every rank, read back as zeros",
         test_exchange_trailing_zeros);
  tl_run("exchange: 300 mixed collective calls across the attach, results checked (independent)",
         test_mixed_independent);
  tl_run("exchange: 300 mixed collective calls across the attach, results checked (two-phase)", test_mixed_twophase);
  tl_run("exchange: close and delete-on-close at every position around the attach; failed opens",
         test_close_at_every_position);
  tl_run("exchange: ranks in different calls fail with MPI_ERR_NOT_SAME around the attach (independent)",
         test_mismatch_independent);
  tl_run("exchange: ranks in different calls fail with MPI_ERR_NOT_SAME around the attach (two-phase)",
         test_mismatch_twophase);
  tl_run("exchange: one rank's failure reaches every rank around the attach (independent)", test_failures_independent);
  tl_run("exchange: one rank's failure reaches every rank around the attach (two-phase)", test_failures_twophase);
  tl_run("exchange: several files with their own segments, calls interleaved", test_several_files);
  tl_run("exchange: many small calls, 4 ranks in two files on 2 processors, in a generous bound", test_many_small_calls);
  tl_run("exchange: a communicator freed and the next made at its handle: no stale segment", test_freed_handle_reused);
  tl_run("exchange: ranks stopped (SIGSTOP) for a while anywhere in their exchanges", test_stopped_ranks);
  tl_run("exchange: two threads, segments and files of their own, made, used and freed at once", test_two_threads);
  return tl_finish();
}
