/* The module's blocking MPI calls, watched for hang reports (core/src/watch.c):
 * a rank that has waited LMPIO_HANG_REPORT seconds inside one says on
 * standard error "lmpio: rank R has waited S s in CALL (script.lua:LINE)". */
#ifndef LMPIO_LUA_WATCH_H
#define LMPIO_LUA_WATCH_H

#include "error.h"

/* rcvar = expr, an MPI call made for the method `call` of the script
 * running on L, watched (one clock read): the core's watchdog thread reads
 * L's stack for the script's line while expr waits, so expr runs no Lua
 * (the core pauses the watch around Lua converters) and raises nothing. */
#define LMPIO_LUA_WAIT(L, call, rcvar, expr)                                   \
  do {                                                                         \
    lua_State *lmpio_lua_wsaved_ = lmpio_lua_caller;                           \
    lmpio_lua_caller = (L);                                                    \
    lmpio_watch_begin(call);                                                   \
    (rcvar) = (expr);                                                          \
    lmpio_watch_end();                                                         \
    lmpio_lua_caller = lmpio_lua_wsaved_;                                      \
  } while (0)

/* The same, then lmpio_lua_checkmpi(L, rc, what). */
#define LMPIO_LUA_CHECKWAIT(L, call, expr, what)                               \
  do {                                                                         \
    int lmpio_lua_wrc_;                                                        \
    LMPIO_LUA_WAIT(L, call, lmpio_lua_wrc_, expr);                             \
    lmpio_lua_checkmpi((L), lmpio_lua_wrc_, (what));                           \
  } while (0)

#endif
