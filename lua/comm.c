/* Communicators (lmpio.world, lmpio.self, comm:rank/size/barrier/split/dup/
 * free), the collectives that scripts need to agree on values (bcast,
 * allgather, allreduce, scan, exscan; Lua values are serialised), a grid
 * helper (lmpio.dims_create, comm:grid), and info objects as Lua tables.
 *
 * Collective methods agree on their argument errors (lua/agree.c): each one
 * checks its arguments (and serialises what it sends) first, then joins one
 * agreement (an MPI_Allreduce of a few integers, lmpio_lua_agree, that also
 * carries a small bcast's value; allgather's own exchange for allgather)
 * before any other communication.  A rank whose checks failed joins that agreement
 * with a failure flag instead, so every rank raises (with the message of
 * the lowest failing rank) and no rank is left waiting in a collective.
 *
 * Every method checks that MPI is still running: a call that runs after
 * MPI_Finalize (a __gc at exit, say) raises a Lua error instead of making
 * the MPI library abort the process. */
#include "lmpio_lua.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  MPI_Comm comm;
  int owned; /* freed by comm:free() (MPI_Comm_free is collective: never in __gc) */
} lcomm;

static int finalized(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin;
}

static lcomm *checklcomm(lua_State *L, int idx) {
  lcomm *c = luaL_checkudata(L, idx, LMPIO_LUA_COMM);
  if (finalized())
    luaL_error(L, "attempt to use a communicator after MPI was finalized (the script has ended)");
  if (c->comm == MPI_COMM_NULL) luaL_error(L, "attempt to use a freed communicator");
  return c;
}

MPI_Comm lmpio_lua_checkcomm(lua_State *L, int idx) { return checklcomm(L, idx)->comm; }

static lcomm *pushcomm(lua_State *L, MPI_Comm comm, int owned) {
  lcomm *c = lua_newuserdatauv(L, sizeof *c, 0);
  c->comm = comm;
  c->owned = owned;
  luaL_setmetatable(L, LMPIO_LUA_COMM);
  return c;
}

/* LMPIO_LUA_NAGREE values to agree on, then NINLINE words that carry up to
 * NINLINE * 7 bytes of a bcast's value (7 bytes a word, so that every word
 * is non-negative and MPI_MAX with the zeros of the other ranks is the
 * root's word). */
enum { AGREE_WORDS = LMPIO_LUA_AGREE_WORDS, NINLINE = AGREE_WORDS - LMPIO_LUA_NAGREE };

typedef lmpio_lua_collective collective_method;

static void fail_bcast(lua_State *L, MPI_Comm comm, const char *msg) {
  long long v[AGREE_WORDS] = {lmpio_lua_commsize(comm) - lmpio_lua_commrank(comm)};
  lmpio_lua_agree(L, comm, v, AGREE_WORDS, msg);
}

/* Runs a collective method; an argument error (raised before the method
 * joined its agreement) becomes this rank's failure in the agreement, which
 * the other ranks are waiting in, so that every rank raises. */
static int collective_call(lua_State *L) {
  const collective_method *cm = lua_touserdata(L, lua_upvalueindex(1));
  MPI_Comm comm = checklcomm(L, 1)->comm; /* no communicator: nobody to agree with */
  int n = lmpio_lua_collective_pcall(L, cm->fn);
  if (n >= 0) return n;
  if (lua_type(L, -1) != LUA_TSTRING) {
    luaL_tolstring(L, -1, NULL);
    lua_remove(L, -2);
  }
  lmpio_lua_fix_argerror(L, cm->name, 1);
  cm->fail(L, comm, lua_tostring(L, -1));
  return luaL_error(L, "%s: agreement failed", cm->name); /* not reached */
}


/* ---- serialisation of Lua values ---------------------------------------- */

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
  luaL_argerror(L, e->arg, lua_pushfstring(L, "a %s%s cannot be sent; send nil, booleans, "
                                           "numbers, strings or tables of them", tname, lua_tostring(L, -1)));
}

