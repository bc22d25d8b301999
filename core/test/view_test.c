/* File views: the default view, set_view/get_view, pointer reset, validation
 * (whole etypes, holes, displacements, datarep, agreement between ranks),
 * tiling with explicit bounds, the standard's partitioning example, offsets
 * and end of file counted in the view, get_byte_offset. */
#include "testlib.h"

static lmpio_file open_world(const char *path) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  return fh;
}

/* A filetype with one int at byte `at` of a tile `extent` bytes long. */
static MPI_Datatype one_int_at(MPI_Aint at, MPI_Aint lb, MPI_Aint extent) {
  MPI_Datatype h, t;
  int one = 1;
  MPI_Type_create_hindexed(1, &one, &at, MPI_INT, &h);
  MPI_Type_create_resized(h, lb, extent, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&h);
  return t;
}

static void test_default_view(void) {
  char *path = tl_path("default");
  lmpio_file fh = open_world(path);
  MPI_Offset disp = -1;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_EQ(disp, 0);
  TL_CHECK(et == MPI_BYTE);
  TL_CHECK(ft == MPI_BYTE);
  TL_CHECK(strcmp(rep, "native") == 0);
  MPI_Offset b = -1;
  TL_OK(lmpio_file_get_byte_offset(fh, 12345, &b));
  TL_EQ(b, 12345);
  TL_RC(lmpio_file_get_byte_offset(fh, -1, &b), MPI_ERR_ARG);
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_set_get_view_resets_pointers(void) {
  char *path = tl_path("reset");
  lmpio_file fh = open_world(path);
  int data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, (MPI_Offset)tl_rank * 32, data, 8, MPI_INT, &st));
  TL_OK(lmpio_file_seek(fh, 10, MPI_SEEK_SET));
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 2, MPI_INT, &v);
  MPI_Type_commit(&v);
  TL_OK(lmpio_file_set_view(fh, 4, MPI_INT, v, "native", MPI_INFO_NULL));
  MPI_Type_free(&v); /* the view keeps its own handle */
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 0);
  MPI_Offset disp;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_EQ(disp, 4);
  TL_CHECK(et == MPI_INT);
  int ni, na, nd, comb = -1;
  MPI_Type_get_envelope(ft, &ni, &na, &nd, &comb);
  TL_CHECK(comb != MPI_COMBINER_NAMED);
  int size = 0;
  MPI_Aint lb, ext;
  MPI_Type_size(ft, &size);
  MPI_Type_get_extent(ft, &lb, &ext);
  TL_EQ(size, 8);
  TL_EQ(ext, 12);
  MPI_Type_free(&ft);
  /* the view still works after the user freed the filetype */
  int r[2] = {0, 0};
  TL_OK(lmpio_file_read(fh, r, 2, MPI_INT, &st));
  TL_EQ(r[0], 2); /* ints at bytes 4 and 12 */
  TL_EQ(r[1], 4);
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 2);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_validation(void) {
  char *path = tl_path("valid");
  lmpio_file fh = open_world(path);
  MPI_Datatype t;
  /* filetype size not a multiple of the etype size */
  MPI_Type_contiguous(6, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* blocks of whole etypes but a 2-byte hole */
  MPI_Type_vector(2, 4, 6, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* a hole of one double in a view of double pairs */
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
  MPI_Type_commit(&pair);
  MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  TL_RC(lmpio_file_set_view(fh, 0, pair, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* a block of one and a half etypes */
  MPI_Type_vector(2, 12, 16, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_DOUBLE, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* a hole between tiles that is not a whole etype */
  t = one_int_at(0, 0, 6);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* negative displacement */
  t = one_int_at(-8, -8, 16);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* decreasing displacements */
  int bl[] = {1, 1}, dis[] = {2, 0};
  MPI_Type_indexed(2, bl, dis, MPI_INT, &t);
  MPI_Type_commit(&t);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  MPI_Type_free(&t);
  /* tiles that overlap (extent smaller than the data) are allowed, as in
   * ROMIO and OMPIO: the filetype itself does not overlap (model_test) */
  MPI_Datatype c;
  MPI_Type_contiguous(4, MPI_INT, &c);
  MPI_Type_create_resized(c, 0, 8, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL));
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  /* unknown data representation, bad displacement, null types */
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);
  TL_RC(lmpio_file_set_view(fh, -4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_ARG);
  TL_RC(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_ARG);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_DATATYPE_NULL, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_DATATYPE_NULL, "native", MPI_INFO_NULL), MPI_ERR_TYPE);
  TL_RC(lmpio_file_set_view(LMPIO_FILE_NULL, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_FILE);
  /* valid: holes and blocks of whole etypes, a filetype equal to the etype */
  MPI_Type_vector(3, 8, 12, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL));
  MPI_Type_free(&t);
  TL_OK(lmpio_file_set_view(fh, 8, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  /* a failed set_view keeps the view in effect */
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_DATAREP);
  MPI_Offset disp = -1;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  TL_OK(lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  TL_EQ(disp, 8);
  TL_CHECK(et == MPI_DOUBLE && ft == MPI_DOUBLE);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* One rank's bad arguments fail set_view on every rank with the same class. */
static void test_validation_agreed(void) {
  char *path = tl_path("agree");
  lmpio_file fh = open_world(path);
  MPI_Datatype bad;
  int bl[] = {1, 1}, dis[] = {2, 0};
  MPI_Type_indexed(2, bl, dis, MPI_INT, &bad);
  MPI_Type_commit(&bad);
  int last = tl_size - 1;
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, tl_rank == last ? bad : MPI_INT, "native", MPI_INFO_NULL),
        MPI_ERR_TYPE);
  TL_CHECK(strstr(lmpio_last_error_message(), "lmpio_file_set_view") != NULL);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, tl_rank == last ? "nope" : "native", MPI_INFO_NULL),
        MPI_ERR_UNSUPPORTED_DATAREP);
  /* etype extents must match */
  if (tl_size > 1)
    TL_RC(lmpio_file_set_view(fh, 0, tl_rank == last ? MPI_DOUBLE : MPI_INT,
                              tl_rank == last ? MPI_DOUBLE : MPI_INT, "native", MPI_INFO_NULL),
          MPI_ERR_NOT_SAME);
  /* the old view is still in effect everywhere */
  MPI_Offset b = -1;
  TL_OK(lmpio_file_get_byte_offset(fh, 7, &b));
  TL_EQ(b, 7);
  /* filetypes may differ between ranks */
  MPI_Datatype mine = one_int_at(4 * (tl_rank % 3), 0, 12);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, mine, "native", MPI_INFO_NULL));
  MPI_Type_free(&mine);
  MPI_Type_free(&bad);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* MPI-3.1 section 13.3, figure 13.2: three processes with complementary
 * filetypes partition the file; offset 2 of process 1 is the 8th etype. */
