/* Collective data access with two-phase collective buffering: interleaved
 * strided views, a 2-D subarray, empty accesses, holes that keep their bytes,
 * short reads at end of file, noncontiguous memory, many rounds with a tiny
 * cb_buffer_size, one or two aggregators, overlapping writes, individual
 * pointers, and error agreement.  Every case runs under several hint sets
 * (automatic, two-phase forced with small buffers, one aggregator, disabled)
 * and checks the file bytes with plain pread. */
#include "testlib.h"
#include "internals.h" /* one_node */

#include <fcntl.h>

typedef struct {
  const char *name;
  const char *kv[8]; /* key, value pairs, NULL-terminated */
  int nodes;         /* taken as ranks on several nodes (automatic then aggregates interleaved accesses) */
} hintset;

static const hintset HINTS[] = {
    {"automatic", {NULL}, 0},
    {"automatic, ranks on several nodes", {NULL}, 1},
    {"enable", {"romio_cb_write", "enable", "romio_cb_read", "enable", NULL}, 0},
    {"enable cb 64", {"romio_cb_write", "enable", "romio_cb_read", "enable", "cb_buffer_size", "64", NULL}, 0},
    {"enable 1 aggregator cb 4096",
     {"romio_cb_write", "enable", "romio_cb_read", "enable", "cb_nodes", "1", "cb_buffer_size", "4096"}, 0},
    {"enable 2 aggregators cb 100",
     {"romio_cb_write", "enable", "romio_cb_read", "enable", "cb_nodes", "2", "cb_buffer_size", "100"}, 0},
    {"disable", {"romio_cb_write", "disable", "romio_cb_read", "disable", NULL}, 0},
};
#define NHINTS (sizeof HINTS / sizeof HINTS[0])

static const hintset *cur;

static MPI_Comm *open_comm; /* NULL: MPI_COMM_WORLD; or a case's own */
static lmpio_file open_with(const char *path, int amode) {
  MPI_Info info;
  MPI_Info_create(&info);
  for (int i = 0; i < 8 && cur->kv[i]; i += 2) MPI_Info_set(info, cur->kv[i], cur->kv[i + 1]);
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(open_comm ? *open_comm : MPI_COMM_WORLD, path, amode, info, &fh));
  MPI_Info_free(&info);
  if (fh && cur->nodes) fh->one_node = 0;
  return fh;
}

/* Every rank reads the whole file with pread once all ranks are done. */
static unsigned char *file_bytes(lmpio_file fh, const char *path, long *size) {
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  int fd = open(path, O_RDONLY);
  TL_CHECK(fd >= 0);
  long n = (long)lseek(fd, 0, SEEK_END);
  unsigned char *b = malloc((size_t)n + 1);
  TL_EQ(pread(fd, b, (size_t)n, 0), n);
  close(fd);
  *size = n;
  return b;
}

static void prefill(lmpio_file fh, const char *path, long n) {
  if (tl_rank == 0) {
    unsigned char *b = malloc((size_t)n);
    for (long i = 0; i < n; i++) b[i] = (unsigned char)(i * 13 + 5);
    int fd = open(path, O_WRONLY);
    TL_EQ(pwrite(fd, b, (size_t)n, 0), n);
    close(fd);
    free(b);
  }
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
}

static unsigned char pre(long i) { return (unsigned char)(i * 13 + 5); }
static unsigned char val(int rank, long i) { return (unsigned char)(rank * 71 + i * 7 + 3); }

static void report(const char *what, long at, int got, int want) {
  tl_case_failed = 1;
  fprintf(stderr, "[rank %d] [%s] %s: byte %ld is %d, expected %d\n", tl_rank, cur->name, what, at, got, want);
}

/* View: blocks of B bytes at rank * B in tiles of (P + gap) * B, from disp. */
static MPI_Datatype strided(int B, int gap) {
  MPI_Datatype h, t;
  MPI_Type_contiguous(B, MPI_BYTE, &h);
  MPI_Type_create_resized(h, 0, (MPI_Aint)(tl_size + gap) * B, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&h);
  return t;
}

/* ---- interleaved strided views, written and read back -------------------- */

