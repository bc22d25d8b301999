/* The ground every C file of the Lua module `lmpio` stands on: Lua's and
 * lmpio's headers, the metatable names, checked arithmetic.  Each concern
 * has its own header (error.h, buffer.h, datatype.h, comm.h, ...), which
 * the files that use it include; no header includes them all.
 *
 * One file per concern, each with an lmpio_lua_<concern>_open(L) that adds
 * its functions to the module table on top of the stack (lmpio.c, the top,
 * only calls them in order; no file calls lmpio.c).  A concern added later
 * (e.g. lua/datarep.c) defines lmpio_lua_datarep_open: lmpio.c calls it
 * when it is linked in. */
#ifndef LMPIO_LUA_H
#define LMPIO_LUA_H

#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "lmpio.h"

/* Lua's raising functions never return (they longjmp to the protected
 * call): said here so that the compiler and `make lint` follow the code as
 * it runs, not into a use of what the check before refused. */
int lua_error(lua_State *L) __attribute__((noreturn));
int luaL_error(lua_State *L, const char *fmt, ...) __attribute__((noreturn));
int luaL_argerror(lua_State *L, int arg, const char *extramsg) __attribute__((noreturn));
int luaL_typeerror(lua_State *L, int arg, const char *tname) __attribute__((noreturn));

#define LMPIO_LUA_BUFFER "lmpio.buffer"
#define LMPIO_LUA_DATATYPE "lmpio.datatype"
#define LMPIO_LUA_COMM "lmpio.comm"
#define LMPIO_LUA_FILE "lmpio.file"
#define LMPIO_LUA_ERROR "lmpio.error"
#define LMPIO_LUA_REQUEST "lmpio.request"
#define LMPIO_LUA_MSGREQUEST "lmpio.msgrequest"

/* Checked arithmetic for the sizes the binding computes from what a script
 * gives (counts, extents, lengths): 0 on overflow, *r unspecified then. */
static inline int lmpio_lua_mul_ok(long long a, long long b, long long *r) { return !__builtin_mul_overflow(a, b, r); }
static inline int lmpio_lua_add_ok(long long a, long long b, long long *r) { return !__builtin_add_overflow(a, b, r); }

/* Registers the functions of l into the table on top of the stack. */
#define lmpio_lua_setfuncs(L, l) luaL_setfuncs((L), (l), 0)

#endif
