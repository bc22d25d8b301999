/* The agreement of collective calls: when ranks fail with different
 * classes, every rank returns the class of the lowest failing rank and a
 * message that names that class (ENOSPC on one rank, EIO on another must not
 * give a rank one class and a message naming the other). */
#include "testlib.h"
#include "internals.h"

#include <errno.h>
#include <limits.h>

static int fail_errno; /* this rank's pwrite fails with it (0: never) */

static ssize_t failing_pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (fail_errno) {
    errno = fail_errno;
    return -1;
  }
  return lmpio__os_real.pwrite(fd, buf, n, off);
}

static void check_consistent(int rc) {
  int lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  TL_EQ(lo, hi);
  TL_CHECK(rc != MPI_SUCCESS);
  const char *m = lmpio_last_error_message();
  TL_CHECK(strstr(m, lmpio_error_class_name(rc)) != NULL);
  if (tl_case_failed) fprintf(stderr, "[rank %d] returned %s, message: %s\n", tl_rank, lmpio_error_class_name(rc), m);
}

static void test_different_classes(void) {
  char *path = tl_path("agree");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int v[4] = {1, 2, 3, 4};
  /* rank 0 runs out of space, rank 1 meets an I/O error, others succeed;
   * then the other way round */
  for (int round = 0; round < 2; round++) {
    fail_errno = tl_rank == 0 ? (round ? EIO : ENOSPC) : tl_rank == 1 ? (round ? ENOSPC : EIO) : 0;
    lmpio__os.pwrite = failing_pwrite;
    int rc = lmpio_file_write_at_all(fh, 16 * tl_rank, v, 4, MPI_INT, MPI_STATUS_IGNORE);
    lmpio__os.pwrite = lmpio__os_real.pwrite;
    check_consistent(rc);
    TL_EQ(rc, round ? MPI_ERR_IO : MPI_ERR_NO_SPACE); /* rank 0's class */
    /* the same through sync: every rank calls fsync */
  }
  fail_errno = 0;
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* A mismatch of an argument that must match names the argument. */
static void test_not_same_names_argument(void) {
  if (tl_size < 2) return;
  char *path = tl_path("notsame");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_RC(lmpio_file_set_size(fh, tl_rank == 1 ? 10 : 20), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "sizes") != NULL);
  TL_RC(lmpio_file_set_atomicity(fh, tl_rank == 1), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "atomicity") != NULL);
  TL_RC(lmpio_file_set_view(fh, 0, tl_rank == 1 ? MPI_INT : MPI_DOUBLE, tl_rank == 1 ? MPI_INT : MPI_DOUBLE,
                            "native", MPI_INFO_NULL), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different etypes") != NULL);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, tl_rank == 1 ? "native" : "external32", MPI_INFO_NULL),
        MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different data representations") != NULL);
  /* a hint that must match is named by its key */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_nodes", tl_rank == 1 ? "1" : "2");
  TL_RC(lmpio_file_set_info(fh, info), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different values of the hint cb_nodes") != NULL);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", info), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different values of the hint cb_nodes") != NULL);
  MPI_Info_free(&info);
  TL_RC(lmpio_file_seek_shared(fh, tl_rank == 1 ? 1 : 2, MPI_SEEK_SET), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different offsets") != NULL);
  TL_RC(lmpio_file_seek_shared(fh, 0, tl_rank == 1 ? MPI_SEEK_SET : MPI_SEEK_CUR), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different whence values") != NULL);
  TL_OK(lmpio_file_close(&fh));
  lmpio_file_delete(path, MPI_INFO_NULL);
  int am = tl_rank == 1 ? MPI_MODE_CREATE | MPI_MODE_RDWR : MPI_MODE_CREATE | MPI_MODE_WRONLY;
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, am, MPI_INFO_NULL, &fh), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different access modes") != NULL);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, tl_rank == 1 ? path : "/tmp/other-name", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
        MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "different file names") != NULL);
  tl_unlink(path);
}

/* Seeking the shared pointer past 2^63 is an argument error on every rank,
 * not a signed overflow. */
static void test_seek_shared_overflow(void) {
  char *path = tl_path("seekover");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_seek_shared(fh, 10, MPI_SEEK_SET));
  TL_RC(lmpio_file_seek_shared(fh, LLONG_MAX, MPI_SEEK_CUR), MPI_ERR_ARG);
  TL_CHECK(strstr(lmpio_last_error_message(), "overflows") != NULL);
  TL_RC(lmpio_file_seek_shared(fh, LLONG_MAX - 2, MPI_SEEK_CUR), MPI_ERR_ARG);
  MPI_Offset at = -1;
  TL_OK(lmpio_file_get_position_shared(fh, &at));
  TL_EQ(at, 10);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Whether the ranks pretend to be on more than one node (LMPIO_TEST_NODES,
 * nodes.c): then a write agrees on the arguments before any data moves. */