static void encode_table(lua_State *L, encoder *e, int idx) {
  if (e->depth >= MAXDEPTH) {
    pushpath(L, e);
    luaL_argerror(L, e->arg, lua_pushfstring(L, "tables nested more than %d deep cannot be sent%s",
                                             MAXDEPTH, lua_tostring(L, -1)));
  }
  luaL_checkstack(L, 8, "sending a table");
  lua_pushvalue(L, idx);
  if (lua_rawget(L, e->seen) != LUA_TNIL) {
    pushpath(L, e);
    luaL_argerror(L, e->arg, lua_pushfstring(L, "a table%s that contains itself cannot be sent", lua_tostring(L, -1)));
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
      luaL_argerror(L, e->arg, lua_pushfstring(L, "a %s key of a table%s cannot be sent; keys are "
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

static void corrupt(lua_State *L) { luaL_error(L, "lmpio: received a corrupt serialised value"); }

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
    luaL_checkstack(L, 4, "receiving a table");
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

/* MPI counts are ints: large messages go in pieces. */
#define CHUNK ((size_t)1 << 30)

/* ---- methods ------------------------------------------------------------ */

/***
The rank of this process in the communicator.
@function comm:rank
@return integer, from 0
@raise when the communicator was freed or MPI was finalized
*/
static int c_rank(lua_State *L) {
  int r = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_rank(lmpio_lua_checkcomm(L, 1), &r), "MPI_Comm_rank");
  lua_pushinteger(L, r);
  return 1;
}

/***
The number of processes in the communicator.
@function comm:size
@return integer
@raise when the communicator was freed or MPI was finalized
*/
static int c_size(lua_State *L) {
  int n = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_size(lmpio_lua_checkcomm(L, 1), &n), "MPI_Comm_size");
  lua_pushinteger(L, n);
  return 1;
}

/***
Waits until every rank of the communicator has called it (`MPI_Barrier`).
Collective.
@function comm:barrier
@raise when the communicator was freed or MPI was finalized (for instance
  from a `__gc` that runs after the script ended)
*/
static int c_barrier(lua_State *L) {
  lmpio_lua_checkmpi(L, MPI_Barrier(lmpio_lua_checkcomm(L, 1)), "MPI_Barrier");
  return 0;
}

static int checkint(lua_State *L, int arg, lua_Integer v, lua_Integer min) {
  if (v < min || v > INT_MAX) luaL_argerror(L, arg, "out of range");
  return (int)v;
}

/***
Splits the communicator into one new communicator per color
(`MPI_Comm_split`).
Collective.  Ranks that give the same color end up in the same
communicator, ordered by key and then by their rank here.  Argument errors
are agreed: when any rank's arguments are wrong, every rank raises.
@function comm:split
@param color a non-negative integer; `nil`, `false` or `lmpio.UNDEFINED`:
  this rank joins no communicator
@param[opt=0] key an integer that orders the ranks of a color
@return a new communicator (free it with `comm:free`), or `nil` for a rank
  whose color was undefined
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when a color or key
  is not an integer in range on any rank
*/
static int c_split(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int color = MPI_UNDEFINED;
  if (!lua_isnoneornil(L, 2) && !(lua_isboolean(L, 2) && !lua_toboolean(L, 2))) {
    lua_Integer v = luaL_checkinteger(L, 2);
    if (v != MPI_UNDEFINED) color = checkint(L, 2, v, 0);
  }
  int key = checkint(L, 3, luaL_optinteger(L, 3, 0), INT_MIN);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  long long v[LMPIO_LUA_NAGREE] = {0};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  MPI_Comm out = MPI_COMM_NULL;
  lmpio_lua_checkmpi(L, MPI_Comm_split(comm, color, key, &out), "MPI_Comm_split");
  if (out == MPI_COMM_NULL) return 0;
  c->comm = out;
  return 1;
}

/***
A new communicator with the same ranks (`MPI_Comm_dup`).
Collective.  Communication on it never mixes with the original's.
@function comm:dup
@return a new communicator (free it with `comm:free`)
@raise when the communicator was freed or MPI was finalized
*/
static int c_dup(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  MPI_Comm out = MPI_COMM_NULL;
  lmpio_lua_checkmpi(L, MPI_Comm_dup(comm, &out), "MPI_Comm_dup");
  c->comm = out;
  return 1;
}

/***
Frees a communicator made by `comm:split` or `comm:dup` (`MPI_Comm_free`).
Collective.  Communicators are never freed by the garbage collector (that
would be a collective call at an unknown time): free the ones you make.
Any later use raises "attempt to use a freed communicator".
@function comm:free
@raise for `lmpio.world` and `lmpio.self`, a freed communicator, or after
  MPI was finalized
*/
static int c_free(lua_State *L) {
  lcomm *c = checklcomm(L, 1);
  if (!c->owned) return luaL_error(L, "cannot free a predefined communicator");
  lmpio_lua_checkmpi(L, MPI_Comm_free(&c->comm), "MPI_Comm_free");
  c->comm = MPI_COMM_NULL;
  return 0;
}

static int c_tostring(lua_State *L) {
  lcomm *c = luaL_checkudata(L, 1, LMPIO_LUA_COMM);
  if (finalized()) {
    lua_pushliteral(L, "lmpio.comm (MPI finalized)");
    return 1;
  }
  if (c->comm == MPI_COMM_NULL) {
    lua_pushliteral(L, "lmpio.comm (freed)");
    return 1;
  }
  lua_pushfstring(L, "lmpio.comm (rank %d of %d): %p", lmpio_lua_commrank(c->comm), lmpio_lua_commsize(c->comm), (void *)c);
  return 1;
}

static int c_eq(lua_State *L) {
  lcomm *a = luaL_checkudata(L, 1, LMPIO_LUA_COMM), *b = luaL_checkudata(L, 2, LMPIO_LUA_COMM);
  lua_pushboolean(L, a->comm == b->comm);
  return 1;
}

/* A bcast's value travels inside the agreement when it fits in its words. */
static void pack7(long long *w, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) w[i / 7] |= (long long)b[i] << (8 * (i % 7));
}

static void unpack7(unsigned char *b, const long long *w, size_t n) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(w[i / 7] >> (8 * (i % 7)));
}