static void strided_case(int B, int gap, int nblocks) {
  char *path = tl_path("strided");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  long tile = (long)(tl_size + gap) * B, disp = 100;
  long fsize = disp + tile * nblocks + 50;
  prefill(fh, path, fsize);
  MPI_Datatype ft = strided(B, gap);
  TL_OK(lmpio_file_set_view(fh, disp + (MPI_Offset)tl_rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  long n = (long)B * nblocks;
  unsigned char *w = malloc((size_t)n), *r = malloc((size_t)n);
  for (long i = 0; i < n; i++) w[i] = val(tl_rank, i);
  MPI_Status st;
  int cnt;
  TL_OK(lmpio_file_write_at_all(fh, 0, w, (int)n, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, n);
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  TL_EQ(size, fsize);
  for (long i = 0; i < size; i++) {
    long rel = i - disp, t = rel / tile, in = rel % tile;
    int want = pre(i);
    if (rel >= 0 && t < nblocks && in < (long)tl_size * B) want = val((int)(in / B), t * B + in % B);
    if (f[i] != want) { report("file after write_at_all", i, f[i], want); break; }
  }
  memset(r, 0, (size_t)n);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, (int)n, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, n);
  for (long i = 0; i < n; i++)
    if (r[i] != w[i]) { report("read_at_all", i, r[i], w[i]); break; }
  memset(r, 0, (size_t)n);
  TL_OK(lmpio_file_read_at(fh, 0, r, (int)n, MPI_BYTE, &st));
  for (long i = 0; i < n; i++)
    if (r[i] != w[i]) { report("read_at", i, r[i], w[i]); break; }
  /* a neighbour's view read collectively: overlapping reads */
  TL_OK(lmpio_file_set_view(fh, disp + (MPI_Offset)((tl_rank + 1) % tl_size) * B, MPI_BYTE, ft, "native",
                            MPI_INFO_NULL));
  memset(r, 0, (size_t)n);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, (int)n, MPI_BYTE, &st));
  for (long i = 0; i < n; i++)
    if (r[i] != val((tl_rank + 1) % tl_size, i)) { report("neighbour read", i, r[i], val((tl_rank + 1) % tl_size, i)); break; }
  MPI_Type_free(&ft);
  free(w);
  free(r);
  free(f);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_strided(void) {
  strided_case(8, 0, 300);
  strided_case(64, 0, 40);
  strided_case(4096, 0, 3);
  strided_case(12, 1, 50); /* a hole after each tile keeps its bytes */
}

/* ---- 2-D subarray ---------------------------------------------------------- */

static void test_subarray(void) {
  char *path = tl_path("subarray");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  int dims[2] = {0, 0};
  MPI_Dims_create(tl_size, 2, dims);
  int n = 37; /* each rank n x n doubles, odd so that nothing aligns */
  int gsizes[2] = {dims[0] * n, dims[1] * n}, sub[2] = {n, n};
  int starts[2] = {(tl_rank / dims[1]) * n, (tl_rank % dims[1]) * n};
  MPI_Datatype ft;
  MPI_Type_create_subarray(2, gsizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 8, MPI_DOUBLE, ft, "native", MPI_INFO_NULL));
  double *w = malloc(sizeof(double) * n * n), *r = malloc(sizeof(double) * n * n);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) w[i * n + j] = (starts[0] + i) * 10000.0 + starts[1] + j;
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, 0, w, n * n, MPI_DOUBLE, &st));
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  TL_EQ(size, 8 + 8L * gsizes[0] * gsizes[1]);
  for (long e = 0; e < (long)gsizes[0] * gsizes[1]; e++) {
    double d, want = (double)(e / gsizes[1]) * 10000.0 + (double)(e % gsizes[1]);
    memcpy(&d, f + 8 + 8 * e, 8);
    if (d != want) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] [%s] subarray element %ld is %g, expected %g\n", tl_rank, cur->name, e, d, want);
      break;
    }
  }
  memset(r, 0, sizeof(double) * n * n);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, n * n, MPI_DOUBLE, &st));
  TL_CHECK(memcmp(r, w, sizeof(double) * n * n) == 0);
  MPI_Type_free(&ft);
  free(w);
  free(r);
  free(f);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- empty accesses --------------------------------------------------------- */

