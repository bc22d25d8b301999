/* A datatype's typemap seen from Lua: t:blocks() (its byte ranges) and
 * t:items() (its runs of predefined items), over the core's public item
 * walker (lmpio_items_*).  Methods of "lmpio.datatype". */
#include "error.h"
#include "datatype.h"

#include <string.h>

/* ---- blocks: the typemap as byte ranges --------------------------------- */

#define BLOCKS_WALK "lmpio.blocks"

/* A walk of t:blocks(): the item walker and the block not yet handed out
 * (items that continue it still join it).  walk == NULL once closed. */
typedef struct {
  lmpio_items walk;
  int have;
  MPI_Aint off;
  MPI_Count len;
} blocks_state;

static int blocks_close(lua_State *L) {
  blocks_state *s = lmpio_lua_checkudata(L, 1, BLOCKS_WALK);
  lmpio_items_close(s->walk);
  s->walk = NULL;
  return 0;
}

static int blocks_next(lua_State *L) {
  blocks_state *s = lmpio_lua_checkudata(L, 1, BLOCKS_WALK);
  for (;;) {
    MPI_Aint off = 0;
    MPI_Count size = 0;
    MPI_Count n = s->walk ? lmpio_items_next(s->walk, (MPI_Count)1 << 62, &off, NULL, &size) : 0;
    if (n == 0) { /* the end: the last block, then nothing */
      blocks_close(L);
      if (!s->have) return 0;
      s->have = 0;
      lua_pushinteger(L, (lua_Integer)s->off);
      lua_pushinteger(L, (lua_Integer)s->len);
      return 2;
    }
    long long len, end, grown;
    if (!lmpio_lua_mul_ok((long long)n, (long long)size, &len))
      return lmpio_lua_error(L, MPI_ERR_ARG, "a block of %I items of %I bytes is longer than a 64-bit size", (lua_Integer)n,
                        (lua_Integer)size);
    if (len == 0) continue;
    if (s->have && lmpio_lua_add_ok((long long)s->off, (long long)s->len, &end) && off == end &&
        lmpio_lua_add_ok((long long)s->len, len, &grown)) {
      s->len = grown;
      continue;
    }
    int had = s->have;
    MPI_Aint prev_off = s->off;
    MPI_Count prev_len = s->len;
    s->have = 1;
    s->off = off;
    s->len = len;
    if (had) {
      lua_pushinteger(L, (lua_Integer)prev_off);
      lua_pushinteger(L, (lua_Integer)prev_len);
      return 2;
    }
  }
}

/***
The bytes that count items of the type cover, as blocks: an iterator for a
generic `for` giving each block's offset and length in typemap order.
Item i (from 0) lies at i times the extent, as in a buffer of count items;
items of the typemap that continue one another (whatever their types) form
one block, so a vector of doubles gives one block per vector block.
Offsets are relative to the start of the first item and may be negative
(a negative lower bound or displacement).  The walk costs memory
proportional to the type's nesting depth, not to its number of blocks;
leaving the loop early (`break`) ends it (the iterator's closing value).
@function datatype:blocks
@tparam[opt=1] integer count the number of items of the type (0 or more)
@return an iterator, a state and the closing value of a generic `for`
@raise a Lua error for a negative count; an @{error} object when the type
  cannot be walked
@usage for offset, length in lmpio.type.vector(3, 2, 4, lmpio.INT):blocks() do
  print(offset, length)  --> 0 8, 16 8, 32 8
end
*/
static int t_blocks(lua_State *L) {
  MPI_Datatype t = lmpio_lua_checktype(L, 1);
  lua_Integer count = lmpio_lua_optinteger(L, 2, 1);
  lmpio_lua_argcheck(L, count >= 0, 2, "must not be negative");
  lua_pushcfunction(L, blocks_next);
  blocks_state *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->walk = NULL;
  s->have = 0;
  luaL_setmetatable(L, BLOCKS_WALK);
  int rc = lmpio_items_open(t, (MPI_Count)count, &s->walk);
  if (rc != MPI_SUCCESS) lmpio_lua_raise(L, rc, lmpio_last_error_message());
  lua_pushnil(L);
  lua_pushvalue(L, -2);
  return 4;
}

/* ---- items: the typemap as runs of predefined items ----------------------- */

#define MAX_RUNS (1 << 20) /* runs one call of t:items() hands out */

/* Appends the run {type, count, offset} to the table at idx. */
static void push_run(lua_State *L, int idx, lua_Integer k, MPI_Datatype t, MPI_Count n, MPI_Aint off) {
  lua_createtable(L, 0, 3);
  lmpio_lua_pushtype(L, t, 0);
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "count");
  lua_pushinteger(L, (lua_Integer)off);
  lua_setfield(L, -2, "offset");
  lua_rawseti(L, idx, k);
}