static int apart(void) {
  const char *n = getenv("LMPIO_TEST_NODES");
  if (!n || !strchr(n, ',')) return 0;
  size_t first = strcspn(n, ",");
  for (const char *p = n; *p;) {
    size_t len = strcspn(p, ",");
    if (len != first || strncmp(p, n, len) != 0) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

/* A binding's argument error on one rank fails the collective everywhere
 * (lmpio_fail_next_collective), only once; that rank writes nothing (the
 * others, each moving its own data on one node, have written theirs;
 * across nodes nobody has). */
static void test_fail_next_collective(void) {
  char *path = tl_path("pending");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int v[2] = {7, 8};
  int last = tl_size - 1;
  if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_COUNT, "bad argument #3 to 'write_at_all'");
  int rc = lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
  TL_EQ(rc, MPI_ERR_COUNT);
  TL_CHECK(strstr(lmpio_last_error_message(), "bad argument #3") != NULL);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, apart() ? 0 : 8 * (tl_size - 1));
  /* every kind of collective takes it */
  if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_ARG, "bad offset");
  TL_RC(lmpio_file_set_size(fh, 100), MPI_ERR_ARG);
  if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_TYPE, "bad etype");
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_ARG, "bad table");
  TL_RC(lmpio_file_write_ordered(fh, v, 2, MPI_INT, MPI_STATUS_IGNORE), MPI_ERR_ARG);
  if (tl_rank == last) lmpio_fail_next_collective(MPI_ERR_ARG, "bad close");
  TL_RC(lmpio_file_close(&fh), MPI_ERR_ARG);
  TL_CHECK(fh != LMPIO_FILE_NULL); /* still open on every rank */
  TL_OK(lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 8 * tl_size);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Ranks that enter different collective calls on one file: every rank
 * fails with MPI_ERR_NOT_SAME and a message naming both calls and ranks,
 * instead of a hang (or a truncation error) when the calls' first
 * exchanges do not match; the handle works on afterwards.  Hung before. */
enum { K_WRITE_AT_ALL, K_READ_AT_ALL, K_WRITE_ALL, K_WRITE_ORDERED, K_SET_VIEW, K_SYNC, K_SEEK_SHARED, K_SET_SIZE,
       K_SET_ATOMICITY, K_SET_INFO, K_RECORDS, K_CLOSE, K_N };
static const char *const kname[K_N] = {"write_at_all", "read_at_all", "write_all", "write_ordered", "set_view",
                                       "sync", "seek_shared", "set_size", "set_atomicity", "set_info",
                                       "read_records_ordered", "close"};

