/* Shared file pointer and ordered collectives: rank order, zero counts,
 * pointer values after every call, mixing with explicit offsets and
 * individual pointers, noncontiguous and external32 views, concurrent
 * write_shared, view mismatches, split collectives, APPEND, SEQUENTIAL,
 * progress while rank 0 is busy outside MPI, the helper file's removal, and
 * the file bytes of the same sequence through the MPI library's own MPI-IO.
 *
 * With more than one rank every case runs twice: with the pointer's default
 * home (an atomic counter in a mapped helper file when every rank shares a
 * kernel) and with LMPIO_SHARED_FP=lock (the byte-range-locked helper file
 * that ranks on different machines use). */
#include "testlib.h"
#include "internals.h"

#include <limits.h>

#include <stdint.h>
#include <time.h>

static lmpio_file open_new(const char *path, int extra) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | extra, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_size(fh, 0));
  return fh;
}

#define POS_IS(fh, expected)                                     \
  do {                                                           \
    MPI_Offset pos_ = -1;                                        \
    TL_OK(lmpio_file_get_position_shared(fh, &pos_));            \
    TL_EQ(pos_, expected);                                       \
  } while (0)

static int count_of(MPI_Status *st, MPI_Datatype t) {
  int c = -1;
  MPI_Get_count(st, t, &c);
  return c;
}

/* Reads a whole file with stdio (rank 0 only); returns its length. */
static long slurp(const char *path, unsigned char *buf, long max) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  long n = (long)fread(buf, 1, (size_t)max, f);
  fclose(f);
  return n;
}

static void test_write_ordered_rank_order(void) {
  char *path = tl_path("ordered");
  lmpio_file fh = open_new(path, 0);
  /* Rank r writes r+1 ints of value r; rank 1 writes nothing (count 0). */
  int n = tl_rank == 1 ? 0 : tl_rank + 1;
  int *buf = malloc(sizeof(int) * (size_t)(n + 1)), *back = calloc((size_t)n + 1, sizeof(int));
  for (int i = 0; i < n; i++) buf[i] = tl_rank;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  MPI_Status st;
  TL_OK(lmpio_file_write_ordered(fh, buf, n, MPI_INT, &st));
  TL_EQ(count_of(&st, MPI_INT), n);
  /* The call returns once every rank has started its access: reading what
   * the others wrote takes a synchronisation, as MPI's consistency rules say. */
  MPI_Barrier(MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < tl_size; r++) total += r == 1 ? 0 : r + 1;
  POS_IS(fh, total);
  MPI_Offset size;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, total * (MPI_Offset)sizeof(int));
  /* The file holds the ranks' data in rank order. */
  int *all = malloc(sizeof(int) * (size_t)(total + 3)), k = 0; /* (sized by the ranks: 76 ints at 12) */
  TL_OK(lmpio_file_read_at(fh, 0, all, total, MPI_INT, &st));
  for (int r = 0; r < tl_size; r++)
    for (int i = 0; i < (r == 1 ? 0 : r + 1); i++, k++) TL_EQ(all[k], r);
  /* Every rank with count 0: the pointer stays. */
  TL_OK(lmpio_file_write_ordered(fh, buf, 0, MPI_INT, &st));
  TL_EQ(count_of(&st, MPI_INT), 0);
  POS_IS(fh, total);
  /* Only the last rank writes. */
  int last = tl_rank == tl_size - 1 ? 3 : 0, v3[3] = {7, 8, 9};
  TL_OK(lmpio_file_write_ordered(fh, v3, last, MPI_INT, &st));
  POS_IS(fh, total + 3);
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_read_at(fh, total, all, 3, MPI_INT, &st));
  TL_EQ(all[0], 7);
  TL_EQ(all[2], 9);
  /* read_ordered from the start gives every rank back its own part. */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  POS_IS(fh, 0);
  TL_OK(lmpio_file_read_ordered(fh, back, n, MPI_INT, &st));
  TL_EQ(count_of(&st, MPI_INT), n);
  for (int i = 0; i < n; i++) TL_EQ(back[i], tl_rank);
  POS_IS(fh, total);
  /* read_ordered past the end: counts are what the file holds, the pointer
   * moves by everything requested. */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  int want = 2, got[2];
  TL_OK(lmpio_file_read_ordered(fh, got, want, MPI_INT, &st));
  int have = total + 3 - 2 * tl_rank;
  TL_EQ(count_of(&st, MPI_INT), have < 0 ? 0 : have > 2 ? 2 : have);
  POS_IS(fh, 2 * tl_size);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
  free(buf);
  free(back);
  free(all);
}

