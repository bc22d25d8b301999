/* Typed arrays and byte buffers over C memory (metatable "lmpio.buffer").
 *
 *   lmpio.array(lmpio.DOUBLE, n)        n zeroed doubles
 *   lmpio.array(lmpio.INT, {1, 2, 3})   from a Lua table
 *   lmpio.array(lmpio.INT, bytes)       from the raw bytes of a string
 *   lmpio.buffer(n) / lmpio.buffer(s)   mutable bytes (an array of lmpio.BYTE)
 *
 * a[i] (1-based), #a, a:tostring([i [, j]]) (raw bytes of elements i..j),
 * a:totable([i [, j]]), a:fill(v), a:set(i, table_or_string), a:type(),
 * a:nbytes(), a:valid().  Owned memory lives inside the userdata; borrowed
 * memory (a converter's buffers) can be invalidated, after which every
 * access raises "used after the converter returned". */
#include "lmpio_lua.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define ALIGN 16

static lmpio_lua_buffer *alloc(lua_State *L, size_t inline_bytes) {
  size_t hdr = (sizeof(lmpio_lua_buffer) + ALIGN - 1) / ALIGN * ALIGN;
  if (inline_bytes > (size_t)-1 - hdr - ALIGN) luaL_error(L, "buffer too large");
  lmpio_lua_buffer *b = lua_newuserdatauv(L, hdr + (inline_bytes ? inline_bytes + ALIGN : 0), 0);
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

lmpio_lua_buffer *lmpio_lua_tobuffer(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LMPIO_LUA_BUFFER);
}

lmpio_lua_buffer *lmpio_lua_checkbuffer(lua_State *L, int idx) {
  lmpio_lua_buffer *b = luaL_checkudata(L, idx, LMPIO_LUA_BUFFER);
  if (!b->valid) luaL_error(L, "buffer used after the converter returned");
  return b;
}

static MPI_Count type_size(lua_State *L, MPI_Datatype t) {
  MPI_Count n = 0;
  lmpio_lua_checkmpi(L, MPI_Type_size_x(t, &n), "MPI_Type_size_x");
  return n;
}

/* Bytes from the buffer's start that count items of type span (their data
 * must start at or after 0); -1 when they reach below 0. */
static long long span(lua_State *L, int count, MPI_Datatype t) {
  MPI_Count lb, ext, tlb, text;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(t, &lb, &ext), "MPI_Type_get_extent_x");
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(t, &tlb, &text), "MPI_Type_get_true_extent_x");
  (void)lb;
  if (count == 0 || text == 0) return 0;
  long long first = (long long)tlb, last = (long long)(count - 1) * ext + tlb;
  long long lo = first < last ? first : last;
  long long hi = (first > last ? first : last) + text;
  return lo < 0 ? -1 : hi;
}

void lmpio_lua_checkfit(lua_State *L, int arg, size_t nbytes, int count, MPI_Datatype type) {
  if (count < 0) luaL_argerror(L, arg, "count must not be negative");
  long long need = span(L, count, type);
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
  if (need < 0) luaL_error(L, "datatype reaches before the start of the buffer");
  lmpio_lua_buffer *b = alloc(L, (size_t)need);
  b->count = b->nbytes = (size_t)need;
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

void lmpio_lua_invalidate(lmpio_lua_buffer *b) {
  b->valid = 0;
  b->data = NULL;
  b->nbytes = b->count = 0;
}

/* ---- elements ----------------------------------------------------------- */

static const char *elemname(lmpio_lua_buffer *b) {
  const char *n = lmpio_lua_typename(b->type);
  return n ? n : "?";
}

static void pushelem(lua_State *L, lmpio_lua_buffer *b, size_t i) {
  const unsigned char *p = b->data + i * b->esize;
  switch (b->kind) {
  case LMPIO_LUA_K_INT:
    switch (b->esize) {
    case 1: { int8_t v; memcpy(&v, p, 1); lua_pushinteger(L, v); return; }
    case 2: { int16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); return; }
    case 4: { int32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); return; }
    case 8: { int64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); return; }
    }
    break;
  case LMPIO_LUA_K_UINT:
    switch (b->esize) {
    case 1: lua_pushinteger(L, *p); return;
    case 2: { uint16_t v; memcpy(&v, p, 2); lua_pushinteger(L, v); return; }
    case 4: { uint32_t v; memcpy(&v, p, 4); lua_pushinteger(L, v); return; }
    case 8: { uint64_t v; memcpy(&v, p, 8); lua_pushinteger(L, (lua_Integer)v); return; }
    }
    break;
  case LMPIO_LUA_K_BOOL: {
    int nz = 0;
    for (size_t k = 0; k < b->esize; k++) nz |= p[k];
    lua_pushboolean(L, nz);
    return;
  }
  case LMPIO_LUA_K_F32: { float v; memcpy(&v, p, sizeof v); lua_pushnumber(L, v); return; }
  case LMPIO_LUA_K_F64: { double v; memcpy(&v, p, sizeof v); lua_pushnumber(L, v); return; }
  case LMPIO_LUA_K_LDOUBLE: { long double v; memcpy(&v, p, sizeof v); lua_pushnumber(L, (lua_Number)v); return; }
  }
  luaL_error(L, "elements of type %s cannot be read from Lua (use tostring)", elemname(b));
}

