/* Lua values in C elements and back: what a[i] reads and what a[i] = v
 * stores (checked against the element type: integers in range, floats in
 * FLOAT's range, booleans), for arrays, record fields and chunks.
 *
 * An integer element takes integers (or booleans, or floats with an
 * integral value) within the range of its C type; a FLOAT takes any number
 * whose magnitude does not exceed FLT_MAX (NaN and infinities are kept;
 * precision is rounded); DOUBLE and LONG_DOUBLE take any number.  An
 * UINT64 element above math.maxinteger reads as a float. */
#include "datatype.h"
#include "buffer.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>



/* Pushes the value of the element of kind and esize bytes at p; 0 when Lua
 * cannot hold it (nothing pushed). */
static int loadval_(lua_State *L, int kind, size_t esize, const unsigned char *p) {
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
  return loadval_(L, kind, esize, p);
}

/* The integer value of the Lua value at vidx for an integer element: LMPIO_LUA_ST_OK
 * and *v, or why not.  A float with an integral value beyond the integers
 * is LMPIO_LUA_ST_RANGE; *big receives it for UINT64. */
static int toint(lua_State *L, int vidx, lua_Integer *v, lua_Number *big) {
  int isnum;
  *v = lua_tointegerx(L, vidx, &isnum);
  if (isnum) return LMPIO_LUA_ST_OK;
  int t = lua_type(L, vidx);
  if (t == LUA_TBOOLEAN) {
    *v = lua_toboolean(L, vidx);
    return LMPIO_LUA_ST_OK;
  }
  if (!lua_isnumber(L, vidx)) return LMPIO_LUA_ST_NEEDINT;
  lua_Number d = lua_tonumber(L, vidx);
  if (isnan(d) || (isfinite(d) && d != floor(d))) return LMPIO_LUA_ST_NOTINT;
  *big = d;
  return LMPIO_LUA_ST_RANGE;
}

/* Stores the Lua value at vidx into the element of kind and esize bytes at
 * p, when it fits the element's type; LMPIO_LUA_ST_OK or why not (p untouched). */
int lmpio_lua_storeelem(lua_State *L, int kind, size_t esize, unsigned char *p, int vidx) {
  switch (kind) {
  case LMPIO_LUA_K_INT: {
    lua_Integer v;
    lua_Number big;
    int st = toint(L, vidx, &v, &big);
    if (st != LMPIO_LUA_ST_OK) return st;
    switch (esize) {
    case 1: { if (v < INT8_MIN || v > INT8_MAX) return LMPIO_LUA_ST_RANGE; int8_t x = (int8_t)v; memcpy(p, &x, 1); return LMPIO_LUA_ST_OK; }
    case 2: { if (v < INT16_MIN || v > INT16_MAX) return LMPIO_LUA_ST_RANGE; int16_t x = (int16_t)v; memcpy(p, &x, 2); return LMPIO_LUA_ST_OK; }
    case 4: { if (v < INT32_MIN || v > INT32_MAX) return LMPIO_LUA_ST_RANGE; int32_t x = (int32_t)v; memcpy(p, &x, 4); return LMPIO_LUA_ST_OK; }
    case 8: { int64_t x = (int64_t)v; memcpy(p, &x, 8); return LMPIO_LUA_ST_OK; }
    }
    break;
  }
  case LMPIO_LUA_K_UINT: {
    lua_Integer v;
    lua_Number big = 0;
    int st = toint(L, vidx, &v, &big);
    if (st == LMPIO_LUA_ST_RANGE && esize == 8 && big >= 0 && big < 18446744073709551616.0) {
      uint64_t x = (uint64_t)big; /* 2^63 .. 2^64 as a float */
      memcpy(p, &x, 8);
      return LMPIO_LUA_ST_OK;
    }
    if (st != LMPIO_LUA_ST_OK) return st;
    if (v < 0) return LMPIO_LUA_ST_RANGE;
    switch (esize) {
    case 1: { if (v > UINT8_MAX) return LMPIO_LUA_ST_RANGE; *p = (unsigned char)v; return LMPIO_LUA_ST_OK; }
    case 2: { if (v > UINT16_MAX) return LMPIO_LUA_ST_RANGE; uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return LMPIO_LUA_ST_OK; }
    case 4: { if (v > (lua_Integer)UINT32_MAX) return LMPIO_LUA_ST_RANGE; uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return LMPIO_LUA_ST_OK; }
    case 8: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); return LMPIO_LUA_ST_OK; }
    }
    break;
  }
  case LMPIO_LUA_K_BOOL: {
    int t = lua_type(L, vidx);
    if (t != LUA_TBOOLEAN && t != LUA_TNUMBER) return LMPIO_LUA_ST_NEEDBOOL;
    int v = t == LUA_TNUMBER ? lua_tonumber(L, vidx) != 0 : lua_toboolean(L, vidx);
    memset(p, 0, esize);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    p[esize - 1] = (unsigned char)v;
#else
    p[0] = (unsigned char)v;
#endif
    return LMPIO_LUA_ST_OK;
  }
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64:
  case LMPIO_LUA_K_LDOUBLE: {
    int isnum;
    lua_Number v = lua_tonumberx(L, vidx, &isnum);
    if (!isnum) return LMPIO_LUA_ST_NEEDNUM;
    if (kind == LMPIO_LUA_K_F32) {
      if (isfinite(v) && (v > FLT_MAX || v < -FLT_MAX)) return LMPIO_LUA_ST_RANGE;
      float x = (float)v;
      memcpy(p, &x, sizeof x);
    } else if (kind == LMPIO_LUA_K_F64) {
      double x = (double)v;
      memcpy(p, &x, sizeof x);
    } else {
      long double x = (long double)v;
      memcpy(p, &x, sizeof x);
    }
    return LMPIO_LUA_ST_OK;
  }
  }
  return LMPIO_LUA_ST_NOLUA;
}

