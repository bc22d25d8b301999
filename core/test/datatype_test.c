/* Every datatype constructor as a memory type and as a filetype, checked
 * against MPI's own typemaps (MPI_Pack / MPI_Unpack / a message to self are
 * the oracle); zero-length blocks, zero-size types, negative memory
 * displacements; the flattening cache and its compactness (10^8 blocks). */
#include "testlib.h"
#include "internals.h"

#include <stdint.h>
#include <sys/resource.h>

/* A file of this rank only (the cases here open files on MPI_COMM_SELF). */
static char *my_path(const char *tag) {
  char *p = tl_path(tag);
  size_t n = strlen(p);
  snprintf(p + n, 4096 - n, ".r%d", tl_rank);
  return p;
}

static void my_unlink(char *p) {
  unlink(p);
  free(p);
}

static void fill(unsigned char *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8) * 13u + 1u);
}

static int first_diff(const unsigned char *a, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return (int)i;
  return -1;
}

#define SAME(what, a, b, n)                                                            \
  do {                                                                                 \
    int d_ = first_diff((const unsigned char *)(a), (const unsigned char *)(b), (n));  \
    if (d_ >= 0) {                                                                     \
      tl_case_failed = 1;                                                              \
      fprintf(stderr, "[rank %d] %s:%d: %s: bytes differ at %d\n", tl_rank, __FILE__, \
              __LINE__, (what), d_);                                                   \
    }                                                                                  \
  } while (0)

/* Memory that holds count instances of t: *origin is the buffer address to
 * pass to calls, the allocation is returned. */
static unsigned char *alloc_for(MPI_Datatype t, int count, char **origin, size_t *span) {
  MPI_Aint lb, ext, tlb, text;
  MPI_Type_get_extent(t, &lb, &ext);
  MPI_Type_get_true_extent(t, &tlb, &text);
  MPI_Aint lo = tlb, hi = tlb + text;
  if (count > 1) {
    MPI_Aint s = (MPI_Aint)(count - 1) * ext;
    if (s < 0) lo += s;
    else hi += s;
  }
  *span = (size_t)(hi - lo) + 64;
  unsigned char *m = malloc(*span);
  *origin = (char *)m + 32 - lo;
  return m;
}

static lmpio_file open_self(const char *path) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  return fh;
}

/* The reference status: count items of t sent to ourselves. */
static MPI_Count ref_elements(const void *origin, int count, MPI_Datatype t, void *into) {
  MPI_Status st;
  MPI_Sendrecv(origin, count, t, 0, 7, into, count, t, 0, 7, MPI_COMM_SELF, &st);
  MPI_Count el;
  MPI_Get_elements_x(&st, t, &el);
  return el;
}

/* t as a memory type: write and read count instances against a byte view. */
static void check_memtype(const char *what, MPI_Datatype t, int count) {
  int size;
  MPI_Type_size(t, &size);
  char *origin, *origin2, *origin3;
  size_t span;
  unsigned char *mem = alloc_for(t, count, &origin, &span);
  unsigned char *mem2 = alloc_for(t, count, &origin2, &span);
  unsigned char *ref = alloc_for(t, count, &origin3, &span);
  fill(mem, span, 1);
  size_t nbytes = (size_t)size * (size_t)count;
  unsigned char *packed = malloc(nbytes + 1), *back = malloc(nbytes + 1);
  int pos = 0;
  MPI_Pack(origin, count, t, packed, (int)nbytes + 1, &pos, MPI_COMM_SELF);
  TL_EQ(pos, nbytes);
  memset(mem2, 0xEE, span);
  MPI_Count ref_el = ref_elements(origin, count, t, origin2);

  char *path = my_path("mem");
  lmpio_file fh = open_self(path);
  MPI_Status st;
  TL_OK(lmpio_file_write_at(fh, 5, origin, count, t, &st));
  int n = -1;
  MPI_Count el = -1;
  MPI_Get_count(&st, t, &n);
  MPI_Get_elements_x(&st, t, &el);
  if (n != count || el != ref_el) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: write status count %d elements %lld, expected %d %lld\n", tl_rank,
            what, n, (long long)el, count, (long long)ref_el);
  }
  TL_OK(lmpio_file_read_at(fh, 5, back, (int)nbytes, MPI_BYTE, &st));
  MPI_Get_count(&st, MPI_BYTE, &n);
  TL_EQ(n, nbytes);
  SAME(what, back, packed, nbytes);

  memset(mem2, 0xEE, span);
  memset(ref, 0xEE, span);
  pos = 0;
  MPI_Unpack(packed, (int)nbytes, &pos, origin3, count, t, MPI_COMM_SELF);
  TL_OK(lmpio_file_read_at(fh, 5, origin2, count, t, &st));
  MPI_Get_count(&st, t, &n);
  MPI_Get_elements_x(&st, t, &el);
  if (n != count || el != ref_el) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: read status count %d elements %lld, expected %d %lld\n", tl_rank,
            what, n, (long long)el, count, (long long)ref_el);
  }
  SAME(what, mem2, ref, span);
  TL_OK(lmpio_file_close(&fh));
  my_unlink(path);
  free(mem);
  free(mem2);
  free(ref);
  free(packed);
  free(back);
}

