/* MPI and lmpio failures as Lua error objects (lua/error.c), and the calls into the core. */
#ifndef LMPIO_LUA_ERROR_H
#define LMPIO_LUA_ERROR_H

#include "lmpio_lua.h"

/* ---- error.c: MPI-IO failures as Lua error objects ------------------- */

/* Pushes an error object {class=, name=, message=} with metatable
 * "lmpio.error" (its __tostring prints all three).  msg NULL: the core's
 * lmpio_last_error_message(). */
void lmpio_lua_pusherror(lua_State *L, int cls, const char *msg);
/* Raises the error object for cls (never returns). */
int lmpio_lua_raise(lua_State *L, int cls, const char *msg);
/* The traceback of the last error object raised ("" if none), printed when
 * an uncaught error aborts the job (lua5.4 prints none for an object). */
const char *lmpio_lua_last_traceback(void);
/* Raises "'name' called after MPI was finalized" once MPI is finalized
 * (name: the running function's, as registered).  Every function that may
 * reach MPI calls it first: methods in the check of their object
 * (of a file, a communicator, a datatype, a request). */
void lmpio_lua_running(lua_State *L);
/* The message on top of the stack, "bad argument #3 to '?' (...)" from a
 * method run under lua_pcall (which hides its name, and that argument 1 is
 * self), rewritten in place as "bad argument #2 to 'name' (...)": self is 1
 * for a method, 0 for a function. */
void lmpio_lua_fix_argerror(lua_State *L, const char *name, int self);
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
