/* Datatypes: every predefined type as lmpio.INT, lmpio.DOUBLE, ...; the
 * constructors under lmpio.type (committed for the user); queries; freed
 * when collected. */
#include "error.h"
#include "datatype.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TYPES_KEY "lmpio.types" /* registry: handle (integer) -> datatype object */

static const struct predef {
  const char *name;
  MPI_Datatype type;
  int kind;
} predefs[] = {
  /* C */
  {"CHAR", MPI_CHAR, LMPIO_LUA_K_INT},
  {"SHORT", MPI_SHORT, LMPIO_LUA_K_INT},
  {"INT", MPI_INT, LMPIO_LUA_K_INT},
  {"LONG", MPI_LONG, LMPIO_LUA_K_INT},
  {"LONG_LONG_INT", MPI_LONG_LONG_INT, LMPIO_LUA_K_INT},
  {"LONG_LONG", MPI_LONG_LONG, LMPIO_LUA_K_INT},
  {"SIGNED_CHAR", MPI_SIGNED_CHAR, LMPIO_LUA_K_INT},
  {"UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, LMPIO_LUA_K_UINT},
  {"UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, LMPIO_LUA_K_UINT},
  {"UNSIGNED", MPI_UNSIGNED, LMPIO_LUA_K_UINT},
  {"UNSIGNED_LONG", MPI_UNSIGNED_LONG, LMPIO_LUA_K_UINT},
  {"UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, LMPIO_LUA_K_UINT},
  {"FLOAT", MPI_FLOAT, LMPIO_LUA_K_F32},
  {"DOUBLE", MPI_DOUBLE, LMPIO_LUA_K_F64},
  {"LONG_DOUBLE", MPI_LONG_DOUBLE, LMPIO_LUA_K_LDOUBLE},
  {"WCHAR", MPI_WCHAR, LMPIO_LUA_K_INT},
  {"C_BOOL", MPI_C_BOOL, LMPIO_LUA_K_BOOL},
  {"INT8_T", MPI_INT8_T, LMPIO_LUA_K_INT},
  {"INT16_T", MPI_INT16_T, LMPIO_LUA_K_INT},
  {"INT32_T", MPI_INT32_T, LMPIO_LUA_K_INT},
  {"INT64_T", MPI_INT64_T, LMPIO_LUA_K_INT},
  {"UINT8_T", MPI_UINT8_T, LMPIO_LUA_K_UINT},
  {"UINT16_T", MPI_UINT16_T, LMPIO_LUA_K_UINT},
  {"UINT32_T", MPI_UINT32_T, LMPIO_LUA_K_UINT},
  {"UINT64_T", MPI_UINT64_T, LMPIO_LUA_K_UINT},
  {"AINT", MPI_AINT, LMPIO_LUA_K_INT},
  {"COUNT", MPI_COUNT, LMPIO_LUA_K_INT},
  {"OFFSET", MPI_OFFSET, LMPIO_LUA_K_INT},
  {"C_COMPLEX", MPI_C_COMPLEX, LMPIO_LUA_K_NONE},
  {"C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, LMPIO_LUA_K_NONE},
  {"C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, LMPIO_LUA_K_NONE},
  {"C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, LMPIO_LUA_K_NONE},
  {"BYTE", MPI_BYTE, LMPIO_LUA_K_UINT},
  {"PACKED", MPI_PACKED, LMPIO_LUA_K_UINT},
  /* Fortran */
  {"CHARACTER", MPI_CHARACTER, LMPIO_LUA_K_UINT},
  {"LOGICAL", MPI_LOGICAL, LMPIO_LUA_K_BOOL},
  {"INTEGER", MPI_INTEGER, LMPIO_LUA_K_INT},
  {"REAL", MPI_REAL, LMPIO_LUA_K_F32},
  {"DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, LMPIO_LUA_K_F64},
  {"COMPLEX", MPI_COMPLEX, LMPIO_LUA_K_NONE},
  {"DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, LMPIO_LUA_K_NONE},
  {"INTEGER1", MPI_INTEGER1, LMPIO_LUA_K_INT},
  {"INTEGER2", MPI_INTEGER2, LMPIO_LUA_K_INT},
  {"INTEGER4", MPI_INTEGER4, LMPIO_LUA_K_INT},
  {"INTEGER8", MPI_INTEGER8, LMPIO_LUA_K_INT},
#ifdef MPI_INTEGER16
  {"INTEGER16", MPI_INTEGER16, LMPIO_LUA_K_NONE},
#endif
#ifdef MPI_REAL2
  {"REAL2", MPI_REAL2, LMPIO_LUA_K_NONE},
#endif
  {"REAL4", MPI_REAL4, LMPIO_LUA_K_F32},
  {"REAL8", MPI_REAL8, LMPIO_LUA_K_F64},
#ifdef MPI_REAL16
  {"REAL16", MPI_REAL16, LMPIO_LUA_K_NONE},
#endif
#ifdef MPI_COMPLEX4
  {"COMPLEX4", MPI_COMPLEX4, LMPIO_LUA_K_NONE},
#endif
  {"COMPLEX8", MPI_COMPLEX8, LMPIO_LUA_K_NONE},
  {"COMPLEX16", MPI_COMPLEX16, LMPIO_LUA_K_NONE},
#ifdef MPI_COMPLEX32
  {"COMPLEX32", MPI_COMPLEX32, LMPIO_LUA_K_NONE},
#endif
#ifdef MPI_LOGICAL1
  {"LOGICAL1", MPI_LOGICAL1, LMPIO_LUA_K_BOOL},
  {"LOGICAL2", MPI_LOGICAL2, LMPIO_LUA_K_BOOL},
  {"LOGICAL4", MPI_LOGICAL4, LMPIO_LUA_K_BOOL},
  {"LOGICAL8", MPI_LOGICAL8, LMPIO_LUA_K_BOOL},
#endif
  /* C++ */
  {"CXX_BOOL", MPI_CXX_BOOL, LMPIO_LUA_K_BOOL},
  {"CXX_FLOAT_COMPLEX", MPI_CXX_FLOAT_COMPLEX, LMPIO_LUA_K_NONE},
  {"CXX_DOUBLE_COMPLEX", MPI_CXX_DOUBLE_COMPLEX, LMPIO_LUA_K_NONE},
  {"CXX_LONG_DOUBLE_COMPLEX", MPI_CXX_LONG_DOUBLE_COMPLEX, LMPIO_LUA_K_NONE},
  /* pairs (MINLOC / MAXLOC) */
  {"FLOAT_INT", MPI_FLOAT_INT, LMPIO_LUA_K_NONE},
  {"DOUBLE_INT", MPI_DOUBLE_INT, LMPIO_LUA_K_NONE},
  {"LONG_INT", MPI_LONG_INT, LMPIO_LUA_K_NONE},
  {"2INT", MPI_2INT, LMPIO_LUA_K_NONE},
  {"SHORT_INT", MPI_SHORT_INT, LMPIO_LUA_K_NONE},
  {"LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, LMPIO_LUA_K_NONE},
  {"2REAL", MPI_2REAL, LMPIO_LUA_K_NONE},
  {"2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, LMPIO_LUA_K_NONE},
  {"2INTEGER", MPI_2INTEGER, LMPIO_LUA_K_NONE},
};
#define NPREDEFS (sizeof predefs / sizeof predefs[0])

static const struct predef *find_predef(MPI_Datatype t) {
  for (size_t i = 0; i < NPREDEFS; i++)
    if (predefs[i].type == t) return &predefs[i];
  return NULL;
}

const char *lmpio_lua_typename(MPI_Datatype t) {
  const struct predef *p = find_predef(t);
  return p ? p->name : NULL;
}

int lmpio_lua_typekind(MPI_Datatype t) {
  const struct predef *p = find_predef(t);
  return p ? p->kind : LMPIO_LUA_K_NONE;
}

int lmpio_lua_typecode(MPI_Datatype t) {
  const struct predef *p = find_predef(t);
  return p ? (int)(p - predefs) : -1;
}

MPI_Datatype lmpio_lua_codetype(long long code) {
  return code >= 0 && (size_t)code < NPREDEFS ? predefs[code].type : MPI_DATATYPE_NULL;
}

/* Whether elements of basic types a and b are the same: one handle, or
 * the same kind and size (INT and INT32_T). */
static int same_basic(MPI_Datatype a, MPI_Datatype b) {
  if (a == b) return 1;
  const struct predef *pa = find_predef(a), *pb = find_predef(b);
  int sa = 0, sb = 0;
  if (!pa || !pb || pa->kind == LMPIO_LUA_K_NONE || pa->kind != pb->kind) return 0;
  return MPI_Type_size(a, &sa) == MPI_SUCCESS && MPI_Type_size(b, &sb) == MPI_SUCCESS && sa == sb;
}

/* The basic type of t's typemap, walking its constructors (every one
 * but struct has one old type); MPI_DATATYPE_NULL when they differ or
 * MPI cannot tell. */
static MPI_Datatype basic_of(MPI_Datatype t, int depth) {
  int ni, na, nd, comb;
  if (depth > 64 || MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return MPI_DATATYPE_NULL;
  if (comb == MPI_COMBINER_NAMED) return t;
  if (nd < 1) return MPI_DATATYPE_NULL;
  int *ints = malloc(((size_t)ni + 1) * sizeof *ints);
  MPI_Aint *addrs = malloc(((size_t)na + 1) * sizeof *addrs);
  MPI_Datatype *types = malloc((size_t)nd * sizeof *types);
  MPI_Datatype basic = MPI_DATATYPE_NULL;
  if (ints && addrs && types && MPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) == MPI_SUCCESS) {
    basic = basic_of(types[0], depth + 1);
    for (int k = 1; k < nd && basic != MPI_DATATYPE_NULL; k++)
      if (!same_basic(basic, basic_of(types[k], depth + 1))) basic = MPI_DATATYPE_NULL;
    for (int j = 0; j < nd; j++)
      if (!lmpio_lua_isnamed(types[j])) MPI_Type_free(&types[j]);
  }
  free(ints);
  free(addrs);
  free(types);
  return basic;
}

MPI_Datatype lmpio_lua_basictype(lmpio_lua_datatype *d, MPI_Datatype t) {
  if (d && d->basic_known && d->type == t) return d->basic;
  MPI_Datatype b = find_predef(t) ? t : basic_of(t, 0);
  if (d && d->type == t) {
    d->basic = b;
    d->basic_known = 1;
  }
  return b;
}

/* Whether c is a complex type whose parts are of type part: the module has
 * no complex arrays, and a DOUBLE array holds C_DOUBLE_COMPLEX values as
 * pairs (as numpy views float64 pairs as complex128). */
static int complex_of(MPI_Datatype c, MPI_Datatype part) {
  const struct predef *pc = find_predef(c), *pp = find_predef(part);
  int sc = 0, sp = 0;
  if (!pc || !pp || !strstr(pc->name, "COMPLEX") ||
      (pp->kind != LMPIO_LUA_K_F32 && pp->kind != LMPIO_LUA_K_F64 && pp->kind != LMPIO_LUA_K_LDOUBLE))
    return 0;
  return MPI_Type_size(c, &sc) == MPI_SUCCESS && MPI_Type_size(part, &sp) == MPI_SUCCESS && sc == 2 * sp;
}

int lmpio_lua_type_fits(lmpio_lua_datatype *d, MPI_Datatype t, MPI_Datatype elem) {
  if (t == elem || (d && d->type == t && d->fits == elem && elem != MPI_DATATYPE_NULL)) return 1;
  MPI_Datatype b = lmpio_lua_basictype(d, t);
  int yes = b == MPI_BYTE || b == MPI_PACKED ||
            (b != MPI_DATATYPE_NULL && (same_basic(b, elem) || complex_of(b, elem)));
  if (yes && d && d->type == t) d->fits = elem; /* the next call: one comparison */
  return yes;
}

int lmpio_lua_isnamed(MPI_Datatype t) {
  int ni, na, nd, comb;
  if (t == MPI_DATATYPE_NULL) return 0;
  if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
  return comb == MPI_COMBINER_NAMED;
}

/***
An MPI datatype: one of the predefined types (`lmpio.INT`, `lmpio.DOUBLE`,
`lmpio.BYTE`, ... see @{modes.md|modes, options and constants}) or a derived type made by the
constructors under `lmpio.type` (committed, ready to use as memory type,
etype or filetype).  A derived type is freed when collected, or at once by
@{datatype:free}.  Two datatype objects are equal (`==`) when they hold the
same MPI handle; `tostring` gives `"lmpio.DOUBLE"` for predefined types.
A datatype handed to a converter is invalid once the converter returns.
@type datatype
*/

/* ---- objects ---------------------------------------------------------- */

static lmpio_lua_datatype *checkud(lua_State *L, int idx) {
  lmpio_lua_datatype *d = lmpio_lua_checkudata(L, idx, LMPIO_LUA_DATATYPE);
  lmpio_lua_running(L);
  if (!d->valid) lmpio_lua_error(L, MPI_ERR_TYPE, "datatype used after the converter returned");
  if (d->type == MPI_DATATYPE_NULL) lmpio_lua_error(L, MPI_ERR_TYPE, "attempt to use a freed datatype");
  return d;
}

MPI_Datatype lmpio_lua_checktype(lua_State *L, int idx) { return checkud(L, idx)->type; }

MPI_Datatype lmpio_lua_opttype(lua_State *L, int idx, MPI_Datatype def) {
  return lua_isnoneornil(L, idx) ? def : lmpio_lua_checktype(L, idx);
}

int lmpio_lua_istype(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LMPIO_LUA_DATATYPE) != NULL;
}

lmpio_lua_datatype *lmpio_lua_totype(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LMPIO_LUA_DATATYPE);
}

static lmpio_lua_datatype *newud(lua_State *L, MPI_Datatype t, int owned) {
  lmpio_lua_datatype *d = lua_newuserdatauv(L, sizeof *d, 0);
  d->type = t;
  d->owned = owned;
  d->valid = 1;
  d->in_use = 0;
  d->basic = MPI_DATATYPE_NULL;
  d->basic_known = 0;
  d->fits = MPI_DATATYPE_NULL;
  luaL_setmetatable(L, LMPIO_LUA_DATATYPE);
  return d;
}

static void key(lua_State *L, MPI_Datatype t) {
  lua_pushinteger(L, (lua_Integer)(intptr_t)t);
}

lmpio_lua_datatype *lmpio_lua_pushtype(lua_State *L, MPI_Datatype t, int owned) {
  if (!owned && lua_getfield(L, LUA_REGISTRYINDEX, TYPES_KEY) == LUA_TTABLE) {
    key(L, t);
    if (lua_rawget(L, -2) != LUA_TNIL) {
      lua_remove(L, -2);
      return lua_touserdata(L, -1);
    }
    lua_pop(L, 1);
  }
  if (!owned) lua_pop(L, 1);
  return newud(L, t, owned);
}

static int t_gc(lua_State *L) {
  lmpio_lua_datatype *d = lmpio_lua_checkudata(L, 1, LMPIO_LUA_DATATYPE);
  int fin = 1;
  MPI_Finalized(&fin);
  if (!d->owned) return 0; /* a predefined type stays what it is */
  if (d->type != MPI_DATATYPE_NULL && !fin) MPI_Type_free(&d->type);
  d->type = MPI_DATATYPE_NULL;
  return 0;
}

/* t:free(): frees the type now (it is also freed when collected); refused
 * while a core call that uses it is in progress (a converter or extent
 * function written in Lua runs inside one), whose handle it would pull away. */
/***
Frees a derived datatype now instead of when it is collected; using it
afterwards raises.
@function datatype:free
@raise an error for a predefined type
  (`"cannot free a predefined or borrowed datatype"`), and while a call that uses the type is in progress (from a
  converter or extent function written in Lua inside that call)
*/
static int t_free(lua_State *L) {
  lmpio_lua_datatype *d = checkud(L, 1);
  if (!d->owned) return lmpio_lua_error(L, MPI_ERR_TYPE, "cannot free a predefined or borrowed datatype");
  if (d->in_use) return lmpio_lua_error(L, MPI_ERR_TYPE, "cannot free a datatype that a call in progress uses (free it once the call returned)");
  return t_gc(L);
}

static int t_tostring(lua_State *L) {
  lmpio_lua_datatype *d = lmpio_lua_checkudata(L, 1, LMPIO_LUA_DATATYPE);
  const char *name = d->valid && d->type != MPI_DATATYPE_NULL ? lmpio_lua_typename(d->type) : NULL;
  if (!d->valid) lua_pushliteral(L, "lmpio.datatype (invalid)");
  else if (d->type == MPI_DATATYPE_NULL) lua_pushliteral(L, "lmpio.datatype (freed)");
  else if (name) lua_pushfstring(L, "lmpio.%s", name);
  else {
    MPI_Count size = 0;
    MPI_Type_size_x(d->type, &size);
    lua_pushfstring(L, "lmpio.datatype (%I bytes of data, %p)", (lua_Integer)size, (void *)d);
  }
  return 1;
}

static int t_eq(lua_State *L) {
  lmpio_lua_datatype *a = lmpio_lua_checkudata(L, 1, LMPIO_LUA_DATATYPE);
  lmpio_lua_datatype *b = lmpio_lua_checkudata(L, 2, LMPIO_LUA_DATATYPE);
  lua_pushboolean(L, a->type == b->type);
  return 1;
}

/***
The number of bytes of data in one item of the type, as `MPI_Type_size_x`.
@function datatype:size
@treturn integer bytes of data (holes not counted)
*/
static int t_size(lua_State *L) {
  MPI_Count n = 0;
  lmpio_lua_checkmpi(L, MPI_Type_size_x(lmpio_lua_checktype(L, 1), &n), "MPI_Type_size_x");
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* t:extent() -> extent, lb */
/***
The extent and lower bound of the type in memory, as `MPI_Type_get_extent_x`.
The extent in a file of a view whose representation is not native is
@{file:get_type_extent}.
@function datatype:extent
@treturn integer extent in bytes (the span from one item to the next)
@treturn integer lower bound in bytes
*/
static int t_extent(lua_State *L) {
  MPI_Count lb = 0, ext = 0;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(lmpio_lua_checktype(L, 1), &lb, &ext), "MPI_Type_get_extent_x");
  lua_pushinteger(L, (lua_Integer)ext);
  lua_pushinteger(L, (lua_Integer)lb);
  return 2;
}

/***
The lower bound of the type, in bytes.
@function datatype:lb
@treturn integer lower bound (second result of @{datatype:extent})
*/
static int t_lb(lua_State *L) {
  MPI_Count lb = 0, ext = 0;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(lmpio_lua_checktype(L, 1), &lb, &ext), "MPI_Type_get_extent_x");
  lua_pushinteger(L, (lua_Integer)lb);
  return 1;
}

/***
The upper bound of the type, in bytes: lower bound plus extent.
@function datatype:ub
@treturn integer upper bound
*/
static int t_ub(lua_State *L) {
  MPI_Count lb = 0, ext = 0;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent_x(lmpio_lua_checktype(L, 1), &lb, &ext), "MPI_Type_get_extent_x");
  lua_pushinteger(L, (lua_Integer)(lb + ext));
  return 1;
}

/* t:true_extent() -> true_extent, true_lb */
/***
The true extent and true lower bound, as `MPI_Type_get_true_extent_x`:
the bytes the data actually span, ignoring bounds set by `lmpio.type.resized`.
@function datatype:true_extent
@treturn integer true extent in bytes
@treturn integer true lower bound in bytes
*/
static int t_true_extent(lua_State *L) {
  MPI_Count lb = 0, ext = 0;
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(lmpio_lua_checktype(L, 1), &lb, &ext),
                     "MPI_Type_get_true_extent_x");
  lua_pushinteger(L, (lua_Integer)ext);
  lua_pushinteger(L, (lua_Integer)lb);
  return 2;
}

/***
The true lower bound, in bytes.
@function datatype:true_lb
@treturn integer true lower bound (second result of @{datatype:true_extent})
*/
static int t_true_lb(lua_State *L) {
  MPI_Count lb = 0, ext = 0;
  lmpio_lua_checkmpi(L, MPI_Type_get_true_extent_x(lmpio_lua_checktype(L, 1), &lb, &ext),
                     "MPI_Type_get_true_extent_x");
  lua_pushinteger(L, (lua_Integer)lb);
  return 1;
}

/* t:name(): "DOUBLE" for predefined types, nil otherwise */
/***
The name of a predefined type.
@function datatype:name
@treturn string|nil the name under `lmpio` (`"DOUBLE"` for `lmpio.DOUBLE`);
  nil for a derived type
*/
static int t_name(lua_State *L) {
  const char *name = lmpio_lua_typename(lmpio_lua_checktype(L, 1));
  if (name) lua_pushstring(L, name);
  else lua_pushnil(L);
  return 1;
}

/***
Whether the type is predefined (a named MPI type) rather than derived.
@function datatype:is_predefined
@treturn boolean
*/
static int t_is_predefined(lua_State *L) {
  lua_pushboolean(L, lmpio_lua_isnamed(lmpio_lua_checktype(L, 1)));
  return 1;
}

/* ---- constructors ------------------------------------------------------ */

static int checkint(lua_State *L, int idx, int min) {
  lua_Integer v = lmpio_lua_checkinteger(L, idx);
  if (v < min || v > INT_MAX) lmpio_lua_argerror(L, idx, min > 0 ? "must be positive" : min == 0 ? "must not be negative" : "out of range");
  return (int)v;
}

static int checkcount(lua_State *L, int idx) { return checkint(L, idx, 0); }

static MPI_Aint checkaint(lua_State *L, int idx) { return (MPI_Aint)lmpio_lua_checkinteger(L, idx); }

/* Length of the sequence at idx (a table), checked. */
static int seqlen(lua_State *L, int idx) {
  lmpio_lua_checkluatype(L, idx, LUA_TTABLE);
  lua_Integer n = lmpio_lua_len(L, idx);
  if (n > INT_MAX) lmpio_lua_argerror(L, idx, "too many elements");
  return (int)n;
}

/* A scratch array owned by the collector (pushed on the stack). */
static void *scratch(lua_State *L, size_t n, size_t esize) {
  if (esize && n > (size_t)-1 / esize) lmpio_lua_error(L, MPI_ERR_ARG, "too many elements");
  return lua_newuserdatauv(L, n ? n * esize : 1, 0);
}

static int *checkints(lua_State *L, int idx, int n, int min) {
  if (seqlen(L, idx) != n) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "expected %d elements", n));
  int *a = scratch(L, (size_t)n, sizeof *a);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    int isnum;
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    if (!isnum || v < min || v > INT_MAX)
      lmpio_lua_argerror(L, idx, lua_pushfstring(L, "element %d must be an integer >= %d", i + 1, min));
    a[i] = (int)v;
    lua_pop(L, 1);
  }
  return a;
}

static MPI_Aint *checkaints(lua_State *L, int idx, int n) {
  if (seqlen(L, idx) != n) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "expected %d elements", n));
  MPI_Aint *a = scratch(L, (size_t)n, sizeof *a);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    int isnum;
    lua_Integer v = lua_tointegerx(L, -1, &isnum);
    if (!isnum) lmpio_lua_argerror(L, idx, lua_pushfstring(L, "element %d must be an integer", i + 1));
    a[i] = (MPI_Aint)v;
    lua_pop(L, 1);
  }
  return a;
}