static void test_write_shared_concurrent(void) {
  char *path = tl_path("shared");
  lmpio_file fh = open_new(path, 0);
  enum { N = 200 };
  /* Each record: rank, serial; all ranks append at once. */
  for (int i = 0; i < N; i++) {
    int rec[2] = {tl_rank, i};
    MPI_Status st;
    TL_OK(lmpio_file_write_shared(fh, rec, 2, MPI_INT, &st));
    if (i == 0) TL_EQ(count_of(&st, MPI_INT), 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fh, (MPI_Offset)N * tl_size * 2 * sizeof(int));
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

/* Concurrent write_shared through a view with holes: records land whole in
 * the view's slots, the holes stay untouched. */
static void test_write_shared_noncontiguous(void) {
  char *path = tl_path("shared-nc");
  lmpio_file fh = open_new(path, 0);
  MPI_Datatype ft; /* one int, then a hole of one int */
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  enum { N = 50 };
  for (int i = 0; i < N; i++) {
    int rec[2] = {tl_rank + 1, i};
    TL_OK(lmpio_file_write_shared(fh, rec, 2, MPI_INT, MPI_STATUS_IGNORE));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fh, 2 * N * tl_size);
  if (tl_rank == 0) {
    int n = 4 * N * tl_size, *all = calloc((size_t)n, sizeof(int)), next[64] = {0};
    unsigned char *raw = malloc((size_t)n * sizeof(int));
    long len = slurp(path, raw, (long)n * (long)sizeof(int));
    TL_CHECK(len >= (long)(n - 1) * (long)sizeof(int));
    if (len > 0) memcpy(all, raw, (size_t)len);
    for (int i = 0; i < N * tl_size; i++) {
      int r = all[4 * i] - 1, s = all[4 * i + 2];
      TL_EQ(all[4 * i + 1], 0);
      if (4 * i + 3 < n - 1) TL_EQ(all[4 * i + 3], 0);
      TL_CHECK(r >= 0 && r < tl_size);
      if (r >= 0 && r < tl_size) TL_EQ(s, next[r]++);
    }
    for (int r = 0; r < tl_size; r++) TL_EQ(next[r], N);
    free(all);
    free(raw);
  }
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Shared, ordered, explicit-offset and individual-pointer calls mixed: each
 * kind moves only its own pointer, and the shared pointer is right after
 * every call, including collectives right after independent moves. */
static void test_mixed_access(void) {
  char *path = tl_path("mixed");
  lmpio_file fh = open_new(path, 0);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  MPI_Status st;
  /* Turns: rank t writes value 1000+t with write_shared. */
  for (int t = 0; t < tl_size; t++) {
    if (tl_rank == t) {
      int v = 1000 + t;
      POS_IS(fh, t);
      TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, &st));
      POS_IS(fh, t + 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  POS_IS(fh, tl_size);
  /* Explicit offsets and the individual pointer leave the shared one alone. */
  int far = 5000 + tl_rank;
  TL_OK(lmpio_file_write_at(fh, 100 + tl_rank, &far, 1, MPI_INT, &st));
  TL_OK(lmpio_file_seek(fh, 200 + tl_rank, MPI_SEEK_SET));
  TL_OK(lmpio_file_write(fh, &far, 1, MPI_INT, &st));
  MPI_Offset ind;
  TL_OK(lmpio_file_get_position(fh, &ind));
  TL_EQ(ind, 201 + tl_rank);
  POS_IS(fh, tl_size);
  /* An ordered write right after the independent moves: counts r % 3. */
  int n = tl_rank % 3, vals[2] = {2000 + tl_rank, 2000 + tl_rank};
  TL_OK(lmpio_file_write_ordered(fh, vals, n, MPI_INT, &st));
  TL_EQ(count_of(&st, MPI_INT), n);
  int total = 0;
  for (int r = 0; r < tl_size; r++) total += r % 3;
  POS_IS(fh, tl_size + total);
  TL_OK(lmpio_file_get_position(fh, &ind));
  TL_EQ(ind, 201 + tl_rank);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Rank 0 moves the pointer alone, then a collective seek relative to it. */
  if (tl_rank == 0) {
    int v = 3000;
    TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, &st));
  }
  TL_OK(lmpio_file_seek_shared(fh, 2, MPI_SEEK_CUR));
  POS_IS(fh, tl_size + total + 3);
  MPI_Barrier(MPI_COMM_WORLD);
  /* The last rank moves it alone, then an ordered write follows it. */
  if (tl_rank == tl_size - 1) {
    int v = 4000;
    TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, &st));
  }
  int one = 6000 + tl_rank;
  TL_OK(lmpio_file_write_ordered(fh, &one, 1, MPI_INT, &st));
  int after = tl_size + total + 4 + tl_size;
  POS_IS(fh, after);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Check the data. */
  int all[256];
  TL_OK(lmpio_file_read_at(fh, 0, all, after, MPI_INT, &st));
  for (int t = 0; t < tl_size; t++) TL_EQ(all[t], 1000 + t);
  int k = tl_size;
  for (int r = 0; r < tl_size; r++)
    for (int i = 0; i < r % 3; i++) TL_EQ(all[k++], 2000 + r);
  TL_EQ(all[k], 3000);
  k += 3;
  TL_EQ(all[k++], 4000);
  for (int r = 0; r < tl_size; r++) TL_EQ(all[k++], 6000 + r);
  /* read_shared in turns gives the write_shared values back in order. */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  for (int t = 0; t < tl_size; t++) {
    if (tl_rank == t) {
      int v = -1;
      TL_OK(lmpio_file_read_shared(fh, &v, 1, MPI_INT, &st));
      TL_EQ(count_of(&st, MPI_INT), 1);
      TL_EQ(v, 1000 + t);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  /* And read_ordered right after them continues where they stopped. */
  int rb[2] = {-1, -1};
  TL_OK(lmpio_file_read_ordered(fh, rb, n, MPI_INT, &st));
  TL_EQ(count_of(&st, MPI_INT), n);
  for (int i = 0; i < n; i++) TL_EQ(rb[i], 2000 + tl_rank);
  POS_IS(fh, tl_size + total);
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
  TL_OK(lmpio_file_seek_shared(fh, 10, MPI_SEEK_SET));
  POS_IS(fh, 10);
  TL_OK(lmpio_file_seek_shared(fh, 5, MPI_SEEK_CUR));
  POS_IS(fh, 15);
  TL_OK(lmpio_file_seek_shared(fh, -20, MPI_SEEK_END));
  POS_IS(fh, 80);
  TL_RC(lmpio_file_seek_shared(fh, -200, MPI_SEEK_END), MPI_ERR_ARG);
  TL_RC(lmpio_file_seek_shared(fh, -81, MPI_SEEK_CUR), MPI_ERR_ARG);
  TL_RC(lmpio_file_seek_shared(fh, 0, 12345), MPI_ERR_ARG);
  POS_IS(fh, 80);
  MPI_Barrier(MPI_COMM_WORLD); /* everyone looked before rank 0 moves it */
  /* After a write_shared, SET replaces the pointer whatever the helper holds. */
  if (tl_rank == 0) TL_OK(lmpio_file_write_shared(fh, data, 3, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_seek_shared(fh, 4, MPI_SEEK_SET));
  POS_IS(fh, 4);
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) TL_OK(lmpio_file_write_shared(fh, data, 3, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fh, 7);
  /* A view in ints resets the pointer; END counts ints. */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  POS_IS(fh, 0);
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_END));
  POS_IS(fh, 25);
  /* A view with holes: END counts the view's etypes before the end. */
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, 4 * sizeof(int), &ft); /* 1 int in 4 */
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  POS_IS(fh, 0);
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_END));
  POS_IS(fh, 7); /* ints at bytes 0, 16, ..., 96 start before byte 100 */
  MPI_Type_free(&ft);
  /* Ranks passing different offsets is an error, not a hang. */
  TL_RC(lmpio_file_seek_shared(fh, tl_size > 1 ? tl_rank : 0, MPI_SEEK_SET),
        tl_size > 1 ? MPI_ERR_NOT_SAME : MPI_SUCCESS);
  TL_RC(lmpio_file_seek_shared(LMPIO_FILE_NULL, 0, MPI_SEEK_SET), MPI_ERR_FILE);
  TL_RC(lmpio_file_get_position_shared(fh, NULL), MPI_ERR_ARG);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Every rank must use the same view for shared-pointer access; a mismatch
 * that is cheap to see is an error on every rank, not silent corruption. */
