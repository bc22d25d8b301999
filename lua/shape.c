/* Shapes: the dimensions and strides of arrays and slices, the address of
 * a slice's elements, and the walk over the elements of up to three arrays
 * or slices of one shape in step, row by row (what lua/arith.c,
 * lua/array_ops.c and lua/message.c run their loops on).  Plain C over the
 * buffer structure: no Lua call. */
#include "buffer.h"

#include <string.h>

int lmpio_lua_layout(const lmpio_lua_buffer *b, size_t *dims, ptrdiff_t *strides) {
  int nd = b->ndim ? b->ndim : 1;
  if (b->ndim) memcpy(dims, b->dims, (size_t)nd * sizeof *dims);
  else dims[0] = b->count;
  if (b->strided) {
    memcpy(strides, b->strides, (size_t)nd * sizeof *strides);
    return nd;
  }
  ptrdiff_t s = (ptrdiff_t)b->esize;
  if (b->forder) {
    for (int k = 0; k < nd; k++) strides[k] = s, s *= (ptrdiff_t)dims[k];
  } else {
    for (int k = nd - 1; k >= 0; k--) strides[k] = s, s *= (ptrdiff_t)dims[k];
  }
  return nd;
}

unsigned char *lmpio_lua_slice_at(const lmpio_lua_buffer *b, size_t i) {
  ptrdiff_t off = 0;
  int nd = b->ndim;
  if (b->forder) {
    for (int k = 0; k < nd; k++) {
      off += (ptrdiff_t)(i % b->dims[k]) * b->strides[k];
      i /= b->dims[k];
    }
  } else {
    for (int k = nd - 1; k >= 0; k--) {
      off += (ptrdiff_t)(i % b->dims[k]) * b->strides[k];
      i /= b->dims[k];
    }
  }
  return b->data + off;
}

int lmpio_lua_sameshape(const lmpio_lua_buffer *a, const lmpio_lua_buffer *b) {
  size_t da[LMPIO_LUA_MAXDIM], db[LMPIO_LUA_MAXDIM];
  ptrdiff_t s[LMPIO_LUA_MAXDIM];
  int na = lmpio_lua_layout(a, da, s), nb = lmpio_lua_layout(b, db, s);
  return na == nb && memcmp(da, db, (size_t)na * sizeof *da) == 0;
}

void lmpio_lua_walk_init(lmpio_lua_walk *w, lmpio_lua_buffer *const *bs, int n) {
  size_t dims[LMPIO_LUA_MAXDIM] = {0};
  ptrdiff_t st[3][LMPIO_LUA_MAXDIM];
  int nd = 1;
  w->nops = n;
  for (int o = 0; o < n; o++) {
    nd = lmpio_lua_layout(bs[o], dims, st[o]);
    w->base[o] = bs[o]->data;
  }
  /* the walk goes over rows of the fastest dimension of the first operand */
  int rev = nd > 1 && (st[0][0] < 0 ? -st[0][0] : st[0][0]) < (st[0][nd - 1] < 0 ? -st[0][nd - 1] : st[0][nd - 1]);
  int m = 0;
  for (int q = 0; q < nd; q++) {
    int k = rev ? nd - 1 - q : q;
    if (dims[k] == 1 && nd > 1) continue; /* moves nothing */
    w->dims[m] = dims[k];
    for (int o = 0; o < n; o++) w->st[o][m] = st[o][k];
    m++;
  }
  if (m == 0) {
    w->dims[0] = 1;
    for (int o = 0; o < n; o++) w->st[o][0] = (ptrdiff_t)bs[o]->esize;
    m = 1;
  }
  /* a dimension that continues the next one in every operand merges with it */
  int out = 0;
  for (int k = 1; k < m; k++) {
    int merge = 1;
    for (int o = 0; o < n && merge; o++) merge = w->st[o][out] == w->st[o][k] * (ptrdiff_t)w->dims[k];
    if (merge) {
      w->dims[out] *= w->dims[k];
      for (int o = 0; o < n; o++) w->st[o][out] = w->st[o][k];
    } else {
      out++;
      w->dims[out] = w->dims[k];
      for (int o = 0; o < n; o++) w->st[o][out] = w->st[o][k];
    }
  }
  w->nd = out + 1;
}

void lmpio_lua_walk_run(const lmpio_lua_walk *w, lmpio_lua_row row, void *ctx) {
  int nd = w->nd;
  for (int k = 0; k < nd; k++)
    if (w->dims[k] == 0) return;
  size_t idx[LMPIO_LUA_MAXDIM] = {0};
  unsigned char *p[3] = {NULL, NULL, NULL};
  ptrdiff_t inner[3] = {0, 0, 0};
  for (int o = 0; o < w->nops; o++) inner[o] = w->st[o][nd - 1];
  for (;;) {
    for (int o = 0; o < w->nops; o++) {
      ptrdiff_t off = 0;
      for (int k = 0; k < nd - 1; k++) off += (ptrdiff_t)idx[k] * w->st[o][k];
      p[o] = w->base[o] + off;
    }
    row(ctx, p, inner, w->dims[nd - 1]);
    int k = nd - 2;
    while (k >= 0 && ++idx[k] == w->dims[k]) idx[k--] = 0;
    if (k < 0) return;
  }
}

static void k_copy(void *vc, unsigned char *const *p, const ptrdiff_t *st, size_t n) {
  size_t es = *(const size_t *)vc;
  if (st[0] == (ptrdiff_t)es && st[1] == (ptrdiff_t)es) {
    memmove(p[0], p[1], n * es);
    return;
  }
  for (size_t i = 0; i < n; i++) memmove(p[0] + (ptrdiff_t)i * st[0], p[1] + (ptrdiff_t)i * st[1], es);
}

void lmpio_lua_copy(lmpio_lua_buffer *dst, lmpio_lua_buffer *src) {
  size_t es = dst->esize;
  lmpio_lua_buffer *ops[2] = {dst, src};
  lmpio_lua_walk w;
  lmpio_lua_walk_init(&w, ops, 2);
  lmpio_lua_walk_run(&w, k_copy, &es);
}

