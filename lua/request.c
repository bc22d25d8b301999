/* Requests of the nonblocking data access calls (fh:iread_at, fh:iwrite, ...):
 * a userdata with metatable "lmpio.request" over an MPI_Request (a generalized
 * request of the core, whose transfer runs on a worker thread while the
 * script goes on: see core/src/request.c).
 *
 *   req:wait()  -> buf, count for reads; count for writes (items of the call's type);
 *                  a buffer the read made from a count holds the count items read
 *   req:test()  -> false, or true followed by what wait returns
 *
 * The request keeps the call's data (buffer or string) alive in its user
 * value until it is waited for (reads keep their buffer, since wait returns
 * it) or collected.  __gc of a request never waited for waits for it first:
 * the transfer may still be using the data, which the request keeps alive
 * while its finalizer runs.
 *
 * Every wait and test enters the core as a call does (LMPIO_LUA_CORE): a
 * read in a representation with Lua converters is converted when it
 * completes, on this thread, inside MPI_Wait / MPI_Test.  Waits are
 * watched (lua/watch.h: a long one is reported with the script's line). */
#include "error.h"
#include "watch.h"
#include "buffer.h"
#include "request.h"

#include <limits.h>

/***
The request of a nonblocking data access call (`fh:iread_at`,
`fh:iwrite_all`, `fh:iread_shared`, ...), an MPI generalized request.  The
call starts the transfer, which runs in the background (on a thread of the
core) while the script computes; `wait`, `test`, `lmpio.waitall` and
`lmpio.waitany` complete it.  Until then the data is the call's: writing
an array a pending write holds, or touching one a pending read holds,
raises ("array is held by a pending iwrite_at; wait for its request
first"); the file's close lets go too.  The
request keeps the call's data (array, buffer or string) alive until it
completes, even when the script drops the request: a request collected
before it completed is waited for first.  In a representation registered
from Lua, the converters run on the script's thread: a write's when the
call starts, a read's when `wait`, `test`, `waitall` or `waitany`
completes it; only the file bytes move in the background.  With an MPI
library without `MPI_THREAD_MULTIPLE` every call completes in the
starting call.
@type request
*/

enum { UV_DATA = 1, UV_HOLD = 2, NUV = 2 };

static lmpio_lua_request *checkrequest(lua_State *L) {
  return lmpio_lua_checkudata(L, 1, LMPIO_LUA_REQUEST);
}

lmpio_lua_request *lmpio_lua_newrequest(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading) {
  dataidx = lua_absindex(L, dataidx);
  lmpio_lua_request *r = lua_newuserdatauv(L, sizeof *r, NUV);
  r->req = MPI_REQUEST_NULL;
  r->hold = NULL;
  r->type_size = m->type_size;
  r->reading = reading;
  r->done = 0;
  r->count = 0;
  r->mem = *m;
  r->mem.tobj = NULL; /* not kept in use past the call */
  luaL_setmetatable(L, LMPIO_LUA_REQUEST);
  lua_pushvalue(L, dataidx);
  lua_setiuservalue(L, -2, UV_DATA);
  /* The data is the script's again when the request completes; the name
   * of the call (the method's) is in the message of an access before. */
  char call[48] = "";
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name) snprintf(call, sizeof call, "%s", ar.name);
  else snprintf(call, sizeof call, "nonblocking %s", reading ? "read" : "write");
  r->hold = lmpio_lua_hold_push(L, dataidx, m, reading, call, 1, &r->req);
  lua_setiuservalue(L, -2, UV_HOLD);
  return r;
}

/* The request is done with: its data is the script's again. */
static void let_go(lmpio_lua_request *r) {
  lmpio_lua_unhold(r->hold);
  r->hold = NULL;
}

/* MPI_Wait and friends, entered as a core call: the request's memory is
 * what converters of a read see (`one`: NULL when several requests). */
