/* The module's own helper library: option tables checked field by field
 * (a misspelt key is an error, as luaposix does) and int arguments in
 * range.  (The check that MPI still runs is error.c's: it raises.) */
#include "helpers.h"

#include <limits.h>
#include <string.h>

/* A misspelt option key is an error, not silently ignored (luaposix). */
void lmpio_lua_checkfields(lua_State *L, int idx, const char *const *names) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; names[i]; i++)
        if (strcmp(lua_tostring(L, -2), names[i]) == 0) ok = 1;
    if (!ok) {
      lua_pop(L, 1);
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "unknown field '%s'", luaL_tolstring(L, -1, NULL)));
    }
    lua_pop(L, 1);
  }
}

/* An integer argument v of arg, from min to INT_MAX. */
int lmpio_lua_checkint(lua_State *L, int arg, lua_Integer v, lua_Integer min) {
  if (v < min || v > INT_MAX) lmpio_lua_argerror(L, arg, "out of range");
  return (int)v;
}

