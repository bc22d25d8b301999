/* The agreement of collective methods (lua/agree.c). */
#ifndef LMPIO_LUA_AGREE_H
#define LMPIO_LUA_AGREE_H

#include "lmpio_lua.h"
#include "watch.h"

/* ---- agree.c: the agreement of collective methods ----------------------- */

/* The rank of this process in comm, and comm's size. */
int lmpio_lua_commrank(MPI_Comm comm);
int lmpio_lua_commsize(MPI_Comm comm);
/* Runs fn, a collective method, under lua_pcall on the arguments 1..top
 * (self kept alive below them; up, when not NULL, fn's upvalue 1 as a light
 * userdata: the row of a table that describes it): returns the number of
 * its results (on top).  An error raised before the method joined its first communication
 * (lmpio_lua_entered still 0: an argument error of this rank) is left on
 * top and -1 returned: the caller joins that communication as a failing
 * rank.  Any other error is raised as it is. */
int lmpio_lua_collective_pcall(lua_State *L, lua_CFunction fn, const void *up);
/* The collective method of a communicator in progress on this thread (its
 * name, set by lua/comm.c around the method and its failing rank's part):
 * its blocking MPI calls are watched under that name (lua/watch.h). */
extern _Thread_local const char *lmpio_lua_collective_name;
/* A blocking MPI call of the collective method in progress, watched under
 * its name, then checked (lmpio_lua_checkmpi with what). */
#define LMPIO_LUA_COLLECTIVE_MPI(L, expr, what) LMPIO_LUA_CHECKWAIT(L, lmpio_lua_collective_name, expr, what)

/* An agreement is an MPI_Allreduce (MPI_MAX) of LMPIO_LUA_NAGREE words
 * (LMPIO_LUA_AGREE_WORDS for bcast, whose short values travel in it): v[0]
 * is the failure flag (0 where the arguments were right), the other words
 * are the method's own (a value and its negation give max and min at
 * once).  When any rank failed, every rank raises MPI_ERR_ARG. */
enum { LMPIO_LUA_NAGREE = 16, LMPIO_LUA_AGREE_WORDS = LMPIO_LUA_NAGREE + 34 };
void lmpio_lua_agree(lua_State *L, MPI_Comm comm, long long *v, int n, const char *msg);
/* Joins an agreement of LMPIO_LUA_NAGREE words as a failing rank. */
void lmpio_lua_agree_failed(lua_State *L, MPI_Comm comm, const char *msg);
/* allgather's first communication: an MPI_Allgather of one block of
 * LMPIO_LUA_GATHER_BLOCK bytes per rank whose first 8 bytes (little-endian)
 * are a length, or UINT64_MAX on a failing rank (then every rank raises),
 * or LMPIO_LUA_GATHER_ARRAY for an array. */
#define LMPIO_LUA_GATHER_BLOCK 64
#define LMPIO_LUA_GATHER_ARRAY (UINT64_MAX - 1)
#define LMPIO_LUA_GATHER_FAILED UINT64_MAX
void lmpio_lua_gather_blocks(lua_State *L, MPI_Comm comm, unsigned char *blocks, const char *msg);
/* Joins lmpio_lua_gather_blocks as a failing rank. */
void lmpio_lua_gather_failed(lua_State *L, MPI_Comm comm, const char *msg);
/* A collective method: run under lua_pcall by comm.c, an error raised
 * before it joined its first communication (fail: joins it as a failing
 * rank) is raised by every rank. */
typedef struct lmpio_lua_collective {
  const char *name;
  lua_CFunction fn;
  void (*fail)(lua_State *L, MPI_Comm comm, const char *msg);
} lmpio_lua_collective;
/* Little-endian 64-bit words of the gather blocks. */
static inline void lmpio_lua_put_le64(unsigned char *b, uint64_t u) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (8 * i));
}
static inline uint64_t lmpio_lua_get_le64(const unsigned char *b) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)b[i] << (8 * i);
  return u;
}

#endif
