/* Lua values as bytes (lua/serial.c). */
#ifndef LMPIO_LUA_SERIAL_H
#define LMPIO_LUA_SERIAL_H

#include "lmpio_lua.h"

/* ---- serial.c: Lua values as bytes (message.c) ------------------------- */

/* The serialised form of the value at idx (argument arg, for messages),
 * as bcast sends it: pushes a userdata holding the bytes, returns them. */
unsigned char *lmpio_lua_serialise(lua_State *L, int idx, int arg, size_t *n);
/* Pushes the value serialised in p[0..n-1]; raises when it is corrupt. */
void lmpio_lua_deserialise(lua_State *L, const unsigned char *p, size_t n);

#endif