/* Makes the result object first, then lets fn fill its handle, commits. */
#define NEWTYPE(L, what, call)                                                 \
  do {                                                                         \
    lmpio_lua_datatype *d_ = newud((L), MPI_DATATYPE_NULL, 1);                 \
    lmpio_lua_checkmpi((L), (call), what);                                     \
    lmpio_lua_checkmpi((L), MPI_Type_commit(&d_->type), "MPI_Type_commit");    \
    return 1;                                                                  \
  } while (0)
#define OUT (&d_->type)

/***
Count items of a type, one after the other (`MPI_Type_contiguous`).
@function lmpio.type.contiguous
@tparam integer count number of items (0 or more)
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise a Lua error for a negative count or a non-datatype; an @{error}
  object when MPI refuses the type
*/
static int c_contiguous(lua_State *L) {
  lmpio_lua_running(L);
  int count = checkcount(L, 1);
  MPI_Datatype old = lmpio_lua_checktype(L, 2);
  NEWTYPE(L, "MPI_Type_contiguous", MPI_Type_contiguous(count, old, OUT));
}

/***
Count blocks of blocklength items, the starts of consecutive blocks
stride items apart (`MPI_Type_vector`).
@function lmpio.type.vector
@tparam integer count number of blocks
@tparam integer blocklength items in each block
@tparam integer stride distance between block starts, in extents of oldtype
  (may be negative)
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise as @{lmpio.type.contiguous}
@usage local column = lmpio.type.vector(rows, 1, cols, lmpio.DOUBLE)
*/
static int c_vector(lua_State *L) {
  lmpio_lua_running(L);
  int count = checkcount(L, 1), bl = checkcount(L, 2);
  lua_Integer stride = lmpio_lua_checkinteger(L, 3);
  if (stride < INT_MIN || stride > INT_MAX) lmpio_lua_argerror(L, 3, "out of range");
  MPI_Datatype old = lmpio_lua_checktype(L, 4);
  NEWTYPE(L, "MPI_Type_vector", MPI_Type_vector(count, bl, (int)stride, old, OUT));
}

