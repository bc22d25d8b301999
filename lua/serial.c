/* Lua values as bytes, for the collectives and messages of communicators
 * (lua/message.c): comm:bcast, comm:allgather, comm:send and the others send
 * what lmpio_lua_serialise makes and rebuild it with
 * lmpio_lua_deserialise. */
#include "serial.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A value is one tag byte and its payload: integers zigzag varints, floats
 * 8 bytes (IEEE 754 bits, little-endian), strings a varint length and the
 * bytes, tables the length n of their sequence part, n values, then
 * key/value pairs up to T_END.  Every rank of a job runs the same build, so
 * nothing else needs describing. */
enum { T_NIL, T_FALSE, T_TRUE, T_INT, T_FLT, T_STR, T_TAB, T_END };
enum { MAXDEPTH = 100 };

typedef struct {
  unsigned char *out; /* NULL: only count */
  size_t pos;
  int arg;            /* the argument being sent, for messages */
  int seen;           /* stack index of the table of tables being sent (cycles) */
  int depth;
  struct { int keyidx; lua_Integer i; } path[MAXDEPTH]; /* keyidx 0: sequence index i */
} encoder;

static void put(encoder *e, const void *p, size_t n) {
  if (e->out) memcpy(e->out + e->pos, p, n);
  e->pos += n;
}

static void putbyte(encoder *e, int b) {
  unsigned char c = (unsigned char)b;
  put(e, &c, 1);
}

static void putvarint(encoder *e, uint64_t u) {
  while (u >= 0x80) {
    putbyte(e, (int)(u & 0x7f) | 0x80);
    u >>= 7;
  }
  putbyte(e, (int)u);
}

static void putfloat(encoder *e, lua_Number x) {
  double d = (double)x;
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (8 * i));
  put(e, b, 8);
}

/* Pushes where in the value being sent we are: "" or " at .a[2]". */
static void pushpath(lua_State *L, encoder *e) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int d = 0; d < e->depth; d++) {
    if (d == 0) luaL_addstring(&b, " at ");
    if (!e->path[d].keyidx) {
      char num[64];
      snprintf(num, sizeof num, "[%lld]", (long long)e->path[d].i);
      luaL_addstring(&b, num);
      continue;
    }
    int k = e->path[d].keyidx;
    size_t len = 0;
    const char *s = lua_type(L, k) == LUA_TSTRING ? lua_tolstring(L, k, &len) : NULL;
    int ident = s && len > 0 && len < 64 && !(s[0] >= '0' && s[0] <= '9');
    for (size_t i = 0; ident && i < len; i++)
      ident = s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9');
    if (ident) {
      luaL_addchar(&b, '.');
      luaL_addlstring(&b, s, len);
    } else if (s) {
      luaL_addstring(&b, "[\"");
      luaL_addlstring(&b, s, len > 40 ? 40 : len);
      luaL_addstring(&b, len > 40 ? "...\"]" : "\"]");
    } else {
      luaL_addchar(&b, '[');
      luaL_tolstring(L, k, NULL);
      luaL_addvalue(&b);
      luaL_addchar(&b, ']');
    }
  }
  luaL_pushresult(&b);
}

static void encode(lua_State *L, encoder *e, int idx);

static void badvalue(lua_State *L, encoder *e, int idx) {
  const char *tname = luaL_typename(L, idx);
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) tname = lua_tostring(L, -1);
  pushpath(L, e);
  lmpio_lua_argerror(L, e->arg, lua_pushfstring(L, "a %s%s cannot be sent; send nil, booleans, "
                                           "numbers, strings or tables of them", tname, lua_tostring(L, -1)));
}

static void encode_table(lua_State *L, encoder *e, int idx) {
  if (e->depth >= MAXDEPTH) {
    pushpath(L, e);
    lmpio_lua_argerror(L, e->arg, lua_pushfstring(L, "tables nested more than %d deep cannot be sent%s",
                                             MAXDEPTH, lua_tostring(L, -1)));
  }
  lmpio_lua_checkstack(L, 8, "sending a table");
  lua_pushvalue(L, idx);
  if (lua_rawget(L, e->seen) != LUA_TNIL) {
    pushpath(L, e);
    lmpio_lua_argerror(L, e->arg, lua_pushfstring(L, "a table%s that contains itself cannot be sent", lua_tostring(L, -1)));
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, e->seen);
  lua_Integer n = 0;
  while (lua_rawgeti(L, idx, n + 1) != LUA_TNIL) {
    lua_pop(L, 1);
    n++;
  }
  lua_pop(L, 1);
  putbyte(e, T_TAB);
  putvarint(e, (uint64_t)n);
  int d = e->depth++;
  for (lua_Integer i = 1; i <= n; i++) {
    e->path[d].keyidx = 0;
    e->path[d].i = i;
    lua_rawgeti(L, idx, i);
    encode(L, e, lua_gettop(L));
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int k = lua_gettop(L) - 1;
    if (lua_isinteger(L, k) && lua_tointeger(L, k) >= 1 && lua_tointeger(L, k) <= n) {
      lua_pop(L, 1);
      continue;
    }
    e->path[d].keyidx = k;
    int kt = lua_type(L, k);
    if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN) {
      e->depth = d; /* the path of the table, then the key */
      pushpath(L, e);
      lmpio_lua_argerror(L, e->arg, lua_pushfstring(L, "a %s key of a table%s cannot be sent; keys are "
                                               "booleans, numbers or strings", luaL_typename(L, k), lua_tostring(L, -1)));
    }
    encode(L, e, k);
    encode(L, e, k + 1);
    lua_pop(L, 1);
  }
  e->depth = d;
  putbyte(e, T_END);
  lua_pushvalue(L, idx);
  lua_pushnil(L);
  lua_rawset(L, e->seen);
}