#define COMPLETING(L, one, rcvar, expr)                                        \
  do {                                                                         \
    const lmpio_lua_mem *saved_mem_ = lmpio_lua_caller_mem;                    \
    lmpio_lua_caller_mem = (one) ? &(one)->mem : NULL;                         \
    LMPIO_LUA_CORE(L, rcvar, expr);                                            \
    lmpio_lua_caller_mem = saved_mem_;                                         \
  } while (0)
/* The same for a call that waits, watched as `call` (lua/watch.h). */
#define WAITING(L, call, one, rcvar, expr)                                     \
  do {                                                                         \
    lmpio_lua_entered = 1;                                                     \
    const lmpio_lua_mem *saved_mem_ = lmpio_lua_caller_mem;                    \
    lmpio_lua_caller_mem = (one) ? &(one)->mem : NULL;                         \
    LMPIO_LUA_WAIT(L, call, rcvar, expr);                                      \
    lmpio_lua_caller_mem = saved_mem_;                                         \
  } while (0)

/* The request completed with status st: the count, and the data let go of
 * for writes. */
static void complete(lua_State *L, lmpio_lua_request *r, const MPI_Status *st) {
  MPI_Count bytes = 0;
  if (MPI_Get_elements_x(st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED) bytes = 0;
  r->count = r->type_size > 0 ? (lua_Integer)(bytes / r->type_size) : 0;
  r->done = 1;
  r->req = MPI_REQUEST_NULL;
  let_go(r);
  if (r->reading) { /* a buffer made from a count holds the items read */
    lua_getiuservalue(L, 1, UV_DATA);
    lmpio_lua_readdone(lmpio_lua_tobuffer(L, -1), r->count);
    lua_pop(L, 1);
  } else {
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_DATA);
  }
}

/* A request that completed with a failure of the transfer raises its error
 * object (class and message of the failure, from the core); the request is
 * done with (waiting again raises nothing new: it gives count 0). */
static void failed(lua_State *L, lmpio_lua_request *r, int rc, const MPI_Status *st) {
  int cls = rc; /* (MPI_Wait and MPI_Test leave st->MPI_ERROR unset) */
  if (cls == MPI_SUCCESS) return;
  if (rc == MPI_ERR_IN_STATUS) cls = st->MPI_ERROR;
  r->done = 1;
  r->req = MPI_REQUEST_NULL;
  let_go(r);
  r->count = 0;
  lua_pushnil(L);
  lua_setiuservalue(L, 1, UV_DATA);
  int ecls = cls;
  MPI_Error_class(cls, &ecls);
  lmpio_lua_raise(L, ecls, NULL);
}

static int results(lua_State *L, const lmpio_lua_request *r) {
  if (r->reading) {
    lua_getiuservalue(L, 1, UV_DATA);
    lua_pushinteger(L, r->count);
    return 2;
  }
  lua_pushinteger(L, r->count);
  return 1;
}

/***
Waits for the operation to complete (`MPI_Wait`) and gives its result;
waiting again gives the same result.
@function request:wait
@return for reads: the array or buffer read into (the one given to the call,
  or the new one it made), and the number of items of the call's datatype
  read (fewer at the end of the file); for writes: the number of items written
@raise an @{error} object when `MPI_Wait` fails
@usage
local req = fh:iread_at(0, 100, lmpio.DOUBLE)
local data, n = req:wait()
*/
static int r_wait(lua_State *L) {
  lmpio_lua_request *r = checkrequest(L);
  lmpio_lua_running(L);
  if (!r->done) {
    MPI_Status st;
    int rc;
    WAITING(L, "wait", r, rc, MPI_Wait(&r->req, &st));
    failed(L, r, rc, &st);
    complete(L, r, &st);
  }
  return results(L, r);
}

