/* Typed arrays, byte buffers and record arrays over C memory (metatable
 * "lmpio.buffer").
 *
 *   lmpio.array(lmpio.DOUBLE, n)        n zeroed doubles
 *   lmpio.array(lmpio.INT, {1, 2, 3})   from a Lua table
 *   lmpio.array(lmpio.INT, bytes)       from the raw bytes of a string
 *   lmpio.array(lmpio.DOUBLE, {shape = {4, 5, 6}, order = "F"})   shaped
 *   lmpio.buffer(n) / lmpio.buffer(s)   mutable bytes (an array of lmpio.BYTE)
 *   lmpio.recordtype{{"x", lmpio.DOUBLE}, {"id", lmpio.INT}, {"v", lmpio.FLOAT, 3}}
 *   lmpio.records(rt_or_spec, n)        n zeroed records: r[i].x, r[i].v[2]
 *
 * a[i] (1-based, in storage order), a[{i, j, k}] (shaped), #a,
 * a:tostring([i [, j]]), a:totable([i [, j]]), a:fill(v [, i [, j]]),
 * a:set(i..., v), a:get(i...), a:index(i...), a:sub(i [, j]) (a view sharing
 * the memory), a:reshape(shape [, order]), a:shape(), a:fields(), a:type(),
 * a:nbytes(), a:valid(), pairs(a).
 *
 * Owned memory lives inside the userdata.  A view (a:sub, a:reshape, r[i], a
 * record's array field) points into the memory of its root buffer, which it
 * keeps alive in user value 1; records keep their field layout in user value
 * 2.  Borrowed memory (a converter's buffers) can be invalidated, after which
 * every access, also through a view, raises "used after the converter
 * returned".
 *
 * Stores from Lua are checked: an integer element takes integers (or
 * booleans, or floats with an integral value) within the range of its C
 * type; a FLOAT takes any number whose magnitude does not exceed FLT_MAX
 * (NaN and infinities are kept; precision is rounded); DOUBLE and
 * LONG_DOUBLE take any number.  An UINT64 element above math.maxinteger
 * reads as a float. */
#include "lmpio_lua.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ALIGN 16
#define RECORDTYPES_KEY "lmpio.recordtypes" /* registry: record datatype object -> layout (weak keys) */

/* One field of a record. */
typedef struct field {
  const char *name; /* kept alive by the layout's name list (user value 2) */
  size_t offset;    /* bytes from the start of the record */
  size_t count;     /* elements (1: a scalar, more: an array field) */
  size_t esize;
  MPI_Datatype type;
  int kind;
} field;

/* The layout of records (a userdata: user value 1 the datatype object, 2 the
 * list of field names). */
struct lmpio_lua_records {
  size_t extent;            /* bytes of one record in memory */
  int nfields;
  lmpio_lua_datatype *tobj; /* the record's MPI datatype */
  field f[];
};
typedef struct lmpio_lua_records records;

static lmpio_lua_buffer *alloc(lua_State *L, size_t inline_bytes) {
  size_t hdr = (sizeof(lmpio_lua_buffer) + ALIGN - 1) / ALIGN * ALIGN;
  if (inline_bytes > (size_t)-1 - hdr - ALIGN) luaL_error(L, "buffer too large");
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
static int usable(const lmpio_lua_buffer *b) {
  return b->valid && (!b->root || b->root->valid);
}

lmpio_lua_buffer *lmpio_lua_tobuffer(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LMPIO_LUA_BUFFER);
}

lmpio_lua_buffer *lmpio_lua_checkbuffer(lua_State *L, int idx) {
  lmpio_lua_buffer *b = luaL_checkudata(L, idx, LMPIO_LUA_BUFFER);
  if (!usable(b)) luaL_error(L, "buffer used after the converter returned");
  return b;
}

lmpio_lua_buffer *lmpio_lua_checkflat(lua_State *L, int idx) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  if (b->strided)
    luaL_argerror(L, idx, "a slice is not contiguous memory (copy it into an array first: a:copy(slice))");
  return b;
}

/* The address of element i (0-based, in storage order) of b. */
static unsigned char *elemat(const lmpio_lua_buffer *b, size_t i) {
  return b->strided ? lmpio_lua_slice_at(b, i) : b->data + i * b->esize;
}

static MPI_Count type_size(lua_State *L, MPI_Datatype t) {
  MPI_Count n = 0;
  lmpio_lua_checkmpi(L, MPI_Type_size_x(t, &n), "MPI_Type_size_x");
  return n;
}

/* Bytes from the buffer's start that count items of type span (their data
 * must start at or after 0); SPAN_BELOW when they reach below 0,
 * SPAN_HUGE when the span does not fit a 64-bit size. */
enum { SPAN_BELOW = -1, SPAN_HUGE = -2 };
static long long span(lua_State *L, int count, MPI_Datatype t) {
  MPI_Count lb, ext, tlb, text;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(t, &lb, &ext), "MPI_Type_get_extent_x");
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(t, &tlb, &text), "MPI_Type_get_true_extent_x");
  (void)lb;
  if (count == 0 || text == 0) return 0;
  long long first = (long long)tlb, last, hi;
  if (!lmpio_lua_mul_ok((long long)count - 1, (long long)ext, &last) || !lmpio_lua_add_ok(last, first, &last))
    return SPAN_HUGE;
  long long lo = first < last ? first : last;
  if (!lmpio_lua_add_ok(first > last ? first : last, (long long)text, &hi)) return SPAN_HUGE;
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
      return SPAN_HUGE;
    if (dlb < l2) l2 = dlb;
    if (dub > h2) h2 = dub;
    if (l2 < lo) lo = l2;
    if (h2 > hi) hi = h2;
  }
  return lo < 0 ? SPAN_BELOW : hi;
}

void lmpio_lua_checkfit(lua_State *L, int arg, size_t nbytes, int count, MPI_Datatype type) {
  if (count < 0) luaL_argerror(L, arg, "count must not be negative");
  long long need = span(L, count, type);
  if (need == SPAN_HUGE)
    luaL_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype span more bytes than a 64-bit size holds",
                                          count));
  if (need < 0)
    luaL_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype reach before the start of the buffer", count));
  if ((unsigned long long)need > nbytes)
    luaL_argerror(L, arg, lua_pushfstring(L, "%d items of this datatype need %I bytes but the buffer has %I",
                                          count, (lua_Integer)need, (lua_Integer)nbytes));
}

lmpio_lua_buffer *lmpio_lua_newbuffer(lua_State *L, MPI_Datatype type, size_t count) {
  int kind = lmpio_lua_typekind(type);
  if (lmpio_lua_isnamed(type)) {
    MPI_Count es = type_size(L, type);
    if (es <= 0) luaL_error(L, "datatype has no data");
    if (count > ((size_t)-1 / 2) / (size_t)es) luaL_error(L, "buffer too large");
    lmpio_lua_buffer *b = alloc(L, count * (size_t)es);
    b->type = type;
    b->esize = (size_t)es;
    b->count = count;
    b->nbytes = count * (size_t)es;
    b->kind = kind;
    return b;
  }
  /* A derived type: the bytes its count instances span. */
  if (count > INT_MAX) luaL_error(L, "count too large");
  long long need = span(L, (int)count, type);
  if (need == SPAN_HUGE || (need >= 0 && (unsigned long long)need > (size_t)-1 / 2)) luaL_error(L, "buffer too large");
  if (need < 0) luaL_error(L, "datatype reaches before the start of the buffer");
  MPI_Count lb, ext, tlb, text;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(type, &lb, &ext), "MPI_Type_get_extent_x");
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(type, &tlb, &text), "MPI_Type_get_true_extent_x");
  (void)lb;
  lmpio_lua_buffer *b = alloc(L, (size_t)need);
  b->count = b->nbytes = (size_t)need;
  b->itemext = (long long)ext;
  b->itemtail = text > 0 ? (long long)tlb + (long long)text : 0; /* fits: need holds it */
  return b;
}

