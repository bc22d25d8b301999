/* Typed memory: arrays, byte buffers and the memory of records, over C
 * memory (metatable "lmpio.buffer"): lmpio.array, lmpio.buffer, a[i],
 * a[{i, j}], #a, a:tostring, a:totable, a:fill, a:set, a:get, a:sub (a view),
 * a:type, a:nbytes, a:valid, pairs(a).  Elsewhere: values in elements
 * (values.c), holds (holds.c), records' fields (records.c), shapes and
 * slices (slice.c, shape.c), array operations (array_ops.c, arith.c).
 *
 * Owned memory lives inside the userdata.  A view (a:sub, a:reshape, a
 * slice, r[i], a record's array field) points into the memory of its root
 * buffer, kept alive in user value 1; records keep their layout, a slice
 * its datatype, in user value 2.  Borrowed memory (a converter's buffers)
 * can be invalidated, after which every access, also through a view,
 * raises "used after the converter returned". */
#include "error.h"
#include "helpers.h"
#include "datatype.h"
#include "buffer.h"
#include "records.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ALIGN 16
typedef lmpio_lua_records records;

lmpio_lua_buffer *lmpio_lua_allocbuffer(lua_State *L, size_t inline_bytes) {
  size_t hdr = (sizeof(lmpio_lua_buffer) + ALIGN - 1) / ALIGN * ALIGN;
  if (inline_bytes > (size_t)-1 - hdr - ALIGN) lmpio_lua_error(L, MPI_ERR_ARG, "buffer too large");
  lmpio_lua_buffer *b = lua_newuserdatauv(L, hdr + (inline_bytes ? inline_bytes + ALIGN : 0), 2);
  memset(b, 0, sizeof *b);
  if (inline_bytes) {
    uintptr_t p = (uintptr_t)b + hdr;
    p = (p + ALIGN - 1) / ALIGN * ALIGN;
    b->data = (unsigned char *)p;
    memset(b->data, 0, inline_bytes);
  }
  b->valid = 1;
  b->type = MPI_BYTE;
  b->esize = 1;
  b->kind = LMPIO_LUA_K_UINT;
  luaL_setmetatable(L, LMPIO_LUA_BUFFER);
  return b;
}

/* Whether b's memory may be used (a view: also its root's). */
int lmpio_lua_usable(const lmpio_lua_buffer *b) {
  return b->valid && (!b->root || b->root->valid);
}

lmpio_lua_buffer *lmpio_lua_tobuffer(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LMPIO_LUA_BUFFER);
}

lmpio_lua_buffer *lmpio_lua_checkbuffer(lua_State *L, int idx) {
  lmpio_lua_buffer *b = lmpio_lua_checkudata(L, idx, LMPIO_LUA_BUFFER);
  if (!lmpio_lua_usable(b)) lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
  return b;
}

lmpio_lua_buffer *lmpio_lua_checkflat(lua_State *L, int idx) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  if (b->strided)
    lmpio_lua_argerror(L, idx, "a slice is not contiguous memory (copy it into an array first: a:copy(slice))");
  return b;
}

/* The address of element i (0-based, in storage order) of b. */
static unsigned char *elemat(const lmpio_lua_buffer *b, size_t i) {
  return b->strided ? lmpio_lua_slice_at(b, i) : b->data + i * b->esize;
}

MPI_Count lmpio_lua_type_size(lua_State *L, MPI_Datatype t) {
  MPI_Count n = 0;
  lmpio_lua_checkmpi(L, MPI_Type_size_x(t, &n), "MPI_Type_size_x");
  return n;
}

/* Bytes from the buffer's start that count items of type span (their data
 * must start at or after 0); LMPIO_LUA_SPAN_BELOW when they reach below 0,
 * LMPIO_LUA_SPAN_HUGE when the span does not fit a 64-bit size. */
long long lmpio_lua_typespan(lua_State *L, int count, MPI_Datatype t) {
  MPI_Count lb, ext, tlb, text;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(t, &lb, &ext), "MPI_Type_get_extent_x");
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(t, &tlb, &text), "MPI_Type_get_true_extent_x");
  (void)lb;
  if (count == 0 || text == 0) return 0;
  long long first = (long long)tlb, last, hi;
  if (!lmpio_lua_mul_ok((long long)count - 1, (long long)ext, &last) || !lmpio_lua_add_ok(last, first, &last))
    return LMPIO_LUA_SPAN_HUGE;
  long long lo = first < last ? first : last;
  if (!lmpio_lua_add_ok(first > last ? first : last, (long long)text, &hi)) return LMPIO_LUA_SPAN_HUGE;
  /* The core moves a derived type's bytes where its typemap puts them, and
   * Open MPI's true bounds are not always those: hvector(100, 3, -1,
   * MPI_BYTE) has its bytes at -99..2 and reports true lb 0, true extent
   * 300 (a read into a buffer sized by that answer wrote the 99 bytes
   * before the buffer, over its header: spec/fuzz_module.lua seed 32).  So
   * the core's bounds count too (cached with its typemap: no walk). */
  MPI_Aint dlb, dub, dext;
  if (!lmpio_lua_isnamed(t) && lmpio_type_data_bounds(t, &dlb, &dub, &dext) == MPI_SUCCESS && dub > dlb) {
    long long l2 = (long long)dlb, h2 = (long long)dub, step;
    if (!lmpio_lua_mul_ok((long long)count - 1, (long long)dext, &step) || !lmpio_lua_add_ok(l2, step, &l2) ||
        !lmpio_lua_add_ok(h2, step, &h2))
      return LMPIO_LUA_SPAN_HUGE;
    if (dlb < l2) l2 = dlb;
    if (dub > h2) h2 = dub;
    if (l2 < lo) lo = l2;
    if (h2 > hi) hi = h2;
  }
  return lo < 0 ? LMPIO_LUA_SPAN_BELOW : hi;
}

