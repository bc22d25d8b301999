/* Communicators (lua/comm.c), info objects (info.c), and their collectives (message.c). */
#ifndef LMPIO_LUA_COMM_H
#define LMPIO_LUA_COMM_H

#include "agree.h"

/* ---- comm.c ------------------------------------------------------------ */

/* A communicator object: the MPI communicator, and its shadow (a
 * duplicate made with it, for the second part of messages too large to
 * travel in one, lua/p2p.c, so that no receive of the script can take it). */
typedef struct lmpio_lua_comm {
  MPI_Comm comm;
  MPI_Comm shadow;
  unsigned seq;  /* the tag of this rank's next payload on the shadow */
  int owned;     /* freed by comm:free() (MPI_Comm_free is collective: never in __gc) */
} lmpio_lua_comm;
/* The communicator at idx; raises when it was freed or MPI was finalized. */
MPI_Comm lmpio_lua_checkcomm(lua_State *L, int idx);
lmpio_lua_comm *lmpio_lua_checklcomm(lua_State *L, int idx);
/* info.c: converts a Lua table (or nil) at idx to a new MPI_Info (or MPI_INFO_NULL):
 * values are strings, numbers or booleans ("true"/"false"), as strings;
 * validates everything before creating it. */
MPI_Info lmpio_lua_checkinfo(lua_State *L, int idx);
void lmpio_lua_freeinfo(MPI_Info *info);
/* Pushes an MPI_Info as a Lua table of strings. */
void lmpio_lua_pushinfo(lua_State *L, MPI_Info info);
/* The block distribution of the module (lmpio.block, comm:grid,
 * comm:scatter; darray's "block"): part i of parts (0-based) owns
 * items first .. first + count - 1 of n (0-based), ceil(n / parts) of them
 * or, for the last parts, fewer or none. */
void lmpio_lua_block(lua_Integer n, lua_Integer parts, lua_Integer i, lua_Integer *first, lua_Integer *count);

/* ---- comm.c: for the collective methods of other files (message.c) ----- */

/* Adds collective methods (cm[0..n-1], static) and local ones (local, may
 * be NULL) to the communicators' methods. */
void lmpio_lua_comm_methods(lua_State *L, const lmpio_lua_collective *cm, size_t n, const luaL_Reg *local);

int lmpio_lua_comm_open(lua_State *L);
int lmpio_lua_message_open(lua_State *L);

#endif
