/* Regression tests of the file model's edge cases (issue 9): 64-bit
 * wraparound of offsets, extents and sizes; empty and overlapping
 * filetypes; data representation names and extents.  Only the public API:
 * the same file builds against older versions, to see them fail. */
#include "testlib.h"

#include <stdint.h>

static char *fresh(const char *tag) {
  char *path = tl_path(tag);
  if (tl_rank == 0) unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

static MPI_Offset size_of(lmpio_file fh) {
  MPI_Offset n = -1;
  lmpio_file_get_size(fh, &n);
  return n;
}

/* Item 2: write_at(2^61 + 1) with a DOUBLE etype wrote at byte 8; a view of
 * resized(BYTE, 0, 2^62) mapped offset 4 to byte 0; seek(2^62) then write
 * wrote at byte 0.  Every one must fail, and write nothing. */
static void test_offsets_never_wrap(void) {
  char *path = fresh("wrap");
  lmpio_file fh;
  double d = 1.5;
  char c = 'x';
  MPI_Status st;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  int rc = lmpio_file_write_at(fh, ((MPI_Offset)1 << 61) + 1, &d, 1, MPI_DOUBLE, &st);
  TL_CHECK(rc != MPI_SUCCESS);
  TL_EQ(rc, MPI_ERR_ARG);
  rc = lmpio_file_write_at_all(fh, ((MPI_Offset)1 << 61) + 1, &d, 1, MPI_DOUBLE, &st);
  TL_EQ(rc, MPI_ERR_ARG);
  MPI_Offset byte = 0;
  TL_RC(lmpio_file_get_byte_offset(fh, ((MPI_Offset)1 << 61) + 1, &byte), MPI_ERR_ARG);
  TL_EQ(size_of(fh), 0);
  MPI_Datatype big;
  MPI_Type_create_resized(MPI_BYTE, 0, (MPI_Aint)1 << 62, &big);
  MPI_Type_commit(&big);
  rc = lmpio_file_set_view(fh, 0, MPI_BYTE, big, "native", MPI_INFO_NULL);
  if (rc == MPI_SUCCESS) {
    rc = lmpio_file_write_at(fh, 4, &c, 1, MPI_CHAR, &st);
    TL_CHECK(rc != MPI_SUCCESS);
    TL_RC(lmpio_file_get_byte_offset(fh, 4, &byte), MPI_ERR_ARG);
  }
  TL_EQ(size_of(fh), 0);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  rc = lmpio_file_seek(fh, (MPI_Offset)1 << 62, MPI_SEEK_SET);
  if (rc == MPI_SUCCESS) rc = lmpio_file_write(fh, &d, 1, MPI_DOUBLE, &st);
  TL_CHECK(rc != MPI_SUCCESS);
  TL_EQ(size_of(fh), 0);
  /* an offset the file system refuses (EFBIG) is a clear error too */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  rc = lmpio_file_write_at(fh, INT64_MAX - 1, &c, 1, MPI_CHAR, &st);
  TL_CHECK(rc != MPI_SUCCESS && rc != MPI_ERR_OTHER);
  TL_EQ(size_of(fh), 0);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&big);
  tl_unlink(path);
}

/* Item 2 (sizes): a datatype whose extent overflows is refused by name. */
static void test_datatype_extent_overflow(void) {
  char *path = fresh("typeover");
  lmpio_file fh;
  MPI_Datatype big, four;
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 62, &big);
  MPI_Type_contiguous(4, big, &four);
  MPI_Type_commit(&four);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int rc = lmpio_file_set_view(fh, 0, MPI_INT, four, "native", MPI_INFO_NULL);
  TL_CHECK(rc != MPI_SUCCESS);
  int v[4] = {1, 2, 3, 4};
  MPI_Status st;
  TL_CHECK(lmpio_file_write_at(fh, 0, v, 1, four, &st) != MPI_SUCCESS);
  TL_EQ(size_of(fh), 0);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&big);
  MPI_Type_free(&four);
  tl_unlink(path);
}

/* Item 8: extent functions answering 2^61 or 2^62. */
static MPI_Aint answer;
static int huge_extent(MPI_Datatype t, MPI_Aint *ext, void *state) {
  (void)t;
  (void)state;
  *ext = answer;
  return MPI_SUCCESS;
}
static int copy_conv(void *u, MPI_Datatype t, int n, void *f, MPI_Offset pos, void *s) {
  (void)u; (void)t; (void)n; (void)f; (void)pos; (void)s;
  return MPI_SUCCESS;
}