/***
Sends a value from the root to every rank.
Collective.  The value is serialised; one `MPI_Allreduce` agrees on the
arguments and carries a short value (up to 238 bytes serialised), and a
longer one follows with `MPI_Bcast`.  The value may be nil, a boolean, a number (integers stay
integers), a string, or a table of those (nested tables too; keys are
booleans, numbers or strings).  Tables arrive as new tables without
metatables; a table that contains itself, functions, userdata
(communicators, records, ...) and threads cannot be sent.  The value
passed on the other ranks is ignored, except an array.
An array on the root is sent straight from its memory (`MPI_Bcast`): the
other ranks that give an array (of the same type and length) get it
filled, the others get a new array of the root's type and shape.  When
the root's value cannot be sent, arrays disagree, or the ranks name
different roots, every rank raises: no rank is left waiting.
@function comm:bcast
@param value the value to send (used on the root only), or an array: to
  send on the root, to fill on the others
@param[opt=0] root the rank that sends (the same on every rank)
@return the root's value (on the root: the value itself; an array given
  on another rank: that array, filled)
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when the root's value
  cannot be sent, or a root is out of range or differs between ranks, or
  ranks give arrays of another type or length than the root's, or arrays
  to fill while the root sends no array
@usage local params = lmpio.array(lmpio.DOUBLE, 3)
if comm:rank() == 0 then params:set(1, {0.1, 0.2, 0.3}) end
comm:bcast(params)          -- every rank's params now hold the root's
*/
static int c_bcast(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int rank = lmpio_lua_commrank(comm), size = lmpio_lua_commsize(comm);
  lua_settop(L, 3);
  int root = checkint(L, 3, luaL_optinteger(L, 3, 0), 0);
  if (root >= size) luaL_argerror(L, 3, lua_pushfstring(L, "root %d is not a rank of %d", root, size));
  size_t len = 0;
  const unsigned char *bytes = NULL;
  /* one agreement: roots (max and -min), the length, and a short value;
   * arrays put what they are in v[4..] (lua/message.c) */
  long long v[AGREE_WORDS] = {0, root, -root, 0};
  int isarray = lmpio_lua_bcast_prepare(L, 2, rank == root, v);
  if (rank == root && !isarray) {
    bytes = serialise(L, 2, 2, &len); /* 4 */
    v[3] = (long long)len;
    if (len <= NINLINE * 7) pack7(v + LMPIO_LUA_NAGREE, bytes, len);
  }
  lmpio_lua_agree(L, comm, v, AGREE_WORDS, NULL);
  if (v[1] != -v[2])
    return lmpio_lua_raise(L, MPI_ERR_ARG, lua_pushfstring(L, "bad argument #2 to 'bcast' (the ranks name "
                                                           "different roots, from %d to %d)", (int)-v[2], (int)v[1]));
  if (lmpio_lua_bcast_arrays(L, comm, root, v, isarray ? 2 : 0)) return 1;
  len = (size_t)v[3];
  unsigned char *all = rank == root ? (unsigned char *)bytes : lua_newuserdatauv(L, len ? len : 1, 0);
  if (len <= NINLINE * 7) {
    if (rank != root) unpack7(all, v + LMPIO_LUA_NAGREE, len);
  } else { /* the rest in pieces (MPI counts are ints) */
    for (size_t off = 0; off < len; off += CHUNK) {
      size_t n = len - off < CHUNK ? len - off : CHUNK;
      lmpio_lua_checkmpi(L, MPI_Bcast(all + off, (int)n, MPI_BYTE, root, comm), "MPI_Bcast");
    }
  }
  if (rank == root) lua_pushvalue(L, 2);
  else deserialise(L, all, len);
  return 1;
}

