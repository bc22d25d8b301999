/* The requests of messages ("lmpio.msgrequest": wait, test), and
 * lmpio.waitall and lmpio.waitany over them mixed with file requests
 * (lua/request.c's, which they wrap).  Completion is lua/p2p.c's progress:
 * every wait also moves this rank's other pending receives on. */
#include "error.h"
#include "request.h"
#include "p2p.h"

#include <limits.h>

typedef lmpio_lua_mreq mreq;

/* ---- requests of messages ------------------------------------------------------ */

/***
The request of `comm:isend` or `comm:irecv`.
Complete it with `wait` (or `test` until it returns true), or with
`lmpio.waitall` or `lmpio.waitany`, which take these requests too, in one
list with those of files; until then it keeps the data it sends or
receives alive, and an array it sends is held against writes (see
`comm:isend`).  A receive stays posted until it completes, even when the
script drops its request.
@type msgrequest
*/

static mreq *checkmreq(lua_State *L, int idx) { return lmpio_lua_checkudata(L, idx, LMPIO_LUA_MSGREQUEST); }

/***
Waits until the send or receive is complete.
While it waits, every pending receive of this rank goes on matching.
Waiting again returns the same.
@function msgrequest:wait
@return nothing for a send; for a receive the value, the rank it came from
  and its tag (and the elements received into an array given), as
  `comm:recv`
@raise when the message was not sent by lmpio, does not fit the array
  given, or MPI fails
*/
static int m_wait(lua_State *L) {
  mreq *r = checkmreq(L, 1);
  lmpio_lua_running(L);
  mreq *t[1] = {r};
  lmpio_lua_p2p_progress(L, t, 1, 1, "wait");
  r->waited = 1;
  return lmpio_lua_p2p_results(L, 1, r);
}

/***
Whether the send or receive is complete; completes it if so.
@function msgrequest:test
@treturn boolean false while it is in progress, or true followed by what
  `msgrequest:wait` returns
@raise as `msgrequest:wait`
*/
static int m_test(lua_State *L) {
  mreq *r = checkmreq(L, 1);
  lmpio_lua_running(L);
  mreq *t[1] = {r};
  if (lmpio_lua_p2p_progress(L, t, 1, 1, NULL) < 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  r->waited = 1;
  lua_pushboolean(L, 1);
  return 1 + lmpio_lua_p2p_results(L, 1, r);
}

static int m_gc(lua_State *L) {
  lmpio_lua_p2p_drop(L, checkmreq(L, 1));
  return 0;
}

static int m_tostring(lua_State *L) {
  const mreq *r = checkmreq(L, 1);
  static const char *const states[] = {"complete", "waiting for its message", "in progress", "in progress"};
  lua_pushfstring(L, "lmpio.msgrequest (%s, %s): %p", r->sending ? "send" : "receive", states[r->state],
                  (const void *)r);
  return 1;
}

/* lmpio.waitall over a list that may hold message requests too: the
 * message requests are waited for together, then the file requests go to
 * request.c's waitall (upvalue 1). */
static int l_waitall(lua_State *L) {
  lmpio_lua_running(L);
  lmpio_lua_checkluatype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_Integer n = lmpio_lua_len(L, 1), k = 0;
  if (n < 0 || n > INT_MAX / 2) lmpio_lua_argerror(L, 1, "too many requests");
  mreq **t = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *t, 0); /* 2 */
  int m = 0;
  lua_newtable(L); /* 3: the others */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    mreq *r = luaL_testudata(L, -1, LMPIO_LUA_MSGREQUEST);
    if (r) {
      t[m++] = r;
      lua_pop(L, 1);
    } else {
      lua_rawseti(L, 3, ++k);
    }
  }
  if (m) lmpio_lua_p2p_progress(L, t, m, 1, "waitall");
  if (k || !m) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, m ? 3 : 1);
    lua_call(L, 1, 0);
  }
  for (int i = 0; i < m; i++) t[i]->waited = 1;
  for (int i = 0; i < m; i++) /* failures: raised as wait raises them */
    if (t[i]->err) return lmpio_lua_raise(L, t[i]->err, lua_pushstring(L, t[i]->errmsg));
  return 0;
}

