/* Bulk operations on typed arrays, in C: a:sum, a:min, a:max, a:minmax,
 * a:histogram, and a:chunks (an iterator that hands a loop written in Lua
 * the elements a few thousand at a time in one reused table, the fastest
 * way for Lua code to see every element).
 *
 * They run over the elements in storage order (a shaped array as its
 * storage, a view over its own elements) and are methods of "lmpio.buffer",
 * added to its method table by lmpio_lua_array_ops_open.  Arrays of records
 * and of types Lua cannot read (complex numbers) are refused.
 *
 * Floats are summed pairwise in double (long double for LONG_DOUBLE), as
 * numpy sums, so the rounding error grows with log n, not n; integers are
 * summed modulo 2^64, as Lua's own integer arithmetic wraps.  A NaN makes
 * min and max NaN (it is no element's order). */
#include "datatype.h"
#include "buffer.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The array at idx, with elements that are numbers or booleans. */
static lmpio_lua_buffer *checknumeric(lua_State *L, int idx) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  lmpio_lua_checkheld(L, b, 0);
  if (b->rec) lmpio_lua_argerror(L, idx, "an array of numbers expected, got records");
  if (b->kind == LMPIO_LUA_K_NONE)
    lmpio_lua_argerror(L, idx, "an array of numbers expected (elements of this type cannot be read from Lua)");
  return b;
}

/* Loads of element k of the kinds below from memory of any alignment (a
 * view or a converter's buffer need not be aligned). */
#define LOADER(name, T)                                                        \
  static inline T name(const unsigned char *p, size_t k) {                     \
    T v;                                                                       \
    memcpy(&v, p + k * sizeof v, sizeof v);                                    \
    return v;                                                                  \
  }
LOADER(ld_i8, int8_t)
LOADER(ld_i16, int16_t)
LOADER(ld_i32, int32_t)
LOADER(ld_i64, int64_t)
LOADER(ld_u8, uint8_t)
LOADER(ld_u16, uint16_t)
LOADER(ld_u32, uint32_t)
LOADER(ld_u64, uint64_t)
LOADER(ld_f32, float)
LOADER(ld_f64, double)
LOADER(ld_ld, long double)

/* One code per element representation, so that every operation has one
 * switch. */
enum { E_I8, E_I16, E_I32, E_I64, E_U8, E_U16, E_U32, E_U64, E_BOOL, E_F32, E_F64, E_LD, E_NONE };

static int ecode(const lmpio_lua_buffer *b) {
  static const int ints[] = {E_NONE, E_I8, E_I16, E_NONE, E_I32, E_NONE, E_NONE, E_NONE, E_I64};
  static const int uints[] = {E_NONE, E_U8, E_U16, E_NONE, E_U32, E_NONE, E_NONE, E_NONE, E_U64};
  switch (b->kind) {
  case LMPIO_LUA_K_INT: return b->esize <= 8 ? ints[b->esize] : E_NONE;
  case LMPIO_LUA_K_UINT: return b->esize <= 8 ? uints[b->esize] : E_NONE;
  case LMPIO_LUA_K_BOOL: return E_BOOL;
  case LMPIO_LUA_K_F32: return E_F32;
  case LMPIO_LUA_K_F64: return E_F64;
  case LMPIO_LUA_K_LDOUBLE: return E_LD;
  }
  return E_NONE;
}

static int isbool_elem(const unsigned char *p, size_t esize) {
  for (size_t k = 0; k < esize; k++)
    if (p[k]) return 1;
  return 0;
}

/* ---- runs: an array's elements, or a slice's, as runs of adjacent ones ------ */

typedef void (*runfn)(void *ctx, const unsigned char *p, size_t n);
typedef struct {
  runfn f;
  void *ctx;
  size_t esize;
} runs_ctx;

static void runs_row(void *vc, unsigned char *const *p, const ptrdiff_t *st, size_t n) {
  const runs_ctx *r = vc;
  if (st[0] == (ptrdiff_t)r->esize) r->f(r->ctx, p[0], n);
  else
    for (size_t i = 0; i < n; i++) r->f(r->ctx, p[0] + (ptrdiff_t)i * st[0], 1);
}

