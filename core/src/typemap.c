/* MPI datatype -> flattened typemap.
 *
 * A datatype is decoded once (MPI_Type_get_envelope/contents) into a tree of
 * runs and cached on the datatype as an attribute.  A run stands for `count`
 * equally spaced elements, so a vector or subarray of 10^8 blocks costs one
 * run per nesting level, not one entry per block.  A cursor walks the data
 * segments of the tree tiled forever, which serves both the filetype of a
 * view (tiled over the file) and a memory type (tiled `count` times). */
#include "model.h"
#include "external32.h"

#include <limits.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static MPI_Count min_count(MPI_Count a, MPI_Count b) { return a < b ? a : b; }

/* a * b + c, saturated to the range of MPI_Aint: bounds that do not fit
 * then make the extent overflow, which decoding reports. */
static MPI_Aint sat(__int128 v) {
  if (v > (__int128)INT64_MAX) return INT64_MAX;
  if (v < (__int128)INT64_MIN) return INT64_MIN;
  return (MPI_Aint)v;
}


/* ---- nodes ------------------------------------------------------------ */

static lmpio__tm_node *node_new(void) {
  lmpio__tm_node *n = calloc(1, sizeof *n);
  if (n) n->refs = 1;
  return n;
}

/* Nodes of predefined types live in a table for the whole run (refs < 0):
 * retaining and releasing them does nothing. */
#define PERMANENT_REFS (-1)

static void node_retain(const lmpio__tm_node *n) {
  if (n->refs < 0) return;
  __atomic_add_fetch(&((lmpio__tm_node *)n)->refs, 1, __ATOMIC_RELAXED);
}

void lmpio__typemap_drop(const lmpio__tm_node *cn) {
  lmpio__tm_node *n = (lmpio__tm_node *)cn;
  if (__atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int i = 0; i < n->nruns; i++)
    if (n->runs[i].child) lmpio__typemap_release(n->runs[i].child);
  free(n->runs);
  free(n);
}

void lmpio__typemap_retain(const lmpio__tm_node *n) { node_retain(n); }

/* A node that is exactly one predefined item: its runs can absorb a block. */
static int is_plain_basic(const lmpio__tm_node *c) {
  return c->nruns == 1 && c->runs[0].child == NULL && c->runs[0].disp == 0 &&
         c->runs[0].count == 1 && c->lb == 0 && c->extent == c->runs[0].esize;
}

/* Appends a run of count elements of child (or of basic items of bsize bytes
 * when child is NULL).  Takes no reference from the caller: retains child. */
static int add_run(lmpio__tm_node *n, MPI_Aint disp, MPI_Count count, MPI_Aint stride,
                   const lmpio__tm_node *child, MPI_Datatype basic, MPI_Count bsize) {
  if (count <= 0) return MPI_SUCCESS;
  if (child) {
    if (child->size == 0) return MPI_SUCCESS;
    if (is_plain_basic(child)) { /* elements are single predefined items */
      basic = child->runs[0].basic;
      bsize = child->runs[0].esize;
      child = NULL;
    } else if (count == 1 && child->nruns == 1) { /* one element: inline its run */
      const lmpio__tm_run *r = &child->runs[0];
      MPI_Aint d;
      if (__builtin_add_overflow(disp, r->disp, &d)) return MPI_ERR_ARG;
      return add_run(n, d, r->count, r->stride, r->child, r->basic, r->esize);
    }
  } else if (bsize == 0) {
    return MPI_SUCCESS;
  }
  if (n->nruns % 8 == 0) {
    lmpio__tm_run *runs = realloc(n->runs, (size_t)(n->nruns + 8) * sizeof *runs);
    if (!runs) return MPI_ERR_NO_MEM;
    n->runs = runs;
  }
  lmpio__tm_run *r = &n->runs[n->nruns++];
  memset(r, 0, sizeof *r);
  r->disp = disp;
  r->count = count;
  r->stride = count == 1 ? (child ? child->size : bsize) : stride;
  r->child = child;
  r->basic = basic;
  r->esize = child ? child->size : bsize;
  if (child) node_retain(child);
  return MPI_SUCCESS;
}

/* Computes the derived fields once all runs are in.  MPI_ERR_ARG when a
 * size, displacement or bound does not fit 64 bits (a user's datatype, or a
 * representation's extents, can ask for that): nothing may wrap. */