/***
Whether the operation has completed (`MPI_Test`), and its result if so.
@function request:test
@treturn boolean false when it is still in progress, or true followed by what
  @{request:wait} returns
@raise an @{error} object when `MPI_Test` fails
*/
static int r_test(lua_State *L) {
  lmpio_lua_request *r = checkrequest(L);
  lmpio_lua_running(L);
  if (!r->done) {
    MPI_Status st;
    int flag = 0;
    int rc;
    COMPLETING(L, r, rc, MPI_Test(&r->req, &flag, &st));
    failed(L, r, rc, &st);
    if (!flag) {
      lua_pushboolean(L, 0);
      return 1;
    }
    complete(L, r, &st);
  }
  lua_pushboolean(L, 1);
  return 1 + results(L, r);
}

static int r_gc(lua_State *L) {
  lmpio_lua_request *r = checkrequest(L);
  if (r->req != MPI_REQUEST_NULL) {
    int fin = 1;
    MPI_Finalized(&fin);
    /* the data (our user value) lives until this finalizer returns */
    int rc;
    /* A finalizer runs inside whatever call allocated: its wait is not
     * that call's entry into the core (a collective method whose argument
     * check ran it took its own argument error for a failure after entering,
     * and did not agree on it: the other ranks' call met its next one). */
    int entered = lmpio_lua_entered;
    if (!fin) WAITING(L, "__gc of a request", r, rc, MPI_Wait(&r->req, MPI_STATUS_IGNORE));
    lmpio_lua_entered = entered;
    (void)rc;
    r->req = MPI_REQUEST_NULL;
  }
  let_go(r);
  return 0;
}

/* The requests of a table (1..n), checked, in an array for MPI; a request
 * listed again is MPI_REQUEST_NULL there (MPI would wait for it, free it,
 * and then wait for the freed one) and *dup[i] is 1 for it. */
static int checkrequests(lua_State *L, int idx, MPI_Request **reqs, unsigned char **dup) {
  lmpio_lua_checkluatype(L, idx, LUA_TTABLE);
  lua_Integer len = lmpio_lua_len(L, idx);
  if (len < 0 || (lua_Unsigned)len > (lua_Unsigned)INT_MAX / sizeof(MPI_Request))
    lmpio_lua_argerror(L, idx, "too many requests");
  int n = (int)len;
  size_t m = (size_t)(n > 0 ? n : 1);
  *reqs = lua_newuserdatauv(L, m * (sizeof(MPI_Request) + 1), 0);
  *dup = (unsigned char *)(*reqs + m);
  lua_createtable(L, 0, n); /* the requests seen */
  int seen = lua_gettop(L);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    lmpio_lua_request *r = luaL_testudata(L, -1, LMPIO_LUA_REQUEST);
    if (!r) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "element %d is not a request", i + 1));
    lua_pushvalue(L, -1);
    (*dup)[i] = lua_rawget(L, seen) != LUA_TNIL;
    lua_pop(L, 1);
    if (!(*dup)[i]) {
      lua_pushboolean(L, 1);
      lua_rawset(L, seen); /* pops the request */
    } else {
      lua_pop(L, 1);
    }
    (*reqs)[i] = r->done || (*dup)[i] ? MPI_REQUEST_NULL : r->req;
  }
  lua_pop(L, 1); /* the requests seen; the array stays */
  return n;
}

/* Completes element i (0-based) of the table at idx with status st, as
 * wait does; pushes what wait returns and returns how many. */
static int complete_at(lua_State *L, int idx, int i, int rc, const MPI_Status *st) {
  lua_geti(L, idx, i + 1);
  lua_replace(L, 1); /* the request becomes argument 1, as for its methods */
  lmpio_lua_request *r = checkrequest(L);
  if (!r->done) {
    r->req = MPI_REQUEST_NULL; /* MPI freed it */
    failed(L, r, rc, st);
    complete(L, r, st);
  }
  return results(L, r);
}