lmpio_lua_buffer *lmpio_lua_newbuffer(lua_State *L, MPI_Datatype type, size_t count) {
  int kind = lmpio_lua_typekind(type);
  if (lmpio_lua_isnamed(type)) {
    MPI_Count es = lmpio_lua_type_size(L, type);
    if (es <= 0) lmpio_lua_error(L, MPI_ERR_ARG, "datatype has no data");
    if (count > ((size_t)-1 / 2) / (size_t)es) lmpio_lua_error(L, MPI_ERR_ARG, "buffer too large");
    lmpio_lua_buffer *b = lmpio_lua_allocbuffer(L, count * (size_t)es);
    b->type = type;
    b->esize = (size_t)es;
    b->count = count;
    b->nbytes = count * (size_t)es;
    b->kind = kind;
    return b;
  }
  /* A derived type: the bytes its count instances span. */
  if (count > INT_MAX) lmpio_lua_error(L, MPI_ERR_ARG, "count too large");
  long long need = lmpio_lua_typespan(L, (int)count, type);
  if (need == LMPIO_LUA_SPAN_HUGE || (need >= 0 && (unsigned long long)need > (size_t)-1 / 2)) lmpio_lua_error(L, MPI_ERR_ARG, "buffer too large");
  if (need < 0) lmpio_lua_error(L, MPI_ERR_ARG, "datatype reaches before the start of the buffer");
  MPI_Count lb, ext, tlb, text;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(type, &lb, &ext), "MPI_Type_get_extent_x");
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(type, &tlb, &text), "MPI_Type_get_true_extent_x");
  (void)lb;
  lmpio_lua_buffer *b = lmpio_lua_allocbuffer(L, (size_t)need);
  b->count = b->nbytes = (size_t)need;
  b->itemext = (long long)ext;
  b->itemtail = text > 0 ? (long long)tlb + (long long)text : 0; /* fits: need holds it */
  return b;
}

lmpio_lua_buffer *lmpio_lua_pushborrowed(lua_State *L, void *data, size_t count,
                                         MPI_Datatype type, int readonly) {
  lmpio_lua_buffer *b = lmpio_lua_allocbuffer(L, 0);
  MPI_Count es = lmpio_lua_isnamed(type) ? lmpio_lua_type_size(L, type) : 1;
  if (es <= 0) es = 1;
  b->data = data;
  b->type = lmpio_lua_isnamed(type) ? type : MPI_BYTE;
  b->esize = (size_t)es;
  b->count = count;
  b->nbytes = count * (size_t)es;
  b->kind = lmpio_lua_isnamed(type) ? lmpio_lua_typekind(type) : LMPIO_LUA_K_UINT;
  b->borrowed = 1;
  b->readonly = readonly;
  return b;
}

void lmpio_lua_invalidate(lmpio_lua_buffer *b) {
  b->valid = 0;
  b->data = NULL;
  b->nbytes = b->count = 0;
}

void lmpio_lua_readdone(lmpio_lua_buffer *b, lua_Integer n) {
  if (!b || !b->fresh) return;
  b->fresh = 0;
  if (n < 0) n = 0;
  if ((size_t)n >= b->count && !b->itemtail) return;
  if (b->itemtail) { /* bytes of a derived type: the span of n items */
    long long nb = 0;
    if (n && (!lmpio_lua_mul_ok((long long)n - 1, b->itemext, &nb) || !lmpio_lua_add_ok(nb, b->itemtail, &nb)))
      return; /* more than the buffer: keep it whole */
    if (nb >= 0 && (unsigned long long)nb < b->nbytes) b->count = b->nbytes = (size_t)nb;
    return;
  }
  b->count = (size_t)n;
  b->nbytes = (size_t)n * b->esize;
}

/* ---- views ----------------------------------------------------------------- */

/* Pushes a buffer of count elements (type, kind, esize, records rec) at data,
 * inside the memory of b (at stack index bidx), which it keeps alive. */
lmpio_lua_buffer *lmpio_lua_pushview_of(lua_State *L, int bidx, const lmpio_lua_buffer *b, unsigned char *data,
                                  size_t count, size_t esize, MPI_Datatype type, int kind, const records *rec) {
  bidx = lua_absindex(L, bidx);
  lmpio_lua_buffer *v = lmpio_lua_allocbuffer(L, 0);
  v->data = count ? data : NULL;
  v->count = count;
  v->esize = esize;
  v->nbytes = count * esize;
  v->type = type;
  v->kind = kind;
  v->rec = rec;
  v->borrowed = b->borrowed;
  v->readonly = b->readonly;
  v->root = b->root ? b->root : (lmpio_lua_buffer *)b;
  if (b->root) lua_getiuservalue(L, bidx, 1);
  else lua_pushvalue(L, bidx);
  lua_setiuservalue(L, -2, 1);
  if (rec) {
    lua_getiuservalue(L, bidx, 2);
    lua_setiuservalue(L, -2, 2);
  }
  return v;
}

lmpio_lua_buffer *lmpio_lua_pushview(lua_State *L, int bidx, const lmpio_lua_buffer *b, unsigned char *data,
                                     size_t count) {
  return lmpio_lua_pushview_of(L, bidx, b, data, count, b->esize, b->type, b->kind, NULL);
}

/* Pushes a view of elements [start, start + n) of b (at bidx). */
static lmpio_lua_buffer *subview(lua_State *L, int bidx, const lmpio_lua_buffer *b, size_t start, size_t n) {
  return lmpio_lua_pushview_of(L, bidx, b, b->data ? b->data + start * b->esize : NULL, n, b->esize, b->type, b->kind,
                  b->rec);
}

/* ---- elements ----------------------------------------------------------- */