/* ft as a filetype (etype et, displacement disp), written through memory
 * type mt (mcount instances) and read back, against the layout MPI gives
 * MPI_Type_contiguous(ntiles, ft). */
static void check_view_mem(const char *what, MPI_Datatype ft, MPI_Datatype et, MPI_Offset disp,
                           MPI_Datatype mt, int mcount) {
  int ftsize, esize, msize;
  MPI_Type_size(ft, &ftsize);
  MPI_Type_size(et, &esize);
  MPI_Type_size(mt, &msize);
  MPI_Aint flb, fext, tlb, text;
  MPI_Type_get_extent(ft, &flb, &fext);
  MPI_Type_get_true_extent(ft, &tlb, &text);
  size_t N = (size_t)msize * (size_t)mcount;
  int tiles = (int)(N / (size_t)ftsize) + 2;
  size_t L = (size_t)disp + (size_t)(tiles - 1) * (size_t)fext + (size_t)(tlb + text) + 16;

  /* Where the data bytes of the tiled filetype are, from MPI itself. */
  MPI_Datatype tiled;
  MPI_Type_contiguous(tiles, ft, &tiled);
  MPI_Type_commit(&tiled);
  size_t stream = (size_t)tiles * (size_t)ftsize;
  unsigned char *ones = malloc(stream), *mask = calloc(L, 1);
  memset(ones, 0xFF, stream);
  int pos = 0;
  MPI_Unpack(ones, (int)stream, &pos, mask + disp, 1, tiled, MPI_COMM_SELF);
  MPI_Type_free(&tiled);
  size_t *where = malloc(sizeof *where * (stream + 1)), nw = 0;
  for (size_t i = 0; i < L; i++)
    if (mask[i]) where[nw++] = i;
  TL_EQ(nw, stream);

  /* The data, from the memory type. */
  char *origin, *origin2, *origin3;
  size_t span;
  unsigned char *mem = alloc_for(mt, mcount, &origin, &span);
  unsigned char *mem2 = alloc_for(mt, mcount, &origin2, &span);
  unsigned char *ref = alloc_for(mt, mcount, &origin3, &span);
  fill(mem, span, 5);
  unsigned char *data = malloc(N + 1);
  pos = 0;
  MPI_Pack(origin, mcount, mt, data, (int)N + 1, &pos, MPI_COMM_SELF);

  unsigned char *old = malloc(L), *expect = malloc(L), *file = malloc(L);
  fill(old, L, 9);
  memcpy(expect, old, L);
  for (size_t m = 0; m < N && m < nw; m++) expect[where[m]] = data[m];

  char *path = my_path("view");
  lmpio_file fh = open_self(path);
  MPI_Status st;
  int n;
  TL_OK(lmpio_file_write_at(fh, 0, old, (int)L, MPI_BYTE, &st));
  TL_OK(lmpio_file_set_view(fh, disp, et, ft, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_all(fh, origin, mcount, mt, &st));
  MPI_Get_count(&st, mt, &n);
  TL_EQ(n, mcount);
  MPI_Offset p = -1;
  TL_OK(lmpio_file_get_position(fh, &p));
  TL_EQ(p, N / (size_t)esize);
  for (size_t j = 0; j < N / (size_t)esize && j < 64; j++) {
    MPI_Offset b = -1;
    TL_OK(lmpio_file_get_byte_offset(fh, (MPI_Offset)j, &b));
    if ((size_t)b != where[j * (size_t)esize]) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] %s: byte offset of etype %zu is %lld, expected %zu\n", tl_rank, what, j,
              (long long)b, where[j * (size_t)esize]);
      break;
    }
  }
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 0, file, (int)L, MPI_BYTE, &st));
  SAME(what, file, expect, L);

  TL_OK(lmpio_file_set_view(fh, disp, et, ft, "native", MPI_INFO_NULL));
  memset(mem2, 0xEE, span);
  memset(ref, 0xEE, span);
  pos = 0;
  MPI_Unpack(data, (int)N, &pos, origin3, mcount, mt, MPI_COMM_SELF);
  TL_OK(lmpio_file_read_all(fh, origin2, mcount, mt, &st));
  MPI_Get_count(&st, mt, &n);
  TL_EQ(n, mcount);
  SAME(what, mem2, ref, span);
  /* Single etypes at scattered offsets. */
  size_t ne = N / (size_t)esize;
  for (size_t j = 0; j < ne; j += ne / 5 + 1) {
    unsigned char one[64];
    if (esize > 64) break;
    TL_OK(lmpio_file_read_at(fh, (MPI_Offset)j, one, esize, MPI_BYTE, &st));
    SAME(what, one, data + j * (size_t)esize, (size_t)esize);
  }
  TL_OK(lmpio_file_close(&fh));
  my_unlink(path);
  free(ones);
  free(mask);
  free(where);
  free(mem);
  free(mem2);
  free(ref);
  free(data);
  free(old);
  free(expect);
  free(file);
}