static void test_standard_partition_example(void) {
  char *path = tl_path("partition");
  lmpio_file fh = open_world(path);
  const MPI_Offset disp = 100;
  int p = tl_rank % 3;
  MPI_Datatype ft = one_int_at(4 * p, 0, 12);
  TL_OK(lmpio_file_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL));
  MPI_Offset b = -1;
  TL_OK(lmpio_file_get_byte_offset(fh, 2, &b));
  TL_EQ(b, disp + 4 * (3 * 2 + p));
  if (p == 1) TL_EQ(b, disp + 7 * 4); /* the 8th etype after the displacement */
  int w[10];
  for (int i = 0; i < 10; i++) w[i] = 1000 * p + i;
  MPI_Status st;
  /* ranks beyond the first three write the same bytes as rank % 3 */
  TL_OK(lmpio_file_write_all(fh, w, 10, MPI_INT, &st));
  MPI_Offset pos = -1;
  TL_OK(lmpio_file_get_position(fh, &pos));
  TL_EQ(pos, 10);
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  int r[10];
  TL_OK(lmpio_file_read_at_all(fh, 0, r, 10, MPI_INT, &st));
  for (int i = 0; i < 10; i++) TL_EQ(r[i], 1000 * p + i);
  /* the whole file as ints through the default view */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  int all[30];
  int nproc = tl_size < 3 ? tl_size : 3;
  TL_OK(lmpio_file_read_at(fh, disp, all, 30, MPI_INT, &st));
  int got = -1;
  MPI_Get_count(&st, MPI_INT, &got);
  /* the file ends after the last etype of the highest partition written */
  TL_EQ(got, 27 + nproc);
  for (int j = 0; j < got; j++)
    if (j % 3 < nproc) TL_EQ(all[j], 1000 * (j % 3) + j / 3);
  /* the same example from one process, for each of the three filetypes */
  for (int q = 0; q < 3; q++) {
    MPI_Datatype f = one_int_at(4 * q, 0, 12);
    TL_OK(lmpio_file_set_view(fh, disp, MPI_INT, f, "native", MPI_INFO_NULL));
    for (int k = 0; k < 5; k++) {
      TL_OK(lmpio_file_get_byte_offset(fh, k, &b));
      TL_EQ(b, disp + 4 * (3 * k + q));
    }
    MPI_Type_free(&f);
  }
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* The filetype tiles as MPI_Type_contiguous(ft, infinity): explicit lower
 * and upper bounds place the tiles, whatever the data inside. */