static const char *elemname(const lmpio_lua_buffer *b) {
  if (b->rec) return "record";
  const char *n = lmpio_lua_typename(b->type);
  return n ? n : "?";
}

/* Pushes element i of b (at stack index bidx): its value, or for records a
 * view of record i (whose string keys are its fields). */
static void pushelem(lua_State *L, int bidx, const lmpio_lua_buffer *b, size_t i) {
  if (b->rec) {
    subview(L, bidx, b, i, 1)->isref = 1;
    return;
  }
  if (!lmpio_lua_loadelem(L, b->kind, b->esize, elemat(b, i)))
    lmpio_lua_error(L, MPI_ERR_ARG, "elements of type %s cannot be read from Lua (use tostring)", elemname(b));
}

/* Stores the value at vidx into element i of b. */
static void setelem(lua_State *L, const lmpio_lua_buffer *b, size_t i, int vidx) {
  if (b->rec) {
    b->rec->ops->set(L, b, i, vidx);
    return;
  }
  vidx = lua_absindex(L, vidx); /* before the message is pushed (issue 32: it named itself) */
  int st = lmpio_lua_storeelem(L, b->kind, b->esize, elemat(b, i), vidx);
  if (st != LMPIO_LUA_ST_OK)
    lmpio_lua_storeerror(L, st, b->kind, b->esize, vidx,
               lua_pushfstring(L, "element %I of an array of %s", (lua_Integer)i + 1, elemname(b)));
}

/* ---- shapes ----------------------------------------------------------------- */

/* The dimensions of b (one of count elements when it has no shape). */
static int getdims(const lmpio_lua_buffer *b, size_t *dims) {
  if (b->ndim == 0) {
    dims[0] = b->count;
    return 1;
  }
  memcpy(dims, b->dims, (size_t)b->ndim * sizeof *dims);
  return b->ndim;
}

/* The 0-based storage position of the element at the 1-based indices
 * ix[0..n-1]: one index is a position in storage order, ndim indices
 * address the shape (C order: last index fastest; Fortran: first). */
static size_t position(lua_State *L, const lmpio_lua_buffer *b, const lua_Integer *ix, int n) {
  size_t dims[LMPIO_LUA_MAXDIM];
  int nd = getdims(b, dims);
  if (n == 1) {
    if (ix[0] < 1 || (lua_Unsigned)ix[0] > b->count)
      lmpio_lua_error(L, MPI_ERR_ARG, "index %I out of range 1..%I", ix[0], (lua_Integer)b->count);
    return (size_t)ix[0] - 1;
  }
  if (n != nd) lmpio_lua_error(L, MPI_ERR_ARG, "%d indices for an array of %d dimensions", n, nd);
  for (int k = 0; k < n; k++)
    if (ix[k] < 1 || (lua_Unsigned)ix[k] > dims[k])
      lmpio_lua_error(L, MPI_ERR_ARG, "index %d is %I, out of range 1..%I", k + 1, ix[k], (lua_Integer)dims[k]);
  size_t pos = 0;
  if (b->forder)
    for (int k = n - 1; k >= 0; k--) pos = pos * dims[k] + (size_t)(ix[k] - 1);
  else
    for (int k = 0; k < n; k++) pos = pos * dims[k] + (size_t)(ix[k] - 1);
  return pos;
}

/* The position of the indices given as arguments first..last. */
size_t lmpio_lua_argposition(lua_State *L, const lmpio_lua_buffer *b, int first, int last) {
  lua_Integer ix[LMPIO_LUA_MAXDIM];
  int n = last - first + 1;
  if (n < 1) lmpio_lua_error(L, MPI_ERR_ARG, "missing index");
  if (n > LMPIO_LUA_MAXDIM) lmpio_lua_error(L, MPI_ERR_ARG, "too many indices (at most %d)", LMPIO_LUA_MAXDIM);
  for (int k = 0; k < n; k++) ix[k] = lmpio_lua_checkinteger(L, first + k);
  return position(L, b, ix, n);
}

/* The position of the indices in the table at tidx ({i, j, k}). */
static size_t tableposition(lua_State *L, const lmpio_lua_buffer *b, int tidx) {
  lua_Integer ix[LMPIO_LUA_MAXDIM];
  lua_Integer n = (lua_Integer)lua_rawlen(L, tidx);
  if (n < 1 || n > LMPIO_LUA_MAXDIM) lmpio_lua_error(L, MPI_ERR_ARG, "an index table holds 1 to %d indices", LMPIO_LUA_MAXDIM);
  for (lua_Integer k = 0; k < n; k++) {
    int isnum;
    lua_rawgeti(L, tidx, k + 1);
    ix[k] = lua_tointegerx(L, -1, &isnum);
    if (!isnum) lmpio_lua_error(L, MPI_ERR_ARG, "index %d is not an integer", (int)k + 1);
    lua_pop(L, 1);
  }
  return position(L, b, ix, (int)n);
}

/* Whether the option at idx names Fortran order ("F", "f", "fortran",
 * "Fortran") rather than C order ("C", "c"; the default). */
int lmpio_lua_checkorder(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  const char *s = lmpio_lua_checkstring(L, idx);
  if (!strcmp(s, "C") || !strcmp(s, "c")) return 0;
  if (!strcmp(s, "F") || !strcmp(s, "f") || !strcmp(s, "fortran") || !strcmp(s, "Fortran")) return 1;
  return lmpio_lua_argerror(L, idx, lua_pushfstring(L, "order must be \"C\" or \"F\" (\"fortran\"), got \"%s\"", s));
}

/* Reads the shape (a table of 1..LMPIO_LUA_MAXDIM sizes) at idx into dims;
 * returns the number of dimensions and the product in *total. */