/* Stores the value at vidx into element i. */
static void setelem(lua_State *L, lmpio_lua_buffer *b, size_t i, int vidx) {
  unsigned char *p = b->data + i * b->esize;
  switch (b->kind) {
  case LMPIO_LUA_K_INT:
  case LMPIO_LUA_K_UINT: {
    int isnum;
    lua_Integer v = lua_tointegerx(L, vidx, &isnum);
    if (!isnum) {
      if (lua_type(L, vidx) == LUA_TBOOLEAN) v = lua_toboolean(L, vidx);
      else luaL_error(L, "element %I of a %s array needs an integer, got %s", (lua_Integer)i + 1,
                      elemname(b), lua_isnumber(L, vidx) ? "a number without integer value" : luaL_typename(L, vidx));
    }
    switch (b->esize) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); return; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
    case 8: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); return; }
    }
    break;
  }
  case LMPIO_LUA_K_BOOL: {
    int t = lua_type(L, vidx);
    int v = t == LUA_TNUMBER ? lua_tonumber(L, vidx) != 0 : lua_toboolean(L, vidx);
    if (t != LUA_TBOOLEAN && t != LUA_TNUMBER)
      luaL_error(L, "element %I of a %s array needs a boolean, got %s", (lua_Integer)i + 1, elemname(b),
                 luaL_typename(L, vidx));
    memset(p, 0, b->esize);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    p[b->esize - 1] = (unsigned char)v;
#else
    p[0] = (unsigned char)v;
#endif
    return;
  }
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64:
  case LMPIO_LUA_K_LDOUBLE: {
    int isnum;
    lua_Number v = lua_tonumberx(L, vidx, &isnum);
    if (!isnum) luaL_error(L, "element %I of a %s array needs a number, got %s", (lua_Integer)i + 1,
                           elemname(b), luaL_typename(L, vidx));
    if (b->kind == LMPIO_LUA_K_F32) { float x = (float)v; memcpy(p, &x, sizeof x); }
    else if (b->kind == LMPIO_LUA_K_F64) { double x = (double)v; memcpy(p, &x, sizeof x); }
    else { long double x = (long double)v; memcpy(p, &x, sizeof x); }
    return;
  }
  }
  luaL_error(L, "elements of type %s cannot be written from Lua (use set with a string)", elemname(b));
}

static int b_index(lua_State *L) {
  luaL_checkudata(L, 1, LMPIO_LUA_BUFFER);
  int isnum;
  lua_Integer i = lua_tointegerx(L, 2, &isnum);
  if (isnum) {
    lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
    if (i < 1 || (lua_Unsigned)i > b->count) return 0;
    pushelem(L, b, (size_t)i - 1);
    return 1;
  }
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "methods");
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int b_newindex(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  int isnum;
  lua_Integer i = lua_tointegerx(L, 2, &isnum);
  if (!isnum) return luaL_error(L, "%s arrays only have integer keys", elemname(b));
  if (i < 1 || (lua_Unsigned)i > b->count)
    return luaL_error(L, "index %I out of range 1..%I", i, (lua_Integer)b->count);
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  setelem(L, b, (size_t)i - 1, 3);
  return 0;
}

