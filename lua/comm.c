/* Communicators (lmpio.world, lmpio.self, comm:rank/size/barrier/split/dup),
 * a few collectives that scripts need to agree on values (bcast, allreduce,
 * allgather), and info objects as Lua tables of strings. */
#include "lmpio_lua.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  MPI_Comm comm;
  int owned; /* freed by comm:free() (MPI_Comm_free is collective: never in __gc) */
} lcomm;

static lcomm *checklcomm(lua_State *L, int idx) {
  lcomm *c = luaL_checkudata(L, idx, LMPIO_LUA_COMM);
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

/***
This rank's number in the communicator (0 .. size-1).
@function comm:rank
@treturn integer the rank
*/
static int c_rank(lua_State *L) {
  int r = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_rank(lmpio_lua_checkcomm(L, 1), &r), "MPI_Comm_rank");
  lua_pushinteger(L, r);
  return 1;
}

/***
The number of ranks in the communicator.
@function comm:size
@treturn integer the number of ranks
*/
static int c_size(lua_State *L) {
  int n = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_size(lmpio_lua_checkcomm(L, 1), &n), "MPI_Comm_size");
  lua_pushinteger(L, n);
  return 1;
}

/***
Waits until every rank of the communicator has called it.
Collective.
@function comm:barrier
*/
static int c_barrier(lua_State *L) {
  lmpio_lua_checkmpi(L, MPI_Barrier(lmpio_lua_checkcomm(L, 1)), "MPI_Barrier");
  return 0;
}

/***
Splits the communicator by color, ordering each part by key.
Collective.
@function comm:split
@tparam integer|nil|false color ranks with the same color form one new communicator; nil, false or lmpio.UNDEFINED: none
@tparam[opt=0] integer key the order of the ranks in the new communicator (ties: the order in this one)
@return the new communicator (free it with `comm:free`), or nil for a rank without a color
@raise "color must not be negative"
*/
static int c_split(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int color = lua_isnoneornil(L, 2) || (lua_isboolean(L, 2) && !lua_toboolean(L, 2)) ? MPI_UNDEFINED
                                                                                    : (int)luaL_checkinteger(L, 2);
  if (color < 0 && color != MPI_UNDEFINED) return luaL_argerror(L, 2, "color must not be negative");
  int key = (int)luaL_optinteger(L, 3, 0);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  MPI_Comm out = MPI_COMM_NULL;
  lmpio_lua_checkmpi(L, MPI_Comm_split(comm, color, key, &out), "MPI_Comm_split");
  if (out == MPI_COMM_NULL) return 0;
  c->comm = out;
  return 1;
}

/***
A new communicator with the same ranks (MPI_Comm_dup), e.g. for a library's own traffic.
Collective.
@function comm:dup
@return the new communicator (free it with `comm:free`)
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
Frees a communicator made by `comm:split` or `comm:dup`.
Collective.  MPI_Comm_free is collective, so it is never done by the garbage
collector: free what you make.  Using a freed communicator raises
"attempt to use a freed communicator".
@function comm:free
@raise "cannot free a predefined communicator" (lmpio.world, lmpio.self)
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
  int r = 0, n = 0;
  if (c->comm == MPI_COMM_NULL) {
    lua_pushliteral(L, "lmpio.comm (freed)");
    return 1;
  }
  MPI_Comm_rank(c->comm, &r);
  MPI_Comm_size(c->comm, &n);
  lua_pushfstring(L, "lmpio.comm (rank %d of %d): %p", r, n, (void *)c);
  return 1;
}

static int c_eq(lua_State *L) {
  lcomm *a = luaL_checkudata(L, 1, LMPIO_LUA_COMM), *b = luaL_checkudata(L, 2, LMPIO_LUA_COMM);
  lua_pushboolean(L, a->comm == b->comm);
  return 1;
}

/* ---- values sent between ranks ---------------------------------------------
 * bcast and allgather send Lua values: nil, booleans, numbers, strings and
 * tables of them (nested, without cycles), serialised into bytes.  The bytes
 * live in a userdata ("lmpio.wire") so that an error leaks nothing. */

#define WIRE "lmpio.wire"
#define WIRE_DEPTH 100

typedef struct {
  char *p;
  size_t n, cap;
  char why[160]; /* why a value cannot be sent, "" when it can */
} wire;

