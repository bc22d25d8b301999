/* File manipulation: amode rules, open/close/delete, EXCL, DELETE_ON_CLOSE,
 * UNIQUE_OPEN, APPEND, SEQUENTIAL, size and preallocation, group and amode,
 * hints, atomicity, sync; errors mapped from errno, their detailed messages
 * (call, path, errno text, rank), per-thread messages and the agreement of
 * collective calls on one error class. */
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* Every rank sees the same answer. */
static int all_same(int v) {
  int lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

static void make_file(const char *path, int bytes) {
  MPI_Barrier(MPI_COMM_WORLD); /* every rank is done with what was there */
  if (tl_rank == 0) {
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < bytes; i++) fputc('a' + i % 26, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_amode_rules(void) {
  char *path = tl_path("amode");
  lmpio_file fh = (lmpio_file)&fh; /* must be reset to NULL on failure */
  int bad[] = {0,
               MPI_MODE_RDONLY | MPI_MODE_RDWR,
               MPI_MODE_RDWR | MPI_MODE_WRONLY,
               MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_CREATE,
               MPI_MODE_RDONLY | MPI_MODE_CREATE,
               MPI_MODE_RDONLY | MPI_MODE_EXCL,
               MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL | MPI_MODE_CREATE,
               MPI_MODE_CREATE};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = lmpio_file_open(MPI_COMM_WORLD, path, bad[i], MPI_INFO_NULL, &fh);
    if (rc != MPI_ERR_AMODE) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] amode 0x%x: %s, expected MPI_ERR_AMODE\n", tl_rank, bad[i],
              lmpio_error_class_name(rc));
    }
    TL_CHECK(fh == LMPIO_FILE_NULL);
    TL_CHECK(strstr(lmpio_last_error_message(), "lmpio_file_open") != NULL);
  }
  TL_CHECK(!exists(path)); /* nothing was created */
  /* every valid combination opens */
  int good[] = {MPI_MODE_RDWR | MPI_MODE_CREATE,
                MPI_MODE_RDONLY,
                MPI_MODE_WRONLY,
                MPI_MODE_RDWR | MPI_MODE_UNIQUE_OPEN,
                MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL,
                MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND,
                MPI_MODE_RDWR | MPI_MODE_APPEND};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    fh = LMPIO_FILE_NULL;
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, good[i], MPI_INFO_NULL, &fh));
    int am = -1;
    TL_OK(lmpio_file_get_amode(fh, &am));
    TL_EQ(am, good[i]);
    TL_OK(lmpio_file_close(&fh));
    TL_CHECK(fh == LMPIO_FILE_NULL);
  }
  /* amodes that differ between ranks are an error, not a hang */
  if (tl_size > 1) {
    int am = tl_rank == 1 ? MPI_MODE_RDONLY : MPI_MODE_RDWR;
    TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, am, MPI_INFO_NULL, &fh), MPI_ERR_NOT_SAME);
  }
  tl_unlink(path);
}

static void test_open_errors_and_messages(void) {
  char *path = tl_path("missing");
  lmpio_file fh;
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
  const char *m = lmpio_last_error_message();
  TL_CHECK(strstr(m, "lmpio_file_open") != NULL);
  TL_CHECK(strstr(m, path) != NULL);
  TL_CHECK(strstr(m, strerror(ENOENT)) != NULL);
  char rk[32];
  snprintf(rk, sizeof rk, "rank %d", tl_rank);
  TL_CHECK(strstr(m, rk) != NULL);
  if (tl_case_failed) fprintf(stderr, "[rank %d] message: %s\n", tl_rank, m);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
  /* a missing directory on the way */
  char deep[4200];
  snprintf(deep, sizeof deep, "%s/sub/file", path);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, deep, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
        MPI_ERR_NO_SUCH_FILE);
  /* a regular file used as a directory, a name too long, an empty name */
  make_file(path, 3);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, deep, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
        MPI_ERR_BAD_FILE);
  char longname[6000];
  memset(longname, 'x', sizeof longname - 1);
  longname[0] = '/';
  longname[sizeof longname - 1] = '\0';
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, longname, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, "", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, NULL, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
  TL_RC(lmpio_file_open(MPI_COMM_NULL, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_COMM);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, NULL), MPI_ERR_ARG);
  /* a directory is not a file, in any access mode */
  const char *dir = getenv("LMPIO_TEST_DIR");
  if (!dir || !*dir) dir = "/tmp";
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, dir, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, dir, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_BAD_FILE);
  /* the ROMIO-style prefix names the file system */
  char pre[4200];
  snprintf(pre, sizeof pre, "ufs:%s", path);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, pre, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 3);
  TL_OK(lmpio_file_close(&fh));
  /* calls on a null handle */
  fh = LMPIO_FILE_NULL;
  TL_RC(lmpio_file_close(&fh), MPI_ERR_FILE);
  TL_RC(lmpio_file_get_size(fh, &size), MPI_ERR_FILE);
  TL_RC(lmpio_file_sync(fh), MPI_ERR_FILE);
  int am;
  TL_RC(lmpio_file_get_amode(fh, &am), MPI_ERR_FILE);
  tl_unlink(path);
}

