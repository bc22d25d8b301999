/* Datatype objects (lua/datatype.c, lua/typemap.c). */
#ifndef LMPIO_LUA_DATATYPE_H
#define LMPIO_LUA_DATATYPE_H

#include "lmpio_lua.h"

/* ---- datatype.c --------------------------------------------------------- */

typedef struct lmpio_lua_datatype {
  MPI_Datatype type;
  int owned;   /* freed by __gc */
  int valid;   /* 0: borrowed and no longer valid */
  int in_use;  /* core calls in progress that use the type: free() refuses */
  MPI_Datatype basic; /* lmpio_lua_basictype, once known */
  int basic_known;
  MPI_Datatype fits;  /* the last element type lmpio_lua_type_fits accepted */
} lmpio_lua_datatype;

MPI_Datatype lmpio_lua_checktype(lua_State *L, int idx);
/* The datatype object at idx, or NULL when idx holds none. */
lmpio_lua_datatype *lmpio_lua_totype(lua_State *L, int idx);
/* Around a core call that uses d's type (d may be NULL): while the call is
 * in progress (a converter or extent function written in Lua runs inside
 * it), d:free() raises instead of freeing the handle the core holds.  Only
 * around calls that cannot raise: every use needs its unuse. */
static inline void lmpio_lua_type_use(lmpio_lua_datatype *d) {
  if (d) d->in_use++;
}
static inline void lmpio_lua_type_unuse(lmpio_lua_datatype *d) {
  if (d) d->in_use--;
}
MPI_Datatype lmpio_lua_opttype(lua_State *L, int idx, MPI_Datatype def);
int lmpio_lua_istype(lua_State *L, int idx);
/* Pushes a datatype object; owned: freed when collected.  Predefined types
 * are pushed as the module's own constants when possible. */
lmpio_lua_datatype *lmpio_lua_pushtype(lua_State *L, MPI_Datatype t, int owned);
/* How elements of a predefined type are read and written from Lua. */
enum { LMPIO_LUA_K_NONE, LMPIO_LUA_K_INT, LMPIO_LUA_K_UINT, LMPIO_LUA_K_BOOL,
       LMPIO_LUA_K_F32, LMPIO_LUA_K_F64, LMPIO_LUA_K_LDOUBLE };
int lmpio_lua_typekind(MPI_Datatype t);
/* The name of a predefined type ("DOUBLE"), or NULL. */
const char *lmpio_lua_typename(MPI_Datatype t);
/* Whether t is a predefined (named) type. */
int lmpio_lua_isnamed(MPI_Datatype t);
/* A small number naming a predefined type alike on every rank (-1 for
 * other types), and back (MPI_DATATYPE_NULL for an unknown number). */
int lmpio_lua_typecode(MPI_Datatype t);
/* The basic type that t's typemap is made of (t itself when predefined),
 * or MPI_DATATYPE_NULL when its basic types differ; cached in d (t's
 * object, or NULL). */
MPI_Datatype lmpio_lua_basictype(lmpio_lua_datatype *d, MPI_Datatype t);
/* Whether memory holding elements of type elem may be accessed through
 * datatype t (d its object or NULL): t's basic types all are elem (or one
 * of the same kind and size, as INT and INT32_T), or BYTE / PACKED. */
int lmpio_lua_type_fits(lmpio_lua_datatype *d, MPI_Datatype t, MPI_Datatype elem);
MPI_Datatype lmpio_lua_codetype(long long code);

int lmpio_lua_datatype_open(lua_State *L);
int lmpio_lua_typemap_open(lua_State *L);

#endif