/* ft as a filetype fed from contiguous memory: whole tiles and a partial one. */
static void check_view(const char *what, MPI_Datatype ft, MPI_Datatype et, MPI_Offset disp) {
  int ftsize, esize;
  MPI_Type_size(ft, &ftsize);
  MPI_Type_size(et, &esize);
  int n = 2 * ftsize + esize;
  check_view_mem(what, ft, et, disp, MPI_BYTE, n);
}

/* Both roles, for a type made of ints. */
static void check_int_type(const char *what, MPI_Datatype t) {
  MPI_Type_commit(&t);
  check_memtype(what, t, 1);
  check_memtype(what, t, 3);
  check_view(what, t, MPI_INT, 0);
  check_view(what, t, MPI_INT, 12);
  MPI_Type_free(&t);
}

/* ---- cases ------------------------------------------------------------ */

static void test_basic_constructors(void) {
  MPI_Datatype t;
  MPI_Type_contiguous(3, MPI_INT, &t);
  check_int_type("contiguous", t);
  MPI_Type_vector(3, 2, 5, MPI_INT, &t);
  check_int_type("vector", t);
  MPI_Type_create_hvector(3, 2, 28, MPI_INT, &t);
  check_int_type("hvector", t);
  int bl[] = {2, 1, 3}, dis[] = {0, 3, 7};
  MPI_Type_indexed(3, bl, dis, MPI_INT, &t);
  check_int_type("indexed", t);
  MPI_Aint hd[] = {0, 12, 28};
  MPI_Type_create_hindexed(3, bl, hd, MPI_INT, &t);
  check_int_type("hindexed", t);
  int ib[] = {1, 4, 9};
  MPI_Type_create_indexed_block(3, 2, ib, MPI_INT, &t);
  check_int_type("indexed_block", t);
  MPI_Aint hb[] = {4, 20, 40};
  MPI_Type_create_hindexed_block(3, 2, hb, MPI_INT, &t);
  check_int_type("hindexed_block", t);
  MPI_Datatype types[] = {MPI_INT, MPI_INT, MPI_INT};
  MPI_Aint sd[] = {0, 16, 24};
  MPI_Type_create_struct(3, bl, sd, types, &t);
  check_int_type("struct of ints", t);
  MPI_Datatype v;
  MPI_Type_vector(2, 1, 3, MPI_INT, &v);
  MPI_Type_dup(v, &t);
  check_int_type("dup", t);
  MPI_Type_free(&v);
}