/* Calls f on the runs of elements s..s+n-1 of b: one run for an array; a
 * slice's rows (or its elements one by one, where a row's are not
 * adjacent), which only takes its whole range. */
static void runs(lua_State *L, lmpio_lua_buffer *b, size_t s, size_t n, runfn f, void *ctx) {
  if (!b->strided) {
    if (n) f(ctx, b->data + s * b->esize, n);
    return;
  }
  if (s != 0 || n != b->count) lmpio_lua_error(L, MPI_ERR_ARG, "a range of a slice (take a slice of it instead)");
  runs_ctx r = {f, ctx, b->esize};
  lmpio_lua_walk w;
  lmpio_lua_walk_init(&w, &b, 1);
  lmpio_lua_walk_run(&w, runs_row, &r);
}

/* ---- sum -------------------------------------------------------------------- */

/* Pairwise summation: blocks of up to 128 elements summed with 8
 * accumulators (which the compiler can keep in vector registers), blocks
 * combined as a binary tree. */
#define PAIRWISE(name, T, ACC, LOAD)                                           \
  static ACC name(const unsigned char *p, size_t n) {                          \
    if (n <= 128) {                                                            \
      ACC s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                     \
      size_t i = 0;                                                            \
      for (; i + 8 <= n; i += 8)                                               \
        for (int k = 0; k < 8; k++) s[k] += (ACC)LOAD(p, i + k);               \
      ACC r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); \
      for (; i < n; i++) r += (ACC)LOAD(p, i);                                 \
      return r;                                                                \
    }                                                                          \
    size_t h = n / 2;                                                          \
    h -= h % 8;                                                                \
    return name(p, h) + name(p + h * sizeof(T), n - h);                        \
  }
PAIRWISE(sum_f32, float, double, ld_f32)
PAIRWISE(sum_f64, double, double, ld_f64)
PAIRWISE(sum_ld, long double, long double, ld_ld)

/* Integers modulo 2^64 (unsigned arithmetic: no overflow in C). */
#define INTSUM(name, LOAD)                                                     \
  static uint64_t name(const unsigned char *p, size_t n) {                     \
    uint64_t s = 0;                                                            \
    for (size_t i = 0; i < n; i++) s += (uint64_t)LOAD(p, i);                  \
    return s;                                                                  \
  }
INTSUM(sum_i8, ld_i8)
INTSUM(sum_i16, ld_i16)
INTSUM(sum_i32, ld_i32)
INTSUM(sum_i64, ld_i64)
INTSUM(sum_u8, ld_u8)
INTSUM(sum_u16, ld_u16)
INTSUM(sum_u32, ld_u32)
INTSUM(sum_u64, ld_u64)

/***
The sum of elements i..j, computed in C.
The range is that of `array:tostring` (clamped; negative indices count
from the end).  Floats are summed pairwise in double precision (long
double for `LONG_DOUBLE`), as numpy sums: the rounding error grows with
log n.  Integers give an integer, summed modulo 2^64 as Lua's integer
arithmetic wraps; booleans give the number of true elements.
@function array:sum
@param[opt=1] i first element
@param[opt=#a] j last element
@return a number (0, or 0.0 for floats, when the range is empty)
@raise when a holds records or elements Lua cannot read (complex numbers)
@usage local total = a:sum()          -- the whole array
local head = a:sub(1, 10):sum()       -- the same as a:sum(1, 10)
*/
typedef struct {
  int ec;
  size_t esize;
  uint64_t u;
  double d;
  long double ld;
} sum_ctx;

