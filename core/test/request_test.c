/* Nonblocking (i-calls) and split-collective data access: data and the
 * status count through MPI_Wait / MPI_Test / MPI_Waitall on the generalized
 * requests, pointer advance at start, errors at start (with
 * MPI_REQUEST_NULL), and the rules of split collectives (one active per
 * handle, _end matching _begin's kind and buffer). */
#include "testlib.h"

static lmpio_file open_new(const char *path) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_size(fh, 0));
  return fh;
}

static int count_of(MPI_Status *st, MPI_Datatype t) {
  int c = -1;
  MPI_Get_count(st, t, &c);
  return c;
}

static int wait_count(MPI_Request *req, MPI_Datatype t) {
  MPI_Status st;
  if (MPI_Wait(req, &st) != MPI_SUCCESS) return -2;
  return count_of(&st, t);
}

enum { N = 8 };

static void fill(int *a, int n, int seed) {
  for (int i = 0; i < n; i++) a[i] = seed * 1000 + i;
}

static int same(const int *a, const int *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* iwrite_at / iread_at: each rank its own block. */
static void test_at(void) {
  char *path = tl_path("req-at");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  int a[N], b[N] = {0};
  fill(a, N, tl_rank);
  MPI_Request req = MPI_REQUEST_NULL;
  TL_OK(lmpio_file_iwrite_at(fh, (MPI_Offset)tl_rank * N, a, N, MPI_INT, &req));
  TL_CHECK(req != MPI_REQUEST_NULL);
  TL_EQ(wait_count(&req, MPI_INT), N);
  TL_CHECK(req == MPI_REQUEST_NULL);
  TL_OK(lmpio_file_iread_at(fh, (MPI_Offset)tl_rank * N, b, N, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N);
  TL_CHECK(same(a, b, N));
  /* Short read at end of file: the count says so (once every rank wrote). */
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_iread_at(fh, (MPI_Offset)tl_size * N - 2, b, N, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), 2);
  /* In bytes. */
  TL_OK(lmpio_file_iread_at(fh, 0, b, 3, MPI_INT, &req));
  MPI_Status st;
  TL_OK(MPI_Wait(&req, &st));
  TL_EQ(count_of(&st, MPI_BYTE), 3 * (int)sizeof(int));
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* iwrite_at_all / iread_at_all and iwrite_all / iread_all. */
static void test_all(void) {
  char *path = tl_path("req-all");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  int a[N], b[N] = {0};
  fill(a, N, tl_rank + 1);
  MPI_Request req;
  TL_OK(lmpio_file_iwrite_at_all(fh, (MPI_Offset)tl_rank * N, a, N, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N);
  TL_OK(lmpio_file_iread_at_all(fh, (MPI_Offset)tl_rank * N, b, N, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N);
  TL_CHECK(same(a, b, N));
  /* Individual pointers: a view per rank, two halves. */
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)sizeof(int) * tl_size, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)sizeof(int) * tl_rank, MPI_INT, ft, "native", MPI_INFO_NULL));
  fill(a, N, tl_rank + 7);
  TL_OK(lmpio_file_iwrite_all(fh, a, N / 2, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N / 2);
  TL_OK(lmpio_file_iwrite_all(fh, a + N / 2, N / 2, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N / 2);
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, N);
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_SET));
  memset(b, 0, sizeof b);
  TL_OK(lmpio_file_iread_all(fh, b, N, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), N);
  TL_CHECK(same(a, b, N));
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, N);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* iwrite / iread move the individual pointer when started; MPI_Waitall
 * over several; MPI_Test says done at once. */