/***
Waits for every request of a list (`MPI_Waitall`).
@function lmpio.waitall
@tparam {request,...} reqs the requests: of files, and of messages
  (@{msgrequest}, `comm:isend` and `comm:irecv`) mixed with them; some may
  be complete already; one listed more than once is waited for once
@return nothing; each request then gives its result with @{request:wait}
  (`msgrequest:wait` for a message's)
@raise the error object of the first request whose transfer failed (the
  others are complete all the same)
*/
static int l_waitall(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 1);
  lua_pushvalue(L, 1);
  lua_insert(L, 1); /* 1: scratch slot for complete_at, 2: the table */
  MPI_Request *reqs;
  unsigned char *dup;
  int n = checkrequests(L, 2, &reqs, &dup);
  MPI_Status *st = lua_newuserdatauv(L, sizeof(MPI_Status) * (size_t)(n > 0 ? n : 1), 0);
  int rc;
  WAITING(L, "waitall", (lmpio_lua_request *)NULL, rc, MPI_Waitall(n, reqs, st));
  int first_bad = -1;
  for (int i = 0; i < n; i++) {
    if (dup[i]) continue; /* completed at its first listing */
    lua_geti(L, 2, i + 1);
    lmpio_lua_request *r = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (r->done) continue;
    if (rc == MPI_ERR_IN_STATUS && st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING) {
      if (first_bad < 0) first_bad = i;
      continue;
    }
    int top = lua_gettop(L);
    complete_at(L, 2, i, MPI_SUCCESS, &st[i]);
    lua_settop(L, top);
  }
  if (first_bad >= 0) {
    for (int i = 0; i < n; i++) { /* the failed ones: done, their data let go */
      if (dup[i]) continue;
      lua_geti(L, 2, i + 1);
      lmpio_lua_request *r = lua_touserdata(L, -1);
      lua_pop(L, 1);
      if (r->done || i == first_bad) continue;
      r->done = 1;
      r->req = MPI_REQUEST_NULL;
      let_go(r);
    }
    complete_at(L, 2, first_bad, st[first_bad].MPI_ERROR, &st[first_bad]); /* raises */
  }
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) lmpio_lua_checkmpi(L, rc, "MPI_Waitall");
  return 0;
}

/***
Waits for one request of a list to complete (`MPI_Waitany`).
Message requests (@{msgrequest}) may be mixed with those of files: the
requests are then tested in turn until one completes.
@function lmpio.waitany
@tparam {request,...} reqs the requests (one listed more than once counts at
  its first index; those a wait or test completed already are skipped)
@treturn integer|nil the index in reqs of the request that completed, or nil
  when none was pending
@return then what @{request:wait} returns for it (for a message's, what
  `msgrequest:wait` returns: nothing for a send; the value, its source and
  its tag for a receive)
@raise the error object of that request when its transfer failed
@usage local i, v = lmpio.waitany({fh:iread_at(0, 10, lmpio.INT), comm:irecv(left)})
*/
static int l_waitany(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 1);
  lua_pushvalue(L, 1);
  lua_insert(L, 1);
  MPI_Request *reqs;
  unsigned char *dup;
  int n = checkrequests(L, 2, &reqs, &dup);
  MPI_Status st;
  int idx = MPI_UNDEFINED;
  int rc;
  WAITING(L, "waitany", (lmpio_lua_request *)NULL, rc, MPI_Waitany(n, reqs, &idx, &st));
  if (idx == MPI_UNDEFINED) {
    if (rc != MPI_SUCCESS) lmpio_lua_checkmpi(L, rc, "MPI_Waitany");
    lua_pushnil(L);
    return 1;
  }
  int k = complete_at(L, 2, idx, rc, &st);
  lua_pushinteger(L, idx + 1);
  lua_insert(L, -k - 1);
  return k + 1;
}

static int r_tostring(lua_State *L) {
  const lmpio_lua_request *r = checkrequest(L);
  lua_pushfstring(L, "lmpio.request (%s, %s): %p", r->reading ? "read" : "write",
                  r->done ? "waited" : "not waited", (const void *)r);
  return 1;
}

int lmpio_lua_request_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_REQUEST)) {
    static const luaL_Reg meta[] = {{"__gc", r_gc}, {"__tostring", r_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"wait", r_wait}, {"test", r_test}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {{"waitall", l_waitall}, {"waitany", l_waitany}, {NULL, NULL}};
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