static void test_absurd_extents(void) {
  static int registered;
  if (!registered) {
    TL_OK(lmpio_register_datarep("model_huge", copy_conv, copy_conv, huge_extent, NULL));
    registered = 1;
  }
  char *path = fresh("hugeext");
  lmpio_file fh;
  MPI_Datatype four;
  MPI_Type_contiguous(4, MPI_INT, &four);
  MPI_Type_commit(&four);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_Aint answers[] = {(MPI_Aint)1 << 61, (MPI_Aint)1 << 62, -8};
  for (int i = 0; i < 3; i++) {
    answer = answers[i];
    int rc = lmpio_file_set_view(fh, 0, MPI_INT, four, "model_huge", MPI_INFO_NULL);
    TL_CHECK(rc != MPI_SUCCESS);
    MPI_Aint ext = 0;
    rc = lmpio_file_get_type_extent(fh, four, &ext);
    TL_CHECK(rc != MPI_SUCCESS || ext > 0);
  }
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&four);
  tl_unlink(path);
}

/* Item 7: a name of exactly MPI_MAX_DATAREP_STRING characters does not fit
 * get_view's buffer with its NUL: refused; one shorter fits exactly. */
static void test_datarep_name_length(void) {
  char name[MPI_MAX_DATAREP_STRING + 1];
  memset(name, 'n', MPI_MAX_DATAREP_STRING);
  name[MPI_MAX_DATAREP_STRING] = '\0';
  TL_RC(lmpio_register_datarep(name, copy_conv, copy_conv, huge_extent, NULL), MPI_ERR_ARG);
  static int registered;
  name[MPI_MAX_DATAREP_STRING - 1] = '\0';
  if (!registered) {
    TL_OK(lmpio_register_datarep(name, MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, huge_extent, NULL));
    registered = 1;
  }
  char *path = fresh("repname");
  lmpio_file fh;
  answer = 4;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, name, MPI_INFO_NULL));
  struct { char rep[MPI_MAX_DATAREP_STRING]; char canary[8]; } out;
  memset(out.canary, 0x5a, sizeof out.canary);
  MPI_Offset disp;
  MPI_Datatype et, ft;
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, out.rep));
  TL_CHECK(strcmp(out.rep, name) == 0);
  for (int i = 0; i < 8; i++) TL_EQ((unsigned char)out.canary[i], 0x5a);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Item 14: a filetype of size zero (a block darray of 24 rows over 7 ranks
 * gives the 7th nothing) is a view with no data: count 0 works, collective
 * calls with it too, and a nonzero count is an error. */
static void test_empty_filetype(void) {
  MPI_Datatype rows[7];
  int gs[1] = {24}, dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {7};
  for (int r = 0; r < 7; r++) {
    MPI_Type_create_darray(7, r, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &rows[r]);
    MPI_Type_commit(&rows[r]);
  }
  int sz = -1;
  MPI_Type_size(rows[6], &sz);
  TL_EQ(sz, 0);
  char *path = fresh("empty");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  /* the last rank takes part 6 (nothing), the others parts 0..5 */
  int part = tl_rank == tl_size - 1 ? 6 : tl_rank % 6;
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, rows[part], "native", MPI_INFO_NULL));
  int v[4] = {part, part, part, part};
  MPI_Status st;
  int n = part == 6 ? 0 : 4;
  TL_OK(lmpio_file_write_at_all(fh, 0, v, n, MPI_INT, &st));
  TL_OK(lmpio_file_read_at_all(fh, 0, v, n, MPI_INT, &st));
  TL_OK(lmpio_file_write_all(fh, v, n, MPI_INT, &st));
  if (part == 6) {
    int rc = lmpio_file_write_at(fh, 0, v, 1, MPI_INT, &st);
    TL_CHECK(rc != MPI_SUCCESS);
  }
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, n);
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END));
  TL_OK(lmpio_file_close(&fh));
  for (int r = 0; r < 7; r++) MPI_Type_free(&rows[r]);
  tl_unlink(path);
}

/* Item 15: a filetype that overlaps itself is allowed on a read-only file
 * (reading gives the same int twice) and refused with a clear message when
 * the file is open for writing. */
static void test_overlap_read_only(void) {
  char *path = fresh("overlap");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int data[4] = {11, 22, 33, 44};
  MPI_Status st;
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, data, 4, MPI_INT, &st));
  MPI_Datatype twice;
  int bl[2] = {1, 1}, dp[2] = {0, 0};
  MPI_Type_indexed(2, bl, dp, MPI_INT, &twice);
  MPI_Type_commit(&twice);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, twice, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  TL_CHECK(strstr(lmpio_last_error_message(), "overlaps") != NULL);
  TL_CHECK(strstr(lmpio_last_error_message(), "monotonically") == NULL);
  TL_OK(lmpio_file_close(&fh));
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, twice, "native", MPI_INFO_NULL));
  int got[4] = {0, 0, 0, 0};
  TL_OK(lmpio_file_read_at(fh, 0, got, 4, MPI_INT, &st));
  TL_EQ(got[0], 11);
  TL_EQ(got[1], 11);
  TL_EQ(got[2], 22); /* the second tile starts at the next int */
  TL_EQ(got[3], 22);
  memset(got, 0, sizeof got);
  TL_OK(lmpio_file_read_at_all(fh, 0, got, 4, MPI_INT, &st));
  TL_EQ(got[1], 11);
  TL_EQ(got[3], 22);
  /* decreasing displacements stay refused */
  MPI_Datatype down;
  int dd[2] = {1, 0};
  MPI_Type_indexed(2, bl, dd, MPI_INT, &down);
  MPI_Type_commit(&down);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, down, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&twice);
  MPI_Type_free(&down);
  tl_unlink(path);
}