static void test_pointer_waitall_test(void) {
  char *path = tl_path("req-ptr");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)sizeof(int) * N * tl_rank, MPI_INT, MPI_INT, "native",
                            MPI_INFO_NULL));
  int a[N], b[N] = {0};
  fill(a, N, tl_rank + 3);
  MPI_Request reqs[3];
  TL_OK(lmpio_file_iwrite(fh, a, 2, MPI_INT, &reqs[0]));
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, 2); /* before any wait */
  TL_OK(lmpio_file_iwrite(fh, a + 2, 3, MPI_INT, &reqs[1]));
  TL_OK(lmpio_file_iwrite(fh, a + 5, N - 5, MPI_INT, &reqs[2]));
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, N);
  MPI_Status sts[3];
  TL_OK(MPI_Waitall(3, reqs, sts));
  TL_EQ(count_of(&sts[0], MPI_INT), 2);
  TL_EQ(count_of(&sts[1], MPI_INT), 3);
  TL_EQ(count_of(&sts[2], MPI_INT), N - 5);
  for (int i = 0; i < 3; i++) TL_CHECK(reqs[i] == MPI_REQUEST_NULL);
  TL_OK(lmpio_file_seek(fh, 1, MPI_SEEK_SET));
  MPI_Request req;
  TL_OK(lmpio_file_iread(fh, b, 4, MPI_INT, &req));
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, 5);
  int flag = 0;
  MPI_Status st;
  TL_OK(MPI_Test(&req, &flag, &st));
  TL_CHECK(flag);
  TL_EQ(count_of(&st, MPI_INT), 4);
  TL_CHECK(same(a + 1, b, 4));
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* iwrite_shared / iread_shared move the shared pointer when started. */
static void test_shared(void) {
  char *path = tl_path("req-shared");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  int a[2] = {tl_rank, tl_rank}, b[2] = {-1, -1};
  MPI_Request req;
  TL_OK(lmpio_file_iwrite_shared(fh, a, 2, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), 2);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 2 * tl_size);
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  TL_OK(lmpio_file_iread_shared(fh, b, 2, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), 2);
  TL_EQ(b[0], b[1]); /* some rank's pair, intact */
  TL_CHECK(b[0] >= 0 && b[0] < tl_size);
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_get_position_shared(fh, &pos));
  TL_EQ(pos, 2 * tl_size);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Errors at start: the class from the call, MPI_REQUEST_NULL. */
static void test_errors(void) {
  char *path = tl_path("req-err");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_close(&fh));
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  int a[2] = {1, 2};
  MPI_Request req = (MPI_Request)0; /* anything but MPI_REQUEST_NULL */
  TL_RC(lmpio_file_iwrite(fh, a, 2, MPI_INT, &req), MPI_ERR_READ_ONLY);
  TL_CHECK(req == MPI_REQUEST_NULL);
  req = (MPI_Request)0;
  TL_RC(lmpio_file_iwrite_at(fh, 0, a, 2, MPI_INT, &req), MPI_ERR_READ_ONLY);
  TL_CHECK(req == MPI_REQUEST_NULL);
  req = (MPI_Request)0;
  TL_RC(lmpio_file_iwrite_shared(fh, a, 2, MPI_INT, &req), MPI_ERR_READ_ONLY);
  TL_CHECK(req == MPI_REQUEST_NULL);
  /* Collective: every rank gets the error, also when only one rank errs. */
  req = (MPI_Request)0;
  TL_RC(lmpio_file_iread_at_all(fh, 0, a, tl_rank == 0 ? -1 : 2, MPI_INT, &req), MPI_ERR_COUNT);
  TL_CHECK(req == MPI_REQUEST_NULL);
  req = (MPI_Request)0;
  TL_RC(lmpio_file_iwrite_all(fh, a, 2, MPI_INT, &req), MPI_ERR_READ_ONLY);
  TL_CHECK(req == MPI_REQUEST_NULL);
  TL_RC(lmpio_file_iread_at(fh, 0, a, 2, MPI_INT, NULL), MPI_ERR_ARG);
  TL_RC(lmpio_file_iread_at(LMPIO_FILE_NULL, 0, a, 2, MPI_INT, &req), MPI_ERR_FILE);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Split collectives: data and status; the rules. */