/***
As @{lmpio.type.vector} with the stride in bytes (`MPI_Type_create_hvector`).
@function lmpio.type.hvector
@tparam integer count number of blocks
@tparam integer blocklength items in each block
@tparam integer stride distance between block starts, in bytes
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise as @{lmpio.type.contiguous}
*/
static int c_hvector(lua_State *L) {
  lmpio_lua_running(L);
  int count = checkcount(L, 1), bl = checkcount(L, 2);
  MPI_Aint stride = checkaint(L, 3);
  MPI_Datatype old = lmpio_lua_checktype(L, 4);
  NEWTYPE(L, "MPI_Type_create_hvector", MPI_Type_create_hvector(count, bl, stride, old, OUT));
}

/***
Blocks of different lengths at displacements counted in extents of
oldtype (`MPI_Type_indexed`).
@function lmpio.type.indexed
@tparam {integer,...} blocklengths items in each block (0 or more)
@tparam {integer,...} displacements start of each block, in extents of
  oldtype; as many as blocklengths
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise a Lua error when the tables differ in length or hold something other
  than integers; as @{lmpio.type.contiguous}
*/
static int c_indexed(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 3); /* scratch arrays go above the arguments */
  int n = seqlen(L, 1);
  int *bl = checkints(L, 1, n, 0);
  int *disp = checkints(L, 2, n, INT_MIN);
  MPI_Datatype old = lmpio_lua_checktype(L, 3);
  NEWTYPE(L, "MPI_Type_indexed", MPI_Type_indexed(n, bl, disp, old, OUT));
}