lmpio_lua_buffer *lmpio_lua_pushborrowed(lua_State *L, void *data, size_t count,
                                         MPI_Datatype type, int readonly) {
  lmpio_lua_buffer *b = alloc(L, 0);
  MPI_Count es = lmpio_lua_isnamed(type) ? type_size(L, type) : 1;
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

void lmpio_lua_checklasting(lua_State *L, int idx, const lmpio_lua_mem *m) {
  const lmpio_lua_buffer *b = m->buf;
  if (b && (b->borrowed || (b->root && b->root->borrowed)))
    luaL_argerror(L, idx, "a converter's borrowed buffer cannot be used by a call that outlives the converter "
                          "(a nonblocking call or a split collective): copy it into an lmpio.array first");
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

/* ---- holds of pending calls ----------------------------------------------- */

#define LMPIO_LUA_HOLD "lmpio.hold"
#define HOLDS_KEY "lmpio.holds" /* registry: hold -> its file (lightuserdata), weak keys */

struct lmpio_lua_hold {
  struct lmpio_lua_hold *next, **pprev; /* in root->holds */
  lmpio_lua_buffer *root;               /* NULL once released */
  size_t lo, hi;                        /* the bytes of root's memory held */
  int reading;
  const MPI_Request *req;               /* a request's: held only while it is not MPI_REQUEST_NULL
                                           (a call that failed left it so); NULL: a split collective's */
  char call[48];
};

static lmpio_lua_buffer *rootof(const lmpio_lua_buffer *b) {
  return b->root ? b->root : (lmpio_lua_buffer *)b;
}

/* The bytes of root's memory that b covers. */
static void byterange(const lmpio_lua_buffer *b, size_t *lo, size_t *hi) {
  const lmpio_lua_buffer *r = rootof(b);
  *lo = b->data && r->data ? (size_t)(b->data - r->data) : 0;
  *hi = *lo + (b->nbytes ? b->nbytes : b->isref ? b->esize : 0);
}

lmpio_lua_hold *lmpio_lua_hold_push(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading, const char *call,
                                    int fileidx, const MPI_Request *req) {
  dataidx = lua_absindex(L, dataidx);
  fileidx = fileidx ? lua_absindex(L, fileidx) : 0;
  if (!m->buf) {
    lua_pushnil(L);
    return NULL;
  }
  lmpio_lua_hold *h = lua_newuserdatauv(L, sizeof *h, 1);
  memset(h, 0, sizeof *h);
  luaL_setmetatable(L, LMPIO_LUA_HOLD);
  lua_pushvalue(L, dataidx); /* keeps the root alive as long as the hold */
  lua_setiuservalue(L, -2, 1);
  lmpio_lua_buffer *r = rootof(m->buf);
  byterange(m->buf, &h->lo, &h->hi);
  h->reading = reading;
  h->req = req;
  snprintf(h->call, sizeof h->call, "%s", call);
  h->root = r;
  h->next = r->holds;
  if (r->holds) r->holds->pprev = &h->next;
  h->pprev = &r->holds;
  r->holds = h;
  if (!fileidx) return h; /* a message's: no file closes it */
  lua_getfield(L, LUA_REGISTRYINDEX, HOLDS_KEY);
  lua_pushvalue(L, -2);
  lua_pushlightuserdata(L, lua_touserdata(L, fileidx));
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return h;
}

void lmpio_lua_unhold(lmpio_lua_hold *h) {
  if (!h || !h->root) return;
  *h->pprev = h->next;
  if (h->next) h->next->pprev = h->pprev;
  h->root = NULL;
  h->next = NULL;
  h->pprev = NULL;
}

void lmpio_lua_unhold_at(lua_State *L, int idx) {
  lmpio_lua_unhold(luaL_testudata(L, idx, LMPIO_LUA_HOLD));
}

void lmpio_lua_unhold_file(lua_State *L, int fileidx) {
  const void *file = lua_touserdata(L, fileidx);
  lua_getfield(L, LUA_REGISTRYINDEX, HOLDS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_touserdata(L, -1) == file) lmpio_lua_unhold(luaL_testudata(L, -2, LMPIO_LUA_HOLD));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int hold_gc(lua_State *L) {
  lmpio_lua_unhold(luaL_checkudata(L, 1, LMPIO_LUA_HOLD));
  return 0;
}

/* Raises when bytes [lo, hi) of b's root are held against the access. */
static void checkbytes(lua_State *L, const lmpio_lua_buffer *b, size_t lo, size_t hi, int writing) {
  for (const lmpio_lua_hold *h = rootof(b)->holds; h; h = h->next) {
    if (!(writing || h->reading) || lo >= h->hi || h->lo >= hi || (h->req && *h->req == MPI_REQUEST_NULL)) continue;
    luaL_error(L, "%s is held by a pending %s; %s first", b->type == MPI_BYTE && !b->rec ? "buffer" : "array",
               h->call, h->req ? "wait for its request" : "end it");
  }
}

void lmpio_lua_checkheld_(lua_State *L, const lmpio_lua_buffer *b, int writing) {
  size_t lo, hi;
  byterange(b, &lo, &hi);
  checkbytes(L, b, lo, hi, writing);
}

/* The same for n elements of b from element i (0-based). */
static void checkheld_elems(lua_State *L, const lmpio_lua_buffer *b, size_t i, size_t n, int writing) {
  if (!LMPIO_LUA_HELD(b)) return;
  size_t lo, hi;
  byterange(b, &lo, &hi);
  if (b->strided) { /* a slice: its whole span */
    checkbytes(L, b, lo, hi, writing);
    return;
  }
  lo += i * b->esize;
  checkbytes(L, b, lo, lo + n * b->esize, writing);
}

/* A table with weak keys in the registry at key. */
static void new_weak_keys(lua_State *L, const char *key) {
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

static void holds_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_HOLD)) {
    lua_pushcfunction(L, hold_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  new_weak_keys(L, HOLDS_KEY);
}

/* ---- values ------------------------------------------------------------- */

/* Outcome of a store into one element. */
enum { ST_OK, ST_NEEDINT, ST_NOTINT, ST_RANGE, ST_NEEDNUM, ST_NEEDBOOL, ST_NOLUA };

/* Pushes the value of the element of kind and esize bytes at p; 0 when Lua
 * cannot hold it (nothing pushed). */
static int loadval(lua_State *L, int kind, size_t esize, const unsigned char *p) {
  switch (kind) {
  case LMPIO_LUA_K_INT:
    switch (esize) {
    case 1: { int8_t v; memcpy(&v, p, 1); lua_pushinteger(L, v); return 1; }
    case 2: { int16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); return 1; }
    case 4: { int32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); return 1; }
    case 8: { int64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); return 1; }
    }
    break;
  case LMPIO_LUA_K_UINT:
    switch (esize) {
    case 1: lua_pushinteger(L, *p); return 1;
    case 2: { uint16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); return 1; }
    case 4: { uint32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); return 1; }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      if (v <= (uint64_t)LUA_MAXINTEGER) lua_pushinteger(L, (lua_Integer)v);
      else lua_pushnumber(L, (lua_Number)v);
      return 1;
    }
    }
    break;
  case LMPIO_LUA_K_BOOL: {
    int nz = 0;
    for (size_t k = 0; k < esize; k++) nz |= p[k];
    lua_pushboolean(L, nz);
    return 1;
  }
  case LMPIO_LUA_K_F32: { float v; memcpy(&v, p, sizeof v); lua_pushnumber(L, v); return 1; }
  case LMPIO_LUA_K_F64: { double v; memcpy(&v, p, sizeof v); lua_pushnumber(L, v); return 1; }
  case LMPIO_LUA_K_LDOUBLE: { long double v; memcpy(&v, p, sizeof v); lua_pushnumber(L, (lua_Number)v); return 1; }
  }
  return 0;
}