/***
Every rank's value, on every rank (`MPI_Allgather` of their serialised
forms).
Collective.  Values are those that `comm:bcast` can send (nil, booleans,
numbers, strings, tables of them); each arrives as a copy.  Arrays (every
rank an array of the same type, of any length) arrive concatenated in
rank order in one new array (`MPI_Allgatherv`, from and into their
memory).  When any rank's value cannot be sent, or some ranks give arrays
and others not, every rank raises.
@function comm:allgather
@param value this rank's value, or array
@return a table whose element `r + 1` is rank `r`'s value (a rank that sent
  nil leaves a hole), or the concatenated array
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when any rank's value
  cannot be sent; every rank raises when the values add up to more than
  2 GiB (arrays: 2^31 - 1 elements)
*/
static int c_allgather(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm);
  lua_settop(L, 2);
  if (lmpio_lua_tobuffer(L, 2)) return lmpio_lua_allgather_array(L, comm);
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * LMPIO_LUA_GATHER_BLOCK, 0); /* 3 */
  int *counts = lua_newuserdatauv(L, 2 * (size_t)size * sizeof(int), 0);        /* 4 */
  int *displs = counts + size;
  size_t len = 0;
  const unsigned char *bytes = serialise(L, 2, 2, &len); /* 5 */
  unsigned char *mine = blocks + (size_t)rank * LMPIO_LUA_GATHER_BLOCK;
  lmpio_lua_put_le64(mine, (uint64_t)len);
  memcpy(mine + 8, bytes, len < LMPIO_LUA_GATHER_BLOCK - 8 ? len : LMPIO_LUA_GATHER_BLOCK - 8);
  lmpio_lua_gather_blocks(L, comm, blocks, NULL);
  for (int r = 0; r < size; r++) /* every rank sees every block: all raise */
    if (lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK) == LMPIO_LUA_GATHER_ARRAY)
      return lmpio_lua_raise(L, MPI_ERR_ARG, "bad argument #1 to 'allgather' (arrays on some ranks, other "
                                             "values on others)");
  uint64_t total = 0;
  int fits = 1;
  for (int r = 0; r < size; r++) {
    uint64_t n = lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK);
    if (n > LMPIO_LUA_GATHER_BLOCK - 8) fits = 0;
    total += n < (uint64_t)INT_MAX + 1 ? n : (uint64_t)INT_MAX + 1; /* > INT_MAX is refused below: no wrap */
  }
  unsigned char *all = NULL;
  if (!fits) { /* every rank knows every length: they all take this branch */
    if (total > INT_MAX)
      return lmpio_lua_raise(L, MPI_ERR_ARG, "allgather: the values add up to more than 2 GiB");
    all = lua_newuserdatauv(L, total ? total : 1, 0); /* 6 */
    int at = 0;
    for (int r = 0; r < size; r++) {
      counts[r] = (int)lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK);
      displs[r] = at;
      at += counts[r];
    }
    memcpy(all + displs[rank], bytes, len);
    lmpio_lua_checkmpi(L, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, counts, displs, MPI_BYTE, comm),
                       "MPI_Allgatherv");
  }
  lua_createtable(L, size, 0);
  for (int r = 0; r < size; r++) {
    const unsigned char *b = blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK;
    size_t n = (size_t)lmpio_lua_get_le64(b);
    deserialise(L, fits ? b + 8 : all + displs[r], n);
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}

/* ---- reductions --------------------------------------------------------- */

enum { R_ALLREDUCE = LMPIO_LUA_ALLREDUCE, R_SCAN = LMPIO_LUA_SCAN, R_EXSCAN = LMPIO_LUA_EXSCAN };
static const char *const opnames[] = {"sum", "max", "min", "prod", "land", "lor", NULL};