static void sum_run(void *vc, const unsigned char *p, size_t n) {
  sum_ctx *c = vc;
  switch (c->ec) {
  case E_F32: c->d += sum_f32(p, n); break;
  case E_F64: c->d += sum_f64(p, n); break;
  case E_LD: c->ld += sum_ld(p, n); break;
  case E_I8: c->u += sum_i8(p, n); break;
  case E_I16: c->u += sum_i16(p, n); break;
  case E_I32: c->u += sum_i32(p, n); break;
  case E_I64: c->u += sum_i64(p, n); break;
  case E_U8: c->u += sum_u8(p, n); break;
  case E_U16: c->u += sum_u16(p, n); break;
  case E_U32: c->u += sum_u32(p, n); break;
  case E_U64: c->u += sum_u64(p, n); break;
  default:
    for (size_t i = 0; i < n; i++) c->u += (uint64_t)isbool_elem(p + i * c->esize, c->esize);
  }
}

static int a_sum(lua_State *L) {
  lmpio_lua_buffer *b = checknumeric(L, 1);
  size_t s, n;
  lmpio_lua_range(L, b, 2, 3, &s, &n);
  sum_ctx c = {ecode(b), b->esize, 0, 0, 0};
  if (c.ec == E_NONE) return lmpio_lua_argerror(L, 1, "elements of this type cannot be summed");
  runs(L, b, s, n, sum_run, &c);
  if (c.ec == E_F32 || c.ec == E_F64) lua_pushnumber(L, (lua_Number)c.d);
  else if (c.ec == E_LD) lua_pushnumber(L, (lua_Number)c.ld);
  else lua_pushinteger(L, (lua_Integer)c.u);
  return 1;
}

/* ---- min and max ------------------------------------------------------------- */

/* The smallest and largest of n > 0 elements, into *mn and *mx; floats
 * note a NaN in *nan.  Four lanes: four comparison chains that do not wait
 * on each other. */
#define MINMAX(name, T, LOAD, ISNAN)                                           \
  static void name(const unsigned char *p, size_t n, T *mn, T *mx, int *nan) { \
    T lo[4], hi[4];                                                            \
    int bad = ISNAN(LOAD(p, 0));                                               \
    for (int k = 0; k < 4; k++) lo[k] = hi[k] = LOAD(p, 0);                    \
    size_t i = 1;                                                              \
    for (; i + 4 <= n; i += 4)                                                 \
      for (int k = 0; k < 4; k++) {                                            \
        T v = LOAD(p, i + k);                                                  \
        lo[k] = v < lo[k] ? v : lo[k];                                         \
        hi[k] = v > hi[k] ? v : hi[k];                                         \
        bad |= ISNAN(v);                                                       \
      }                                                                        \
    for (; i < n; i++) {                                                       \
      T v = LOAD(p, i);                                                        \
      lo[0] = v < lo[0] ? v : lo[0];                                           \
      hi[0] = v > hi[0] ? v : hi[0];                                           \
      bad |= ISNAN(v);                                                         \
    }                                                                          \
    for (int k = 1; k < 4; k++) {                                              \
      lo[0] = lo[k] < lo[0] ? lo[k] : lo[0];                                   \
      hi[0] = hi[k] > hi[0] ? hi[k] : hi[0];                                   \
    }                                                                          \
    *mn = lo[0];                                                               \
    *mx = hi[0];                                                               \
    *nan = bad;                                                                \
  }
#define NONAN(v) 0
MINMAX(mm_i8, int8_t, ld_i8, NONAN)
MINMAX(mm_i16, int16_t, ld_i16, NONAN)
MINMAX(mm_i32, int32_t, ld_i32, NONAN)
MINMAX(mm_i64, int64_t, ld_i64, NONAN)
MINMAX(mm_u8, uint8_t, ld_u8, NONAN)
MINMAX(mm_u16, uint16_t, ld_u16, NONAN)
MINMAX(mm_u32, uint32_t, ld_u32, NONAN)
MINMAX(mm_u64, uint64_t, ld_u64, NONAN)
MINMAX(mm_f32, float, ld_f32, isnan)
MINMAX(mm_f64, double, ld_f64, isnan)
MINMAX(mm_ld, long double, ld_ld, isnan)