int lmpio_lua_loadelem(lua_State *L, int kind, size_t esize, const unsigned char *p) {
  return loadval(L, kind, esize, p);
}

/* The integer value of the Lua value at vidx for an integer element: ST_OK
 * and *v, or why not.  A float with an integral value beyond the integers
 * is ST_RANGE; *big receives it for UINT64. */
static int toint(lua_State *L, int vidx, lua_Integer *v, lua_Number *big) {
  int isnum;
  *v = lua_tointegerx(L, vidx, &isnum);
  if (isnum) return ST_OK;
  int t = lua_type(L, vidx);
  if (t == LUA_TBOOLEAN) {
    *v = lua_toboolean(L, vidx);
    return ST_OK;
  }
  if (!lua_isnumber(L, vidx)) return ST_NEEDINT;
  lua_Number d = lua_tonumber(L, vidx);
  if (isnan(d) || (isfinite(d) && d != floor(d))) return ST_NOTINT;
  *big = d;
  return ST_RANGE;
}

/* Stores the Lua value at vidx into the element of kind and esize bytes at
 * p, when it fits the element's type; ST_OK or why not (p untouched). */
static int storeval(lua_State *L, int kind, size_t esize, unsigned char *p, int vidx) {
  switch (kind) {
  case LMPIO_LUA_K_INT: {
    lua_Integer v;
    lua_Number big;
    int st = toint(L, vidx, &v, &big);
    if (st != ST_OK) return st;
    switch (esize) {
    case 1: { if (v < INT8_MIN || v > INT8_MAX) return ST_RANGE; int8_t x = (int8_t)v; memcpy(p, &x, 1); return ST_OK; }
    case 2: { if (v < INT16_MIN || v > INT16_MAX) return ST_RANGE; int16_t x = (int16_t)v; memcpy(p, &x, 2); return ST_OK; }
    case 4: { if (v < INT32_MIN || v > INT32_MAX) return ST_RANGE; int32_t x = (int32_t)v; memcpy(p, &x, 4); return ST_OK; }
    case 8: { int64_t x = (int64_t)v; memcpy(p, &x, 8); return ST_OK; }
    }
    break;
  }
  case LMPIO_LUA_K_UINT: {
    lua_Integer v;
    lua_Number big = 0;
    int st = toint(L, vidx, &v, &big);
    if (st == ST_RANGE && esize == 8 && big >= 0 && big < 18446744073709551616.0) {
      uint64_t x = (uint64_t)big; /* 2^63 .. 2^64 as a float */
      memcpy(p, &x, 8);
      return ST_OK;
    }
    if (st != ST_OK) return st;
    if (v < 0) return ST_RANGE;
    switch (esize) {
    case 1: { if (v > UINT8_MAX) return ST_RANGE; *p = (unsigned char)v; return ST_OK; }
    case 2: { if (v > UINT16_MAX) return ST_RANGE; uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return ST_OK; }
    case 4: { if (v > (lua_Integer)UINT32_MAX) return ST_RANGE; uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return ST_OK; }
    case 8: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); return ST_OK; }
    }
    break;
  }
  case LMPIO_LUA_K_BOOL: {
    int t = lua_type(L, vidx);
    if (t != LUA_TBOOLEAN && t != LUA_TNUMBER) return ST_NEEDBOOL;
    int v = t == LUA_TNUMBER ? lua_tonumber(L, vidx) != 0 : lua_toboolean(L, vidx);
    memset(p, 0, esize);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    p[esize - 1] = (unsigned char)v;
#else
    p[0] = (unsigned char)v;
#endif
    return ST_OK;
  }
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64:
  case LMPIO_LUA_K_LDOUBLE: {
    int isnum;
    lua_Number v = lua_tonumberx(L, vidx, &isnum);
    if (!isnum) return ST_NEEDNUM;
    if (kind == LMPIO_LUA_K_F32) {
      if (isfinite(v) && (v > FLT_MAX || v < -FLT_MAX)) return ST_RANGE;
      float x = (float)v;
      memcpy(p, &x, sizeof x);
    } else if (kind == LMPIO_LUA_K_F64) {
      double x = (double)v;
      memcpy(p, &x, sizeof x);
    } else {
      long double x = (long double)v;
      memcpy(p, &x, sizeof x);
    }
    return ST_OK;
  }
  }
  return ST_NOLUA;
}

/* Raises the error of a store that failed with st; what names the element
 * ("element 3 of a INT array"). */
static int storeerror(lua_State *L, int st, int kind, size_t esize, int vidx, const char *what) {
  vidx = lua_absindex(L, vidx);
  switch (st) {
  case ST_NEEDINT: return luaL_error(L, "%s needs an integer, got %s", what, luaL_typename(L, vidx));
  case ST_NOTINT:
    return luaL_error(L, "%s needs an integer, got a number without integer value (%s)", what,
                      luaL_tolstring(L, vidx, NULL));
  case ST_NEEDNUM: return luaL_error(L, "%s needs a number, got %s", what, luaL_typename(L, vidx));
  case ST_NEEDBOOL: return luaL_error(L, "%s needs a boolean, got %s", what, luaL_typename(L, vidx));
  case ST_RANGE: {
    char limits[64];
    unsigned bits = (unsigned)(8 * esize);
    if (kind == LMPIO_LUA_K_F32)
      snprintf(limits, sizeof limits, "magnitude at most %.9g", (double)FLT_MAX);
    else if (kind == LMPIO_LUA_K_INT)
      snprintf(limits, sizeof limits, "%lld..%lld", bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1)),
               bits >= 64 ? LLONG_MAX : (1LL << (bits - 1)) - 1);
    else
      snprintf(limits, sizeof limits, "0..%llu", bits >= 64 ? ULLONG_MAX : (1ULL << bits) - 1);
    return luaL_error(L, "%s: %s is out of range (%s)", what, luaL_tolstring(L, vidx, NULL), limits);
  }
  }
  return luaL_error(L, "%s cannot be written from Lua (use set with a string of raw bytes)", what);
}

/* ---- records -------------------------------------------------------------- */

static const records *getrec(const lmpio_lua_buffer *b) { return b->rec; }

/* The field of r named by the string at kidx, or NULL. */
static const field *findfield(lua_State *L, const records *r, int kidx) {
  size_t len;
  const char *k = lua_tolstring(L, kidx, &len);
  for (int i = 0; i < r->nfields; i++)
    if (r->f[i].name == k || (strlen(r->f[i].name) == len && memcmp(r->f[i].name, k, len) == 0)) return &r->f[i];
  return NULL;
}

/* ---- views ----------------------------------------------------------------- */

/* Pushes a buffer of count elements (type, kind, esize, records rec) at data,
 * inside the memory of b (at stack index bidx), which it keeps alive. */
static lmpio_lua_buffer *pushview(lua_State *L, int bidx, const lmpio_lua_buffer *b, unsigned char *data,
                                  size_t count, size_t esize, MPI_Datatype type, int kind, const records *rec) {
  bidx = lua_absindex(L, bidx);
  lmpio_lua_buffer *v = alloc(L, 0);
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
  return pushview(L, bidx, b, data, count, b->esize, b->type, b->kind, NULL);
}

