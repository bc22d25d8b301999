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

/* ---- error.c: every error the module raises is an error object ----------
 * {name=, class=, message=, call=, where=, rank=}; these replace Lua's
 * luaL_check* and luaL_error family (which raise plain strings), with the
 * same arguments, and cost nothing more on the path that succeeds.  The
 * call and the argument's number (after self for a method) are found when
 * the error is raised.  Lua's raising helpers are poisoned below, so that a
 * plain string cannot come back. */
int lmpio_lua_error(lua_State *L, int cls, const char *fmt, ...) __attribute__((noreturn));
int lmpio_lua_argerror(lua_State *L, int arg, const char *extramsg) __attribute__((noreturn));
int lmpio_lua_typeerror(lua_State *L, int arg, const char *tname) __attribute__((noreturn));
lua_Integer lmpio_lua_checkinteger(lua_State *L, int arg);
lua_Integer lmpio_lua_optinteger(lua_State *L, int arg, lua_Integer def);
lua_Number lmpio_lua_checknumber(lua_State *L, int arg);
lua_Number lmpio_lua_optnumber(lua_State *L, int arg, lua_Number def);
const char *lmpio_lua_checklstring(lua_State *L, int arg, size_t *len);
const char *lmpio_lua_optlstring(lua_State *L, int arg, const char *def, size_t *len);
void lmpio_lua_checkluatype(lua_State *L, int arg, int t);
void lmpio_lua_checkany(lua_State *L, int arg);
void *lmpio_lua_checkudata(lua_State *L, int arg, const char *tname);
int lmpio_lua_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]);
void lmpio_lua_checkstack(lua_State *L, int n, const char *msg);
lua_Integer lmpio_lua_len(lua_State *L, int idx);
#define lmpio_lua_checkstring(L, n) lmpio_lua_checklstring((L), (n), NULL)
#define lmpio_lua_optstring(L, n, d) lmpio_lua_optlstring((L), (n), (d), NULL)
#define lmpio_lua_argcheck(L, cond, arg, extramsg)                             \
  ((void)((cond) || lmpio_lua_argerror((L), (arg), (extramsg))))

#ifndef LMPIO_LUA_ERROR_C
#undef luaL_argcheck
#undef luaL_argexpected
#undef luaL_checkstring
#undef luaL_optstring
#pragma GCC poison luaL_error luaL_argerror luaL_typeerror luaL_argcheck luaL_argexpected
#pragma GCC poison luaL_checkinteger luaL_optinteger luaL_checknumber luaL_optnumber
#pragma GCC poison luaL_checklstring luaL_checkstring luaL_optlstring luaL_optstring
#pragma GCC poison luaL_checktype luaL_checkany luaL_checkudata luaL_checkoption
#pragma GCC poison luaL_checkstack luaL_len
#endif

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
