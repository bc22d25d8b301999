/* MPI and lmpio failures as Lua error objects (lua/error.c), and the calls into the core. */
#ifndef LMPIO_LUA_ERROR_H
#define LMPIO_LUA_ERROR_H

#include "lmpio_lua.h"

/* ---- error.c: MPI-IO failures as Lua error objects ------------------- */

/* Pushes an error object {class=, name=, message=, call=, where=, rank=}
 * with metatable "lmpio.error" (its __tostring prints them on one line).
 * msg NULL: the core's lmpio_last_error_message(); a leading call name
 * ("lmpio_file_open: ") is dropped, the call field says it. */
void lmpio_lua_pusherror(lua_State *L, int cls, const char *msg);
/* Raises the error object for cls (never returns). */
int lmpio_lua_raise(lua_State *L, int cls, const char *msg) __attribute__((noreturn));
/* Raises "'name' called after MPI was finalized" once MPI is finalized
 * (name: the running function's, as registered).  Every function that may
 * reach MPI calls it first: methods in the check of their object
 * (of a file, a communicator, a datatype, a request). */
void lmpio_lua_running(lua_State *L);
/* The message of the error at idx: an error object's message field, a
 * string as it is (may push a string for another value). */
const char *lmpio_lua_errormessage(lua_State *L, int idx);
/* Whether the error at idx is an argument error (an MPI_ERR_ARG object, or
 * a string raised by a script's function), which collective methods agree on. */
int lmpio_lua_isargerror(lua_State *L, int idx);
/* What argument numbers of the call in progress are off by (lmpio.open
 * without a communicator: the binding inserted lmpio.world as #1). */
extern _Thread_local int lmpio_lua_argshift;
/* Raises when rc is not MPI_SUCCESS; call it after the core returned. */
#define lmpio_lua_check(L, rc)                                                 \
  do {                                                                         \
    int lmpio_lua_rc_ = (rc);                                                  \
    if (lmpio_lua_rc_ != MPI_SUCCESS) lmpio_lua_raise((L), lmpio_lua_rc_, NULL); \
  } while (0)

/* Raises the error object of a failed MPI call (not an lmpio call): class from
 * MPI_Error_class, message "what: MPI_Error_string". */
void lmpio_lua_checkmpi(lua_State *L, int rc, const char *what);

/* The lua_State of the innermost core call in progress on this thread, so that
 * a converter written in Lua runs on the caller's thread (coroutine).  Every
 * core call of the module goes through LMPIO_LUA_CORE. */
extern _Thread_local lua_State *lmpio_lua_caller;
/* Set when a method has entered the core (lua/file.c: an error raised before
 * that is an argument error, which collective methods agree on). */
extern _Thread_local int lmpio_lua_entered;
#define LMPIO_LUA_CORE(L, rcvar, expr)                                         \
  do {                                                                         \
    lua_State *lmpio_lua_saved_ = lmpio_lua_caller;                            \
    lmpio_lua_caller = (L);                                                    \
    lmpio_lua_entered = 1;                                                     \
    (rcvar) = (expr);                                                          \
    lmpio_lua_caller = lmpio_lua_saved_;                                       \
  } while (0)



int lmpio_lua_error_open(lua_State *L);

#endif