static void test_subarray(void) {
  MPI_Datatype t;
  int sizes[] = {4, 6}, sub[] = {2, 3}, starts[] = {1, 2};
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
  check_int_type("subarray C", t);
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
  check_int_type("subarray Fortran", t);
  int s3[] = {3, 4, 5}, u3[] = {2, 2, 3}, t3[] = {1, 0, 2};
  MPI_Type_create_subarray(3, s3, u3, t3, MPI_ORDER_C, MPI_INT, &t);
  check_int_type("subarray 3d C", t);
  MPI_Type_create_subarray(3, s3, u3, t3, MPI_ORDER_FORTRAN, MPI_INT, &t);
  check_int_type("subarray 3d Fortran", t);
  int s1[] = {10}, u1[] = {10}, t1[] = {0};
  MPI_Type_create_subarray(1, s1, u1, t1, MPI_ORDER_C, MPI_INT, &t);
  check_int_type("subarray whole", t);
}

/* Each process's darray, for every rank of a grid; the pieces of all ranks
 * must also cover the array exactly once (checked by MPI's own layout). */
static void darray_case(const char *what, int ndims, const int *gsizes, const int *distribs,
                        const int *dargs, const int *psizes, int order) {
  int np = 1, total = 1;
  for (int d = 0; d < ndims; d++) {
    np *= psizes[d];
    total *= gsizes[d];
  }
  for (int r = 0; r < np; r++) {
    MPI_Datatype t;
    if (MPI_Type_create_darray(np, r, ndims, gsizes, distribs, dargs, psizes, order, MPI_INT, &t) !=
        MPI_SUCCESS) {
      tl_case_failed = 1;
      fprintf(stderr, "%s: MPI rejects the darray\n", what);
      return;
    }
    MPI_Type_commit(&t);
    int size;
    MPI_Type_size(t, &size);
    char label[160];
    snprintf(label, sizeof label, "%s rank %d of %d", what, r, np);
    if (size > 0) {
      check_memtype(label, t, 1);
      check_view(label, t, MPI_INT, 8);
    }
    MPI_Type_free(&t);
  }
  (void)total;
}

