/* The plan alone (plan.c): the windows it makes of a view, their pieces,
 * and what it decides for each (sieve or direct, the fill of a sieved
 * write, the lock).  No file: a plan holds a snapshot and never touches
 * the descriptor. */
#include "testlib.h"
#include "internals.h"

/* A plan of direction dir over the tiled filetype ft at disp (a local file
 * system, readable, on disk; default hints for one rank). */
static void make_plan(lmpio__plan *p, int dir, MPI_Datatype ft, MPI_Offset disp) {
  memset(p, 0, sizeof *p);
  p->dir = dir;
  p->fd = -1;
  p->fd_readable = 1;
  p->drv = lmpio__driver_by_id(LMPIO__FS_LOCAL);
  p->path = "plan_test";
  p->disp = disp;
  TL_OK(lmpio__typemap_get(ft, &p->ft, "plan_test"));
  p->contiguous = p->ft->contiguous && p->ft->extent == (MPI_Aint)p->ft->size;
  lmpio__hints_default(&p->hints, 1);
  p->esize = 1;
  p->size = 1;
}

/* The pieces of a window, one by one: off[i], len[i] (at most max). */
static int pieces(const lmpio__window *w, MPI_Offset *off, MPI_Offset *len, int max) {
  int k = 0;
  for (size_t i = 0; i < w->n; i++)
    for (MPI_Offset j = 0; j < w->v[i].count && k < max; j++, k++) {
      off[k] = w->v[i].off + j * w->v[i].stride;
      len[k] = w->v[i].len;
    }
  return k;
}

static void test_contiguous(void) {
  lmpio__plan p;
  make_plan(&p, LMPIO__WRITE, MPI_BYTE, 100);
  TL_CHECK(p.contiguous);
  lmpio__plan_iter it;
  lmpio__window w = {0};
  TL_OK(lmpio__plan_start(&it, &p, 10, 110));
  TL_EQ(lmpio__plan_next(&it, 4096, 1, &w), 1);
  /* One window, one piece: bytes [110, 210) of the file, nothing to sieve
   * or lock (no view has holes). */
  TL_EQ(w.lo, 110);
  TL_EQ(w.hi, 210);
  TL_EQ(w.data, 100);
  MPI_Offset off[4], len[4];
  TL_EQ(pieces(&w, off, len, 4), 1);
  TL_EQ(off[0], 110);
  TL_EQ(len[0], 100);
  TL_EQ(w.sieve, 0);
  TL_EQ(w.lock, LMPIO__LOCK_NONE);
  TL_EQ(lmpio__plan_next(&it, 4096, 1, &w), 0);
  lmpio__plan_stop(&it);
  lmpio__window_free(&w);
  lmpio__plan_free(&p);
}

/* 8-byte blocks every 64 bytes (a double resized to 64). */
static MPI_Datatype strided_type(void) {
  MPI_Datatype t;
  MPI_Type_create_resized(MPI_DOUBLE, 0, 64, &t);
  MPI_Type_commit(&t);
  return t;
}

static void test_strided_read_sieves(void) {
  MPI_Datatype t = strided_type();
  lmpio__plan p;
  make_plan(&p, LMPIO__READ, t, 0);
  TL_CHECK(!p.contiguous);
  lmpio__plan_iter it;
  lmpio__window w = {0};
  /* 10 blocks from data byte 4: the head is half a block. */
  TL_OK(lmpio__plan_start(&it, &p, 4, 84));
  TL_EQ(lmpio__plan_next(&it, 1 << 20, 1, &w), 1);
  TL_EQ(w.lo, 4);
  TL_EQ(w.hi, 10 * 64 + 4);
  TL_EQ(w.data, 80);
  MPI_Offset off[16], len[16];
  TL_EQ(pieces(&w, off, len, 16), 11);
  TL_EQ(off[0], 4);
  TL_EQ(len[0], 4);
  for (int k = 1; k < 10; k++) {
    TL_EQ(off[k], 64 * k);
    TL_EQ(len[k], 8);
  }
  TL_EQ(off[10], 640);
  TL_EQ(len[10], 4);
  /* Small holes: one read of the span. Reads take no lock. */
  TL_EQ(w.sieve, 1);
  TL_EQ(w.fill, 0);
  TL_EQ(w.lock, LMPIO__LOCK_NONE);
  TL_EQ(lmpio__plan_next(&it, 1 << 20, 1, &w), 0);
  lmpio__plan_stop(&it);
  lmpio__window_free(&w);
  lmpio__plan_free(&p);
  MPI_Type_free(&t);
}