/* lmpio.waitany over a list that may hold message requests too.  Without
 * them it is request.c's (upvalue 1: MPI_Waitany).  With them, the message
 * requests progress and the file requests are tested, round after round,
 * the rounds paced as every wait of this file, until one completes: the
 * first listing of each, skipping those a wait or test completed already,
 * as MPI skips null requests. */
static int l_waitany(lua_State *L) {
  lmpio_lua_running(L);
  lmpio_lua_checkluatype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_Integer n = lmpio_lua_len(L, 1);
  if (n < 0 || n > INT_MAX / 2) lmpio_lua_argerror(L, 1, "too many requests");
  size_t slots = (size_t)(n > 0 ? n : 1);
  mreq **t = lua_newuserdatauv(L, slots * sizeof *t, 0);                /* 2 */
  int *at = lua_newuserdatauv(L, 2 * slots * sizeof *at, 0);           /* 3: list indices, messages then files */
  lua_createtable(L, 0, (int)n);                                        /* 4: the requests seen */
  int m = 0, nf = 0;
  int *fat = at + slots;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    mreq *r = luaL_testudata(L, -1, LMPIO_LUA_MSGREQUEST);
    if (!r && !luaL_testudata(L, -1, LMPIO_LUA_REQUEST))
      lmpio_lua_argerror(L, 1, lua_pushfstring(L, "element %I is not a request", i));
    lua_pushvalue(L, -1);
    int seen = lua_rawget(L, 4) != LUA_TNIL;
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, 4);
    if (seen) continue;
    if (r) t[m] = r, at[m++] = (int)i;
    else fat[nf++] = (int)i;
  }
  if (!m) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_call(L, 1, LUA_MULTRET);
    return lua_gettop(L) - 4;
  }
  mreq **live = lua_newuserdatauv(L, (size_t)m * sizeof *live, 0); /* 5 */
  int *liveat = lua_newuserdatauv(L, (size_t)m * sizeof *liveat, 0); /* 6 */
  lmpio_lua_waiter w = {0};
  for (;;) {
    int nl = 0, pending_files = 0;
    for (int j = 0; j < m; j++)
      if (!t[j]->waited) live[nl] = t[j], liveat[nl++] = at[j];
    if (nl) {
      int k = lmpio_lua_p2p_progress(L, live, nl, 0, NULL);
      if (k >= 0) {
        live[k]->waited = 1;
        lua_settop(L, 6);
        lua_pushinteger(L, liveat[k]); /* 7 */
        lua_geti(L, 1, liveat[k]);     /* 8 */
        int nr = lmpio_lua_p2p_results(L, 8, live[k]);
        lua_remove(L, 8);
        return 1 + nr;
      }
    }
    for (int j = 0; j < nf; j++) {
      lua_settop(L, 6);
      lua_geti(L, 1, fat[j]); /* 7 */
      const lmpio_lua_request *f = lua_touserdata(L, 7);
      if (f->done) continue;
      pending_files = 1;
      lua_pushinteger(L, fat[j]);  /* 8 */
      lua_getfield(L, 7, "test"); /* the request's own test: its converters, its failure */
      lua_pushvalue(L, 7);
      lua_call(L, 1, LUA_MULTRET); /* 9: false, or true and what wait returns */
      if (lua_toboolean(L, 9)) {
        lua_remove(L, 9);
        return lua_gettop(L) - 7;
      }
    }
    lua_settop(L, 6);
    if (!nl && !pending_files) {
      lua_pushnil(L);
      return 1;
    }
    lmpio_lua_pause(&w, L, "waitany");
  }
}

int lmpio_lua_msgreq_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_MSGREQUEST)) {
    static const luaL_Reg meta[] = {{"__gc", m_gc}, {"__tostring", m_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"wait", m_wait}, {"test", m_test}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, -1, "waitall") == LUA_TFUNCTION) { /* request.c's, for file requests */
    lua_pushcclosure(L, l_waitall, 1);
    lua_setfield(L, -2, "waitall");
  } else {
    lua_pop(L, 1);
  }
  if (lua_getfield(L, -1, "waitany") == LUA_TFUNCTION) {
    lua_pushcclosure(L, l_waitany, 1);
    lua_setfield(L, -2, "waitany");
  } else {
    lua_pop(L, 1);
  }
  return 0;
}
