/* Differential test: the same seeded random sequences of views (random nested
 * datatypes), memory types and accesses (explicit offsets, individual
 * pointers, independent and collective, seeks, sizes) run through the MPI
 * library's own MPI_File_* (the oracle: Open MPI's ROMIO, `--mca io
 * romio321`) and through lmpio_file_*, on two files pre-filled with the same
 * pattern; every status, position, return class and read buffer is compared
 * after each operation, and the whole files at the end of each case.
 *
 * Environment:
 *   LMPIO_DIFF_SEED=S     seed (default: from the clock; always printed)
 *   LMPIO_DIFF_CASES=N    number of cases (default 500)
 *   LMPIO_DIFF_CASE=K     run only case K (replay of a failure)
 *   LMPIO_DIFF_VERBOSE=1  print every case's description and operations
 *
 * Layouts, so that the final file is deterministic: "disjoint" (each rank's
 * filetype is the same base type shifted by rank * extent and resized to
 * nprocs * extent), "darray" (each rank's filetype is its block of a
 * distributed array) and "same" (one filetype on every rank, and each rank
 * writes only its own range of etype offsets). */
#include "testlib.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* ---------- random numbers (splitmix64), one stream per (case, rank) ---------- */

typedef struct { uint64_t s; } rng;

static uint64_t rnext(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int rint_(rng *r, int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1));
}

static int chance(rng *r, int pct) { return rint_(r, 0, 99) < pct; }

static rng rng_for(unsigned long long seed, int kase, int stream) {
  rng r = {seed * 0x2545F4914F6CDD1DULL + (uint64_t)kase * 0x9E3779B97F4A7C15ULL +
           (uint64_t)(stream + 1) * 0xD1B54A32D192ED03ULL};
  rnext(&r);
  return r;
}

/* ---------- strings ---------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) s = NULL;
  va_end(ap);
  if (!s) abort();
  return s;
}

/* ---------- case state ---------- */

static unsigned long long g_seed;
static int g_case, g_op;
static int g_verbose;
/* Zero-length blocks (and zero-count contiguous types) in the random types.
 * Off unless LMPIO_DIFF_ZERO_BLOCKS=1: Open MPI 4.1 disagrees with itself
 * on types with empty parts (MPI_Type_get_extent of struct({1,2},{3,19},
 * {MPI_DOUBLE, hvector(2,3,11,struct(0*MPI_DOUBLE@1))}) is 40, but MPI_Pack
 * steps by 8), so the reference typemap is not trustworthy for them. */
static int g_zero;
/* Negative vector strides in memory types.  Off unless
 * LMPIO_DIFF_NEG_STRIDE=1: Open MPI 4.1's own datatype engine (MPI_Pack,
 * MPI_Unpack, and so ROMIO) moves vector(2,1,-1,MPI_BYTE) as if its bytes
 * were at 0 and +1 instead of 0 and -1, so neither oracle can judge them. */
static int g_negstride;
/* Memory types with a negative lower bound (the buffer address is then
 * inside the data).  Off unless LMPIO_DIFF_NEG_LB=1: ROMIO 3.2.1 writes
 * wrong data from them and its ADIOI_GEN_ReadStrided copies outside the
 * buffer (segmentation fault); such types are shifted to lower bound 0. */
static int g_neglb;
/* Filetypes whose blocks touch (a vector with stride == blocklength, an
 * indexed type with no gap, a subarray with whole rows) or that nest
 * resized types (ROMIO flattens their bounds into zero-length blocks).  Off
 * unless LMPIO_DIFF_ADJACENT=1: ROMIO 3.2.1's ADIOI_Optimize_flattened
 * merges such blocks and then frees a pointer into the middle of an
 * allocation ("free(): invalid pointer", abort) at MPI_File_set_view. */
static int g_adjacent;
static char *g_desc;     /* this rank's description of the case */
static char *g_oplog;    /* this rank's operations so far */
static int g_desc_shown;

/* Every datatype made is freed only at the end: ROMIO 3.2.1 caches the
 * flattened form of a datatype by its handle and does not forget it when the
 * type is freed, so a new type that reuses the handle gets the old type's
 * layout (wrong data, crashes in ADIOI_GEN_ReadStrided). */
static MPI_Datatype *g_made;
static int g_nmade, g_capmade;

static MPI_Datatype keep(MPI_Datatype t) {
  if (g_nmade == g_capmade) {
    g_capmade = g_capmade ? 2 * g_capmade : 1024;
    g_made = realloc(g_made, sizeof *g_made * (size_t)g_capmade);
  }
  g_made[g_nmade++] = t;
  return t;
}

static void free_made(void) {
  for (int i = 0; i < g_nmade; i++) MPI_Type_free(&g_made[i]);
  g_nmade = 0;
}

static void oplog(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void oplog(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) abort();
  va_end(ap);
  char *n = fmt("%s  op %d: %s\n", g_oplog ? g_oplog : "", g_op, s);
  free(g_oplog);
  free(s);
  g_oplog = n;
}

static void fail(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) abort();
  va_end(ap);
  tl_case_failed = 1;
  if (!g_desc_shown) {
    fprintf(stderr, "[rank %d] FAILED: LMPIO_DIFF_SEED=%llu LMPIO_DIFF_CASE=%d (%d ranks)\n%s%s", tl_rank,
            g_seed, g_case, tl_size, g_desc ? g_desc : "", g_oplog ? g_oplog : "");
    g_desc_shown = 1;
  }
  fprintf(stderr, "[rank %d] seed %llu case %d op %d: %s\n", tl_rank, g_seed, g_case, g_op, s);
  free(s);
}

/* ---------- random datatypes ---------- */

typedef struct {
  rng *r;
  int file;            /* filetype: monotone typemap, holes and bounds in whole units */
  MPI_Aint unit;       /* etype extent for filetypes, 1 for memory types */
  MPI_Datatype leaf;
  const char *leafname;
  int dar_rank;        /* rank argument of darrays */
  MPI_Aint size_cap, ext_cap;
} gen_t;

static void extents(MPI_Datatype t, MPI_Aint *lb, MPI_Aint *ext, MPI_Aint *tlb, MPI_Aint *text,
                    MPI_Count *size) {
  MPI_Aint a, b;
  if (!lb) lb = &a;
  if (!ext) ext = &b;
  MPI_Type_get_extent(t, lb, ext);
  MPI_Aint c, d;
  MPI_Type_get_true_extent(t, tlb ? tlb : &c, text ? text : &d);
  if (size) MPI_Type_size_x(t, size);
}

/* Shuffles n (blocklength, displacement) pairs together (memory types only). */
static void shuffle(rng *r, int n, int *bl, MPI_Aint *d) {
  for (int i = n - 1; i > 0; i--) {
    int j = rint_(r, 0, i);
    int tb = bl[i]; bl[i] = bl[j]; bl[j] = tb;
    MPI_Aint td = d[i]; d[i] = d[j]; d[j] = td;
  }
}

/* A type with lower bound 0 and the same data (for subarray/darray children). */
static MPI_Datatype norm0(MPI_Datatype c, char **desc) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(c, &lb, &ext);
  if (lb == 0) return c;
  MPI_Datatype t;
  if (lb > 0) {
    MPI_Type_create_resized(c, 0, lb + ext, &t);
    char *d = fmt("resized(%s,lb=0,ext=%ld)", *desc, (long)(lb + ext));
    free(*desc);
    *desc = d;
  } else {
    MPI_Aint disp = -lb;
    MPI_Type_create_hindexed_block(1, 1, &disp, c, &t);
    char *d = fmt("hindexed_block(1,1,{%ld},%s)", (long)disp, *desc);
    free(*desc);
    *desc = d;
  }
  return keep(t);
}

static MPI_Datatype gen(gen_t *g, int depth, char **desc);

/* Generated displacements within blocks: a gap in units (file) or bytes (memory). */
static MPI_Aint gap(gen_t *g, int maxunits) {
  return g->file ? (MPI_Aint)rint_(g->r, g_adjacent ? 0 : 1, maxunits) * g->unit : (MPI_Aint)rint_(g->r, 0, maxunits * 4);
}