/***
As @{lmpio.type.indexed} with displacements in bytes
(`MPI_Type_create_hindexed`).
@function lmpio.type.hindexed
@tparam {integer,...} blocklengths items in each block
@tparam {integer,...} displacements start of each block, in bytes
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise as @{lmpio.type.indexed}
*/
static int c_hindexed(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 3); /* scratch arrays go above the arguments */
  int n = seqlen(L, 1);
  int *bl = checkints(L, 1, n, 0);
  MPI_Aint *disp = checkaints(L, 2, n);
  MPI_Datatype old = lmpio_lua_checktype(L, 3);
  NEWTYPE(L, "MPI_Type_create_hindexed", MPI_Type_create_hindexed(n, bl, disp, old, OUT));
}

/***
Blocks of one length at displacements counted in extents of oldtype
(`MPI_Type_create_indexed_block`).
@function lmpio.type.indexed_block
@tparam integer blocklength items in every block
@tparam {integer,...} displacements start of each block, in extents of oldtype
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise as @{lmpio.type.indexed}
*/
static int c_indexed_block(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 3); /* scratch arrays go above the arguments */
  int bl = checkcount(L, 1);
  int n = seqlen(L, 2);
  int *disp = checkints(L, 2, n, INT_MIN);
  MPI_Datatype old = lmpio_lua_checktype(L, 3);
  NEWTYPE(L, "MPI_Type_create_indexed_block", MPI_Type_create_indexed_block(n, bl, disp, old, OUT));
}

