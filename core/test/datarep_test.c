/* Data representations: the registry, user-defined conversions (chunked with
 * increasing position, errors, MPI_CONVERSION_FN_NULL), file extents and
 * external32 layouts. */
#include "testlib.h"

#include <stdint.h>

/* "f32": doubles stored as big-endian 4-byte floats, ints as big-endian. */
static int calls, max_count;
static MPI_Offset positions[4096];

static uint32_t bswap32(uint32_t v) { return __builtin_bswap32(v); }

static int f32_extent(MPI_Datatype t, MPI_Aint *ext, void *state) {
  (void)state;
  if (t == MPI_DOUBLE || t == MPI_INT || t == MPI_FLOAT) { *ext = 4; return MPI_SUCCESS; }
  return MPI_ERR_TYPE;
}

/* The tests only use contiguous buffers of one predefined type. */
static int f32_write(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *state) {
  (void)state;
  if (calls < 4096) positions[calls] = position;
  calls++;
  if (count > max_count) max_count = count;
  uint32_t *out = filebuf;
  for (int i = 0; i < count; i++) {
    uint32_t bits;
    if (t == MPI_DOUBLE) {
      double d = ((double *)userbuf)[position + i];
      if (d == 13.0) return MPI_ERR_OTHER; /* a value the converter refuses */
      float f = (float)d;
      memcpy(&bits, &f, 4);
    } else {
      memcpy(&bits, (int *)userbuf + position + i, 4);
    }
    out[i] = bswap32(bits);
  }
  return MPI_SUCCESS;
}

static int f32_read(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *state) {
  (void)state;
  calls++;
  const uint32_t *in = filebuf;
  for (int i = 0; i < count; i++) {
    uint32_t bits = bswap32(in[i]);
    if (t == MPI_DOUBLE) {
      float f;
      memcpy(&f, &bits, 4);
      ((double *)userbuf)[position + i] = f;
    } else {
      memcpy((int *)userbuf + position + i, &bits, 4);
    }
  }
  return MPI_SUCCESS;
}

static int same_extent(MPI_Datatype t, MPI_Aint *ext, void *state) {
  (void)state;
  int s;
  MPI_Type_size(t, &s);
  *ext = s;
  return MPI_SUCCESS;
}

static void register_all(void) {
  TL_OK(lmpio_register_datarep("f32", f32_read, f32_write, f32_extent, NULL));
  TL_OK(lmpio_register_datarep("asis", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, same_extent, NULL));
}

static void test_registry(void) {
  TL_RC(lmpio_register_datarep("f32", f32_read, f32_write, f32_extent, NULL), MPI_ERR_DUP_DATAREP);
  TL_RC(lmpio_register_datarep("external32", f32_read, f32_write, f32_extent, NULL), MPI_ERR_DUP_DATAREP);
  TL_RC(lmpio_register_datarep("native", f32_read, f32_write, f32_extent, NULL), MPI_ERR_DUP_DATAREP);
  char longname[MPI_MAX_DATAREP_STRING + 8];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  TL_RC(lmpio_register_datarep(longname, f32_read, f32_write, f32_extent, NULL), MPI_ERR_ARG);
  char *path = tl_path("registry");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "nosuchrep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);
  MPI_Aint ext;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "f32", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_type_extent(fh, MPI_DOUBLE, &ext));
  TL_EQ(ext, 4);
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_DOUBLE, &three);
  MPI_Type_commit(&three);
  TL_OK(lmpio_file_get_type_extent(fh, three, &ext));
  TL_EQ(ext, 12);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_type_extent(fh, MPI_LONG, &ext));
  TL_EQ(ext, 4);
  TL_OK(lmpio_file_get_type_extent(fh, MPI_LONG_DOUBLE, &ext));
  TL_EQ(ext, 16);
  TL_OK(lmpio_file_get_type_extent(fh, three, &ext));
  TL_EQ(ext, 24);
  char rep[MPI_MAX_DATAREP_STRING + 1];
  MPI_Offset disp;
  MPI_Datatype et, ft;
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_CHECK(strcmp(rep, "external32") == 0);
  MPI_Type_free(&three);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static unsigned char *slurp(const char *path, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f) { *n = 0; return NULL; }
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)*n + 1);
  *n = (long)fread(b, 1, (size_t)*n, f);
  fclose(f);
  return b;
}

/* Doubles through "f32" with a 16-byte conversion buffer: the converter
 * is called four items at a time with increasing position. */
static void test_user_rep_chunked(void) {
  char *path = tl_path("f32");
  lmpio_file fh;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "lmpio_conversion_buffer_size", "16");
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info_free(&info);
  /* Each rank owns 10 doubles, 40 bytes in the file. */
  MPI_Datatype ft;
  MPI_Type_contiguous(1, MPI_DOUBLE, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 40, MPI_DOUBLE, ft, "f32", MPI_INFO_NULL));
  double d[10];
  for (int i = 0; i < 10; i++) d[i] = tl_rank * 100 + i + 0.5;
  calls = 0;
  max_count = 0;
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, 0, d, 10, MPI_DOUBLE, &st));
  int cnt;
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  TL_EQ(cnt, 10);
  TL_EQ(calls, 3);     /* 4 + 4 + 2 items */
  TL_EQ(max_count, 4);
  TL_EQ(positions[0], 0);
  TL_EQ(positions[1], 4);
  TL_EQ(positions[2], 8);
  MPI_Offset pos;
  TL_OK(lmpio_file_write(fh, d, 2, MPI_DOUBLE, &st)); /* individual pointer: 2 etypes */
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, 2);
  double back[10] = {0};
  TL_OK(lmpio_file_read_at_all(fh, 0, back, 10, MPI_DOUBLE, &st));
  for (int i = 0; i < 10; i++) TL_CHECK(back[i] == d[i]);
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) { /* 4-byte big-endian floats in the file */
    long n;
    unsigned char *b = slurp(path, &n);
    TL_EQ(n, 40 * tl_size);
    float f = 0.5f; /* rank 0, item 0 */
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (b) {
      TL_EQ(b[0], bits >> 24);
      TL_EQ(b[3], bits & 0xff);
    }
    free(b);
  }
  MPI_Type_free(&ft);
  tl_unlink(path);
}

/* A converter that fails makes the call fail with MPI_ERR_CONVERSION on
 * every rank of a collective call. */