/* allreduce, scan and exscan of one number or boolean. */
static int reduce(lua_State *L, int kind, const char *name) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  if (lmpio_lua_tobuffer(L, 2)) return lmpio_lua_reduce_array(L, comm, kind, name);
  static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_LOR};
  int isbool = lua_type(L, 2) == LUA_TBOOLEAN;
  if (!isbool) luaL_checknumber(L, 2);
  int op = luaL_checkoption(L, 3, isbool ? "land" : "sum", opnames);
  int isint = lua_isinteger(L, 2);
  /* Every rank must pick the same MPI type and op: integers only when all
   * are, and every rank the same kind of value (0 numbers, 1 booleans, 2
   * arrays: lua/message.c) and the same op. */
  int b = isbool && lua_toboolean(L, 2);
  long long v[LMPIO_LUA_NAGREE] = {0, op, -op, isbool, -isbool, !isint, b, -b};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  if (v[3] != -v[4]) return lmpio_lua_reduce_kinds(L, name, v);
  if (v[1] != -v[2])
    return lmpio_lua_raise(L, MPI_ERR_ARG, lua_pushfstring(L, "bad argument #2 to '%s' (the ranks name "
                                                           "different operations, '%s' and '%s')",
                                                           name, opnames[-v[2]], opnames[v[1]]));
  int allint = isbool || v[5] == 0;
  MPI_Op mop = ops[op];
  if (isbool && kind == R_ALLREDUCE) { /* the agreement did it: any (max) or all (min) */
    int any = mop == MPI_LOR || mop == MPI_MAX || mop == MPI_SUM;
    lua_pushboolean(L, any ? v[6] != 0 : -v[7] != 0);
    return 1;
  }
  long long iv = isbool ? lua_toboolean(L, 2) : allint ? (long long)lua_tointeger(L, 2) : 0, ir = 0;
  double dv = isbool || allint ? 0 : (double)lua_tonumber(L, 2), dr = 0;
  void *in = allint ? (void *)&iv : (void *)&dv, *out = allint ? (void *)&ir : (void *)&dr;
  MPI_Datatype t = allint ? MPI_LONG_LONG : MPI_DOUBLE;
  int rc;
  if (kind == R_ALLREDUCE) rc = MPI_Allreduce(in, out, 1, t, mop, comm);
  else if (kind == R_SCAN) rc = MPI_Scan(in, out, 1, t, mop, comm);
  else rc = MPI_Exscan(in, out, 1, t, mop, comm);
  lmpio_lua_checkmpi(L, rc, kind == R_ALLREDUCE ? "MPI_Allreduce" : kind == R_SCAN ? "MPI_Scan" : "MPI_Exscan");
  if (kind == R_EXSCAN && lmpio_lua_commrank(comm) == 0) {
    /* MPI leaves rank 0's result undefined: the op's identity, if any */
    if (mop == MPI_MAX || mop == MPI_MIN) {
      lua_pushnil(L);
      return 1;
    }
    ir = mop == MPI_PROD || mop == MPI_LAND;
    dr = (double)ir;
  }
  if (isbool) lua_pushboolean(L, ir != 0);
  else if (allint) lua_pushinteger(L, (lua_Integer)ir);
  else lua_pushnumber(L, (lua_Number)dr);
  return 1;
}

/***
Combines one number, boolean or array from every rank (`MPI_Allreduce`).
Collective.  For numbers the result is an integer when every rank gave an
integer, a float otherwise.  Arrays (every rank an array of the same type
and length) are combined element by element, in C, into a new array of
that type and shape: `comm:allreduce(counts)` adds up every rank's
histogram.  Every rank must give the same kind of value (numbers,
booleans or arrays) and the same operation; when they do not, or any
rank's arguments are wrong, every rank raises.
@function comm:allreduce
@param x a number, a boolean or an array
@param[opt] op `"sum"`, `"max"`, `"min"`, `"prod"`, `"land"` or `"lor"`,
  and for integer arrays also `"band"`, `"bor"` and `"bxor"` (default
  `"sum"`, `"land"` for booleans); on booleans every op is "all" (`"min"`,
  `"prod"`, `"land"`) or "any" (the others); on floats the logical and
  bitwise ops raise
@return the combination of every rank's x (a new array for arrays)
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when any rank's
  arguments are wrong or the ranks disagree on the op, the kind of value,
  or an array's type or length
@usage local total = world:allreduce(a:histogram(0, 1, 66))  -- INT64_T counts
*/
static int c_allreduce(lua_State *L) { return reduce(L, R_ALLREDUCE, "allreduce"); }

/***
Inclusive prefix reduction (`MPI_Scan`): rank r gets the combination of
the values of ranks 0 to r.
Collective; arguments as for `comm:allreduce`.
@function comm:scan
@param x a number, a boolean or an array (element by element)
@param[opt] op as for `comm:allreduce`
@return the combination of the values of ranks 0..r
@raise as `comm:allreduce`
*/
static int c_scan(lua_State *L) { return reduce(L, R_SCAN, "scan"); }

/***
Exclusive prefix reduction (`MPI_Exscan`): rank r gets the combination of
the values of ranks 0 to r - 1, for instance its offset in a file that
every rank appends a piece of.
Collective; arguments as for `comm:allreduce`.  Rank 0 gets the identity
of the op (`0` for `"sum"`, `1` for `"prod"`, `true` for `"land"`,
`false` for `"lor"`; for arrays an array of it) and nil for `"max"` and
`"min"`.
@function comm:exscan
@param x a number, a boolean or an array (element by element)
@param[opt] op as for `comm:allreduce`
@return the combination of the values of ranks 0..r-1
@raise as `comm:allreduce`
@usage local offset = comm:exscan(#mypiece)   -- where my piece goes
*/
static int c_exscan(lua_State *L) { return reduce(L, R_EXSCAN, "exscan"); }

/* ---- grids -------------------------------------------------------------- */

enum { MAXDIMS = 64 };

