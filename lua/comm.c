/* Communicators (lmpio.world, lmpio.self, comm:rank/size/barrier/split/dup/
 * free), a grid helper (lmpio.dims_create, comm:grid, lmpio.block),
 * Cartesian communicators (comm:cart, comm:shift, comm:coords), and the
 * registration of the communicators'
 * collective methods (their own and lua/message.c's: bcast, allgather,
 * allreduce, ...).
 *
 * Collective methods agree on their argument errors (lua/agree.c): each one
 * checks its arguments first, then joins one agreement before any other
 * communication.  A rank whose checks failed joins that agreement with a
 * failure flag instead, so every rank raises (with the message of the
 * lowest failing rank) and no rank is left waiting in a collective.
 *
 * Every method checks that MPI is still running: a call that runs after
 * MPI_Finalize (a __gc at exit, say) raises a Lua error instead of making
 * the MPI library abort the process. */
#include "error.h"
#include "watch.h"
#include "helpers.h"
#include "agree.h"
#include "comm.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef lmpio_lua_comm lcomm;

/* The shadows of lmpio.world and lmpio.self, made once per process (the
 * first require of the module, on every rank: MPI_Comm_dup is collective). */
static MPI_Comm world_shadow = MPI_COMM_NULL, self_shadow = MPI_COMM_NULL;

static int finalized(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin;
}

static lcomm *checklcomm(lua_State *L, int idx) {
  lcomm *c = lmpio_lua_checkudata(L, idx, LMPIO_LUA_COMM);
  lmpio_lua_running(L);
  if (c->comm == MPI_COMM_NULL) lmpio_lua_error(L, MPI_ERR_COMM, "attempt to use a freed communicator");
  return c;
}

MPI_Comm lmpio_lua_checkcomm(lua_State *L, int idx) { return checklcomm(L, idx)->comm; }

lmpio_lua_comm *lmpio_lua_checklcomm(lua_State *L, int idx) { return checklcomm(L, idx); }

static lcomm *pushcomm(lua_State *L, MPI_Comm comm, int owned) {
  lcomm *c = lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  c->comm = comm;
  c->shadow = MPI_COMM_NULL;
  c->owned = owned;
  luaL_setmetatable(L, LMPIO_LUA_COMM);
  return c;
}

typedef lmpio_lua_collective collective_method;

/* Runs a collective method; an argument error (raised before the method
 * joined its agreement) becomes this rank's failure in the agreement, which
 * the other ranks are waiting in, so that every rank raises. */
static int collective_call(lua_State *L) {
  const collective_method *cm = lua_touserdata(L, lua_upvalueindex(1));
  MPI_Comm comm = checklcomm(L, 1)->comm; /* no communicator: nobody to agree with */
  const char *outer = lmpio_lua_collective_name; /* (a method of a converter's, say) */
  lmpio_lua_collective_name = cm->name;           /* what a long wait is reported in */
  int n = lmpio_lua_collective_pcall(L, cm->fn, NULL);
  lmpio_lua_collective_name = outer;
  if (n >= 0) return n;
  lmpio_lua_collective_name = cm->name; /* (left set: the failure is raised) */
  cm->fail(L, comm, lmpio_lua_errormessage(L, -1));
  return lmpio_lua_error(L, MPI_ERR_INTERN, "%s: agreement failed", cm->name); /* not reached */
}


/* ---- methods ------------------------------------------------------------ */

/***
The rank of this process in the communicator.
@function comm:rank
@return integer, from 0
@raise when the communicator was freed or MPI was finalized
*/
static int c_rank(lua_State *L) {
  int r = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_rank(lmpio_lua_checkcomm(L, 1), &r), "MPI_Comm_rank");
  lua_pushinteger(L, r);
  return 1;
}

/***
The number of processes in the communicator.
@function comm:size
@return integer
@raise when the communicator was freed or MPI was finalized
*/
static int c_size(lua_State *L) {
  int n = 0;
  lmpio_lua_checkmpi(L, MPI_Comm_size(lmpio_lua_checkcomm(L, 1), &n), "MPI_Comm_size");
  lua_pushinteger(L, n);
  return 1;
}

