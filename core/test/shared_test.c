/* Shared file pointer and ordered collectives: rank order, zero counts,
 * pointer values, concurrent write_shared, split collectives, APPEND,
 * SEQUENTIAL, progress while the pointer's neighbours are busy. */
#include "testlib.h"

#include <time.h>

static lmpio_file open_new(const char *path, int extra) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | extra, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_size(fh, 0));
  return fh;
}

static void test_write_ordered_rank_order(void) {
  char *path = tl_path("ordered");
  lmpio_file fh = open_new(path, 0);
  /* Rank r writes r+1 ints of value r; rank 1 writes nothing (count 0). */
  int n = tl_rank == 1 ? 0 : tl_rank + 1, buf[16];
  for (int i = 0; i < n; i++) buf[i] = tl_rank;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  MPI_Status st;
  TL_OK(lmpio_file_write_ordered(fh, buf, n, MPI_INT, &st));
  int cnt;
  MPI_Get_count(&st, MPI_INT, &cnt);
  TL_EQ(cnt, n);
  int total = 0;
  for (int r = 0; r < tl_size; r++) total += r == 1 ? 0 : r + 1;
  MPI_Offset pos;
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, total);
  MPI_Offset size;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, total * (MPI_Offset)sizeof(int));
  /* The file holds the ranks' data in rank order. */
  int all[64], k = 0;
  TL_OK(lmpio_file_read_at(fh, 0, all, total, MPI_INT, &st));
  for (int r = 0; r < tl_size; r++)
    for (int i = 0; i < (r == 1 ? 0 : r + 1); i++, k++) TL_EQ(all[k], r);
  /* read_ordered from the start gives every rank back its own part. */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  int back[16] = {0};
  TL_OK(lmpio_file_read_ordered(fh, back, n, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &cnt);
  TL_EQ(cnt, n);
  for (int i = 0; i < n; i++) TL_EQ(back[i], tl_rank);
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, total);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_write_shared_concurrent(void) {
  char *path = tl_path("shared");
  lmpio_file fh = open_new(path, 0);
  enum { N = 200 };
  /* Each record: rank, serial; all ranks append at once. */
  for (int i = 0; i < N; i++) {
    int rec[2] = {tl_rank, i};
    TL_OK(lmpio_file_write_shared(fh, rec, 2, MPI_INT, MPI_STATUS_IGNORE));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos;
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, (MPI_Offset)N * tl_size * 2 * sizeof(int));
  if (tl_rank == 0) { /* every record exactly once, each rank's in order */
    int *all = malloc(sizeof(int) * 2 * N * tl_size), next[64] = {0};
    MPI_Status st;
    TL_OK(lmpio_file_read_at(fh, 0, all, 2 * N * tl_size, MPI_INT, &st));
    for (int i = 0; i < N * tl_size; i++) {
      int r = all[2 * i], s = all[2 * i + 1];
      TL_CHECK(r >= 0 && r < tl_size);
      if (r >= 0 && r < tl_size) TL_EQ(s, next[r]++);
    }
    for (int r = 0; r < tl_size; r++) TL_EQ(next[r], N);
    free(all);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_seek_shared_and_view_reset(void) {
  char *path = tl_path("seek");
  lmpio_file fh = open_new(path, 0);
  char data[100];
  memset(data, 'a', sizeof data);
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, data, 100, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos;
  TL_OK(lmpio_file_seek_shared(fh, 10, MPI_SEEK_SET));
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 10);
  TL_OK(lmpio_file_seek_shared(fh, 5, MPI_SEEK_CUR));
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 15);
  TL_OK(lmpio_file_seek_shared(fh, -20, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 80);
  TL_RC(lmpio_file_seek_shared(fh, -200, MPI_SEEK_END), MPI_ERR_ARG);
  /* A view in ints resets the pointer; END counts ints. */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 0);
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 25);
  /* Ranks passing different offsets is an error, not a hang. */
  TL_RC(lmpio_file_seek_shared(fh, tl_size > 1 ? tl_rank : 0, MPI_SEEK_SET),
        tl_size > 1 ? MPI_ERR_NOT_SAME : MPI_SUCCESS);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_noncontiguous_view(void) {
  char *path = tl_path("ncview");
  lmpio_file fh = open_new(path, 0);
  /* View: every other int.  Ordered writes fill the even slots in rank order. */
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  int v[2] = {tl_rank * 10, tl_rank * 10 + 1};
  TL_OK(lmpio_file_write_ordered(fh, v, 2, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  int all[64];
  TL_OK(lmpio_file_read_at_all(fh, 0, all, 4 * tl_size - 1, MPI_INT, MPI_STATUS_IGNORE));
  for (int r = 0; r < tl_size; r++) {
    TL_EQ(all[4 * r], r * 10);
    TL_EQ(all[4 * r + 2], r * 10 + 1);
  }
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_split_ordered(void) {
  char *path = tl_path("split");
  lmpio_file fh = open_new(path, 0);
  double d = tl_rank + 0.5, back = -1;
  MPI_Status st;
  TL_OK(lmpio_file_write_ordered_begin(fh, &d, 1, MPI_DOUBLE));
  TL_RC(lmpio_file_write_ordered_begin(fh, &d, 1, MPI_DOUBLE), MPI_ERR_OTHER);
  TL_OK(lmpio_file_write_ordered_end(fh, &d, &st));
  int cnt;
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  TL_EQ(cnt, 1);
  TL_RC(lmpio_file_write_ordered_end(fh, &d, &st), MPI_ERR_OTHER);
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  TL_OK(lmpio_file_read_ordered_begin(fh, &back, 1, MPI_DOUBLE));
  TL_OK(lmpio_file_read_ordered_end(fh, &back, &st));
  TL_CHECK(back == tl_rank + 0.5);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_append_and_sequential(void) {
  char *path = tl_path("append");
  lmpio_file fh = open_new(path, 0);
  char hdr[7] = "header";
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, hdr, 7, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_SEQUENTIAL,
                        MPI_INFO_NULL, &fh));
  MPI_Offset pos;
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 7);
  char c = (char)('A' + tl_rank);
  TL_OK(lmpio_file_write_ordered(fh, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_RC(lmpio_file_write_at(fh, 0, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write(fh, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
  /* A view starting at the current shared position. */
  TL_OK(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_CHAR, MPI_CHAR, "native", MPI_INFO_NULL));
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_EQ(disp, 7 + tl_size);
  TL_OK(lmpio_file_close(&fh));
  if (tl_rank == 0) {
    FILE *f = fopen(path, "rb");
    char got[80] = {0};
    size_t n = f ? fread(got, 1, sizeof got, f) : 0;
    if (f) fclose(f);
    TL_EQ(n, 7 + (size_t)tl_size);
    for (int r = 0; r < tl_size; r++) TL_EQ(got[7 + r], 'A' + r);
  }
  tl_unlink(path);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Rank 1 must not wait for rank 0, busy outside MPI, to update the pointer. */
static void test_progress_without_owner(void) {
  if (tl_size < 2) return;
  char *path = tl_path("progress");
  lmpio_file fh = open_new(path, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    sleep(2);
  } else if (tl_rank == 1) {
    double t0 = now();
    int v = 42;
    for (int i = 0; i < 10; i++) TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
    double dt = now() - t0;
    if (dt > 1.0) fprintf(stderr, "write_shared took %.3f s while rank 0 slept\n", dt);
    TL_CHECK(dt < 1.0);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_helper_file_removed(void) {
  char *path = tl_path("helper");
  lmpio_file fh = open_new(path, 0);
  int v = 1;
  TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) { /* nothing but the data file is left beside it */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -a \"$(dirname '%s')\" | grep -c \"$(basename '%s').lmpio-shfp\" >/dev/null", path, path);
    TL_CHECK(system(cmd) != 0);
  }
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("write_ordered: rank order, zero count, pointer after, read_ordered back", test_write_ordered_rank_order);
  tl_run("write_shared from all ranks: no loss, no overlap", test_write_shared_concurrent);
  tl_run("seek_shared SET/CUR/END, view reset, mismatch is an error", test_seek_shared_and_view_reset);
  tl_run("ordered access through a noncontiguous view", test_noncontiguous_view);
  tl_run("split ordered collectives", test_split_ordered);
  tl_run("APPEND starts the shared pointer at EOF; SEQUENTIAL allows only shared access", test_append_and_sequential);
  tl_run("write_shared progresses while rank 0 is busy outside MPI", test_progress_without_owner);
  tl_run("the helper file disappears on close", test_helper_file_removed);
  return tl_finish();
}