/***
As @{lmpio.type.indexed_block} with displacements in bytes
(`MPI_Type_create_hindexed_block`).
@function lmpio.type.hindexed_block
@tparam integer blocklength items in every block
@tparam {integer,...} displacements start of each block, in bytes
@tparam datatype oldtype the item type
@treturn datatype a new committed datatype
@raise as @{lmpio.type.indexed}
*/
static int c_hindexed_block(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 3); /* scratch arrays go above the arguments */
  int bl = checkcount(L, 1);
  int n = seqlen(L, 2);
  MPI_Aint *disp = checkaints(L, 2, n);
  MPI_Datatype old = lmpio_lua_checktype(L, 3);
  NEWTYPE(L, "MPI_Type_create_hindexed_block", MPI_Type_create_hindexed_block(n, bl, disp, old, OUT));
}

/***
Blocks of different types at byte displacements (`MPI_Type_create_struct`).
@function lmpio.type.struct
@tparam {integer,...} blocklengths items in each block
@tparam {integer,...} displacements start of each block, in bytes
@tparam {datatype,...} types the type of each block
@treturn datatype a new committed datatype
@raise a Lua error when the three tables differ in length or an element of
  types is not a datatype; as @{lmpio.type.indexed}
@usage local pair = lmpio.type.struct({1, 1}, {0, 8}, {lmpio.DOUBLE, lmpio.INT})
*/
static int c_struct(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 3); /* scratch arrays go above the arguments */
  int n = seqlen(L, 1);
  int *bl = checkints(L, 1, n, 0);
  MPI_Aint *disp = checkaints(L, 2, n);
  if (seqlen(L, 3) != n) lmpio_lua_argerror(L, 3, lua_pushfstring(L, "expected %d datatypes", n));
  MPI_Datatype *types = scratch(L, (size_t)n, sizeof *types);
  for (int i = 0; i < n; i++) {
    lua_geti(L, 3, i + 1);
    lmpio_lua_datatype *d = luaL_testudata(L, -1, LMPIO_LUA_DATATYPE);
    if (!d || !d->valid || d->type == MPI_DATATYPE_NULL)
      lmpio_lua_argerror(L, 3, lua_pushfstring(L, "element %d is not a datatype", i + 1));
    types[i] = d->type;
    lua_pop(L, 1);
  }
  NEWTYPE(L, "MPI_Type_create_struct", MPI_Type_create_struct(n, bl, disp, types, OUT));
}

