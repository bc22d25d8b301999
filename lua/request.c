/* Requests of the nonblocking data access calls (fh:iread_at, fh:iwrite, ...):
 * a userdata with metatable "lmpio.request" over an MPI_Request (a generalized
 * request of the core, complete when the call returned: see
 * core/src/request.c).
 *
 *   req:wait()  -> buf, count for reads; count for writes (items of the call's type);
 *                  a buffer the read made from a count holds the count items read
 *   req:test()  -> false, or true followed by what wait returns
 *
 * The request keeps the call's data (buffer or string) alive in its user
 * value until it is waited for (reads keep their buffer, since wait returns
 * it) or collected; __gc frees a request never waited for (MPI_Request_free
 * is local). */
#include "lmpio_lua.h"

/***
The request of a nonblocking data access call (`fh:iread_at`,
`fh:iwrite_all`, `fh:iread_shared`, ...), an MPI generalized request.  The
calls complete in the call that starts them, as the standard allows; the
request gives their result.  It keeps the call's data (array, buffer or
string) alive until it is waited for.  A request never waited for is
freed when collected.
@type request
*/

enum { UV_DATA = 1, NUV = 1 };

static lmpio_lua_request *checkrequest(lua_State *L) {
  return luaL_checkudata(L, 1, LMPIO_LUA_REQUEST);
}

lmpio_lua_request *lmpio_lua_newrequest(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading) {
  dataidx = lua_absindex(L, dataidx);
  lmpio_lua_request *r = lua_newuserdatauv(L, sizeof *r, NUV);
  r->req = MPI_REQUEST_NULL;
  r->type_size = m->type_size;
  r->reading = reading;
  r->done = 0;
  r->count = 0;
  luaL_setmetatable(L, LMPIO_LUA_REQUEST);
  lua_pushvalue(L, dataidx);
  lua_setiuservalue(L, -2, UV_DATA);
  return r;
}

/* The request completed with status st: the count, and the data let go of
 * for writes. */
static void complete(lua_State *L, lmpio_lua_request *r, const MPI_Status *st) {
  MPI_Count bytes = 0;
  if (MPI_Get_elements_x(st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED) bytes = 0;
  r->count = r->type_size > 0 ? (lua_Integer)(bytes / r->type_size) : 0;
  r->done = 1;
  r->req = MPI_REQUEST_NULL;
  if (r->reading) { /* a buffer made from a count holds the items read */
    lua_getiuservalue(L, 1, UV_DATA);
    lmpio_lua_readdone(lmpio_lua_tobuffer(L, -1), r->count);
    lua_pop(L, 1);
  } else {
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_DATA);
  }
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
  if (!r->done) {
    MPI_Status st;
    lmpio_lua_checkmpi(L, MPI_Wait(&r->req, &st), "MPI_Wait");
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
  if (!r->done) {
    MPI_Status st;
    int flag = 0;
    lmpio_lua_checkmpi(L, MPI_Test(&r->req, &flag, &st), "MPI_Test");
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
    if (!fin) MPI_Request_free(&r->req);
    r->req = MPI_REQUEST_NULL;
  }
  return 0;
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
  return 0;
}