static int call_kind(lmpio_file *fh, int k) {
  int v[2] = {1, 2};
  char *rec = NULL;
  MPI_Count len;
  int more, rc;
  switch (k) {
  case K_WRITE_AT_ALL: return lmpio_file_write_at_all(*fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
  case K_READ_AT_ALL: return lmpio_file_read_at_all(*fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE);
  case K_WRITE_ALL: return lmpio_file_write_all(*fh, v, 2, MPI_INT, MPI_STATUS_IGNORE);
  case K_WRITE_ORDERED: return lmpio_file_write_ordered(*fh, v, 2, MPI_INT, MPI_STATUS_IGNORE);
  case K_SET_VIEW: return lmpio_file_set_view(*fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  case K_SYNC: return lmpio_file_sync(*fh);
  case K_SEEK_SHARED: return lmpio_file_seek_shared(*fh, 0, MPI_SEEK_SET);
  case K_SET_SIZE: return lmpio_file_set_size(*fh, 0);
  case K_SET_ATOMICITY: return lmpio_file_set_atomicity(*fh, 0);
  case K_SET_INFO: return lmpio_file_set_info(*fh, MPI_INFO_NULL);
  case K_RECORDS:
    rc = lmpio_file_read_records_ordered(*fh, '\n', 10, &rec, &len, &more);
    free(rec);
    return rc;
  default: return lmpio_file_close(fh);
  }
}

static void test_different_calls(void) {
  if (tl_size < 2) return;
  char *path = tl_path("calls");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int last = tl_size - 1;
  /* every pair of kinds: the last rank calls b, the others a (write_all
   * and write_at_all are one call: test_position_forms) */
  for (int a = 0; a < K_N; a++)
    for (int b = 0; b < K_N; b++) {
      if (a == b || (a == K_WRITE_AT_ALL && b == K_WRITE_ALL) || (a == K_WRITE_ALL && b == K_WRITE_AT_ALL)) continue;
      int rc = call_kind(&fh, tl_rank == last ? b : a);
      TL_EQ(rc, MPI_ERR_NOT_SAME);
      char want[200];
      snprintf(want, sizeof want, "rank %d called %s while rank 0 called %s", last, kname[b], kname[a]);
      const char *m = lmpio_last_error_message();
      if (!strstr(m, want)) {
        TL_CHECK(!"the message names both calls and ranks");
        fprintf(stderr, "[rank %d] %s / %s: %s\n", tl_rank, kname[a], kname[b], m);
      }
      TL_CHECK(fh != LMPIO_FILE_NULL); /* a close that failed keeps the handle */
      if (tl_case_failed) break;
    }
  /* then the same calls work */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  int v[2] = {5, 6}, w[2] = {0, 0};
  TL_OK(lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at_all(fh, 8 * tl_rank, w, 2, MPI_INT, MPI_STATUS_IGNORE));
  TL_CHECK(w[0] == 5 && w[1] == 6);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Collective calls that differ only in how a rank finds its position are
 * one call: a rank with nothing to do joins with write_all(NULL, 0) while
 * the others call write_at_all, as PnetCDF does (failed with
 * MPI_ERR_NOT_SAME on every rank, the data written all the same).  The
 * same for reads, the nonblocking forms and the split forms. */
static void test_position_forms(void) {
  char *path = tl_path("forms");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int idle = tl_size - 1; /* the rank with nothing to do */
  for (int form = 0; form < 3; form++) {
    int v[2] = {10 * form + tl_rank, 100 + tl_rank}, w[2] = {-1, -1};
    MPI_Offset at = 8 * (MPI_Offset)tl_rank + 64 * form;
    MPI_Request rq;
    MPI_Status st;
    int n = -1;
    if (form == 0) {
      TL_OK(tl_rank == idle ? lmpio_file_write_all(fh, NULL, 0, MPI_BYTE, &st)
                            : lmpio_file_write_at_all(fh, at, v, 2, MPI_INT, &st));
    } else if (form == 1) {
      TL_OK(tl_rank == idle ? lmpio_file_iwrite_all(fh, NULL, 0, MPI_BYTE, &rq)
                            : lmpio_file_iwrite_at_all(fh, at, v, 2, MPI_INT, &rq));
      TL_OK(MPI_Wait(&rq, &st));
    } else {
      TL_OK(tl_rank == idle ? lmpio_file_write_all_begin(fh, NULL, 0, MPI_BYTE)
                            : lmpio_file_write_at_all_begin(fh, at, v, 2, MPI_INT));
      TL_OK(tl_rank == idle ? lmpio_file_write_all_end(fh, NULL, &st) : lmpio_file_write_at_all_end(fh, v, &st));
    }
    MPI_Get_count(&st, MPI_INT, &n);
    TL_EQ(n, tl_rank == idle ? 0 : 2);
    /* reads: the idle rank the other way round, in the pointer's form */
    if (form == 0) {
      TL_OK(tl_rank == idle ? lmpio_file_read_all(fh, NULL, 0, MPI_BYTE, &st)
                            : lmpio_file_read_at_all(fh, at, w, 2, MPI_INT, &st));
    } else if (form == 1) {
      TL_OK(tl_rank == idle ? lmpio_file_iread_all(fh, NULL, 0, MPI_BYTE, &rq)
                            : lmpio_file_iread_at_all(fh, at, w, 2, MPI_INT, &rq));
      TL_OK(MPI_Wait(&rq, &st));
    } else {
      TL_OK(tl_rank == idle ? lmpio_file_read_all_begin(fh, NULL, 0, MPI_BYTE)
                            : lmpio_file_read_at_all_begin(fh, at, w, 2, MPI_INT));
      TL_OK(tl_rank == idle ? lmpio_file_read_all_end(fh, NULL, &st) : lmpio_file_read_at_all_end(fh, w, &st));
    }
    if (tl_rank != idle) TL_CHECK(w[0] == v[0] && w[1] == v[1]);
  }
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, tl_size == 1 ? 0 : 128 + 8 * (tl_size - 1));
  /* still different calls: write_all against read_at_all */
  if (tl_size > 1) {
    int v[2] = {1, 2};
    TL_RC(tl_rank == idle ? lmpio_file_write_all(fh, v, 2, MPI_INT, MPI_STATUS_IGNORE)
                          : lmpio_file_read_at_all(fh, 0, v, 2, MPI_INT, MPI_STATUS_IGNORE),
          MPI_ERR_NOT_SAME);
    TL_CHECK(strstr(lmpio_last_error_message(), "called write_all") != NULL);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* What a call that fails because ranks are in different calls leaves: on
 * one node each rank moves its own data before the ranks learn of it
 * (README, "Collective calls return the same error class"), so the ranks
 * in write_at_all have written theirs; the rank in another call nothing.
 * Across nodes a write agrees first: nothing is written. */
static void test_mismatch_leaves(void) {
  if (tl_size < 2) return;
  char *path = tl_path("leaves");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int v[2] = {7, 8};
  int last = tl_size - 1;
  TL_RC(tl_rank == last ? lmpio_file_sync(fh) : lmpio_file_write_at_all(fh, 8 * tl_rank, v, 2, MPI_INT, MPI_STATUS_IGNORE),
        MPI_ERR_NOT_SAME);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, apart() ? 0 : 8 * (tl_size - 1));
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* lmpio_collective_outcome=local: a collective call in which each rank
 * moves its own data makes no exchange (300 calls do not reach the 128th
 * exchange, where the shared segment is made) and each rank returns its own
 * outcome; the hint must be the same on every rank; set_info switches it;
 * across nodes (two-phase) the calls still agree. */
static void test_local_outcome(void) {
  char *path = tl_path("local");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "lmpio_collective_outcome", "local");
  lmpio_file fh;
  /* (a communicator of its own: the handle's is new, its exchanges counted from 0) */
  MPI_Comm fresh;
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  TL_OK(lmpio_file_open(fresh, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info got;
  char v[64];
  int flag = 0;
  TL_OK(lmpio_file_get_info(fh, &got));
  MPI_Info_get(got, "lmpio_collective_outcome", sizeof v - 1, v, &flag);
  TL_CHECK(flag && strcmp(v, "local") == 0);
  MPI_Info_free(&got);
  int x[2] = {tl_rank, -tl_rank}, y[2];
  for (int i = 0; i < 300 && !tl_case_failed; i++) {
    TL_OK(lmpio_file_write_at_all(fh, 8 * tl_rank, x, 2, MPI_INT, MPI_STATUS_IGNORE));
    TL_OK(lmpio_file_read_at_all(fh, 8 * tl_rank, y, 2, MPI_INT, MPI_STATUS_IGNORE));
  }
  TL_CHECK(y[0] == x[0] && y[1] == x[1]);
  TL_CHECK(!lmpio__exchange_shared(fh->comm) || apart());
  /* one rank's bad argument: its own failure alone (agreed: every rank's) */
  int last = tl_size - 1, rc = lmpio_file_write_at_all(fh, tl_rank == last ? -8 : 8 * tl_rank, x, 2, MPI_INT,
                                                        MPI_STATUS_IGNORE);
  if (apart()) TL_EQ(rc, MPI_ERR_ARG); /* two-phase across nodes: agreed */
  else TL_EQ(rc, tl_rank == last ? MPI_ERR_ARG : MPI_SUCCESS);
  /* the same on every rank, or the open fails */
  TL_OK(lmpio_file_close(&fh));
  MPI_Comm_free(&fresh);
  MPI_Info_set(info, "lmpio_collective_outcome", tl_rank == last ? "agreed" : "local");
  if (tl_size > 1) {
    TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh), MPI_ERR_NOT_SAME);
    TL_CHECK(strstr(lmpio_last_error_message(), "lmpio_collective_outcome") != NULL);
  }
  /* set_info: from agreed to local */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_RC(lmpio_file_write_at_all(fh, tl_rank == last ? -8 : 8 * tl_rank, x, 2, MPI_INT, MPI_STATUS_IGNORE),
        MPI_ERR_ARG);
  MPI_Info_set(info, "lmpio_collective_outcome", "LOCAL");
  TL_OK(lmpio_file_set_info(fh, info));
  rc = lmpio_file_write_at_all(fh, tl_rank == last ? -8 : 8 * tl_rank, x, 2, MPI_INT, MPI_STATUS_IGNORE);
  TL_EQ(rc, tl_rank == last || apart() ? MPI_ERR_ARG : MPI_SUCCESS);
  TL_OK(lmpio_file_close(&fh));
  MPI_Info_free(&info);
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("ranks failing with different classes agree on class and message", test_different_classes);
  tl_run("MPI_ERR_NOT_SAME names the argument that differs", test_not_same_names_argument);
  tl_run("seek_shared past 2^63 is MPI_ERR_ARG, not an overflow", test_seek_shared_overflow);
  tl_run("lmpio_fail_next_collective fails the collective on every rank", test_fail_next_collective);
  tl_run("ranks in different collective calls on a file fail, naming both calls", test_different_calls);
  tl_run("write_all(NULL, 0) on one rank meets write_at_all on the others (reads, nonblocking, split too)",
         test_position_forms);
  tl_run("ranks in different calls: the ranks moving their own data have moved it", test_mismatch_leaves);
  tl_run("lmpio_collective_outcome=local: no exchange, each rank its own outcome", test_local_outcome);
  return tl_finish();
}