/***
The predefined items of the type, as a list of runs: items of one predefined
type lying back to back in memory.  Without arguments, the items of one
instance; with `position` and `count`, items `position` to `position + count
- 1` (from 0) of the type tiled over a buffer (instance i at i times the
extent), which are the items a conversion function gets (its `position` and
`count`: see `read`).  A record datatype of `lmpio.recordtype` gives its
fields in order (adjacent fields of one type share a run); a pair type
such as DOUBLE_INT gives two items.
@function datatype:items
@tparam[opt] integer position the first item, from 0
@tparam[opt] integer count how many items (required with `position`)
@return a sequence of tables {type =, count =, offset =}: a predefined
  datatype, how many items, and the byte offset of the first from the start
  of the buffer (of instance 0)
@raise when the type has fewer items than asked, or they make more than
  1048576 runs
@usage for _, run in ipairs(lmpio.recordtype{{"id", lmpio.INT}, {"x", lmpio.DOUBLE, 3}}:items()) do
  print(run.type:name(), run.count, run.offset)  --> INT 1 0, DOUBLE 3 8
end
*/
static int t_items(lua_State *L) {
  MPI_Datatype t = lmpio_lua_checktype(L, 1);
  int whole = lua_isnoneornil(L, 2);
  lua_Integer pos = lmpio_lua_optinteger(L, 2, 0);
  lmpio_lua_argcheck(L, pos >= 0, 2, "must not be negative");
  if (!whole && lua_isnoneornil(L, 3)) return lmpio_lua_argerror(L, 3, "a count is needed with a position");
  lua_Integer count = whole ? 0 : lmpio_lua_checkinteger(L, 3);
  lmpio_lua_argcheck(L, count >= 0, 3, "must not be negative");
  /* The walker lives in a closing userdata: an error below frees it. */
  blocks_state *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->walk = NULL;
  s->have = 0;
  luaL_setmetatable(L, BLOCKS_WALK);
  lmpio_items one;
  int rc = lmpio_items_open(t, 1, &one);
  if (rc != MPI_SUCCESS) lmpio_lua_raise(L, rc, lmpio_last_error_message());
  MPI_Count per = lmpio_items_skip(one, (MPI_Count)1 << 62);
  lmpio_items_close(one);
  if (whole) count = (lua_Integer)per;
  long long end;
  if (!lmpio_lua_add_ok((long long)pos, (long long)count, &end))
    return lmpio_lua_error(L, MPI_ERR_ARG, "items %I to %I: out of range", pos, count);
  if (end > 0 && per <= 0) return lmpio_lua_error(L, MPI_ERR_ARG, "the type has no items");
  MPI_Count instances = per > 0 ? end / per + (end % per != 0) : 0;
  rc = lmpio_items_open(t, instances, &s->walk);
  if (rc != MPI_SUCCESS) lmpio_lua_raise(L, rc, lmpio_last_error_message());
  if (lmpio_items_skip(s->walk, (MPI_Count)pos) != (MPI_Count)pos)
    return lmpio_lua_error(L, MPI_ERR_ARG, "the type has fewer than %I items", pos);
  lua_newtable(L);
  int out = lua_gettop(L);
  lua_Integer nruns = 0;
  MPI_Datatype rt = MPI_DATATYPE_NULL;
  MPI_Count rn = 0, rsize = 0;
  MPI_Aint roff = 0;
  for (MPI_Count left = count; left > 0;) {
    MPI_Aint off;
    MPI_Datatype b;
    MPI_Count es;
    MPI_Count n = lmpio_items_next(s->walk, left, &off, &b, &es);
    if (n <= 0) return lmpio_lua_error(L, MPI_ERR_ARG, "the type has fewer than %I items", (lua_Integer)end);
    if (rn > 0 && b == rt && es == rsize && off == roff + (MPI_Aint)(rn * rsize)) {
      rn += n; /* continues the run (across instances too) */
    } else {
      if (rn > 0) {
        if (nruns == MAX_RUNS)
          return lmpio_lua_error(L, MPI_ERR_ARG, "the items make more than %d runs: ask for fewer (position, count)", MAX_RUNS);
        push_run(L, out, ++nruns, rt, rn, roff);
      }
      rt = b, rn = n, rsize = es, roff = off;
    }
    left -= n;
  }
  if (rn > 0) {
    if (nruns == MAX_RUNS)
      return lmpio_lua_error(L, MPI_ERR_ARG, "the items make more than %d runs: ask for fewer (position, count)", MAX_RUNS);
    push_run(L, out, ++nruns, rt, rn, roff);
  }
  lmpio_items_close(s->walk);
  s->walk = NULL;
  return 1;
}

int lmpio_lua_typemap_open(lua_State *L) {
  luaL_getmetatable(L, LMPIO_LUA_DATATYPE);
  lua_getfield(L, -1, "__index");
  static const luaL_Reg methods[] = {{"blocks", t_blocks}, {"items", t_items}, {NULL, NULL}};
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
  if (luaL_newmetatable(L, BLOCKS_WALK)) {
    static const luaL_Reg meta[] = {{"__gc", blocks_close}, {"__close", blocks_close}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
  }
  lua_pop(L, 1);
  return 0;
}