static void test_conversion_error(void) {
  char *path = tl_path("converr");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 8, MPI_DOUBLE, MPI_DOUBLE, "f32", MPI_INFO_NULL));
  double d[2] = {1.0, tl_rank == tl_size - 1 ? 13.0 : 2.0};
  TL_RC(lmpio_file_write_at_all(fh, 0, d, 2, MPI_DOUBLE, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  TL_CHECK(strstr(lmpio_last_error_message(), "f32") != NULL);
  TL_RC(lmpio_file_write_at(fh, 0, d, 1, MPI_DOUBLE, MPI_STATUS_IGNORE), MPI_SUCCESS);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_fn_null_moves_native(void) {
  char *path = tl_path("asis");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 12, MPI_INT, MPI_INT, "asis", MPI_INFO_NULL));
  int v[3] = {tl_rank, 0x01020304, -tl_rank}, back[3];
  TL_OK(lmpio_file_write_at_all(fh, 0, v, 3, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 12, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at_all(fh, 0, back, 3, MPI_INT, MPI_STATUS_IGNORE));
  for (int i = 0; i < 3; i++) TL_EQ(back[i], v[i]);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* external32: big-endian ints, 4-byte longs, portable filetypes rebuilt with
 * file extents, range errors, and a round trip through a strided view. */
static void test_external32_layout(void) {
  char *path = tl_path("ext32");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  /* Rank r owns long number r of every group of size: a portable vector. */
  MPI_Datatype vec, ft;
  MPI_Type_vector(1, 1, tl_size, MPI_LONG, &vec);
  MPI_Type_contiguous(1, vec, &ft); /* still portable */
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * 4, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
  long v[3] = {tl_rank, 0x01020304L, -1 - tl_rank}, back[3] = {0};
  TL_OK(lmpio_file_write_at_all(fh, 0, v, 1, MPI_LONG, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_sync(fh));
  MPI_Offset size;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 4 * tl_size);
  long big = 1L << 40;
  TL_RC(lmpio_file_write_at(fh, 0, &big, 1, MPI_LONG, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 4 * tl_size); /* nothing written by the failed call */
  TL_OK(lmpio_file_read_at_all(fh, 0, back, 1, MPI_LONG, MPI_STATUS_IGNORE));
  TL_EQ(back[0], tl_rank);
  MPI_Type_free(&vec);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    long n;
    unsigned char *b = slurp(path, &n);
    for (int r = 0; b && r < tl_size; r++) {
      TL_EQ(b[4 * r], 0);
      TL_EQ(b[4 * r + 3], r);
    }
    free(b);
  }
  tl_unlink(path);
}

/* ---- external32, type by type ------------------------------------------- */

#include <complex.h>
#include <float.h>
#include <math.h>
#include <wchar.h>

/* Two handles on one file: fh32 sees it through an "external32" view, fhn
 * through a native byte view, both at this rank's own 1 KiB region. */
static lmpio_file fh32, fhn;
static char *x32_path;

static void x32_open(const char *tag) {
  x32_path = tl_path(tag);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, x32_path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh32));
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, x32_path, MPI_MODE_RDWR, MPI_INFO_NULL, &fhn));
  MPI_Offset disp = (MPI_Offset)tl_rank * 1024;
  TL_OK(lmpio_file_set_view(fh32, disp, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  TL_OK(lmpio_file_set_view(fhn, disp, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
}

static void x32_close(void) {
  TL_OK(lmpio_file_close(&fh32));
  TL_OK(lmpio_file_close(&fhn));
  tl_unlink(x32_path);
}

static void print_bytes(const char *what, const unsigned char *b, int n) {
  fprintf(stderr, "[rank %d]   %s:", tl_rank, what);
  for (int i = 0; i < n; i++) fprintf(stderr, " %02X", b[i]);
  fprintf(stderr, "\n");
}

/* Writes n items of t from val through the external32 view, checks the
 * file bytes against img (len bytes), reads them back and compares with val:
 * the first cmp bytes of every psize bytes (0, 0: everything), so padding
 * (x87's 6 bytes, a pair's hole) is not compared. */
static void image_cmp(const char *name, MPI_Datatype t, const void *val, int n, const char *img, int len,
                      int psize, int cmp) {
  unsigned char got[512], back[512];
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  int nsize = (int)ext;
  if (!psize) psize = cmp = nsize;
  MPI_Status st;
  int rc = lmpio_file_write_at(fh32, 0, val, n, t, &st);
  if (rc != MPI_SUCCESS) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: write failed: %s\n", tl_rank, name, lmpio_last_error_message());
    return;
  }
  int cnt = -1;
  MPI_Get_count(&st, t, &cnt);
  memset(got, 0xEE, sizeof got);
  TL_OK(lmpio_file_read_at(fhn, 0, got, len, MPI_BYTE, MPI_STATUS_IGNORE));
  if (cnt != n || memcmp(got, img, (size_t)len) != 0) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: wrong external32 image (count %d of %d)\n", tl_rank, name, cnt, n);
    print_bytes("expected", (const unsigned char *)img, len);
    print_bytes("got     ", got, len);
  }
  memset(back, 0, sizeof back);
  TL_OK(lmpio_file_read_at(fh32, 0, back, n, t, &st));
  MPI_Get_count(&st, t, &cnt);
  int ok = cnt == n;
  for (int i = 0; ok && i < n * nsize; i += psize)
    ok = memcmp(back + i, (const char *)val + i, (size_t)cmp) == 0;
  if (!ok) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: round trip differs\n", tl_rank, name);
    print_bytes("sent", val, n * nsize);
    print_bytes("back", back, n * nsize);
  }
}
#define IMAGE(t, val, n, img) image_cmp(#t, t, val, n, img, (int)sizeof(img) - 1, 0, 0)
#define LDBL_BYTES (LDBL_MANT_DIG == 64 ? 10 : (int)sizeof(long double))
#define IMAGE_LDBL(t, val, n, img) \
  image_cmp(#t, t, val, n, img, (int)sizeof(img) - 1, (int)sizeof(long double), LDBL_BYTES)

/* The standard's table (and Open MPI's additions) with external32 sizes. */
static void test_external32_sizes(void) {
  static const struct { const char *name; int size; } want[] = {
      {"MPI_PACKED", 1}, {"MPI_BYTE", 1}, {"MPI_CHAR", 1}, {"MPI_UNSIGNED_CHAR", 1},
      {"MPI_SIGNED_CHAR", 1}, {"MPI_WCHAR", 2}, {"MPI_SHORT", 2}, {"MPI_UNSIGNED_SHORT", 2},
      {"MPI_INT", 4}, {"MPI_UNSIGNED", 4}, {"MPI_LONG", 4}, {"MPI_UNSIGNED_LONG", 4},
      {"MPI_LONG_LONG_INT", 8}, {"MPI_LONG_LONG", 8}, {"MPI_UNSIGNED_LONG_LONG", 8},
      {"MPI_FLOAT", 4}, {"MPI_DOUBLE", 8}, {"MPI_LONG_DOUBLE", 16},
      {"MPI_C_BOOL", 1}, {"MPI_INT8_T", 1}, {"MPI_INT16_T", 2}, {"MPI_INT32_T", 4},
      {"MPI_INT64_T", 8}, {"MPI_UINT8_T", 1}, {"MPI_UINT16_T", 2}, {"MPI_UINT32_T", 4},
      {"MPI_UINT64_T", 8}, {"MPI_AINT", 8}, {"MPI_COUNT", 8}, {"MPI_OFFSET", 8},
      {"MPI_C_COMPLEX", 8}, {"MPI_C_FLOAT_COMPLEX", 8}, {"MPI_C_DOUBLE_COMPLEX", 16},
      {"MPI_C_LONG_DOUBLE_COMPLEX", 32}, {"MPI_CXX_BOOL", 1}, {"MPI_CXX_FLOAT_COMPLEX", 8},
      {"MPI_CXX_DOUBLE_COMPLEX", 16}, {"MPI_CXX_LONG_DOUBLE_COMPLEX", 32},
      {"MPI_CHARACTER", 1}, {"MPI_LOGICAL", 4}, {"MPI_INTEGER", 4}, {"MPI_REAL", 4},
      {"MPI_DOUBLE_PRECISION", 8}, {"MPI_COMPLEX", 8}, {"MPI_DOUBLE_COMPLEX", 16},
      {"MPI_INTEGER1", 1}, {"MPI_INTEGER2", 2}, {"MPI_INTEGER4", 4}, {"MPI_INTEGER8", 8},
      {"MPI_REAL4", 4}, {"MPI_REAL8", 8}, {"MPI_REAL16", 16}, {"MPI_COMPLEX8", 8},
      {"MPI_COMPLEX16", 16}, {"MPI_COMPLEX32", 32},
      /* pairs: laid out part by part by typemap.c */
      {"MPI_2INT", 8}, {"MPI_FLOAT_INT", 8}, {"MPI_DOUBLE_INT", 12}, {"MPI_LONG_INT", 8},
      {"MPI_SHORT_INT", 6}, {"MPI_LONG_DOUBLE_INT", 20}, {"MPI_2INTEGER", 8}, {"MPI_2REAL", 8},
      {"MPI_2DOUBLE_PRECISION", 16},
  };
  const MPI_Datatype types[] = {
      MPI_PACKED, MPI_BYTE, MPI_CHAR, MPI_UNSIGNED_CHAR,
      MPI_SIGNED_CHAR, MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
      MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG,
      MPI_LONG_LONG_INT, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
      MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
      MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T,
      MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
      MPI_UINT64_T, MPI_AINT, MPI_COUNT, MPI_OFFSET,
      MPI_C_COMPLEX, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
      MPI_C_LONG_DOUBLE_COMPLEX, MPI_CXX_BOOL, MPI_CXX_FLOAT_COMPLEX,
      MPI_CXX_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX,
      MPI_CHARACTER, MPI_LOGICAL, MPI_INTEGER, MPI_REAL,
      MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_DOUBLE_COMPLEX,
      MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8,
      MPI_REAL4, MPI_REAL8, MPI_REAL16, MPI_COMPLEX8,
      MPI_COMPLEX16, MPI_COMPLEX32,
      MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
      MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_2INTEGER, MPI_2REAL,
      MPI_2DOUBLE_PRECISION,
  };
  TL_EQ(sizeof types / sizeof types[0], sizeof want / sizeof want[0]);
  x32_open("x32sizes");
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    MPI_Aint ext = -1;
    int rc = lmpio_file_get_type_extent(fh32, types[i], &ext);
    if (rc != MPI_SUCCESS || ext != want[i].size) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] %s: external32 extent %ld (%s), expected %d\n", tl_rank, want[i].name,
              (long)ext, lmpio_error_class_name(rc), want[i].size);
    }
  }
  /* Portable derived types are rebuilt with the file's sizes (3 longs: 12
   * bytes); a struct is not portable and keeps its byte displacements
   * (char at 0, double at 8, int at 16: extent 20). */
  MPI_Datatype three, st;
  MPI_Type_contiguous(3, MPI_LONG, &three);
  MPI_Type_commit(&three);
  int bl[3] = {1, 1, 1};
  MPI_Aint disp[3] = {0, 8, 16};
  MPI_Datatype tt[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
  MPI_Type_create_struct(3, bl, disp, tt, &st);
  MPI_Type_commit(&st);
  MPI_Aint ext;
  TL_OK(lmpio_file_get_type_extent(fh32, three, &ext));
  TL_EQ(ext, 12);
  TL_OK(lmpio_file_get_type_extent(fh32, st, &ext));
  TL_EQ(ext, 20);
  /* A resized member's bounds hold in the struct, whatever its other
   * members (MPI's markers are sticky): a resized int (lb 0, extent 16) at
   * 0 and a double at 100, extent 16; a double at 0 and an int resized to
   * lb -4 and extent 8 at 20, extent 8; two of the first, 32.  Open MPI says
   * the same of them natively, where the sizes are the same; MPICH holds
   * resized bounds not sticky (112, 24 and 224 natively, with its alignment
   * padding: model_test's data below the lower bound).  (Seen failing: 108,
   * 24 and 216, the bounds of all the members.) */
  MPI_Datatype r16, r8, m1, m2, m3;
  MPI_Type_create_resized(MPI_INT, 0, 16, &r16);
  MPI_Type_create_resized(MPI_INT, -4, 8, &r8);
  MPI_Datatype t1[2] = {r16, MPI_DOUBLE}, t2[2] = {MPI_DOUBLE, r8};
  MPI_Aint d1[2] = {0, 100}, d2[2] = {0, 20};
  MPI_Type_create_struct(2, bl, d1, t1, &m1);
  MPI_Type_create_struct(2, bl, d2, t2, &m2);
  MPI_Type_contiguous(2, m1, &m3);
  MPI_Datatype marked[3] = {m1, m2, m3};
  MPI_Aint sticky[3] = {16, 8, 32}, loose[3] = {112, 24, 224};
  for (int i = 0; i < 3; i++) {
    MPI_Type_commit(&marked[i]);
    MPI_Aint lb, native;
    MPI_Type_get_extent(marked[i], &lb, &native);
    TL_OK(lmpio_file_get_type_extent(fh32, marked[i], &ext));
    TL_EQ(ext, sticky[i]);
    TL_CHECK(native == sticky[i] || native == loose[i]); /* the standard's, or MPICH's */
  }
  for (int i = 0; i < 3; i++) MPI_Type_free(&marked[i]);
  MPI_Type_free(&r16);
  MPI_Type_free(&r8);
  MPI_Type_free(&three);
  MPI_Type_free(&st);
  x32_close();
}