static int node_finish(lmpio__tm_node *n) {
  MPI_Count size = 0, nitems = 0;
  MPI_Aint prev_hi = 0, prev_start = 0;
  int depth = 0, full_depth = 0, over = 0;
  n->monotone = n->nondecreasing = 1;
  n->data_lb = n->data_ub = 0;
  for (int i = 0; i < n->nruns; i++) {
    lmpio__tm_run *r = &n->runs[i];
    const lmpio__tm_node *c = r->child;
    MPI_Count bytes, items;
    r->size_before = size;
    over |= __builtin_mul_overflow(r->count, r->esize, &bytes) || __builtin_add_overflow(size, bytes, &size);
    over |= __builtin_mul_overflow(r->count, c ? c->nitems : 1, &items) ||
            __builtin_add_overflow(nitems, items, &nitems);
    if (c && c->full_depth > full_depth) full_depth = c->full_depth;
    r->lo = c ? c->data_lb : 0;
    MPI_Aint span = c ? c->data_ub - c->data_lb : (MPI_Aint)r->esize;
    if (!c) r->kind = r->stride == (MPI_Aint)r->esize ? LMPIO__RUN_FLAT : LMPIO__RUN_ELEMS;
    else if (c->contiguous) r->kind = r->stride == (MPI_Aint)c->size ? LMPIO__RUN_FLAT : LMPIO__RUN_ELEMS;
    else r->kind = LMPIO__RUN_NEST;
    if (r->kind == LMPIO__RUN_NEST && c->depth > depth) depth = c->depth;
    MPI_Aint first = 0, last = 0, hi = 0, step = 0; /* set even when an overflow cuts the chain short */
    over |= __builtin_add_overflow(r->disp, r->lo, &first) ||
            __builtin_mul_overflow((MPI_Aint)(r->count - 1), r->stride, &step) ||
            __builtin_add_overflow(first, step, &last);
    MPI_Aint lo = first < last ? first : last;
    over |= __builtin_add_overflow(first < last ? last : first, span, &hi);
    if (over) break;
    if (i == 0 || lo < n->data_lb) n->data_lb = lo;
    if (i == 0 || hi > n->data_ub) n->data_ub = hi;
    int mono = (!c || c->monotone) && (r->count == 1 || r->stride >= span);
    if (!mono || (i > 0 && lo < prev_hi)) n->monotone = 0;
    /* Nondecreasing: each element starts at or after the one before. */
    if ((c && !c->nondecreasing) || (r->count > 1 && r->stride < 0) || (i > 0 && lo < prev_start))
      n->nondecreasing = 0;
    prev_hi = hi;
    prev_start = last;
  }
  n->size = size;
  n->nitems = nitems;
  n->depth = depth + 1;
  n->full_depth = full_depth + 1;
  n->contiguous = n->monotone && size == (MPI_Count)(n->data_ub - n->data_lb);
  return over ? MPI_ERR_ARG : MPI_SUCCESS;
}

/* A node with one run of count elements of child spaced stride apart. */
static int make_repeat(const lmpio__tm_node *child, MPI_Count count, MPI_Aint stride,
                       MPI_Aint disp, lmpio__tm_node **out) {
  lmpio__tm_node *n = node_new();
  if (!n) return MPI_ERR_NO_MEM;
  int rc = add_run(n, disp, count, stride, child, MPI_DATATYPE_NULL, 0);
  if (rc == MPI_SUCCESS) rc = node_finish(n);
  n->lb = n->data_lb;
  n->extent = n->data_ub - n->data_lb;
  if (rc != MPI_SUCCESS) {
    lmpio__typemap_release(n);
    return rc;
  }
  *out = n;
  return MPI_SUCCESS;
}

/* ---- decoding ---------------------------------------------------------- */

static int decode(MPI_Datatype t, const lmpio__datarep *rep, lmpio__tm_node **out);

/* The predefined types that MPI lays out as a C struct of two items,
 * struct { T a; int b; }: b follows a at the next int-aligned offset. */
#define PAIR_B_OFFSET(T) ((MPI_Aint)((sizeof(T) + _Alignof(int) - 1) / _Alignof(int) * _Alignof(int)))

static int pair_node(MPI_Datatype t, const lmpio__datarep *rep, lmpio__tm_node *n, int *is_pair) {
  MPI_Datatype a;
  MPI_Aint boff;
  *is_pair = 1;
  if (t == MPI_FLOAT_INT) { a = MPI_FLOAT; boff = PAIR_B_OFFSET(float); }
  else if (t == MPI_DOUBLE_INT) { a = MPI_DOUBLE; boff = PAIR_B_OFFSET(double); }
  else if (t == MPI_LONG_INT) { a = MPI_LONG; boff = PAIR_B_OFFSET(long); }
  else if (t == MPI_SHORT_INT) { a = MPI_SHORT; boff = PAIR_B_OFFSET(short); }
  else if (t == MPI_LONG_DOUBLE_INT) { a = MPI_LONG_DOUBLE; boff = PAIR_B_OFFSET(long double); }
  else if (t == MPI_2INT) { a = MPI_INT; boff = sizeof(int); }
  else { *is_pair = 0; return MPI_SUCCESS; }
  MPI_Aint asize, isize = sizeof(int);
  if (rep) { /* file representations are byte aligned: the int follows */
    int rc = lmpio__typemap_extent(rep, a, &asize);
    if (rc == MPI_SUCCESS) rc = lmpio__typemap_extent(rep, MPI_INT, &isize);
    if (rc != MPI_SUCCESS) return rc;
    boff = asize;
  } else {
    int sz;
    MPI_Type_size(a, &sz);
    asize = sz;
  }
  int rc = add_run(n, 0, 1, asize, NULL, a, asize);
  if (rc == MPI_SUCCESS) rc = add_run(n, boff, 1, isize, NULL, MPI_INT, isize);
  return rc;
}