static void encode(lua_State *L, encoder *e, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL: putbyte(e, T_NIL); break;
  case LUA_TBOOLEAN: putbyte(e, lua_toboolean(L, idx) ? T_TRUE : T_FALSE); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      uint64_t u = (uint64_t)lua_tointeger(L, idx);
      putbyte(e, T_INT);
      putvarint(e, (u << 1) ^ (0 - (u >> 63))); /* zigzag: small magnitudes, few bytes */
    } else {
      putbyte(e, T_FLT);
      putfloat(e, lua_tonumber(L, idx));
    }
    break;
  case LUA_TSTRING: {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    putbyte(e, T_STR);
    putvarint(e, (uint64_t)len);
    put(e, s, len);
    break;
  }
  case LUA_TTABLE: encode_table(L, e, idx); break;
  default: badvalue(L, e, idx);
  }
}

/* Serialises the value at idx (argument arg of the method, for messages):
 * pushes a userdata holding its bytes and returns them (size in *n).
 * Raises an argument error for a value that cannot be sent. */
static unsigned char *serialise(lua_State *L, int idx, int arg, size_t *n) {
  idx = lua_absindex(L, idx);
  lua_newtable(L); /* the tables on the path being sent */
  encoder *e = lua_newuserdatauv(L, sizeof *e, 0);
  e->out = NULL;
  e->pos = 0;
  e->arg = arg;
  e->seen = lua_gettop(L) - 1;
  e->depth = 0;
  encode(L, e, idx); /* measures, and raises for what cannot be sent */
  unsigned char *out = lua_newuserdatauv(L, e->pos ? e->pos : 1, 0);
  *n = e->pos;
  e->out = out;
  e->pos = 0;
  encode(L, e, idx);
  lua_replace(L, -3); /* keep the bytes only */
  lua_pop(L, 1);
  return out;
}

typedef struct {
  const unsigned char *p, *end;
} decoder;

static void corrupt(lua_State *L) { lmpio_lua_error(L, MPI_ERR_OTHER, "lmpio: received a corrupt serialised value"); }

static int getbyte(lua_State *L, decoder *d) {
  if (d->p >= d->end) corrupt(L);
  return *d->p++;
}

static uint64_t getvarint(lua_State *L, decoder *d) {
  uint64_t u = 0;
  for (int shift = 0;; shift += 7) {
    int b = getbyte(L, d);
    if (shift > 63) corrupt(L);
    u |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return u;
  }
}

/* Pushes the value at d->p (or returns T_END without pushing). */
static int decode(lua_State *L, decoder *d, int depth) {
  int tag = getbyte(L, d);
  switch (tag) {
  case T_NIL: lua_pushnil(L); break;
  case T_FALSE: lua_pushboolean(L, 0); break;
  case T_TRUE: lua_pushboolean(L, 1); break;
  case T_INT: {
    uint64_t u = getvarint(L, d);
    lua_pushinteger(L, (lua_Integer)((u >> 1) ^ (0 - (u & 1))));
    break;
  }
  case T_FLT: {
    if (d->end - d->p < 8) corrupt(L);
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)d->p[i] << (8 * i);
    d->p += 8;
    double x;
    memcpy(&x, &u, sizeof x);
    lua_pushnumber(L, (lua_Number)x);
    break;
  }
  case T_STR: {
    uint64_t len = getvarint(L, d);
    if (len > (uint64_t)(d->end - d->p)) corrupt(L);
    lua_pushlstring(L, (const char *)d->p, (size_t)len);
    d->p += len;
    break;
  }
  case T_TAB: {
    uint64_t n = getvarint(L, d);
    if (depth >= MAXDEPTH || n > (uint64_t)(d->end - d->p)) corrupt(L);
    lmpio_lua_checkstack(L, 4, "receiving a table");
    lua_createtable(L, n > INT_MAX ? INT_MAX : (int)n, 0);
    for (uint64_t i = 1; i <= n; i++) {
      if (decode(L, d, depth + 1) == T_END) corrupt(L);
      lua_rawseti(L, -2, (lua_Integer)i);
    }
    while (decode(L, d, depth + 1) != T_END) {
      if (lua_isnil(L, -1)) corrupt(L);
      if (decode(L, d, depth + 1) == T_END) corrupt(L);
      lua_rawset(L, -3);
    }
    break;
  }
  case T_END: return T_END;
  default: corrupt(L);
  }
  return tag;
}

static void deserialise(lua_State *L, const unsigned char *p, size_t n) {
  decoder d = {p, p + n};
  if (decode(L, &d, 0) == T_END || d.p != d.end) corrupt(L);
}

/* For the collective methods of lua/message.c (lmpio_lua.h). */
unsigned char *lmpio_lua_serialise(lua_State *L, int idx, int arg, size_t *n) { return serialise(L, idx, arg, n); }
void lmpio_lua_deserialise(lua_State *L, const unsigned char *p, size_t n) { deserialise(L, p, n); }