/* Types made by MPI_Type_create_f90_*: sizes from (p, r) as the standard says. */
static void test_external32_f90(void) {
  x32_open("x32f90");
  MPI_Datatype i4, i8, r4, r8, c8;
  MPI_Aint ext;
  if (MPI_Type_create_f90_integer(9, &i4) == MPI_SUCCESS) {
    TL_OK(lmpio_file_get_type_extent(fh32, i4, &ext));
    TL_EQ(ext, 4);
    int v[2] = {0x01020304, -2};
    IMAGE(i4, v, 2, "\x01\x02\x03\x04\xff\xff\xff\xfe");
  }
  if (MPI_Type_create_f90_integer(18, &i8) == MPI_SUCCESS) {
    TL_OK(lmpio_file_get_type_extent(fh32, i8, &ext));
    TL_EQ(ext, 8);
  }
  if (MPI_Type_create_f90_real(6, MPI_UNDEFINED, &r4) == MPI_SUCCESS) {
    TL_OK(lmpio_file_get_type_extent(fh32, r4, &ext));
    TL_EQ(ext, 4);
    float f = 1.0f;
    IMAGE(r4, &f, 1, "\x3f\x80\x00\x00");
  }
  if (MPI_Type_create_f90_real(MPI_UNDEFINED, 300, &r8) == MPI_SUCCESS) {
    TL_OK(lmpio_file_get_type_extent(fh32, r8, &ext));
    TL_EQ(ext, 8);
  }
  if (MPI_Type_create_f90_complex(15, MPI_UNDEFINED, &c8) == MPI_SUCCESS) {
    TL_OK(lmpio_file_get_type_extent(fh32, c8, &ext));
    TL_EQ(ext, 16);
  }
  x32_close();
}