int lmpio_lua_checkshape(lua_State *L, int idx, size_t *dims, size_t *total) {
  lmpio_lua_checkluatype(L, idx, LUA_TTABLE);
  lua_Integer n = lmpio_lua_len(L, idx);
  if (n < 1 || n > LMPIO_LUA_MAXDIM) lmpio_lua_argerror(L, idx, "a shape has 1 to 8 dimensions");
  size_t t = 1;
  for (lua_Integer k = 0; k < n; k++) {
    int isnum;
    lua_geti(L, idx, k + 1);
    lua_Integer d = lua_tointegerx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || d < 0) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "dimension %d is not a size", (int)k + 1));
    if (d && t > ((size_t)-1 / 2) / (size_t)d) lmpio_lua_argerror(L, idx, "shape too large");
    dims[k] = (size_t)d;
    t *= (size_t)d;
  }
  *total = t;
  return (int)n;
}

/* ---- metamethods ---------------------------------------------------------- */

static int methods(lua_State *L) {
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

/* The buffer at argument 1 of __index and __newindex, or NULL: its
 * metatable is upvalue 1 of the metamethod (lmpio_lua_checkudata's registry
 * lookup costs a sixth of a[i]).  Leaves the metatable on the stack. */
static lmpio_lua_buffer *ours(lua_State *L) {
  lmpio_lua_buffer *b = lua_touserdata(L, 1);
  return b && lua_getmetatable(L, 1) && lua_rawequal(L, -1, lua_upvalueindex(1)) ? b : NULL;
}

/***
Reads an element: `a[i]` (position i in storage order, from 1; nil outside
1..#a), `a[{i, j, k}]` (one index per dimension of a shaped array; raises
outside the shape), `r[i].x` (field x of record i; an array field is a view).
String keys are the methods, and for one record (`r[i]`) its fields first.
Each `a[i]` is a call of this metamethod, about four times the cost of
reading a Lua table: to visit every element from Lua, `a:chunks()` is
faster, and the bulk methods (`a:sum`, `a:histogram`, ...) run in C.
@function array:__index
@param k an integer, a table of indices, or a name
@return the value (for records: record i, a view of it)
@raise when a is a converter's buffer used after the converter returned, or
 the elements are not readable from Lua (complex types: use tostring)
*/
static int b_index(lua_State *L) {
  const lmpio_lua_buffer *fast = lua_isinteger(L, 2) ? ours(L) : NULL;
  if (fast) { /* a[i]: the hot path of loops */
    lua_Integer ix = lua_tointeger(L, 2);
    if (!lmpio_lua_usable(fast)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
    if (ix < 1 || (lua_Unsigned)ix > fast->count) return 0;
    lmpio_lua_checkheld_elems(L, fast, (size_t)ix - 1, 1, 0);
    if (fast->kind == LMPIO_LUA_K_F64 && !fast->rec && !fast->strided) {
      double v;
      memcpy(&v, fast->data + (size_t)(ix - 1) * sizeof v, sizeof v);
      lua_pushnumber(L, (lua_Number)v);
    } else {
      pushelem(L, 1, fast, (size_t)ix - 1);
    }
    return 1;
  }
  lmpio_lua_buffer *b = lmpio_lua_checkudata(L, 1, LMPIO_LUA_BUFFER);
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: {
    int isnum;
    lua_Integer i = lua_tointegerx(L, 2, &isnum);
    if (!isnum) return 0;
    if (!lmpio_lua_usable(b)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
    if (i < 1 || (lua_Unsigned)i > b->count) return 0;
    lmpio_lua_checkheld_elems(L, b, (size_t)i - 1, 1, 0);
    pushelem(L, 1, b, (size_t)i - 1);
    return 1;
  }
  case LUA_TSTRING:
    if (b->isref) {
      if (!lmpio_lua_usable(b)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
      if (b->rec->ops->index(L, b)) return 1; /* a field (lua/records.c) */
    }
    return methods(L);
  case LUA_TTABLE:
    if (!lmpio_lua_usable(b)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
    size_t pos = tableposition(L, b, 2);
    lmpio_lua_checkheld_elems(L, b, pos, 1, 0);
    pushelem(L, 1, b, pos);
    return 1;
  }
  return methods(L);
}

/***
Stores an element: `a[i] = v`, `a[{i, j, k}] = v`, `r[i].x = v`,
`r[i] = {x = 1, id = 2}` (fields not given are zeroed).  The value is
checked against the element type: integer types take integers (booleans as
0/1, floats with an integral value) within their C range; `FLOAT` takes any
number of magnitude up to FLT_MAX, NaN and infinities; `DOUBLE` and
`LONG_DOUBLE` any number; `C_BOOL` a boolean or a number.  A refused store
leaves the element unchanged.
@function array:__newindex
@param k an index in 1..#a, a table of indices, or a field name of a record
@param v the value
@raise "index i out of range 1..n"; "element i of a T array: v is out of
 range (lo..hi)"; "... needs an integer, got ..."; "attempt to write to a
 read-only buffer"; "record has no field 'x'"
*/
static int b_newindex(lua_State *L) {
  lmpio_lua_buffer *fast = lua_isinteger(L, 2) && lua_type(L, 3) == LUA_TNUMBER ? ours(L) : NULL;
  if (fast && fast->kind == LMPIO_LUA_K_F64 && !fast->rec && !fast->strided && !fast->readonly && lmpio_lua_usable(fast) &&
      !LMPIO_LUA_HELD(fast)) { /* a[i] = x */
    lua_Integer ix = lua_tointeger(L, 2);
    if (ix >= 1 && (lua_Unsigned)ix <= fast->count) {
      double v = (double)lua_tonumber(L, 3);
      memcpy(fast->data + (size_t)(ix - 1) * sizeof v, &v, sizeof v);
      return 0;
    }
  }
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t pos;
  int isnum;
  lua_Integer i = lua_tointegerx(L, 2, &isnum);
  if (isnum) {
    if (i < 1 || (lua_Unsigned)i > b->count)
      return lmpio_lua_error(L, MPI_ERR_ARG, "index %I out of range 1..%I", i, (lua_Integer)b->count);
    pos = (size_t)i - 1;
  } else if (lua_type(L, 2) == LUA_TSTRING && b->isref) {
    b->rec->ops->newindex(L, b); /* lua/records.c */
    return 0;
  } else if (lua_type(L, 2) == LUA_TTABLE) {
    pos = tableposition(L, b, 2);
  } else {
    return lmpio_lua_error(L, MPI_ERR_ARG, "%s arrays only have integer keys", elemname(b));
  }
  if (b->readonly) return lmpio_lua_error(L, MPI_ERR_BUFFER, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld_elems(L, b, pos, 1, 1);
  setelem(L, b, pos, 3);
  return 0;
}

/***
The number of elements (records for records; bytes for a buffer of a derived
type).  After a read from a count, the number of items read.
@function array:__len
@return the count
*/
static int b_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lmpio_lua_checkbuffer(L, 1)->count);
  return 1;
}

/***
A description: "lmpio.array(DOUBLE, 4): 0x...", with the shape and order of
a shaped array, "view" for views, "lmpio.buffer(n)", "lmpio.records(n)".
@function array:__tostring
@return a string
*/
static int b_tostring_meta(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkudata(L, 1, LMPIO_LUA_BUFFER);
  const char *how = b->strided ? " slice" : b->root ? " view" : b->borrowed ? " borrowed" : "";
  if (!lmpio_lua_usable(b)) {
    lua_pushliteral(L, "lmpio.buffer (used after the converter returned)");
  } else if (b->rec) {
    if (b->isref) lua_pushfstring(L, "lmpio.record: %p", (void *)b->data);
    else lua_pushfstring(L, "lmpio.records(%I)%s: %p", (lua_Integer)b->count, how, (void *)b);
  } else if (b->type == MPI_BYTE && b->esize == 1 && !b->ndim) {
    lua_pushfstring(L, "lmpio.buffer(%I)%s: %p", (lua_Integer)b->count, how, (void *)b);
  } else if (b->ndim) {
    luaL_Buffer s;
    luaL_buffinit(L, &s);
    for (int k = 0; k < b->ndim; k++) {
      if (k) luaL_addchar(&s, 'x');
      lua_pushinteger(L, (lua_Integer)b->dims[k]);
      luaL_addvalue(&s);
    }
    luaL_pushresult(&s);
    lua_pushfstring(L, "lmpio.array(%s, %I, shape %s %s)%s: %p", elemname(b), (lua_Integer)b->count,
                    lua_tostring(L, -1), b->forder ? "F" : "C", how, (void *)b);
  } else {
    lua_pushfstring(L, "lmpio.array(%s, %I)%s: %p", elemname(b), (lua_Integer)b->count, how, (void *)b);
  }
  return 1;
}

static int b_next(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  lua_Integer i = lmpio_lua_checkinteger(L, 2);
  if (i < 0 || (lua_Unsigned)i >= b->count) return 0;
  lmpio_lua_checkheld_elems(L, b, (size_t)i, 1, 0);
  i++;
  lua_pushinteger(L, i);
  pushelem(L, 1, b, (size_t)i - 1);
  return 2;
}

/***
Iterates over the elements in storage order: `for i, v in pairs(a)`.
`ipairs(a)` does the same.  For records, `v` is record `i` (a view).
@function array:__pairs
@return an iterator, a and 0
@raise when a is a converter's buffer used after the converter returned
*/
static int b_pairs(lua_State *L) {
  lmpio_lua_checkbuffer(L, 1);
  lua_pushcfunction(L, b_next);
  lua_pushvalue(L, 1);
  lua_pushinteger(L, 0);
  return 3;
}

/* ---- methods --------------------------------------------------------------- */

/* Element range [i, j] (1-based, inclusive, negative from the end, clamped
 * to the array as string.sub does) -> start, n. */
static void range(lua_State *L, const lmpio_lua_buffer *b, int ai, int aj, size_t *start, size_t *n) {
  lua_Integer cnt = (lua_Integer)b->count;
  lua_Integer i = lmpio_lua_optinteger(L, ai, 1), j = lmpio_lua_optinteger(L, aj, cnt);
  if (i < 0) i += cnt + 1;
  if (j < 0) j += cnt + 1;
  if (i < 1) i = 1;
  if (j > cnt) j = cnt;
  *start = (size_t)(i - 1);
  *n = j >= i ? (size_t)(j - i + 1) : 0;
}

void lmpio_lua_range(lua_State *L, const lmpio_lua_buffer *b, int ai, int aj, size_t *start, size_t *n) {
  range(L, b, ai, aj, start, n);
}

/***
The raw bytes of elements i..j (records: whole records, padding included).
i and j count from 1, negative ones from the end, and are clamped to the
array as `string.sub` clamps.
@function array:tostring
@param[opt=1] i first element
@param[opt=#a] j last element
@return a string of (j - i + 1) * element size bytes
@raise when a is a converter's buffer used after the converter returned
*/
static int b_tostring(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t s, n;
  range(L, b, 2, 3, &s, &n);
  lmpio_lua_checkheld_elems(L, b, s, n, 0);
  if (b->strided) {
    luaL_Buffer out;
    luaL_buffinit(L, &out);
    for (size_t k = 0; k < n; k++) luaL_addlstring(&out, (const char *)elemat(b, s + k), b->esize);
    luaL_pushresult(&out);
    return 1;
  }
  lua_pushlstring(L, n ? (const char *)b->data + s * b->esize : "", n * b->esize);
  return 1;
}

/***
The values of elements i..j as a new Lua table (a copy), in storage order.
The range is that of `array:tostring`.  For records, each record is a table
of its fields (array fields as tables).
@function array:totable
@param[opt=1] i first element
@param[opt=#a] j last element
@return a sequence of j - i + 1 values
@raise when the elements are not readable from Lua (complex types)
*/
static int b_totable(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t s, n;
  range(L, b, 2, 3, &s, &n);
  lmpio_lua_checkheld_elems(L, b, s, n, 0);
  if (n > INT_MAX) return lmpio_lua_error(L, MPI_ERR_ARG, "too many elements for a table");
  lua_createtable(L, (int)n, 0);
  for (size_t k = 0; k < n; k++) {
    if (b->rec) b->rec->ops->totable(L, b, s + k);
    else pushelem(L, 1, b, s + k);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  return 1;
}

/***
Sets elements i..j to v (the range is that of `array:tostring`).
The value is checked once, as `a[i] = v` checks it, then copied in C.
@function array:fill
@param v the value (for records, a table of fields)
@param[opt=1] i first element
@param[opt=#a] j last element
@return a
@raise when v does not fit the element type, or a is read-only
*/
static int b_fill(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  lmpio_lua_checkany(L, 2);
  if (b->readonly) return lmpio_lua_error(L, MPI_ERR_BUFFER, "attempt to write to a read-only buffer");
  size_t s, n;
  range(L, b, 3, 4, &s, &n);
  lmpio_lua_checkheld_elems(L, b, s, n, 1);
  lua_settop(L, 2);
  if (n) {
    unsigned char *p = elemat(b, s);
    setelem(L, b, s, 2);
    for (size_t k = 1; k < n; k++) memcpy(elemat(b, s + k), p, b->esize);
  }
  lua_settop(L, 1);
  return 1;
}

/***
Stores values.  `a:set(i..., v)` with a single value v stores one element,
addressed by one index (a position in storage order) or, for a shaped
array, by one index per dimension.  With a table of values (for records: a
list of record tables) or a string of raw bytes (a whole number of
elements), copies them into consecutive elements from there.
@function array:set
@param ... the index or indices, then the value(s)
@return a
@raise when an index is out of range, the values do not fit in the array or
 their element type, or a is read-only
*/
static int b_set(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  int top = lua_gettop(L);
  if (top < 3) return lmpio_lua_error(L, MPI_ERR_ARG, "set needs an index and a value");
  if (b->readonly) return lmpio_lua_error(L, MPI_ERR_BUFFER, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld(L, b, 1);
  int t = lua_type(L, top), bulk = t == LUA_TSTRING;
  lmpio_lua_buffer *src = top == 3 && !b->rec ? lmpio_lua_tobuffer(L, top) : NULL;
  if (src) {
    if (!lmpio_lua_usable(src)) return lmpio_lua_error(L, MPI_ERR_BUFFER, "buffer used after the converter returned");
    bulk = 1;
  }
  if (t == LUA_TTABLE) { /* for records, one record table or a list of them */
    bulk = !b->rec || lua_rawgeti(L, top, 1) == LUA_TTABLE;
    lua_settop(L, top);
  }
  size_t start;
  if (bulk && top == 3) { /* where the copy starts, up to #a + 1 */
    lua_Integer i = lmpio_lua_checkinteger(L, 2);
    if (i < 1) return lmpio_lua_argerror(L, 2, "index must be at least 1");
    if ((lua_Unsigned)i - 1 > b->count) return lmpio_lua_argerror(L, 3, "does not fit in the buffer");
    start = (size_t)i - 1;
  } else {
    start = lmpio_lua_argposition(L, b, 2, top - 1);
  }
  if (!bulk) {
    setelem(L, b, start, top);
  } else if (t == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, top, &len);
    if (len % b->esize) return lmpio_lua_argerror(L, top, "not a whole number of elements");
    if (len / b->esize > b->count - start) return lmpio_lua_argerror(L, top, "does not fit in the buffer");
    for (size_t k = 0; b->strided && k < len / b->esize; k++) memcpy(elemat(b, start + k), s + k * b->esize, b->esize);
    if (len && !b->strided) memcpy(b->data + start * b->esize, s, len);
  } else if (src) { /* an array: its elements, in storage order */
    if (src->count > b->count - start) return lmpio_lua_argerror(L, top, "does not fit in the buffer");
    if (src->type != b->type || src->rec || b->rec)
      return lmpio_lua_argerror(L, top, "an array of another element type (set copies elements as they are)");
    lmpio_lua_checkheld(L, src, 0);
    if (!src->strided && !b->strided) {
      if (src->count) memmove(b->data + start * b->esize, src->data, src->count * b->esize);
    } else {
      for (size_t k = 0; k < src->count; k++) memmove(elemat(b, start + k), elemat(src, k), b->esize);
    }
  } else {
    lua_Integer n = lmpio_lua_len(L, top);
    if ((lua_Unsigned)n > b->count - start) return lmpio_lua_argerror(L, top, "does not fit in the buffer");
    for (lua_Integer k = 0; k < n; k++) {
      lua_geti(L, top, k + 1);
      setelem(L, b, start + (size_t)k, -1);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 1);
  return 1;
}

/***
The element at an index: one index is a position in storage order (as
`a[i]`), one index per dimension addresses a shaped array (as `a[{i, j}]`).
Unlike `a[i]`, an index out of range raises.
@function array:get
@param ... the index or indices (from 1)
@return the value (for records: a view of the record)
@raise when an index is out of range or the count of indices is wrong
*/
static int b_get(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t pos = lmpio_lua_argposition(L, b, 2, lua_gettop(L));
  lmpio_lua_checkheld_elems(L, b, pos, 1, 0);
  pushelem(L, 1, b, pos);
  return 1;
}

/***
A view of elements i..j: an array (or records) sharing a's memory, without
a copy.  Reading into the view fills those elements of a; it can be the
data argument of any read or write (e.g. to read into the middle of an
array without an hindexed datatype).  The view keeps a alive.  Negative
indices count from the end; the range must lie within a (j = i - 1 gives an
empty view).  The view has no shape.
@function array:sub
@param i first element
@param[opt=#a] j last element
@return the view
@raise when the range is out of bounds
*/
static int b_sub(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  if (b->strided) return lmpio_lua_error(L, MPI_ERR_ARG, "sub of a slice: take a slice of it (a:slice)");
  lua_Integer cnt = (lua_Integer)b->count;
  lua_Integer i0 = lmpio_lua_checkinteger(L, 2), j0 = lmpio_lua_optinteger(L, 3, cnt);
  lua_Integer i = i0 < 0 ? i0 + cnt + 1 : i0, j = j0 < 0 ? j0 + cnt + 1 : j0;
  if (i < 1 || j > cnt || j < i - 1)
    return lmpio_lua_error(L, MPI_ERR_ARG, "sub(%I, %I) out of bounds: the array has %I elements", i0, j0, cnt);
  subview(L, 1, b, (size_t)(i - 1), (size_t)(j - i + 1));
  return 1;
}

/***
The element type: a predefined datatype, or for records the record datatype
(as made by `lmpio.recordtype`).
@function array:type
@return a datatype
*/
static int b_type(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  if (b->rec) {
    lua_getiuservalue(L, 1, 2);
    lua_getiuservalue(L, -1, 1);
  } else {
    lmpio_lua_pushtype(L, b->type, 0);
  }
  return 1;
}

/***
The bytes of a's memory (#a times the element size, or the record extent).
@function array:nbytes
@return the size in bytes
*/
static int b_nbytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lmpio_lua_checkbuffer(L, 1)->nbytes);
  return 1;
}

/***
Whether a may be used: false for a converter's buffer (or a view of one)
after the converter returned.
@function array:valid
@return a boolean
*/
static int b_valid(lua_State *L) {
  lua_pushboolean(L, lmpio_lua_usable(lmpio_lua_checkudata(L, 1, LMPIO_LUA_BUFFER)));
  return 1;
}

/* ---- arrays as data of messages and collectives ------------------------- */

lmpio_lua_buffer *lmpio_lua_toarray(lua_State *L, int idx, int *code) {
  if (!lmpio_lua_tobuffer(L, idx)) return NULL;
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  lmpio_lua_checkheld(L, b, 0);
  if (b->rec)
    lmpio_lua_argerror(L, idx, "records cannot be sent (send r:tostring() and rebuild them with lmpio.records)");
  int c = lmpio_lua_typecode(b->type);
  if (c < 0) lmpio_lua_argerror(L, idx, "only arrays of predefined datatypes can be sent");
  *code = c;
  return b;
}

void lmpio_lua_spanof(lua_State *L, int idx, const lmpio_lua_buffer *b, lmpio_lua_span *s) {
  if (b->strided) {
    s->ptr = b->data;
    s->count = b->count ? 1 : 0;
    s->type = b->dtype;
    return;
  }
  if (b->count > INT_MAX) lmpio_lua_argerror(L, idx, "more than 2^31 - 1 elements in one call");
  s->ptr = b->data ? (void *)b->data : (void *)b;
  s->count = (int)b->count;
  s->type = b->type;
}

lmpio_lua_buffer *lmpio_lua_toarray_flat(lua_State *L, int idx, int *code) {
  lmpio_lua_buffer *b = lmpio_lua_toarray(L, idx, code);
  if (!b || !b->strided) return b;
  lmpio_lua_buffer *r = lmpio_lua_newbuffer(L, b->type, b->count);
  r->ndim = b->ndim;
  r->forder = b->forder;
  memcpy(r->dims, b->dims, sizeof r->dims);
  lmpio_lua_copy(r, b);
  lua_replace(L, idx);
  return r;
}

/* ---- records' memory (their layouts: lua/records.c) --------------------- */

const lmpio_lua_records *lmpio_lua_findlayout(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!lmpio_lua_totype(L, idx)) return NULL;
  lua_getfield(L, LUA_REGISTRYINDEX, LMPIO_LUA_RECORDTYPES_KEY);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) != LUA_TUSERDATA) {
    lua_pop(L, 2);
    return NULL;
  }
  lua_remove(L, -2);
  return lua_touserdata(L, -1);
}