/* Odd ranks (or rank 0 when `zero_first`) pass count 0 while the others write. */
static void empty_case(int zero_first) {
  char *path = tl_path("empty");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { B = 16, NB = 20 };
  long tile = (long)tl_size * B, fsize = tile * NB + 7;
  prefill(fh, path, fsize);
  MPI_Datatype ft = strided(B, 0);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  int idle = zero_first ? tl_rank == 0 : tl_rank % 2 == 1;
  unsigned char w[B * NB], r[B * NB];
  for (int i = 0; i < B * NB; i++) w[i] = val(tl_rank, i);
  MPI_Status st;
  int cnt = -1;
  TL_OK(lmpio_file_write_at_all(fh, 0, idle ? NULL : w, idle ? 0 : B * NB, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, idle ? 0 : B * NB);
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  for (long i = 0; i < size; i++) {
    int owner = (int)((i % tile) / B);
    int oidle = zero_first ? owner == 0 : owner % 2 == 1;
    int want = i < tile * NB && !oidle ? val(owner, (i / tile) * B + i % B) : pre(i);
    if (f[i] != want) { report("file with idle ranks", i, f[i], want); break; }
  }
  memset(r, 0, sizeof r);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, idle ? 0 : B * NB, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, idle ? 0 : B * NB);
  if (!idle) TL_CHECK(memcmp(r, w, sizeof r) == 0);
  /* nobody has data */
  TL_OK(lmpio_file_write_at_all(fh, 0, w, 0, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, 0);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, 0, MPI_BYTE, &st));
  MPI_Type_free(&ft);
  free(f);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Each rank writes with holes inside a region of its own: the ranges do not
 * interleave, so automatic takes the independent path even across nodes
 * (above the ranks the first agreement gathers, the ranges are gathered to
 * tell); the holes keep their bytes. */