/* ndims, or a table of dims (0: free), at idx: into dims[], returns ndims. */
static int checkdims(lua_State *L, int idx, int dims[MAXDIMS]) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer n = luaL_checkinteger(L, idx);
    if (n < 1 || n > MAXDIMS) luaL_argerror(L, idx, lua_pushfstring(L, "ndims must be from 1 to %d", MAXDIMS));
    memset(dims, 0, (size_t)n * sizeof *dims);
    return (int)n;
  }
  if (!lua_istable(L, idx)) luaL_typeerror(L, idx, "number of dimensions or table of dims");
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (n < 1 || n > MAXDIMS) luaL_argerror(L, idx, lua_pushfstring(L, "from 1 to %d dims expected", MAXDIMS));
  for (int i = 0; i < n; i++) {
    int isnum;
    lua_rawgeti(L, idx, i + 1);
    lua_Integer d = lua_tointegerx(L, -1, &isnum);
    if (!isnum || d < 0 || d > INT_MAX)
      luaL_argerror(L, idx, lua_pushfstring(L, "dims[%d] must be a non-negative integer (0: free)", i + 1));
    dims[i] = (int)d;
    lua_pop(L, 1);
  }
  return (int)n;
}

/* MPI_Dims_create with its conditions checked first (an argument error,
 * not an MPI error). */
static void dims_create(lua_State *L, int arg, int nnodes, int ndims, int dims[MAXDIMS]) {
  long long fixed = 1;
  int free_dims = 0;
  for (int i = 0; i < ndims; i++) {
    if (dims[i]) fixed *= dims[i];
    else free_dims++;
    if (fixed > INT_MAX) fixed = (long long)INT_MAX + 1;
  }
  if (free_dims ? nnodes % fixed != 0 : fixed != nnodes)
    luaL_argerror(L, arg, lua_pushfstring(L, "the dims given (product %d) %s %d", (int)fixed,
                                          free_dims ? "do not divide" : "do not multiply to", nnodes));
  lmpio_lua_checkmpi(L, MPI_Dims_create(nnodes, ndims, dims), "MPI_Dims_create");
}