/* Root ignores permissions; an immutable file refuses writers even to root. */
static void test_access_denied(void) {
  char *path = tl_path("immutable");
  make_file(path, 10);
  int ok = 0;
  if (tl_rank == 0) {
    int fd = open(path, O_RDONLY);
    int flags = 0;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags |= FS_IMMUTABLE_FL;
      ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (fd >= 0) close(fd);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (ok) {
    lmpio_file fh;
    TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_ACCESS);
    TL_CHECK(strstr(lmpio_last_error_message(), path) != NULL);
    TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_ERR_ACCESS);
    TL_RC(lmpio_file_delete(path, MPI_INFO_NULL), MPI_ERR_ACCESS);
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    TL_OK(lmpio_file_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (tl_rank == 0) {
      int fd = open(path, O_RDONLY), flags = 0;
      if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
        flags &= ~FS_IMMUTABLE_FL;
        ioctl(fd, FS_IOC_SETFLAGS, &flags);
      }
      if (fd >= 0) close(fd);
    }
  } else if (tl_rank == 0) {
    fprintf(stderr, "# immutable files unsupported here: MPI_ERR_ACCESS not tested\n");
  }
  tl_unlink(path);
}

static void test_excl_delete_on_close_unique(void) {
  char *path = tl_path("excl");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_close(&fh));
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh),
        MPI_ERR_FILE_EXISTS);
  TL_CHECK(strstr(lmpio_last_error_message(), strerror(EEXIST)) != NULL);
  TL_CHECK(fh == LMPIO_FILE_NULL);
  /* CREATE on an existing file keeps its contents */
  make_file(path, 7);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_UNIQUE_OPEN,
                        MPI_INFO_NULL, &fh));
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 7);
  TL_OK(lmpio_file_close(&fh));
  /* DELETE_ON_CLOSE: gone after close, for every rank */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
  char c = 'z';
  MPI_Status st;
  TL_OK(lmpio_file_write_at(fh, tl_rank, &c, 1, MPI_CHAR, &st));
  TL_CHECK(exists(path));
  TL_OK(lmpio_file_close(&fh));
  TL_CHECK(!exists(path));
  TL_CHECK(all_same(exists(path)));
  /* delete */
  TL_RC(lmpio_file_delete(path, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);
  TL_RC(lmpio_file_delete("", MPI_INFO_NULL), MPI_ERR_BAD_FILE);
  make_file(path, 1);
  if (tl_rank == 0) TL_OK(lmpio_file_delete(path, MPI_INFO_NULL));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_CHECK(!exists(path));
  tl_unlink(path);
}