static MPI_Datatype gen_darray(gen_t *g, MPI_Datatype child, char *cd, char **desc) {
  rng *r = g->r;
  int P = tl_size, nd = rint_(r, 1, chance(r, 20) ? 3 : 2);
  int gs[3], dist[3], darg[3], ps[3];
  for (int i = 0; i < nd; i++) {
    gs[i] = rint_(r, 1, 6);
    int k = rint_(r, 0, 2);
    dist[i] = k == 0 ? MPI_DISTRIBUTE_BLOCK : k == 1 ? MPI_DISTRIBUTE_CYCLIC : MPI_DISTRIBUTE_NONE;
    ps[i] = 1;
  }
  int rem = P;
  while (rem > 1) {
    int f = 2;
    while (rem % f) f++;
    int cand[3], nc = 0;
    for (int i = 0; i < nd; i++)
      if (dist[i] != MPI_DISTRIBUTE_NONE) cand[nc++] = i;
    if (!nc) { dist[0] = MPI_DISTRIBUTE_BLOCK; cand[nc++] = 0; }
    ps[cand[rint_(r, 0, nc - 1)]] *= f;
    rem /= f;
  }
  for (int i = 0; i < nd; i++) {
    darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
    if (dist[i] == MPI_DISTRIBUTE_BLOCK && chance(r, 30)) darg[i] = (gs[i] + ps[i] - 1) / ps[i] + rint_(r, 0, 1);
    if (dist[i] == MPI_DISTRIBUTE_CYCLIC && chance(r, 50)) darg[i] = rint_(r, 1, 3);
  }
  int order = chance(r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
  MPI_Aint clb, cext;
  MPI_Type_get_extent(child, &clb, &cext);
  if (g->file && !g_adjacent && clb != 0) { /* no resized inside filetypes: see g_adjacent */
    child = g->leaf;
    free(cd);
    cd = fmt("%s", g->leafname);
  }
  child = norm0(child, &cd);
  MPI_Datatype t = MPI_DATATYPE_NULL;
  int drc = MPI_Type_create_darray(P, g->dar_rank, nd, gs, dist, darg, ps, order, child, &t) != MPI_SUCCESS;
  if (g->file) { /* every rank must build the same kind of filetype */
    int any = drc;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !drc) MPI_Type_free(&t);
    drc = any;
  }
  if (drc) {
    *desc = cd;
    return child;
  }
  char *s = fmt("darray(size=%d,rank=%d,%s,gsizes={", P, g->dar_rank, order == MPI_ORDER_C ? "C" : "F"), *n;
  for (int i = 0; i < nd; i++) {
    const char *dn = dist[i] == MPI_DISTRIBUTE_BLOCK ? "B" : dist[i] == MPI_DISTRIBUTE_CYCLIC ? "C" : "N";
    n = fmt("%s%s%d:%s%d/%d", s, i ? "," : "", gs[i], dn, darg[i] == MPI_DISTRIBUTE_DFLT_DARG ? -1 : darg[i], ps[i]);
    free(s);
    s = n;
  }
  *desc = fmt("%s},%s)", s, cd);
  free(s);
  free(cd);
  return keep(t);
}

static MPI_Datatype gen(gen_t *g, int depth, char **desc) {
  rng *r = g->r;
  if (depth <= 0 || chance(r, 15)) {
    *desc = fmt("%s", g->leafname);
    return g->leaf;
  }
  int kind = rint_(r, 0, 12);
  char *cd = NULL;
  MPI_Datatype c = gen(g, depth - 1, &cd), t = MPI_DATATYPE_NULL, c0 = c;
  if (g->file && !g_adjacent) { /* ROMIO flattens bounds into zero-length blocks: see g_adjacent */
    MPI_Aint l0, e0;
    MPI_Type_get_extent(c, &l0, &e0);
    if (kind == 10 || ((kind == 8 || kind == 9) && l0 != 0)) kind = 11;
  }
  char *cd0 = fmt("%s", cd); /* the child as it was, in case the result is rejected */
  MPI_Aint lb, ext;
  MPI_Type_get_extent(c, &lb, &ext);
  int bl[4];
  MPI_Aint d[4];
  int id[4];
  char *s = NULL;
  switch (kind) {
  case 0: { /* contiguous */
    int n = g_zero && chance(r, 8) ? 0 : rint_(r, 1, 3);
    MPI_Type_contiguous(n, c, &t);
    s = fmt("contig(%d,%s)", n, cd);
    break;
  }
  case 1: { /* vector */
    int n = rint_(r, 1, 3), b = rint_(r, g_zero && chance(r, 10) ? 0 : 1, 3), st = b + rint_(r, g->file && !g_adjacent ? 1 : 0, 2);
    if (st == 0) st = 1;
    if (!g->file && g_negstride && chance(r, 30)) st = -st;
    MPI_Type_vector(n, b, st, c, &t);
    s = fmt("vector(%d,%d,%d,%s)", n, b, st, cd);
    break;
  }
  case 2: { /* hvector */
    int n = rint_(r, 1, 3), b = rint_(r, g_zero && chance(r, 10) ? 0 : 1, 3);
    MPI_Aint st = b * ext + gap(g, 3);
    if (st == 0) st = g->unit;
    if (!g->file && g_negstride && chance(r, 30)) st = -st;
    MPI_Type_create_hvector(n, b, st, c, &t);
    s = fmt("hvector(%d,%d,%ld,%s)", n, b, (long)st, cd);
    break;
  }
  case 3:   /* indexed */
  case 4: { /* hindexed */
    int n = rint_(r, 1, 4);
    MPI_Aint pos = 0;
    for (int i = 0; i < n; i++) {
      bl[i] = rint_(r, g_zero && chance(r, 20) ? 0 : 1, 3);
      if (kind == 3) pos += rint_(r, g->file && !g_adjacent ? 1 : 0, 2) * ext; else pos += gap(g, 3);
      d[i] = pos;
      pos += bl[i] * ext;
    }
    if (!g->file) {
      if (chance(r, 50)) shuffle(r, n, bl, d);
      if (g_neglb && chance(r, 30)) { MPI_Aint sh = kind == 3 ? ext * rint_(r, 1, 3) : rint_(r, 1, 24); for (int i = 0; i < n; i++) d[i] -= sh; }
    }
    s = fmt("%s(", kind == 3 ? "indexed" : "hindexed");
    for (int i = 0; i < n; i++) {
      char *x = fmt("%s%s%d@%ld", s, i ? "," : "", bl[i], kind == 3 ? (long)(ext ? d[i] / ext : 0) : (long)d[i]);
      free(s);
      s = x;
    }
    if (kind == 3) {
      for (int i = 0; i < n; i++) id[i] = (int)(ext ? d[i] / ext : 0);
      MPI_Type_indexed(n, bl, id, c, &t);
    } else {
      MPI_Type_create_hindexed(n, bl, d, c, &t);
    }
    char *x = fmt("%s;%s)", s, cd);
    free(s);
    s = x;
    break;
  }
  case 5:   /* indexed_block */
  case 6: { /* hindexed_block */
    int n = rint_(r, 1, 4), b = rint_(r, g_zero && chance(r, 10) ? 0 : 1, 3);
    MPI_Aint pos = 0;
    for (int i = 0; i < n; i++) {
      bl[i] = b;
      if (kind == 5) pos += rint_(r, g->file && !g_adjacent ? 1 : 0, 2) * ext; else pos += gap(g, 3);
      d[i] = pos;
      pos += b * ext;
    }
    if (!g->file && chance(r, 50)) shuffle(r, n, bl, d);
    s = fmt("%s(%d,", kind == 5 ? "indexed_block" : "hindexed_block", b);
    for (int i = 0; i < n; i++) {
      char *x = fmt("%s%s%ld", s, i ? "," : "", kind == 5 ? (long)(ext ? d[i] / ext : 0) : (long)d[i]);
      free(s);
      s = x;
    }
    if (kind == 5) {
      for (int i = 0; i < n; i++) id[i] = (int)(ext ? d[i] / ext : 0);
      MPI_Type_create_indexed_block(n, b, id, c, &t);
    } else {
      MPI_Type_create_hindexed_block(n, b, d, c, &t);
    }
    char *x = fmt("%s;%s)", s, cd);
    free(s);
    s = x;
    break;
  }
  case 7: { /* struct of this child and one or two more */
    int n = rint_(r, 1, 3);
    MPI_Datatype ts[3];
    char *ds[3];
    ts[0] = c;
    ds[0] = cd;
    cd = NULL;
    for (int i = 1; i < n; i++) ts[i] = gen(g, depth - 1, &ds[i]);
    MPI_Aint pos = 0;
    for (int i = 0; i < n; i++) {
      MPI_Aint l, e;
      MPI_Type_get_extent(ts[i], &l, &e);
      bl[i] = rint_(r, g_zero && chance(r, 15) ? 0 : 1, 2);
      pos += gap(g, 2);
      d[i] = pos - l;
      pos += bl[i] * e;
    }
    if (!g->file && chance(r, 40)) {
      for (int i = n - 1; i > 0; i--) {
        int j = rint_(r, 0, i);
        MPI_Datatype tt = ts[i]; ts[i] = ts[j]; ts[j] = tt;
        char *td = ds[i]; ds[i] = ds[j]; ds[j] = td;
        int tb = bl[i]; bl[i] = bl[j]; bl[j] = tb;
        MPI_Aint tdd = d[i]; d[i] = d[j]; d[j] = tdd;
      }
    }
    MPI_Type_create_struct(n, bl, d, ts, &t);
    s = fmt("struct(");
    for (int i = 0; i < n; i++) {
      char *x = fmt("%s%s%d*%s@%ld", s, i ? "," : "", bl[i], ds[i], (long)d[i]);
      free(s);
      free(ds[i]);
      s = x;
    }
    char *x = fmt("%s)", s);
    free(s);
    s = x;
    break;
  }
  case 8: { /* subarray */
    c = norm0(c, &cd);
    MPI_Type_get_extent(c, &lb, &ext);
    int nd = rint_(r, 1, 3), sz[3], sub[3], st[3];
    int order = chance(r, 50) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    s = fmt("subarray(%s,", order == MPI_ORDER_C ? "C" : "F");
    for (int i = 0; i < nd; i++) {
      sz[i] = rint_(r, 1, 4);
      sub[i] = rint_(r, 1, sz[i]);
      int inner = order == MPI_ORDER_C ? i == nd - 1 : i == 0;
      if (g->file && !g_adjacent && inner && sz[i] > 1 && sub[i] == sz[i]) sub[i]--;
      if (g->file && !g_adjacent && inner && sz[i] == 1) sz[i] = 2;
      st[i] = rint_(r, 0, sz[i] - sub[i]);
      char *x = fmt("%s%s%d:%d+%d", s, i ? "," : "", sz[i], st[i], sub[i]);
      free(s);
      s = x;
    }
    MPI_Type_create_subarray(nd, sz, sub, st, order, c, &t);
    char *x = fmt("%s;%s)", s, cd);
    free(s);
    s = x;
    break;
  }
  case 9: /* darray */
    t = gen_darray(g, c, cd, &s);
    cd = NULL;
    if (t == c || t == MPI_DATATYPE_NULL) { free(cd0); *desc = s; return c; }
    goto check; /* already kept */
  case 10: { /* resized: larger bounds on both sides */
    MPI_Aint a = g->file ? rint_(r, 0, 2) * g->unit : g_neglb ? rint_(r, 0, 9) : 0;
    MPI_Aint b = g->file ? rint_(r, 0, 2) * g->unit : rint_(r, 0, 9);
    MPI_Type_create_resized(c, lb - a, ext + a + b, &t);
    s = fmt("resized(%s,lb=%ld,ext=%ld)", cd, (long)(lb - a), (long)(ext + a + b));
    break;
  }
  case 11: /* dup */
    MPI_Type_dup(c, &t);
    s = fmt("dup(%s)", cd);
    break;
  default: { /* struct mixing the child with the leaf */
    MPI_Datatype ts[2] = {g->leaf, c};
    MPI_Aint l2, e2;
    MPI_Type_get_extent(g->leaf, &l2, &e2);
    bl[0] = rint_(r, g_zero ? 0 : 1, 2);
    d[0] = gap(g, 2);
    bl[1] = rint_(r, 1, 2);
    d[1] = d[0] + bl[0] * e2 + gap(g, 2) - lb;
    MPI_Type_create_struct(2, bl, d, ts, &t);
    s = fmt("struct(%d*%s@%ld,%d*%s@%ld)", bl[0], g->leafname, (long)d[0], bl[1], cd, (long)d[1]);
    break;
  }
  }
  free(cd);
  keep(t);
check:;
  MPI_Aint tlb, text, nlb, next;
  MPI_Count size;
  extents(t, &nlb, &next, &tlb, &text, &size);
  int bad = size > g->size_cap || next > g->ext_cap || text > g->ext_cap || next < 0 || (!g_zero && size == 0);
  if (size > 0 && (tlb < nlb || tlb + text > nlb + next)) bad = 1; /* data outside the extent */
  if (g->file && (nlb % g->unit || next % g->unit)) bad = 1;
  if (g->file) /* darrays differ by rank: every rank must make the same choice */
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (bad) { /* too big or not what we need: give the child back */
    free(s);
    *desc = cd0;
    return c0;
  }
  free(cd0);
  *desc = s;
  return t;
}