/* Pushes a view of elements [start, start + n) of b (at bidx). */
static lmpio_lua_buffer *subview(lua_State *L, int bidx, const lmpio_lua_buffer *b, size_t start, size_t n) {
  return pushview(L, bidx, b, b->data ? b->data + start * b->esize : NULL, n, b->esize, b->type, b->kind,
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
  if (!loadval(L, b->kind, b->esize, elemat(b, i)))
    luaL_error(L, "elements of type %s cannot be read from Lua (use tostring)", elemname(b));
}

/* Pushes field f of the record at p (of ref, at stack index bidx): a value,
 * or a view of an array field. */
static void pushfield(lua_State *L, int bidx, const lmpio_lua_buffer *ref, unsigned char *p, const field *f) {
  if (f->count == 1) loadval(L, f->kind, f->esize, p + f->offset);
  else pushview(L, bidx, ref, p + f->offset, f->count, f->esize, f->type, f->kind, NULL);
}

/* Stores the value at vidx into field f of record i at p: a value for a
 * scalar, a table of exactly count values or a string of at most count
 * elements' raw bytes (the rest zeroed) for an array field. */
static void setfield(lua_State *L, const records *r, unsigned char *p, size_t i, const field *f, int vidx) {
  (void)r;
  vidx = lua_absindex(L, vidx);
  unsigned char *q = p + f->offset;
  int st;
  if (f->count == 1) {
    if ((st = storeval(L, f->kind, f->esize, q, vidx)) != ST_OK)
      storeerror(L, st, f->kind, f->esize, vidx,
                 lua_pushfstring(L, "field '%s' of record %I", f->name, (lua_Integer)i + 1));
    return;
  }
  size_t bytes = f->count * f->esize;
  if (lua_type(L, vidx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, vidx, &len);
    if (len > bytes || len % f->esize)
      luaL_error(L, "field '%s' of record %I takes at most %I bytes, a whole number of elements, got %I", f->name,
                 (lua_Integer)i + 1, (lua_Integer)bytes, (lua_Integer)len);
    memcpy(q, s, len);
    memset(q + len, 0, bytes - len);
    return;
  }
  if (!lua_istable(L, vidx) || luaL_len(L, vidx) != (lua_Integer)f->count)
    luaL_error(L, "field '%s' of record %I needs a table of %I values or a string", f->name, (lua_Integer)i + 1,
               (lua_Integer)f->count);
  unsigned char *tmp = lua_newuserdatauv(L, bytes, 0); /* all or nothing */
  memcpy(tmp, q, bytes);
  for (size_t k = 0; k < f->count; k++) {
    lua_geti(L, vidx, (lua_Integer)k + 1);
    if ((st = storeval(L, f->kind, f->esize, tmp + k * f->esize, -1)) != ST_OK)
      storeerror(L, st, f->kind, f->esize, -1,
                 lua_pushfstring(L, "element %I of field '%s' of record %I", (lua_Integer)k + 1, f->name,
                                 (lua_Integer)i + 1));
    lua_pop(L, 1);
  }
  memcpy(q, tmp, bytes);
  lua_pop(L, 1);
}

/* Stores the value at vidx into record i of b: a table of fields (those not
 * in it are zeroed; an unknown key raises) or a string of exactly one
 * record's raw bytes. */
static void setrecord(lua_State *L, const lmpio_lua_buffer *b, size_t i, int vidx) {
  const records *r = getrec(b);
  unsigned char *p = b->data + i * b->esize;
  vidx = lua_absindex(L, vidx);
  if (lua_type(L, vidx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, vidx, &len);
    if (len != r->extent)
      luaL_error(L, "record %I takes a table of fields or a string of %I bytes, got %I bytes", (lua_Integer)i + 1,
                 (lua_Integer)r->extent, (lua_Integer)len);
    memcpy(p, s, len);
    return;
  }
  if (!lua_istable(L, vidx))
    luaL_error(L, "record %I takes a table of fields or a string, got %s", (lua_Integer)i + 1,
               luaL_typename(L, vidx));
  unsigned char *tmp = lua_newuserdatauv(L, r->extent, 0); /* all or nothing */
  memset(tmp, 0, r->extent);
  lua_pushnil(L);
  while (lua_next(L, vidx)) {
    const field *f = lua_type(L, -2) == LUA_TSTRING ? findfield(L, r, -2) : NULL;
    if (!f)
      luaL_error(L, "record %I has no field '%s'", (lua_Integer)i + 1, luaL_tolstring(L, -2, NULL));
    setfield(L, r, tmp, i, f, -1);
    lua_pop(L, 1);
  }
  memcpy(p, tmp, r->extent);
  lua_pop(L, 1);
}

/* Stores the value at vidx into element i of b. */
static void setelem(lua_State *L, const lmpio_lua_buffer *b, size_t i, int vidx) {
  if (b->rec) {
    setrecord(L, b, i, vidx);
    return;
  }
  int st = storeval(L, b->kind, b->esize, elemat(b, i), vidx);
  if (st != ST_OK)
    storeerror(L, st, b->kind, b->esize, vidx,
               lua_pushfstring(L, "element %I of a %s array", (lua_Integer)i + 1, elemname(b)));
}

/* A table of the values of record i (array fields as tables). */
static void pushrecordtable(lua_State *L, const lmpio_lua_buffer *b, size_t i) {
  const records *r = getrec(b);
  const unsigned char *p = b->data + i * b->esize;
  lua_createtable(L, 0, r->nfields);
  for (int k = 0; k < r->nfields; k++) {
    const field *f = &r->f[k];
    if (f->count == 1) {
      loadval(L, f->kind, f->esize, p + f->offset);
    } else {
      lua_createtable(L, (int)f->count, 0);
      for (size_t e = 0; e < f->count; e++) {
        loadval(L, f->kind, f->esize, p + f->offset + e * f->esize);
        lua_rawseti(L, -2, (lua_Integer)e + 1);
      }
    }
    lua_setfield(L, -2, f->name);
  }
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
      luaL_error(L, "index %I out of range 1..%I", ix[0], (lua_Integer)b->count);
    return (size_t)ix[0] - 1;
  }
  if (n != nd) luaL_error(L, "%d indices for an array of %d dimensions", n, nd);
  for (int k = 0; k < n; k++)
    if (ix[k] < 1 || (lua_Unsigned)ix[k] > dims[k])
      luaL_error(L, "index %d is %I, out of range 1..%I", k + 1, ix[k], (lua_Integer)dims[k]);
  size_t pos = 0;
  if (b->forder)
    for (int k = n - 1; k >= 0; k--) pos = pos * dims[k] + (size_t)(ix[k] - 1);
  else
    for (int k = 0; k < n; k++) pos = pos * dims[k] + (size_t)(ix[k] - 1);
  return pos;
}

/* The position of the indices given as arguments first..last. */
static size_t argposition(lua_State *L, const lmpio_lua_buffer *b, int first, int last) {
  lua_Integer ix[LMPIO_LUA_MAXDIM];
  int n = last - first + 1;
  if (n < 1) luaL_error(L, "missing index");
  if (n > LMPIO_LUA_MAXDIM) luaL_error(L, "too many indices (at most %d)", LMPIO_LUA_MAXDIM);
  for (int k = 0; k < n; k++) ix[k] = luaL_checkinteger(L, first + k);
  return position(L, b, ix, n);
}

/* The position of the indices in the table at tidx ({i, j, k}). */
static size_t tableposition(lua_State *L, const lmpio_lua_buffer *b, int tidx) {
  lua_Integer ix[LMPIO_LUA_MAXDIM];
  lua_Integer n = (lua_Integer)lua_rawlen(L, tidx);
  if (n < 1 || n > LMPIO_LUA_MAXDIM) luaL_error(L, "an index table holds 1 to %d indices", LMPIO_LUA_MAXDIM);
  for (lua_Integer k = 0; k < n; k++) {
    int isnum;
    lua_rawgeti(L, tidx, k + 1);
    ix[k] = lua_tointegerx(L, -1, &isnum);
    if (!isnum) luaL_error(L, "index %d is not an integer", (int)k + 1);
    lua_pop(L, 1);
  }
  return position(L, b, ix, (int)n);
}

/* Whether the option at idx names Fortran order ("F", "f", "fortran",
 * "Fortran") rather than C order ("C", "c"; the default). */
static int checkorder(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  const char *s = luaL_checkstring(L, idx);
  if (!strcmp(s, "C") || !strcmp(s, "c")) return 0;
  if (!strcmp(s, "F") || !strcmp(s, "f") || !strcmp(s, "fortran") || !strcmp(s, "Fortran")) return 1;
  return luaL_argerror(L, idx, lua_pushfstring(L, "order must be \"C\" or \"F\" (\"fortran\"), got \"%s\"", s));
}