/* Raises the error of a store that failed with st; what names the element
 * ("element 3 of a INT array"). */
int lmpio_lua_storeerror(lua_State *L, int st, int kind, size_t esize, int vidx, const char *what) {
  vidx = lua_absindex(L, vidx);
  switch (st) {
  case LMPIO_LUA_ST_NEEDINT: return lmpio_lua_error(L, MPI_ERR_ARG, "%s needs an integer, got %s", what, luaL_typename(L, vidx));
  case LMPIO_LUA_ST_NOTINT:
    return lmpio_lua_error(L, MPI_ERR_ARG, "%s needs an integer, got a number without integer value (%s)", what,
                      luaL_tolstring(L, vidx, NULL));
  case LMPIO_LUA_ST_NEEDNUM: return lmpio_lua_error(L, MPI_ERR_ARG, "%s needs a number, got %s", what, luaL_typename(L, vidx));
  case LMPIO_LUA_ST_NEEDBOOL: return lmpio_lua_error(L, MPI_ERR_ARG, "%s needs a boolean, got %s", what, luaL_typename(L, vidx));
  case LMPIO_LUA_ST_RANGE: {
    char limits[64];
    unsigned bits = (unsigned)(8 * esize);
    if (kind == LMPIO_LUA_K_F32)
      snprintf(limits, sizeof limits, "magnitude at most %.9g", (double)FLT_MAX);
    else if (kind == LMPIO_LUA_K_INT)
      snprintf(limits, sizeof limits, "%lld..%lld", bits >= 64 ? LLONG_MIN : -(1LL << (bits - 1)),
               bits >= 64 ? LLONG_MAX : (1LL << (bits - 1)) - 1);
    else
      snprintf(limits, sizeof limits, "0..%llu", bits >= 64 ? ULLONG_MAX : (1ULL << bits) - 1);
    return lmpio_lua_error(L, MPI_ERR_ARG, "%s: %s is out of range (%s)", what, luaL_tolstring(L, vidx, NULL), limits);
  }
  }
  return lmpio_lua_error(L, MPI_ERR_ARG, "%s cannot be written from Lua (use set with a string of raw bytes)", what);
}