static void test_tiling_with_bounds(void) {
  char *path = tl_path("bounds");
  lmpio_file fh = open_world(path);
  struct { MPI_Aint at, lb, ext; } cases[] = {{8, 4, 12}, {8, 0, 12}, {0, 0, 4}, {4, -4, 8}, {12, 12, 4}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    MPI_Datatype t = one_int_at(cases[c].at, cases[c].lb, cases[c].ext);
    TL_OK(lmpio_file_set_view(fh, 20, MPI_INT, t, "native", MPI_INFO_NULL));
    for (int k = 0; k < 6; k++) {
      MPI_Offset b = -1;
      TL_OK(lmpio_file_get_byte_offset(fh, k, &b));
      TL_EQ(b, 20 + cases[c].at + k * cases[c].ext);
    }
    MPI_Type_free(&t);
  }
  /* data written through such a view lands there */
  MPI_Datatype t = one_int_at(8, 4, 12);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, t, "native", MPI_INFO_NULL));
  if (tl_rank == 0) {
    int w[3] = {11, 22, 33};
    MPI_Status st;
    TL_OK(lmpio_file_write_at(fh, 0, w, 3, MPI_INT, &st));
    TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  } else {
    TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int all[9] = {0};
  MPI_Status st;
  TL_OK(lmpio_file_read_at(fh, 0, all, 9, MPI_INT, &st));
  TL_EQ(all[2], 11);
  TL_EQ(all[5], 22);
  TL_EQ(all[8], 33);
  TL_EQ(all[3], 0);
  MPI_Type_free(&t);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* End of file is counted in the view: etypes that start before the last
 * byte; reads stop there; SEEK_END goes there. */
static void test_eof_per_view(void) {
  char *path = tl_path("eof");
  lmpio_file fh = open_world(path);
  MPI_Status st;
  TL_OK(lmpio_file_set_size(fh, 40));
  /* ints at 0, 8 | 12, 20 | 24, 32 | 36, 44 ... */
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 2, MPI_INT, &v);
  MPI_Type_commit(&v);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, v, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END));
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 7);
  TL_OK(lmpio_file_seek(fh, -2, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 5);
  TL_OK(lmpio_file_seek(fh, 1, MPI_SEEK_CUR));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 6);
  TL_RC(lmpio_file_seek(fh, -8, MPI_SEEK_END), MPI_ERR_ARG);
  TL_RC(lmpio_file_seek(fh, 0, 12345), MPI_ERR_ARG);
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 6); /* failed seeks leave the pointer */
  int r[10];
  TL_OK(lmpio_file_read_at_all(fh, 0, r, 10, MPI_INT, &st));
  int n = -1;
  MPI_Get_count(&st, MPI_INT, &n);
  TL_EQ(n, 7);
  /* read with the individual pointer: stops at EOF, the pointer advances by what was read */
  TL_OK(lmpio_file_seek(fh, 5, MPI_SEEK_SET));
  TL_OK(lmpio_file_read_all(fh, r, 10, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &n);
  TL_EQ(n, 2);
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 7);
  TL_OK(lmpio_file_read_all(fh, r, 10, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &n);
  TL_EQ(n, 0);
  /* a partial etype at the end counts as an etype for SEEK_END, and a read
   * returns its bytes only */
  TL_OK(lmpio_file_set_size(fh, 38));
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 7);
  TL_OK(lmpio_file_read_at_all(fh, 4, r, 10, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &n);
  TL_EQ(n, MPI_UNDEFINED);
  MPI_Get_count(&st, MPI_BYTE, &n);
  TL_EQ(n, 10);
  MPI_Count el = -1;
  MPI_Get_elements_x(&st, MPI_BYTE, &el);
  TL_EQ(el, 10);
  /* with a displacement, in the hole after the data */
  TL_OK(lmpio_file_set_size(fh, 30));
  TL_OK(lmpio_file_set_view(fh, 6, MPI_INT, v, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END)); /* ints at 6, 14, 18, 26 | 30 */
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 4);
  /* the byte view's end of file is the size */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 30);
  /* an empty file */
  TL_OK(lmpio_file_set_size(fh, 0));
  TL_OK(lmpio_file_set_view(fh, 16, MPI_INT, v, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_seek(fh, 0, MPI_SEEK_END));
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, 0);
  MPI_Type_free(&v);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Offsets count etypes, also when the etype is derived. */