/* Reads the shape (a table of 1..LMPIO_LUA_MAXDIM sizes) at idx into dims;
 * returns the number of dimensions and the product in *total. */
static int checkshape(lua_State *L, int idx, size_t *dims, size_t *total) {
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  if (n < 1 || n > LMPIO_LUA_MAXDIM) luaL_argerror(L, idx, "a shape has 1 to 8 dimensions");
  size_t t = 1;
  for (lua_Integer k = 0; k < n; k++) {
    int isnum;
    lua_geti(L, idx, k + 1);
    lua_Integer d = lua_tointegerx(L, -1, &isnum);
    lua_pop(L, 1);
    if (!isnum || d < 0) luaL_argerror(L, idx, lua_pushfstring(L, "dimension %d is not a size", (int)k + 1));
    if (d && t > ((size_t)-1 / 2) / (size_t)d) luaL_argerror(L, idx, "shape too large");
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
 * metatable is upvalue 1 of the metamethod (luaL_checkudata's registry
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
    if (!usable(fast)) return luaL_error(L, "buffer used after the converter returned");
    if (ix < 1 || (lua_Unsigned)ix > fast->count) return 0;
    checkheld_elems(L, fast, (size_t)ix - 1, 1, 0);
    if (fast->kind == LMPIO_LUA_K_F64 && !fast->rec && !fast->strided) {
      double v;
      memcpy(&v, fast->data + (size_t)(ix - 1) * sizeof v, sizeof v);
      lua_pushnumber(L, (lua_Number)v);
    } else {
      pushelem(L, 1, fast, (size_t)ix - 1);
    }
    return 1;
  }
  lmpio_lua_buffer *b = luaL_checkudata(L, 1, LMPIO_LUA_BUFFER);
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: {
    int isnum;
    lua_Integer i = lua_tointegerx(L, 2, &isnum);
    if (!isnum) return 0;
    if (!usable(b)) return luaL_error(L, "buffer used after the converter returned");
    if (i < 1 || (lua_Unsigned)i > b->count) return 0;
    checkheld_elems(L, b, (size_t)i - 1, 1, 0);
    pushelem(L, 1, b, (size_t)i - 1);
    return 1;
  }
  case LUA_TSTRING:
    if (b->isref) {
      const field *f = findfield(L, b->rec, 2);
      if (f) {
        if (!usable(b)) return luaL_error(L, "buffer used after the converter returned");
        lmpio_lua_checkheld(L, b, 0);
        pushfield(L, 1, b, b->data, f);
        return 1;
      }
    }
    return methods(L);
  case LUA_TTABLE:
    if (!usable(b)) return luaL_error(L, "buffer used after the converter returned");
    size_t pos = tableposition(L, b, 2);
    checkheld_elems(L, b, pos, 1, 0);
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
  if (fast && fast->kind == LMPIO_LUA_K_F64 && !fast->rec && !fast->strided && !fast->readonly && usable(fast) &&
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
      return luaL_error(L, "index %I out of range 1..%I", i, (lua_Integer)b->count);
    pos = (size_t)i - 1;
  } else if (lua_type(L, 2) == LUA_TSTRING && b->isref) {
    const field *f = findfield(L, b->rec, 2);
    if (!f) return luaL_error(L, "record has no field '%s'", lua_tostring(L, 2));
    if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
    lmpio_lua_checkheld(L, b, 1);
    size_t at = b->root && b->root->data ? (size_t)(b->data - b->root->data) / b->esize : 0;
    setfield(L, b->rec, b->data, at, f, 3);
    return 0;
  } else if (lua_type(L, 2) == LUA_TTABLE) {
    pos = tableposition(L, b, 2);
  } else {
    return luaL_error(L, "%s arrays only have integer keys", elemname(b));
  }
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  checkheld_elems(L, b, pos, 1, 1);
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
  lmpio_lua_buffer *b = luaL_checkudata(L, 1, LMPIO_LUA_BUFFER);
  const char *how = b->strided ? " slice" : b->root ? " view" : b->borrowed ? " borrowed" : "";
  if (!usable(b)) {
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
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 0 || (lua_Unsigned)i >= b->count) return 0;
  checkheld_elems(L, b, (size_t)i, 1, 0);
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
  lua_Integer i = luaL_optinteger(L, ai, 1), j = luaL_optinteger(L, aj, cnt);
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
  checkheld_elems(L, b, s, n, 0);
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
  checkheld_elems(L, b, s, n, 0);
  if (n > INT_MAX) return luaL_error(L, "too many elements for a table");
  lua_createtable(L, (int)n, 0);
  for (size_t k = 0; k < n; k++) {
    if (b->rec) pushrecordtable(L, b, s + k);
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
  luaL_checkany(L, 2);
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  size_t s, n;
  range(L, b, 3, 4, &s, &n);
  checkheld_elems(L, b, s, n, 1);
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
  if (top < 3) return luaL_error(L, "set needs an index and a value");
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld(L, b, 1);
  int t = lua_type(L, top), bulk = t == LUA_TSTRING;
  lmpio_lua_buffer *src = top == 3 && !b->rec ? lmpio_lua_tobuffer(L, top) : NULL;
  if (src) {
    if (!usable(src)) return luaL_error(L, "buffer used after the converter returned");
    bulk = 1;
  }
  if (t == LUA_TTABLE) { /* for records, one record table or a list of them */
    bulk = !b->rec || lua_rawgeti(L, top, 1) == LUA_TTABLE;
    lua_settop(L, top);
  }
  size_t start;
  if (bulk && top == 3) { /* where the copy starts, up to #a + 1 */
    lua_Integer i = luaL_checkinteger(L, 2);
    if (i < 1) return luaL_argerror(L, 2, "index must be at least 1");
    if ((lua_Unsigned)i - 1 > b->count) return luaL_argerror(L, 3, "does not fit in the buffer");
    start = (size_t)i - 1;
  } else {
    start = argposition(L, b, 2, top - 1);
  }
  if (!bulk) {
    setelem(L, b, start, top);
  } else if (t == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, top, &len);
    if (len % b->esize) return luaL_argerror(L, top, "not a whole number of elements");
    if (len / b->esize > b->count - start) return luaL_argerror(L, top, "does not fit in the buffer");
    for (size_t k = 0; b->strided && k < len / b->esize; k++) memcpy(elemat(b, start + k), s + k * b->esize, b->esize);
    if (len && !b->strided) memcpy(b->data + start * b->esize, s, len);
  } else if (src) { /* an array: its elements, in storage order */
    if (src->count > b->count - start) return luaL_argerror(L, top, "does not fit in the buffer");
    if (src->type != b->type || src->rec || b->rec)
      return luaL_argerror(L, top, "an array of another element type (set copies elements as they are)");
    lmpio_lua_checkheld(L, src, 0);
    if (!src->strided && !b->strided) {
      if (src->count) memmove(b->data + start * b->esize, src->data, src->count * b->esize);
    } else {
      for (size_t k = 0; k < src->count; k++) memmove(elemat(b, start + k), elemat(src, k), b->esize);
    }
  } else {
    lua_Integer n = luaL_len(L, top);
    if ((lua_Unsigned)n > b->count - start) return luaL_argerror(L, top, "does not fit in the buffer");
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
  size_t pos = argposition(L, b, 2, lua_gettop(L));
  checkheld_elems(L, b, pos, 1, 0);
  pushelem(L, 1, b, pos);
  return 1;
}

/***
The position in storage order (from 1) of the element at the indices of a
shaped array, so that `a[a:index(i, j, k)]` is `a:get(i, j, k)`.
@function array:index
@param ... one index per dimension (from 1)
@return the position
@raise when an index is out of range or the count of indices is wrong
*/
static int b_indexof(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  lua_pushinteger(L, (lua_Integer)argposition(L, b, 2, lua_gettop(L)) + 1);
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
  if (b->strided) return luaL_error(L, "sub of a slice: take a slice of it (a:slice)");
  lua_Integer cnt = (lua_Integer)b->count;
  lua_Integer i0 = luaL_checkinteger(L, 2), j0 = luaL_optinteger(L, 3, cnt);
  lua_Integer i = i0 < 0 ? i0 + cnt + 1 : i0, j = j0 < 0 ? j0 + cnt + 1 : j0;
  if (i < 1 || j > cnt || j < i - 1)
    return luaL_error(L, "sub(%I, %I) out of bounds: the array has %I elements", i0, j0, cnt);
  subview(L, 1, b, (size_t)(i - 1), (size_t)(j - i + 1));
  return 1;
}

/***
A view of all of a with a shape: n-d indexing `b[{i, j, k}]`, `b:get(i,
j, k)`, over the same memory in C order (last index fastest) or Fortran
order (first index fastest), as the `order` of `lmpio.type.subarray` and
`lmpio.type.darray`.
@function array:reshape
@param shape a table of sizes whose product is #a (1 to 8 dimensions)
@param[opt="C"] order "C" or "c"; "F", "f", "fortran" or "Fortran"
@return the view
@raise when the product of the sizes is not #a
*/
static int b_reshape(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  if (b->strided) return luaL_error(L, "reshape of a slice (its elements are not one block of memory)");
  size_t dims[LMPIO_LUA_MAXDIM], total;
  int nd = checkshape(L, 2, dims, &total);
  int f = checkorder(L, 3);
  if (total != b->count)
    return luaL_argerror(L, 2, lua_pushfstring(L, "a shape of %I elements for an array of %I", (lua_Integer)total,
                                               (lua_Integer)b->count));
  lmpio_lua_buffer *v = subview(L, 1, b, 0, b->count);
  v->ndim = nd;
  v->forder = f;
  memcpy(v->dims, dims, sizeof dims);
  return 1;
}

/***
The shape of a and its order.
@function array:shape
@return a table of sizes ({#a} for an array without a shape)
@return "C" or "F"
*/
static int b_shape(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t dims[LMPIO_LUA_MAXDIM];
  int nd = getdims(b, dims);
  lua_createtable(L, nd, 0);
  for (int k = 0; k < nd; k++) {
    lua_pushinteger(L, (lua_Integer)dims[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_pushstring(L, b->forder ? "F" : "C");
  return 2;
}

/***
The fields of records, in order, with their place in memory.
@function array:fields
@return a sequence of tables {name =, type =, count =, offset =} (offset
 in bytes from the start of a record)
@raise when a is not records
*/
static int b_fields(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  const records *r = getrec(b);
  if (!r) return luaL_error(L, "only records have fields");
  lua_createtable(L, r->nfields, 0);
  for (int k = 0; k < r->nfields; k++) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, r->f[k].name);
    lua_setfield(L, -2, "name");
    lmpio_lua_pushtype(L, r->f[k].type, 0);
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)r->f[k].count);
    lua_setfield(L, -2, "count");
    lua_pushinteger(L, (lua_Integer)r->f[k].offset);
    lua_setfield(L, -2, "offset");
    lua_rawseti(L, -2, k + 1);
  }
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
  lua_pushboolean(L, usable(luaL_checkudata(L, 1, LMPIO_LUA_BUFFER)));
  return 1;
}

/* ---- records: layouts and datatypes -------------------------------------- */

/* The alignment of a C object of a predefined kind and size. */
static size_t alignof_kind(int kind, size_t esize) {
  if (kind == LMPIO_LUA_K_LDOUBLE) return _Alignof(long double);
  size_t a = 1;
  while (a < esize && a < 16 && esize % (a * 2) == 0) a *= 2;
  return a;
}

/* Builds the layout of the field spec at sidx, with its datatype (a struct
 * of the fields at the offsets a C compiler gives them, resized to the
 * padded extent, committed) registered; pushes the layout. */
static records *buildlayout(lua_State *L, int sidx) {
  sidx = lua_absindex(L, sidx);
  lua_Integer n = luaL_len(L, sidx);
  if (n < 1 || n > 4096) luaL_argerror(L, sidx, "a record has 1 to 4096 fields");
  records *r = lua_newuserdatauv(L, sizeof *r + (size_t)n * sizeof(field), 2);
  memset(r, 0, sizeof *r + (size_t)n * sizeof(field));
  int lidx = lua_gettop(L);
  lua_createtable(L, (int)n, 0); /* the names, kept alive with the layout */
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, lidx, 2);
  int nidx = lua_gettop(L);
  size_t off = 0, maxalign = 1;
  for (lua_Integer k = 0; k < n; k++) {
    field *f = &r->f[k];
    if (lua_geti(L, sidx, k + 1) != LUA_TTABLE)
      luaL_argerror(L, sidx, lua_pushfstring(L, "field %d is not a table {name, type [, count]}", (int)k + 1));
    int e = lua_gettop(L);
    if (lua_geti(L, e, 1) != LUA_TSTRING || lua_rawlen(L, -1) == 0)
      luaL_argerror(L, sidx, lua_pushfstring(L, "field %d has no name", (int)k + 1));
    f->name = lua_tostring(L, -1);
    for (lua_Integer q = 0; q < k; q++)
      if (!strcmp(r->f[q].name, f->name))
        luaL_argerror(L, sidx, lua_pushfstring(L, "field '%s' named twice", f->name));
    lua_rawseti(L, nidx, k + 1);
    lua_geti(L, e, 2);
    lmpio_lua_datatype *d = lmpio_lua_totype(L, -1);
    if (!d || d->type == MPI_DATATYPE_NULL || !lmpio_lua_isnamed(d->type) ||
        lmpio_lua_typekind(d->type) == LMPIO_LUA_K_NONE)
      luaL_argerror(L, sidx, lua_pushfstring(L, "field '%s' needs a predefined datatype that Lua can read", f->name));
    f->type = d->type;
    f->kind = lmpio_lua_typekind(d->type);
    f->esize = (size_t)type_size(L, d->type);
    lua_pop(L, 1);
    int isnum;
    lua_geti(L, e, 3);
    lua_Integer c = lua_isnil(L, -1) ? 1 : lua_tointegerx(L, -1, &isnum);
    if (!lua_isnil(L, -1) && (!isnum || c < 1 || c > (1 << 24)))
      luaL_argerror(L, sidx, lua_pushfstring(L, "field '%s' needs a count from 1", f->name));
    lua_pop(L, 2);
    f->count = (size_t)c;
    size_t a = alignof_kind(f->kind, f->esize);
    if (a > maxalign) maxalign = a;
    off = (off + a - 1) / a * a;
    f->offset = off;
    off += f->count * f->esize;
  }
  lua_pop(L, 1); /* the names */
  r->nfields = (int)n;
  r->extent = (off + maxalign - 1) / maxalign * maxalign;
  /* The datatype: a struct of the fields, resized to the padded extent. */
  int *bl = lua_newuserdatauv(L, (size_t)n * sizeof(int), 0);
  MPI_Aint *disp = lua_newuserdatauv(L, (size_t)n * sizeof(MPI_Aint), 0);
  MPI_Datatype *types = lua_newuserdatauv(L, (size_t)n * sizeof(MPI_Datatype), 0);
  for (lua_Integer k = 0; k < n; k++) {
    bl[k] = (int)r->f[k].count;
    disp[k] = (MPI_Aint)r->f[k].offset;
    types[k] = r->f[k].type;
  }
  MPI_Datatype st, t;
  lmpio_lua_checkmpi(L, MPI_Type_create_struct((int)n, bl, disp, types, &st), "MPI_Type_create_struct");
  int rc = MPI_Type_create_resized(st, 0, (MPI_Aint)r->extent, &t);
  MPI_Type_free(&st);
  lmpio_lua_checkmpi(L, rc, "MPI_Type_create_resized");
  lua_pop(L, 3);
  r->tobj = lmpio_lua_pushtype(L, t, 1);
  if ((rc = MPI_Type_commit(&r->tobj->type)) != MPI_SUCCESS) lmpio_lua_checkmpi(L, rc, "MPI_Type_commit");
  lua_setiuservalue(L, lidx, 1);
  /* registered: the datatype object finds its layout */
  lua_getfield(L, LUA_REGISTRYINDEX, RECORDTYPES_KEY);
  lua_getiuservalue(L, lidx, 1);
  lua_pushvalue(L, lidx);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return r;
}