static void test_append(void) {
  char *path = tl_path("append");
  make_file(path, 100);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 100);
  TL_OK(lmpio_file_get_position_shared(fh, &p));
  TL_EQ(p, 100);
  char buf[4] = {'0', '1', '2', '3'};
  buf[0] = (char)('A' + tl_rank);
  MPI_Status st;
  /* each rank's individual pointer starts at the end; write one byte after it */
  TL_OK(lmpio_file_seek(fh, tl_rank, MPI_SEEK_CUR));
  TL_OK(lmpio_file_write_all(fh, buf, 1, MPI_CHAR, &st));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 101 + tl_rank);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_sync(fh));
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 100 + tl_size);
  char r[4];
  TL_OK(lmpio_file_read_at_all(fh, 100 + tl_rank, r, 1, MPI_CHAR, &st));
  TL_EQ(r[0], 'A' + tl_rank);
  TL_OK(lmpio_file_read_at_all(fh, 99, r, 1, MPI_CHAR, &st));
  TL_EQ(r[0], 'a' + 99 % 26);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_sequential(void) {
  char *path = tl_path("seq");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL,
                        MPI_INFO_NULL, &fh));
  int v = 1;
  MPI_Status st;
  TL_RC(lmpio_file_write_at(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write_at_all(fh, 0, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write(fh, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write_all(fh, &v, 1, MPI_INT, &st), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_set_size(fh, 10), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_preallocate(fh, 10), MPI_ERR_UNSUPPORTED_OPERATION);
  /* reading a write-only file is refused too */
  TL_RC(lmpio_file_read_shared(fh, &v, 1, MPI_INT, &st), MPI_ERR_ACCESS);
  /* shared pointer writes are the way */
  TL_OK(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, &st));
  TL_OK(lmpio_file_sync(fh)); /* every rank's write is done */
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 4 * tl_size);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_size_and_preallocate(void) {
  char *path = tl_path("size");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 0);
  TL_OK(lmpio_file_set_size(fh, 1000));
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 1000);
  char buf[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  MPI_Status st;
  TL_OK(lmpio_file_read_at_all(fh, 996, buf, 8, MPI_CHAR, &st));
  int n;
  MPI_Get_count(&st, MPI_CHAR, &n);
  TL_EQ(n, 4);
  TL_EQ(buf[0], 0); /* extension reads as zeros */
  TL_OK(lmpio_file_set_size(fh, 10)); /* truncate */
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 10);
  TL_OK(lmpio_file_preallocate(fh, 500));
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 500);
  TL_OK(lmpio_file_preallocate(fh, 100)); /* never shrinks */
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 500);
  TL_RC(lmpio_file_set_size(fh, -1), MPI_ERR_ARG);
  TL_RC(lmpio_file_preallocate(fh, -1), MPI_ERR_ARG);
  /* one rank's bad size fails the call on every rank */
  TL_RC(lmpio_file_set_size(fh, tl_rank == tl_size - 1 ? -5 : 20), MPI_ERR_ARG);
  TL_RC(lmpio_file_preallocate(fh, tl_rank == tl_size - 1 ? -5 : 2000), MPI_ERR_ARG);
  if (tl_size > 1) TL_RC(lmpio_file_preallocate(fh, 2000 + tl_rank), MPI_ERR_NOT_SAME);
  if (tl_size > 1) TL_RC(lmpio_file_set_size(fh, 20 + tl_rank), MPI_ERR_NOT_SAME);
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 500);
  TL_OK(lmpio_file_close(&fh));
  /* read-only files cannot change size */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  TL_RC(lmpio_file_set_size(fh, 0), MPI_ERR_READ_ONLY);
  TL_RC(lmpio_file_preallocate(fh, 1000), MPI_ERR_READ_ONLY);
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 500);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_group_info_atomicity_sync(void) {
  char *path = tl_path("info");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_wr_buffer_size", "64");
  MPI_Info_set(info, "ind_rd_buffer_size", "bogus");
  MPI_Info_set(info, "some_unknown_key", "1");
  lmpio_file fh;
  /* an invalid value is an error naming the key, on every rank */
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh), MPI_ERR_INFO_VALUE);
  TL_CHECK(strstr(lmpio_last_error_message(), "ind_rd_buffer_size") != NULL);
  MPI_Info_delete(info, "ind_rd_buffer_size");
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
  MPI_Info_free(&info);
  MPI_Info used;
  char v[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, "ind_wr_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "64") == 0);
  MPI_Info_get(used, "ind_rd_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && atoll(v) > 0); /* the default */
  MPI_Info_free(&used);
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_rd_buffer_size", "128");
  MPI_Info_set(info, "romio_ds_write", "disable");
  TL_OK(lmpio_file_set_info(fh, info));
  MPI_Info_free(&info);
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, "ind_rd_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "128") == 0);
  MPI_Info_get(used, "ind_wr_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "64") == 0);
  MPI_Info_get(used, "romio_ds_write", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "disable") == 0);
  MPI_Info_free(&used);
  /* set_view's info is applied too */
  MPI_Info_create(&info);
  MPI_Info_set(info, "ind_wr_buffer_size", "4096");
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
  MPI_Info_free(&info);
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, "ind_wr_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "4096") == 0);
  MPI_Info_free(&used);
  TL_OK(lmpio_file_set_info(fh, MPI_INFO_NULL));

  MPI_Group g, w;
  int cmp = -1;
  TL_OK(lmpio_file_get_group(fh, &g));
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_compare(g, w, &cmp);
  TL_EQ(cmp, MPI_IDENT);
  MPI_Group_free(&g);
  MPI_Group_free(&w);

  int a = -1;
  TL_OK(lmpio_file_get_atomicity(fh, &a));
  TL_EQ(a, 0);
  TL_OK(lmpio_file_set_atomicity(fh, 1));
  TL_OK(lmpio_file_get_atomicity(fh, &a));
  TL_EQ(a, 1);
  if (tl_size > 1) {
    TL_RC(lmpio_file_set_atomicity(fh, tl_rank == 0), MPI_ERR_NOT_SAME);
    TL_OK(lmpio_file_get_atomicity(fh, &a));
    TL_EQ(a, 1);
  }
  int x = 42 + tl_rank;
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, 4 * tl_rank, &x, 1, MPI_INT, &st));
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  int y = -1, peer = (tl_rank + 1) % tl_size;
  TL_OK(lmpio_file_read_at_all(fh, 4 * peer, &y, 1, MPI_INT, &st));
  TL_EQ(y, 42 + peer);
  TL_OK(lmpio_file_set_atomicity(fh, 0));
  TL_OK(lmpio_file_get_atomicity(fh, &a));
  TL_EQ(a, 0);
  TL_OK(lmpio_file_close(&fh));

  /* single-process communicators */
  if (tl_rank == 0) {
    TL_OK(lmpio_file_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    TL_OK(lmpio_file_get_group(fh, &g));
    int gs = 0;
    MPI_Group_size(g, &gs);
    TL_EQ(gs, 1);
    MPI_Group_free(&g);
    TL_OK(lmpio_file_close(&fh));
  }
  tl_unlink(path);
}