static void test_derived_etype(void) {
  char *path = tl_path("etype");
  lmpio_file fh = open_world(path);
  MPI_Datatype e3, ft;
  MPI_Type_contiguous(3, MPI_INT, &e3);
  MPI_Type_commit(&e3);
  MPI_Type_vector(2, 1, 3, e3, &ft); /* etypes at bytes 0 and 36, extent 48 */
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, 0, e3, ft, "native", MPI_INFO_NULL));
  MPI_Offset b = -1;
  TL_OK(lmpio_file_get_byte_offset(fh, 1, &b));
  TL_EQ(b, 36);
  TL_OK(lmpio_file_get_byte_offset(fh, 3, &b));
  TL_EQ(b, 48 + 36);
  MPI_Status st;
  if (tl_rank == 0) {
    int w[12];
    for (int i = 0; i < 12; i++) w[i] = i;
    TL_OK(lmpio_file_write_at(fh, 0, w, 12, MPI_INT, &st));
    /* not a whole number of etypes */
    TL_RC(lmpio_file_write_at(fh, 0, w, 4, MPI_INT, &st), MPI_ERR_TYPE);
    int r[3];
    TL_OK(lmpio_file_read_at(fh, 2, r, 1, e3, &st));
    TL_EQ(r[0], 6);
    TL_EQ(r[2], 8);
    MPI_Offset size;
    TL_OK(lmpio_file_get_size(fh, &size));
    TL_EQ(size, 48 + 48);
  }
  MPI_Type_free(&ft);
  MPI_Type_free(&e3);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Sequential files: MPI_DISPLACEMENT_CURRENT sees every write_shared that a
 * rank made before entering set_view (no barrier in between). */