static void test_view_mismatch(void) {
  char *path = tl_path("mismatch");
  lmpio_file fh = open_new(path, 0);
  MPI_Datatype ft; /* filetype extent differs between odd and even ranks */
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)sizeof(int) * (1 + tl_rank % 2), &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  int bad = tl_size > 1 ? MPI_ERR_NOT_SAME : MPI_SUCCESS, v = 1;
  TL_RC(lmpio_file_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE), bad);
  TL_RC(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE), bad);
  TL_RC(lmpio_file_read_ordered(fh, &v, tl_rank == 0, MPI_INT, MPI_STATUS_IGNORE), bad);
  TL_RC(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET), bad);
  /* Explicit offsets do not care. */
  TL_OK(lmpio_file_write_at(fh, tl_rank, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  /* The same view again: everything works. */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  POS_IS(fh, tl_size);
  /* A different displacement is a different view too. */
  TL_OK(lmpio_file_set_view(fh, tl_rank == 0 ? 0 : 4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_RC(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE), bad);
  MPI_Type_free(&ft);
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
  POS_IS(fh, 2 * tl_size);
  /* Noncontiguous memory too: a vector picking every other int. */
  MPI_Datatype mt;
  MPI_Type_vector(2, 1, 2, MPI_INT, &mt);
  MPI_Type_commit(&mt);
  int mem[3] = {tl_rank * 10 + 5, -1, tl_rank * 10 + 6};
  TL_OK(lmpio_file_write_ordered(fh, mem, tl_rank % 2 ? 0 : 1, mt, MPI_STATUS_IGNORE));
  int evens = (tl_size + 1) / 2;
  POS_IS(fh, 2 * tl_size + 2 * evens);
  /* Other ranks' data: sync-barrier-sync (ranks on several machines). */
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  int all[128];
  TL_OK(lmpio_file_read_at_all(fh, 0, all, 4 * tl_size + 4 * evens - 1, MPI_INT, MPI_STATUS_IGNORE));
  for (int r = 0; r < tl_size; r++) {
    TL_EQ(all[4 * r], r * 10);
    TL_EQ(all[4 * r + 2], r * 10 + 1);
  }
  for (int r = 0, k = 4 * tl_size; r < tl_size; r += 2, k += 4) {
    TL_EQ(all[k], r * 10 + 5);
    TL_EQ(all[k + 2], r * 10 + 6);
  }
  /* read_ordered back into noncontiguous memory. */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  int back[3] = {-1, -2, -3};
  MPI_Status st;
  TL_OK(lmpio_file_read_ordered(fh, back, 1, mt, &st));
  TL_EQ(count_of(&st, mt), 1);
  TL_EQ(back[0], tl_rank * 10);
  TL_EQ(back[1], -2);
  TL_EQ(back[2], tl_rank * 10 + 1);
  MPI_Type_free(&mt);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* external32 views: the pointer counts etypes of the view, whose size is
 * external32's (MPI_LONG is 4 bytes there), and the bytes are big-endian. */
static void test_external32_view(void) {
  char *path = tl_path("ext32");
  lmpio_file fh = open_new(path, 0);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
  long v[8];
  int n = tl_rank % 3 + (tl_rank == 0);
  for (int i = 0; i < n; i++) v[i] = (long)tl_rank * 65536 + i - 3;
  MPI_Status st;
  TL_OK(lmpio_file_write_ordered(fh, v, n, MPI_LONG, &st));
  TL_EQ(count_of(&st, MPI_LONG), n);
  int total = 0;
  for (int r = 0; r < tl_size; r++) total += r % 3 + (r == 0);
  POS_IS(fh, total);
  MPI_Barrier(MPI_COMM_WORLD);
  /* write_shared in turns after it. */
  for (int t = 0; t < tl_size; t++) {
    if (tl_rank == t) {
      long w = -1000 - t;
      TL_OK(lmpio_file_write_shared(fh, &w, 1, MPI_LONG, &st));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  POS_IS(fh, total + tl_size);
  MPI_Offset size;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 4 * (total + tl_size));
  if (tl_rank == 0) {
    unsigned char raw[4 * 256];
    long len = slurp(path, raw, sizeof raw);
    TL_EQ(len, 4 * (total + tl_size));
    int k = 0;
    for (int r = 0; r < tl_size; r++)
      for (int i = 0; i < r % 3 + (r == 0); i++, k++)
        TL_EQ((int32_t)be32(raw + 4 * k), r * 65536 + i - 3);
    for (int t = 0; t < tl_size; t++, k++) TL_EQ((int32_t)be32(raw + 4 * k), -1000 - t);
  }
  /* read_ordered converts back. */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  long back[8] = {0};
  TL_OK(lmpio_file_read_ordered(fh, back, n, MPI_LONG, &st));
  TL_EQ(count_of(&st, MPI_LONG), n);
  for (int i = 0; i < n; i++) TL_EQ(back[i], (long)tl_rank * 65536 + i - 3);
  POS_IS(fh, total);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_split_ordered(void) {
  char *path = tl_path("split");
  lmpio_file fh = open_new(path, 0);
  double d = tl_rank + 0.5, back = -1;
  MPI_Status st;
  TL_OK(lmpio_file_write_ordered_begin(fh, &d, 1, MPI_DOUBLE));
  /* One split collective at a time; no other collective shared-pointer call meanwhile. */
  TL_RC(lmpio_file_write_ordered_begin(fh, &d, 1, MPI_DOUBLE), MPI_ERR_OTHER);
  TL_RC(lmpio_file_write_ordered(fh, &d, 1, MPI_DOUBLE, MPI_STATUS_IGNORE), MPI_ERR_OTHER);
  TL_RC(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET), MPI_ERR_OTHER);
  TL_RC(lmpio_file_read_ordered_end(fh, &d, &st), MPI_ERR_OTHER);
  TL_OK(lmpio_file_write_ordered_end(fh, &d, &st));
  TL_EQ(count_of(&st, MPI_DOUBLE), 1);
  TL_RC(lmpio_file_write_ordered_end(fh, &d, &st), MPI_ERR_OTHER);
  POS_IS(fh, tl_size * (int)sizeof(double));
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  /* Zero-count ranks take part in split collectives too. */
  TL_OK(lmpio_file_read_ordered_begin(fh, &back, tl_rank % 2 ? 0 : 1, MPI_DOUBLE));
  TL_OK(lmpio_file_read_ordered_end(fh, &back, &st));
  TL_EQ(count_of(&st, MPI_DOUBLE), tl_rank % 2 ? 0 : 1);
  int evens = (tl_size + 1) / 2;
  if (tl_rank % 2 == 0) TL_CHECK(back == tl_rank / 2 + 0.5);
  POS_IS(fh, evens * (int)sizeof(double));
  /* A failed begin leaves nothing active. */
  TL_RC(lmpio_file_read_ordered_begin(fh, &back, -1, MPI_DOUBLE), MPI_ERR_COUNT);
  TL_RC(lmpio_file_read_ordered_end(fh, &back, &st), MPI_ERR_OTHER);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_append_and_sequential(void) {
  char *path = tl_path("append");
  lmpio_file fh = open_new(path, 0);
  char hdr[7] = "header";
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, hdr, 7, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  /* APPEND: the shared pointer starts at end of file. */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
  POS_IS(fh, 7);
  char c = (char)('a' + tl_rank);
  TL_OK(lmpio_file_write_ordered(fh, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE));
  POS_IS(fh, 7 + tl_size);
  TL_OK(lmpio_file_close(&fh));
  /* APPEND | SEQUENTIAL: only shared-pointer access; no pointer to seek or read. */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_SEQUENTIAL,
                        MPI_INFO_NULL, &fh));
  c = (char)('A' + tl_rank);
  TL_OK(lmpio_file_write_ordered(fh, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_RC(lmpio_file_write_at(fh, 0, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write(fh, &c, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
  MPI_Offset pos;
  TL_RC(lmpio_file_get_position_shared(fh, &pos), MPI_ERR_UNSUPPORTED_OPERATION);
  /* A view starting at the current shared position. */
  TL_OK(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_CHAR, MPI_CHAR, "native", MPI_INFO_NULL));
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_EQ(disp, 7 + 2 * tl_size);
  /* write_shared after the new view lands at its start. */
  if (tl_rank == 0) TL_OK(lmpio_file_write_shared(fh, "!", 1, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  if (tl_rank == 0) {
    unsigned char got[80] = {0};
    long n = slurp(path, got, sizeof got);
    TL_EQ(n, 8 + 2 * tl_size);
    TL_CHECK(memcmp(got, "header", 7) == 0);
    for (int r = 0; r < tl_size; r++) {
      TL_EQ(got[7 + r], 'a' + r);
      TL_EQ(got[7 + tl_size + r], 'A' + r);
    }
    TL_EQ(got[7 + 2 * tl_size], '!');
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
  /* The pointer has been used collectively, so nothing is left to set up. */
  int v = 42;
  TL_OK(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    sleep(2);
  } else if (tl_rank == 1) {
    double t0 = now();
    for (int i = 0; i < 10; i++) TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
    MPI_Offset pos;
    TL_OK(lmpio_file_get_position_shared(fh, &pos));
    double dt = now() - t0;
    if (dt > 1.0) fprintf(stderr, "write_shared took %.3f s while rank 0 slept\n", dt);
    TL_CHECK(dt < 1.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fh, (tl_size + 10) * (int)sizeof(int));
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_helper_file_removed(void) {
  char *path = tl_path("helper");
  lmpio_file fh = open_new(path, 0);
  int v = 1;
  TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) { /* nothing but the data file is left beside it */
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -a \"$(dirname '%s')\" | grep -c \"$(basename '%s').lmpio-shfp\" >/dev/null", path, path);
    TL_CHECK(system(cmd) != 0);
  }
  tl_unlink(path);
}

/* ---- the same sequence through MPI_File_* and lmpio_file_* ------------ */

typedef struct {
  int mpi;
  MPI_File m;
  lmpio_file l;
} either;

#define BOTH(e, mcall, lcall) ((e)->mpi ? (mcall) : (lcall))

static int e_set_view(either *e, MPI_Offset disp, MPI_Datatype et, MPI_Datatype ft) {
  return BOTH(e, MPI_File_set_view(e->m, disp, et, ft, "native", MPI_INFO_NULL),
              lmpio_file_set_view(e->l, disp, et, ft, "native", MPI_INFO_NULL));
}
static int e_write_ordered(either *e, const void *b, int n, MPI_Datatype t) {
  int rc = BOTH(e, MPI_File_write_ordered(e->m, b, n, t, MPI_STATUS_IGNORE),
                lmpio_file_write_ordered(e->l, b, n, t, MPI_STATUS_IGNORE));
  /* ROMIO 3.2.1 can leave the pointer stale right after write_ordered: a
   * barrier on its side only (lmpio needs none). */
  if (e->mpi) MPI_Barrier(MPI_COMM_WORLD);
  return rc;
}
static int e_write_shared(either *e, const void *b, int n, MPI_Datatype t) {
  return BOTH(e, MPI_File_write_shared(e->m, b, n, t, MPI_STATUS_IGNORE),
              lmpio_file_write_shared(e->l, b, n, t, MPI_STATUS_IGNORE));
}
static int e_read_ordered(either *e, void *b, int n, MPI_Datatype t) {
  int rc = BOTH(e, MPI_File_read_ordered(e->m, b, n, t, MPI_STATUS_IGNORE),
                lmpio_file_read_ordered(e->l, b, n, t, MPI_STATUS_IGNORE));
  if (e->mpi) MPI_Barrier(MPI_COMM_WORLD);
  return rc;
}
static int e_seek_shared(either *e, MPI_Offset off, int whence) {
  return BOTH(e, MPI_File_seek_shared(e->m, off, whence), lmpio_file_seek_shared(e->l, off, whence));
}

/* The sequence; `reads` receives what read_ordered gave this rank. */
static void sequence(either *e, int *reads) {
  MPI_Datatype ft; /* 2 ints, then a hole of 1 int */
  MPI_Type_contiguous(2, MPI_INT, &ft);
  MPI_Datatype ftr;
  MPI_Type_create_resized(ft, 0, 3 * sizeof(int), &ftr);
  MPI_Type_commit(&ftr);
  MPI_Type_free(&ft);
  int v[16];
  for (int i = 0; i < 16; i++) v[i] = 100 * (tl_rank + 1) + i;
  TL_OK(e_set_view(e, 8, MPI_INT, ftr));
  TL_OK(e_write_ordered(e, v, (tl_rank * 2 + 1) % 5, MPI_INT));
  for (int t = 0; t < tl_size; t++) {
    if (tl_rank == t) TL_OK(e_write_shared(e, v + 5, t % 3 + 1, MPI_INT));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  TL_OK(e_write_ordered(e, v + 8, tl_rank % 4, MPI_INT));
  TL_OK(e_seek_shared(e, 3, MPI_SEEK_SET));
  TL_OK(e_write_ordered(e, v + 12, 1, MPI_INT));
  TL_OK(e_seek_shared(e, 0, MPI_SEEK_SET));
  TL_OK(e_read_ordered(e, reads, 3, MPI_INT));
  /* A new view in doubles: the pointer is back at its start. */
  double d[2] = {tl_rank + 0.25, tl_rank + 0.75};
  TL_OK(e_set_view(e, 4, MPI_DOUBLE, MPI_DOUBLE));
  TL_OK(e_write_ordered(e, d, 2 - tl_rank % 3 % 2 * 2, MPI_DOUBLE));
  if (tl_rank == tl_size - 1) TL_OK(e_write_shared(e, d, 1, MPI_DOUBLE));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(e_write_ordered(e, d + 1, 1, MPI_DOUBLE));
  TL_OK(e_seek_shared(e, 0, MPI_SEEK_END));
  TL_OK(e_write_ordered(e, d, tl_rank % 2 + 1, MPI_DOUBLE));
  TL_OK(e_seek_shared(e, -3, MPI_SEEK_CUR));
  TL_OK(e_write_ordered(e, d + 1, tl_rank % 2, MPI_DOUBLE));
  MPI_Type_free(&ftr);
}

static void test_same_bytes_as_mpi_io(void) {
  /* The sequence reads what other ranks wrote without syncing, which only
   * one machine's page cache makes consistent: on several machines (the
   * simulated cluster) the MPI library's own MPI-IO is no oracle. */
  MPI_Comm node;
  int here = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  int one_machine = here == tl_size;
  MPI_Allreduce(MPI_IN_PLACE, &one_machine, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!one_machine) {
    if (tl_rank == 0) fprintf(stderr, "# ranks on several machines: no comparison with the MPI library\n");
    return;
  }
  char *lpath = tl_path("cmp-lmpio"), *mpath = tl_path("cmp-mpi");
  either l = {0, MPI_FILE_NULL, LMPIO_FILE_NULL}, m = {1, MPI_FILE_NULL, LMPIO_FILE_NULL};
  l.l = open_new(lpath, 0);
  TL_CHECK(MPI_File_open(MPI_COMM_WORLD, mpath, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &m.m) == MPI_SUCCESS);
  MPI_File_set_size(m.m, 0);
  /* Both files start with the same 2052 bytes: holes of the views then hold
   * defined bytes (ROMIO's read-modify-write fills holes beyond the end of
   * file with whatever its buffer held) and 2052 = 4 + 256 doubles. */
  if (tl_rank == 0) {
    unsigned char pre[2052];
    for (int i = 0; i < 2052; i++) pre[i] = (unsigned char)(i * 7 + 1);
    TL_OK(lmpio_file_write_at(l.l, 0, pre, 2052, MPI_BYTE, MPI_STATUS_IGNORE));
    TL_CHECK(MPI_File_write_at(m.m, 0, pre, 2052, MPI_BYTE, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int rl[3] = {-1, -1, -1}, rm[3] = {-1, -1, -1};
  sequence(&l, rl);
  sequence(&m, rm);
  for (int i = 0; i < 3; i++) TL_EQ(rl[i], rm[i]);
  TL_OK(lmpio_file_close(&l.l));
  MPI_File_close(&m.m);
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    static unsigned char a[1 << 16], b[1 << 16];
    long na = slurp(lpath, a, sizeof a), nb = slurp(mpath, b, sizeof b);
    TL_EQ(na, nb);
    TL_CHECK(na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0);
    if (na == nb && na > 0 && memcmp(a, b, (size_t)na) != 0)
      for (long i = 0; i < na; i++)
        if (a[i] != b[i]) {
          fprintf(stderr, "first difference at byte %ld: lmpio %u, MPI-IO %u\n", i, a[i], b[i]);
          if (getenv("LMPIO_TEST_DUMP"))
            for (long j = 0; j < na; j += 4)
              fprintf(stderr, "%4ld: %11d %11d%s\n", j, *(int *)(void *)(a + j), *(int *)(void *)(b + j),
                      memcmp(a + j, b + j, 4) ? "  <--" : "");
          break;
        }
  }
  tl_unlink(lpath);
  tl_unlink(mpath);
}

/* A call that would move the shared pointer past 2^63 - 1 fails with
 * MPI_ERR_ARG and moves nothing: an ordered one on every rank, an
 * independent one (write_shared, read_shared, twice: the second found the
 * first's move undone) once every rank's returned.  The position was a
 * signed overflow: UBSan in the fuzzer's seed 22, spec/fuzz_methods.lua. */
typedef int (*shared_write_fn)(lmpio_file, const void *, int, MPI_Datatype, MPI_Status *);
typedef int (*shared_read_fn)(lmpio_file, void *, int, MPI_Datatype, MPI_Status *);
static void overflow_case(shared_write_fn write, shared_read_fn read, int tries) {
  char *path = tl_path("overflow");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_seek_shared(fh, LLONG_MAX - 10, MPI_SEEK_SET));
  char b[100];
  memset(b, 'x', sizeof b);
  for (int i = 0; i < tries; i++) {
    TL_RC(write(fh, b, sizeof b, MPI_BYTE, MPI_STATUS_IGNORE), MPI_ERR_ARG);
    TL_CHECK(strstr(lmpio_last_error_message(), "overflows") != NULL);
    TL_RC(read(fh, b, sizeof b, MPI_BYTE, MPI_STATUS_IGNORE), MPI_ERR_ARG);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset at = -1;
  TL_OK(lmpio_file_get_position_shared(fh, &at));
  TL_EQ(at, LLONG_MAX - 10);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}
static void test_ordered_overflow(void) { overflow_case(lmpio_file_write_ordered, lmpio_file_read_ordered, 1); }
static void test_shared_overflow(void) { overflow_case(lmpio_file_write_shared, lmpio_file_read_shared, 2); }

/* A handle closed on a communicator leaves its communicator, and its
 * pointer's mapped helper, for the next open on it (handle_comm.c): the
 * next file's pointer starts at 0 all the same; a handle open at the same
 * time has a communicator and a pointer of its own; freeing the caller's
 * communicator while a handle uses the kept one leaves that handle whole. */
static void test_kept_communicator(void) {
  char *pa = tl_path("kepta"), *pb = tl_path("keptb");
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  char b[10];
  memset(b, 'k', sizeof b);
  lmpio_file fa, fb, fc;
  TL_OK(lmpio_file_open(c, pa, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fa));
  MPI_Comm first = fa->comm;
  TL_OK(lmpio_file_write_shared(fa, b, 10, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fa, 10 * tl_size);
  TL_OK(lmpio_file_close(&fa));
  TL_OK(lmpio_file_open(c, pb, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fb));
  TL_CHECK(fb->comm == first); /* kept, and taken again */
  POS_IS(fb, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_write_shared(fb, b, 1, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_open(c, pa, MPI_MODE_RDWR, MPI_INFO_NULL, &fc)); /* while fb is open */
  TL_CHECK(fc->comm != first);
  POS_IS(fc, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_write_shared(fc, b, 3, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fc, 3 * tl_size);
  POS_IS(fb, tl_size);
  TL_OK(lmpio_file_close(&fc));
  MPI_Comm_free(&c); /* fb's communicator stays until fb closes */
  TL_OK(lmpio_file_write_shared(fb, b, 2, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  POS_IS(fb, 3 * tl_size);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_sync(fb));
  TL_OK(lmpio_file_get_size(fb, &size));
  TL_EQ(size, 3 * tl_size);
  TL_OK(lmpio_file_close(&fb));
  /* a kept communicator goes with the caller's */
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  TL_OK(lmpio_file_open(c, pa, MPI_MODE_RDWR, MPI_INFO_NULL, &fa));
  TL_OK(lmpio_file_close(&fa));
  TL_CHECK(lmpio__handle_comm_idle(c));
  MPI_Comm_free(&c);
  tl_unlink(pa);
  tl_unlink(pb);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  static const struct { const char *name; void (*fn)(void); } cases[] = {
      {"write_ordered: rank order, zero counts, pointer after each call, read_ordered back", test_write_ordered_rank_order},
      {"write_shared from all ranks: no loss, no overlap", test_write_shared_concurrent},
      {"write_shared from all ranks through a view with holes", test_write_shared_noncontiguous},
      {"shared, ordered, explicit-offset and individual calls mixed", test_mixed_access},
      {"seek_shared SET/CUR/END, view reset, errors", test_seek_shared_and_view_reset},
      {"different views on different ranks: shared access is an error", test_view_mismatch},
      {"ordered access through a noncontiguous view and memory type", test_noncontiguous_view},
      {"ordered and shared access through an external32 view", test_external32_view},
      {"split ordered collectives", test_split_ordered},
      {"APPEND starts the shared pointer at EOF; SEQUENTIAL allows only shared access", test_append_and_sequential},
      {"write_shared progresses while rank 0 is busy outside MPI", test_progress_without_owner},
      {"the helper file disappears on close", test_helper_file_removed},
      {"same file bytes as the MPI library's MPI_File_write_ordered/write_shared", test_same_bytes_as_mpi_io},
      {"an ordered call past 2^63 - 1 fails on every rank and moves nothing", test_ordered_overflow},
      {"the next open on a communicator takes the last handle's communicator; its pointer starts at 0", test_kept_communicator},
      {"write_shared or read_shared past 2^63 - 1 fails and leaves the pointer", test_shared_overflow},
  };
  int ncases = (int)(sizeof cases / sizeof cases[0]);
  for (int mode = 0; mode < (tl_size > 1 ? 2 : 1); mode++) {
    if (mode == 1) setenv("LMPIO_SHARED_FP", "lock", 1);
    for (int i = 0; i < ncases; i++) {
      char name[256];
      snprintf(name, sizeof name, "%s%s", cases[i].name, mode ? " [locked helper]" : "");
      tl_run(name, cases[i].fn);
    }
  }
  return tl_finish();
}