/* The layout registered for the datatype object at idx: pushed and returned,
 * or NULL (nothing pushed). */
static records *findlayout(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (!lmpio_lua_totype(L, idx)) return NULL;
  lua_getfield(L, LUA_REGISTRYINDEX, RECORDTYPES_KEY);
  lua_pushvalue(L, idx);
  if (lua_rawget(L, -2) != LUA_TUSERDATA) {
    lua_pop(L, 2);
    return NULL;
  }
  lua_remove(L, -2);
  return lua_touserdata(L, -1);
}

/* Pushes n zeroed records of the layout r (at lidx). */
static lmpio_lua_buffer *newrecords(lua_State *L, int lidx, const records *r, size_t n) {
  lidx = lua_absindex(L, lidx);
  if (r->tobj->type == MPI_DATATYPE_NULL) luaL_error(L, "the record datatype was freed");
  if (n > ((size_t)-1 / 2) / r->extent) luaL_error(L, "buffer too large");
  lmpio_lua_buffer *b = alloc(L, n * r->extent);
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
  if (!lmpio_lua_isnamed(t)) return luaL_argerror(L, 1, "arrays hold predefined datatypes");
  MPI_Count es = type_size(L, t);
  int optidx = 0;
  lua_settop(L, 3);
  if (lua_type(L, 2) == LUA_TTABLE && lua_getfield(L, 2, "shape") != LUA_TNIL) optidx = 2;
  lua_settop(L, 3);
  if (!optidx && !lua_isnil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    optidx = 3;
  }
  size_t dims[LMPIO_LUA_MAXDIM], total = 0;
  int nd = 0, forder = 0;
  if (optidx) {
    static const char *const names[] = {"shape", "order", NULL};
    lmpio_lua_checkfields(L, optidx, names);
    lua_getfield(L, optidx, "shape");
    if (!lua_isnil(L, -1)) nd = checkshape(L, lua_gettop(L), dims, &total);
    lua_getfield(L, optidx, "order");
    forder = checkorder(L, lua_gettop(L));
    lua_pop(L, 2);
  }
  lmpio_lua_buffer *b;
  if (optidx == 2) {
    b = lmpio_lua_newbuffer(L, t, total);
  } else {
    switch (lua_type(L, 2)) {
    case LUA_TNUMBER: {
      lua_Integer n = luaL_checkinteger(L, 2);
      if (n < 0) return luaL_argerror(L, 2, "size must not be negative");
      b = lmpio_lua_newbuffer(L, t, (size_t)n);
      break;
    }
    case LUA_TTABLE: {
      lua_Integer n = luaL_len(L, 2);
      b = lmpio_lua_newbuffer(L, t, (size_t)n);
      if (b->kind == LMPIO_LUA_K_NONE && n > 0)
        return luaL_argerror(L, 2, "elements of this type cannot be written from Lua");
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
      if (len % (size_t)es) return luaL_argerror(L, 2, "not a whole number of elements");
      b = lmpio_lua_newbuffer(L, t, len / (size_t)es);
      if (len) memcpy(b->data, s, len);
      break;
    }
    default:
      return luaL_typeerror(L, 2, "size, table, string or options");
    }
    if (nd && total != b->count)
      return luaL_argerror(L, 3, lua_pushfstring(L, "a shape of %I elements for an array of %I",
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
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 0) return luaL_argerror(L, 1, "size must not be negative");
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

/***
A record datatype from a list of named fields, laid out as a C compiler lays
out the matching struct (each field aligned to its type's alignment, the
extent padded to the largest one), committed.  Use it with `lmpio.records`,
as the datatype of a read from a count (which then returns records), or in a
view.  Written through a contiguous view, records leave only their fields'
bytes in the file (`rt:size()` bytes each, no padding); as the filetype, the
record's layout is kept in the file (`rt:extent()` bytes each, the padding
being holes).
@function lmpio.recordtype
@param fields a list of {name, type [, count]}: type a predefined datatype
 that Lua can read (not complex), count > 1 an array field
@return the datatype
@raise when a field is malformed or named twice
*/
static int l_recordtype(lua_State *L) {
  lmpio_lua_running(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  buildlayout(L, 1);
  lua_getiuservalue(L, -1, 1);
  return 1;
}

/***
A new array of records (h5py's compound type): `r[i].x` reads field x of
record i, `r[i].x = 3` writes it, `r[i].v[2]` reads element 2 of an array
field (a view), `r[i] = {x = 1, id = 2}` stores a whole record.  The
records are the data of any read or write (count #r, datatype r:type()).
@function lmpio.records
@param fields a record datatype from `lmpio.recordtype`, or a field list as
 it takes
@param init a count of zeroed records, a list of record tables, or a string
 of raw bytes (a whole number of records)
@return the records
@raise when fields is not a record datatype, or a value does not fit
*/
static int l_records(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 2);
  records *r;
  if (lua_istable(L, 1)) r = buildlayout(L, 1);
  else if (!(r = findlayout(L, 1)))
    return luaL_typeerror(L, 1, "record datatype (from lmpio.recordtype) or field list");
  int lidx = lua_gettop(L);
  lmpio_lua_buffer *b;
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: {
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 0) return luaL_argerror(L, 2, "count must not be negative");
    newrecords(L, lidx, r, (size_t)n);
    break;
  }
  case LUA_TTABLE: {
    lua_Integer n = luaL_len(L, 2);
    b = newrecords(L, lidx, r, (size_t)n);
    for (lua_Integer k = 0; k < n; k++) {
      lua_geti(L, 2, k + 1);
      setrecord(L, b, (size_t)k, -1);
      lua_pop(L, 1);
    }
    break;
  }
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, 2, &len);
    if (len % r->extent) return luaL_argerror(L, 2, "not a whole number of records");
    b = newrecords(L, lidx, r, len / r->extent);
    if (len) memcpy(b->data, s, len);
    break;
  }
  default:
    return luaL_typeerror(L, 2, "count, table or string");
  }
  return 1;
}

