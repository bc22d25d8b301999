/* The module's own helper library (lua/helpers.c). */
#ifndef LMPIO_LUA_HELPERS_H
#define LMPIO_LUA_HELPERS_H

#include "lmpio_lua.h"

/* helpers.c: raises "unknown field 'x'" unless the table at idx has only the
 * string keys in names (NULL-terminated). */
void lmpio_lua_checkfields(lua_State *L, int idx, const char *const *names);
/* helpers.c: v, argument arg, as an int from min to INT_MAX; raises "out of
 * range" otherwise. */
int lmpio_lua_checkint(lua_State *L, int arg, lua_Integer v, lua_Integer min);

#endif
