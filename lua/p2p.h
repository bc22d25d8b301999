/* Messages between ranks: the request of a send or a receive, shared by
 * lua/p2p.c (the protocol: sends, posted receives, their progress) and
 * lua/msgreq.c (the requests' methods, lmpio.waitall and lmpio.waitany). */
#ifndef LMPIO_LUA_P2P_H
#define LMPIO_LUA_P2P_H

#include "buffer.h"
#include "comm.h"

enum { K_VALUE = 1, K_STRING, K_ARRAY };
#define MAGIC 0x6c6d7032u /* "lmp2": a message that lmpio sent */

typedef struct {
  uint32_t magic;
  int32_t kind;   /* K_* */
  int32_t code;   /* an array's type code */
  int32_t ndim;   /* an array's shape */
  int32_t forder;
  int32_t seq;    /* -1: the payload follows; else its tag on the shadow */
  uint64_t count; /* an array's elements; bytes of the others */
  uint64_t nbytes;
  uint64_t dims[LMPIO_LUA_MAXDIM];
} msghdr;
#define HDR sizeof(msghdr)
/* A message up to INLINE packed bytes travels whole (MPI_Pack's bytes of
 * the header and the payload; SLACK covers what packing may add). */
enum { INLINE = 4096, SLACK = 64 };

enum { ST_DONE, ST_POSTED, ST_PAYLOAD, ST_SENDING };

typedef struct lmpio_lua_mreq {
  MPI_Request req;  /* a send: its inline message or announcement; a receive: announcement, then payload */
  MPI_Request req2; /* a send: its payload */
  MPI_Comm comm, shadow;
  int sending;
  int state;        /* ST_* */
  int src, tag;     /* a receive: what it matches */
  int rsrc, rtag;   /* a receive: where its message came from */
  int into;         /* a receive into an array the script gave (user value UV_INTO) */
  int err;          /* a failure found while progressing it (raised by its wait), or 0 */
  int waited;       /* completed by a wait or test (waitany skips it) */
  lua_Integer n;    /* a receive into an array: the elements received */
  msghdr hdr;       /* a receive: the header received */
  lmpio_lua_hold *hold; /* a send's: of the array sent, until it completes (user value UV_HOLD) */
  void *owner;      /* lmpio_lua_owner of its lua_State */
  struct lmpio_lua_mreq *next, **pprev; /* in the list of pending receives */
  char errmsg[MPI_MAX_ERROR_STRING + 64];
  unsigned char buf[INLINE];
} lmpio_lua_mreq;
#define PENDING_KEY "lmpio.pendingrecvs" /* registry: receives not complete (anchored until they are) */

/* Progresses the n requests t (and every other pending receive of this
 * lua_State whose announcement may arrive) until all of them (all) or one
 * of them is complete, waiting or not: `waiting` names the call that waits
 * (its hang report says it), NULL for none.  Returns the index of a
 * complete one (any), 0 (all done), or -1 (not waiting: not yet). */
int lmpio_lua_p2p_progress(lua_State *L, lmpio_lua_mreq *const *t, int n, int all, const char *waiting);
/* Pushes what the completed request r (at ridx) gives: nothing for a send;
 * for a receive the value, its source and tag (and the elements received
 * into an array given); raises its failure.  Returns how many. */
int lmpio_lua_p2p_results(lua_State *L, int ridx, lmpio_lua_mreq *r);
/* The finalizer's part of a request: waits for (or cancels) what is in
 * progress (a wait watched: L's script is where) and lets go of what it
 * holds. */
void lmpio_lua_p2p_drop(lua_State *L, lmpio_lua_mreq *r);

/* p2p.c: the pace of every wait of the module that polls: a bounded number
 * of polls, then sched_yield for a while, then sleeps that grow.  Past the
 * polls, a wait that lasts LMPIO_HANG_REPORT seconds reports itself as
 * `call`, with the line of the script running on L (lmpio_watch_tick). */
typedef struct {
  long long opaque[8];
} lmpio_lua_waiter; /* zeroed before a wait */
void lmpio_lua_pause(lmpio_lua_waiter *w, lua_State *L, const char *call);
/* The wait of w is over: adapts how long the next ones poll. */
void lmpio_lua_waited(const lmpio_lua_waiter *w);
int lmpio_lua_p2p_open(lua_State *L);
int lmpio_lua_msgreq_open(lua_State *L);

#endif
