/* Info objects as Lua tables: MPI_Info from a table of string, number or
 * boolean values (checked before anything is created), and back. */
#include "error.h"
#include "comm.h"

#include <stdio.h>
#include <string.h>

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
  lmpio_lua_checkluatype(L, idx, LUA_TTABLE);
  idx = lua_absindex(L, idx);
  /* Every value as a string, in a scratch table, validating everything
   * first so that nothing is leaked by an error (no allocation below). */
  lua_newtable(L);
  int scratch = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      lmpio_lua_argerror(L, idx, "info keys must be strings");
    size_t klen;
    const char *k = lua_tolstring(L, -2, &klen);
    if (klen == 0 || klen > MPI_MAX_INFO_KEY || strlen(k) != klen)
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "info key '%s' is empty, too long or has a zero byte", k));
    int t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "info value of '%s' must be a string, number or boolean, not %s",
                                            k, luaL_typename(L, -1)));
    lua_pushvalue(L, -2);
    pushinfovalue(L, -2);
    size_t vlen;
    const char *v = lua_tolstring(L, -1, &vlen);
    if (vlen > MPI_MAX_INFO_VAL || strlen(v) != vlen)
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "info value of '%s' is too long or has a zero byte", k));
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

