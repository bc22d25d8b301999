/* MPI's lifetime, exit functions and the script's end (lua/lifetime.c). */
#ifndef LMPIO_LUA_LIFETIME_H
#define LMPIO_LUA_LIFETIME_H

#include "lmpio_lua.h"

/* ---- lifetime.c: MPI's lifetime ------------------------------------------ */

/* Whether this rank is leaving a job of several ranks because its script
 * failed (then nothing collective may run: the job is aborted). */
int lmpio_lua_failing(void);
/* Prints why (after "rank N of M ") and aborts the job (MPI_Abort). */
void lmpio_lua_abort(const char *why);


/* ---- lifetime.c: exit functions ------------------------------------------ */

/* Registers fn to be run (once, in registration order) before MPI_Finalize
 * at exit. */
typedef void (*lmpio_lua_exit_fn)(const void *owner);
void lmpio_lua_atexit(lmpio_lua_exit_fn fn);
/* The owner of objects created in L (its main thread), passed to exit
 * functions so that closing one lua_State only touches its own objects; exit
 * functions receive NULL at process exit (everything). */
void *lmpio_lua_owner(lua_State *L);

/* lifetime.c: MPI initialised and the script's end watched (first); the
 * environment functions (wtime, wtick, abort, version). */
int lmpio_lua_lifetime_open(lua_State *L);
int lmpio_lua_environment_open(lua_State *L);

#endif