static int type_extent(MPI_Datatype t, MPI_Aint *ext) {
  MPI_Count lb, extent;
  if (MPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS) return MPI_ERR_TYPE;
  *ext = (MPI_Aint)extent;
  return MPI_SUCCESS;
}

/* Builds the dimensions of a subarray or darray from the innermost out:
 * each level repeats the level below.  lists[d] holds, for dimension d, the
 * blocks of indices this type covers as (start, length) regular pieces. */
typedef struct { MPI_Count start, len, n, step; } dim_piece; /* n blocks of len, step apart */

static int build_dims(const lmpio__tm_node *old, MPI_Aint oldext, int ndims, const int *gsizes,
                      int order, dim_piece (*pieces)[2], const int *npieces,
                      lmpio__tm_node *top) {
  const lmpio__tm_node *cur = old;
  lmpio__tm_node *held = NULL; /* our reference on cur when we made it */
  MPI_Aint stride = oldext;
  int rc = MPI_SUCCESS;
  for (int k = 0; k < ndims; k++) {
    int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
    int last = k == ndims - 1;
    lmpio__tm_node *n = last ? top : node_new();
    if (!n) { rc = MPI_ERR_NO_MEM; break; }
    for (int p = 0; p < npieces[d] && rc == MPI_SUCCESS; p++) {
      const dim_piece *pc = &pieces[d][p];
      if (pc->n <= 0 || pc->len <= 0) continue;
      if (pc->n == 1) {
        rc = add_run(n, sat((__int128)pc->start * stride), pc->len, stride, cur, MPI_DATATYPE_NULL, 0);
      } else {
        lmpio__tm_node *block;
        rc = make_repeat(cur, pc->len, stride, 0, &block);
        if (rc != MPI_SUCCESS) break;
        rc = add_run(n, sat((__int128)pc->start * stride), pc->n, sat((__int128)pc->step * stride), block,
                     MPI_DATATYPE_NULL, 0);
        lmpio__typemap_release(block);
      }
    }
    if (!last && rc == MPI_SUCCESS) rc = node_finish(n);
    if (held) lmpio__typemap_release(held);
    held = last ? NULL : n;
    cur = n;
    if (rc == MPI_SUCCESS && __builtin_mul_overflow(stride, (MPI_Aint)gsizes[d], &stride)) rc = MPI_ERR_ARG;
    if (rc != MPI_SUCCESS) break;
  }
  if (held) lmpio__typemap_release(held);
  return rc;
}

static int decode_subarray(const int *ints, const lmpio__tm_node *old, MPI_Aint oldext,
                           lmpio__tm_node *n) {
  int ndims = ints[0];
  const int *sizes = ints + 1, *subsizes = ints + 1 + ndims, *starts = ints + 1 + 2 * ndims;
  int order = ints[1 + 3 * ndims];
  dim_piece (*pieces)[2] = calloc((size_t)ndims, sizeof *pieces);
  int *np = calloc((size_t)ndims, sizeof *np);
  int rc = MPI_ERR_NO_MEM;
  if (pieces && np) {
    for (int d = 0; d < ndims; d++) {
      pieces[d][0] = (dim_piece){starts[d], subsizes[d], 1, 0};
      np[d] = 1;
    }
    rc = build_dims(old, oldext, ndims, sizes, order, pieces, np, n);
  }
  free(pieces);
  free(np);
  return rc;
}

static int decode_darray(const int *ints, const lmpio__tm_node *old, MPI_Aint oldext,
                         lmpio__tm_node *n) {
  int rank = ints[1], ndims = ints[2];
  const int *gsizes = ints + 3, *distribs = ints + 3 + ndims, *dargs = ints + 3 + 2 * ndims;
  const int *psizes = ints + 3 + 3 * ndims;
  int order = ints[3 + 4 * ndims];
  dim_piece (*pieces)[2] = calloc((size_t)ndims, sizeof *pieces);
  int *np = calloc((size_t)ndims, sizeof *np);
  int *coords = calloc((size_t)ndims, sizeof *coords);
  int rc = MPI_ERR_NO_MEM;
  if (pieces && np && coords) {
    /* The process grid is row-major whatever the array order. */
    for (int d = ndims - 1, r = rank; d >= 0; d--) {
      coords[d] = r % psizes[d];
      r /= psizes[d];
    }
    for (int d = 0; d < ndims; d++) {
      MPI_Count g = gsizes[d], p = psizes[d], c = coords[d];
      if (distribs[d] == MPI_DISTRIBUTE_NONE) {
        pieces[d][0] = (dim_piece){0, g, 1, 0};
        np[d] = 1;
      } else if (distribs[d] == MPI_DISTRIBUTE_BLOCK) {
        MPI_Count b = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : dargs[d];
        MPI_Count s = c * b, len = min_count(b, g - s);
        pieces[d][0] = (dim_piece){s, len > 0 ? len : 0, 1, 0};
        np[d] = 1;
      } else { /* cyclic(k): full blocks k long every p*k, then maybe a short one */
        MPI_Count k = dargs[d] == MPI_DISTRIBUTE_DFLT_DARG ? 1 : dargs[d];
        MPI_Count s = c * k, step = p * k;
        MPI_Count nfull = g - s >= k ? (g - s - k) / step + 1 : 0;
        pieces[d][0] = (dim_piece){s, k, nfull, step};
        MPI_Count ps = s + nfull * step;
        pieces[d][1] = (dim_piece){ps, ps < g ? min_count(k, g - ps) : 0, 1, 0};
        np[d] = 2;
      }
    }
    rc = build_dims(old, oldext, ndims, gsizes, order, pieces, np, n);
  }
  free(pieces);
  free(np);
  free(coords);
  return rc;
}