static void pushints(lua_State *L, const int *a, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, a[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/***
A balanced grid of processes (`MPI_Dims_create`).
Local: no communication.  Free dimensions (given as 0) are chosen as close
to each other as possible, largest first.
@function lmpio.dims_create
@param nnodes the number of processes (positive)
@param dims the number of dimensions, or a table of dims where 0 means
  "choose" (e.g. `{0, 2, 0}`)
@return a new table of the dims, whose product is nnodes
@raise when the fixed dims do not divide nnodes, or after MPI was finalized
@usage lmpio.dims_create(12, 2)       --> {4, 3}
lmpio.dims_create(12, {0, 0, 3})      --> {2, 2, 3}
*/
static int l_dims_create(lua_State *L) {
  if (finalized()) return luaL_error(L, "lmpio.dims_create called after MPI was finalized (the script has ended)");
  lua_Integer nnodes = luaL_checkinteger(L, 1);
  if (nnodes < 1 || nnodes > INT_MAX) luaL_argerror(L, 1, "must be positive");
  int dims[MAXDIMS];
  int n = checkdims(L, 2, dims);
  dims_create(L, 2, (int)nnodes, n, dims);
  pushints(L, dims, n);
  return 1;
}

/***
This rank's place in a grid of the communicator's processes, and
optionally its block of a global array.
Local: no communication.  The grid's dims come from `lmpio.dims_create`
over the communicator's size; ranks are laid out in row-major order (the
last coordinate varies fastest, as `MPI_Cart_create` without reordering).
Given the sizes of a global array, the array is cut into blocks along
every dimension by the one block distribution of the module: that of
`lmpio.block` and of `lmpio.type.darray` with `"block"` (each block
`ceil(size / dims)` elements, the last ones fewer or none: 10 over 4 is
3, 3, 3, 1), and this rank's block is returned as the subsizes and starts
that `lmpio.type.subarray` takes, so that the subarray and the darray of
a rank are the same datatype.  A block may be empty (a subsize 0, which
`lmpio.type.subarray` takes: the script runs unchanged at any number of
ranks).
@function comm:grid
@param dims the number of dimensions, or a table of dims (0: choose)
@param[opt] sizes the global array's size along each dimension (a table of
  non-negative integers, as many as dims)
@return dims (table), coords (table of this rank's coordinates, from 0),
  and with sizes: subsizes and starts (tables, starts from 0)
@raise when the dims cannot be made from the communicator's size, or the
  sizes are not non-negative integers
@usage local dims, coords, sub, starts = comm:grid(3, {nz, ny, nx})
local mine = lmpio.type.subarray({nz, ny, nx}, sub, starts, lmpio.DOUBLE)
-- the same datatype as
local same = lmpio.type.darray(comm:size(), comm:rank(), {nz, ny, nx},
  {"block", "block", "block"}, nil, dims, lmpio.DOUBLE)
*/
static int c_grid(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int dims[MAXDIMS], coords[MAXDIMS], sub[MAXDIMS], starts[MAXDIMS];
  int n = checkdims(L, 2, dims);
  long long sizes[MAXDIMS];
  int have_sizes = !lua_isnoneornil(L, 3);
  if (have_sizes) {
    luaL_checktype(L, 3, LUA_TTABLE);
    if ((lua_Integer)lua_rawlen(L, 3) != n)
      luaL_argerror(L, 3, lua_pushfstring(L, "%d sizes expected, one for each dimension", n));
    for (int i = 0; i < n; i++) {
      int isnum;
      lua_rawgeti(L, 3, i + 1);
      lua_Integer s = lua_tointegerx(L, -1, &isnum);
      if (!isnum || s < 0 || s > INT_MAX)
        luaL_argerror(L, 3, lua_pushfstring(L, "sizes[%d] must be a non-negative integer", i + 1));
      sizes[i] = s;
      lua_pop(L, 1);
    }
  }
  dims_create(L, 2, lmpio_lua_commsize(comm), n, dims);
  int r = lmpio_lua_commrank(comm);
  for (int i = n - 1; i >= 0; i--) {
    coords[i] = r % dims[i];
    r /= dims[i];
  }
  pushints(L, dims, n);
  pushints(L, coords, n);
  if (!have_sizes) return 2;
  for (int i = 0; i < n; i++) {
    lua_Integer first, count;
    lmpio_lua_block(sizes[i], dims[i], coords[i], &first, &count);
    sub[i] = (int)count;
    starts[i] = (int)first;
  }
  pushints(L, sub, n);
  pushints(L, starts, n);
  return 4;
}

void lmpio_lua_block(lua_Integer n, lua_Integer parts, lua_Integer i, lua_Integer *first, lua_Integer *count) {
  lua_Integer b = n / parts + (n % parts != 0);
  lua_Integer lo = b * i < n ? b * i : n;
  lua_Integer hi = b * (i + 1) < n ? b * (i + 1) : n;
  *first = lo;
  *count = hi - lo;
}

/***
The block of n items that part i of parts owns, as MPI's block distribution does.
Each of the first parts gets ceil(n / parts) items; the last ones may get
fewer or none (count 0), exactly as `lmpio.type.darray` with "block",
`comm:grid` and `comm:scatter` cut.
@function lmpio.block
@tparam integer n the number of items
@tparam integer parts the number of parts
@tparam integer i the part (0-based)
@treturn integer the first item of the block (0-based)
@treturn integer the number of items (may be 0)
*/
static int l_block(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1), parts = luaL_checkinteger(L, 2), i = luaL_checkinteger(L, 3);
  if (n < 0) return luaL_argerror(L, 1, "must not be negative");
  if (parts < 1) return luaL_argerror(L, 2, "must be positive");
  if (i < 0 || i >= parts) return luaL_argerror(L, 3, "must be in 0 .. parts-1");
  lua_Integer first, count;
  lmpio_lua_block(n, parts, i, &first, &count);
  lua_pushinteger(L, first);
  lua_pushinteger(L, count);
  return 2;
}

/* ---- info objects ---------------------------------------------------------- */

/* An info value as a string: strings as they are, integers in decimal,
 * floats with an integral value as integers ("4", not "4.0"), other floats
 * as %.17g would round-trip, booleans "true"/"false". */
static void pushinfovalue(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TBOOLEAN: lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false"); break;
  case LUA_TNUMBER: {
    lua_Integer i;
    if (lua_isinteger(L, idx)) lua_pushfstring(L, "%I", (lua_Integer)lua_tointeger(L, idx));
    else if (lua_numbertointeger(lua_tonumber(L, idx), &i)) lua_pushfstring(L, "%I", (lua_Integer)i);
    else {
      char s[64];
      snprintf(s, sizeof s, "%.17g", (double)lua_tonumber(L, idx));
      lua_pushstring(L, s);
    }
    break;
  }
  default: lua_pushvalue(L, idx);
  }
}