static void pushu64(lua_State *L, uint64_t v) { /* as a[i] reads an UINT64 */
  if (v <= (uint64_t)LUA_MAXINTEGER) lua_pushinteger(L, (lua_Integer)v);
  else lua_pushnumber(L, (lua_Number)v);
}

/* The smallest and largest element so far, of every kind. */
typedef struct {
  int ec, any, nan, all, anytrue;
  size_t esize;
  lua_Integer v[2];
  uint64_t u[2];
  long double f[2];
} mm_ctx;

static void mm_run(void *vc, const unsigned char *p, size_t n) {
  mm_ctx *c = vc;
  int nan = 0, first = !c->any;
  c->any = 1;
  switch (c->ec) {
#define INTS(code, fn, T)                                                      \
  case code: {                                                                 \
    T lo, hi;                                                                  \
    fn(p, n, &lo, &hi, &nan);                                                  \
    if (first || (lua_Integer)lo < c->v[0]) c->v[0] = (lua_Integer)lo;         \
    if (first || (lua_Integer)hi > c->v[1]) c->v[1] = (lua_Integer)hi;         \
    break;                                                                     \
  }
    INTS(E_I8, mm_i8, int8_t)
    INTS(E_I16, mm_i16, int16_t)
    INTS(E_I32, mm_i32, int32_t)
    INTS(E_I64, mm_i64, int64_t)
    INTS(E_U8, mm_u8, uint8_t)
    INTS(E_U16, mm_u16, uint16_t)
    INTS(E_U32, mm_u32, uint32_t)
#undef INTS
  case E_U64: {
    uint64_t lo, hi;
    mm_u64(p, n, &lo, &hi, &nan);
    if (first || lo < c->u[0]) c->u[0] = lo;
    if (first || hi > c->u[1]) c->u[1] = hi;
    break;
  }
#define FLOATS(code, fn, T)                                                    \
  case code: {                                                                 \
    T lo, hi;                                                                  \
    fn(p, n, &lo, &hi, &nan);                                                  \
    if (first || (long double)lo < c->f[0]) c->f[0] = (long double)lo;         \
    if (first || (long double)hi > c->f[1]) c->f[1] = (long double)hi;         \
    c->nan |= nan;                                                             \
    break;                                                                     \
  }
    FLOATS(E_F32, mm_f32, float)
    FLOATS(E_F64, mm_f64, double)
    FLOATS(E_LD, mm_ld, long double)
#undef FLOATS
  default: /* booleans: false < true, min is "all", max is "any" */
    for (size_t i = 0; i < n; i++) {
      int t = isbool_elem(p + i * c->esize, c->esize);
      c->all &= t;
      c->anytrue |= t;
    }
  }
}

/* Pushes min (want & 1) and max (want & 2) of elements i..j (arguments 2
 * and 3) of the array at 1; nil for each when the range is empty. */
static int minmax(lua_State *L, int want) {
  lmpio_lua_buffer *b = checknumeric(L, 1);
  size_t s, n;
  lmpio_lua_range(L, b, 2, 3, &s, &n);
  int k = (want & 1) + ((want & 2) >> 1);
  mm_ctx c;
  memset(&c, 0, sizeof c);
  c.ec = ecode(b);
  c.esize = b->esize;
  c.all = 1;
  if (c.ec == E_NONE) return lmpio_lua_argerror(L, 1, "elements of this type have no order");
  if (n) runs(L, b, s, n, mm_run, &c);
  for (int i = 0; i < 2; i++) {
    if (!(want & (1 << i))) continue;
    if (!c.any) lua_pushnil(L);
    else if (c.ec == E_BOOL) lua_pushboolean(L, i ? c.anytrue : c.all);
    else if (c.ec == E_U64) pushu64(L, c.u[i]);
    else if (c.ec == E_F32 || c.ec == E_F64 || c.ec == E_LD) lua_pushnumber(L, c.nan ? (lua_Number)NAN : (lua_Number)c.f[i]);
    else lua_pushinteger(L, c.v[i]);
  }
  return k;
}

