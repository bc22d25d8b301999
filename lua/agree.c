/* The agreement of the collective methods of the Lua module, for files
 * (lua/file.c), communicators (lua/comm.c) and messages (lua/message.c):
 * a collective method checks its arguments first, under
 * lmpio_lua_collective_pcall; a rank whose checks failed joins the
 * method's first communication as a failing rank, so every rank raises
 * (with the message of the lowest failing rank) and no rank is left
 * waiting in a collective.  Communicators agree here (an MPI_Allreduce of
 * a few integers, or allgather's own exchange); files agree in the core
 * (lmpio_fail_next_collective). */
#include "error.h"
#include "agree.h"

#include <stdint.h>
#include <stdio.h>

_Thread_local const char *lmpio_lua_collective_name;

int lmpio_lua_commrank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

int lmpio_lua_commsize(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}

int lmpio_lua_collective_pcall(lua_State *L, lua_CFunction fn, const void *up) {
  int n = lua_gettop(L);
  lua_pushvalue(L, 1); /* keeps self alive below the call */
  if (up) {
    lua_pushlightuserdata(L, (void *)up);
    lua_pushcclosure(L, fn, 1);
  } else {
    lua_pushcfunction(L, fn);
  }
  lua_rotate(L, 1, 2); /* self, fn, args... */
  int saved = lmpio_lua_entered;
  lmpio_lua_entered = 0;
  int st = lua_pcall(L, n, LUA_MULTRET, 0);
  int entered = lmpio_lua_entered;
  lmpio_lua_entered = saved;
  if (st == LUA_OK) return lua_gettop(L) - 1;
  if (entered || (st != LUA_ERRRUN && st != LUA_ERRMEM)) return lua_error(L);
  return -1;
}

enum { NAGREE = LMPIO_LUA_NAGREE, MAXMSG = 1024 };

/* Every rank raises the agreed failure: the lowest failing rank (root)
 * broadcasts its message; the failing ranks (mine) raise an MPI_ERR_ARG
 * error object with their own message, the others with root's. */
static void raise_failure(lua_State *L, MPI_Comm comm, int root, int mine, const char *msg) {
  char text[MAXMSG] = "";
  if (lmpio_lua_commrank(comm) == root) snprintf(text, sizeof text, "%s", msg ? msg : "?");
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Bcast(text, MAXMSG, MPI_CHAR, root, comm), "MPI_Bcast");
  text[MAXMSG - 1] = '\0';
  if (mine) lmpio_lua_raise(L, MPI_ERR_ARG, msg ? msg : text);
  lua_pushfstring(L, "%s (on rank %d)", text, root);
  lmpio_lua_raise(L, MPI_ERR_ARG, lua_tostring(L, -1));
}

/* The first communication of every collective method but allgather: an
 * MPI_Allreduce (MPI_MAX) of v[0..n-1], n NAGREE, or AGREE_WORDS for bcast
 * (ranks that fail use the same n).  v[0] is the failure
 * flag: 0 on a rank whose arguments were right, size - rank on one whose
 * were not (so the maximum names the lowest failing rank); msg is that
 * rank's message (NULL when v[0] is 0).  The next entries are the method's
 * own values to compare (a value and its negation give the maximum and the
 * minimum at once), the rest is bcast's inline value.  When any rank
 * failed, every rank raises. */
void lmpio_lua_agree(lua_State *L, MPI_Comm comm, long long *v, int n, const char *msg) {
  long long mine = v[0];
  lmpio_lua_entered = 1;
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_LONG_LONG, MPI_MAX, comm), "MPI_Allreduce");
  if (v[0] != 0) raise_failure(L, comm, lmpio_lua_commsize(comm) - (int)v[0], mine != 0, msg);
}

void lmpio_lua_agree_failed(lua_State *L, MPI_Comm comm, const char *msg) {
  long long v[NAGREE] = {lmpio_lua_commsize(comm) - lmpio_lua_commrank(comm)};
  lmpio_lua_agree(L, comm, v, NAGREE, msg);
}


/* allgather's first communication: an MPI_Allgather of one block per
 * rank, 8 bytes of length (or GATHER_FAILED), then the value when it
 * fits.  A failure on any rank is seen by all. */
enum { GATHER_BLOCK = LMPIO_LUA_GATHER_BLOCK };
#define GATHER_FAILED LMPIO_LUA_GATHER_FAILED

void lmpio_lua_gather_blocks(lua_State *L, MPI_Comm comm, unsigned char *blocks, const char *msg) {
  int size = lmpio_lua_commsize(comm), mine = lmpio_lua_commrank(comm);
  lmpio_lua_entered = 1;
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, blocks, GATHER_BLOCK, MPI_BYTE, comm),
                           "MPI_Allgather");
  for (int r = 0; r < size; r++)
    if (lmpio_lua_get_le64(blocks + (size_t)r * GATHER_BLOCK) == GATHER_FAILED)
      raise_failure(L, comm, r, lmpio_lua_get_le64(blocks + (size_t)mine * GATHER_BLOCK) == GATHER_FAILED, msg);
}


void lmpio_lua_gather_failed(lua_State *L, MPI_Comm comm, const char *msg) {
  int size = lmpio_lua_commsize(comm);
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * GATHER_BLOCK, 0);
  lmpio_lua_put_le64(blocks + (size_t)lmpio_lua_commrank(comm) * GATHER_BLOCK, GATHER_FAILED);
  lmpio_lua_gather_blocks(L, comm, blocks, msg);
}