/* ---------- etypes ---------- */

typedef struct {
  const char *name;
  MPI_Datatype etype;  /* for the view */
  MPI_Datatype basic;  /* leaves of memory types */
  const char *basicname;
} etype_t;

static etype_t pick_etype(rng *r) {
  static MPI_Datatype int2 = MPI_DATATYPE_NULL, short3 = MPI_DATATYPE_NULL;
  if (int2 == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(2, MPI_INT, &int2);
    MPI_Type_commit(&int2);
    MPI_Type_contiguous(3, MPI_SHORT, &short3);
    MPI_Type_commit(&short3);
  }
  switch (rint_(r, 0, 6)) {
  case 0: return (etype_t){"MPI_BYTE", MPI_BYTE, MPI_BYTE, "byte"};
  case 1: return (etype_t){"MPI_CHAR", MPI_CHAR, MPI_CHAR, "char"};
  case 2: return (etype_t){"MPI_SHORT", MPI_SHORT, MPI_SHORT, "short"};
  case 3: return (etype_t){"MPI_INT", MPI_INT, MPI_INT, "int"};
  case 4: return (etype_t){"MPI_DOUBLE", MPI_DOUBLE, MPI_DOUBLE, "double"};
  case 5: return (etype_t){"contig(2,MPI_INT)", int2, MPI_INT, "int"};
  default: return (etype_t){"contig(3,MPI_SHORT)", short3, MPI_SHORT, "short"};
  }
}

/* ---------- the case ---------- */

enum { LAYOUT_DISJOINT, LAYOUT_DARRAY, LAYOUT_SAME };
static const char *layout_name[] = {"disjoint", "darray", "same"};

enum {
  OP_WRITE_AT, OP_WRITE_AT_ALL, OP_WRITE, OP_WRITE_ALL, OP_READ_AT, OP_READ_AT_ALL, OP_READ,
  OP_READ_ALL, OP_SEEK, OP_BYTE_OFFSET, OP_GET_SIZE, OP_SET_SIZE, OP_SYNC, OP_SET_VIEW, OP_INVALID,
  NOPS
};
static const char *op_name[] = {"write_at", "write_at_all", "write", "write_all", "read_at",
                                "read_at_all", "read", "read_all", "seek", "get_byte_offset",
                                "get_size", "set_size", "sync", "set_view", "invalid"};
static const int op_weight[] = {10, 10, 7, 7, 8, 8, 6, 6, 5, 2, 2, 2, 1, 2, 3};

typedef struct {
  MPI_Datatype t;
  char *desc;
  MPI_Count size;
  MPI_Aint lb, ext, tlb, text;
} memtype_t;

typedef struct casest_ {
  etype_t et;
  MPI_Aint esz, bsize;  /* sizes of the etype and of its basic type */
  MPI_Datatype ftype;
  MPI_Datatype oftype;  /* the oracle's filetype: the same typemap, flattened */
  MPI_Aint olb;         /* ... shifted down by this, added to its displacement */
  char *fdesc;
  MPI_Count fsize;
  MPI_Aint fext;
  MPI_Offset disp;
  int layout;
  MPI_Offset region;  /* "same" layout: etypes per rank's range */
  memtype_t mem[3];
  MPI_File mf;
  lmpio_file lf;
  MPI_Info info;
  int mfd, lfd;       /* both files, for pread */
  char *wstream;      /* the data of this rank's last write, packed */
  MPI_Offset wstart, wn; /* its etype offset and length in etypes */
  MPI_Offset *tmap;   /* byte displacement of each data byte of the filetype, in order */
} casest;

/* The typemap's byte displacements, in typemap order, as Open MPI's own
 * MPI_Pack sees them (independent of both MPI-IO implementations): packs a
 * buffer whose bytes hold their own displacement, one byte of it per pass. */
static MPI_Offset *typemap_offsets(MPI_Datatype t) {
  MPI_Count size;
  MPI_Aint tlb, text;
  extents(t, NULL, NULL, &tlb, &text, &size);
  MPI_Offset *o = calloc((size_t)size + 1, sizeof *o);
  unsigned char *src = malloc((size_t)text + 1), *out = malloc((size_t)size + 1);
  for (int pass = 0; pass < 3; pass++) {
    for (MPI_Aint i = 0; i < text; i++) src[i] = (unsigned char)((tlb + i) >> (8 * pass));
    int pos = 0;
    MPI_Pack(src - tlb, 1, t, out, (int)size, &pos, MPI_COMM_SELF);
    for (MPI_Count i = 0; i < size; i++) o[i] |= (MPI_Offset)out[i] << (8 * pass);
  }
  free(src);
  free(out);
  return o;
}

/* The byte in the file of the view's etype at offset k. */
static MPI_Offset model_byte_offset(const struct casest_ *cs, MPI_Offset k);

/* A buffer for count items of a memory type: base pointer to pass, and the
 * whole allocation to compare. */
typedef struct { char *alloc, *base; size_t len; } membuf;

/* Guard bytes on each side of a buffer: they must come back untouched, and
 * they keep ROMIO's reads outside the data (ADIOI_Fill_send_buffer with
 * some resized memory types) inside the allocation. */
#define MEMBUF_GUARD 65536

static membuf membuf_new(const memtype_t *m, int count, rng *fill, int pattern) {
  MPI_Aint lo = 0, hi = 0;
  if (count > 0 && m->size > 0) {
    MPI_Aint a = m->tlb, b = (MPI_Aint)(count - 1) * m->ext + m->tlb;
    lo = a < b ? a : b;
    hi = (a > b ? a : b) + m->text;
  }
  membuf mb;
  mb.len = (size_t)(hi - lo) + 2 * MEMBUF_GUARD;
  mb.alloc = malloc(mb.len);
  for (size_t i = 0; i < mb.len; i++)
    mb.alloc[i] = fill ? (char)rnext(fill) : (char)(pattern + (int)(i * 7));
  mb.base = mb.alloc + MEMBUF_GUARD - lo;
  return mb;
}

static void pick_info(rng *r, MPI_Info *info, char **desc) {
  MPI_Info_create(info);
  static const char *sizes[] = {"64", "256", "1024", "4096"};
  static const char *modes[] = {"enable", "disable", "automatic"};
  char *s = fmt("info{");
  const char *keys[] = {"ind_rd_buffer_size", "ind_wr_buffer_size", "cb_buffer_size"};
  for (int i = 0; i < 3; i++)
    if (chance(r, 50)) {
      const char *v = sizes[rint_(r, 0, 3)];
      MPI_Info_set(*info, keys[i], v);
      char *x = fmt("%s %s=%s", s, keys[i], v);
      free(s);
      s = x;
    }
  const char *mkeys[] = {"romio_ds_read", "romio_ds_write", "romio_cb_read", "romio_cb_write"};
  for (int i = 0; i < 4; i++)
    if (chance(r, 30)) {
      const char *v = modes[rint_(r, 0, 2)];
      MPI_Info_set(*info, mkeys[i], v);
      char *x = fmt("%s %s=%s", s, mkeys[i], v);
      free(s);
      s = x;
    }
  const char *lkeys[] = {"lmpio_map_reads", "lmpio_map_writes"}; /* (lmpio's own: ROMIO ignores them) */
  for (int i = 0; i < 2; i++)
    if (chance(r, 30)) {
      const char *v = modes[rint_(r, 0, 2)];
      MPI_Info_set(*info, lkeys[i], v);
      char *x = fmt("%s %s=%s", s, lkeys[i], v);
      free(s);
      s = x;
    }
  *desc = fmt("%s }", s);
  free(s);
}