/***
Waits until every rank of the communicator has called it (`MPI_Barrier`).
Collective.
@function comm:barrier
@raise when the communicator was freed or MPI was finalized (for instance
  from a `__gc` that runs after the script ended)
*/
static int c_barrier(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  LMPIO_LUA_CHECKWAIT(L, "barrier", MPI_Barrier(comm), "MPI_Barrier");
  return 0;
}

/***
Splits the communicator into one new communicator per color
(`MPI_Comm_split`).
Collective.  Ranks that give the same color end up in the same
communicator, ordered by key and then by their rank here.  Argument errors
are agreed: when any rank's arguments are wrong, every rank raises.
@function comm:split
@param color a non-negative integer; `nil`, `false` or `lmpio.UNDEFINED`:
  this rank joins no communicator
@param[opt=0] key an integer that orders the ranks of a color
@return a new communicator (free it with `comm:free`), or `nil` for a rank
  whose color was undefined
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when a color or key
  is not an integer in range on any rank
*/
static int c_split(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int color = MPI_UNDEFINED;
  if (!lua_isnoneornil(L, 2) && !(lua_isboolean(L, 2) && !lua_toboolean(L, 2))) {
    lua_Integer v = lmpio_lua_checkinteger(L, 2);
    if (v != MPI_UNDEFINED) color = lmpio_lua_checkint(L, 2, v, 0);
  }
  int key = lmpio_lua_checkint(L, 3, lmpio_lua_optinteger(L, 3, 0), INT_MIN);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  long long v[LMPIO_LUA_NAGREE] = {0};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  MPI_Comm out = MPI_COMM_NULL;
  LMPIO_LUA_CHECKWAIT(L, "split", MPI_Comm_split(comm, color, key, &out), "MPI_Comm_split");
  if (out == MPI_COMM_NULL) return 0;
  c->comm = out;
  LMPIO_LUA_CHECKWAIT(L, "split", MPI_Comm_dup(out, &c->shadow), "MPI_Comm_dup");
  return 1;
}

/***
A new communicator with the same ranks (`MPI_Comm_dup`).
Collective.  Communication on it never mixes with the original's.
@function comm:dup
@return a new communicator (free it with `comm:free`)
@raise when the communicator was freed or MPI was finalized
*/
static int c_dup(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  MPI_Comm out = MPI_COMM_NULL;
  LMPIO_LUA_CHECKWAIT(L, "dup", MPI_Comm_dup(comm, &out), "MPI_Comm_dup");
  c->comm = out;
  LMPIO_LUA_CHECKWAIT(L, "dup", MPI_Comm_dup(out, &c->shadow), "MPI_Comm_dup");
  return 1;
}

/***
Frees a communicator made by `comm:split` or `comm:dup` (`MPI_Comm_free`).
Collective.  Communicators are never freed by the garbage collector (that
would be a collective call at an unknown time): free the ones you make.
Any later use raises "attempt to use a freed communicator".
@function comm:free
@raise for `lmpio.world` and `lmpio.self`, a freed communicator, or after
  MPI was finalized
*/
static int c_free(lua_State *L) {
  lcomm *c = checklcomm(L, 1);
  if (!c->owned) return lmpio_lua_error(L, MPI_ERR_COMM, "cannot free a predefined communicator");
  LMPIO_LUA_CHECKWAIT(L, "free", MPI_Comm_free(&c->comm), "MPI_Comm_free");
  c->comm = MPI_COMM_NULL;
  if (c->shadow != MPI_COMM_NULL) {
    int rc;
    LMPIO_LUA_WAIT(L, "free", rc, MPI_Comm_free(&c->shadow));
    (void)rc;
  }
  return 0;
}

static int c_tostring(lua_State *L) {
  lcomm *c = lmpio_lua_checkudata(L, 1, LMPIO_LUA_COMM);
  if (finalized()) {
    lua_pushliteral(L, "lmpio.comm (MPI finalized)");
    return 1;
  }
  if (c->comm == MPI_COMM_NULL) {
    lua_pushliteral(L, "lmpio.comm (freed)");
    return 1;
  }
  lua_pushfstring(L, "lmpio.comm (rank %d of %d): %p", lmpio_lua_commrank(c->comm), lmpio_lua_commsize(c->comm), (void *)c);
  return 1;
}