static void test_error_strings(void) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  int classes[] = {MPI_SUCCESS, MPI_ERR_IO, MPI_ERR_AMODE, MPI_ERR_NO_SUCH_FILE, MPI_ERR_ACCESS,
                   MPI_ERR_FILE_EXISTS, MPI_ERR_NO_SPACE, MPI_ERR_QUOTA, MPI_ERR_READ_ONLY,
                   MPI_ERR_BAD_FILE, MPI_ERR_UNSUPPORTED_OPERATION, MPI_ERR_UNSUPPORTED_DATAREP,
                   MPI_ERR_ARG, MPI_ERR_TYPE, MPI_ERR_COUNT, MPI_ERR_NOT_SAME, MPI_ERR_FILE};
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
    TL_OK(lmpio_error_string(classes[i], s, &len));
    TL_CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(s) == len);
    const char *name = lmpio_error_class_name(classes[i]);
    TL_CHECK(strncmp(name, "MPI_", 4) == 0 && strcmp(name, "MPI_ERR_UNKNOWN") != 0);
    TL_CHECK(strstr(s, name) != NULL);
  }
  TL_CHECK(strcmp(lmpio_error_class_name(MPI_ERR_NO_SPACE), "MPI_ERR_NO_SPACE") == 0);
  TL_RC(lmpio_error_string(MPI_ERR_IO, NULL, &len), MPI_ERR_ARG);
}

/* The detailed message is per thread. */
static char thread_msg[1024];
static void *failing_thread(void *arg) {
  (void)arg;
  lmpio_file_delete("/nonexistent-dir-lmpio/x", MPI_INFO_NULL);
  snprintf(thread_msg, sizeof thread_msg, "%s", lmpio_last_error_message());
  return NULL;
}