static void test_sequential_views(void) {
  char *path = tl_path("seq");
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                        MPI_INFO_NULL, &fh));
  MPI_Offset disp = -1;
  MPI_Datatype e, f;
  char rep[MPI_MAX_DATAREP_STRING + 1];
  for (int round = 0; round < 20; round++) {
    /* the last rank moves the shared pointer by 12 bytes, then at once
     * (like every other rank) sets a view at the current position */
    if (tl_rank == tl_size - 1) {
      char b[12] = "abcdefghijk";
      TL_OK(lmpio_file_write_shared(fh, b, round == 0 ? 12 : 3, round == 0 ? MPI_BYTE : MPI_INT,
                                    MPI_STATUS_IGNORE));
    }
    TL_OK(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    TL_OK(lmpio_file_get_view(fh, &disp, &e, &f, rep));
    TL_EQ(disp, 12 * (round + 1));
  }
  /* a view with holes: the standard does not forbid it on sequential files */
  MPI_Datatype holes = one_int_at(0, 0, 8);
  TL_OK(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, holes, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_view(fh, &disp, &e, &f, rep));
  TL_EQ(disp, 12 * 20);
  MPI_Type_free(&f);
  /* a derived filetype without holes is fine */
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_INT, &three);
  MPI_Type_commit(&three);
  TL_OK(lmpio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, three, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_get_view(fh, &disp, &e, &f, rep));
  TL_EQ(disp, 12 * 20);
  MPI_Type_free(&f);
  MPI_Type_free(&three);
  MPI_Type_free(&holes);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* A filetype whose data is one segment (3 shorts at byte 2 + 8 rank of a
 * tile 8 size + 4 long): an access inside one tile goes to the file as one
 * run without building a window (engine.c one_run), an access across tiles
 * through the windows.  Every byte lands where the view says, and reads
 * through the view give it back, by independent and collective calls. */
static void test_one_segment_tiles(void) {
  char *path = tl_path("oneseg");
  lmpio_file fh = open_world(path);
  const MPI_Offset disp = 6, tile = 8 * (MPI_Offset)tl_size + 4, len = disp + 12 * tile;
  if (tl_rank == 0) {
    unsigned char fill[4096];
    memset(fill, 0xEE, sizeof fill);
    TL_OK(lmpio_file_write_at(fh, 0, fill, (int)len, MPI_BYTE, MPI_STATUS_IGNORE));
  }
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  MPI_Datatype seg, ft;
  MPI_Aint at = 2 + 8 * (MPI_Aint)tl_rank;
  int three = 3;
  MPI_Type_create_hindexed(1, &three, &at, MPI_SHORT, &seg);
  MPI_Type_create_resized(seg, 0, (MPI_Aint)tile, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, disp, MPI_SHORT, ft, "native", MPI_INFO_NULL));
  /* (etype offset, count): inside a tile, ending a tile, across two, collective inside one */
  const int offs[4] = {1, 4, 8, 13}, counts[4] = {1, 2, 3, 1};
  short v[4][3];
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < counts[k]; i++) v[k][i] = (short)(1000 * tl_rank + offs[k] + i);
  for (int k = 0; k < 3; k++) TL_OK(lmpio_file_write_at(fh, offs[k], v[k], counts[k], MPI_SHORT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_write_at_all(fh, offs[3], v[3], counts[3], MPI_SHORT, MPI_STATUS_IGNORE));
  for (int k = 0; k < 4; k++) {
    short back[3] = {0, 0, 0};
    if (k == 3) TL_OK(lmpio_file_read_at_all(fh, offs[k], back, counts[k], MPI_SHORT, MPI_STATUS_IGNORE));
    else TL_OK(lmpio_file_read_at(fh, offs[k], back, counts[k], MPI_SHORT, MPI_STATUS_IGNORE));
    TL_CHECK(memcmp(back, v[k], sizeof(short) * (size_t)counts[k]) == 0);
  }
  short untouched = 0;
  TL_OK(lmpio_file_read_at(fh, 0, &untouched, 1, MPI_SHORT, MPI_STATUS_IGNORE));
  TL_EQ((unsigned short)untouched, 0xEEEE);
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  /* the file's bytes, every rank's: the model of the view */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  unsigned char got[4096], want[4096];
  TL_OK(lmpio_file_read_at(fh, 0, got, (int)len, MPI_BYTE, MPI_STATUS_IGNORE));
  memset(want, 0xEE, (size_t)len);
  for (int r = 0; r < tl_size; r++)
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < counts[k]; i++) {
        MPI_Offset pos = 2 * (MPI_Offset)(offs[k] + i); /* data byte of the view */
        short w = (short)(1000 * r + offs[k] + i);
        memcpy(want + disp + pos / 6 * tile + 2 + 8 * r + pos % 6, &w, sizeof w);
      }
  TL_CHECK(memcmp(got, want, (size_t)len) == 0);
  MPI_Type_free(&seg);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* ---- one segment a tile, against a model of the file ---------------------- */

