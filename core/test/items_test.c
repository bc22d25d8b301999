/* The public item walker (lmpio_items_*): predefined items of count instances
 * of a datatype in typemap order, with their offsets, types and sizes. */
#include "testlib.h"

typedef struct {
  MPI_Aint off;
  MPI_Datatype t;
  MPI_Count n, size;
} run;

/* Walks everything with steps of at most max items into r (at most cap). */
static int walk(lmpio_items it, MPI_Count max, run *r, int cap) {
  int k = 0;
  MPI_Count n;
  while (k < cap && (n = lmpio_items_next(it, max, &r[k].off, &r[k].t, &r[k].size)) > 0) r[k++].n = n;
  return k;
}

static void test_named(void) {
  lmpio_items it;
  TL_OK(lmpio_items_open(MPI_DOUBLE, 5, &it));
  run r[8];
  TL_EQ(walk(it, 3, r, 8), 2); /* 5 doubles back to back: 3 + 2 */
  TL_EQ(r[0].off, 0);
  TL_EQ(r[0].n, 3);
  TL_CHECK(r[0].t == MPI_DOUBLE);
  TL_EQ(r[0].size, 8);
  TL_EQ(r[1].off, 24);
  TL_EQ(r[1].n, 2);
  TL_EQ(lmpio_items_next(it, 10, NULL, NULL, NULL), 0);
  lmpio_items_close(it);
  /* Instances that continue one another join; holes split. */
  MPI_Datatype c3, v;
  MPI_Type_contiguous(3, MPI_INT, &c3);
  MPI_Type_vector(2, 1, 2, MPI_INT, &v); /* ints at 0 and 8, extent 12 */
  MPI_Type_commit(&c3);
  MPI_Type_commit(&v);
  TL_OK(lmpio_items_open(c3, 2, &it));
  TL_EQ(walk(it, 100, r, 8), 1);
  TL_EQ(r[0].n, 6);
  lmpio_items_close(it);
  TL_OK(lmpio_items_open(v, 2, &it));
  TL_EQ(walk(it, 100, r, 8), 3); /* 0 | 8, 12 | 20 */
  TL_EQ(r[1].off, 8);
  TL_EQ(r[1].n, 2);
  TL_EQ(r[2].off, 20);
  lmpio_items_close(it);
  MPI_Type_free(&c3);
  MPI_Type_free(&v);
}

static void test_pair(void) {
  /* MPI_DOUBLE_INT is two items: a double at 0 and an int at 8, extent 16 */
  lmpio_items it;
  TL_OK(lmpio_items_open(MPI_DOUBLE_INT, 2, &it));
  run r[8];
  TL_EQ(walk(it, 100, r, 8), 4);
  MPI_Aint want[] = {0, 8, 16, 24};
  for (int i = 0; i < 4; i++) {
    TL_EQ(r[i].off, want[i]);
    TL_EQ(r[i].n, 1);
    TL_CHECK(r[i].t == (i % 2 ? MPI_INT : MPI_DOUBLE));
  }
  lmpio_items_close(it);
}

static void test_derived_and_skip(void) {
  /* {int at 0, double at 8, short at 16 x2} resized to 24: 4 items per instance */
  int bl[] = {1, 1, 2};
  MPI_Aint disp[] = {0, 8, 16};
  MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE, MPI_SHORT}, s, t;
  MPI_Type_create_struct(3, bl, disp, types, &s);
  MPI_Type_create_resized(s, 0, 24, &t);
  MPI_Type_commit(&t);
  lmpio_items it;
  TL_OK(lmpio_items_open(t, 3, &it));
  run r[16];
  TL_EQ(walk(it, 100, r, 16), 9); /* int, double, 2 shorts, per instance */
  TL_EQ(r[2].off, 16);
  TL_EQ(r[2].n, 2);
  TL_EQ(r[2].size, 2);
  TL_EQ(r[8].off, 2 * 24 + 16);
  lmpio_items_close(it);
  /* Skips: within an instance, over whole ones, past the end. */
  TL_OK(lmpio_items_open(t, 3, &it));
  TL_EQ(lmpio_items_skip(it, 3), 3); /* into the shorts of instance 0 */
  MPI_Aint off;
  MPI_Datatype b;
  MPI_Count size;
  TL_EQ(lmpio_items_next(it, 1, &off, &b, &size), 1);
  TL_EQ(off, 18);
  TL_CHECK(b == MPI_SHORT);
  TL_EQ(lmpio_items_skip(it, 5), 5); /* instance 1 and the int of instance 2 */
  TL_EQ(lmpio_items_next(it, 9, &off, &b, &size), 1);
  TL_EQ(off, 48 + 8);
  TL_CHECK(b == MPI_DOUBLE);
  TL_EQ(lmpio_items_skip(it, 10), 2); /* only the two shorts are left */
  TL_EQ(lmpio_items_next(it, 9, &off, &b, &size), 0);
  TL_EQ(lmpio_items_skip(it, 1), 0);
  lmpio_items_close(it);
  /* The walker does not need the handle once open. */
  TL_OK(lmpio_items_open(t, 1000000000, &it));
  MPI_Type_free(&t);
  MPI_Type_free(&s);
  TL_EQ(lmpio_items_skip(it, (MPI_Count)4 * 999999999 + 1), (MPI_Count)4 * 999999999 + 1);
  TL_EQ(lmpio_items_next(it, 9, &off, &b, &size), 1);
  TL_EQ(off, (MPI_Aint)999999999 * 24 + 8);
  TL_CHECK(b == MPI_DOUBLE);
  lmpio_items_close(it);
}