/* Pushes n zeroed records of the layout r (at lidx). */
lmpio_lua_buffer *lmpio_lua_newrecords(lua_State *L, int lidx, const lmpio_lua_records *r, size_t n) {
  lidx = lua_absindex(L, lidx);
  if (r->tobj->type == MPI_DATATYPE_NULL) lmpio_lua_error(L, MPI_ERR_TYPE, "the record datatype was freed");
  if (n > ((size_t)-1 / 2) / r->extent) lmpio_lua_error(L, MPI_ERR_ARG, "buffer too large");
  lmpio_lua_buffer *b = lmpio_lua_allocbuffer(L, n * r->extent);
  b->type = r->tobj->type;
  b->kind = LMPIO_LUA_K_NONE;
  b->esize = r->extent;
  b->count = n;
  b->nbytes = n * r->extent;
  b->rec = r;
  lua_pushvalue(L, lidx);
  lua_setiuservalue(L, -2, 2);
  return b;
}

/* ---- constructors ---------------------------------------------------------- */

/***
A new typed array of a predefined datatype, zeroed or initialised.
An options table gives it a shape for n-d indexing; it may replace the
second argument (`lmpio.array(lmpio.DOUBLE, {shape = {4, 5, 6}})`: zeroed).
Stores are range-checked (see `a[i] = v`).
@function lmpio.array
@param type a predefined datatype (lmpio.DOUBLE, lmpio.INT, ...)
@param init a count of zeroed elements, a table of values, or a string of
 raw bytes (a whole number of elements)
@param[opt] options {shape = {d1, ..., dn}, order = "C" | "F"}: the
 product of the sizes must be the count (see `array:reshape`)
@return the array
@raise when type is not predefined, a value does not fit the type, or the
 shape does not match
*/
static int l_array(lua_State *L) {
  lmpio_lua_running(L);
  MPI_Datatype t = lmpio_lua_checktype(L, 1);
  if (!lmpio_lua_isnamed(t)) return lmpio_lua_argerror(L, 1, "arrays hold predefined datatypes");
  MPI_Count es = lmpio_lua_type_size(L, t);
  int optidx = 0;
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TTABLE && lua_getfield(L, 2, "shape") != LUA_TNIL) optidx = 2;
  lua_settop(L, 3);
  if (!optidx && !lua_isnil(L, 3)) {
    lmpio_lua_checkluatype(L, 3, LUA_TTABLE);
    optidx = 3;
  }
  size_t dims[LMPIO_LUA_MAXDIM], total = 0;
  int nd = 0, forder = 0;
  if (optidx) {
    static const char *const names[] = {"shape", "order", NULL};
    lmpio_lua_checkfields(L, optidx, names);
    lua_getfield(L, optidx, "shape");
    if (!lua_isnil(L, -1)) nd = lmpio_lua_checkshape(L, lua_gettop(L), dims, &total);
    lua_getfield(L, optidx, "order");
    forder = lmpio_lua_checkorder(L, lua_gettop(L));
    lua_pop(L, 2);
  }
  lmpio_lua_buffer *b;
  if (optidx == 2) {
    b = lmpio_lua_newbuffer(L, t, total);
  } else {
    switch (lua_type(L, 2)) {
    case LUA_TNUMBER: {
      lua_Integer n = lmpio_lua_checkinteger(L, 2);
      if (n < 0) return lmpio_lua_argerror(L, 2, "size must not be negative");
      b = lmpio_lua_newbuffer(L, t, (size_t)n);
      break;
    }
    case LUA_TTABLE: {
      lua_Integer n = lmpio_lua_len(L, 2);
      b = lmpio_lua_newbuffer(L, t, (size_t)n);
      if (b->kind == LMPIO_LUA_K_NONE && n > 0)
        return lmpio_lua_argerror(L, 2, "elements of this type cannot be written from Lua");
      for (lua_Integer k = 0; k < n; k++) {
        lua_geti(L, 2, k + 1);
        setelem(L, b, (size_t)k, -1);
        lua_pop(L, 1);
      }
      break;
    }
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, 2, &len);
      if (len % (size_t)es) return lmpio_lua_argerror(L, 2, "not a whole number of elements");
      b = lmpio_lua_newbuffer(L, t, len / (size_t)es);
      if (len) memcpy(b->data, s, len);
      break;
    }
    default:
      return lmpio_lua_typeerror(L, 2, "size, table, string or options");
    }
    if (nd && total != b->count)
      return lmpio_lua_argerror(L, 3, lua_pushfstring(L, "a shape of %I elements for an array of %I",
                                                 (lua_Integer)total, (lua_Integer)b->count));
  }
  b->ndim = nd;
  b->forder = forder;
  if (nd) memcpy(b->dims, dims, sizeof dims);
  return 1;
}