/* Array order: "c" (row major, the default) or "fortran" (column major),
 * also spelt "C", "F", "f", "Fortran", or the numbers MPI_ORDER_C/_FORTRAN
 * (lmpio.ORDER_C, lmpio.ORDER_FORTRAN). */
static int checkorder(lua_State *L, int idx) {
  static const struct { const char *name; int order; } names[] = {
    {"c", MPI_ORDER_C}, {"C", MPI_ORDER_C}, {"fortran", MPI_ORDER_FORTRAN}, {"Fortran", MPI_ORDER_FORTRAN},
    {"FORTRAN", MPI_ORDER_FORTRAN}, {"f", MPI_ORDER_FORTRAN}, {"F", MPI_ORDER_FORTRAN},
  };
  if (lua_isnoneornil(L, idx)) return MPI_ORDER_C;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer o = lua_tointeger(L, idx);
    if (o == MPI_ORDER_C || o == MPI_ORDER_FORTRAN) return (int)o;
  } else if (lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (strcmp(s, names[i].name) == 0) return names[i].order;
  }
  return lmpio_lua_argerror(L, idx, lua_pushfstring(L, "order must be \"c\" (or \"C\", row major) or \"fortran\" (or \"F\", column major), got %s",
                                               luaL_tolstring(L, idx, NULL)));
}

/* An empty block of an array of sizes[0..n-1] items of old: no data and
 * the extent of the whole array, as MPI's darray makes the empty blocks
 * (MPI refuses a subsize 0 in a subarray, and a size 0 in both). */
static int empty_block(lua_State *L, int n, const int *sizes, MPI_Datatype old) {
  MPI_Aint lb, ext;
  lmpio_lua_checkmpi(L, MPI_Type_get_extent(old, &lb, &ext), "MPI_Type_get_extent");
  long double whole = (long double)ext;
  for (int i = 0; i < n; i++) whole *= sizes[i];
  if (whole > (long double)(LLONG_MAX / 2)) lmpio_lua_argerror(L, 1, "the array is too large");
  lmpio_lua_datatype *d = newud(L, MPI_DATATYPE_NULL, 1);
  MPI_Datatype none;
  lmpio_lua_checkmpi(L, MPI_Type_contiguous(0, old, &none), "MPI_Type_contiguous");
  int rc = MPI_Type_create_resized(none, 0, (MPI_Aint)whole, &d->type);
  MPI_Type_free(&none);
  lmpio_lua_checkmpi(L, rc, "MPI_Type_create_resized");
  lmpio_lua_checkmpi(L, MPI_Type_commit(&d->type), "MPI_Type_commit");
  return 1;
}

