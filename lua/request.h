/* Requests of the nonblocking file calls (lua/request.c). */
#ifndef LMPIO_LUA_REQUEST_H
#define LMPIO_LUA_REQUEST_H

#include "buffer.h"

/* ---- request.c: requests of the nonblocking calls --------------------- */

typedef struct lmpio_lua_request {
  MPI_Request req;       /* MPI_REQUEST_NULL once waited (or never started) */
  lmpio_lua_hold *hold;  /* of its buffer until it completes (user value 2), or NULL */
  MPI_Count type_size;   /* data bytes of one item of the call's type */
  int reading;           /* wait returns the buffer too */
  int done;              /* waited: count holds the result */
  lua_Integer count;
  lmpio_lua_mem mem;     /* the call's memory (tobj NULL), for converters run at completion */
} lmpio_lua_request;

/* Pushes a new request object (req MPI_REQUEST_NULL, for the core call to
 * fill) that keeps the value at dataidx alive until it is waited for. */
lmpio_lua_request *lmpio_lua_newrequest(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading);

int lmpio_lua_request_open(lua_State *L);

#endif
