/* Holds: memory that a pending call (a nonblocking call until its request
 * completes, a split collective until its _end, an isend) transfers in the
 * background, and the checks that refuse what Lua may not do with it
 * meanwhile (see lmpio_lua.h). */
#include "buffer.h"

#include <stdio.h>
#include <string.h>

/* ---- holds of pending calls ----------------------------------------------- */

#define LMPIO_LUA_HOLD "lmpio.hold"
#define HOLDS_KEY "lmpio.holds" /* registry: hold -> its file (lightuserdata), weak keys */

struct lmpio_lua_hold {
  struct lmpio_lua_hold *next, **pprev; /* in root->holds */
  lmpio_lua_buffer *root;               /* NULL once released */
  size_t lo, hi;                        /* the bytes of root's memory held */
  int reading;
  const MPI_Request *req;               /* a request's: held only while it is not MPI_REQUEST_NULL
                                           (a call that failed left it so); NULL: a split collective's */
  char call[48];
};

static lmpio_lua_buffer *rootof(const lmpio_lua_buffer *b) {
  return b->root ? b->root : (lmpio_lua_buffer *)b;
}

/* The bytes of root's memory that b covers. */
static void byterange(const lmpio_lua_buffer *b, size_t *lo, size_t *hi) {
  const lmpio_lua_buffer *r = rootof(b);
  *lo = b->data && r->data ? (size_t)(b->data - r->data) : 0;
  *hi = *lo + (b->nbytes ? b->nbytes : b->isref ? b->esize : 0);
}

lmpio_lua_hold *lmpio_lua_hold_push(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading, const char *call,
                                    int fileidx, const MPI_Request *req) {
  dataidx = lua_absindex(L, dataidx);
  fileidx = fileidx ? lua_absindex(L, fileidx) : 0;
  if (!m->buf) {
    lua_pushnil(L);
    return NULL;
  }
  lmpio_lua_hold *h = lua_newuserdatauv(L, sizeof *h, 1);
  memset(h, 0, sizeof *h);
  luaL_setmetatable(L, LMPIO_LUA_HOLD);
  lua_pushvalue(L, dataidx); /* keeps the root alive as long as the hold */
  lua_setiuservalue(L, -2, 1);
  lmpio_lua_buffer *r = rootof(m->buf);
  byterange(m->buf, &h->lo, &h->hi);
  h->reading = reading;
  h->req = req;
  snprintf(h->call, sizeof h->call, "%s", call);
  h->root = r;
  h->next = r->holds;
  if (r->holds) r->holds->pprev = &h->next;
  h->pprev = &r->holds;
  r->holds = h;
  if (!fileidx) return h; /* a message's: no file closes it */
  lua_getfield(L, LUA_REGISTRYINDEX, HOLDS_KEY);
  lua_pushvalue(L, -2);
  lua_pushlightuserdata(L, lua_touserdata(L, fileidx));
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return h;
}

void lmpio_lua_unhold(lmpio_lua_hold *h) {
  if (!h || !h->root) return;
  *h->pprev = h->next;
  if (h->next) h->next->pprev = h->pprev;
  h->root = NULL;
  h->next = NULL;
  h->pprev = NULL;
}

void lmpio_lua_unhold_at(lua_State *L, int idx) {
  lmpio_lua_unhold(luaL_testudata(L, idx, LMPIO_LUA_HOLD));
}

void lmpio_lua_unhold_file(lua_State *L, int fileidx) {
  const void *file = lua_touserdata(L, fileidx);
  lua_getfield(L, LUA_REGISTRYINDEX, HOLDS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_touserdata(L, -1) == file) lmpio_lua_unhold(luaL_testudata(L, -2, LMPIO_LUA_HOLD));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int hold_gc(lua_State *L) {
  lmpio_lua_unhold(lmpio_lua_checkudata(L, 1, LMPIO_LUA_HOLD));
  return 0;
}

/* Raises when bytes [lo, hi) of b's root are held against the access. */
static void checkbytes(lua_State *L, const lmpio_lua_buffer *b, size_t lo, size_t hi, int writing) {
  for (const lmpio_lua_hold *h = rootof(b)->holds; h; h = h->next) {
    if (!(writing || h->reading) || lo >= h->hi || h->lo >= hi || (h->req && *h->req == MPI_REQUEST_NULL)) continue;
    lmpio_lua_error(L, MPI_ERR_BUFFER, "%s is held by a pending %s; %s first", b->type == MPI_BYTE && !b->rec ? "buffer" : "array",
               h->call, h->req ? "wait for its request" : "end it");
  }
}

void lmpio_lua_checkheld_(lua_State *L, const lmpio_lua_buffer *b, int writing) {
  size_t lo, hi;
  byterange(b, &lo, &hi);
  checkbytes(L, b, lo, hi, writing);
}

/* The same for n elements of b from element i (0-based). */
void lmpio_lua_checkheld_elems(lua_State *L, const lmpio_lua_buffer *b, size_t i, size_t n, int writing) {
  if (!LMPIO_LUA_HELD(b)) return;
  size_t lo, hi;
  byterange(b, &lo, &hi);
  if (b->strided) { /* a slice: its whole span */
    checkbytes(L, b, lo, hi, writing);
    return;
  }
  lo += i * b->esize;
  checkbytes(L, b, lo, lo + n * b->esize, writing);
}

/* A table with weak keys in the registry at key. */
void lmpio_lua_new_weak_keys(lua_State *L, const char *key) {
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
}

void lmpio_lua_holds_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_HOLD)) {
    lua_pushcfunction(L, hold_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lmpio_lua_new_weak_keys(L, HOLDS_KEY);
}