/***
A new byte buffer (an array of lmpio.BYTE), zeroed or a copy of a string.
@function lmpio.buffer
@param init a size in bytes, or a string
@return the buffer
@raise when the size is negative
*/
static int l_buffer(lua_State *L) {
  lmpio_lua_running(L);
  if (lua_type(L, 1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, MPI_BYTE, len);
    if (len) memcpy(b->data, s, len);
    return 1;
  }
  lua_Integer n = lmpio_lua_checkinteger(L, 1);
  if (n < 0) return lmpio_lua_argerror(L, 1, "size must not be negative");
  lmpio_lua_newbuffer(L, MPI_BYTE, (size_t)n);
  return 1;
}

/***
Whether v is an lmpio array, buffer, records or a view of one.
@function lmpio.isbuffer
@param v any value
@return a boolean
*/
static int l_isbuffer(lua_State *L) {
  lmpio_lua_running(L);
  lua_pushboolean(L, lmpio_lua_tobuffer(L, 1) != NULL);
  return 1;
}

int lmpio_lua_buffer_open(lua_State *L) {
  lmpio_lua_holds_open(L);
  if (luaL_newmetatable(L, LMPIO_LUA_BUFFER)) {
    static const luaL_Reg meta[] = {
      {"__len", b_len}, {"__tostring", b_tostring_meta}, {"__pairs", b_pairs}, {NULL, NULL},
    };
    static const luaL_Reg index[] = {{"__index", b_index}, {"__newindex", b_newindex}, {NULL, NULL}};
    lua_pushvalue(L, -1);
    luaL_setfuncs(L, index, 1); /* the metatable as their upvalue (isours) */
    static const luaL_Reg buffer_methods[] = {
      {"tostring", b_tostring}, {"totable", b_totable}, {"fill", b_fill}, {"set", b_set},
      {"get", b_get}, {"sub", b_sub},
      {"type", b_type}, {"nbytes", b_nbytes},
      {"valid", b_valid}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, buffer_methods);
    lua_setfield(L, -2, "methods");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {
    {"array", l_array}, {"buffer", l_buffer}, {"isbuffer", l_isbuffer}, {NULL, NULL},
  };
  lmpio_lua_setfuncs(L, funcs);
  return 0;
}