static int b_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lmpio_lua_checkbuffer(L, 1)->count);
  return 1;
}

static int b_tostring_meta(lua_State *L) {
  lmpio_lua_buffer *b = luaL_checkudata(L, 1, LMPIO_LUA_BUFFER);
  if (!b->valid) lua_pushliteral(L, "lmpio.buffer (used after the converter returned)");
  else if (b->type == MPI_BYTE && b->esize == 1)
    lua_pushfstring(L, "lmpio.buffer(%I)%s: %p", (lua_Integer)b->count, b->borrowed ? " borrowed" : "", (void *)b);
  else
    lua_pushfstring(L, "lmpio.array(%s, %I)%s: %p", elemname(b), (lua_Integer)b->count,
                    b->borrowed ? " borrowed" : "", (void *)b);
  return 1;
}

/* Element range [i, j] (1-based, inclusive, negative from the end) -> start, n. */
static void range(lua_State *L, lmpio_lua_buffer *b, int ai, int aj, size_t *start, size_t *n) {
  lua_Integer cnt = (lua_Integer)b->count;
  lua_Integer i = luaL_optinteger(L, ai, 1), j = luaL_optinteger(L, aj, cnt);
  if (i < 0) i += cnt + 1;
  if (j < 0) j += cnt + 1;
  if (i < 1) i = 1;
  if (j > cnt) j = cnt;
  *start = (size_t)(i - 1);
  *n = j >= i ? (size_t)(j - i + 1) : 0;
}

/* a:tostring([i [, j]]): the raw bytes of elements i..j */
static int b_tostring(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t s, n;
  range(L, b, 2, 3, &s, &n);
  lua_pushlstring(L, n ? (const char *)b->data + s * b->esize : "", n * b->esize);
  return 1;
}

static int b_totable(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t s, n;
  range(L, b, 2, 3, &s, &n);
  if (n > INT_MAX) return luaL_error(L, "too many elements for a table");
  lua_createtable(L, (int)n, 0);
  for (size_t k = 0; k < n; k++) {
    pushelem(L, b, s + k);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
  }
  return 1;
}

static int b_fill(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  luaL_checkany(L, 2);
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  if (b->count == 0) return 0;
  setelem(L, b, 0, 2);
  for (size_t k = 1; k < b->count; k++) memcpy(b->data + k * b->esize, b->data, b->esize);
  lua_settop(L, 1);
  return 1;
}

/* a:set(i, values): copies a table of elements, or a string of raw bytes
 * (a whole number of elements), into the array from element i. */
static int b_set(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (b->readonly) return luaL_error(L, "attempt to write to a read-only buffer");
  if (i < 1) return luaL_argerror(L, 2, "index must be at least 1");
  size_t start = (size_t)i - 1;
  if (lua_type(L, 3) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, 3, &len);
    if (len % b->esize) return luaL_argerror(L, 3, "not a whole number of elements");
    if (start > b->count || len / b->esize > b->count - start)
      return luaL_argerror(L, 3, "does not fit in the buffer");
    if (len) memcpy(b->data + start * b->esize, s, len);
  } else {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 3);
    if (start > b->count || (lua_Unsigned)n > b->count - start)
      return luaL_argerror(L, 3, "does not fit in the buffer");
    for (lua_Integer k = 0; k < n; k++) {
      lua_geti(L, 3, k + 1);
      setelem(L, b, start + (size_t)k, -1);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 1);
  return 1;
}

static int b_type(lua_State *L) {
  lmpio_lua_pushtype(L, lmpio_lua_checkbuffer(L, 1)->type, 0);
  return 1;
}

static int b_nbytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)lmpio_lua_checkbuffer(L, 1)->nbytes);
  return 1;
}

static int b_valid(lua_State *L) {
  lua_pushboolean(L, ((lmpio_lua_buffer *)luaL_checkudata(L, 1, LMPIO_LUA_BUFFER))->valid);
  return 1;
}

/* ---- constructors ---------------------------------------------------------- */