int lmpio__type_is_named(MPI_Datatype t) {
  int ni, na, nd, comb;
  if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 1;
  return comb == MPI_COMBINER_NAMED;
}

/* The bounds of a type being built: those of its data, and those its
 * children's resized bounds set.  MPI's markers are sticky: when a child
 * has them, the type's bounds are theirs alone (a struct of a resized int,
 * lb 0 and extent 16, at 0 and a double at 100 has extent 16, not 108). */
typedef struct {
  MPI_Aint lo, hi;   /* of the unmarked children */
  MPI_Aint mlo, mhi; /* of the marked ones */
  int any, marked;
} bounds;

static void widen(MPI_Aint *lo, MPI_Aint *hi, int *any, MPI_Aint l, MPI_Aint h) {
  if (!*any || l < *lo) *lo = l;
  if (!*any || h > *hi) *hi = h;
  *any = 1;
}

/* Widens b by blen elements of child kid (its extent ext in this
 * representation) from disp. */
static void block_bounds(bounds *b, MPI_Aint disp, MPI_Count blen, const lmpio__tm_node *kid, MPI_Aint ext) {
  if (blen <= 0) return;
  MPI_Aint x = sat((__int128)disp + kid->lb), y = sat((__int128)disp + kid->lb + (__int128)(blen - 1) * ext);
  MPI_Aint l = x < y ? x : y, h = sat((__int128)(x < y ? y : x) + ext);
  if (kid->marked) widen(&b->mlo, &b->mhi, &b->marked, l, h);
  else widen(&b->lo, &b->hi, &b->any, l, h);
}

/* Decodes a derived type.  With a file representation (rep), the extents of
 * the children are their file extents, so portable types are rebuilt with
 * them, and the type's own bounds (*lb, *ub) are computed the way MPI
 * defines them, without alignment padding. */
static int decode_derived(MPI_Datatype t, const lmpio__datarep *rep, int comb, int ni, int na,
                          int nd, lmpio__tm_node *n, MPI_Aint *lbp, MPI_Aint *ubp) {
  int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
  MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
  MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
  lmpio__tm_node **kids = calloc((size_t)nd + 1, sizeof *kids);
  MPI_Aint *exts = calloc((size_t)nd + 1, sizeof *exts);
  int rc = MPI_ERR_NO_MEM;
  if (!ints || !addrs || !types || !kids || !exts) goto out;
  if (MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) != MPI_SUCCESS) {
    rc = MPI_ERR_TYPE;
    goto out;
  }
  rc = MPI_SUCCESS;
  for (int i = 0; i < nd && rc == MPI_SUCCESS; i++) {
    rc = decode(types[i], rep, &kids[i]);
    if (rc == MPI_SUCCESS) {
      if (rep) exts[i] = kids[i]->extent;
      else rc = type_extent(types[i], &exts[i]);
    }
  }
  for (int i = 0; i < nd; i++)
    if (!lmpio__type_is_named(types[i])) MPI_Type_free(&types[i]);
  if (rc != MPI_SUCCESS) goto out;

  const lmpio__tm_node *old = kids[0];
  MPI_Aint ext = exts[0];
  bounds b = {0, 0, 0, 0, 0, 0};
  switch (comb) {
  case MPI_COMBINER_DUP:
    rc = add_run(n, 0, 1, ext, old, MPI_DATATYPE_NULL, 0);
    block_bounds(&b, 0, 1, old, ext);
    break;
  case MPI_COMBINER_RESIZED: /* explicit bounds, in bytes, in every representation */
    rc = add_run(n, 0, 1, ext, old, MPI_DATATYPE_NULL, 0);
    widen(&b.mlo, &b.mhi, &b.marked, addrs[0], sat((__int128)addrs[0] + addrs[1]));
    break;
  case MPI_COMBINER_CONTIGUOUS:
    rc = add_run(n, 0, ints[0], ext, old, MPI_DATATYPE_NULL, 0);
    block_bounds(&b, 0, ints[0], old, ext);
    break;
  case MPI_COMBINER_VECTOR:
  case MPI_COMBINER_HVECTOR: {
    MPI_Aint stride = comb == MPI_COMBINER_VECTOR ? sat((__int128)ints[2] * ext) : addrs[0];
    lmpio__tm_node *block;
    rc = make_repeat(old, ints[1], ext, 0, &block);
    if (rc == MPI_SUCCESS) {
      rc = add_run(n, 0, ints[0], stride, block, MPI_DATATYPE_NULL, 0);
      lmpio__typemap_release(block);
    }
    if (ints[0] > 0) {
      block_bounds(&b, 0, ints[1], old, ext);
      block_bounds(&b, sat((__int128)(ints[0] - 1) * stride), ints[1], old, ext);
    }
    break;
  }
  case MPI_COMBINER_INDEXED:
  case MPI_COMBINER_HINDEXED:
    for (int i = 0; i < ints[0] && rc == MPI_SUCCESS; i++) {
      MPI_Aint d = comb == MPI_COMBINER_INDEXED ? sat((__int128)ints[1 + ints[0] + i] * ext) : addrs[i];
      rc = add_run(n, d, ints[1 + i], ext, old, MPI_DATATYPE_NULL, 0);
      block_bounds(&b, d, ints[1 + i], old, ext);
    }
    break;
  case MPI_COMBINER_INDEXED_BLOCK:
  case MPI_COMBINER_HINDEXED_BLOCK:
    for (int i = 0; i < ints[0] && rc == MPI_SUCCESS; i++) {
      MPI_Aint d = comb == MPI_COMBINER_INDEXED_BLOCK ? sat((__int128)ints[2 + i] * ext) : addrs[i];
      rc = add_run(n, d, ints[1], ext, old, MPI_DATATYPE_NULL, 0);
      block_bounds(&b, d, ints[1], old, ext);
    }
    break;
  case MPI_COMBINER_STRUCT:
    for (int i = 0; i < ints[0] && rc == MPI_SUCCESS; i++) {
      rc = add_run(n, addrs[i], ints[1 + i], exts[i], kids[i], MPI_DATATYPE_NULL, 0);
      block_bounds(&b, addrs[i], ints[1 + i], kids[i], exts[i]);
    }
    break;
  case MPI_COMBINER_SUBARRAY:
  case MPI_COMBINER_DARRAY: { /* lb 0, extent: the whole array (the standard makes it with a resize) */
    int nd_ = comb == MPI_COMBINER_SUBARRAY ? ints[0] : ints[2];
    const int *g = comb == MPI_COMBINER_SUBARRAY ? ints + 1 : ints + 3;
    rc = comb == MPI_COMBINER_SUBARRAY ? decode_subarray(ints, old, ext, n) : decode_darray(ints, old, ext, n);
    MPI_Aint all = ext;
    for (int d = 0; d < nd_; d++) all *= g[d];
    widen(&b.mlo, &b.mhi, &b.marked, 0, all);
    break;
  }
  default:
    rc = MPI_ERR_TYPE;
  }
  n->marked = b.marked;
  *lbp = b.marked ? b.mlo : b.lo;
  *ubp = b.marked ? b.mhi : b.hi;