/* ---- arrays as data of messages and collectives ------------------------- */

lmpio_lua_buffer *lmpio_lua_toarray(lua_State *L, int idx, int *code) {
  if (!lmpio_lua_tobuffer(L, idx)) return NULL;
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  lmpio_lua_checkheld(L, b, 0);
  if (b->rec)
    luaL_argerror(L, idx, "records cannot be sent (send r:tostring() and rebuild them with lmpio.records)");
  int c = lmpio_lua_typecode(b->type);
  if (c < 0) luaL_argerror(L, idx, "only arrays of predefined datatypes can be sent");
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
  if (b->count > INT_MAX) luaL_argerror(L, idx, "more than 2^31 - 1 elements in one call");
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

/* ---- memory arguments of data access calls ------------------------------- */

int lmpio_lua_checkmem(lua_State *L, int idx, int writing, lmpio_lua_mem *m) {
  memset(m, 0, sizeof *m);
  size_t nbytes = 0;
  MPI_Datatype deftype = MPI_BYTE;
  size_t defcount = 0;
  int tidx = idx + 2, cidx = idx + 1;
  lmpio_lua_datatype *defobj = NULL;
  switch (lua_type(L, idx)) {
  case LUA_TSTRING:
    if (!writing)
      return luaL_argerror(L, idx, "cannot read into a string (strings are immutable): pass an lmpio.buffer or a count");
    m->ptr = (void *)lua_tolstring(L, idx, &nbytes);
    deftype = MPI_CHAR;
    defcount = nbytes;
    break;
  case LUA_TNUMBER: {
    if (writing) return luaL_typeerror(L, idx, "lmpio buffer, array or string");
    lua_Integer n = luaL_checkinteger(L, idx);
    if (n < 0 || n > INT_MAX) return luaL_argerror(L, idx, "count out of range");
    MPI_Datatype t = lmpio_lua_opttype(L, idx + 1, MPI_BYTE);
    const records *r = findlayout(L, idx + 1);
    if (r) {
      m->buf = newrecords(L, -1, r, (size_t)n);
      lua_remove(L, -2); /* the layout: the records keep it */
    } else {
      m->buf = lmpio_lua_newbuffer(L, t, (size_t)n); /* pushed: the result */
    }
    m->buf->fresh = 1;
    m->ptr = m->buf->data ? (void *)m->buf->data : (void *)"";
    m->count = (int)n;
    m->type = t;
    m->type_size = type_size(L, t);
    m->tobj = lmpio_lua_totype(L, idx + 1);
    return 2;
  }
  case LUA_TUSERDATA: {
    lmpio_lua_buffer *b = lmpio_lua_tobuffer(L, idx);
    if (b) {
      if (!usable(b)) return luaL_error(L, "buffer used after the converter returned");
      if (!writing && b->readonly) return luaL_argerror(L, idx, "cannot read into a read-only buffer");
      lmpio_lua_checkheld(L, b, !writing); /* a read writes the memory, a write reads it */
      if (b->strided) { /* a slice: one item of its datatype; counts are of its elements */
        if (!lua_isnoneornil(L, cidx) || !lua_isnoneornil(L, tidx))
          return luaL_argerror(L, idx, "a slice takes no count or datatype (it is its own datatype)");
        m->buf = b;
        m->ptr = b->data ? (void *)b->data : (void *)"";
        m->count = b->count ? 1 : 0;
        m->type = b->count ? b->dtype : b->type;
        m->type_size = (MPI_Count)b->esize;
        return 3;
      }
      m->buf = b;
      m->ptr = b->data;
      nbytes = b->nbytes;
      deftype = b->type;
      defcount = b->count;
      if (b->rec) {
        defobj = b->rec->tobj;
        if (defobj->type == MPI_DATATYPE_NULL) return luaL_argerror(L, idx, "the record datatype was freed");
        deftype = defobj->type;
      }
      break;
    }
  } /* fall through */
  default:
    return luaL_typeerror(L, idx, writing ? "lmpio buffer, array or string" : "lmpio buffer, array or count");
  }
  if (lua_isnoneornil(L, cidx) && lua_isnoneornil(L, tidx) &&
      (!m->buf || lmpio_lua_typekind(deftype) != LMPIO_LUA_K_NONE)) {
    /* The common call: the whole string or array of a predefined type, which
     * fits by construction; its item size is known without asking MPI. */
    m->count = (int)(defcount > INT_MAX ? INT_MAX : defcount);
    if (defcount > INT_MAX) return luaL_argerror(L, idx, "too many items for one call (more than INT_MAX)");
    m->type = deftype;
    m->type_size = m->buf ? (MPI_Count)m->buf->esize : 1;
    if (!m->ptr) m->ptr = (void *)""; /* zero-length buffer */
    return 3;
  }
  MPI_Datatype t = lmpio_lua_opttype(L, tidx, deftype);
  long long count;
  if (!lua_isnoneornil(L, cidx)) {
    lua_Integer c = luaL_checkinteger(L, cidx);
    if (c < 0 || c > INT_MAX) return luaL_argerror(L, cidx, "count out of range");
    count = c;
  } else if (t == deftype) {
    count = (long long)defcount;
  } else {
    /* A type without a count: as many whole items as fit. */
    MPI_Count lb, ext, tlb, text;
    lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(t, &lb, &ext), "MPI_Type_get_extent_x");
    lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(t, &tlb, &text), "MPI_Type_get_true_extent_x");
    (void)lb;
    long long tub;
    if (tlb < 0) return luaL_argerror(L, tidx, "datatype reaches before the start of the buffer");
    if (!lmpio_lua_add_ok((long long)tlb, (long long)text, &tub) || (unsigned long long)tub > nbytes) count = 0;
    else if (ext <= 0) count = 1;
    else count = ((long long)nbytes - tub) / ext + 1;
  }
  if (count > INT_MAX) return luaL_argerror(L, cidx, "count too large for one call (more than INT_MAX items)");
  lmpio_lua_checkfit(L, lua_isnoneornil(L, cidx) ? idx : cidx, nbytes, (int)count, t);
  m->count = (int)count;
  m->type = t;
  m->type_size = type_size(L, t);
  m->tobj = lmpio_lua_totype(L, tidx);
  if (!m->tobj && t == deftype) m->tobj = defobj;
  if (!m->ptr) m->ptr = (void *)""; /* zero-length buffer */
  return 3;
}