static void test_per_thread_message(void) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_RC(lmpio_file_get_size(fh, NULL), MPI_ERR_FILE);
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", lmpio_last_error_message());
  TL_CHECK(strstr(mine, "lmpio_file_get_size") != NULL);
  pthread_t t;
  pthread_create(&t, NULL, failing_thread, NULL);
  pthread_join(t, NULL);
  TL_CHECK(strstr(thread_msg, "lmpio_file_delete") != NULL);
  TL_CHECK(strstr(thread_msg, "/nonexistent-dir-lmpio/x") != NULL);
  TL_CHECK(strcmp(lmpio_last_error_message(), mine) == 0);
}

/* ENOSPC, simulated by /dev/full; the class and message reach every rank. */
static void test_no_space(void) {
  lmpio_file fh;
  if (access("/dev/full", W_OK) != 0) {
    if (tl_rank == 0) fprintf(stderr, "# no /dev/full: MPI_ERR_NO_SPACE not tested\n");
    return;
  }
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
  char buf[100] = {0};
  MPI_Status st;
  TL_RC(lmpio_file_write_at(fh, 0, buf, 100, MPI_CHAR, &st), MPI_ERR_NO_SPACE);
  const char *m = lmpio_last_error_message();
  TL_CHECK(strstr(m, "lmpio_file_write_at") != NULL);
  TL_CHECK(strstr(m, "/dev/full") != NULL);
  TL_CHECK(strstr(m, strerror(ENOSPC)) != NULL);
  /* only the last rank fails: all ranks report it */
  int n = tl_rank == tl_size - 1 ? 100 : 0;
  TL_RC(lmpio_file_write_at_all(fh, 0, buf, n, MPI_CHAR, &st), MPI_ERR_NO_SPACE);
  TL_CHECK(strstr(lmpio_last_error_message(), "/dev/full") != NULL);
  TL_OK(lmpio_file_close(&fh));
}

/* EIO: reading unmapped memory through /proc/self/mem (each rank its own). */
static void test_io_error(void) {
  lmpio_file fh;
  int ok = access("/proc/self/mem", R_OK) == 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (tl_rank == 0) fprintf(stderr, "# no /proc/self/mem: MPI_ERR_IO not tested\n");
    return;
  }
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, "/proc/self/mem", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  char buf[16];
  MPI_Status st;
  TL_RC(lmpio_file_read_at(fh, 0, buf, 16, MPI_CHAR, &st), MPI_ERR_IO);
  const char *m = lmpio_last_error_message();
  TL_CHECK(strstr(m, "lmpio_file_read_at") != NULL && strstr(m, strerror(EIO)) != NULL);
  /* only the last rank reads address 0; the others read nothing */
  TL_RC(lmpio_file_read_at_all(fh, 0, buf, tl_rank == tl_size - 1 ? 16 : 0, MPI_CHAR, &st), MPI_ERR_IO);
  TL_OK(lmpio_file_close(&fh));
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("amode rules", test_amode_rules);
  tl_run("open errors map errno to classes with detailed messages", test_open_errors_and_messages);
  tl_run("MPI_ERR_ACCESS from a file root cannot write", test_access_denied);
  tl_run("EXCL, CREATE, DELETE_ON_CLOSE, UNIQUE_OPEN, delete", test_excl_delete_on_close_unique);
  tl_run("APPEND starts both pointers at end of file", test_append);
  tl_run("SEQUENTIAL forbids explicit offsets, seek and resizing", test_sequential);
  tl_run("set_size, preallocate, get_size, agreed errors", test_size_and_preallocate);
  tl_run("get_group, hints in get_info, atomicity, sync", test_group_info_atomicity_sync);
  tl_run("error strings and class names", test_error_strings);
  tl_run("the detailed message is per thread", test_per_thread_message);
  tl_run("ENOSPC is MPI_ERR_NO_SPACE on every rank", test_no_space);
  tl_run("EIO is MPI_ERR_IO on every rank", test_io_error);
  return tl_finish();
}