/* Builds the view's filetype for this rank from the shared stream. */
static void make_filetype(casest *cs, rng *sh) {
  for (int attempt = 0;; attempt++) {
    cs->layout = rint_(sh, 0, 2);
    gen_t g = {sh, 1, cs->esz, cs->et.etype, cs->et.name, 0, 1024, 4096};
    g.dar_rank = cs->layout == LAYOUT_SAME ? rint_(sh, 0, tl_size - 1) : tl_rank;
    char *bd = NULL;
    MPI_Datatype b;
    if (cs->layout == LAYOUT_DARRAY) {
      char *cd;
      MPI_Datatype c = gen(&g, rint_(sh, 0, 2), &cd);
      b = gen_darray(&g, c, cd, &bd);
    } else {
      b = gen(&g, rint_(sh, 0, 3), &bd);
    }
    MPI_Aint lb, ext;
    MPI_Type_get_extent(b, &lb, &ext);
    if (lb < 0) {
      MPI_Aint disp = -lb;
      MPI_Datatype t;
      MPI_Type_create_hindexed_block(1, 1, &disp, b, &t);
      char *x = fmt("hindexed_block(1,1,{%ld},%s)", (long)disp, bd);
      free(bd);
      bd = x;
      b = keep(t);
      MPI_Type_get_extent(b, &lb, &ext);
    }
    if (cs->layout == LAYOUT_DISJOINT && tl_size > 1) {
      MPI_Aint disp = (MPI_Aint)tl_rank * ext;
      MPI_Datatype h, t;
      MPI_Type_create_hindexed_block(1, 1, &disp, b, &h);
      keep(h);
      MPI_Type_create_resized(h, lb, ext * tl_size, &t);
      char *x = fmt("resized(hindexed_block(1,1,{%ld},%s),lb=%ld,ext=%ld)", (long)disp, bd, (long)lb,
                    (long)(ext * tl_size));
      free(bd);
      bd = x;
      b = keep(t);
    }
    if (b == cs->et.etype) { /* keep the handle separate from the etype's */
      MPI_Datatype t;
      MPI_Type_dup(b, &t);
      b = keep(t);
    }
    MPI_Type_commit(&b);
    MPI_Count size;
    MPI_Aint tlb, text;
    extents(b, &lb, &ext, &tlb, &text, &size);
    int bad = size <= 0 || ext / (size > 0 ? size : 1) > 32 || lb < 0 || (size > 0 && tlb < 0);
    int anybad;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!anybad || attempt > 30) {
      if (anybad) { /* give up: the etype itself */
        free(bd);
        bd = fmt("dup(%s)", cs->et.name);
        MPI_Type_dup(cs->et.etype, &b);
        keep(b);
        MPI_Type_commit(&b);
        cs->layout = LAYOUT_SAME;
        extents(b, &lb, &ext, &tlb, &text, &size);
      }
      cs->ftype = b;
      cs->tmap = typemap_offsets(b);
      /* ROMIO 3.2.1 gets the typemap as one hindexed type of etypes over
       * its maximal runs, resized to the same bounds: its own flattening of
       * nested types corrupts the heap (ADIOI_Optimize_flattened frees a
       * pointer into an allocation when blocks merge, and resized bounds or
       * zero-length blocks become such blocks) and maps types with a
       * nonzero lower bound wrong.  Nested filetypes are lmpio's to get
       * right; the typemap comes from Open MPI's MPI_Pack. */
      int nr = 0, *bl = malloc(sizeof(int) * (size_t)(size + 1));
      MPI_Aint *dd = malloc(sizeof(MPI_Aint) * (size_t)(size + 1));
      for (MPI_Count i = 0; i < size; i++) {
        if (i && cs->tmap[i] == cs->tmap[i - 1] + 1) { bl[nr - 1]++; continue; }
        dd[nr] = (MPI_Aint)cs->tmap[i] - lb; /* and the oracle's displacement is disp + lb */
        bl[nr++] = 1;
      }
      for (int i = 0; i < nr; i++) bl[i] /= (int)cs->esz;
      MPI_Datatype h, o;
      MPI_Type_create_hindexed(nr, bl, dd, cs->et.etype, &h);
      keep(h);
      MPI_Type_create_resized(h, 0, ext, &o);
      cs->olb = lb;
      keep(o);
      MPI_Type_commit(&o);
      cs->oftype = o;
      free(bl);
      free(dd);
      cs->fdesc = bd;
      cs->fsize = size;
      cs->fext = ext;
      return;
    }
    free(bd);
  }
}

static void make_memtypes(casest *cs, rng *me) {
  for (int i = 0; i < 3; i++) {
    memtype_t *m = &cs->mem[i];
    if (i == 2) {
      m->t = cs->et.basic;
      m->desc = fmt("%s", cs->et.basicname);
    } else {
      gen_t g = {me, 0, 1, cs->et.basic, cs->et.basicname, rint_(me, 0, tl_size - 1), 1024, 8192};
      m->t = gen(&g, rint_(me, 1, 3), &m->desc);
      if (!g_neglb) m->t = norm0(m->t, &m->desc);
      if (m->t == cs->et.basic) {
        MPI_Type_dup(m->t, &m->t);
        keep(m->t);
      }
      MPI_Type_commit(&m->t);
    }
    extents(m->t, &m->lb, &m->ext, &m->tlb, &m->text, &m->size);
  }
}

static void compare_status(const char *what, MPI_Status *a, MPI_Status *b, MPI_Datatype t) {
  MPI_Count ea, eb;
  MPI_Get_elements_x(a, MPI_BYTE, &ea);
  MPI_Get_elements_x(b, MPI_BYTE, &eb);
  if (ea != eb) fail("%s: status bytes MPI %lld, lmpio %lld", what, (long long)ea, (long long)eb);
  int ca, cb;
  MPI_Get_count(a, t, &ca);
  MPI_Get_count(b, t, &cb);
  if (ca != cb) fail("%s: MPI_Get_count MPI %d, lmpio %d", what, ca, cb);
  MPI_Get_elements_x(a, t, &ea);
  MPI_Get_elements_x(b, t, &eb);
  if (ea != eb) fail("%s: MPI_Get_elements MPI %lld, lmpio %lld", what, (long long)ea, (long long)eb);
}

static int compare_rc(const char *what, int ra, int rb) {
  if ((ra == MPI_SUCCESS) != (rb == MPI_SUCCESS)) {
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    es[0] = 0;
    if (ra != MPI_SUCCESS) MPI_Error_string(ra, es, &len);
    fail("%s: MPI returned %s (%s), lmpio returned %s (%s)", what, ra == MPI_SUCCESS ? "success" : "an error",
         es, lmpio_error_class_name(rb), rb == MPI_SUCCESS ? "" : lmpio_last_error_message());
    return 0;
  }
  return ra == MPI_SUCCESS;
}

static void compare_positions(casest *cs) {
  MPI_Offset pa = -1, pb = -1;
  int ra = MPI_File_get_position(cs->mf, &pa), rb = lmpio_file_get_position(cs->lf, &pb);
  if (compare_rc("get_position", ra, rb) && pa != pb)
    fail("get_position: MPI %lld, lmpio %lld", (long long)pa, (long long)pb);
}

static void compare_bufs(const char *what, membuf *a, membuf *b) {
  if (memcmp(a->alloc, b->alloc, a->len) == 0) return;
  size_t first = 0, n = 0;
  for (size_t i = 0; i < a->len; i++)
    if (a->alloc[i] != b->alloc[i]) {
      if (!n) first = i;
      n++;
    }
  fail("%s: read buffers differ in %zu of %zu bytes, first at buf%+ld (MPI %02x, lmpio %02x)", what, n,
       a->len, (long)first - (long)(a->base - a->alloc), (unsigned char)a->alloc[first],
       (unsigned char)b->alloc[first]);
}

/* Count of memory items so that the data is whole etypes and at most cap bytes. */
static int pick_count(rng *r, const memtype_t *m, MPI_Aint esz, MPI_Count cap) {
  if (m->size == 0) return rint_(r, 0, 3);
  int maxc = (int)(cap / m->size);
  if (maxc > 4) maxc = 4;
  int c = rint_(r, 0, maxc);
  while (c > 0 && (c * m->size) % esz) c--;
  return c;
}

static MPI_Offset file_etypes_hint(casest *cs) {
  /* An etype offset range that reaches a little past the data. */
  return cs->layout == LAYOUT_SAME ? cs->region * tl_size + 8 : 2 * (cs->fsize / cs->esz) + 8;
}


/* ---------- bytes whose content the standard leaves undefined ----------
 * When a write extends the file, the bytes between the old end of file and
 * the new one that no write of the operation covers are undefined (ROMIO's
 * read-modify-write fills them with whatever its buffer held).  Every rank
 * keeps the same mask; reads and the final comparison skip those bytes. */