static void test_split(void) {
  char *path = tl_path("req-split");
  lmpio_file fh = open_new(path);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  int a[N], b[N] = {0};
  fill(a, N, tl_rank + 11);
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all_begin(fh, (MPI_Offset)tl_rank * N, a, N, MPI_INT));
  TL_OK(lmpio_file_write_at_all_end(fh, a, &st));
  TL_EQ(count_of(&st, MPI_INT), N);
  TL_OK(lmpio_file_read_at_all_begin(fh, (MPI_Offset)tl_rank * N, b, N, MPI_INT));
  TL_OK(lmpio_file_read_at_all_end(fh, b, &st));
  TL_EQ(count_of(&st, MPI_INT), N);
  TL_CHECK(same(a, b, N));

  /* Individual pointer versions move the pointer. */
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)sizeof(int) * N * tl_rank, MPI_INT, MPI_INT, "native",
                            MPI_INFO_NULL));
  fill(a, N, tl_rank + 21);
  TL_OK(lmpio_file_write_all_begin(fh, a, N, MPI_INT));
  TL_OK(lmpio_file_write_all_end(fh, a, &st));
  TL_EQ(count_of(&st, MPI_INT), N);
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, N);
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_SET));
  memset(b, 0, sizeof b);
  TL_OK(lmpio_file_read_all_begin(fh, b, N, MPI_INT));
  TL_OK(lmpio_file_read_all_end(fh, b, &st));
  TL_EQ(count_of(&st, MPI_INT), N);
  TL_CHECK(same(a, b, N));

  /* Two begins without an end: the second fails (on every rank), the
   * first stays active. */
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_SET));
  TL_OK(lmpio_file_read_all_begin(fh, b, N, MPI_INT));
  TL_RC(lmpio_file_read_at_all_begin(fh, 0, b, N, MPI_INT), MPI_ERR_OTHER);
  TL_RC(lmpio_file_write_ordered_begin(fh, a, 1, MPI_INT), MPI_ERR_OTHER);
  /* A blocking collective is not allowed meanwhile either. */
  TL_RC(lmpio_file_read_at_all(fh, 0, b, 1, MPI_INT, &st), MPI_ERR_OTHER);
  /* Mismatched kind, then mismatched buffer: errors, still active. */
  TL_RC(lmpio_file_write_all_end(fh, b, &st), MPI_ERR_OTHER);
  TL_RC(lmpio_file_read_at_all_end(fh, b, &st), MPI_ERR_OTHER);
  TL_RC(lmpio_file_read_ordered_end(fh, b, &st), MPI_ERR_OTHER);
  TL_RC(lmpio_file_read_all_end(fh, a, &st), MPI_ERR_OTHER);
  TL_OK(lmpio_file_read_all_end(fh, b, &st));
  TL_EQ(count_of(&st, MPI_INT), N);
  /* End without a begin. */
  TL_RC(lmpio_file_read_all_end(fh, b, &st), MPI_ERR_OTHER);
  TL_RC(lmpio_file_write_at_all_end(fh, a, &st), MPI_ERR_OTHER);
  /* A failed begin leaves nothing active. */
  TL_RC(lmpio_file_write_at_all_begin(fh, 0, a, tl_rank == tl_size - 1 ? -1 : 1, MPI_INT), MPI_ERR_COUNT);
  TL_RC(lmpio_file_write_at_all_end(fh, a, &st), MPI_ERR_OTHER);
  /* i-calls that are independent are fine while a split is active. */
  TL_OK(lmpio_file_write_at_all_begin(fh, 0, a, 1, MPI_INT));
  MPI_Request req;
  TL_OK(lmpio_file_iread_at(fh, 0, b, 1, MPI_INT, &req));
  TL_EQ(wait_count(&req, MPI_INT), 1);
  TL_RC(lmpio_file_iread_at_all(fh, 0, b, 1, MPI_INT, &req), MPI_ERR_OTHER);
  TL_CHECK(req == MPI_REQUEST_NULL);
  TL_OK(lmpio_file_write_at_all_end(fh, a, &st));
  TL_EQ(count_of(&st, MPI_INT), 1);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("iread_at / iwrite_at: data and MPI_Wait status", test_at);
  tl_run("iread_at_all / iwrite_at_all / iread_all / iwrite_all", test_all);
  tl_run("iread / iwrite move the pointer at start; MPI_Waitall; MPI_Test", test_pointer_waitall_test);
  tl_run("iread_shared / iwrite_shared move the shared pointer", test_shared);
  tl_run("errors at start return the class and MPI_REQUEST_NULL", test_errors);
  tl_run("split collectives: data, status and the rules", test_split);
  return tl_finish();
}