static void test_darray(void) {
  int g2[] = {7, 9}, p2[] = {2, 3};
  int blk[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK};
  int cyc[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC};
  int mix[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
  int bc[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
  int dflt[] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
  int k2[] = {2, 2}, kmix[] = {3, MPI_DISTRIBUTE_DFLT_DARG}, p21[] = {2, 1}, bcarg[] = {4, 2};
  darray_case("darray block C", 2, g2, blk, dflt, p2, MPI_ORDER_C);
  darray_case("darray block Fortran", 2, g2, blk, dflt, p2, MPI_ORDER_FORTRAN);
  darray_case("darray cyclic C", 2, g2, cyc, dflt, p2, MPI_ORDER_C);
  darray_case("darray cyclic(2) C", 2, g2, cyc, k2, p2, MPI_ORDER_C);
  darray_case("darray cyclic(2) Fortran", 2, g2, cyc, k2, p2, MPI_ORDER_FORTRAN);
  darray_case("darray cyclic(3)/none C", 2, g2, mix, kmix, p21, MPI_ORDER_C);
  darray_case("darray block(4)/cyclic(2) C", 2, g2, bc, bcarg, p2, MPI_ORDER_C);
  int g1[] = {10}, c1[] = {MPI_DISTRIBUTE_CYCLIC}, a1[] = {3}, p1[] = {3};
  darray_case("darray 1d cyclic(3)", 1, g1, c1, a1, p1, MPI_ORDER_C);
}

static void test_resized_and_nested(void) {
  MPI_Datatype t, u, v;
  /* explicit bounds: one int at byte 4 of a 16-byte tile */
  MPI_Aint d4[] = {4};
  int one[] = {1};
  MPI_Type_create_hindexed(1, one, d4, MPI_INT, &u);
  MPI_Type_create_resized(u, 0, 16, &t);
  check_int_type("resized (hole before and after)", t);
  MPI_Type_vector(2, 1, 2, MPI_INT, &v);
  MPI_Type_create_resized(v, 0, 24, &t);
  check_int_type("resized vector (larger extent)", t);
  MPI_Type_free(&u);
  MPI_Type_free(&v);
  /* nests: vector of indexed of contiguous, subarray of vectors, struct of nests */
  MPI_Datatype c, ix, vv;
  MPI_Type_contiguous(2, MPI_INT, &c);
  int bl[] = {1, 2}, dis[] = {0, 3};
  MPI_Type_indexed(2, bl, dis, c, &ix);
  MPI_Type_vector(3, 1, 2, ix, &t);
  check_int_type("vector of indexed of contiguous", t);
  MPI_Type_vector(2, 2, 3, MPI_INT, &vv);
  int sizes[] = {3, 4}, sub[] = {2, 2}, starts[] = {1, 1};
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, vv, &t);
  check_int_type("subarray of vectors", t);
  MPI_Datatype types[] = {ix, vv};
  int sb[] = {1, 2};
  MPI_Aint sdis[] = {0, 200};
  MPI_Datatype s;
  MPI_Type_create_struct(2, sb, sdis, types, &s);
  MPI_Type_dup(s, &t);
  check_int_type("struct of nests", t);
  MPI_Type_create_hvector(2, 1, 400, s, &u);
  check_int_type("hvector of struct of nests", u);
  MPI_Type_free(&s);
  MPI_Type_free(&c);
  MPI_Type_free(&ix);
  MPI_Type_free(&vv);
}

static void test_zero_blocks_and_sizes(void) {
  MPI_Datatype t;
  int bl[] = {2, 0, 3, 0}, dis[] = {0, 3, 5, 9};
  MPI_Type_indexed(4, bl, dis, MPI_INT, &t);
  check_int_type("indexed with zero-length blocks", t);
  int bl2[] = {0, 2, 0}, dis2[] = {1, 4, 8};
  MPI_Type_indexed(3, bl2, dis2, MPI_INT, &t);
  check_int_type("indexed starting with a zero-length block", t);
  MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_INT};
  int sbl[] = {1, 0, 2};
  MPI_Aint sdis[] = {0, 8, 16};
  MPI_Type_create_struct(3, sbl, sdis, types, &t);
  check_int_type("struct with a zero-length block", t);

  /* zero-size types: as memory types they move nothing; as filetypes they are refused */
  MPI_Datatype z;
  MPI_Type_contiguous(0, MPI_INT, &z);
  MPI_Type_commit(&z);
  char *path = my_path("zero");
  lmpio_file fh = open_self(path);
  int buf[4] = {1, 2, 3, 4};
  MPI_Status st;
  TL_OK(lmpio_file_write_at(fh, 0, buf, 5, z, &st));
  int n = -1;
  MPI_Get_count(&st, MPI_BYTE, &n);
  TL_EQ(n, 0);
  MPI_Offset size = -1;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 0);
  TL_OK(lmpio_file_read_at(fh, 0, buf, 5, z, &st));
  TL_OK(lmpio_file_write(fh, buf, 0, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &n);
  TL_EQ(n, 0);
  /* A filetype with no data is a view with no data (as in Open MPI and
   * ROMIO): count 0 works through it, a nonzero count is an error. */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, z, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_at(fh, 0, buf, 0, MPI_INT, &st));
  TL_RC(lmpio_file_write_at(fh, 0, buf, 1, MPI_INT, &st), MPI_ERR_ARG);
  TL_CHECK(strstr(lmpio_last_error_message(), "no data") != NULL);
  TL_RC(lmpio_file_set_view(fh, 0, z, MPI_INT, "native", MPI_INFO_NULL), MPI_ERR_TYPE); /* an etype needs data */
  MPI_Datatype v0;
  MPI_Type_vector(0, 1, 2, MPI_INT, &v0);
  MPI_Type_commit(&v0);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, v0, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 0, buf, 0, MPI_INT, &st));
  TL_OK(lmpio_file_close(&fh));
  my_unlink(path);
  MPI_Type_free(&z);
  MPI_Type_free(&v0);
}