/* Item 15, continued: a filetype whose data lies partly below its lower
 * bound does not overlap itself, though its data spans more than its
 * extent.  PnetCDF makes such filetypes (its header bytes, then a resized
 * record variable) for files open for writing; ROMIO and OMPIO accept them.
 * Here: bytes 0-7 and a resized pair of ints at 16 whose bounds, 16 and 24,
 * are the filetype's, so tile 1 starts at byte 8 (data 8-15 and 24-31).
 * Whether a struct keeps its member's resized bounds is where the libraries
 * part: the standard (MPI-4.0 5.1.6, 5.1.7) puts lb and ub markers in a resized
 * type that "affect ... the construction of new derived datatypes", and a
 * type map with markers has its bounds from them alone (Open MPI: lb 16,
 * extent 8); MPICH holds resized bounds not sticky (lb 0, extent 24, its
 * issues 2218 and 2220).  A view tiles by the library's extent, so where the
 * struct does not keep them it is resized to them explicitly (the same
 * type map, markers and all, under either reading). */
static void test_data_below_lower_bound(void) {
  char *path = fresh("belowlb");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_Datatype pair, rec, ft;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_create_resized(pair, 0, 8, &rec);
  int bl[2] = {8, 1};
  MPI_Aint dp[2] = {0, 16};
  MPI_Datatype ty[2] = {MPI_BYTE, rec};
  MPI_Type_create_struct(2, bl, dp, ty, &ft);
  MPI_Aint lb = 0, ext = 0;
  MPI_Type_get_extent(ft, &lb, &ext);
  TL_CHECK((lb == 16 && ext == 8) || (lb == 0 && ext == 24)); /* the standard's, or MPICH's */
  if (lb != 16) {
    MPI_Datatype loose = ft;
    MPI_Type_create_resized(loose, 16, 8, &ft);
    MPI_Type_free(&loose);
  }
  MPI_Type_commit(&ft);
  MPI_Type_get_extent(ft, &lb, &ext);
  TL_EQ(lb, 16);
  TL_EQ(ext, 8);
  MPI_Offset disp = 64 * (MPI_Offset)tl_rank;
  TL_OK(lmpio_file_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char buf[48], got[40];
  for (int i = 0; i < 48; i++) buf[i] = (unsigned char)(tl_rank * 48 + i + 1);
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, 0, buf, 16, MPI_BYTE, &st)); /* tile 0 */
  memset(got, 0, sizeof got);
  TL_OK(lmpio_file_read_at_all(fh, 0, got, 16, MPI_BYTE, &st));
  TL_CHECK(memcmp(got, buf, 16) == 0);
  for (int coll = 0; coll < 2; coll++) {
    /* Tiles 0, 1 and 2; tile 2 (bytes 16-23, 32-39) shares 16-23 with
     * tile 0: the later data wins, as with ROMIO and OMPIO. */
    TL_OK(lmpio_file_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL));
    if (coll) TL_OK(lmpio_file_write_at_all(fh, 0, buf, 48, MPI_BYTE, &st));
    else TL_OK(lmpio_file_write_at(fh, 0, buf, 48, MPI_BYTE, &st));
    TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    memset(got, 0, sizeof got);
    TL_OK(lmpio_file_read_at_all(fh, disp, got, 40, MPI_BYTE, &st));
    TL_CHECK(memcmp(got, buf, 8) == 0);
    TL_CHECK(memcmp(got + 8, buf + 16, 8) == 0);
    TL_CHECK(memcmp(got + 16, buf + 32, 8) == 0);
    TL_CHECK(memcmp(got + 24, buf + 24, 8) == 0);
    TL_CHECK(memcmp(got + 32, buf + 40, 8) == 0);
    for (int i = 0; i < 48; i++) buf[i] = (unsigned char)(buf[i] + 100);
  }
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&pair);
  MPI_Type_free(&rec);
  MPI_Type_free(&ft);
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("item 2: offsets never wrap", test_offsets_never_wrap);
  tl_run("item 2: a datatype extent that overflows is refused", test_datatype_extent_overflow);
  tl_run("item 8: absurd extents from an extent function are refused", test_absurd_extents);
  tl_run("item 7: datarep names fit get_view's buffer", test_datarep_name_length);
  tl_run("item 14: a filetype of size zero is an empty view", test_empty_filetype);
  tl_run("item 15: overlapping filetypes on read-only files", test_overlap_read_only);
  tl_run("item 15: a filetype with data below its lower bound on a writable file", test_data_below_lower_bound);
  return tl_finish();
}