/***
The smallest of elements i..j, computed in C.
NaN when any of them is NaN; for booleans, false when any is false.
@function array:min
@param[opt=1] i first element (the range is that of `array:tostring`)
@param[opt=#a] j last element
@return a number (an integer for integer arrays), or nil for an empty range
@raise when a holds records or elements without an order (complex numbers)
*/
static int a_min(lua_State *L) { return minmax(L, 1); }

/***
The largest of elements i..j, computed in C.
NaN when any of them is NaN; for booleans, true when any is true.
@function array:max
@param[opt=1] i first element (the range is that of `array:tostring`)
@param[opt=#a] j last element
@return a number (an integer for integer arrays), or nil for an empty range
@raise as `array:min`
*/
static int a_max(lua_State *L) { return minmax(L, 2); }

/***
The smallest and the largest of elements i..j, in one pass over them.
@function array:minmax
@param[opt=1] i first element (the range is that of `array:tostring`)
@param[opt=#a] j last element
@return the smallest, as `array:min`
@return the largest, as `array:max`
@raise as `array:min`
@usage local lo, hi = a:minmax()
local counts = a:histogram(lo, hi + 1e-9 * (hi - lo), 64)
*/
static int a_minmax(lua_State *L) { return minmax(L, 3); }

/* ---- histogram ------------------------------------------------------------------- */

enum { LANES = 4 }; /* partial histograms: consecutive equal bins do not wait on each other */

/* Counts the n elements at p into the bins of cnt (LANES partial
 * histograms of nbins each, lane-major when lanes > 1).  x is counted in
 * bin floor((x - lo) * nbins / (hi - lo)) when lo <= x < hi: exact for
 * data and edges that are small integers or their binary fractions. */
/* The bin (from 0) of x in [lo, hi) split into nb bins: (x - lo) * nb / (hi
 * - lo) where that product is finite (the common case, exact at the edges
 * as written), else with each value halved and the fraction taken first, so
 * that no intermediate overflows for any finite lo, hi and x (issue 32:
 * {1.6e308, 1.0e308}:histogram(0, 1.7e308, 2) counted 2 0). */
static inline size_t hist_bin(double x, double lo, double hi, double nb) {
  double w = hi - lo, d = x - lo;
  if (isfinite(w) && d * nb <= DBL_MAX) return (size_t)(d * nb / w);
  double t = (x * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5) * nb;
  return t < nb ? (size_t)t : (size_t)nb;
}

#define HIST(name, LOAD)                                                       \
  static void name(const unsigned char *p, size_t n, double lo, double hi, size_t nbins, int64_t *cnt, \
                   int lanes) {                                                \
    double nb = (double)nbins;                                                 \
    size_t i = 0;                                                              \
    if (lanes == LANES)                                                        \
      for (; i + LANES <= n; i += LANES)                                       \
        for (int l = 0; l < LANES; l++) {                                      \
          double x = (double)LOAD(p, i + l);                                   \
          if (x >= lo && x < hi) {                                             \
            size_t k = hist_bin(x, lo, hi, nb);                                \
            cnt[(size_t)l * nbins + (k < nbins ? k : nbins - 1)]++;            \
          }                                                                    \
        }                                                                      \
    for (; i < n; i++) {                                                       \
      double x = (double)LOAD(p, i);                                           \
      if (x >= lo && x < hi) {                                                 \
        size_t k = hist_bin(x, lo, hi, nb);                                    \
        cnt[k < nbins ? k : nbins - 1]++;                                      \
      }                                                                        \
    }                                                                          \
  }
HIST(hist_i8, ld_i8)
HIST(hist_i16, ld_i16)
HIST(hist_i32, ld_i32)
HIST(hist_i64, ld_i64)
HIST(hist_u8, ld_u8)
HIST(hist_u16, ld_u16)
HIST(hist_u32, ld_u32)
HIST(hist_u64, ld_u64)
HIST(hist_f32, ld_f32)
HIST(hist_f64, ld_f64)
HIST(hist_ld, ld_ld)

typedef struct {
  int code;
  double lo, hi;
  size_t nbins;
  int64_t *cnt;
  int lanes;
} hist_ctx;