/* subarray(sizes, subsizes, starts, oldtype [, order "c"|"fortran"]);
 * starts count from 0, as in MPI. */
/***
A block of an n-dimensional array (`MPI_Type_create_subarray`).
@function lmpio.type.subarray
@tparam {integer,...} sizes the whole array's size in each dimension (0 or more)
@tparam {integer,...} subsizes the block's size in each dimension (0 or more:
  a block with a subsize 0 is empty, a datatype of size 0 whose extent is
  still the whole array, as the empty blocks of `lmpio.type.darray`; MPI
  itself refuses 0)
@tparam {integer,...} starts the block's first index in each dimension,
  counted from 0 as in MPI
@tparam datatype oldtype the element type
@param[opt="c"] order `"c"` (row major: the last dimension varies fastest;
  also `"C"`, `lmpio.ORDER_C`) or `"fortran"` (column major; also
  `"Fortran"`, `"FORTRAN"`, `"f"`, `"F"`, `lmpio.ORDER_FORTRAN`)
@treturn datatype a new committed datatype
@raise a Lua error when a block exceeds the array (start + subsize > size),
  the tables differ in length or are empty; as @{lmpio.type.contiguous}
@usage -- rank r of 4 owns the r-th 50x50 quarter of a 100x100 grid of doubles
local t = lmpio.type.subarray({100, 100}, {50, 50},
  {(r // 2) * 50, (r % 2) * 50}, lmpio.DOUBLE)
*/
static int c_subarray(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 5); /* scratch arrays go above the arguments */
  int n = seqlen(L, 1);
  if (n < 1) lmpio_lua_argerror(L, 1, "needs at least one dimension");
  int *sizes = checkints(L, 1, n, 0);
  int *sub = checkints(L, 2, n, 0);
  int *starts = checkints(L, 3, n, 0);
  MPI_Datatype old = lmpio_lua_checktype(L, 4);
  int order = checkorder(L, 5);
  int empty = 0;
  for (int i = 0; i < n; i++) {
    if (starts[i] + (long long)sub[i] > sizes[i])
      lmpio_lua_argerror(L, 3, lua_pushfstring(L, "dimension %d: start %d + subsize %d exceeds size %d",
                                          i + 1, starts[i], sub[i], sizes[i]));
    if (sub[i] == 0) empty = 1;
  }
  if (empty) return empty_block(L, n, sizes, old);
  NEWTYPE(L, "MPI_Type_create_subarray", MPI_Type_create_subarray(n, sizes, sub, starts, order, old, OUT));
}

/* darray(size, rank, gsizes, distribs, dargs, psizes, oldtype [, order]);
 * distribs: "block" | "cyclic" | "none"; dargs: integers or "default" (or nil). */
/***
One process's part of an array distributed over a grid of processes
(`MPI_Type_create_darray`, HPF-style distributions).
@function lmpio.type.darray
@tparam integer size number of processes of the grid
@tparam integer rank this process's rank in the grid (0 to size - 1)
@tparam {integer,...} gsizes the global array's size in each dimension (0 or
  more: an array with a size 0 gives every rank an empty block of extent 0,
  where MPI itself refuses)
@tparam {string,...} distribs each dimension's distribution: `"block"`,
  `"cyclic"` or `"none"`
@tparam ?{integer|string,...} dargs each dimension's distribution argument:
  a positive block size or `"default"`; nil means default everywhere
@tparam {integer,...} psizes processes in each dimension of the grid (their
  product must equal size)
@tparam datatype oldtype the element type
@param[opt="c"] order as for @{lmpio.type.subarray}
@treturn datatype a new committed datatype
@raise a Lua error for inconsistent arguments (rank not below size, tables of
  different lengths, unknown distribution, product of psizes not size); an
  @{error} object when MPI refuses the type
*/
static int c_darray(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 8); /* scratch arrays go above the arguments */
  int size = checkint(L, 1, 1), rank = checkcount(L, 2);
  if (rank >= size) lmpio_lua_argerror(L, 2, "rank must be less than size");
  int n = seqlen(L, 3);
  if (n < 1) lmpio_lua_argerror(L, 3, "needs at least one dimension");
  int *gsizes = checkints(L, 3, n, 0);
  if (seqlen(L, 4) != n) lmpio_lua_argerror(L, 4, lua_pushfstring(L, "expected %d elements", n));
  int *distribs = scratch(L, (size_t)n, sizeof *distribs);
  static const char *const dnames[] = {"block", "cyclic", "none", NULL};
  static const int dvals[] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE};
  for (int i = 0; i < n; i++) {
    lua_geti(L, 4, i + 1);
    const char *s = lua_tostring(L, -1);
    int k = -1;
    for (int j = 0; s && dnames[j]; j++)
      if (strcmp(s, dnames[j]) == 0) k = j;
    if (k < 0) lmpio_lua_argerror(L, 4, lua_pushfstring(L, "element %d must be \"block\", \"cyclic\" or \"none\"", i + 1));
    distribs[i] = dvals[k];
    lua_pop(L, 1);
  }
  int *dargs = scratch(L, (size_t)n, sizeof *dargs);
  for (int i = 0; i < n; i++) {
    int t = lua_isnoneornil(L, 5) ? LUA_TNIL : (lmpio_lua_checkluatype(L, 5, LUA_TTABLE), lua_geti(L, 5, i + 1));
    int isnum = 0;
    lua_Integer v = t == LUA_TNIL ? 0 : lua_tointegerx(L, -1, &isnum);
    if (t == LUA_TNIL || (t == LUA_TSTRING && strcmp(lua_tostring(L, -1), "default") == 0))
      dargs[i] = MPI_DISTRIBUTE_DFLT_DARG;
    else if (isnum && v >= 1 && v <= INT_MAX)
      dargs[i] = (int)v;
    else
      lmpio_lua_argerror(L, 5, lua_pushfstring(L, "element %d must be a positive integer or \"default\"", i + 1));
    if (!lua_isnoneornil(L, 5)) lua_pop(L, 1);
  }
  int *psizes = checkints(L, 6, n, 1);
  long long prod = 1;
  for (int i = 0; i < n && prod <= size; i++) prod *= psizes[i]; /* stops before it could overflow */
  if (prod != size) lmpio_lua_argerror(L, 6, "the product of psizes must equal size");
  MPI_Datatype old = lmpio_lua_checktype(L, 7);
  int order = checkorder(L, 8);
  for (int i = 0; i < n; i++)
    if (gsizes[i] == 0) return empty_block(L, n, gsizes, old); /* every block of an empty array */
  NEWTYPE(L, "MPI_Type_create_darray",
          MPI_Type_create_darray(size, rank, n, gsizes, distribs, dargs, psizes, order, old, OUT));
}