static int c_eq(lua_State *L) {
  lcomm *a = lmpio_lua_checkudata(L, 1, LMPIO_LUA_COMM), *b = lmpio_lua_checkudata(L, 2, LMPIO_LUA_COMM);
  lua_pushboolean(L, a->comm == b->comm);
  return 1;
}

/* A bcast's value travels inside the agreement when it fits in its words. */
/* ---- grids -------------------------------------------------------------- */

enum { MAXDIMS = 64 };

/* ndims, or a table of dims (0: free), at idx: into dims[], returns ndims. */
static int checkdims(lua_State *L, int idx, int dims[MAXDIMS]) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer n = lmpio_lua_checkinteger(L, idx);
    if (n < 1 || n > MAXDIMS) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "ndims must be from 1 to %d", MAXDIMS));
    memset(dims, 0, (size_t)n * sizeof *dims);
    return (int)n;
  }
  if (!lua_istable(L, idx)) lmpio_lua_typeerror(L, idx, "number of dimensions or table of dims");
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (n < 1 || n > MAXDIMS) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "from 1 to %d dims expected", MAXDIMS));
  for (int i = 0; i < n; i++) {
    int isnum;
    lua_rawgeti(L, idx, i + 1);
    lua_Integer d = lua_tointegerx(L, -1, &isnum);
    if (!isnum || d < 0 || d > INT_MAX)
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "dims[%d] must be a non-negative integer (0: free)", i + 1));
    dims[i] = (int)d;
    lua_pop(L, 1);
  }
  return (int)n;
}

/* MPI_Dims_create with its conditions checked first (an argument error,
 * not an MPI error). */
static void dims_create(lua_State *L, int arg, int nnodes, int ndims, int dims[MAXDIMS]) {
  long long fixed = 1;
  int free_dims = 0;
  for (int i = 0; i < ndims; i++) {
    if (dims[i]) fixed *= dims[i];
    else free_dims++;
    if (fixed > INT_MAX) fixed = (long long)INT_MAX + 1;
  }
  if (free_dims ? nnodes % fixed != 0 : fixed != nnodes)
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "the dims given (product %d) %s %d", (int)fixed,
                                          free_dims ? "do not divide" : "do not multiply to", nnodes));
  lmpio_lua_checkmpi(L, MPI_Dims_create(nnodes, ndims, dims), "MPI_Dims_create");
}

/* periodic at idx: nil/false (none), true (all), or a table of n
 * booleans. */
static void checkperiods(lua_State *L, int idx, int n, int periods[MAXDIMS]) {
  int all = lua_toboolean(L, idx) && !lua_istable(L, idx);
  if (!lua_isnoneornil(L, idx) && !lua_isboolean(L, idx) && !lua_istable(L, idx))
    lmpio_lua_typeerror(L, idx, "boolean or table of booleans");
  for (int i = 0; i < n; i++) {
    periods[i] = all;
    if (lua_istable(L, idx)) {
      lua_rawgeti(L, idx, i + 1);
      periods[i] = lua_toboolean(L, -1);
      lua_pop(L, 1);
    }
  }
}