/* lmpio.array(type, n | table | string) */
static int l_array(lua_State *L) {
  MPI_Datatype t = lmpio_lua_checktype(L, 1);
  if (!lmpio_lua_isnamed(t)) return luaL_argerror(L, 1, "arrays hold predefined datatypes");
  MPI_Count es = type_size(L, t);
  switch (lua_type(L, 2)) {
  case LUA_TNUMBER: {
    lua_Integer n = luaL_checkinteger(L, 2);
    if (n < 0) return luaL_argerror(L, 2, "size must not be negative");
    lmpio_lua_newbuffer(L, t, (size_t)n);
    return 1;
  }
  case LUA_TTABLE: {
    lua_Integer n = luaL_len(L, 2);
    lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, t, (size_t)n);
    if (b->kind == LMPIO_LUA_K_NONE && n > 0)
      return luaL_argerror(L, 2, "elements of this type cannot be written from Lua");
    for (lua_Integer k = 0; k < n; k++) {
      lua_geti(L, 2, k + 1);
      setelem(L, b, (size_t)k, -1);
      lua_pop(L, 1);
    }
    return 1;
  }
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, 2, &len);
    if (len % (size_t)es) return luaL_argerror(L, 2, "not a whole number of elements");
    lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, t, len / (size_t)es);
    if (len) memcpy(b->data, s, len);
    return 1;
  }
  default:
    return luaL_typeerror(L, 2, "size, table or string");
  }
}

/* lmpio.buffer(n | string) */
static int l_buffer(lua_State *L) {
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

static int l_isbuffer(lua_State *L) {
  lua_pushboolean(L, lmpio_lua_tobuffer(L, 1) != NULL);
  return 1;
}

/* ---- memory arguments of data access calls ------------------------------- */

int lmpio_lua_checkmem(lua_State *L, int idx, int writing, lmpio_lua_mem *m) {
  memset(m, 0, sizeof *m);
  size_t nbytes = 0;
  MPI_Datatype deftype = MPI_BYTE;
  size_t defcount = 0;
  int tidx = idx + 2, cidx = idx + 1;
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
    m->buf = lmpio_lua_newbuffer(L, t, (size_t)n); /* pushed: the result */
    m->ptr = m->buf->data;
    m->count = (int)n;
    m->type = t;
    m->type_size = type_size(L, t);
    m->tobj = lmpio_lua_totype(L, idx + 1);
    return 2;
  }
  case LUA_TUSERDATA: {
    lmpio_lua_buffer *b = lmpio_lua_tobuffer(L, idx);
    if (b) {
      if (!b->valid) return luaL_error(L, "buffer used after the converter returned");
      if (!writing && b->readonly) return luaL_argerror(L, idx, "cannot read into a read-only buffer");
      m->buf = b;
      m->ptr = b->data;
      nbytes = b->nbytes;
      deftype = b->type;
      defcount = b->count;
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
    if (tlb < 0) return luaL_argerror(L, tidx, "datatype reaches before the start of the buffer");
    if ((long long)nbytes < tlb + text) count = 0;
    else if (ext <= 0) count = 1;
    else count = ((long long)nbytes - (tlb + text)) / ext + 1;
  }
  if (count > INT_MAX) return luaL_argerror(L, cidx, "count too large for one call (more than INT_MAX items)");
  lmpio_lua_checkfit(L, lua_isnoneornil(L, cidx) ? idx : cidx, nbytes, (int)count, t);
  m->count = (int)count;
  m->type = t;
  m->type_size = type_size(L, t);
  m->tobj = lmpio_lua_totype(L, tidx);
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
  if (n < 0 || n > 64) return luaL_argerror(L, 3, "0..64 elements");
  unsigned char mem[64 * 16];
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
  if (luaL_newmetatable(L, LMPIO_LUA_BUFFER)) {
    static const luaL_Reg meta[] = {
      {"__index", b_index}, {"__newindex", b_newindex}, {"__len", b_len},
      {"__tostring", b_tostring_meta}, {NULL, NULL},
    };
    static const luaL_Reg methods[] = {
      {"tostring", b_tostring}, {"totable", b_totable}, {"fill", b_fill}, {"set", b_set},
      {"type", b_type}, {"nbytes", b_nbytes}, {"valid", b_valid}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {
    {"array", l_array}, {"buffer", l_buffer}, {"isbuffer", l_isbuffer}, {NULL, NULL},
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