/* A view whose filetype's data is one segment of b etypes of e bytes: rank
 * q's segment at byte pad + q * seg of a tile of extent bytes, its
 * resized lower bound anywhere (below the data, at it, past it). */
typedef struct {
  MPI_Offset disp, seg, extent, pad;
  int e;
} seg_view;

static MPI_Offset seg_byte(const seg_view *v, int q, MPI_Offset data) {
  return v->disp + data / v->seg * v->extent + v->pad + q * v->seg + data % v->seg;
}

#define MODEL_MAX (1 << 20)
static unsigned char model[MODEL_MAX];
static MPI_Offset model_size;

static unsigned seg_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffff;
}

static unsigned char seg_val(int t, int op, int q, MPI_Offset i) { return (unsigned char)(t * 31 + op * 7 + q * 53 + i * 3 + 1); }

/* Rank q's bytes [data, data + len) of the view written with seg_val(t, op, q, .). */
static void model_write(const seg_view *v, int q, MPI_Offset data, MPI_Offset len, int t, int op) {
  for (MPI_Offset i = 0; i < len; i++) {
    MPI_Offset f = seg_byte(v, q, data + i);
    if (f >= MODEL_MAX) continue; /* (checked where read) */
    model[f] = seg_val(t, op, q, i);
    if (f + 1 > model_size) model_size = f + 1;
  }
}

/* A read of len bytes at data byte `data` of this rank's view: its count
 * is the bytes before the end of the file, its bytes the model's. */
static void model_check(const seg_view *v, MPI_Offset data, MPI_Offset len, const unsigned char *got, MPI_Status *st,
                        const char *what) {
  MPI_Offset want = 0;
  while (want < len && seg_byte(v, tl_rank, data + want) < model_size) want++;
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  TL_EQ(n, want);
  for (MPI_Offset i = 0; i < want && i < n; i++)
    if (got[i] != model[seg_byte(v, tl_rank, data + i)]) {
      TL_CHECK(!"the bytes read are the model's");
      fprintf(stderr, "[rank %d] %s: data byte %lld of the view: %d, the model %d\n", tl_rank, what,
              (long long)(data + i), got[i], model[seg_byte(v, tl_rank, data + i)]);
      break;
    }
}

/* Every rank's writes done and seen before anyone reads. */
static void settle(lmpio_file fh) {
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
}

/* Random views whose filetype's data is one segment (etypes of 1, 2, 4, 8
 * and 6 bytes, lower bounds below, at and past the data, displacements,
 * holes between tiles, atomic mode, collective buffering on and off), and
 * random accesses through them: inside one tile (the one-run path,
 * engine.c) and across tiles, independent, collective, through the
 * individual and the shared pointer, reads past the end of the file; then
 * the data through a read-only handle and the whole file, each against a
 * model of the file's bytes. */