static void test_strided_windows_bounded(void) {
  MPI_Datatype t = strided_type();
  lmpio__plan p;
  make_plan(&p, LMPIO__READ, t, 1000);
  lmpio__plan_iter it;
  lmpio__window w = {0};
  /* 10 whole blocks in windows of at most 200 file bytes: 4, 4, 2 blocks. */
  TL_OK(lmpio__plan_start(&it, &p, 0, 80));
  const MPI_Offset lo[3] = {1000, 1256, 1512}, hi[3] = {1200, 1456, 1584}, data[3] = {32, 32, 16};
  for (int k = 0; k < 3; k++) {
    TL_EQ(lmpio__plan_next(&it, 200, 1, &w), 1);
    TL_EQ(w.lo, lo[k]);
    TL_EQ(w.hi, hi[k]);
    TL_EQ(w.data, data[k]);
    TL_EQ(w.sieve, 1);
  }
  TL_EQ(lmpio__plan_next(&it, 200, 1, &w), 0);
  lmpio__plan_stop(&it);
  lmpio__window_free(&w);
  lmpio__plan_free(&p);
  MPI_Type_free(&t);
}

static void test_strided_write_locks(void) {
  MPI_Datatype t = strided_type();
  lmpio__plan p;
  make_plan(&p, LMPIO__WRITE, t, 0);
  p.lock_direct = 1; /* some rank's view has holes */
  lmpio__plan_iter it;
  lmpio__window w = {0};
  /* Sieved: the window is read first (its holes are not this rank's) and
   * held under an exclusive lock. */
  TL_OK(lmpio__plan_start(&it, &p, 0, 80));
  TL_EQ(lmpio__plan_next(&it, 1 << 20, 1, &w), 1);
  TL_EQ(w.sieve, 1);
  TL_EQ(w.fill, 1);
  TL_EQ(w.lock, LMPIO__LOCK_EXCL);
  lmpio__plan_stop(&it);
  /* romio_ds_write=disable: block by block, under a shared lock that a
   * sieve's exclusive one excludes. */
  p.hints.ds_write = LMPIO__HINT_DISABLE;
  TL_OK(lmpio__plan_start(&it, &p, 0, 80));
  TL_EQ(lmpio__plan_next(&it, 1 << 20, 1, &w), 1);
  TL_EQ(w.sieve, 0);
  TL_EQ(w.fill, 0);
  TL_EQ(w.lock, LMPIO__LOCK_SHARED);
  TL_EQ(w.data, 80);
  lmpio__plan_stop(&it);
  /* Undecided (two-phase's pieces): no sieve, no lock. */
  TL_OK(lmpio__plan_start(&it, &p, 0, 80));
  TL_EQ(lmpio__plan_next(&it, 1 << 20, 0, &w), 1);
  TL_EQ(w.sieve, 0);
  TL_EQ(w.lock, LMPIO__LOCK_NONE);
  lmpio__plan_stop(&it);
  lmpio__window_free(&w);
  lmpio__plan_free(&p);
  MPI_Type_free(&t);
}

static void test_whole_access(void) {
  MPI_Datatype t = strided_type();
  lmpio__plan p;
  make_plan(&p, LMPIO__READ, t, 0);
  /* Atomic mode's one lock: from the first data byte to the last. */
  MPI_Offset lo, hi;
  TL_OK(lmpio__plan_lock_range(&p, 4, 80, &lo, &hi));
  TL_EQ(lo, 4);
  TL_EQ(hi, 644);
  /* A mapping: not for 80 bytes unless the hint asks; never for a
   * contiguous view. */
  TL_EQ(lmpio__plan_may_map(&p, 80), 0);
  TL_EQ(lmpio__plan_may_map(&p, 1 << 20), 1);
  p.hints.map_reads = LMPIO__HINT_ENABLE;
  TL_EQ(lmpio__plan_may_map(&p, 80), 1);
  TL_EQ(lmpio__plan_needs_kept_map(&p), 0); /* (reads map their own windows) */
  lmpio__plan_free(&p);
  make_plan(&p, LMPIO__WRITE, MPI_BYTE, 0);
  TL_EQ(lmpio__plan_may_map(&p, 1 << 20), 0);
  lmpio__plan_free(&p);
  MPI_Type_free(&t);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  (void)tl_path; /* no files here */
  (void)tl_unlink;
  tl_run("plan: a contiguous view is one window of one piece, unlocked", test_contiguous);
  tl_run("plan: a strided read is one sieved window: head, strided blocks, tail", test_strided_read_sieves);
  tl_run("plan: windows end within the bound", test_strided_windows_bounded);
  tl_run("plan: a strided write sieves under an exclusive lock, or goes direct under a shared one", test_strided_write_locks);
  tl_run("plan: the whole access's lock in atomic mode, and whether it may go through a mapping", test_whole_access);
  return tl_finish();
}