static int wire_gc(lua_State *L) {
  wire *w = luaL_checkudata(L, 1, WIRE);
  free(w->p);
  w->p = NULL;
  w->n = w->cap = 0;
  return 0;
}

static wire *newwire(lua_State *L) {
  wire *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  if (luaL_newmetatable(L, WIRE)) {
    lua_pushcfunction(L, wire_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return w;
}

static void wire_put(lua_State *L, wire *w, const void *d, size_t n) {
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 64;
    while (cap < w->n + n) {
      if (cap > ((size_t)1 << 62)) luaL_error(L, "value too large to send");
      cap *= 2;
    }
    char *p = realloc(w->p, cap);
    if (!p) luaL_error(L, "out of memory serialising a value");
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->n, d, n);
  w->n += n;
}

enum { T_NIL, T_FALSE, T_TRUE, T_INT, T_FLOAT, T_STRING, T_TABLE, T_END };

/* Serialises the value at idx; on a value that cannot be sent, sets w->why
 * and stops (the caller tells every rank, so that all raise together). */
static void wire_value(lua_State *L, wire *w, int idx, int depth) {
  idx = lua_absindex(L, idx);
  unsigned char tag;
  switch (lua_type(L, idx)) {
  case LUA_TNIL: tag = T_NIL; wire_put(L, w, &tag, 1); return;
  case LUA_TBOOLEAN: tag = lua_toboolean(L, idx) ? T_TRUE : T_FALSE; wire_put(L, w, &tag, 1); return;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      lua_Integer i = lua_tointeger(L, idx);
      tag = T_INT;
      wire_put(L, w, &tag, 1);
      wire_put(L, w, &i, sizeof i);
    } else {
      lua_Number x = lua_tonumber(L, idx);
      tag = T_FLOAT;
      wire_put(L, w, &tag, 1);
      wire_put(L, w, &x, sizeof x);
    }
    return;
  case LUA_TSTRING: {
    size_t len;
    const char *str = lua_tolstring(L, idx, &len);
    uint64_t l = len;
    tag = T_STRING;
    wire_put(L, w, &tag, 1);
    wire_put(L, w, &l, sizeof l);
    wire_put(L, w, str, len);
    return;
  }
  case LUA_TTABLE:
    if (depth >= WIRE_DEPTH) {
      snprintf(w->why, sizeof w->why, "tables nested deeper than %d levels (or a table that contains itself)", WIRE_DEPTH);
      return;
    }
    luaL_checkstack(L, 4, "serialising a table");
    tag = T_TABLE;
    wire_put(L, w, &tag, 1);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      wire_value(L, w, -2, depth + 1);
      if (!w->why[0]) wire_value(L, w, -1, depth + 1);
      lua_pop(L, 1);
      if (w->why[0]) {
        lua_pop(L, 1);
        return;
      }
    }
    tag = T_END;
    wire_put(L, w, &tag, 1);
    return;
  default:
    snprintf(w->why, sizeof w->why, "a %s cannot be sent (only nil, booleans, numbers, strings and tables of them)",
             luaL_typename(L, idx));
  }
}

/* Pushes the value serialised at *pos in p[0..n); raises on bytes that are
 * not a value (cannot happen between ranks of one program, but cheap). */
static void unwire(lua_State *L, const char *p, size_t n, size_t *pos, int depth) {
  if (*pos >= n || depth > WIRE_DEPTH + 1) luaL_error(L, "corrupt value received");
  unsigned char tag = (unsigned char)p[(*pos)++];
  switch (tag) {
  case T_NIL: lua_pushnil(L); return;
  case T_FALSE: lua_pushboolean(L, 0); return;
  case T_TRUE: lua_pushboolean(L, 1); return;
  case T_INT: {
    lua_Integer i;
    if (n - *pos < sizeof i) break;
    memcpy(&i, p + *pos, sizeof i);
    *pos += sizeof i;
    lua_pushinteger(L, i);
    return;
  }
  case T_FLOAT: {
    lua_Number x;
    if (n - *pos < sizeof x) break;
    memcpy(&x, p + *pos, sizeof x);
    *pos += sizeof x;
    lua_pushnumber(L, x);
    return;
  }
  case T_STRING: {
    uint64_t l;
    if (n - *pos < sizeof l) break;
    memcpy(&l, p + *pos, sizeof l);
    *pos += sizeof l;
    if (n - *pos < l) break;
    lua_pushlstring(L, p + *pos, (size_t)l);
    *pos += (size_t)l;
    return;
  }
  case T_TABLE:
    luaL_checkstack(L, 4, "receiving a table");
    lua_newtable(L);
    while (*pos < n && (unsigned char)p[*pos] != T_END) {
      unwire(L, p, n, pos, depth + 1);
      unwire(L, p, n, pos, depth + 1);
      if (lua_isnil(L, -2)) luaL_error(L, "corrupt value received");
      lua_rawset(L, -3);
    }
    if (*pos >= n) break;
    (*pos)++;
    return;
  default: break;
  }
  luaL_error(L, "corrupt value received");
}

