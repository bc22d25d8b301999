/* Communicators (lmpio.world, lmpio.self, comm:rank/size/barrier/split/dup),
 * a few collectives that scripts need to agree on values (bcast, allreduce,
 * allgather), and info objects as Lua tables of strings. */
#include "lmpio_lua.h"

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

static int c_rank(lua_State *L) {
  int r = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_rank(lmpio_lua_checkcomm(L, 1), &r), "MPI_Comm_rank");
  lua_pushinteger(L, r);
  return 1;
}

static int c_size(lua_State *L) {
  int n = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_size(lmpio_lua_checkcomm(L, 1), &n), "MPI_Comm_size");
  lua_pushinteger(L, n);
  return 1;
}

static int c_barrier(lua_State *L) {
  lmpio_lua_checkmpi(L, MPI_Barrier(lmpio_lua_checkcomm(L, 1)), "MPI_Barrier");
  return 0;
}

/* comm:split(color [, key]): color nil or lmpio.UNDEFINED -> nil on this rank */
static int c_split(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int color = lua_isnoneornil(L, 2) ? MPI_UNDEFINED : (int)luaL_checkinteger(L, 2);
  if (color < 0 && color != MPI_UNDEFINED) return luaL_argerror(L, 2, "color must not be negative");
  int key = (int)luaL_optinteger(L, 3, 0);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  MPI_Comm out = MPI_COMM_NULL;
  lmpio_lua_checkmpi(L, MPI_Comm_split(comm, color, key, &out), "MPI_Comm_split");
  if (out == MPI_COMM_NULL) return 0;
  c->comm = out;
  return 1;
}

static int c_dup(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  MPI_Comm out = MPI_COMM_NULL;
  lmpio_lua_checkmpi(L, MPI_Comm_dup(comm, &out), "MPI_Comm_dup");
  c->comm = out;
  return 1;
}

/* comm:free() (collective) */
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

/* comm:bcast(value [, root]): a nil, boolean, number or string from root. */
static int c_bcast(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int root = (int)luaL_optinteger(L, 3, 0), rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (root < 0 || root >= size) return luaL_argerror(L, 3, "root out of range");
  /* header: type, length (strings), integer or number payload */
  long long hdr[2] = {0, 0};
  double num = 0;
  size_t len = 0;
  const char *s = NULL;
  if (rank == root) {
    int t = lua_type(L, 2);
    if (t == LUA_TSTRING) { s = lua_tolstring(L, 2, &len); hdr[0] = 1; hdr[1] = (long long)len; }
    else if (t == LUA_TBOOLEAN) { hdr[0] = 2; hdr[1] = lua_toboolean(L, 2); }
    else if (lua_isinteger(L, 2)) { hdr[0] = 3; hdr[1] = (long long)lua_tointeger(L, 2); }
    else if (t == LUA_TNUMBER) { hdr[0] = 4; num = lua_tonumber(L, 2); }
    else if (t <= LUA_TNIL) hdr[0] = 0;
    else hdr[0] = -1; /* broadcast the failure so every rank raises */
  }
  lmpio_lua_checkmpi(L, MPI_Bcast(hdr, 2, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  if (hdr[0] == -1) return luaL_error(L, "bcast: only nil, booleans, numbers and strings can be broadcast");
  if (hdr[0] == 4) lmpio_lua_checkmpi(L, MPI_Bcast(&num, 1, MPI_DOUBLE, root, comm), "MPI_Bcast");
  if (hdr[0] == 1) {
    lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, MPI_BYTE, (size_t)hdr[1]);
    if (rank == root && len) memcpy(b->data, s, len);
    if (hdr[1] > 0) lmpio_lua_checkmpi(L, MPI_Bcast(b->data, (int)hdr[1], MPI_BYTE, root, comm), "MPI_Bcast");
    lua_pushlstring(L, hdr[1] ? (const char *)b->data : "", (size_t)hdr[1]);
    return 1;
  }
  switch (hdr[0]) {
  case 2: lua_pushboolean(L, (int)hdr[1]); break;
  case 3: lua_pushinteger(L, (lua_Integer)hdr[1]); break;
  case 4: lua_pushnumber(L, num); break;
  default: lua_pushnil(L);
  }
  return 1;
}

/* comm:allreduce(x, op): x a number or boolean; op "sum" | "max" | "min" |
 * "prod" | "land" | "lor" (booleans: "land" default, numbers: "sum"). */
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

/* comm:allgather(n): a table of every rank's integer, indexed from 1. */
static int c_allgather(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  long long v = (long long)luaL_checkinteger(L, 2);
  int size = 0;
  MPI_Comm_size(comm, &size);
  lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, MPI_LONG_LONG, (size_t)size);
  lmpio_lua_checkmpi(L, MPI_Allgather(&v, 1, MPI_LONG_LONG, b->data, 1, MPI_LONG_LONG, comm), "MPI_Allgather");
  lua_createtable(L, size, 0);
  for (int i = 0; i < size; i++) {
    long long x;
    memcpy(&x, b->data + (size_t)i * sizeof x, sizeof x);
    lua_pushinteger(L, (lua_Integer)x);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
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
      luaL_argerror(L, idx, lua_pushfstring(L, "info value of '%s' must be a string", k));
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
      {"allgather", c_allgather}, {NULL, NULL},
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
  return 0;
}