static void test_disjoint_holes(void) {
  char *path = tl_path("disjoint");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { REGION = 1000, NB = 20 };
  long fsize = (long)REGION * tl_size;
  prefill(fh, path, fsize);
  MPI_Datatype ft = strided(8, 2 - tl_size); /* 8 bytes every 16 */
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * REGION, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char w[8 * NB];
  for (int i = 0; i < 8 * NB; i++) w[i] = val(tl_rank, i);
  TL_OK(lmpio_file_write_at_all(fh, 0, w, 8 * NB, MPI_BYTE, MPI_STATUS_IGNORE));
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  TL_EQ(size, fsize);
  for (long i = 0; i < size; i++) {
    long r = i / REGION, in = i % REGION;
    int want = in / 16 < NB && in % 16 < 8 ? val((int)r, in / 16 * 8 + in % 16) : pre(i);
    if (f[i] != want) { report("disjoint regions with holes", i, f[i], want); break; }
  }
  free(f);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_empty(void) {
  empty_case(0);
  empty_case(1);
}

/* ---- short reads at end of file --------------------------------------------- */

static void test_short_reads(void) {
  char *path = tl_path("eof");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { B = 8, NB = 10 };
  long tile = (long)tl_size * B;
  /* the file ends inside the 4th tile, in the middle of rank 1's block */
  long fsize = 3 * tile + B + 3;
  if (tl_size == 1) fsize = 3 * tile + 3;
  prefill(fh, path, fsize);
  MPI_Datatype ft = strided(B, 0);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char r[B * NB];
  memset(r, 0xEE, sizeof r);
  MPI_Status st;
  int cnt = -1;
  TL_OK(lmpio_file_read_at_all(fh, 0, r, B * NB, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  long want = 0; /* my data bytes before end of file */
  for (long t = 0; t < NB; t++) {
    long s = t * tile + (long)tl_rank * B;
    if (s >= fsize) break;
    want += fsize - s < B ? fsize - s : B;
    if (fsize - s < B) break;
  }
  TL_EQ(cnt, want);
  for (long i = 0; i < want; i++) {
    long at = (i / B) * tile + (long)tl_rank * B + i % B;
    if (r[i] != pre(at)) { report("short read", i, r[i], pre(at)); break; }
  }
  for (long i = want; i < B * NB; i++) /* memory past end of file is left alone */
    if (r[i] != 0xEE) { report("memory past end of file", i, r[i], 0xEE); break; }
  /* with the individual pointer: it advances by the whole etypes read */
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_SET));
  TL_OK(lmpio_file_read_all(fh, r, B * NB, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, want);
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, want);
  /* entirely past the end */
  TL_OK(lmpio_file_read_at_all(fh, 1000, r, B, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  TL_EQ(cnt, 0);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- noncontiguous memory ----------------------------------------------------- */

static void test_noncontig_memory(void) {
  char *path = tl_path("memtype");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { NI = 500 };
  long fsize = 4L * NI * tl_size + 64;
  prefill(fh, path, fsize);
  /* view: ints, rank-th int of every tile of P ints (etype MPI_INT) */
  MPI_Datatype one, ft, mt;
  MPI_Type_contiguous(1, MPI_INT, &one);
  MPI_Type_create_resized(one, 0, 4L * tl_size, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&one);
  /* memory: every third int, in pairs: vector of pairs with stride 3 */
  MPI_Type_vector(NI / 2, 2, 3, MPI_INT, &mt);
  MPI_Type_commit(&mt);
  int *mem = malloc(sizeof(int) * NI * 2), *back = malloc(sizeof(int) * NI * 2);
  for (int i = 0; i < NI * 2; i++) mem[i] = i % 3 == 2 ? -1 : 1000000 * tl_rank + i;
  TL_OK(lmpio_file_set_view(fh, 12 + 4 * tl_rank, MPI_INT, ft, "native", MPI_INFO_NULL));
  MPI_Status st;
  int cnt;
  TL_OK(lmpio_file_write_at_all(fh, 0, mem, 1, mt, &st));
  MPI_Get_count(&st, mt, &cnt);
  TL_EQ(cnt, 1);
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  for (int k = 0; k < NI; k++)
    for (int rk = 0; rk < tl_size; rk++) {
      int v;
      memcpy(&v, f + 12 + 4L * (k * tl_size + rk), 4);
      int want = 1000000 * rk + (k / 2) * 3 + k % 2;
      if (v != want) {
        tl_case_failed = 1;
        fprintf(stderr, "[rank %d] [%s] int %d of rank %d is %d, expected %d\n", tl_rank, cur->name, k, rk, v, want);
        k = NI;
        break;
      }
    }
  for (int i = 0; i < NI * 2; i++) back[i] = -7;
  TL_OK(lmpio_file_read_at_all(fh, 0, back, 1, mt, &st));
  for (int i = 0; i < (NI / 2) * 3; i++) {
    int want = i % 3 == 2 ? -7 : mem[i];
    if (back[i] != want) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] [%s] memory int %d is %d, expected %d\n", tl_rank, cur->name, i, back[i], want);
      break;
    }
  }
  MPI_Type_free(&ft);
  MPI_Type_free(&mt);
  free(mem);
  free(back);
  free(f);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- overlapping writes of the same bytes, and holes ---------------------------- */

static void test_overlap(void) {
  char *path = tl_path("overlap");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { B = 8, NB = 64 };
  long fsize = 3L * B * NB + 16;
  prefill(fh, path, fsize);
  /* every rank: the same view, 1 block of B bytes in 3; all write the same data */
  MPI_Datatype h, ft;
  MPI_Type_contiguous(B, MPI_BYTE, &h);
  MPI_Type_create_resized(h, 0, 3 * B, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&h);
  TL_OK(lmpio_file_set_view(fh, 4, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char w[B * NB];
  for (int i = 0; i < B * NB; i++) w[i] = val(0, i);
  TL_OK(lmpio_file_write_at_all(fh, 0, w, B * NB, MPI_BYTE, MPI_STATUS_IGNORE));
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  for (long i = 0; i < size; i++) {
    long rel = i - 4;
    int want = rel >= 0 && rel < 3L * B * NB && rel % (3 * B) < B ? val(0, (rel / (3 * B)) * B + rel % B) : pre(i);
    if (f[i] != want) { report("overlapping writes", i, f[i], want); break; }
  }
  free(f);
  /* every rank the same contiguous bytes except one rank, which adds the holes' neighbours */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_at_all(fh, 2, w, 10, MPI_BYTE, MPI_STATUS_IGNORE));
  f = file_bytes(fh, path, &size);
  for (long i = 0; i < 20; i++) {
    int want = i >= 2 && i < 12 ? w[i - 2] : (i >= 4 && (i - 4) % (3 * B) < B ? val(0, i - 4) : pre(i));
    if (f[i] != want) { report("overlapping contiguous writes", i, f[i], want); break; }
  }
  MPI_Type_free(&ft);
  free(f);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- individual pointers ------------------------------------------------------- */

static void test_pointers(void) {
  char *path = tl_path("fp");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  MPI_Datatype one, ft;
  MPI_Type_contiguous(2, MPI_INT, &one);
  MPI_Type_create_resized(one, 0, 8L * tl_size, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&one);
  TL_OK(lmpio_file_set_view(fh, 8 * tl_rank, MPI_INT, ft, "native", MPI_INFO_NULL));
  int w[30], r[30];
  for (int i = 0; i < 30; i++) w[i] = 100 * tl_rank + i;
  MPI_Offset p = -1;
  TL_OK(lmpio_file_write_all(fh, w, 10, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 10);
  TL_OK(lmpio_file_write_all(fh, w + 10, 20, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 30);
  TL_OK(lmpio_file_seek(fh, 3, MPI_SEEK_SET));
  memset(r, 0, sizeof r);
  TL_OK(lmpio_file_read_all(fh, r, 7, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 10);
  for (int i = 0; i < 7; i++) TL_EQ(r[i], w[3 + i]);
  TL_OK(lmpio_file_read_all(fh, r, 20, MPI_INT, MPI_STATUS_IGNORE));
  for (int i = 0; i < 20; i++) TL_EQ(r[i], w[10 + i]);
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 30);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- errors: one rank's bad argument fails every rank ------------------------------
 * The failing rank moves nothing.  Where the ranks aggregate (two-phase), the
 * exchange before the rounds stops everyone, so nothing is written; where
 * each rank moves its own data (one node, or aggregation off), the call's
 * one exchange comes after the transfers: the other ranks' blocks are
 * written, each whole. */

static void test_errors(void) {
  char *path = tl_path("err");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { B = 8, NB = 16 };
  long fsize = (long)tl_size * B * NB;
  prefill(fh, path, fsize);
  MPI_Datatype one, ft;
  MPI_Type_contiguous(2, MPI_INT, &one);
  MPI_Type_create_resized(one, 0, (MPI_Aint)B * tl_size, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&one);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_INT, ft, "native", MPI_INFO_NULL));
  unsigned char w[B * NB];
  int bad = tl_size - 1;
  MPI_Status st;
  /* each call writes its own byte value, so the file tells which wrote */
  /* 3 bytes are not whole ints on the last rank */
  memset(w, 0xA1, sizeof w);
  TL_RC(lmpio_file_write_at_all(fh, 0, w, tl_rank == bad ? 3 : B * NB, MPI_BYTE, &st), MPI_ERR_TYPE);
  /* a negative count on the last rank */
  memset(w, 0xA2, sizeof w);
  TL_RC(lmpio_file_write_at_all(fh, 0, w, tl_rank == bad ? -1 : B * NB, MPI_BYTE, &st), MPI_ERR_COUNT);
  TL_RC(lmpio_file_read_at_all(fh, 0, w, tl_rank == bad ? -1 : B * NB, MPI_BYTE, &st), MPI_ERR_COUNT);
  /* a negative offset on rank 0 */
  memset(w, 0xA4, sizeof w);
  TL_RC(lmpio_file_write_at_all(fh, tl_rank == 0 ? -4 : 0, w, B * NB, MPI_BYTE, &st), MPI_ERR_ARG);
  /* 5 bytes on the last rank, one block (8 bytes) on the others */
  MPI_Offset p = -1;
  memset(w, 0xA5, sizeof w);
  TL_RC(lmpio_file_write_all(fh, w, tl_rank == bad ? 5 : 8, MPI_BYTE, &st), MPI_ERR_TYPE);
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 0); /* a failed call does not move the pointer */
  long size;
  unsigned char *f = file_bytes(fh, path, &size);
  TL_EQ(size, fsize);
  /* "automatic" on one node and "disable": each rank its own data. */
  int own = (strcmp(cur->name, "automatic") == 0 && fh->one_node) || strcmp(cur->name, "disable") == 0;
  for (long i = 0; i < size; i++) {
    int owner = (int)(i % ((long)B * tl_size) / B); /* whose view holds byte i */
    int block = (int)(i / ((long)B * tl_size));      /* and which of its blocks */
    int want = pre(i);
    if (own && tl_size > 1) { /* the last call each owner's arguments were right in */
      if (owner != bad && block == 0) want = 0xA5;
      else if (owner != 0) want = 0xA4;
      else want = 0xA2;
    }
    if (f[i] != want) { report("file after failed writes", i, f[i], want); break; }
  }
  free(f);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  /* read-only file: every rank fails the same way */
  fh = open_with(path, MPI_MODE_RDONLY);
  TL_RC(lmpio_file_write_at_all(fh, 0, w, 8, MPI_BYTE, &st), MPI_ERR_READ_ONLY);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- a write-only file: holes are left alone without reading ----------------- */

static void test_write_only(void) {
  char *path = tl_path("wronly");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  long fsize = 64L * tl_size * 4;
  prefill(fh, path, fsize);
  TL_OK(lmpio_file_close(&fh));
  fh = open_with(path, MPI_MODE_WRONLY);
  MPI_Datatype ft = strided(16, 1);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 16, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char w[64];
  for (int i = 0; i < 64; i++) w[i] = val(tl_rank, i);
  TL_OK(lmpio_file_write_at_all(fh, 0, w, 64, MPI_BYTE, MPI_STATUS_IGNORE));
  long size, tile = 16L * (tl_size + 1);
  unsigned char *f = file_bytes(fh, path, &size);
  for (long i = 0; i < size; i++) {
    long t = i / tile, in = i % tile;
    int want = t < 4 && in < 16L * tl_size ? val((int)(in / 16), t * 16 + in % 16) : pre(i);
    if (f[i] != want) { report("write-only file", i, f[i], want); break; }
  }
  free(f);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* The MPI collectives lmpio makes (the agreement's exchanges go through
 * them until a file's shared segment is made). */
static long colls;
int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  colls++;
  return PMPI_Allgather(sb, sc, st, rb, rc, rt, comm);
}
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  colls++;
  return PMPI_Allreduce(sb, rb, n, t, op, comm);
}

/* Contiguous reads that do not interleave make one exchange each, on one
 * node and across nodes (where a read guesses the independent way from the
 * last one and agrees on its outcome and ranges at once; above the ranks
 * the first agreement gathers, two: the ranges are reduced, then the
 * outcome).  Seen failing across nodes before the guess: 2 a call. */
enum { XCALLS = 20, XB = 4096 };
static void test_read_exchanges(void) {
  char *path = tl_path("exch");
  MPI_Comm fresh; /* (its handle's communicator is new: no shared segment yet) */
  MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
  open_comm = &fresh;
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  open_comm = NULL;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL)); /* (the plans see one_node) */
  prefill(fh, path, (long)XB * tl_size * XCALLS);
  unsigned char b[XB];
  long before = colls, bad = 0;
  for (int i = 0; i < XCALLS; i++) {
    MPI_Offset off = ((MPI_Offset)i * tl_size + tl_rank) * XB;
    MPI_Status st;
    TL_OK(lmpio_file_read_at_all(fh, off, b, XB, MPI_BYTE, &st));
    for (int k = 0; k < XB; k++) bad += b[k] != pre(off + k);
  }
  TL_EQ(bad, 0);
  long made = colls - before;
  int multi = tl_size > 1 && !fh->plans[LMPIO__READ].one_node;
  if (!cur->kv[0] && !lmpio__exchange_shared(fh->comm)) /* automatic, every exchange through MPI */
    TL_EQ(made, tl_size == 1 ? 0 : (long)XCALLS * (multi && !lmpio__agree_gathers(tl_size) ? 2 : 1));
  TL_OK(lmpio_file_close(&fh));
  MPI_Comm_free(&fresh);
  tl_unlink(path);
}

/* Interleaved strided reads across nodes: the first guesses the
 * independent way, its ranges choose two-phase for the next; the data are
 * right either way. */
static void test_read_guess(void) {
  char *path = tl_path("guess");
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  enum { GB = 64, GN = 512 };
  MPI_Datatype c, t;
  MPI_Type_contiguous(GB, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, (MPI_Aint)GB * tl_size, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * GB, MPI_BYTE, t, "native", MPI_INFO_NULL));
  prefill(fh, path, (long)GB * GN * tl_size);
  static unsigned char b[GB * GN];
  int multi = tl_size > 1 && !fh->plans[LMPIO__READ].one_node;
  for (int call = 0; call < 3; call++) {
    double twophase_before = tl_stat(fh, "LMPIO_TWOPHASE_BYTES_READ");
    memset(b, 0, sizeof b);
    MPI_Status st;
    TL_OK(lmpio_file_read_at_all(fh, 0, b, GB * GN, MPI_BYTE, &st));
    long bad = 0;
    for (long k = 0; k < GB * GN; k++) bad += b[k] != pre((k / GB * tl_size + tl_rank) * GB + k % GB);
    TL_EQ(bad, 0);
    int went_twophase = tl_stat(fh, "LMPIO_TWOPHASE_BYTES_READ") > twophase_before;
    if (!cur->kv[0] && multi && lmpio__agree_gathers(tl_size)) TL_EQ(went_twophase, call > 0);
  }
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- far offsets ------------------------------------------------------ */

/* The last rank writes 8 bytes at 2^61 (and at 2^40 + 3), the others 8 at
 * their own small offsets, then every rank reads its bytes back.  Two-phase
 * computed an aggregator's window with the round number in an int: far
 * from the others' data (about 2^56 and beyond) the round wrapped, nothing
 * was written, and every rank got MPI_SUCCESS with count 8 (the file stayed
 * small; the read left the buffer unfilled).  On tmpfs the bytes must land;
 * where the file system refuses the offset (ext4: "File too large"), every
 * rank must fail with the same class, never succeed without the bytes. */
static void far_case(const char *path, MPI_Offset far, int must_land) {
  lmpio_file fh = open_with(path, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (fh == LMPIO_FILE_NULL) return;
  int last = tl_size - 1;
  MPI_Offset at = tl_rank == last ? far : 8 * (MPI_Offset)tl_rank;
  long long v = 0x0102030405060708LL + tl_rank, w = 0;
  MPI_Status st;
  int n = -1, rc = lmpio_file_write_at_all(fh, at, &v, 1, MPI_LONG_LONG, &st);
  int lo = rc, hi = rc;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  TL_EQ(lo, hi); /* one class on every rank */
  if (must_land) TL_OK(rc);
  if (rc == MPI_SUCCESS) {
    MPI_Get_count(&st, MPI_LONG_LONG, &n);
    TL_EQ(n, 1);
    MPI_Offset size = -1;
    TL_OK(lmpio_file_get_size(fh, &size));
    TL_EQ(size, far + 8);
    TL_OK(lmpio_file_read_at_all(fh, at, &w, 1, MPI_LONG_LONG, &st));
    MPI_Get_count(&st, MPI_LONG_LONG, &n);
    TL_EQ(n, 1);
    TL_EQ(w, v);
  }
  TL_OK(lmpio_file_close(&fh));
  lmpio_file_delete(path, MPI_INFO_NULL);
}

static void test_far_offsets(void) {
  char shm[256];
  snprintf(shm, sizeof shm, "/dev/shm/lmpio-far-%s", strrchr(tl_path("far"), '/') + 1);
  /* (/dev/shm is each machine's own: only when every rank shares this one) */
  MPI_Comm node;
  int here = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  int shm_ok = here == tl_size && access("/dev/shm", W_OK) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &shm_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (shm_ok) {
    far_case(shm, (MPI_Offset)1 << 61, 1);
    far_case(shm, ((MPI_Offset)1 << 40) + 3, 1);
  }
  far_case(tl_path("far"), (MPI_Offset)1 << 61, 0); /* the test directory's file system decides */
}

static void each(const char *name, void (*fn)(void)) {
  for (size_t h = 0; h < NHINTS; h++) {
    cur = &HINTS[h];
    char full[256];
    snprintf(full, sizeof full, "%s [%s]", name, cur->name);
    tl_run(full, fn);
  }
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  each("interleaved strided views (8 B, 64 B, 4 KiB, with holes)", test_strided);
  each("2-D subarray distribution", test_subarray);
  each("ranks with count 0 and an idle rank", test_empty);
  each("holes inside disjoint regions", test_disjoint_holes);
  each("short reads at end of file: counts per rank", test_short_reads);
  each("noncontiguous memory types", test_noncontig_memory);
  each("overlapping writes", test_overlap);
  each("individual pointers advance", test_pointers);
  each("one rank's bad argument fails every rank, the failing rank writes nothing", test_errors);
  each("write-only file keeps its holes", test_write_only);
  each("contiguous reads that do not interleave: one exchange a call", test_read_exchanges);
  each("interleaved reads across nodes: the first guesses independent, the next go two-phase", test_read_guess);
  each("far offsets (2^40, 2^61): the bytes land, or every rank fails alike", test_far_offsets);
  return tl_finish();
}
