/* Shapes and slices: a:reshape, a:shape, a:index, and a:slice(...), an n-d strided view of an array that
 * shares its memory and describes itself to MPI as a datatype.
 *
 * A slice is a buffer (lua/buffer.c) with `strided` set: its first
 * element at data, its dimensions in dims (in the array's order, C or
 * Fortran), the byte stride of each in strides, and its MPI datatype in
 * dtype: hvectors nested from the fastest dimension out, one item of which,
 * from data, is the slice (the datatype object in user value 2 frees it).
 * Every call that takes data takes a slice as (data, 1, dtype), so MPI
 * gathers and scatters its elements in place.  A slice that happens to be
 * one block of memory is made a plain view (with its shape). */
#include "error.h"
#include "datatype.h"
#include "buffer.h"

#include <limits.h>
#include <string.h>

/* The datatype of count elements of type t laid out as dims/strides (in
 * order: the fastest dimension innermost), committed. */
static MPI_Datatype slicetype(lua_State *L, MPI_Datatype t, int nd, const size_t *dims, const ptrdiff_t *strides,
                              int forder) {
  MPI_Datatype cur = t;
  for (int q = 0; q < nd; q++) {
    int k = forder ? q : nd - 1 - q; /* fastest first */
    MPI_Datatype next;
    if (dims[k] > (size_t)INT_MAX) lmpio_lua_error(L, MPI_ERR_ARG, "a slice dimension of more than 2^31 - 1 elements");
    int rc = MPI_Type_create_hvector((int)dims[k], 1, (MPI_Aint)strides[k], cur, &next);
    if (cur != t) MPI_Type_free(&cur);
    lmpio_lua_checkmpi(L, rc, "MPI_Type_create_hvector");
    cur = next;
  }
  if (cur == t) { /* no dimension: one element */
    lmpio_lua_checkmpi(L, MPI_Type_contiguous(1, t, &cur), "MPI_Type_contiguous");
  }
  int rc = MPI_Type_commit(&cur);
  if (rc != MPI_SUCCESS) {
    MPI_Type_free(&cur);
    lmpio_lua_checkmpi(L, rc, "MPI_Type_commit");
  }
  return cur;
}

/***
An n-d strided view of the array: a slice, sharing its memory.
One argument per dimension of a's shape (an array without a shape has one
dimension of #a elements), in a's order (as `a:get` indexes): a table
`{first, last [, step]}` takes elements first, first + step, ... up to
last (from 1; negative first and last count from the end, -1 the last;
step a positive integer, default 1; last may be first - 1: none); an
integer i takes index i alone and drops the dimension; nil or `true`, or
no argument for the trailing dimensions, takes the whole dimension.
A slice is an array whose elements are not one block: `s[i]`, `s:get(i,
j)`, `s:set`, `s:fill`, `s:totable`, `s:tostring`, `#s`, the array
operations (`s:copy`, `s:add`, `s:axpy`, ..., `s:sum`, `s:min`, `s:max`)
work on its elements in its storage order; and every call that takes data
(file reads and writes of every kind, messages, `comm:bcast`,
`comm:allgather`, `comm:gather`) takes it directly, as one item of its own
MPI datatype (nested hvectors): MPI gathers and scatters the elements in
place, with no copy of lmpio's.  A read returns counts of elements.
Reductions (`comm:allreduce`, ...) and `comm:scatter` copy a slice into
an array first (MPI's operations take contiguous data).  A slice of a
slice is a slice of the same memory.  A slice that is one block of memory
(e.g. whole rows of a C-order array) is a plain view with that shape.
Cost: the datatype is built once, when the slice is made (a few
microseconds); keep slices used in a loop.
@function array:slice
@param ... one range per dimension: `{first, last [, step]}`, an index,
  or nil / `true` (all)
@return the slice (an array)
@raise when a range is out of bounds, a step is not positive, a has
  records, or more ranges than dimensions are given
@usage local u = lmpio.array(lmpio.DOUBLE, {shape = {ny + 2, nx + 2}})
local interior = u:slice({2, -2}, {2, -2})   -- without the ghost cells
fh:write_all(interior)                     -- one call, no packing
comm:send(u:slice({2, -2}, 2), left)       -- the first interior column
*/
static int b_slice(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  if (b->rec) return lmpio_lua_error(L, MPI_ERR_ARG, "records cannot be sliced");
  size_t pdims[LMPIO_LUA_MAXDIM], dims[LMPIO_LUA_MAXDIM];
  ptrdiff_t pstr[LMPIO_LUA_MAXDIM], str[LMPIO_LUA_MAXDIM];
  int pnd = lmpio_lua_layout(b, pdims, pstr);
  int nargs = lua_gettop(L) - 1;
  if (nargs > pnd)
    return lmpio_lua_error(L, MPI_ERR_ARG, "%d ranges for an array of %d dimensions", nargs, pnd);
  ptrdiff_t off = 0;
  int nd = 0;
  size_t count = 1;
  for (int k = 0; k < pnd; k++) {
    int arg = k + 2;
    lua_Integer D = (lua_Integer)pdims[k];
    if (k >= nargs || lua_isnil(L, arg) || (lua_isboolean(L, arg) && lua_toboolean(L, arg))) {
      dims[nd] = pdims[k];
      str[nd++] = pstr[k];
      count *= pdims[k];
      continue;
    }
    if (lua_isinteger(L, arg)) {
      lua_Integer i = lua_tointeger(L, arg);
      if (i < 0) i += D + 1;
      if (i < 1 || i > D)
        return lmpio_lua_argerror(L, arg, lua_pushfstring(L, "index %I out of range 1..%I", lua_tointeger(L, arg), D));
      off += (ptrdiff_t)(i - 1) * pstr[k];
      continue;
    }
    if (!lua_istable(L, arg)) return lmpio_lua_typeerror(L, arg, "{first, last [, step]}, an index, or nil");
    lua_Integer v[3] = {1, D, 1};
    for (int q = 0; q < 3; q++) {
      int isnum = 1;
      if (lua_geti(L, arg, q + 1) != LUA_TNIL) v[q] = lua_tointegerx(L, -1, &isnum);
      lua_pop(L, 1);
      if (!isnum) return lmpio_lua_argerror(L, arg, "first, last and step are integers");
    }
    lua_Integer i = v[0] < 0 ? v[0] + D + 1 : v[0], j = v[1] < 0 ? v[1] + D + 1 : v[1], step = v[2];
    if (step < 1) return lmpio_lua_argerror(L, arg, "the step must be a positive integer");
    if (i < 1 || j > D || j < i - 1)
      return lmpio_lua_argerror(L, arg, lua_pushfstring(L, "range %I..%I out of bounds 1..%I", v[0], v[1], D));
    size_t n = j >= i ? (size_t)((j - i) / step + 1) : 0;
    off += n ? (ptrdiff_t)(i - 1) * pstr[k] : 0;
    dims[nd] = n;
    str[nd++] = pstr[k] * (ptrdiff_t)step;
    count *= n;
  }
  if (nd == 0) { /* every dimension indexed: one element */
    dims[0] = 1;
    str[0] = (ptrdiff_t)b->esize;
    nd = 1;
  }
  unsigned char *data = count && b->data ? b->data + off : NULL;
  /* one block of memory in a's order: a plain view */
  ptrdiff_t dense = (ptrdiff_t)b->esize;
  int block = 1;
  for (int q = 0; q < nd && block; q++) {
    int k = b->forder ? q : nd - 1 - q;
    if (dims[k] > 1 && str[k] != dense) block = 0;
    dense *= (ptrdiff_t)dims[k];
  }
  lmpio_lua_buffer *v = lmpio_lua_pushview(L, 1, b, data, count);
  v->forder = b->forder;
  v->ndim = nd;
  memcpy(v->dims, dims, (size_t)nd * sizeof *dims);
  if (block || !count) return 1;
  v->strided = 1;
  memcpy(v->strides, str, (size_t)nd * sizeof *str);
  /* the span of its memory: up to the last element (holds cover it) */
  ptrdiff_t hi = 0;
  for (int k = 0; k < nd; k++) hi += (ptrdiff_t)(dims[k] - 1) * str[k];
  v->nbytes = (size_t)hi + b->esize;
  MPI_Datatype t = slicetype(L, b->type, nd, dims, str, b->forder);
  v->dtype = t;
  lmpio_lua_pushtype(L, t, 1); /* frees it when the slice is collected */
  lua_setiuservalue(L, -2, 2);
  return 1;
}