MPI_Info lmpio_lua_checkinfo(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return MPI_INFO_NULL;
  luaL_checktype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  /* Every value as a string, in a scratch table, validating everything
   * first so that nothing is leaked by an error (no allocation below). */
  lua_newtable(L);
  int scratch = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, idx, "info keys must be strings");
    size_t klen;
    const char *k = lua_tolstring(L, -2, &klen);
    if (klen == 0 || klen > MPI_MAX_INFO_KEY || strlen(k) != klen)
      luaL_argerror(L, idx, lua_pushfstring(L, "info key '%s' is empty, too long or has a zero byte", k));
    int t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
      luaL_argerror(L, idx, lua_pushfstring(L, "info value of '%s' must be a string, number or boolean, not %s",
                                            k, luaL_typename(L, -1)));
    lua_pushvalue(L, -2);
    pushinfovalue(L, -2);
    size_t vlen;
    const char *v = lua_tolstring(L, -1, &vlen);
    if (vlen > MPI_MAX_INFO_VAL || strlen(v) != vlen)
      luaL_argerror(L, idx, lua_pushfstring(L, "info value of '%s' is too long or has a zero byte", k));
    lua_rawset(L, scratch);
    lua_pop(L, 1);
  }
  MPI_Info info;
  lmpio_lua_checkmpi(L, MPI_Info_create(&info), "MPI_Info_create");
  lua_pushnil(L);
  while (lua_next(L, scratch)) {
    MPI_Info_set(info, lua_tostring(L, -2), lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return info;
}

void lmpio_lua_freeinfo(MPI_Info *info) {
  if (*info != MPI_INFO_NULL) MPI_Info_free(info);
  *info = MPI_INFO_NULL;
}

void lmpio_lua_pushinfo(lua_State *L, MPI_Info info) {
  lua_newtable(L);
  if (info == MPI_INFO_NULL) return;
  int n = 0;
  MPI_Info_get_nkeys(info, &n);
  for (int i = 0; i < n; i++) {
    char k[MPI_MAX_INFO_KEY + 1];
    int vlen = 0, flag = 0;
    if (MPI_Info_get_nthkey(info, i, k) != MPI_SUCCESS) continue;
    if (MPI_Info_get_valuelen(info, k, &vlen, &flag) != MPI_SUCCESS || !flag) continue;
    luaL_Buffer b;
    char *v = luaL_buffinitsize(L, &b, (size_t)vlen + 1);
    MPI_Info_get(info, k, vlen + 1, v, &flag);
    luaL_pushresultsize(&b, (size_t)vlen);
    lua_setfield(L, -2, k);
  }
}

/***
The communicator of every process of the job (`MPI_COMM_WORLD`).
@field lmpio.world
*/

/***
The communicator of this process alone (`MPI_COMM_SELF`).
@field lmpio.self
*/

/***
The color of `comm:split` for a rank that joins no communicator
(`MPI_UNDEFINED`; `nil` and `false` do the same).
@field lmpio.UNDEFINED
*/

void lmpio_lua_comm_methods(lua_State *L, const lmpio_lua_collective *cm, size_t n, const luaL_Reg *local) {
  luaL_getmetatable(L, LMPIO_LUA_COMM);
  lua_getfield(L, -1, "__index");
  for (size_t i = 0; i < n; i++) {
    lua_pushlightuserdata(L, (void *)&cm[i]);
    lua_pushcclosure(L, collective_call, 1);
    lua_setfield(L, -2, cm[i].name);
  }
  if (local) luaL_setfuncs(L, local, 0);
  lua_pop(L, 2);
}

static const collective_method collective_methods[] = {
  {"split", c_split, lmpio_lua_agree_failed}, {"bcast", c_bcast, fail_bcast},
  {"allgather", c_allgather, lmpio_lua_gather_failed}, {"allreduce", c_allreduce, lmpio_lua_agree_failed},
  {"scan", c_scan, lmpio_lua_agree_failed}, {"exscan", c_exscan, lmpio_lua_agree_failed},
};

int lmpio_lua_comm_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_COMM)) {
    static const luaL_Reg meta[] = {{"__tostring", c_tostring}, {"__eq", c_eq}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
      {"rank", c_rank}, {"size", c_size}, {"barrier", c_barrier}, {"dup", c_dup},
      {"free", c_free}, {"grid", c_grid}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    for (size_t i = 0; i < sizeof collective_methods / sizeof *collective_methods; i++) {
      lua_pushlightuserdata(L, (void *)&collective_methods[i]);
      lua_pushcclosure(L, collective_call, 1);
      lua_setfield(L, -2, collective_methods[i].name);
    }
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  pushcomm(L, MPI_COMM_WORLD, 0);
  lua_setfield(L, -2, "world");
  pushcomm(L, MPI_COMM_SELF, 0);
  lua_setfield(L, -2, "self");
  lua_pushinteger(L, MPI_UNDEFINED);
  lua_setfield(L, -2, "UNDEFINED");
  lua_pushcfunction(L, l_dims_create);
  lua_setfield(L, -2, "dims_create");
  lua_pushcfunction(L, l_block);
  lua_setfield(L, -2, "block");
  return 0;
}