static unsigned char *g_undef;
static size_t g_undef_len;
static int g_oracle_notes, g_skipped, g_oracle_stopped;

static void undef_grow(size_t n) {
  if (n <= g_undef_len) return;
  g_undef = realloc(g_undef, n);
  memset(g_undef + g_undef_len, 0, n - g_undef_len);
  g_undef_len = n;
}

static void undef_set(MPI_Offset a, MPI_Offset b, int v) {
  if (b <= a) return;
  undef_grow((size_t)b);
  memset(g_undef + a, v, (size_t)(b - a));
}

static int undef_at(MPI_Offset o) { return o >= 0 && (size_t)o < g_undef_len && g_undef[o]; }

/* A deviation of the oracle from the standard: written down, not copied. */
static void oracle_note(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void oracle_note(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) abort();
  va_end(ap);
  g_oracle_notes++;
  if (g_verbose) fprintf(stderr, "# oracle [rank %d] seed %llu case %d op %d: %s\n", tl_rank, g_seed, g_case, g_op, s);
  free(s);
}

/* Byte offsets of n etypes from etype offset start, from the oracle's view,
 * checked against lmpio's. */
static MPI_Offset model_byte_offset(const casest *cs, MPI_Offset k) {
  MPI_Offset ept = cs->fsize / cs->esz;
  return cs->disp + (k / ept) * cs->fext + cs->tmap[(k % ept) * cs->esz];
}

/* Byte offsets of n etypes from etype offset start, from the typemap;
 * lmpio's must agree (and the oracle's should). */
static MPI_Offset *byte_offsets(casest *cs, MPI_Offset start, MPI_Offset n) {
  MPI_Offset *o = malloc(sizeof *o * (size_t)(n + 1));
  int bad = 0, obad = 0;
  for (MPI_Offset j = 0; j < n; j++) {
    MPI_Offset a = -1, b = -1;
    o[j] = model_byte_offset(cs, start + j);
    if (!bad && (lmpio_file_get_byte_offset(cs->lf, start + j, &b) != MPI_SUCCESS || b != o[j])) {
      fail("get_byte_offset(%lld): lmpio %lld, typemap %lld", (long long)(start + j), (long long)b, (long long)o[j]);
      bad = 1;
    }
    if (!obad && (MPI_File_get_byte_offset(cs->mf, start + j, &a) != MPI_SUCCESS || a != o[j])) {
      oracle_note("get_byte_offset(%lld): %lld, typemap %lld", (long long)(start + j), (long long)a, (long long)o[j]);
      obad = 1;
    }
  }
  return o;
}

/* Written byte ranges of this rank in the current operation. */
static MPI_Offset *g_wr;
static int g_nwr, g_capwr;

static void note_written(casest *cs, MPI_Offset start, MPI_Offset n) {
  MPI_Offset *o = byte_offsets(cs, start, n);
  for (MPI_Offset j = 0; j < n; j++) {
    if (g_nwr && g_wr[2 * g_nwr - 1] == o[j]) { g_wr[2 * g_nwr - 1] += cs->esz; continue; }
    if (g_nwr == g_capwr) {
      g_capwr = g_capwr ? 2 * g_capwr : 64;
      g_wr = realloc(g_wr, sizeof *g_wr * 2 * (size_t)g_capwr);
    }
    g_wr[2 * g_nwr] = o[j];
    g_wr[2 * g_nwr + 1] = o[j] + cs->esz;
    g_nwr++;
  }
  free(o);
}