out:
  if (kids)
    for (int i = 0; i < nd; i++) lmpio__typemap_release(kids[i]);
  free(ints);
  free(addrs);
  free(types);
  free(kids);
  free(exts);
  return rc;
}

/* Decodes t into a new node (one reference for the caller). */
static int decode_uncached(MPI_Datatype t, const lmpio__datarep *rep, lmpio__tm_node **out) {
  int ni, na, nd, comb;
  if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return MPI_ERR_TYPE;
  lmpio__tm_node *n = node_new();
  if (!n) return MPI_ERR_NO_MEM;
  int rc = MPI_SUCCESS, named = 0;
  MPI_Aint rlb = 0, rub = 0;
  if (comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
      comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER) {
    int is_pair;
    named = 1;
    rc = pair_node(t, rep, n, &is_pair);
    if (rc == MPI_SUCCESS && !is_pair) {
      MPI_Aint size;
      if (rep) {
        rc = lmpio__typemap_extent(rep, t, &size);
      } else {
        int sz;
        MPI_Type_size(t, &sz);
        size = sz;
      }
      if (rc == MPI_SUCCESS) rc = add_run(n, 0, 1, size, NULL, t, size);
    }
  } else {
    rc = decode_derived(t, rep, comb, ni, na, nd, n, &rlb, &rub);
  }
  if (rc == MPI_SUCCESS) rc = node_finish(n);
  if (rc == MPI_SUCCESS && rep) {
    n->lb = named ? 0 : rlb;
    if (named) n->extent = (MPI_Aint)n->size;
    else if (__builtin_sub_overflow(rub, rlb, &n->extent)) rc = MPI_ERR_ARG;
  } else if (rc == MPI_SUCCESS) {
    MPI_Count lb, extent, size;
    if (MPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS || MPI_Type_size_x(t, &size) != MPI_SUCCESS)
      rc = MPI_ERR_TYPE;
    n->lb = (MPI_Aint)lb;
    n->extent = (MPI_Aint)extent;
    if (rc == MPI_SUCCESS && n->size != size) rc = MPI_ERR_INTERN; /* our flattening disagrees with MPI */
  }
  if (rc != MPI_SUCCESS) {
    lmpio__typemap_release(n);
    return rc;
  }
  *out = n;
  return MPI_SUCCESS;
}

/* ---- cache on the datatype -------------------------------------------- */