static void test_empty_and_errors(void) {
  lmpio_items it;
  TL_OK(lmpio_items_open(MPI_INT, 0, &it));
  TL_EQ(lmpio_items_next(it, 1, NULL, NULL, NULL), 0);
  lmpio_items_close(it);
  MPI_Datatype none;
  MPI_Type_contiguous(0, MPI_INT, &none);
  MPI_Type_commit(&none);
  TL_OK(lmpio_items_open(none, 5, &it));
  TL_EQ(lmpio_items_skip(it, 1), 0);
  TL_EQ(lmpio_items_next(it, 1, NULL, NULL, NULL), 0);
  lmpio_items_close(it);
  MPI_Type_free(&none);
  lmpio_items_close(NULL);
  TL_RC(lmpio_items_open(MPI_INT, 1, NULL), MPI_ERR_ARG);
  TL_RC(lmpio_items_open(MPI_INT, -1, &it), MPI_ERR_COUNT);
  TL_CHECK(it == NULL);
  TL_RC(lmpio_items_open(MPI_DATATYPE_NULL, 1, &it), MPI_ERR_TYPE);
  TL_CHECK(strstr(lmpio_last_error_message(), "lmpio_items_open") != NULL);
}

/* The data bounds of one instance as lmpio lays it out: hvector(100, 3, -1,
 * BYTE) has its bytes at -99..2 (Open MPI's true lb says 0: the Lua module
 * sized a buffer by that and a read wrote before it); a struct's hole and a
 * resized type's markers are not data. */
static void test_data_bounds(void) {
  MPI_Datatype hv, st, rs;
  MPI_Type_create_hvector(100, 3, -1, MPI_BYTE, &hv);
  int bl[2] = {1, 1};
  MPI_Aint disp[2] = {8, 24};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct(2, bl, disp, types, &st);
  MPI_Type_create_resized(st, -16, 64, &rs);
  MPI_Aint lo = 1, hi = 1, ext = 1;
  TL_OK(lmpio_type_data_bounds(hv, &lo, &hi, &ext));
  TL_EQ(lo, -99);
  TL_EQ(hi, 3);
  TL_OK(lmpio_type_data_bounds(st, &lo, &hi, &ext));
  TL_EQ(lo, 8);
  TL_EQ(hi, 32);
  TL_OK(lmpio_type_data_bounds(rs, &lo, &hi, &ext));
  TL_EQ(lo, 8);
  TL_EQ(hi, 32);
  TL_EQ(ext, 64);
  TL_OK(lmpio_type_data_bounds(MPI_DOUBLE, &lo, &hi, &ext));
  TL_EQ(lo, 0);
  TL_EQ(hi, 8);
  TL_EQ(ext, 8);
  TL_RC(lmpio_type_data_bounds(hv, NULL, &hi, &ext), MPI_ERR_ARG);
  MPI_Type_free(&hv);
  MPI_Type_free(&st);
  MPI_Type_free(&rs);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  (void)tl_path; /* no files here */
  (void)tl_unlink;
  tl_run("items: a predefined type, in runs of at most max", test_named);
  tl_run("items: a pair type is two items", test_pair);
  tl_run("items: a derived type, skips within and over instances", test_derived_and_skip);
  tl_run("items: empty walks and argument errors", test_empty_and_errors);
  tl_run("lmpio_type_data_bounds: where an instance's data bytes lie, negative strides too", test_data_bounds);
  return tl_finish();
}