static void test_one_segment_model(void) {
  char *path = tl_path("segmodel");
  lmpio_file fh = open_world(path);
  unsigned seed = 4242;
  const int n = tl_size, me = tl_rank;
  static const int esizes[5] = {1, 2, 4, 8, 6};
  for (int t = 0; t < 40; t++) {
    int any = 0;
    MPI_Allreduce(&tl_case_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) break;
    int ek = (int)(seg_rand(&seed) % 5), b = 1 + (int)(seg_rand(&seed) % 4);
    MPI_Datatype etype = ek == 0 ? MPI_BYTE : ek == 1 ? MPI_SHORT : ek == 2 ? MPI_INT : MPI_DOUBLE;
    if (ek == 4) {
      MPI_Type_contiguous(3, MPI_SHORT, &etype);
      MPI_Type_commit(&etype);
    }
    seg_view v;
    v.e = esizes[ek];
    v.seg = (MPI_Offset)b * v.e;
    v.pad = (MPI_Offset)v.e * (seg_rand(&seed) % 4);
    MPI_Offset hole = (MPI_Offset)v.e * (seg_rand(&seed) % 4);
    v.extent = v.pad + n * v.seg + hole;
    v.disp = seg_rand(&seed) % 18;
    int lbk = (int)(seg_rand(&seed) % 4);
    MPI_Aint at = (MPI_Aint)(v.pad + me * v.seg);
    MPI_Aint lb = lbk == 0 ? 0 : lbk == 1 ? -8 : lbk == 2 ? at : (MPI_Aint)v.extent;
    int atomic = seg_rand(&seed) % 3 == 0, cb = (int)(seg_rand(&seed) % 3);
    MPI_Datatype seg, ft;
    MPI_Type_create_hindexed(1, &b, &at, etype, &seg);
    MPI_Type_create_resized(seg, lb, (MPI_Aint)v.extent, &ft);
    MPI_Type_commit(&ft);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", cb == 0 ? "enable" : cb == 1 ? "disable" : "automatic");
    MPI_Info_set(info, "romio_cb_read", cb == 0 ? "enable" : cb == 1 ? "disable" : "automatic");
    TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    TL_OK(lmpio_file_set_size(fh, 0));
    memset(model, 0, sizeof model);
    model_size = 0;
    TL_OK(lmpio_file_set_view(fh, v.disp, etype, ft, "native", info));
    TL_OK(lmpio_file_set_atomicity(fh, atomic));
    MPI_Offset shared = 0;
    for (int op = 0; op < 10; op++) {
      int kind = (int)(seg_rand(&seed) % 7), c = 1 + (int)(seg_rand(&seed) % (unsigned)(2 * b));
      MPI_Offset o = seg_rand(&seed) % (unsigned)(5 * b), len = (MPI_Offset)c * v.e, p = -1;
      unsigned char buf[64], back[64];
      MPI_Status st;
      memset(back, 0xAB, sizeof back);
      if (kind == 0 || kind == 1 || kind == 2) { /* write_at, write_at_all, write_all */
        for (MPI_Offset i = 0; i < len; i++) buf[i] = seg_val(t, op, me, i);
        if (kind == 0) TL_OK(lmpio_file_write_at(fh, o, buf, (int)len, MPI_BYTE, &st));
        else if (kind == 1) TL_OK(lmpio_file_write_at_all(fh, o, buf, (int)len, MPI_BYTE, &st));
        else {
          TL_OK(lmpio_file_seek(fh, o, MPI_SEEK_SET));
          TL_OK(lmpio_file_write_all(fh, buf, (int)len, MPI_BYTE, &st));
          TL_OK(lmpio_file_get_position(fh, &p));
          TL_EQ(p, o + c);
        }
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        TL_EQ(got, len);
        for (int q = 0; q < n; q++) model_write(&v, q, o * v.e, len, t, op);
        settle(fh);
      } else if (kind == 3) { /* write_ordered of a count of each rank's own, read back the same way */
        MPI_Offset before = 0, all = 0;
        for (int q = 0; q < n; q++) {
          int cq = 1 + (q + op) % (2 * b);
          model_write(&v, q, (shared + all) * v.e, (MPI_Offset)cq * v.e, t, op);
          if (q < me) before += cq;
          all += cq;
        }
        len = (MPI_Offset)(1 + (me + op) % (2 * b)) * v.e;
        for (MPI_Offset i = 0; i < len; i++) buf[i] = seg_val(t, op, me, i);
        TL_OK(lmpio_file_write_ordered(fh, buf, (int)len, MPI_BYTE, &st));
        settle(fh);
        TL_OK(lmpio_file_seek_shared(fh, shared, MPI_SEEK_SET));
        TL_OK(lmpio_file_read_ordered(fh, back, (int)len, MPI_BYTE, &st));
        model_check(&v, (shared + before) * v.e, len, back, &st, "read_ordered");
        shared += all;
        TL_OK(lmpio_file_get_position_shared(fh, &p));
        TL_EQ(p, shared);
      } else { /* read_at, read_at_all, and either past the end of the file */
        if (kind >= 5) o += (model_size - v.disp) / v.extent * b - b + seg_rand(&seed) % (unsigned)(3 * b);
        if (o < 0) o = 0;
        if (kind % 2) TL_OK(lmpio_file_read_at_all(fh, o, back, (int)len, MPI_BYTE, &st));
        else TL_OK(lmpio_file_read_at(fh, o, back, (int)len, MPI_BYTE, &st));
        model_check(&v, o * v.e, len, back, &st, kind % 2 ? "read_at_all" : "read_at");
        TL_OK(lmpio_file_get_byte_offset(fh, o, &p));
        TL_EQ(p, seg_byte(&v, me, o * v.e));
      }
      MPI_Barrier(MPI_COMM_WORLD); /* (every rank's reads before the next writes) */
    }
    TL_CHECK(model_size < MODEL_MAX);
    /* each rank's data through a read-only handle with the same view */
    lmpio_file ro;
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &ro));
    TL_OK(lmpio_file_set_view(ro, v.disp, etype, ft, "native", info));
    unsigned char mine[256];
    MPI_Status st;
    TL_OK(lmpio_file_read_at_all(ro, 0, mine, 7 * b * v.e, MPI_BYTE, &st));
    model_check(&v, 0, 7 * b * v.e, mine, &st, "read_at_all, read-only");
    TL_RC(lmpio_file_write_at(ro, 0, mine, v.e, MPI_BYTE, MPI_STATUS_IGNORE), MPI_ERR_READ_ONLY);
    TL_OK(lmpio_file_close(&ro));
    /* the whole file */
    TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    MPI_Offset size = -1;
    TL_OK(lmpio_file_get_size(fh, &size));
    TL_EQ(size, model_size);
    static unsigned char whole[MODEL_MAX];
    TL_OK(lmpio_file_read_at(fh, 0, whole, (int)model_size, MPI_BYTE, MPI_STATUS_IGNORE));
    if (memcmp(whole, model, (size_t)model_size) != 0) {
      TL_CHECK(!"the file is the model");
      fprintf(stderr, "[rank %d] view %d: etype %d bytes, %d a tile, pad %lld, extent %lld, disp %lld, lb %ld\n", me, t,
              v.e, b, (long long)v.pad, (long long)v.extent, (long long)v.disp, (long)lb);
    }
    TL_OK(lmpio_file_set_atomicity(fh, 0));
    MPI_Info_free(&info);
    MPI_Type_free(&seg);
    MPI_Type_free(&ft);
    if (ek == 4) MPI_Type_free(&etype);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("default view is a byte stream", test_default_view);
  tl_run("set_view/get_view, pointers reset, view keeps its types", test_set_get_view_resets_pointers);
  tl_run("set_view validation", test_validation);
  tl_run("set_view errors agree across ranks, old view kept", test_validation_agreed);
  tl_run("standard example: complementary filetypes partition the file", test_standard_partition_example);
  tl_run("filetype tiles with explicit lower and upper bounds", test_tiling_with_bounds);
  tl_run("end of file per view, short reads, SEEK_END", test_eof_per_view);
  tl_run("offsets count derived etypes", test_derived_etype);
  tl_run("sequential files: MPI_DISPLACEMENT_CURRENT after write_shared, no holes", test_sequential_views);
  tl_run("a filetype of one segment: accesses inside a tile and across tiles land where the view says",
         test_one_segment_tiles);
  tl_run("a filetype of one segment, random views and accesses, against a model of the file", test_one_segment_model);
  return tl_finish();
}