/* After each operation, on every rank: new undefined bytes and written ones. */
static void update_undef(MPI_Offset old_eof, MPI_Offset new_eof, int was_write) {
  int n2 = 2 * g_nwr, *counts = malloc(sizeof(int) * (size_t)tl_size), *displs = malloc(sizeof(int) * (size_t)tl_size);
  MPI_Allgather(&n2, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  int tot = 0;
  for (int r = 0; r < tl_size; r++) { displs[r] = tot; tot += counts[r]; }
  MPI_Offset *all = malloc(sizeof(MPI_Offset) * (size_t)(tot + 1));
  MPI_Allgatherv(g_wr, n2, MPI_OFFSET, all, counts, displs, MPI_OFFSET, MPI_COMM_WORLD);
  if (was_write && new_eof > old_eof) undef_set(old_eof, new_eof, 1);
  for (int i = 0; i < tot; i += 2) undef_set(all[i], all[i + 1], 0);
  free(all);
  free(counts);
  free(displs);
  g_nwr = 0;
}

/* Data bytes a read of n etypes from etype offset start gets before end of
 * file: the longest prefix of the request that lies in the file. */
static MPI_Count bytes_before_eof(const casest *cs, MPI_Offset start, MPI_Offset n, MPI_Offset eof) {
  MPI_Count ex = 0;
  for (MPI_Offset j = 0; j < n; j++) {
    MPI_Offset o = model_byte_offset(cs, start + j);
    if (o + cs->esz <= eof) { ex += cs->esz; continue; }
    if (o < eof) ex += eof - o;
    break;
  }
  return ex;
}

/* Checks a read.  The expected result is put together as a packed stream:
 * for the data bytes before end of file, the bytes of the oracle's file at
 * the places the filetype's typemap gives (lmpio's own for bytes that are
 * undefined), after it the buffer's previous content; the stream is
 * unpacked into a fresh copy of the buffer's pattern and compared with
 * lmpio's buffer, guard bytes included.  The oracle's own read, when it was
 * made, must give the same (a deviation is noted, not copied). */
static void check_read(casest *cs, const char *what, const memtype_t *m, int count, MPI_Offset start, int ptr,
                       MPI_Offset eof, int oracle_called, membuf *a, membuf *b, MPI_Status *sa, MPI_Status *sb) {
  MPI_Count req = (MPI_Count)count * m->size;
  MPI_Offset n = req / cs->esz;
  MPI_Offset *off = byte_offsets(cs, start, n);
  MPI_Count ex = bytes_before_eof(cs, start, n, eof);
  MPI_Count gb = -1, ga = -1;
  MPI_Get_elements_x(sb, MPI_BYTE, &gb);
  if (gb != ex) fail("%s: lmpio's status says %lld bytes, expected %lld (of %lld requested, end of file %lld)", what,
                     (long long)gb, (long long)ex, (long long)req, (long long)eof);
  if (oracle_called) {
    MPI_Get_elements_x(sa, MPI_BYTE, &ga);
    if (ga != ex) oracle_note("%s: status says %lld bytes, expected %lld (of %lld requested, end of file %lld)", what,
                              (long long)ga, (long long)ex, (long long)req, (long long)eof);
    else compare_status(what, sa, sb, m->t);
  }
  membuf e = membuf_new(m, count, NULL, 0x5a), p = membuf_new(m, count, NULL, 0x5a);
  int psz = 0;
  MPI_Pack_size(count, m->t, MPI_COMM_WORLD, &psz);
  char *pa = malloc((size_t)psz + 1), *pb = malloc((size_t)psz + 1), *pp = malloc((size_t)psz + 1);
  int qa = 0, qb = 0, qp = 0;
  if (oracle_called) MPI_Pack(a->base, count, m->t, pa, psz, &qa, MPI_COMM_WORLD);
  MPI_Pack(b->base, count, m->t, pb, psz, &qb, MPI_COMM_WORLD);
  MPI_Pack(p.base, count, m->t, pp, psz, &qp, MPI_COMM_WORLD);
  if (qp != req) fail("%s: packed %d bytes, expected %lld", what, qp, (long long)req);
  int oracle_bad = 0;
  for (MPI_Count i = 0; i < ex && i < qp; i++) {
    MPI_Offset fb = off[i / cs->esz] + i % cs->esz;
    char c;
    if (pread(cs->mfd, &c, 1, fb) != 1) c = 0;
    if (undef_at(fb)) c = pb[i];
    if (oracle_called && pa[i] != c && !oracle_bad) {
      oracle_bad = 1;
      oracle_note("%s: read data byte %lld (file byte %lld) is %02x, the file holds %02x", what, (long long)i,
                  (long long)fb, (unsigned char)pa[i], (unsigned char)c);
    }
    pp[i] = c;
  }
  if (oracle_called)
    for (MPI_Count i = ex; i < req && i < qp && !oracle_bad; i++)
      if (pa[i] != pp[i]) {
        oracle_bad = 1;
        oracle_note("%s: the read changed the buffer beyond the end of file", what);
      }
  int q = 0;
  MPI_Unpack(pp, qp, &q, e.base, count, m->t, MPI_COMM_WORLD);
  compare_bufs(what, &e, b);
  free(pa);
  free(pb);
  free(pp);
  free(off);
  free(e.alloc);
  free(p.alloc);
  if (ptr) { /* the pointer moves by the whole etypes read */
    MPI_Offset pa_ = -1, pb_ = -1;
    MPI_File_get_position(cs->mf, &pa_);
    lmpio_file_get_position(cs->lf, &pb_);
    MPI_Offset want = start + ex / cs->esz;
    if (pb_ != want) fail("%s: lmpio's position %lld after the read, expected %lld", what, (long long)pb_, (long long)want);
    if (pa_ != want) {
      if (oracle_called)
        oracle_note("%s: position %lld after a read from %lld of %lld bytes, expected %lld", what, (long long)pa_,
                    (long long)start, (long long)ex, (long long)want);
      MPI_File_seek(cs->mf, want, MPI_SEEK_SET); /* carry on from the same place in both */
    }
  }
}

static int do_op(casest *cs, rng *sh, rng *me, MPI_Offset eof) {
  int tot = 0;
  for (int i = 0; i < NOPS; i++) tot += op_weight[i];
  int w = rint_(sh, 0, tot - 1), op = 0;
  while (w >= op_weight[op]) w -= op_weight[op++];
  int collective = op == OP_WRITE_AT_ALL || op == OP_WRITE_ALL || op == OP_READ_AT_ALL || op == OP_READ_ALL;
  int write = op == OP_WRITE_AT || op == OP_WRITE_AT_ALL || op == OP_WRITE || op == OP_WRITE_ALL;
  int read = op == OP_READ_AT || op == OP_READ_AT_ALL || op == OP_READ || op == OP_READ_ALL;
  int explicit_ = op == OP_WRITE_AT || op == OP_WRITE_AT_ALL || op == OP_READ_AT || op == OP_READ_AT_ALL;
  int ra = MPI_SUCCESS, rb = MPI_SUCCESS;
  char what[64];
  snprintf(what, sizeof what, "%s", op_name[op]);
  if (write || read) {
    if (!collective && !chance(me, 80)) { oplog("%s: not called on this rank", what); return op; }
    memtype_t *m = &cs->mem[rint_(me, 0, 2)];
    int count = pick_count(me, m, cs->esz, 1024);
    MPI_Offset netypes = (MPI_Offset)count * m->size / cs->esz, off = 0;
    if (write && cs->layout == LAYOUT_SAME) {
      off = (MPI_Offset)tl_rank * cs->region + rint_(me, 0, (int)(cs->region - netypes));
      if (!explicit_) {
        ra = MPI_File_seek(cs->mf, off, MPI_SEEK_SET);
        rb = lmpio_file_seek(cs->lf, off, MPI_SEEK_SET);
        compare_rc("seek before write", ra, rb);
      }
    } else if (explicit_) {
      off = rint_(me, 0, (int)file_etypes_hint(cs));
    }
    MPI_Offset start = off;
    if (!explicit_) MPI_File_get_position(cs->mf, &start);
    if (explicit_) oplog("%s(offset=%lld, count=%d, %s)", what, (long long)off, count, m->desc);
    else oplog("%s(count=%d, %s) at position %lld%s", what, count, m->desc, (long long)start,
               write && cs->layout == LAYOUT_SAME ? " after seek" : "");
    MPI_Status sa, sb;
    MPI_Status_set_elements_x(&sa, MPI_BYTE, 77777);
    MPI_Status_set_elements_x(&sb, MPI_BYTE, 77777);
    if (write) {
      membuf mb = membuf_new(m, count, me, 0);
      /* The oracle gets the data packed by MPI_Pack, as basic elements: ROMIO
       * 3.2.1 mishandles many noncontiguous memory types (see g_neglb). */
      int psz = 0, q = 0, nb = (int)((MPI_Count)count * m->size / cs->bsize);
      MPI_Pack_size(count, m->t, MPI_COMM_WORLD, &psz);
      char *pk = malloc((size_t)psz + 1);
      MPI_Pack(mb.base, count, m->t, pk, psz, &q, MPI_COMM_WORLD);
      switch (op) {
      case OP_WRITE_AT:
        ra = MPI_File_write_at(cs->mf, off, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_write_at(cs->lf, off, mb.base, count, m->t, &sb);
        break;
      case OP_WRITE_AT_ALL:
        ra = MPI_File_write_at_all(cs->mf, off, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_write_at_all(cs->lf, off, mb.base, count, m->t, &sb);
        break;
      case OP_WRITE:
        ra = MPI_File_write(cs->mf, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_write(cs->lf, mb.base, count, m->t, &sb);
        break;
      default:
        ra = MPI_File_write_all(cs->mf, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_write_all(cs->lf, mb.base, count, m->t, &sb);
        break;
      }
      if (compare_rc(what, ra, rb)) {
        MPI_Count ga = -1, gb = -1, req = (MPI_Count)count * m->size;
        MPI_Get_elements_x(&sa, MPI_BYTE, &ga);
        MPI_Get_elements_x(&sb, MPI_BYTE, &gb);
        if (gb != req) fail("%s: lmpio's status says %lld bytes, expected %lld", what, (long long)gb, (long long)req);
        if (ga != req) oracle_note("%s: status says %lld bytes, expected %lld", what, (long long)ga, (long long)req);
        else compare_status(what, &sa, &sb, m->t);
        note_written(cs, start, netypes);
        free(cs->wstream);
        cs->wstream = pk;
        pk = NULL;
        cs->wstart = start;
        cs->wn = netypes;
        if (!explicit_) { /* the pointer moves by the etypes written */
          MPI_Offset pa = -1, pb = -1, want = start + netypes;
          MPI_File_get_position(cs->mf, &pa);
          lmpio_file_get_position(cs->lf, &pb);
          if (pb != want) fail("%s: lmpio's position %lld after the write, expected %lld", what, (long long)pb, (long long)want);
          if (pa != want) {
            oracle_note("%s: position %lld after the write of %lld etypes from %lld", what, (long long)pa,
                        (long long)netypes, (long long)start);
            MPI_File_seek(cs->mf, want, MPI_SEEK_SET);
          }
        }
      }
      free(mb.alloc);
      free(pk);
    } else {
      membuf a = membuf_new(m, count, NULL, 0x5a), b = membuf_new(m, count, NULL, 0x5a);
      /* ROMIO 3.2.1 mishandles reads that cross the end of file (wrong
       * statuses and positions, data beyond the end, and crashes in
       * ADIOI_GEN_ReadStrided): those are checked against the file alone. */
      int crosses = bytes_before_eof(cs, start, netypes, eof) < (MPI_Count)count * m->size;
      if (collective) MPI_Allreduce(MPI_IN_PLACE, &crosses, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      MPI_Status_set_elements_x(&sa, MPI_BYTE, 77777);
      MPI_Status_set_elements_x(&sb, MPI_BYTE, 77777);
      if (crosses) {
        switch (op) {
        case OP_READ_AT: rb = lmpio_file_read_at(cs->lf, off, b.base, count, m->t, &sb); break;
        case OP_READ_AT_ALL: rb = lmpio_file_read_at_all(cs->lf, off, b.base, count, m->t, &sb); break;
        case OP_READ: rb = lmpio_file_read(cs->lf, b.base, count, m->t, &sb); break;
        default: rb = lmpio_file_read_all(cs->lf, b.base, count, m->t, &sb); break;
        }
        if (rb != MPI_SUCCESS) fail("%s: lmpio returned %s (%s)", what, lmpio_error_class_name(rb), lmpio_last_error_message());
        else check_read(cs, what, m, count, start, !explicit_, eof, 0, &a, &b, &sa, &sb);
        free(a.alloc);
        free(b.alloc);
        return op;
      }
      int psz = 0, nb = (int)((MPI_Count)count * m->size / cs->bsize);
      MPI_Pack_size(count, m->t, MPI_COMM_WORLD, &psz);
      char *pk = malloc((size_t)psz + 1);
      int q = 0; /* the pattern, so that bytes not read stay as they were */
      MPI_Pack(a.base, count, m->t, pk, psz, &q, MPI_COMM_WORLD);
      switch (op) {
      case OP_READ_AT:
        ra = MPI_File_read_at(cs->mf, off, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_read_at(cs->lf, off, b.base, count, m->t, &sb);
        break;
      case OP_READ_AT_ALL:
        ra = MPI_File_read_at_all(cs->mf, off, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_read_at_all(cs->lf, off, b.base, count, m->t, &sb);
        break;
      case OP_READ:
        ra = MPI_File_read(cs->mf, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_read(cs->lf, b.base, count, m->t, &sb);
        break;
      default:
        ra = MPI_File_read_all(cs->mf, pk, nb, cs->et.basic, &sa);
        rb = lmpio_file_read_all(cs->lf, b.base, count, m->t, &sb);
        break;
      }
      q = 0;
      MPI_Unpack(pk, psz, &q, a.base, count, m->t, MPI_COMM_WORLD);
      free(pk);
      if (compare_rc(what, ra, rb)) check_read(cs, what, m, count, start, !explicit_, eof, 1, &a, &b, &sa, &sb);
      free(a.alloc);
      free(b.alloc);
    }
    return op;
  }
  switch (op) {
  case OP_SEEK: {
    int k = rint_(me, 0, 2);
    MPI_Offset pos = 0, o;
    MPI_File_get_position(cs->mf, &pos);
    int whence = k == 0 ? MPI_SEEK_SET : k == 1 ? MPI_SEEK_CUR : MPI_SEEK_END;
    if (k == 0) o = rint_(me, 0, (int)file_etypes_hint(cs));
    else if (k == 1) o = rint_(me, -(int)(pos < 20 ? pos : 20), 20);
    else o = rint_(me, -3, 3);
    if (chance(me, 5)) o = -pos - 1 - (k == 2 ? 1000000 : 0); /* before the start: an error */
    oplog("seek(%lld, %s)", (long long)o, k == 0 ? "SET" : k == 1 ? "CUR" : "END");
    MPI_Offset want = k == 0 ? o : k == 1 ? pos + o : 0;
    if (k == 2) { /* end of file in the view: the first etype at or after the last byte */
      MPI_Offset size = 0;
      MPI_File_get_size(cs->mf, &size);
      while (model_byte_offset(cs, want) < size) want++;
      want += o;
    }
    ra = MPI_File_seek(cs->mf, o, whence);
    rb = lmpio_file_seek(cs->lf, o, whence);
    if ((rb == MPI_SUCCESS) != (want >= 0))
      fail("seek: lmpio returned %s for a seek to %lld", lmpio_error_class_name(rb), (long long)want);
    if ((ra == MPI_SUCCESS) != (want >= 0) || (ra == MPI_SUCCESS && want >= 0)) {
      MPI_Offset pa = -1;
      MPI_File_get_position(cs->mf, &pa);
      if ((ra == MPI_SUCCESS) != (want >= 0) || pa != want)
        oracle_note("seek(%lld, %s): returned %d, position %lld, expected %lld", (long long)o,
                    k == 0 ? "SET" : k == 1 ? "CUR" : "END", ra, (long long)pa, (long long)want);
      if (want >= 0 && pa != want) MPI_File_seek(cs->mf, want, MPI_SEEK_SET);
    }
    if (rb == MPI_SUCCESS && want >= 0) {
      MPI_Offset pb = -1;
      lmpio_file_get_position(cs->lf, &pb);
      if (pb != want) fail("seek: lmpio's position %lld, expected %lld", (long long)pb, (long long)want);
    }
    break;
  }
  case OP_BYTE_OFFSET: {
    MPI_Offset o = rint_(me, 0, (int)file_etypes_hint(cs)), da = -1, db = -1;
    oplog("get_byte_offset(%lld)", (long long)o);
    ra = MPI_File_get_byte_offset(cs->mf, o, &da);
    rb = lmpio_file_get_byte_offset(cs->lf, o, &db);
    MPI_Offset want = model_byte_offset(cs, o);
    if (compare_rc("get_byte_offset", ra, rb) && db != want)
      fail("get_byte_offset(%lld): lmpio %lld, typemap %lld (MPI %lld)", (long long)o, (long long)db, (long long)want,
           (long long)da);
    break;
  }
  case OP_GET_SIZE: {
    MPI_Offset a = -1, b = -1;
    oplog("get_size");
    ra = MPI_File_get_size(cs->mf, &a);
    rb = lmpio_file_get_size(cs->lf, &b);
    if (compare_rc("get_size", ra, rb) && a != b) fail("get_size: MPI %lld, lmpio %lld", (long long)a, (long long)b);
    break;
  }
  case OP_SET_SIZE: {
    MPI_Offset cur = 0;
    MPI_File_get_size(cs->mf, &cur);
    MPI_Bcast(&cur, 1, MPI_OFFSET, 0, MPI_COMM_WORLD);
    MPI_Offset n = (MPI_Offset)rint_(sh, 0, (int)(cur + cur / 2 + 16));
    oplog("set_size(%lld)", (long long)n);
    ra = MPI_File_set_size(cs->mf, n);
    rb = lmpio_file_set_size(cs->lf, n);
    compare_rc("set_size", ra, rb);
    break;
  }
  case OP_SYNC:
    oplog("sync");
    ra = MPI_File_sync(cs->mf);
    rb = lmpio_file_sync(cs->lf);
    compare_rc("sync", ra, rb);
    break;
  case OP_SET_VIEW: {
    cs->disp = rint_(sh, 0, 40);
    oplog("set_view(disp=%lld, same types)", (long long)cs->disp);
    ra = MPI_File_set_view(cs->mf, cs->disp + cs->olb, cs->et.etype, cs->oftype, "native", cs->info);
    rb = lmpio_file_set_view(cs->lf, cs->disp, cs->et.etype, cs->ftype, "native", cs->info);
    compare_rc("set_view", ra, rb);
    break;
  }
  default: { /* invalid arguments: both must fail (independent calls only) */
    int k = rint_(me, 0, 3);
    MPI_Status sa, sb;
    char buf[64] = {0};
    if (k == 0) {
      oplog("invalid: read_at(offset=-1)");
      ra = MPI_File_read_at(cs->mf, -1, buf, 1, cs->et.basic, &sa);
      rb = lmpio_file_read_at(cs->lf, -1, buf, 1, cs->et.basic, &sb);
    } else if (k == 1) {
      oplog("invalid: seek(-1, SET)");
      ra = MPI_File_seek(cs->mf, -1, MPI_SEEK_SET);
      rb = lmpio_file_seek(cs->lf, -1, MPI_SEEK_SET);
    } else if (k == 2) {
      oplog("invalid: write_at(count=-1)");
      ra = MPI_File_write_at(cs->mf, 0, buf, -1, cs->et.basic, &sa);
      rb = lmpio_file_write_at(cs->lf, 0, buf, -1, cs->et.basic, &sb);
    } else {
      oplog("invalid: write_at(datatype=MPI_DATATYPE_NULL)");
      ra = MPI_File_write_at(cs->mf, 0, buf, 1, MPI_DATATYPE_NULL, &sa);
      rb = lmpio_file_write_at(cs->lf, 0, buf, 1, MPI_DATATYPE_NULL, &sb);
    }
    if (ra == MPI_SUCCESS) fail("invalid op: MPI accepted it");
    compare_rc("invalid op", ra, rb);
    break;
  }
  }
  return op;
}

static char *path_mpi, *path_lmpio;

/* After a write and a barrier: the bytes this rank wrote must be in both
 * files where the typemap puts them.  Returns 1 when the oracle wrote them
 * wrong (the case cannot go on). */
static int check_written(casest *cs) {
  int oracle_bad = 0, bad = 0;
  for (MPI_Offset j = 0; j < cs->wn && !(oracle_bad && bad); j++) {
    MPI_Offset o = model_byte_offset(cs, cs->wstart + j);
    for (MPI_Aint k = 0; k < cs->esz; k++) {
      char a = 0, b = 0, want = cs->wstream[j * cs->esz + k];
      if (pread(cs->mfd, &a, 1, o + k) != 1) a = (char)~want;
      if (pread(cs->lfd, &b, 1, o + k) != 1) b = (char)~want;
      if (b != want && !bad) {
        bad = 1;
        fail("write: file byte %lld (data byte %lld of the write at etype %lld) is %02x in lmpio's file, written %02x",
             (long long)(o + k), (long long)(j * cs->esz + k), (long long)cs->wstart, (unsigned char)b,
             (unsigned char)want);
      }
      if (a != want && !oracle_bad) {
        oracle_bad = 1;
        oracle_note("write: file byte %lld (data byte %lld of the write at etype %lld) is %02x, written %02x",
                    (long long)(o + k), (long long)(j * cs->esz + k), (long long)cs->wstart, (unsigned char)a,
                    (unsigned char)want);
      }
    }
  }
  cs->wn = 0;
  return oracle_bad;
}

/* Compares the two files byte for byte on rank 0. */
static void compare_files(void) {
  if (tl_rank != 0) return;
  int fa = open(path_mpi, O_RDONLY), fb = open(path_lmpio, O_RDONLY);
  if (fa < 0 || fb < 0) {
    fail("cannot open the files to compare");
    if (fa >= 0) close(fa);
    if (fb >= 0) close(fb);
    return;
  }
  struct stat sa, sb;
  fstat(fa, &sa);
  fstat(fb, &sb);
  if (sa.st_size != sb.st_size)
    fail("file sizes differ: MPI %lld, lmpio %lld", (long long)sa.st_size, (long long)sb.st_size);
  size_t n = (size_t)(sa.st_size < sb.st_size ? sa.st_size : sb.st_size);
  char *a = malloc(n + 1), *b = malloc(n + 1);
  ssize_t ga = pread(fa, a, n, 0), gb = pread(fb, b, n, 0);
  if (ga != (ssize_t)n || gb != (ssize_t)n) fail("short pread of the files");
  else if (memcmp(a, b, n)) {
    size_t first = 0, cnt = 0, last = 0;
    for (size_t i = 0; i < n; i++)
      if (a[i] != b[i] && !undef_at((MPI_Offset)i)) {
        if (!cnt) first = i;
        last = i;
        cnt++;
      }
    if (cnt) fail("file contents differ in %zu bytes, first at byte %zu (MPI %02x, lmpio %02x), last at %zu", cnt, first,
         (unsigned char)a[first], (unsigned char)b[first], last);
  }
  free(a);
  free(b);
  close(fa);
  close(fb);
}

static void run_case(int k) {
  g_case = k;
  g_op = -1;
  g_desc_shown = 0;
  free(g_oplog);
  g_oplog = NULL;
  rng sh = rng_for(g_seed, k, -1), me = rng_for(g_seed, k, tl_rank);
  casest cs;
  memset(&cs, 0, sizeof cs);
  cs.et = pick_etype(&sh);
  MPI_Aint elb;
  MPI_Type_get_extent(cs.et.etype, &elb, &cs.esz);
  MPI_Type_get_extent(cs.et.basic, &elb, &cs.bsize);
  make_filetype(&cs, &sh);
  cs.region = 1024 / cs.esz + 1;
  cs.disp = rint_(&sh, 0, 40);
  char *infodesc;
  pick_info(&sh, &cs.info, &infodesc);
  make_memtypes(&cs, &me);
  int atomic = chance(&sh, 10);
  int prefill = chance(&sh, 15) ? 0 : rint_(&sh, 1, 3 * (int)(cs.fext * tl_size + cs.disp));
  MPI_Bcast(&prefill, 1, MPI_INT, 0, MPI_COMM_WORLD); /* filetype extents may differ by rank */
  free(g_desc);
  g_desc = fmt("  etype %s, layout %s, disp %lld, %s%s, prefill %d bytes\n  filetype %s (size %lld, extent %ld)\n"
               "  memtype 0: %s (size %lld, lb %ld, extent %ld)\n  memtype 1: %s (size %lld, lb %ld, extent %ld)\n"
               "  memtype 2: %s\n",
               cs.et.name, layout_name[cs.layout], (long long)cs.disp, infodesc, atomic ? ", atomic" : "", prefill,
               cs.fdesc, (long long)cs.fsize, (long)cs.fext, cs.mem[0].desc, (long long)cs.mem[0].size,
               (long)cs.mem[0].lb, (long)cs.mem[0].ext, cs.mem[1].desc, (long long)cs.mem[1].size,
               (long)cs.mem[1].lb, (long)cs.mem[1].ext, cs.mem[2].desc);
  free(infodesc);
  if (g_verbose) {
    if (tl_rank == 0) printf("# case %d\n", k);
    fflush(stdout);
    for (int r = 0; r < tl_size; r++) {
      if (r == tl_rank) fprintf(stderr, "[rank %d] case %d\n%s", tl_rank, k, g_desc);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }

  /* Both files hold the same pattern before the case. */
  if (tl_rank == 0) {
    char *p = malloc((size_t)prefill + 1);
    rng pr = rng_for(g_seed, k, 1000000);
    for (int i = 0; i < prefill; i++) p[i] = (char)rnext(&pr);
    const char *paths[2] = {path_mpi, path_lmpio};
    for (int i = 0; i < 2; i++) {
      int fd = open(paths[i], O_CREAT | O_TRUNC | O_WRONLY, 0644);
      if (fd < 0 || pwrite(fd, p, (size_t)prefill, 0) != prefill) fail("cannot prefill %s", paths[i]);
      if (fd >= 0) close(fd);
    }
    free(p);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  cs.mfd = open(path_mpi, O_RDONLY);
  cs.lfd = open(path_lmpio, O_RDONLY);
  int ra = MPI_File_open(MPI_COMM_WORLD, path_mpi, MPI_MODE_RDWR, cs.info, &cs.mf);
  int rb = lmpio_file_open(MPI_COMM_WORLD, path_lmpio, MPI_MODE_RDWR, cs.info, &cs.lf);
  if (!compare_rc("open", ra, rb) || ra != MPI_SUCCESS) {
    if (ra == MPI_SUCCESS) MPI_File_close(&cs.mf);
    if (rb == MPI_SUCCESS) lmpio_file_close(&cs.lf);
    fail("open failed");
    goto out;
  }
  if (atomic) {
    compare_rc("set_atomicity", MPI_File_set_atomicity(cs.mf, 1), lmpio_file_set_atomicity(cs.lf, 1));
  }
  g_op = 0;
  oplog("set_view(disp=%lld)", (long long)cs.disp);
  ra = MPI_File_set_view(cs.mf, cs.disp + cs.olb, cs.et.etype, cs.oftype, "native", cs.info);
  rb = lmpio_file_set_view(cs.lf, cs.disp, cs.et.etype, cs.ftype, "native", cs.info);
  int ok = compare_rc("set_view", ra, rb) && ra == MPI_SUCCESS;
  int anyfail = !ok;
  MPI_Allreduce(MPI_IN_PLACE, &anyfail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!anyfail) { /* is the oracle's view right? if not, it cannot judge this case */
    MPI_Offset ept = cs.fsize / cs.esz, n = 2 * ept < 512 ? 2 * ept : 512;
    int wrong = 0;
    for (MPI_Offset j = 0; j < n && !wrong; j++) {
      MPI_Offset a = -1;
      if (MPI_File_get_byte_offset(cs.mf, j, &a) != MPI_SUCCESS || a != model_byte_offset(&cs, j)) {
        oracle_note("view: get_byte_offset(%lld) is %lld, the filetype's typemap says %lld; case skipped", (long long)j,
                    (long long)a, (long long)model_byte_offset(&cs, j));
        if (g_verbose) fprintf(stderr, "%s", g_desc);
        wrong = 1;
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (wrong) {
      g_skipped++;
      anyfail = 1;
    }
  }
  int nops = rint_(&sh, 3, 10);
  MPI_Offset eof = prefill;
  int stopped = 0;
  g_nwr = 0;
  for (g_op = 1; g_op <= nops && !anyfail; g_op++) {
    int op = do_op(&cs, &sh, &me, eof);
    compare_positions(&cs);
    MPI_Offset a = -1, b = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    int obad = check_written(&cs);
    MPI_Allreduce(MPI_IN_PLACE, &obad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (obad) { /* the oracle's file is wrong from here on */
      if (g_verbose && tl_rank == 0) fprintf(stderr, "%s%s", g_desc, g_oplog);
      g_oracle_stopped++;
      stopped = 1;
      break;
    }
    ra = MPI_File_get_size(cs.mf, &a);
    rb = lmpio_file_get_size(cs.lf, &b);
    if (compare_rc("get_size after the operation", ra, rb) && a != b)
      fail("size after the operation: MPI %lld, lmpio %lld", (long long)a, (long long)b);
    update_undef(eof, a, op <= OP_WRITE_ALL);
    eof = a;
    anyfail = tl_case_failed;
    MPI_Allreduce(MPI_IN_PLACE, &anyfail, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (stopped) anyfail = 1;
  }
  if (!stopped && !tl_case_failed) {
    MPI_Offset a = -1, b = -1;
    ra = MPI_File_get_size(cs.mf, &a);
    rb = lmpio_file_get_size(cs.lf, &b);
    if (compare_rc("final get_size", ra, rb) && a != b)
      fail("final get_size: MPI %lld, lmpio %lld", (long long)a, (long long)b);
  }
  compare_rc("close", MPI_File_close(&cs.mf), lmpio_file_close(&cs.lf));
  MPI_Barrier(MPI_COMM_WORLD);
  if (!tl_case_failed && !stopped) compare_files();
  g_nwr = 0;
  if (g_undef_len) memset(g_undef, 0, g_undef_len);
out:
  if (g_verbose && tl_rank == 0) fprintf(stderr, "%s", g_oplog ? g_oplog : "");
  if (cs.mfd >= 0) close(cs.mfd);
  if (cs.lfd >= 0) close(cs.lfd);
  free(cs.wstream);
  MPI_Info_free(&cs.info);
  free(cs.fdesc);
  for (int i = 0; i < 3; i++) free(cs.mem[i].desc);
  free(cs.tmap);
}

static int g_first, g_last;

static void run_group(void) {
  for (int k = g_first; k <= g_last; k++) {
    int before = tl_case_failed;
    tl_case_failed = 0;
    run_case(k);
    tl_case_failed |= before;
  }
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* a rejected random darray is not fatal */
  const char *s = getenv("LMPIO_DIFF_SEED");
  unsigned long long seed = s && *s ? strtoull(s, NULL, 0)
                                    : ((unsigned long long)time(NULL) * 1000003ULL) ^ (unsigned long long)getpid();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  g_seed = seed;
  s = getenv("LMPIO_DIFF_CASES");
  int ncases = s && *s ? atoi(s) : 500; /* x 4 configurations per make check */
  s = getenv("LMPIO_DIFF_CASE");
  int only = s && *s ? atoi(s) : -1;
  s = getenv("LMPIO_DIFF_VERBOSE");
  g_verbose = s && *s && *s != '0';
  s = getenv("LMPIO_DIFF_ZERO_BLOCKS");
  g_zero = s && *s && *s != '0';
  s = getenv("LMPIO_DIFF_NEG_STRIDE");
  g_negstride = s && *s && *s != '0';
  s = getenv("LMPIO_DIFF_NEG_LB");
  g_neglb = !s || *s != '0';
  s = getenv("LMPIO_DIFF_ADJACENT");
  g_adjacent = !s || *s != '0';
  path_mpi = tl_path("diff-mpi");
  path_lmpio = tl_path("diff-lmpio");
  if (tl_rank == 0) {
    printf("# diff_test: LMPIO_DIFF_SEED=%llu, %d cases, %d ranks\n", seed, only >= 0 ? 1 : ncases, tl_size);
    fflush(stdout);
  }
  double t0 = MPI_Wtime();
  const int group = 25;
  int first = only >= 0 ? only : 0, last = only >= 0 ? only : ncases - 1;
  for (int a = first; a <= last; a += group) {
    g_first = a;
    g_last = a + group - 1 < last ? a + group - 1 : last;
    char name[128];
    snprintf(name, sizeof name, "diff seed %llu cases %d-%d", seed, g_first, g_last);
    tl_run(name, run_group);
  }
  int notes = g_oracle_notes;
  MPI_Allreduce(MPI_IN_PLACE, &notes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (tl_rank == 0) {
    int st = g_oracle_stopped;
    printf("# diff_test: %d cases stopped early because the oracle wrote wrong data\n", st);
    printf("# diff_test: %d cases skipped because the oracle's view of the filetype is wrong\n", g_skipped);
    printf("# diff_test: %d deviations of the oracle from the standard set aside (LMPIO_DIFF_VERBOSE=1 lists them)\n", notes);
    printf("# diff_test: %d cases in %.1f s (LMPIO_DIFF_SEED=%llu)\n", last - first + 1, MPI_Wtime() - t0, seed);
    fflush(stdout);
  }
  tl_unlink(path_mpi);
  tl_unlink(path_lmpio);
  free(g_desc);
  free(g_oplog);
  free(g_undef);
  free(g_wr);
  free_made();
  free(g_made);
  return tl_finish();
}