/* lmpio._debug.borrow(fn, type, n, readonly): calls fn with a borrowed array
 * over n zeroed elements on the C side, invalidates it when fn returns, and
 * returns it with the bytes fn left (the mechanism converters use). */
static int l_debug_borrow(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  MPI_Datatype t = lmpio_lua_checktype(L, 2);
  lua_Integer n = luaL_checkinteger(L, 3);
  int ro = lua_toboolean(L, 4);
  unsigned char mem[64 * 16];
  MPI_Count es = lmpio_lua_isnamed(t) ? type_size(L, t) : 1;
  if (n < 0 || n > 64 || es <= 0 || (size_t)n * (size_t)es > sizeof mem)
    return luaL_argerror(L, 3, "0..64 elements of at most 16 bytes");
  memset(mem, 0, sizeof mem);
  lmpio_lua_buffer *b = lmpio_lua_pushborrowed(L, mem, (size_t)n, t, ro);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -2);
  int rc = lua_pcall(L, 1, 0, 0);
  lmpio_lua_invalidate(b);
  if (rc != LUA_OK) return lua_error(L);
  lua_pushlstring(L, (const char *)mem, (size_t)n * (size_t)type_size(L, t));
  return 2;
}

int lmpio_lua_buffer_open(lua_State *L) {
  holds_open(L);
  if (luaL_newmetatable(L, LMPIO_LUA_BUFFER)) {
    static const luaL_Reg meta[] = {
      {"__len", b_len}, {"__tostring", b_tostring_meta}, {"__pairs", b_pairs}, {NULL, NULL},
    };
    static const luaL_Reg index[] = {{"__index", b_index}, {"__newindex", b_newindex}, {NULL, NULL}};
    lua_pushvalue(L, -1);
    luaL_setfuncs(L, index, 1); /* the metatable as their upvalue (isours) */
    static const luaL_Reg buffer_methods[] = {
      {"tostring", b_tostring}, {"totable", b_totable}, {"fill", b_fill}, {"set", b_set},
      {"get", b_get}, {"index", b_indexof}, {"sub", b_sub}, {"reshape", b_reshape},
      {"shape", b_shape}, {"fields", b_fields}, {"type", b_type}, {"nbytes", b_nbytes},
      {"valid", b_valid}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, buffer_methods);
    lua_setfield(L, -2, "methods");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, RECORDTYPES_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    new_weak_keys(L, RECORDTYPES_KEY);
  } else {
    lua_pop(L, 1);
  }
  static const luaL_Reg funcs[] = {
    {"array", l_array}, {"buffer", l_buffer}, {"isbuffer", l_isbuffer},
    {"recordtype", l_recordtype}, {"records", l_records}, {NULL, NULL},
  };
  lmpio_lua_setfuncs(L, funcs);
  if (lua_getfield(L, -1, "_debug") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "_debug");
  }
  lua_pushcfunction(L, l_debug_borrow);
  lua_setfield(L, -2, "borrow");
  lua_pop(L, 1);
  return 0;
}