static void test_negative_memory_displacements(void) {
  MPI_Datatype t, u;
  int bl[] = {2, 1, 1};
  MPI_Aint dis[] = {-16, 0, -40};
  MPI_Type_create_hindexed(3, bl, dis, MPI_INT, &t);
  MPI_Type_commit(&t);
  check_memtype("hindexed with negative displacements", t, 1);
  check_memtype("hindexed with negative displacements x3", t, 3);
  MPI_Type_free(&t);
  MPI_Type_vector(3, 1, -2, MPI_INT, &t);
  MPI_Type_commit(&t);
  check_memtype("vector with negative stride", t, 2);
  /* as a memory type against a noncontiguous filetype */
  MPI_Type_vector(4, 1, 3, MPI_INT, &u);
  MPI_Type_commit(&u);
  check_view_mem("negative stride memory into a vector view", u, MPI_INT, 4, t, 4);
  MPI_Type_free(&t);
  MPI_Type_create_resized(MPI_INT, -4, 12, &t);
  MPI_Type_commit(&t);
  check_memtype("resized with negative lb", t, 4);
  MPI_Type_free(&t);
  int bl2[] = {1, 1};
  MPI_Aint d2[] = {-8, 8};
  MPI_Datatype ty2[] = {MPI_DOUBLE, MPI_CHAR};
  MPI_Type_create_struct(2, bl2, d2, ty2, &t);
  MPI_Type_commit(&t);
  check_memtype("struct with negative displacement", t, 3);
  MPI_Type_free(&t);
  MPI_Type_free(&u);
}