static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static int copy_attr(MPI_Datatype t, int kv, void *extra, void *in, void *out, int *flag) {
  (void)t; (void)kv; (void)extra;
  node_retain(in);
  *(void **)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_attr(MPI_Datatype t, int kv, void *val, void *extra) {
  (void)t; (void)kv; (void)extra;
  lmpio__typemap_release(val);
  return MPI_SUCCESS;
}

static void create_keyval(void) {
  MPI_Type_create_keyval(copy_attr, delete_attr, &keyval, NULL);
}

/* ---- predefined types: decoded once, kept for the whole run ------------
 *
 * An open-addressing table keyed by the handle.  Slots are only ever filled
 * (under the mutex), never emptied: a reader that finds a slot marked full
 * (acquire) sees its key and node; one that finds it empty falls back to the
 * mutex, so a lookup never takes a lock once the type has been seen. */

#define NAMED_SLOTS 512 /* a power of two, well above the predefined types */

static struct {
  MPI_Datatype type;
  lmpio__tm_node *node;
  int full;
} named_tab[NAMED_SLOTS];
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;

/* One multiplication (every data access call looks its type up here): the
 * handle's first 8 bytes (a pointer in Open MPI, an int in MPICH), the high
 * bits of the product. */
static size_t handle_hash(MPI_Datatype t) {
  uint64_t h = 0;
  memcpy(&h, &t, sizeof t < sizeof h ? sizeof t : sizeof h);
  return (size_t)((h * 0x9E3779B97F4A7C15ULL) >> 40);
}

/* The permanent node of a named type, or NULL when it is not in the table. */
static lmpio__tm_node *named_find(MPI_Datatype t) {
  for (size_t i = handle_hash(t), k = 0; k < NAMED_SLOTS; i++, k++) {
    size_t s = i & (NAMED_SLOTS - 1);
    if (!__atomic_load_n(&named_tab[s].full, __ATOMIC_ACQUIRE)) return NULL;
    if (memcmp(&named_tab[s].type, &t, sizeof t) == 0) return named_tab[s].node;
  }
  return NULL;
}

/* Decodes a named type into the table (once) and returns its node. */
static int named_get(MPI_Datatype t, lmpio__tm_node **out) {
  pthread_mutex_lock(&named_lock);
  lmpio__tm_node *n = named_find(t);
  int rc = MPI_SUCCESS;
  if (!n) {
    rc = decode_uncached(t, NULL, &n);
    if (rc == MPI_SUCCESS) {
      size_t s = handle_hash(t), k = 0;
      for (; k < NAMED_SLOTS && named_tab[s & (NAMED_SLOTS - 1)].full; s++, k++) {}
      if (k < NAMED_SLOTS) { /* otherwise (never in practice): the caller owns n */
        s &= NAMED_SLOTS - 1;
        n->refs = PERMANENT_REFS;
        named_tab[s].type = t;
        named_tab[s].node = n;
        __atomic_store_n(&named_tab[s].full, 1, __ATOMIC_RELEASE);
      }
    }
  }
  pthread_mutex_unlock(&named_lock);
  if (rc == MPI_SUCCESS) *out = n;
  return rc;
}

static int decode(MPI_Datatype t, const lmpio__datarep *rep, lmpio__tm_node **out) {
  if (rep) return decode_uncached(t, rep, out); /* laid out in a file representation */
  lmpio__tm_node *n = named_find(t);
  if (n) {
    *out = n;
    return MPI_SUCCESS;
  }
  pthread_once(&keyval_once, create_keyval);
  void *val;
  int flag = 0;
  if (keyval != MPI_KEYVAL_INVALID && MPI_Type_get_attr(t, keyval, &val, &flag) == MPI_SUCCESS && flag) {
    node_retain(val);
    *out = val;
    return MPI_SUCCESS;
  }
  if (lmpio__type_is_named(t)) return named_get(t, out);
  int rc = decode_uncached(t, NULL, out);
  if (rc == MPI_SUCCESS && keyval != MPI_KEYVAL_INVALID) {
    node_retain(*out);
    if (MPI_Type_set_attr(t, keyval, *out) != MPI_SUCCESS) lmpio__typemap_release(*out);
  }
  return rc;
}

int lmpio__typemap_get(MPI_Datatype type, const lmpio__tm_node **node, const char *call) {
  return lmpio__typemap_get_rep(type, NULL, node, call);
}

int lmpio__typemap_get_rep(MPI_Datatype type, const lmpio__datarep *rep,
                           const lmpio__tm_node **node, const char *call) {
  if (type == MPI_DATATYPE_NULL) return lmpio__err(MPI_ERR_TYPE, call, "datatype is MPI_DATATYPE_NULL");
  lmpio__tm_node *n = rep ? NULL : named_find(type); /* (most calls: a predefined type seen before) */
  if (n) {
    *node = n;
    return MPI_SUCCESS;
  }
  int rc = decode(type, rep, &n);
  if (rc == MPI_ERR_CONVERSION || rc == MPI_ERR_UNSUPPORTED_DATAREP)
    return lmpio__err_conversion(rc, call, "the data representation gives no file extent for a type");
  if (rc == MPI_ERR_NO_MEM) return lmpio__err(rc, call, "out of memory while flattening a datatype");
  if (rc == MPI_ERR_ARG)
    return lmpio__err(rc, call, "the datatype's size, extent or displacements overflow 64 bits%s",
                      rep ? " in this data representation" : "");
  if (rc != MPI_SUCCESS) return lmpio__err(rc, call, "cannot decode the datatype");
  *node = n;
  return MPI_SUCCESS;
}

/* ---- positions in monotone nodes ---------------------------------------- */

MPI_Count lmpio__typemap_bytes_before(const lmpio__tm_node *n, MPI_Aint x) {
  if (n->size == 0 || x <= n->data_lb) return 0;
  if (x >= n->data_ub) return n->size;
  int lo = 0, hi = n->nruns - 1, k = -1;
  while (lo <= hi) { /* last run whose data starts below x */
    int mid = lo + (hi - lo) / 2;
    if (n->runs[mid].disp + n->runs[mid].lo < x) { k = mid; lo = mid + 1; }
    else hi = mid - 1;
  }
  if (k < 0) return 0;
  const lmpio__tm_run *r = &n->runs[k];
  MPI_Aint rel = x - r->disp - r->lo;
  MPI_Count in;
  if (r->kind == LMPIO__RUN_FLAT) {
    in = min_count(rel, r->count * r->esize);
  } else {
    MPI_Count e = r->count == 1 ? 0 : rel / r->stride;
    if (e >= r->count) e = r->count - 1;
    MPI_Aint rel2 = rel - (MPI_Aint)e * r->stride;
    MPI_Count part = r->kind == LMPIO__RUN_NEST
                         ? lmpio__typemap_bytes_before(r->child, rel2 + r->child->data_lb)
                         : min_count(rel2, r->esize);
    in = e * r->esize + part;
  }
  return r->size_before + in;
}

/* ---- cursor -------------------------------------------------------------- */

static int cursor_alloc(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent, int depth) {
  c->root = root;
  c->extent = extent;
  c->leaves = 0;
  c->st = c->inline_st;
  if (depth > (int)(sizeof c->inline_st / sizeof c->inline_st[0])) {
    c->st = malloc(sizeof *c->st * (size_t)depth);
    if (!c->st) return MPI_ERR_NO_MEM;
  }
  return MPI_SUCCESS;
}

int lmpio__cursor_init(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent) {
  int rc = cursor_alloc(c, root, extent, root->depth);
  if (rc == MPI_SUCCESS) lmpio__cursor_seek(c, 0);
  return rc;
}

int lmpio__cursor_init_leaves(lmpio__cursor *c, const lmpio__tm_node *root, MPI_Aint extent) {
  int rc = cursor_alloc(c, root, extent, root->full_depth);
  if (rc != MPI_SUCCESS) return rc;
  c->leaves = 1;
  c->tile = 0;
  c->sp = 0;
  c->st[0] = (lmpio__frame){root, 0, 0, 0};
  c->seg_left = 0;
  return MPI_SUCCESS;
}

void lmpio__cursor_free(lmpio__cursor *c) {
  if (c->st != c->inline_st) free(c->st);
  c->st = NULL;
}

static void next_elem(lmpio__frame *f) {
  if (++f->elem >= f->node->runs[f->run].count) {
    f->run++;
    f->elem = 0;
  }
}

/* Loads the next segment into seg_off/seg_left. */
static void fill(lmpio__cursor *c) {
  for (;;) {
    lmpio__frame *f = &c->st[c->sp];
    if (f->run >= f->node->nruns) {
      if (c->sp == 0) { /* next tile */
        c->tile++;
        f->run = 0;
        f->elem = 0;
        f->base = (MPI_Aint)c->tile * c->extent;
        continue;
      }
      c->sp--;
      next_elem(&c->st[c->sp]);
      continue;
    }
    const lmpio__tm_run *r = &f->node->runs[f->run];
    if (c->leaves && !r->child) { /* predefined items: a run or one item */
      c->leaf_basic = r->basic;
      c->leaf_esize = r->esize;
      if (r->stride == (MPI_Aint)r->esize) {
        c->seg_off = f->base + r->disp;
        c->seg_left = r->count;
        f->run++;
        f->elem = 0;
        /* A type that is one contiguous run of one predefined type filling
         * its extent (MPI_DOUBLE, contiguous(n, MPI_INT)): its instances
         * follow one another, so the segment runs on through every later
         * tile (the caller bounds it by what it asks for). */
        if (c->sp == 0 && f->node->nruns == 1 && r->disp == 0 && (MPI_Aint)(r->count * r->esize) == c->extent &&
            r->esize > 0)
          c->seg_left = (LLONG_MAX - c->seg_off) / (MPI_Count)r->esize;
      } else {
        c->seg_off = f->base + r->disp + (MPI_Aint)f->elem * r->stride;
        c->seg_left = 1;
        next_elem(f);
      }
      return;
    }
    switch (c->leaves ? LMPIO__RUN_NEST : r->kind) {
    case LMPIO__RUN_FLAT:
      c->seg_off = f->base + r->disp + r->lo;
      c->seg_left = r->count * r->esize;
      f->run++;
      f->elem = 0;
      return;
    case LMPIO__RUN_ELEMS:
      c->seg_off = f->base + r->disp + (MPI_Aint)f->elem * r->stride + r->lo;
      c->seg_left = r->esize;
      next_elem(f);
      return;
    default: {
      lmpio__frame *g = &c->st[++c->sp];
      g->node = r->child;
      g->run = 0;
      g->elem = 0;
      g->base = f->base + r->disp + (MPI_Aint)f->elem * r->stride;
    }
    }
  }
}

void lmpio__cursor_seek(lmpio__cursor *c, MPI_Count pos) {
  const lmpio__tm_node *n = c->root;
  c->tile = pos / n->size;
  MPI_Count rem = pos % n->size;
  c->sp = 0;
  lmpio__frame *f = &c->st[0];
  f->node = n;
  f->base = (MPI_Aint)c->tile * c->extent;
  for (;;) {
    int lo = 0, hi = n->nruns - 1;
    while (lo < hi) { /* the run holding data byte rem */
      int mid = lo + (hi - lo + 1) / 2;
      if (n->runs[mid].size_before <= rem) lo = mid;
      else hi = mid - 1;
    }
    const lmpio__tm_run *r = &n->runs[lo];
    MPI_Count within = rem - r->size_before;
    MPI_Count e = within / r->esize, off = within % r->esize;
    f->run = lo;
    f->elem = e;
    if (r->kind == LMPIO__RUN_FLAT) {
      c->seg_off = f->base + r->disp + r->lo + (MPI_Aint)within;
      c->seg_left = r->count * r->esize - within;
      f->run++;
      f->elem = 0;
      return;
    }
    if (r->kind == LMPIO__RUN_ELEMS) {
      c->seg_off = f->base + r->disp + (MPI_Aint)e * r->stride + r->lo + (MPI_Aint)off;
      c->seg_left = r->esize - off;
      next_elem(f);
      return;
    }
    lmpio__frame *g = &c->st[++c->sp];
    g->node = n = r->child;
    g->base = f->base + r->disp + (MPI_Aint)e * r->stride;
    f = g;
    rem = off;
  }
}

MPI_Count lmpio__cursor_next(lmpio__cursor *c, MPI_Count max, MPI_Aint *off) {
  if (c->seg_left == 0) fill(c);
  MPI_Count len = min_count(c->seg_left, max);
  *off = c->seg_off;
  c->seg_off += (MPI_Aint)len;
  c->seg_left -= len;
  while (len < max) { /* coalesce segments that continue this one */
    if (c->seg_left == 0) fill(c);
    if (c->seg_off != *off + (MPI_Aint)len) break;
    MPI_Count take = min_count(c->seg_left, max - len);
    len += take;
    c->seg_off += (MPI_Aint)take;
    c->seg_left -= take;
  }
  return len;
}

MPI_Aint lmpio__cursor_peek(lmpio__cursor *c) {
  if (c->seg_left == 0) fill(c);
  return c->seg_off;
}

MPI_Count lmpio__cursor_next_leaf(lmpio__cursor *c, MPI_Count max, MPI_Aint *off,
                                  MPI_Datatype *basic, MPI_Count *esize) {
  if (c->seg_left == 0) fill(c);
  MPI_Count n = min_count(c->seg_left, max);
  *off = c->seg_off;
  *basic = c->leaf_basic;
  *esize = c->leaf_esize;
  c->seg_off += (MPI_Aint)(n * c->leaf_esize);
  c->seg_left -= n;
  return n;
}

MPI_Datatype lmpio__cursor_peek_leaf(lmpio__cursor *c) {
  if (c->seg_left == 0) fill(c);
  return c->leaf_basic;
}

/* The file extent of a predefined type in a representation: the
 * standard's table for the built-in ones, else the extent function. */
int lmpio__typemap_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext) {
  if (rep->builtin) {
    *ext = lmpio__external32_size(basic);
    return *ext > 0 ? MPI_SUCCESS : MPI_ERR_TYPE;
  }
  MPI_Aint e = 0;
  lmpio__err_clear_detail(); /* only what this call says counts */
  lmpio__err_converting(1); /* (no collective call from in there: agree.c) */
  lmpio__watch_pause();      /* (the binding's code, which its where function reads) */
  int code = rep->extent_fn(basic, &e, rep->extra);
  lmpio__watch_resume();
  lmpio__err_converting(-1);
  if (code != MPI_SUCCESS) return MPI_ERR_CONVERSION;
  /* An extent no item can have (at most 2^40 bytes) would make every size
   * computed from it wrap: the extent function is wrong. */
  if (e <= 0 || e > ((MPI_Aint)1 << 40)) {
    char name[MPI_MAX_OBJECT_NAME] = "a predefined type";
    int len = 0;
    MPI_Type_get_name(basic, name, &len);
    lmpio__err_detail("the extent function of \"%s\" answered %lld bytes for %s (1 to 2^40 are possible)", rep->name,
                      (long long)e, name);
    return MPI_ERR_CONVERSION;
  }
  *ext = e;
  return MPI_SUCCESS;
}