/***
Broadcasts a value from one rank to every rank of the communicator.
Collective.  The value may be nil, a boolean, a number, a string or a table
of those (nested, without cycles); every rank gets its own copy.
@function comm:bcast
@param value the value to send (read on the root only; other ranks may pass nil)
@tparam[opt=0] integer root the rank that sends
@return the root's value, on every rank
@raise on every rank, when the root's value cannot be sent (a function,
userdata, thread, or a table containing one); "root out of range".
*/
static int c_bcast(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int root = (int)luaL_optinteger(L, 3, 0), rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (root < 0 || root >= size) return luaL_argerror(L, 3, "root out of range");
  wire *w = newwire(L);
  long long len = 0;
  if (rank == root) {
    wire_value(L, w, 2, 0);
    len = w->why[0] ? -1 : (long long)w->n;
  }
  lmpio_lua_checkmpi(L, MPI_Bcast(&len, 1, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  if (len < 0) {
    /* the root's reason, so every rank raises the same error */
    lmpio_lua_checkmpi(L, MPI_Bcast(w->why, (int)sizeof w->why, MPI_CHAR, root, comm), "MPI_Bcast");
    w->why[sizeof w->why - 1] = '\0';
    return luaL_error(L, "bcast: the value of rank %d cannot be sent: %s", root, w->why);
  }
  if (rank != root) {
    w->n = 0;
    if (len > 0) {
      w->p = malloc((size_t)len);
      if (!w->p) return luaL_error(L, "bcast: out of memory for %I bytes", (lua_Integer)len);
      w->cap = w->n = (size_t)len;
    }
  }
  for (long long done = 0; done < len;) { /* int counts: in pieces of 1 GiB */
    int part = (int)(len - done < (1LL << 30) ? len - done : (1LL << 30));
    lmpio_lua_checkmpi(L, MPI_Bcast(w->p + done, part, MPI_BYTE, root, comm), "MPI_Bcast");
    done += part;
  }
  size_t pos = 0;
  unwire(L, w->p, w->n, &pos, 0);
  return 1;
}

/***
Combines one value of every rank; every rank gets the result.
Collective.
@function comm:allreduce
@tparam number|boolean x this rank's value
@tparam[opt] string op "sum" (default for numbers), "max", "min", "prod"; "land" (default for booleans), "lor"
@return the combined value: an integer when every rank passed an integer, a float otherwise, a boolean for booleans
*/
static int c_allreduce(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  static const char *const names[] = {"sum", "max", "min", "prod", "land", "lor", NULL};
  MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_LOR};
  if (lua_type(L, 2) == LUA_TBOOLEAN) {
    int v = lua_toboolean(L, 2), r = 0;
    MPI_Op op = ops[luaL_checkoption(L, 3, "land", names)];
    lmpio_lua_checkmpi(L, MPI_Allreduce(&v, &r, 1, MPI_INT, op, comm), "MPI_Allreduce");
    lua_pushboolean(L, r);
    return 1;
  }
  luaL_checknumber(L, 2);
  MPI_Op op = ops[luaL_checkoption(L, 3, "sum", names)];
  /* Every rank must pick the same MPI type: integers only when all are. */
  int isint = lua_isinteger(L, 2), allint = 0;
  lmpio_lua_checkmpi(L, MPI_Allreduce(&isint, &allint, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce");
  if (allint) {
    long long v = (long long)lua_tointeger(L, 2), r = 0;
    lmpio_lua_checkmpi(L, MPI_Allreduce(&v, &r, 1, MPI_LONG_LONG, op, comm), "MPI_Allreduce");
    lua_pushinteger(L, (lua_Integer)r);
  } else {
    double v = (double)lua_tonumber(L, 2), r = 0;
    lmpio_lua_checkmpi(L, MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, op, comm), "MPI_Allreduce");
    lua_pushnumber(L, r);
  }
  return 1;
}

/***
Gathers one value from every rank, on every rank.
Collective.  Values are sent as by `comm:bcast`.
@function comm:allgather
@param value this rank's value
@treturn table the values of ranks 0 .. size-1 at indices 1 .. size
@raise on every rank, when some rank's value cannot be sent (naming that rank)
*/
static int c_allgather(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  luaL_checkany(L, 2);
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  wire *w = newwire(L);
  wire_value(L, w, 2, 0);
  if (w->n > INT_MAX && !w->why[0]) snprintf(w->why, sizeof w->why, "the value takes more than 2 GiB");
  int mine = w->why[0] ? -1 : (int)w->n;
  int *lens = lua_newuserdatauv(L, sizeof(int) * 2 * (size_t)size, 0);
  int *displs = lens + size;
  lmpio_lua_checkmpi(L, MPI_Allgather(&mine, 1, MPI_INT, lens, 1, MPI_INT, comm), "MPI_Allgather");
  long long total = 0;
  int bad = -1;
  for (int i = 0; i < size; i++) {
    if (lens[i] < 0 && bad < 0) bad = i;
    displs[i] = (int)total;
    total += lens[i] > 0 ? lens[i] : 0;
  }
  if (bad >= 0) {
    char why[sizeof w->why];
    memcpy(why, w->why, sizeof why);
    lmpio_lua_checkmpi(L, MPI_Bcast(why, (int)sizeof why, MPI_CHAR, bad, comm), "MPI_Bcast");
    why[sizeof why - 1] = '\0';
    return luaL_error(L, "allgather: the value of rank %d cannot be sent: %s", bad, why);
  }
  if (total > INT_MAX) return luaL_error(L, "allgather: the values take more than 2 GiB together");
  char *all = lua_newuserdatauv(L, total ? (size_t)total : 1, 0);
  lmpio_lua_checkmpi(L, MPI_Allgatherv(w->p, mine, MPI_BYTE, all, lens, displs, MPI_BYTE, comm), "MPI_Allgatherv");
  lua_createtable(L, size, 0);
  for (int i = 0; i < size; i++) {
    size_t pos = (size_t)displs[i];
    unwire(L, all, (size_t)displs[i] + (size_t)lens[i], &pos, 0);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Prefix reductions: inclusive (scan) or exclusive (exscan) of a number or
 * boolean, with the op names of allreduce. */
static int prefix(lua_State *L, int exclusive) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  static const char *const names[] = {"sum", "max", "min", "prod", "land", "lor", NULL};
  MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_LOR};
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int isbool = lua_type(L, 2) == LUA_TBOOLEAN;
  if (!isbool) luaL_checknumber(L, 2);
  int o = luaL_checkoption(L, 3, isbool ? "land" : "sum", names);
  if (isbool ? o < 4 : o >= 4)
    return luaL_argerror(L, 3, isbool ? "booleans combine with \"land\" or \"lor\"" : "numbers combine with \"sum\", \"max\", \"min\" or \"prod\"");
  /* one kind for every rank: integers only when all are */
  int kind = isbool ? 2 : lua_isinteger(L, 2) ? 1 : 0, kinds[2] = {kind, -kind}, r2[2];
  lmpio_lua_checkmpi(L, MPI_Allreduce(kinds, r2, 2, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  if (r2[0] == 2 && -r2[1] != 2) return luaL_error(L, "%s: some ranks passed booleans, others numbers", exclusive ? "exscan" : "scan");
  int (*fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) = exclusive ? MPI_Exscan : MPI_Scan;
  const char *what = exclusive ? "MPI_Exscan" : "MPI_Scan";
  if (isbool) {
    int v = lua_toboolean(L, 2), r = o == 4; /* rank 0 of exscan: the identity */
    lmpio_lua_checkmpi(L, fn(&v, &r, 1, MPI_INT, ops[o], comm), what);
    if (exclusive && rank == 0) r = o == 4;
    lua_pushboolean(L, r);
  } else if (-r2[1] == 1) { /* every rank passed an integer */
    long long v = (long long)lua_tointeger(L, 2), r = 0;
    lmpio_lua_checkmpi(L, fn(&v, &r, 1, MPI_LONG_LONG, ops[o], comm), what);
    if (exclusive && rank == 0) {
      if (o == 0) r = 0;
      else if (o == 3) r = 1;
      else { lua_pushnil(L); return 1; }
    }
    lua_pushinteger(L, (lua_Integer)r);
  } else {
    double v = (double)lua_tonumber(L, 2), r = 0;
    lmpio_lua_checkmpi(L, fn(&v, &r, 1, MPI_DOUBLE, ops[o], comm), what);
    if (exclusive && rank == 0) {
      if (o == 0) r = 0;
      else if (o == 3) r = 1;
      else { lua_pushnil(L); return 1; }
    }
    lua_pushnumber(L, r);
  }
  return 1;
}

/***
Inclusive prefix reduction: rank r gets the combination of the values of ranks 0 .. r.
Collective.
@function comm:scan
@tparam number|boolean x this rank's value
@tparam[opt] string op "sum" (default for numbers), "max", "min", "prod"; "land" (default for booleans), "lor"
@return the combined value (an integer when every rank passed an integer)
*/
static int c_scan(lua_State *L) { return prefix(L, 0); }

/***
Exclusive prefix reduction: rank r gets the combination of the values of ranks 0 .. r-1.
Collective.  Rank 0 gets the identity of the operation: 0 for "sum", 1 for
"prod", true for "land", false for "lor", nil for "max" and "min".  The usual
use is the offset of each rank's part: `local first = comm:exscan(#mine)`.
@function comm:exscan
@tparam number|boolean x this rank's value
@tparam[opt] string op as for `comm:scan`
@return the combined value of the lower ranks
*/
static int c_exscan(lua_State *L) { return prefix(L, 1); }

/* dims from an integer (that many dimensions, all free) or a table of
 * integers (0: free); returns ndims and fills dims[]. */
static int checkdims(lua_State *L, int idx, int *dims, int max) {
  int nd;
  if (lua_type(L, idx) == LUA_TTABLE) {
    nd = (int)luaL_len(L, idx);
    if (nd < 1 || nd > max) luaL_argerror(L, idx, lua_pushfstring(L, "1 to %d dimensions", max));
    for (int i = 0; i < nd; i++) {
      lua_geti(L, idx, i + 1);
      int isnum = 0;
      lua_Integer d = lua_tointegerx(L, -1, &isnum);
      if (!isnum || d < 0 || d > INT_MAX)
        luaL_argerror(L, idx, lua_pushfstring(L, "dimension %d must be an integer >= 0 (0: to be chosen)", i + 1));
      dims[i] = (int)d;
      lua_pop(L, 1);
    }
  } else {
    lua_Integer n = luaL_checkinteger(L, idx);
    if (n < 1 || n > max) luaL_argerror(L, idx, lua_pushfstring(L, "1 to %d dimensions", max));
    nd = (int)n;
    for (int i = 0; i < nd; i++) dims[i] = 0;
  }
  return nd;
}

#define MAX_DIMS 32

static void pushints(lua_State *L, const int *v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int dims_create(lua_State *L, int nnodes, int idx, int *dims) {
  int nd = checkdims(L, idx, dims, MAX_DIMS);
  long long fixed = 1;
  for (int i = 0; i < nd; i++) fixed *= dims[i] ? dims[i] : 1;
  if (fixed <= 0 || nnodes % fixed != 0)
    luaL_argerror(L, idx, lua_pushfstring(L, "the fixed dimensions do not divide %d ranks", nnodes));
  lmpio_lua_checkmpi(L, MPI_Dims_create(nnodes, nd, dims), "MPI_Dims_create");
  return nd;
}

/***
A balanced grid of nnodes (MPI_Dims_create).
@function lmpio.dims_create
@tparam integer nnodes the number of ranks to arrange
@tparam integer|table dims the number of dimensions, or a table of them where 0 means "choose" (e.g. {0, 0, 2})
@treturn table the dimensions, largest first where chosen
@raise when fixed dimensions do not divide nnodes
*/
static int l_dims_create(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 1 || n > INT_MAX) return luaL_argerror(L, 1, "the number of ranks must be positive");
  int dims[MAX_DIMS];
  int nd = dims_create(L, (int)n, 2, dims);
  pushints(L, dims, nd);
  return 1;
}

/***
This rank's place in a balanced grid of all the communicator's ranks.
Local (needs no other rank).  Ranks are placed in row-major (C) order: the
last coordinate varies fastest, as in `lmpio.type.darray` and MPI's
Cartesian topologies.  Together with `lmpio.block` it gives each rank its
block of a global array.
@function comm:grid
@tparam integer|table dims the number of dimensions, or a table of them where 0 means "choose"
@treturn table the grid's dimensions
@treturn table this rank's coordinates (0-based), one per dimension
*/
static int c_grid(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int size = 0, rank = 0, dims[MAX_DIMS], coords[MAX_DIMS];
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  int nd = dims_create(L, size, 2, dims);
  for (int i = nd - 1, r = rank; i >= 0; i--) {
    coords[i] = r % dims[i];
    r /= dims[i];
  }
  pushints(L, dims, nd);
  pushints(L, coords, nd);
  return 2;
}

/***
The block of n items that part i of parts owns, as MPI's block distribution does.
Each of the first parts gets ceil(n / parts) items; the last ones may get
fewer or none (count 0), exactly as `lmpio.type.darray` with "block".
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
  lua_Integer b = n / parts + (n % parts != 0);
  lua_Integer first = b * i < n ? b * i : n;
  lua_Integer last = b * (i + 1) < n ? b * (i + 1) : n;
  lua_pushinteger(L, first);
  lua_pushinteger(L, last - first);
  return 2;
}

/* ---- info objects ---------------------------------------------------------- */

MPI_Info lmpio_lua_checkinfo(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return MPI_INFO_NULL;
  luaL_checktype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  /* Validate everything first so that nothing is leaked by an error. */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, idx, "info keys must be strings");
    size_t klen;
    const char *k = lua_tolstring(L, -2, &klen);
    if (klen == 0 || klen > MPI_MAX_INFO_KEY)
      luaL_argerror(L, idx, lua_pushfstring(L, "info key '%s' is empty or too long", k));
    int t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
      luaL_argerror(L, idx, lua_pushfstring(L, "info value of '%s' must be a string, a number or a boolean, not a %s", k,
                                            luaL_typename(L, -1)));
    if (t == LUA_TSTRING && lua_rawlen(L, -1) > MPI_MAX_INFO_VAL)
      luaL_argerror(L, idx, lua_pushfstring(L, "info value of '%s' is too long", k));
    lua_pop(L, 1);
  }
  /* Every value as a string, in a scratch table (no allocation below). */
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pushvalue(L, -2);
    if (lua_type(L, -2) == LUA_TBOOLEAN) lua_pushstring(L, lua_toboolean(L, -2) ? "true" : "false");
    else lua_pushstring(L, lua_tostring(L, -2)); /* a copy: never convert the original */
    lua_rawset(L, -5);
    lua_pop(L, 1);
  }
  MPI_Info info;
  lmpio_lua_checkmpi(L, MPI_Info_create(&info), "MPI_Info_create");
  lua_pushnil(L);
  while (lua_next(L, -2)) {
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

int lmpio_lua_comm_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_COMM)) {
    static const luaL_Reg meta[] = {{"__tostring", c_tostring}, {"__eq", c_eq}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
      {"rank", c_rank}, {"size", c_size}, {"barrier", c_barrier}, {"split", c_split},
      {"dup", c_dup}, {"free", c_free}, {"bcast", c_bcast}, {"allreduce", c_allreduce},
      {"allgather", c_allgather}, {"scan", c_scan}, {"exscan", c_exscan}, {"grid", c_grid},
      {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  pushcomm(L, MPI_COMM_WORLD, 0);
  lua_setfield(L, -2, "world");
  pushcomm(L, MPI_COMM_SELF, 0);
  lua_setfield(L, -2, "self");
  lua_pushinteger(L, MPI_UNDEFINED);
  lua_setfield(L, -2, "UNDEFINED");
  static const luaL_Reg funcs[] = {{"dims_create", l_dims_create}, {"block", l_block}, {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