/* resized(oldtype, lb, extent) */
/***
The same data with a new lower bound and extent (`MPI_Type_create_resized`):
how a filetype leaves room for the other ranks' data.
@function lmpio.type.resized
@tparam datatype oldtype the type
@tparam integer lb the new lower bound, in bytes
@tparam integer extent the new extent, in bytes
@treturn datatype a new committed datatype
@raise as @{lmpio.type.contiguous}
@usage -- every size-th double, starting at this rank's
local ft = lmpio.type.resized(lmpio.DOUBLE, 0, size * 8)
*/
static int c_resized(lua_State *L) {
  lmpio_lua_running(L);
  MPI_Datatype old = lmpio_lua_checktype(L, 1);
  MPI_Aint lb = checkaint(L, 2), ext = checkaint(L, 3);
  NEWTYPE(L, "MPI_Type_create_resized", MPI_Type_create_resized(old, lb, ext, OUT));
}

/***
A copy of a datatype (`MPI_Type_dup`), freed independently of it.
@function lmpio.type.dup
@tparam datatype oldtype the type to copy
@treturn datatype a new committed datatype
@raise as @{lmpio.type.contiguous}
*/
/***
A copy of this datatype (`MPI_Type_dup`); the same as @{lmpio.type.dup}.
@function datatype:dup
@treturn datatype a new committed datatype
*/
static int c_dup(lua_State *L) {
  lmpio_lua_running(L);
  MPI_Datatype old = lmpio_lua_checktype(L, 1);
  NEWTYPE(L, "MPI_Type_dup", MPI_Type_dup(old, OUT));
}

int lmpio_lua_datatype_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_DATATYPE)) {
    static const luaL_Reg meta[] = {
      {"__gc", t_gc}, {"__tostring", t_tostring}, {"__eq", t_eq}, {NULL, NULL},
    };
    static const luaL_Reg methods[] = {
      {"size", t_size}, {"extent", t_extent}, {"lb", t_lb}, {"ub", t_ub},
      {"true_extent", t_true_extent}, {"true_lb", t_true_lb}, {"name", t_name},
      {"is_predefined", t_is_predefined}, {"free", t_free}, {"dup", c_dup}, {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);

  /* One object per predefined type for the whole lua_State. */
  if (lua_getfield(L, LUA_REGISTRYINDEX, TYPES_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    for (size_t i = 0; i < NPREDEFS; i++) {
      MPI_Count size = 0;
      if (predefs[i].type == MPI_DATATYPE_NULL ||
          MPI_Type_size_x(predefs[i].type, &size) != MPI_SUCCESS || size <= 0)
        continue; /* e.g. Fortran types of an MPI built without Fortran */
      key(L, predefs[i].type);
      if (lua_rawget(L, -2) == LUA_TNIL) { /* aliases share one object */
        lua_pop(L, 1);
        key(L, predefs[i].type);
        newud(L, predefs[i].type, 0);
        lua_rawset(L, -3);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, TYPES_KEY);
  }
  for (size_t i = 0; i < NPREDEFS; i++) {
    key(L, predefs[i].type);
    if (lua_rawget(L, -2) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    lua_setfield(L, -3, predefs[i].name);
  }
  lua_pop(L, 1);
  lua_getfield(L, -1, "2INT");
  lua_setfield(L, -2, "TWO_INT");
  lua_pushinteger(L, MPI_ORDER_C);
  lua_setfield(L, -2, "ORDER_C");
  lua_pushinteger(L, MPI_ORDER_FORTRAN);
  lua_setfield(L, -2, "ORDER_FORTRAN");

  static const luaL_Reg ctors[] = {
    {"contiguous", c_contiguous}, {"vector", c_vector}, {"hvector", c_hvector},
    {"indexed", c_indexed}, {"hindexed", c_hindexed}, {"indexed_block", c_indexed_block},
    {"hindexed_block", c_hindexed_block}, {"struct", c_struct}, {"subarray", c_subarray},
    {"darray", c_darray}, {"resized", c_resized}, {"dup", c_dup}, {NULL, NULL},
  };
  luaL_newlib(L, ctors);
  lua_setfield(L, -2, "type");
  return 0;
}