static void pushints(lua_State *L, const int *a, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, a[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/***
A balanced grid of processes (`MPI_Dims_create`).
Local: no communication.  Free dimensions (given as 0) are chosen as close
to each other as possible, largest first.
@function lmpio.dims_create
@param nnodes the number of processes (positive)
@param dims the number of dimensions, or a table of dims where 0 means
  "choose" (e.g. `{0, 2, 0}`)
@return a new table of the dims, whose product is nnodes
@raise when the fixed dims do not divide nnodes, or after MPI was finalized
@usage lmpio.dims_create(12, 2)       --> {4, 3}
lmpio.dims_create(12, {0, 0, 3})      --> {2, 2, 3}
*/
static int l_dims_create(lua_State *L) {
  lmpio_lua_running(L);
  lua_Integer nnodes = lmpio_lua_checkinteger(L, 1);
  if (nnodes < 1 || nnodes > INT_MAX) lmpio_lua_argerror(L, 1, "must be positive");
  int dims[MAXDIMS];
  int n = checkdims(L, 2, dims);
  dims_create(L, 2, (int)nnodes, n, dims);
  pushints(L, dims, n);
  return 1;
}

/***
This rank's place in a grid of the communicator's processes, and
optionally its block of a global array.
Local: no communication.  The grid's dims come from `lmpio.dims_create`
over the communicator's size; ranks are laid out in row-major order (the
last coordinate varies fastest, as `MPI_Cart_create` without reordering).
Given the sizes of a global array, the array is cut into blocks along
every dimension by the one block distribution of the module: that of
`lmpio.block` and of `lmpio.type.darray` with `"block"` (each block
`ceil(size / dims)` elements, the last ones fewer or none: 10 over 4 is
3, 3, 3, 1), and this rank's block is returned as the subsizes and starts
that `lmpio.type.subarray` takes, so that the subarray and the darray of
a rank are the same datatype.  A block may be empty (a subsize 0, which
`lmpio.type.subarray` takes: the script runs unchanged at any number of
ranks).
@function comm:grid
@param dims the number of dimensions, or a table of dims (0: choose)
@param[opt] sizes the global array's size along each dimension (a table of
  non-negative integers, as many as dims)
@param[opt=false] periodic whether the grid wraps around: a boolean for
  every dimension, or a table of booleans, one per dimension
@return dims (table), coords (table of this rank's coordinates, from 0),
  with sizes: subsizes and starts (tables, starts from 0), and last the
  neighbours: a table whose element d is `{before, after}`, the ranks one
  step before and after along dimension d (nil at an edge of a dimension
  that is not periodic), ready for `comm:sendrecv`
@raise when the dims cannot be made from the communicator's size, or the
  sizes are not non-negative integers
@usage local dims, coords, sub, starts, nb = comm:grid(3, {nz, ny, nx})
local below, above = nb[1][1], nb[1][2]    -- nil at the edges
local mine = lmpio.type.subarray({nz, ny, nx}, sub, starts, lmpio.DOUBLE)
-- the same datatype as
local same = lmpio.type.darray(comm:size(), comm:rank(), {nz, ny, nx},
  {"block", "block", "block"}, nil, dims, lmpio.DOUBLE)
*/
static int c_grid(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int dims[MAXDIMS], coords[MAXDIMS], periods[MAXDIMS];
  int n = checkdims(L, 2, dims);
  checkperiods(L, 4, n, periods);
  long long sizes[MAXDIMS];
  int have_sizes = !lua_isnoneornil(L, 3);
  if (have_sizes) {
    lmpio_lua_checkluatype(L, 3, LUA_TTABLE);
    if ((lua_Integer)lua_rawlen(L, 3) != n)
      lmpio_lua_argerror(L, 3, lua_pushfstring(L, "%d sizes expected, one for each dimension", n));
    for (int i = 0; i < n; i++) {
      int isnum;
      lua_rawgeti(L, 3, i + 1);
      lua_Integer s = lua_tointegerx(L, -1, &isnum);
      if (!isnum || s < 0 || s > INT_MAX)
        lmpio_lua_argerror(L, 3, lua_pushfstring(L, "sizes[%d] must be a non-negative integer", i + 1));
      sizes[i] = s;
      lua_pop(L, 1);
    }
  }
  dims_create(L, 2, lmpio_lua_commsize(comm), n, dims);
  int r = lmpio_lua_commrank(comm);
  for (int i = n - 1; i >= 0; i--) {
    coords[i] = r % dims[i];
    r /= dims[i];
  }
  pushints(L, dims, n);
  pushints(L, coords, n);
  if (have_sizes) {
    int sub[MAXDIMS], starts[MAXDIMS];
    for (int i = 0; i < n; i++) {
      lua_Integer first, count;
      lmpio_lua_block(sizes[i], dims[i], coords[i], &first, &count);
      sub[i] = (int)count;
      starts[i] = (int)first;
    }
    pushints(L, sub, n);
    pushints(L, starts, n);
  }
  lua_createtable(L, n, 0); /* the neighbours along each dimension */
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 2, 0);
    for (int side = 0; side < 2; side++) {
      int c = coords[i] + (side ? 1 : -1);
      if (periods[i]) c = (c + dims[i]) % dims[i];
      if (c < 0 || c >= dims[i]) continue; /* nil: no neighbour */
      int nr = 0;
      for (int k = 0; k < n; k++) nr = nr * dims[k] + (k == i ? c : coords[k]);
      lua_pushinteger(L, nr);
      lua_rawseti(L, -2, side + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
  return have_sizes ? 5 : 3;
}

/***
A Cartesian communicator over the grid of `comm:grid` (`MPI_Cart_create`
without reordering: every rank keeps its rank and the coordinates
`comm:grid` gives it).
Collective.  Its `shift` and `coords` give neighbours and places; it is a
communicator like any other (messages, collectives, files).
@function comm:cart
@param dims the number of dimensions, or a table of dims (0: choose), as
  `comm:grid`
@param[opt=false] periodic a boolean for every dimension, or a table of
  booleans, one per dimension
@return a new communicator (free it with `comm:free`)
@raise when the dims cannot be made from the communicator's size
@usage local cart = world:cart(2, {false, true})
local up, down = cart:shift(1)       -- nil at the edges of dimension 1
*/
static int c_cart(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int dims[MAXDIMS], periods[MAXDIMS];
  int n = checkdims(L, 2, dims);
  checkperiods(L, 3, n, periods);
  dims_create(L, 2, lmpio_lua_commsize(comm), n, dims);
  lcomm *c = pushcomm(L, MPI_COMM_NULL, 1);
  long long v[LMPIO_LUA_NAGREE] = {0};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  MPI_Comm out = MPI_COMM_NULL;
  LMPIO_LUA_CHECKWAIT(L, "cart", MPI_Cart_create(comm, n, dims, periods, 0, &out), "MPI_Cart_create");
  c->comm = out;
  LMPIO_LUA_CHECKWAIT(L, "cart", MPI_Comm_dup(out, &c->shadow), "MPI_Comm_dup");
  return 1;
}

static int checkcart(lua_State *L, MPI_Comm comm) {
  int topo = MPI_UNDEFINED, nd = 0;
  lmpio_lua_checkmpi(L, MPI_Topo_test(comm, &topo), "MPI_Topo_test");
  if (topo != MPI_CART) lmpio_lua_error(L, MPI_ERR_COMM, "not a Cartesian communicator (make one with comm:cart)");
  lmpio_lua_checkmpi(L, MPI_Cartdim_get(comm, &nd), "MPI_Cartdim_get");
  return nd;
}

/***
The ranks before and after this one along a dimension of a Cartesian
communicator (`MPI_Cart_shift`): nil at an edge unless the dimension is
periodic, so that they go straight to `comm:sendrecv`.
Local.
@function comm:shift
@param dim the dimension, from 1
@param[opt=1] disp how far (a positive or negative integer)
@return the rank disp before (or nil), the rank disp after (or nil)
@raise when the communicator is not Cartesian or dim is out of range
*/
static int c_shift(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int nd = checkcart(L, comm);
  lua_Integer d = lmpio_lua_checkinteger(L, 2), disp = lmpio_lua_optinteger(L, 3, 1);
  if (d < 1 || d > nd) return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "a dimension from 1 to %d", nd));
  if (disp < INT_MIN || disp > INT_MAX) return lmpio_lua_argerror(L, 3, "out of range");
  int before, after;
  lmpio_lua_checkmpi(L, MPI_Cart_shift(comm, (int)d - 1, (int)disp, &before, &after), "MPI_Cart_shift");
  if (before == MPI_PROC_NULL) lua_pushnil(L);
  else lua_pushinteger(L, before);
  if (after == MPI_PROC_NULL) lua_pushnil(L);
  else lua_pushinteger(L, after);
  return 2;
}

/***
The coordinates of a rank in a Cartesian communicator (`MPI_Cart_coords`).
Local.
@function comm:coords
@param[opt] rank the rank (default: this one)
@return a table of coordinates, from 0
@raise when the communicator is not Cartesian or rank is out of range
*/
static int c_coords(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int nd = checkcart(L, comm), coords[MAXDIMS];
  lua_Integer r = lmpio_lua_optinteger(L, 2, lmpio_lua_commrank(comm));
  if (r < 0 || r >= lmpio_lua_commsize(comm)) return lmpio_lua_argerror(L, 2, "not a rank of the communicator");
  lmpio_lua_checkmpi(L, MPI_Cart_coords(comm, (int)r, nd, coords), "MPI_Cart_coords");
  pushints(L, coords, nd);
  return 1;
}

void lmpio_lua_block(lua_Integer n, lua_Integer parts, lua_Integer i, lua_Integer *first, lua_Integer *count) {
  lua_Integer b = n / parts + (n % parts != 0);
  lua_Integer lo = b * i < n ? b * i : n;
  lua_Integer hi = b * (i + 1) < n ? b * (i + 1) : n;
  *first = lo;
  *count = hi - lo;
}

/***
The block of n items that part i of parts owns, as MPI's block distribution does.
Each of the first parts gets ceil(n / parts) items; the last ones may get
fewer or none (count 0), exactly as `lmpio.type.darray` with "block",
`comm:grid` and `comm:scatter` cut.
@function lmpio.block
@tparam integer n the number of items
@tparam integer parts the number of parts
@tparam integer i the part (0-based)
@treturn integer the first item of the block (0-based)
@treturn integer the number of items (may be 0)
*/
static int l_block(lua_State *L) {
  lmpio_lua_running(L);
  lua_Integer n = lmpio_lua_checkinteger(L, 1), parts = lmpio_lua_checkinteger(L, 2), i = lmpio_lua_checkinteger(L, 3);
  if (n < 0) return lmpio_lua_argerror(L, 1, "must not be negative");
  if (parts < 1) return lmpio_lua_argerror(L, 2, "must be positive");
  if (i < 0 || i >= parts) return lmpio_lua_argerror(L, 3, "must be in 0 .. parts-1");
  lua_Integer first, count;
  lmpio_lua_block(n, parts, i, &first, &count);
  lua_pushinteger(L, first);
  lua_pushinteger(L, count);
  return 2;
}

/***
The communicator of every process of the job (`MPI_COMM_WORLD`).
@field lmpio.world
*/

/***
The communicator of this process alone (`MPI_COMM_SELF`).
@field lmpio.self
*/

/***
The color of `comm:split` for a rank that joins no communicator
(`MPI_UNDEFINED`; `nil` and `false` do the same).
@field lmpio.UNDEFINED
*/

void lmpio_lua_comm_methods(lua_State *L, const lmpio_lua_collective *cm, size_t n, const luaL_Reg *local) {
  luaL_getmetatable(L, LMPIO_LUA_COMM);
  lua_getfield(L, -1, "__index");
  for (size_t i = 0; i < n; i++) {
    lua_pushlightuserdata(L, (void *)&cm[i]);
    lua_pushcclosure(L, collective_call, 1);
    lua_setfield(L, -2, cm[i].name);
  }
  if (local) luaL_setfuncs(L, local, 0);
  lua_pop(L, 2);
}

static const collective_method collective_methods[] = {
  {"split", c_split, lmpio_lua_agree_failed},
  {"cart", c_cart, lmpio_lua_agree_failed},
};

int lmpio_lua_comm_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_COMM)) {
    static const luaL_Reg meta[] = {{"__tostring", c_tostring}, {"__eq", c_eq}, {NULL, NULL}};
    static const luaL_Reg methods[] = {
      {"rank", c_rank}, {"size", c_size}, {"barrier", c_barrier}, {"dup", c_dup},
      {"free", c_free}, {"grid", c_grid}, {"shift", c_shift}, {"coords", c_coords}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    for (size_t i = 0; i < sizeof collective_methods / sizeof *collective_methods; i++) {
      lua_pushlightuserdata(L, (void *)&collective_methods[i]);
      lua_pushcclosure(L, collective_call, 1);
      lua_setfield(L, -2, collective_methods[i].name);
    }
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (world_shadow == MPI_COMM_NULL) {
    lmpio_lua_checkmpi(L, MPI_Comm_dup(MPI_COMM_WORLD, &world_shadow), "MPI_Comm_dup");
    lmpio_lua_checkmpi(L, MPI_Comm_dup(MPI_COMM_SELF, &self_shadow), "MPI_Comm_dup");
  }
  pushcomm(L, MPI_COMM_WORLD, 0)->shadow = world_shadow;
  lua_setfield(L, -2, "world");
  pushcomm(L, MPI_COMM_SELF, 0)->shadow = self_shadow;
  lua_setfield(L, -2, "self");
  lua_pushinteger(L, MPI_UNDEFINED);
  lua_setfield(L, -2, "UNDEFINED");
  lua_pushcfunction(L, l_dims_create);
  lua_setfield(L, -2, "dims_create");
  lua_pushcfunction(L, l_block);
  lua_setfield(L, -2, "block");
  return 0;
}