/* A known big-endian image per type, and the round trip. */
static void test_external32_images(void) {
  x32_open("x32img");
  { char v[3] = {'x', '\0', (char)0xE9}; IMAGE(MPI_CHAR, v, 3, "x\x00\xe9"); }
  { unsigned char v[2] = {0, 0xFF}; IMAGE(MPI_BYTE, v, 2, "\x00\xff"); IMAGE(MPI_PACKED, v, 2, "\x00\xff");
    IMAGE(MPI_UNSIGNED_CHAR, v, 2, "\x00\xff"); IMAGE(MPI_UINT8_T, v, 2, "\x00\xff"); }
  { signed char v[2] = {-1, 5}; IMAGE(MPI_SIGNED_CHAR, v, 2, "\xff\x05"); IMAGE(MPI_INT8_T, v, 2, "\xff\x05"); }
  { wchar_t v[3] = {L'A', 0x20AC, 0xFFFF}; IMAGE(MPI_WCHAR, v, 3, "\x00\x41\x20\xac\xff\xff"); }
  { short v[2] = {-2, 0x1234}; IMAGE(MPI_SHORT, v, 2, "\xff\xfe\x12\x34"); IMAGE(MPI_INT16_T, v, 2, "\xff\xfe\x12\x34"); }
  { unsigned short v[1] = {0xA1B2}; IMAGE(MPI_UNSIGNED_SHORT, v, 1, "\xa1\xb2"); IMAGE(MPI_UINT16_T, v, 1, "\xa1\xb2"); }
  { int v[2] = {0x01020304, -2}; IMAGE(MPI_INT, v, 2, "\x01\x02\x03\x04\xff\xff\xff\xfe");
    IMAGE(MPI_INT32_T, v, 2, "\x01\x02\x03\x04\xff\xff\xff\xfe");
    IMAGE(MPI_INTEGER, v, 2, "\x01\x02\x03\x04\xff\xff\xff\xfe");
    IMAGE(MPI_INTEGER4, v, 2, "\x01\x02\x03\x04\xff\xff\xff\xfe");
    IMAGE(MPI_2INT, v, 1, "\x01\x02\x03\x04\xff\xff\xff\xfe");
    IMAGE(MPI_2INTEGER, v, 1, "\x01\x02\x03\x04\xff\xff\xff\xfe"); }
  { int v[2] = {1, 0}; IMAGE(MPI_LOGICAL, v, 2, "\x00\x00\x00\x01\x00\x00\x00\x00"); }
  { unsigned v[1] = {0xA1B2C3D4u}; IMAGE(MPI_UNSIGNED, v, 1, "\xa1\xb2\xc3\xd4"); IMAGE(MPI_UINT32_T, v, 1, "\xa1\xb2\xc3\xd4"); }
  { long v[4] = {0x01020304L, -2L, 2147483647L, -2147483647L - 1};
    IMAGE(MPI_LONG, v, 4, "\x01\x02\x03\x04\xff\xff\xff\xfe\x7f\xff\xff\xff\x80\x00\x00\x00"); }
  { unsigned long v[2] = {0xFFFFFFFFUL, 7}; IMAGE(MPI_UNSIGNED_LONG, v, 2, "\xff\xff\xff\xff\x00\x00\x00\x07"); }
  { long long v[2] = {0x0102030405060708LL, -3};
    const char img[] = "\x01\x02\x03\x04\x05\x06\x07\x08\xff\xff\xff\xff\xff\xff\xff\xfd";
    IMAGE(MPI_LONG_LONG, v, 2, img); IMAGE(MPI_LONG_LONG_INT, v, 2, img); IMAGE(MPI_INT64_T, v, 2, img);
    IMAGE(MPI_INTEGER8, v, 2, img); IMAGE(MPI_UNSIGNED_LONG_LONG, v, 2, img); IMAGE(MPI_UINT64_T, v, 2, img); }
  { MPI_Aint a[1] = {-3}; MPI_Offset o[1] = {0x0102030405060708LL}; MPI_Count c[1] = {-3};
    IMAGE(MPI_AINT, a, 1, "\xff\xff\xff\xff\xff\xff\xff\xfd"); IMAGE(MPI_OFFSET, o, 1, "\x01\x02\x03\x04\x05\x06\x07\x08");
    IMAGE(MPI_COUNT, c, 1, "\xff\xff\xff\xff\xff\xff\xff\xfd"); }
  { signed char i1[1] = {-7}; short i2[1] = {0x0102};
    IMAGE(MPI_INTEGER1, i1, 1, "\xf9"); IMAGE(MPI_INTEGER2, i2, 1, "\x01\x02"); }
  { _Bool b[2] = {1, 0}; IMAGE(MPI_C_BOOL, b, 2, "\x01\x00"); }
  { char b[2] = {1, 0}; int sz; MPI_Type_size(MPI_CXX_BOOL, &sz);
    if (sz == 1) IMAGE(MPI_CXX_BOOL, b, 2, "\x01\x00"); }
  { char c[2] = {'c', 'd'}; IMAGE(MPI_CHARACTER, c, 2, "cd"); }
  { float f[2] = {1.0f, -2.0f}; IMAGE(MPI_FLOAT, f, 2, "\x3f\x80\x00\x00\xc0\x00\x00\x00");
    IMAGE(MPI_REAL, f, 2, "\x3f\x80\x00\x00\xc0\x00\x00\x00"); IMAGE(MPI_REAL4, f, 2, "\x3f\x80\x00\x00\xc0\x00\x00\x00");
    IMAGE(MPI_2REAL, f, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00");
    IMAGE(MPI_COMPLEX, f, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00"); IMAGE(MPI_COMPLEX8, f, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00"); }
  { float complex z[1];
    ((float *)z)[0] = 1.0f; /* CMPLXF is missing under clang + glibc */
    ((float *)z)[1] = -2.0f;
    IMAGE(MPI_C_FLOAT_COMPLEX, z, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00");
    IMAGE(MPI_C_COMPLEX, z, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00");
    IMAGE(MPI_CXX_FLOAT_COMPLEX, z, 1, "\x3f\x80\x00\x00\xc0\x00\x00\x00"); }
  { double d[2] = {1.0, -2.5};
    const char img[] = "\x3f\xf0\x00\x00\x00\x00\x00\x00\xc0\x04\x00\x00\x00\x00\x00\x00";
    IMAGE(MPI_DOUBLE, d, 2, img); IMAGE(MPI_DOUBLE_PRECISION, d, 2, img); IMAGE(MPI_REAL8, d, 2, img);
    IMAGE(MPI_2DOUBLE_PRECISION, d, 1, img); IMAGE(MPI_DOUBLE_COMPLEX, d, 1, img); IMAGE(MPI_COMPLEX16, d, 1, img);
    double complex z[1];
    ((double *)z)[0] = 1.0;
    ((double *)z)[1] = -2.5;
    IMAGE(MPI_C_DOUBLE_COMPLEX, z, 1, img); IMAGE(MPI_CXX_DOUBLE_COMPLEX, z, 1, img); }
  { long double l[2];
    l[0] = 1.0L;
    l[1] = -2.5L;
    const char img[] = "\x3f\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                       "\xc0\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    IMAGE_LDBL(MPI_LONG_DOUBLE, l, 2, img);
    long double complex z[1];
    ((long double *)z)[0] = 1.0L;
    ((long double *)z)[1] = -2.5L;
    IMAGE_LDBL(MPI_C_LONG_DOUBLE_COMPLEX, z, 1, img); IMAGE_LDBL(MPI_CXX_LONG_DOUBLE_COMPLEX, z, 1, img);
    /* Open MPI's pair of a long double and an int, part by part */
    struct { long double l; int i; } li[1] = {{1.0L, 0x01020304}};
    image_cmp("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, li, 1,
              "\x3f\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 20,
              (int)sizeof li, LDBL_BYTES); }
  { /* REAL*16 is IEEE binary128 natively (gfortran, ifort): bytes reversed. */
    unsigned char q[32] = {0};
    q[15] = 0x3f; q[14] = 0xff; q[31] = 0xc0; q[30] = 0x00; q[29] = 0x40;
    const char img[] = "\x3f\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                       "\xc0\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    IMAGE(MPI_REAL16, q, 2, img); IMAGE(MPI_COMPLEX32, q, 1, img); }
  { /* pairs, part by part */
    struct { double d; int i; } di[1] = {{1.0, 0x01020304}};
    image_cmp("MPI_DOUBLE_INT", MPI_DOUBLE_INT, di, 1, "\x3f\xf0\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04", 12,
              (int)sizeof di, 12); /* not the padding after the int */
    struct { short s; int i; } si[1] = {{-2, 7}};
    image_cmp("MPI_SHORT_INT", MPI_SHORT_INT, si, 1, "\xff\xfe\x00\x00\x00\x07", 6, (int)sizeof si, 2); }
  x32_close();
}

/* Values that do not fit the file's width fail with MPI_ERR_CONVERSION and
 * leave the file outside the call's range alone; narrow file values widen
 * with sign (or zero) extension. */
static void test_external32_range(void) {
  x32_open("x32range");
  long four[4] = {1, 2, 3, 4};
  TL_OK(lmpio_file_write_at(fh32, 0, four, 4, MPI_LONG, MPI_STATUS_IGNORE));
  long bad[2] = {9, 2147483648L}; /* 2^31 */
  TL_RC(lmpio_file_write_at(fh32, 4, bad, 2, MPI_LONG, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  bad[1] = -2147483647L - 2; /* -2^31 - 1 */
  TL_RC(lmpio_file_write_at(fh32, 4, bad, 2, MPI_LONG, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  unsigned long ubad = 4294967296UL;
  TL_RC(lmpio_file_write_at(fh32, 4, &ubad, 1, MPI_UNSIGNED_LONG, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  wchar_t wbad[2] = {L'a', 0x10000};
  TL_RC(lmpio_file_write_at(fh32, 4, wbad, 2, MPI_WCHAR, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  wbad[1] = -1;
  TL_RC(lmpio_file_write_at(fh32, 4, wbad, 2, MPI_WCHAR, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  /* a collective write fails on every rank when one rank's data is bad */
  long one = tl_rank == tl_size - 1 ? (1L << 40) : 5;
  TL_RC(lmpio_file_write_at_all(fh32, 16, &one, 1, MPI_LONG, MPI_STATUS_IGNORE), MPI_ERR_CONVERSION);
  unsigned char got[16];
  TL_OK(lmpio_file_read_at(fhn, 0, got, 16, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(got[3], 1);
  TL_EQ(got[15], 4);
  TL_EQ(got[0] | got[1] | got[2] | got[12] | got[13] | got[14], 0);
  /* sign extension of a 4-byte file long, zero extension of an unsigned one */
  const unsigned char neg[8] = {0xff, 0xff, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00};
  TL_OK(lmpio_file_write_at(fhn, 0, neg, 8, MPI_BYTE, MPI_STATUS_IGNORE));
  long l[2] = {0, 0};
  TL_OK(lmpio_file_read_at(fh32, 0, l, 2, MPI_LONG, MPI_STATUS_IGNORE));
  TL_EQ(l[0], -2);
  TL_EQ(l[1], -2147483647L - 1);
  unsigned long ul[2] = {0, 0};
  TL_OK(lmpio_file_read_at(fh32, 0, ul, 2, MPI_UNSIGNED_LONG, MPI_STATUS_IGNORE));
  TL_CHECK(ul[0] == 0xFFFFFFFEUL && ul[1] == 0x80000000UL);
  wchar_t w[2];
  TL_OK(lmpio_file_read_at(fh32, 0, w, 2, MPI_WCHAR, MPI_STATUS_IGNORE));
  TL_CHECK(w[0] == 0xFFFF && w[1] == 0xFFFE);
  x32_close();
}

/* binary128 from its parts, big-endian. */
static void q128_bytes(unsigned char *b, int sign, unsigned exp, uint64_t hi48, uint64_t lo) {
  uint64_t hi = (uint64_t)sign << 63 | (uint64_t)exp << 48 | hi48;
  for (int i = 0; i < 8; i++) {
    b[i] = (unsigned char)(hi >> (56 - 8 * i));
    b[8 + i] = (unsigned char)(lo >> (56 - 8 * i));
  }
}

static int same_ldbl(long double a, long double b) { /* bitwise, the 10 bytes of x87 */
  return memcmp(&a, &b, LDBL_MANT_DIG == 64 ? 10 : sizeof a) == 0;
}

/* long double: exact widening to binary128 and correctly rounded narrowing. */
static void test_external32_long_double(void) {
  x32_open("x32ldbl");
  long double vals[] = {1.0L, -2.5L, LDBL_MAX, -LDBL_MAX, LDBL_MIN, LDBL_MIN / 3, LDBL_TRUE_MIN,
                        0x1.23456789abcdef12p-16400L, 0x1.fffffffffffffffep+16000L, -0.0L,
                        (long double)INFINITY, -(long double)INFINITY, nanl("0x123")};
  enum { NV = sizeof vals / sizeof vals[0] };
  long double back[NV];
  TL_OK(lmpio_file_write_at(fh32, 0, vals, NV, MPI_LONG_DOUBLE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at(fh32, 0, back, NV, MPI_LONG_DOUBLE, MPI_STATUS_IGNORE));
  for (int i = 0; i < NV; i++)
    if (!same_ldbl(vals[i], back[i]) && !(isnan(vals[i]) && isnan(back[i]))) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] long double %d: %La came back as %La\n", tl_rank, i, vals[i], back[i]);
    }
  TL_CHECK(isnan(back[NV - 1]) && signbit(back[9]));
  if (LDBL_MANT_DIG == 64) {
    unsigned char img[16], want[16];
    /* the smallest x87 subnormal, 2^-16445, is a binary128 subnormal */
    TL_OK(lmpio_file_read_at(fhn, 16 * 6, img, 16, MPI_BYTE, MPI_STATUS_IGNORE));
    q128_bytes(want, 0, 0, 0, (uint64_t)1 << 49);
    TL_CHECK(memcmp(img, want, 16) == 0);
    /* LDBL_MAX: exponent 0x7FFE, 63 fraction bits of ones */
    TL_OK(lmpio_file_read_at(fhn, 16 * 2, img, 16, MPI_BYTE, MPI_STATUS_IGNORE));
    q128_bytes(want, 0, 0x7FFE, 0xFFFFFFFFFFFFull, 0xFFFE000000000000ull);
    TL_CHECK(memcmp(img, want, 16) == 0);
    /* the NaN payload 0x123 is kept (quiet bit and low bits) */
    TL_OK(lmpio_file_read_at(fhn, 16 * 12, img, 16, MPI_BYTE, MPI_STATUS_IGNORE));
    TL_CHECK((img[0] & 0x7f) == 0x7f && img[1] == 0xff && (img[2] & 0x80));
  }
  /* narrowing: binary128 values that x87 cannot hold */
  struct { int sign; unsigned exp; uint64_t hi, lo; long double want; } nr[] = {
      {0, 0x3FFF, 0, (uint64_t)1 << 48, 1.0L},                               /* 1 + 2^-64: tie, to even */
      {0, 0x3FFF, 0, (uint64_t)3 << 48, 1.0L + 0x1p-62L},                    /* 1 + 3*2^-64: tie, up */
      {0, 0x3FFF, 0, ((uint64_t)1 << 48) | 1, 1.0L + 0x1p-63L},              /* just above the tie */
      {1, 0x3FFF, 0xFFFFFFFFFFFFull, ~(uint64_t)0, -2.0L},                   /* carry into the exponent */
      {0, 0x7FFE, 0xFFFFFFFFFFFFull, ~(uint64_t)0, (long double)INFINITY},   /* overflow */
      {0, 0, 0, (uint64_t)1 << 48, 0.0L},                                    /* 2^-16446: tie, to zero */
      {0, 0, 0, (uint64_t)3 << 47, 0x1p-16445L},                             /* 0.75 * 2^-16445 */
      {1, 0, 0, (uint64_t)1 << 20, -0.0L},                                   /* far below: -0 */
      {0, 0, 0xFFFFFFFFFFFFull, ~(uint64_t)0, LDBL_MIN},                     /* rounds up to normal */
      {0, 0x7FFF, 0, 0, (long double)INFINITY},
  };
  enum { NR = sizeof nr / sizeof nr[0] };
  unsigned char img[NR * 16];
  for (int i = 0; i < NR; i++) q128_bytes(img + 16 * i, nr[i].sign, nr[i].exp, nr[i].hi, nr[i].lo);
  TL_OK(lmpio_file_write_at(fhn, 0, img, NR * 16, MPI_BYTE, MPI_STATUS_IGNORE));
  long double got[NR];
  TL_OK(lmpio_file_read_at(fh32, 0, got, NR, MPI_LONG_DOUBLE, MPI_STATUS_IGNORE));
  for (int i = 0; LDBL_MANT_DIG == 64 && i < NR; i++)
    if (!same_ldbl(got[i], nr[i].want)) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] narrowing %d: got %La, expected %La\n", tl_rank, i, got[i], nr[i].want);
    }
  /* a signaling NaN whose payload lies below x87's precision stays a NaN */
  q128_bytes(img, 0, 0x7FFF, 0, 1);
  TL_OK(lmpio_file_write_at(fhn, 0, img, 16, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at(fh32, 0, got, 1, MPI_LONG_DOUBLE, MPI_STATUS_IGNORE));
  TL_CHECK(isnan(got[0]));
  x32_close();
}

/* Our external32 bytes equal Open MPI's MPI_Pack_external for the types it
 * implements as the standard says.  Known deviations of Open MPI 4.1, where
 * the standard decides: MPI_LONG and MPI_UNSIGNED_LONG packed in 8 bytes on
 * LP64, MPI_LONG_DOUBLE packed as raw x87 bytes instead of binary128. */
static void test_external32_vs_pack_external(void) {
  x32_open("x32pack");
  union { unsigned char b[64]; int i[16]; double d[8]; } v;
  for (int i = 0; i < 64; i++) v.b[i] = (unsigned char)(i * 37 + 11);
  v.d[7] = 1.0 / 3; /* a finite double, whatever the pattern made */
  v.d[6] = -1e300;
  const struct { const char *name; MPI_Datatype t; int n; } cs[] = {
      {"MPI_INT", MPI_INT, 16}, {"MPI_UNSIGNED", MPI_UNSIGNED, 16}, {"MPI_SHORT", MPI_SHORT, 32},
      {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, 32}, {"MPI_FLOAT", MPI_FLOAT, 16},
      {"MPI_DOUBLE", MPI_DOUBLE, 8}, {"MPI_LONG_LONG", MPI_LONG_LONG, 8},
      {"MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, 8}, {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, 64},
      {"MPI_CHAR", MPI_CHAR, 64}, {"MPI_INT64_T", MPI_INT64_T, 8}, {"MPI_INT16_T", MPI_INT16_T, 32},
      {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, 4}, {"MPI_INTEGER", MPI_INTEGER, 16},
      {"MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, 8},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    unsigned char packed[256], ours[256];
    MPI_Aint pos = 0, psize = 0;
    if (MPI_Pack_external_size("external32", cs[k].n, cs[k].t, &psize) != MPI_SUCCESS || psize > 256 ||
        MPI_Pack_external("external32", v.b, cs[k].n, cs[k].t, packed, sizeof packed, &pos) != MPI_SUCCESS) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] MPI_Pack_external refused %s\n", tl_rank, cs[k].name);
      continue;
    }
    TL_OK(lmpio_file_write_at(fh32, 0, v.b, cs[k].n, cs[k].t, MPI_STATUS_IGNORE));
    TL_OK(lmpio_file_read_at(fhn, 0, ours, (int)pos, MPI_BYTE, MPI_STATUS_IGNORE));
    if (memcmp(ours, packed, (size_t)pos) != 0) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] %s differs from MPI_Pack_external\n", tl_rank, cs[k].name);
    }
  }
  MPI_Aint lsize = 0;
  MPI_Pack_external_size("external32", 1, MPI_LONG, &lsize);
  if (tl_rank == 0 && lsize != 4)
    fprintf(stderr, "note: this MPI packs MPI_LONG in %ld external32 bytes; the standard (and lmpio) says 4\n",
            (long)lsize);
  x32_close();
}

/* Mixed and unaligned memory, many chunks: a struct {char; int at offset 1
 * (unaligned); double at 5} through an 8-byte conversion buffer. */
static void test_external32_unaligned_chunks(void) {
  char *path = tl_path("x32chunks");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "lmpio_conversion_buffer_size", "8");
  lmpio_file f, fn;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &f));
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fn));
  MPI_Info_free(&info);
  int bl[3] = {1, 1, 1};
  MPI_Aint disp[3] = {0, 1, 5};
  MPI_Datatype tt[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE}, st0, st;
  MPI_Type_create_struct(3, bl, disp, tt, &st0);
  MPI_Type_create_resized(st0, 0, 13, &st); /* packed: no alignment padding */
  MPI_Type_free(&st0);
  MPI_Type_commit(&st);
  enum { N = 50 };
  unsigned char mem[13 * N], back[13 * N];
  for (int i = 0; i < N; i++) {
    int iv = 0x01020304 * (i + 1) + tl_rank;
    double dv = i + 0.25;
    mem[13 * i] = (unsigned char)('a' + i % 26);
    memcpy(mem + 13 * i + 1, &iv, 4);
    memcpy(mem + 13 * i + 5, &dv, 8);
  }
  TL_OK(lmpio_file_set_view(f, (MPI_Offset)tl_rank * 13 * N, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
  TL_OK(lmpio_file_set_view(fn, (MPI_Offset)tl_rank * 13 * N, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  MPI_Status s;
  TL_OK(lmpio_file_write_at_all(f, 0, mem, N, st, &s));
  int cnt;
  MPI_Get_count(&s, st, &cnt);
  TL_EQ(cnt, N);
  unsigned char img[13 * N];
  TL_OK(lmpio_file_read_at(fn, 0, img, 13 * N, MPI_BYTE, MPI_STATUS_IGNORE));
  int ok = 1;
  for (int i = 0; i < N; i++) {
    unsigned char want[13];
    int iv = 0x01020304 * (i + 1) + tl_rank;
    double dv = i + 0.25;
    uint32_t ib = __builtin_bswap32((uint32_t)iv);
    uint64_t db;
    memcpy(&db, &dv, 8);
    db = __builtin_bswap64(db);
    want[0] = mem[13 * i];
    memcpy(want + 1, &ib, 4);
    memcpy(want + 5, &db, 8);
    if (memcmp(img + 13 * i, want, 13) != 0) ok = 0;
  }
  TL_CHECK(ok);
  memset(back, 0, sizeof back);
  TL_OK(lmpio_file_read_at_all(f, 0, back, N, st, MPI_STATUS_IGNORE));
  TL_CHECK(memcmp(back, mem, sizeof mem) == 0);
  MPI_Type_free(&st);
  TL_OK(lmpio_file_close(&f));
  TL_OK(lmpio_file_close(&fn));
  tl_unlink(path);
}

/* A conversion function that makes a collective call on its own file: the
 * standard makes that erroneous, and the call would meet no other rank
 * (each converts its own data, as often as its data needs), so it fails at
 * once on its rank with MPI_ERR_OTHER, and the call that converts goes on
 * with the view it started with.  Every rank's converter calling set_view;
 * only rank 0's calling read_at_all or starting iread_at_all, within
 * read_at_all and read_ordered (before: set_view from every rank's
 * converter completed, and a collective from rank 0's alone hung the job,
 * both ranks' calls at once or rank 0 in MPI_Bcast). */
static lmpio_file reviewer_fh = LMPIO_FILE_NULL;
static int reviewer_rc, reviewer_kind;
static void review(void) {
  if (reviewer_fh == LMPIO_FILE_NULL) return;
  lmpio_file fh = reviewer_fh;
  reviewer_fh = LMPIO_FILE_NULL;
  char tmp[16];
  MPI_Request req = MPI_REQUEST_NULL;
  if (reviewer_kind == 0) reviewer_rc = lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  if (reviewer_kind == 1) reviewer_rc = lmpio_file_read_at_all(fh, 0, tmp, 1, MPI_INT, MPI_STATUS_IGNORE);
  if (reviewer_kind == 2) reviewer_rc = lmpio_file_iread_at_all(fh, 0, tmp, 1, MPI_INT, &req);
  if (reviewer_rc == MPI_ERR_OTHER && !strstr(lmpio_last_error_message(), "conversion function")) reviewer_rc = -2;
}
static int reviewing_write(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *state) {
  (void)t;
  (void)state;
  review();
  memcpy(filebuf, (int *)userbuf + position, sizeof(int) * (size_t)count);
  return MPI_SUCCESS;
}
static int reviewing_read(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *state) {
  (void)t;
  (void)state;
  review();
  memcpy((int *)userbuf + position, filebuf, sizeof(int) * (size_t)count);
  return MPI_SUCCESS;
}
static int four_bytes(MPI_Datatype t, MPI_Aint *ext, void *state) {
  (void)t;
  (void)state;
  *ext = 4;
  return MPI_SUCCESS;
}

static void test_converter_collective(void) {
  TL_OK(lmpio_register_datarep("reviewing", reviewing_read, reviewing_write, four_bytes, NULL));
  char *path = tl_path("reviewing");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_size(fh, 0));
  enum { N = 64 };
  int a[N], b[2 * N];
  for (int i = 0; i < N; i++) a[i] = 1000 * (tl_rank + 1) + i;
  MPI_Datatype ft; /* every other int */
  MPI_Type_create_resized(MPI_INT, 0, 8, &ft);
  MPI_Type_commit(&ft);
  MPI_Offset region = 2 * N * 4, disp = tl_rank * region;
  for (int k = 0; k < 4; k++) { /* write_at, write_at_all, read_at, read_at_all: every rank's set_view */
    MPI_Offset at = k % 2 ? 2 * tl_size * region + disp : disp;
    TL_OK(lmpio_file_set_view(fh, at, MPI_INT, ft, "reviewing", MPI_INFO_NULL));
    reviewer_fh = fh;
    reviewer_kind = 0;
    reviewer_rc = -1;
    memset(b, 0, sizeof b);
    if (k == 0) TL_OK(lmpio_file_write_at(fh, 0, a, N, MPI_INT, MPI_STATUS_IGNORE));
    if (k == 1) TL_OK(lmpio_file_write_at_all(fh, 0, a, N, MPI_INT, MPI_STATUS_IGNORE));
    if (k == 2) TL_OK(lmpio_file_read_at(fh, 0, b, N, MPI_INT, MPI_STATUS_IGNORE));
    if (k == 3) TL_OK(lmpio_file_read_at_all(fh, 0, b, N, MPI_INT, MPI_STATUS_IGNORE));
    TL_EQ(reviewer_rc, MPI_ERR_OTHER);
    if (k >= 2) {
      for (int i = 0; i < N; i++) TL_EQ(b[i], a[i]);
      continue;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* The view is still the call's: the ints every other one, read natively. */
    TL_OK(lmpio_file_set_view(fh, at, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    TL_OK(lmpio_file_read_at(fh, 0, b, 2 * N, MPI_INT, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; i++) TL_EQ(b[2 * i], a[i]);
  }
  /* Rank 0's converter alone: rank 1 reads nothing (no conversion). */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "reviewing", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_at_all(fh, 0, a, tl_rank == 0 ? N : 0, MPI_INT, MPI_STATUS_IGNORE));
  for (int k = 0; k < 4; k++) {
    TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
    reviewer_fh = tl_rank == 0 ? fh : LMPIO_FILE_NULL;
    reviewer_kind = 1 + k % 2;
    reviewer_rc = -1;
    memset(b, 0, sizeof b);
    int n = tl_rank == 0 ? N : 0;
    if (k < 2) TL_OK(lmpio_file_read_at_all(fh, 0, b, n, MPI_INT, MPI_STATUS_IGNORE));
    else TL_OK(lmpio_file_read_ordered(fh, b, n, MPI_INT, MPI_STATUS_IGNORE));
    TL_EQ(reviewer_rc, tl_rank == 0 ? MPI_ERR_OTHER : -1);
    for (int i = 0; i < n; i++) TL_EQ(b[i], a[i]);
  }
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("register_datarep", register_all);
  tl_run("registry errors, get_type_extent, get_view datarep", test_registry);
  tl_run("a converter's collective call fails on its rank (erroneous), the call goes on: no hang",
         test_converter_collective);
  tl_run("user representation converts in chunks with increasing position", test_user_rep_chunked);
  tl_run("a failing converter gives MPI_ERR_CONVERSION on every rank", test_conversion_error);
  tl_run("MPI_CONVERSION_FN_NULL moves native data", test_fn_null_moves_native);
  tl_run("external32 layout, portable types and range errors", test_external32_layout);
  tl_run("external32 sizes of every type of the table", test_external32_sizes);
  tl_run("external32 sizes of MPI_Type_create_f90_* types", test_external32_f90);
  tl_run("external32 big-endian images and round trips, type by type", test_external32_images);
  tl_run("external32 range errors leave the file alone; narrow values widen", test_external32_range);
  tl_run("external32 long double: exact widening, rounded narrowing", test_external32_long_double);
  tl_run("external32 bytes equal MPI_Pack_external where Open MPI follows the standard",
         test_external32_vs_pack_external);
  tl_run("external32 unaligned mixed struct through a tiny conversion buffer", test_external32_unaligned_chunks);
  return tl_finish();
}