static void test_mixed_struct(void) {
  struct rec { double d; char c[3]; int i; short s; };
  int bl[] = {1, 3, 1, 1};
  MPI_Aint dis[] = {offsetof(struct rec, d), offsetof(struct rec, c), offsetof(struct rec, i),
                    offsetof(struct rec, s)};
  MPI_Datatype ty[] = {MPI_DOUBLE, MPI_CHAR, MPI_INT, MPI_SHORT}, t, r;
  MPI_Type_create_struct(4, bl, dis, ty, &t);
  MPI_Type_create_resized(t, 0, sizeof(struct rec), &r);
  MPI_Type_commit(&r);
  check_memtype("struct of mixed types", r, 1);
  check_memtype("struct of mixed types x4", r, 4);
  check_view("struct of mixed types as filetype (etype byte)", r, MPI_BYTE, 3);
  /* noncontiguous memory into a noncontiguous view */
  MPI_Datatype v;
  MPI_Type_vector(5, 3, 7, MPI_BYTE, &v);
  MPI_Type_commit(&v);
  check_view_mem("struct memory into a byte vector view", v, MPI_BYTE, 1, r, 5);
  check_view_mem("struct memory into a struct view", r, MPI_BYTE, 0, r, 7);
  MPI_Type_free(&v);
  MPI_Type_free(&t);
  MPI_Type_free(&r);
  /* pair types and etypes other than int */
  MPI_Type_vector(3, 1, 2, MPI_DOUBLE_INT, &t);
  MPI_Type_commit(&t);
  check_memtype("vector of MPI_DOUBLE_INT", t, 2);
  MPI_Type_free(&t);
  MPI_Type_vector(4, 2, 4, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  check_view("vector of doubles, etype double", t, MPI_DOUBLE, 16);
  MPI_Datatype c2;
  MPI_Type_contiguous(2, MPI_DOUBLE, &c2);
  MPI_Type_commit(&c2);
  check_view("vector of doubles, etype 2 doubles", t, c2, 0);
  MPI_Type_free(&c2);
  MPI_Type_free(&t);
}

static void test_flattening_cached(void) {
  MPI_Datatype t, d;
  MPI_Type_vector(10, 2, 3, MPI_INT, &t);
  MPI_Type_commit(&t);
  const lmpio__tm_node *a = NULL, *b = NULL;
  TL_OK(lmpio__typemap_get(t, &a, "test"));
  TL_OK(lmpio__typemap_get(t, &b, "test"));
  TL_CHECK(a != NULL && a == b);
  if (a) {
    TL_EQ(a->size, 80);
    TL_EQ(a->nitems, 20);
  }
  lmpio__typemap_release(a);
  lmpio__typemap_release(b);
  /* the cache follows the type through a dup; freeing the types frees it */
  MPI_Type_dup(t, &d);
  TL_OK(lmpio__typemap_get(d, &a, "test"));
  TL_CHECK(a != NULL && a->size == 80);
  lmpio__typemap_release(a);
  MPI_Type_free(&d);
  MPI_Type_free(&t);
}

static long maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* 10^8 blocks: the flattening is a few runs; access far into the tiles. */
static void huge_view(const char *what, MPI_Datatype ft, MPI_Offset per_tile) {
  char *path = my_path("huge");
  lmpio_file fh = open_self(path);
  long before = maxrss_kb();
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL));
  const lmpio__tm_node *n = NULL;
  TL_OK(lmpio__typemap_get(ft, &n, "test"));
  if (n) TL_CHECK(n->nruns <= 4 && n->depth <= 4);
  lmpio__typemap_release(n);
  MPI_Offset offs[] = {per_tile - 3, 2 * per_tile + 12345, 3 * per_tile - 2};
  int w[4], r[4];
  MPI_Status st;
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 4; i++) w[i] = (int)(offs[k] * 10 + i);
    TL_OK(lmpio_file_write_at(fh, offs[k], w, 4, MPI_INT, &st));
  }
  for (int k = 0; k < 3; k++) {
    memset(r, 0, sizeof r);
    TL_OK(lmpio_file_read_at(fh, offs[k], r, 4, MPI_INT, &st));
    for (int i = 0; i < 4; i++) TL_EQ(r[i], (int)(offs[k] * 10 + i));
  }
  MPI_Offset b = 0, b1 = 0;
  TL_OK(lmpio_file_get_byte_offset(fh, 1, &b1));
  TL_OK(lmpio_file_get_byte_offset(fh, per_tile + 1, &b));
  MPI_Aint lb, ext;
  MPI_Type_get_extent(ft, &lb, &ext);
  TL_EQ(b, ext + b1);
  long grew = maxrss_kb() - before;
  if (grew * 1024L > 100L * 1000 * 1000) { /* far below 10^8 * 16 bytes */
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] %s: RSS grew by %ld kB\n", tl_rank, what, grew);
  }
  TL_OK(lmpio_file_close(&fh));
  my_unlink(path);
}

static void test_huge_filetypes(void) {
  MPI_Datatype t;
  MPI_Type_vector(100000000, 1, 2, MPI_INT, &t);
  MPI_Type_commit(&t);
  huge_view("vector of 1e8 blocks", t, 100000000);
  MPI_Type_free(&t);
  int sizes[] = {100000000, 2}, sub[] = {100000000, 1}, starts[] = {0, 1};
  MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t);
  MPI_Type_commit(&t);
  huge_view("subarray of 1e8 blocks", t, 100000000);
  MPI_Type_free(&t);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  (void)tl_unlink;
  tl_run("contiguous, vector, hvector, indexed, hindexed, (h)indexed_block, struct, dup", test_basic_constructors);
  tl_run("subarray in C and Fortran order", test_subarray);
  tl_run("darray block, cyclic, cyclic(k), none", test_darray);
  tl_run("resized bounds and nested constructors", test_resized_and_nested);
  tl_run("zero-length blocks and zero-size types", test_zero_blocks_and_sizes);
  tl_run("negative memory displacements and strides", test_negative_memory_displacements);
  tl_run("mixed structs, pair types, non-int etypes", test_mixed_struct);
  tl_run("flattening is cached on the datatype", test_flattening_cached);
  tl_run("a filetype of 1e8 blocks costs memory by depth, not blocks", test_huge_filetypes);
  return tl_finish();
}