/***
The position in storage order (from 1) of the element at the indices of a
shaped array, so that `a[a:index(i, j, k)]` is `a:get(i, j, k)`.
@function array:index
@param ... one index per dimension (from 1)
@return the position
@raise when an index is out of range or the count of indices is wrong
*/
static int b_indexof(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  lua_pushinteger(L, (lua_Integer)lmpio_lua_argposition(L, b, 2, lua_gettop(L)) + 1);
  return 1;
}

/***
A view of all of a with a shape: n-d indexing `b[{i, j, k}]`, `b:get(i,
j, k)`, over the same memory in C order (last index fastest) or Fortran
order (first index fastest), as the `order` of `lmpio.type.subarray` and
`lmpio.type.darray`.
@function array:reshape
@param shape a table of sizes whose product is #a (1 to 8 dimensions)
@param[opt="C"] order "C" or "c"; "F", "f", "fortran" or "Fortran"
@return the view
@raise when the product of the sizes is not #a
*/
static int b_reshape(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  if (b->strided) return lmpio_lua_error(L, MPI_ERR_ARG, "reshape of a slice (its elements are not one block of memory)");
  size_t dims[LMPIO_LUA_MAXDIM], total;
  int nd = lmpio_lua_checkshape(L, 2, dims, &total);
  int f = lmpio_lua_checkorder(L, 3);
  if (total != b->count)
    return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "a shape of %I elements for an array of %I", (lua_Integer)total,
                                               (lua_Integer)b->count));
  lmpio_lua_buffer *v = lmpio_lua_pushview(L, 1, b, b->data, b->count);
  v->ndim = nd;
  v->forder = f;
  memcpy(v->dims, dims, sizeof dims);
  return 1;
}

/***
The shape of a and its order.
@function array:shape
@return a table of sizes ({#a} for an array without a shape)
@return "C" or "F"
*/
static int b_shape(lua_State *L) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, 1);
  size_t dims[LMPIO_LUA_MAXDIM];
  ptrdiff_t st[LMPIO_LUA_MAXDIM];
  int nd = lmpio_lua_layout(b, dims, st);
  lua_createtable(L, nd, 0);
  for (int k = 0; k < nd; k++) {
    lua_pushinteger(L, (lua_Integer)dims[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_pushstring(L, b->forder ? "F" : "C");
  return 2;
}

int lmpio_lua_slice_open(lua_State *L) {
  luaL_getmetatable(L, LMPIO_LUA_BUFFER);
  lua_getfield(L, -1, "methods");
  static const luaL_Reg methods[] = {
    {"slice", b_slice}, {"reshape", b_reshape}, {"shape", b_shape}, {"index", b_indexof}, {NULL, NULL},
  };
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
  return 0;
}