static void hist_run(void *vc, const unsigned char *p, size_t n) {
  const hist_ctx *c = vc;
  double dlo = c->lo, dhi = c->hi;
  size_t nbins = c->nbins;
  int64_t *cnt = c->cnt;
  int lanes = c->lanes;
  switch (c->code) {
  case E_I8: hist_i8(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_I16: hist_i16(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_I32: hist_i32(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_I64: hist_i64(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_U8: hist_u8(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_U16: hist_u16(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_U32: hist_u32(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_U64: hist_u64(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_F32: hist_f32(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_F64: hist_f64(p, n, dlo, dhi, nbins, cnt, lanes); break;
  case E_LD: hist_ld(p, n, dlo, dhi, nbins, cnt, lanes); break;
  }
}

/* Above this many bins the partial histograms cost more than they save. */
#define LANE_BINS 4096

/***
Counts the elements in nbins equal bins of [lo, hi), in C.
Element x goes to bin `floor((x - lo) * nbins / (hi - lo)) + 1` (from 1);
elements outside [lo, hi), infinities and NaN are not counted (unlike
numpy, hi itself is outside).  Any finite lo < hi work, up to the whole
range of a double (no intermediate overflows).  With `counts`, the counts are added to it, so that a large
file can be counted piece by piece; the result is an `INT64_T` array,
ready for `comm:allreduce(counts, "sum")`.
@function array:histogram
@tparam number lo the lower edge of the first bin
@tparam number hi the upper edge of the last bin (greater than lo; both finite)
@tparam integer nbins the number of bins (1 or more)
@param[opt] counts an `INT64_T` array of nbins counts to add to (a new
  zeroed one when absent)
@return counts, an array of nbins `INT64_T`
@raise when a holds records or complex numbers, lo and hi are not finite
  with lo < hi, nbins is not positive, or counts is not an `INT64_T` array of
  nbins elements
@usage local counts = lmpio.array(lmpio.INT64_T, 66)
for first = 1, n, chunk do
  local part = fh:read_at_all((first - 1) * 8, math.min(chunk, n - first + 1), lmpio.DOUBLE)
  part:histogram(0, 1, 66, counts)
end
counts = world:allreduce(counts)    -- the job's histogram, on every rank
*/
static int a_histogram(lua_State *L) {
  lmpio_lua_buffer *b = checknumeric(L, 1);
  lua_Number lo = lmpio_lua_checknumber(L, 2), hi = lmpio_lua_checknumber(L, 3);
  lua_Integer nb = lmpio_lua_checkinteger(L, 4);
  if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
    return lmpio_lua_argerror(L, 3, "lo and hi must be finite numbers with lo < hi");
  if (nb < 1 || nb > (lua_Integer)1 << 40) return lmpio_lua_argerror(L, 4, "the number of bins must be positive");
  size_t nbins = (size_t)nb;
  lmpio_lua_buffer *c;
  if (!lua_isnoneornil(L, 5)) {
    c = lmpio_lua_checkflat(L, 5);
    if (c->rec || c->kind != LMPIO_LUA_K_INT || c->esize != 8)
      return lmpio_lua_argerror(L, 5, "counts must be an array of INT64_T");
    if (c->count != nbins)
      return lmpio_lua_argerror(L, 5, lua_pushfstring(L, "counts has %I elements for %I bins", (lua_Integer)c->count, nb));
    if (c->readonly) return lmpio_lua_argerror(L, 5, "counts is read-only");
    lmpio_lua_checkheld(L, c, 1);
    lua_settop(L, 5);
  } else {
    lua_settop(L, 4);
    c = lmpio_lua_newbuffer(L, MPI_INT64_T, nbins);
  }
  int code = ecode(b);
  if (code == E_NONE || code == E_BOOL) return lmpio_lua_argerror(L, 1, "elements of this type cannot be binned");
  int lanes = nbins <= LANE_BINS && b->count >= 4 * nbins ? LANES : 1;
  /* Partial counts in a scratch area: c's memory may be unaligned, and the
   * lanes are added up at the end. */
  int64_t *cnt = lua_newuserdatauv(L, (size_t)lanes * nbins * sizeof *cnt, 0);
  memset(cnt, 0, (size_t)lanes * nbins * sizeof *cnt);
  hist_ctx hc = {code, (double)lo, (double)hi, nbins, cnt, lanes};
  runs(L, b, 0, b->count, hist_run, &hc);
  for (size_t k = 0; k < nbins; k++) {
    int64_t t;
    memcpy(&t, c->data + k * 8, 8);
    for (int l = 0; l < lanes; l++) t += cnt[(size_t)l * nbins + k];
    memcpy(c->data + k * 8, &t, 8);
  }
  lua_pop(L, 1);
  return 1;
}

/* ---- chunks --------------------------------------------------------------------- */

/* The iterator of a:chunks: upvalues the array, the table, the chunk size;
 * the control variable is the first element of the chunk before. */
static int chunk_next(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, lua_upvalueindex(1));
  lmpio_lua_checkheld(L, b, 0);
  lua_Integer size = lua_tointeger(L, lua_upvalueindex(3));
  lua_Integer first = lua_isnil(L, 2) ? 1 : lmpio_lua_checkinteger(L, 2) + size;
  lua_Integer count = (lua_Integer)b->count;
  if (first < 1 || first > count) return 0;
  lua_Integer n = count - first + 1 < size ? count - first + 1 : size;
  lua_pushinteger(L, first);
  lua_pushvalue(L, lua_upvalueindex(2));
  for (lua_Integer k = 0; k < n; k++) {
    size_t i = (size_t)(first - 1 + k);
    lmpio_lua_loadelem(L, b->kind, b->esize, b->strided ? lmpio_lua_slice_at(b, i) : b->data + i * b->esize);
    lua_rawseti(L, -2, k + 1);
  }
  if (n < size) /* the last chunk: the table ends at n (#t == n) */
    for (lua_Integer k = n + 1; k <= size; k++) {
      if (lua_rawgeti(L, -1, k) == LUA_TNIL) {
        lua_pop(L, 1);
        break;
      }
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_rawseti(L, -2, k);
    }
  lua_pushinteger(L, n);
  return 3;
}

/***
Iterates over the elements in pieces: the fastest way for a loop written
in Lua to read every element.
`for first, t, n in a:chunks() do ... end` gives, for each piece, the
index of its first element, a table t holding elements first..first+n-1
as t[1]..t[n] (copied in C, `#t == n`), and n.  The same table is filled
again for every piece: copy what you keep.  Reading `t[k]` is a plain
table access, several times faster than `a[i]` (a metamethod call); a
piece of a few thousand elements stays in the processor's cache.  To
write back, `a:set(first, t)`.
@function array:chunks
@tparam[opt=4096] integer size the number of elements of a piece
@return an iterator, for a generic `for`
@raise when a holds records or elements Lua cannot read, or size is not
  positive
@usage local s = 0
for _, t, n in a:chunks() do
  for k = 1, n do s = s + t[k] * t[k] end
end
*/
static int a_chunks(lua_State *L) {
  lmpio_lua_buffer *b = checknumeric(L, 1);
  (void)b;
  lua_Integer size = lmpio_lua_optinteger(L, 2, 4096);
  if (size < 1 || size > (1 << 26)) return lmpio_lua_argerror(L, 2, "a piece holds 1 to 2^26 elements");
  lua_settop(L, 1);
  lua_createtable(L, (int)size, 0);
  lua_pushinteger(L, size);
  lua_pushcclosure(L, chunk_next, 3);
  return 1;
}

int lmpio_lua_array_ops_open(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"sum", a_sum}, {"min", a_min}, {"max", a_max}, {"minmax", a_minmax},
    {"histogram", a_histogram}, {"chunks", a_chunks}, {NULL, NULL},
  };
  luaL_getmetatable(L, LMPIO_LUA_BUFFER);
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
  return 0;
}
