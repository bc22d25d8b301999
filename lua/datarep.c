/* User-defined data representations written in Lua.
 *
 *   lmpio.register_datarep(name, { formats = { DOUBLE = ">d", INT = ">i4" } })
 *     each predefined type stored as one number in a string.pack format,
 *     compiled to C at registration (copy, byte reversal, or a checked width
 *     change); file extents are the formats' sizes; byte types without a
 *     format are copied.  No Lua runs during an access.  Costs about what
 *     external32 costs.
 *   lmpio.register_datarep(name, { read = f, write = g, extent = h })
 *     f(userbuf, datatype, count, filebuf, position)   file -> memory
 *     g(userbuf, datatype, count, filebuf, position)   memory -> file
 *     h(datatype) -> file extent of a predefined type (or a table
 *                    { DOUBLE = 8, ... } of extents by type name); asked
 *                    once per type: its first answer is the type's file
 *                    extent for good, for the core and the converters alike
 *   Either converter may be omitted: that direction moves native bytes
 *   (MPI_CONVERSION_FN_NULL).  position and count count predefined items of
 *   datatype tiled over the user's buffer (0-based position, as in MPI).
 *   datatype:items(position, count) lists this call's items (runs of one
 *   predefined type, with their byte offsets in userbuf), so a converter
 *   handles record and other derived memory types item type by item type.
 *   userbuf: a borrowed array over the user's buffer (an array of datatype's
 *   elements when it is predefined, so items position+1 .. position+count are
 *   this call's; bytes otherwise); filebuf: borrowed bytes, exactly this
 *   chunk's items in file representation.  Both, and a derived datatype, are
 *   invalid once the converter returns (nonblocking calls and split
 *   collectives, which would use them later, refuse the buffers).  A converter returns nothing (or
 *   true) on success; an error, false, or nil plus a message fails the access
 *   with MPI_ERR_CONVERSION carrying the message.  One Lua call per chunk of
 *   the staging buffer: as fast as the C it calls (lmpio.byteswap).
 *
 *   lmpio.register_datarep(name, { encode = e, decode = d, extent = h })
 *     e(type_name, value) -> string of the type's file extent
 *     d(type_name, bytes) -> value
 *   One Lua call per item: some 30 times slower than the other forms.
 *
 *   lmpio.byteswap(dst, dst_offset, src, src_offset, nitems, itemsize)
 *     reverses the bytes of nitems items of itemsize bytes from src (buffer or
 *     string) into dst; offsets are in bytes from 0; dst may be src.
 *
 * Converters in Lua run on the thread (coroutine) of the Lua call that
 * entered the core (lmpio_lua_caller), under lua_pcall, so an error never
 * jumps over the core's frames and yielding is an error.  Registrations are
 * permanent, as in MPI: the functions stay in the registry of the
 * registering lua_State; once that state is closed, the representation fails
 * every conversion (except the formats form, which is C only).
 *
 * The predefined items of a derived datatype are walked with the core's
 * public item walker (lmpio_items_*, over its typemap leaf cursor). */
#include "error.h"
#include "helpers.h"
#include "lifetime.h"
#include "datatype.h"
#include "buffer.h"
#include "formats.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS_KEY "lmpio.datareps"       /* registry: lightuserdata(rep) -> spec table */

enum { FORM_FULL, FORM_CODEC, FORM_FORMATS };

typedef struct rep {
  char name[MPI_MAX_DATAREP_STRING + 1];
  void *owner;   /* lmpio_lua_owner of the registering state */
  int alive;     /* 0 once that state is closed */
  int form;
  /* Every extent the extent function gave, one per type, for good: the core
   * and the converters both get their extents from here, so a converter's
   * filebuf is always the size the core made it, whatever the function
   * would answer if asked again. */
  struct ext { MPI_Datatype t; MPI_Aint e; } *ext;
  int next, cap;
  struct lmpio_lua_fmt *fmts; /* the formats form: one compiled format per type */
  int nfmts;
  struct rep *link;
} rep;

static rep *reps; /* every registration, never freed (permanent, as in MPI) */

/* ---- the message of the last converter that failed ------------------------ */

static _Thread_local char conv_msg[768];

/* Hands the converter's own words to the core, which puts them in the
 * MPI_ERR_CONVERSION message of the call (on every rank of a collective). */
static void set_msg(const rep *r, const char *what, const char *text) {
  snprintf(conv_msg, sizeof conv_msg, "%s of representation \"%s\": %s", what, r ? r->name : "?", text);
  lmpio_conversion_error_detail(conv_msg);
}

/* ---- extents ---------------------------------------------------------------- */

static void push_spec(lua_State *L, rep *r) {
  lua_getfield(L, LUA_REGISTRYINDEX, REPS_KEY);
  lua_rawgetp(L, -1, r);
  lua_remove(L, -2);
}

static int cached_extent(const rep *r, MPI_Datatype t, MPI_Aint *e) {
  for (int i = 0; i < r->next; i++)
    if (r->ext[i].t == t) {
      *e = r->ext[i].e;
      return 1;
    }
  return 0;
}

/* The file extent of predefined type t: the one recorded, or else the Lua
 * extent function's or table's answer, recorded (raises on failure: call in
 * protected mode). */
static MPI_Aint lua_extent(lua_State *L, rep *r, MPI_Datatype t) {
  MPI_Aint e;
  if (cached_extent(r, t, &e)) return e;
  if (r->next == r->cap) { /* room first: an answer is never left unrecorded */
    int cap = r->cap ? 2 * r->cap : 16;
    struct ext *grown = realloc(r->ext, sizeof *grown * (size_t)cap);
    if (!grown) lmpio_lua_error(L, MPI_ERR_NO_MEM, "out of memory");
    r->ext = grown;
    r->cap = cap;
  }
  const char *tname = lmpio_lua_typename(t);
  push_spec(L, r);
  int kind = lua_getfield(L, -1, "extent");
  if (kind == LUA_TFUNCTION) {
    lmpio_lua_pushtype(L, t, 0);
    lua_call(L, 1, 1);
  } else if (kind == LUA_TTABLE) {
    if (tname) lua_getfield(L, -1, tname);
    else lua_pushnil(L);
  } else {
    lua_pushnil(L);
  }
  int isint = 0;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint || v <= 0 || v > INT_MAX) {
    if (kind == LUA_TTABLE && lua_isnil(L, -1))
      lmpio_lua_error(L, MPI_ERR_ARG, "no file extent for type %s", tname ? tname : "?");
    lmpio_lua_error(L, MPI_ERR_ARG, "the extent of type %s must be a positive integer, got %s", tname ? tname : "?",
               luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, kind == LUA_TTABLE ? 3 : 2);
  /* The function may have made a data access that recorded t already. */
  if (cached_extent(r, t, &e)) return e;
  if (r->next == r->cap) lmpio_lua_error(L, MPI_ERR_NO_MEM, "out of memory");
  e = (MPI_Aint)v;
  r->ext[r->next].t = t;
  r->ext[r->next].e = e;
  r->next++;
  return e;
}

/* ---- calling into Lua from the core ------------------------------------------- */

/* What the protected functions below work on; everything that needs freeing
 * lives here so the caller frees it whatever happened in Lua. */
typedef struct {
  rep *r;
  int dir;
  void *userbuf;
  MPI_Datatype dt;
  int count;
  void *filebuf;
  MPI_Offset position;
  MPI_Datatype ext_type;   /* extent function: the type asked */
  MPI_Aint ext;            /* ... and its answer */
  MPI_Count per;           /* predefined items of one instance of dt (0: not known yet) */
  lmpio_items items;       /* the walk of this chunk's items */
  const char *what;        /* "read conversion", ... for messages */
} call_ctx;

static void ctx_free(call_ctx *c) {
  lmpio_items_close(c->items);
  c->items = NULL;
}

/* Predefined items of one instance of c->dt (raises on failure). */
static MPI_Count items_per_instance(lua_State *L, call_ctx *c) {
  if (c->per > 0) return c->per;
  lmpio_items one;
  if (lmpio_items_open(c->dt, 1, &one) != MPI_SUCCESS) lmpio_lua_error(L, MPI_ERR_ARG, "%s", lmpio_last_error_message());
  c->per = lmpio_items_skip(one, (MPI_Count)1 << 62); /* the whole instance, without walking it */
  lmpio_items_close(one);
  if (c->per <= 0) lmpio_lua_error(L, MPI_ERR_ARG, "the datatype has no data");
  return c->per;
}

/* Starts a walk of this chunk's predefined items: c->count of them from item
 * c->position of the datatype tiled over the user's buffer (raises on
 * failure). */
static void walk_start(lua_State *L, call_ctx *c) {
  MPI_Count per = items_per_instance(L, c);
  long long end;
  if (!lmpio_lua_add_ok((long long)c->position, (long long)c->count, &end))
    lmpio_lua_error(L, MPI_ERR_ARG, "item position %I is out of range", (lua_Integer)c->position);
  MPI_Count instances = end / per + (end % per != 0);
  if (lmpio_items_open(c->dt, instances, &c->items) != MPI_SUCCESS)
    lmpio_lua_error(L, MPI_ERR_ARG, "%s", lmpio_last_error_message());
  if (lmpio_items_skip(c->items, c->position) != c->position) lmpio_lua_error(L, MPI_ERR_ARG, "the datatype has too few items");
}

/* Up to max items of one predefined type back to back in memory at *off. */
static MPI_Count walk_next(lua_State *L, call_ctx *c, MPI_Count max, MPI_Aint *off, MPI_Datatype *basic,
                           MPI_Count *esize) {
  MPI_Count n = lmpio_items_next(c->items, max, off, basic, esize);
  if (n <= 0) lmpio_lua_error(L, MPI_ERR_ARG, "the datatype has too few items");
  return n;
}

/* Bytes from the start of the user's buffer that n instances of t span;
 * 0 when they reach below it or the span overflows. */
static int span(MPI_Datatype t, MPI_Count n, size_t *bytes) {
  MPI_Count lb, ext, tlb, text;
  if (MPI_Type_get_extent_x(t, &lb, &ext) != MPI_SUCCESS ||
      MPI_Type_get_true_extent_x(t, &tlb, &text) != MPI_SUCCESS)
    return 0;
  if (n == 0 || text == 0) {
    *bytes = 0;
    return 1;
  }
  long long first = tlb, last, hi;
  if (!lmpio_lua_mul_ok((long long)n - 1, (long long)ext, &last) || !lmpio_lua_add_ok(last, first, &last)) return 0;
  long long lo = first < last ? first : last;
  if (!lmpio_lua_add_ok(first > last ? first : last, (long long)text, &hi)) return 0;
  if (lo < 0 || (unsigned long long)hi > (size_t)-1) return 0;
  *bytes = (size_t)hi;
  return 1;
}

/* The extent of the user's buffer that Lua may see. */
static void user_bytes(lua_State *L, call_ctx *c, size_t *bytes) {
  const lmpio_lua_mem *m = lmpio_lua_caller_mem;
  if (m && m->ptr == c->userbuf && m->type == c->dt) {
    if (m->buf) {
      *bytes = m->buf->nbytes;
      return;
    }
    if (span(c->dt, m->count, bytes)) return;
  }
  /* Unknown: up to the end of the instance that holds this chunk's last item. */
  MPI_Count nitems = items_per_instance(L, c);
  long long end;
  if (!lmpio_lua_add_ok((long long)c->position, (long long)c->count, &end))
    lmpio_lua_error(L, MPI_ERR_ARG, "item position %I is out of range", (lua_Integer)c->position);
  MPI_Count inst = end / nitems + (end % nitems != 0);
  if (!span(c->dt, inst, bytes))
    lmpio_lua_error(L, MPI_ERR_ARG, "the datatype reaches before the start of the buffer, or spans more than memory holds");
}

/* Bytes of this chunk in the file representation. */
static size_t file_bytes(lua_State *L, call_ctx *c) {
  /* Predefined types with Lua elements are one item each; others (derived
   * types, pairs such as DOUBLE_INT) are walked item by item. */
  long long total = 0, part;
  if (lmpio_lua_isnamed(c->dt) && lmpio_lua_typekind(c->dt) != LMPIO_LUA_K_NONE) {
    if (!lmpio_lua_mul_ok(c->count, (long long)lua_extent(L, c->r, c->dt), &total) ||
        (unsigned long long)total > (size_t)-1)
      lmpio_lua_error(L, MPI_ERR_ARG, "the chunk's file bytes overflow a size");
    return (size_t)total;
  }
  walk_start(L, c);
  MPI_Count left = c->count;
  while (left > 0) {
    MPI_Aint off;
    MPI_Datatype b;
    MPI_Count es;
    MPI_Count n = walk_next(L, c, left, &off, &b, &es);
    if (!lmpio_lua_mul_ok((long long)n, (long long)lua_extent(L, c->r, b), &part) ||
        !lmpio_lua_add_ok(total, part, &total) || (unsigned long long)total > (size_t)-1)
      lmpio_lua_error(L, MPI_ERR_ARG, "the chunk's file bytes overflow a size");
    left -= n;
  }
  ctx_free(c);
  return (size_t)total;
}

/* Protected: pushes userbuf, datatype, filebuf for a full-form converter. */
static int prepare_full(lua_State *L) {
  call_ctx *c = lua_touserdata(L, 1);
  size_t ub = 0;
  size_t fb = file_bytes(L, c);
  user_bytes(L, c, &ub);
  int named = lmpio_lua_isnamed(c->dt) && lmpio_lua_typekind(c->dt) != LMPIO_LUA_K_NONE;
  MPI_Count es = 1;
  if (named && (MPI_Type_size_x(c->dt, &es) != MPI_SUCCESS || es <= 0)) es = 1;
  if (named && es > 0 && ub % (size_t)es == 0)
    lmpio_lua_pushborrowed(L, c->userbuf, ub / (size_t)es, c->dt, c->dir == DIR_WRITE);
  else
    lmpio_lua_pushborrowed(L, c->userbuf, ub, MPI_BYTE, c->dir == DIR_WRITE);
  lmpio_lua_pushtype(L, c->dt, 0);
  lmpio_lua_pushborrowed(L, c->filebuf, fb, MPI_BYTE, c->dir == DIR_READ);
  push_spec(L, c->r);
  lua_getfield(L, -1, c->dir == DIR_READ ? "read" : "write");
  lua_remove(L, -2);
  return 4;
}

/* The failure text of a Lua error value at idx (never raises: strings and
 * objects with a message field; others by type). */
static void error_text(lua_State *L, int idx, char *out, size_t n) {
  const char *s = NULL;
  if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER) {
    s = lua_tostring(L, idx);
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    lua_pushliteral(L, "message");
    if (lua_rawget(L, idx < 0 ? idx - 1 : idx) == LUA_TSTRING) s = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!s) s = "(an error object without a message)";
  } else if (lua_isnil(L, idx)) {
    s = "(error object is nil)";
  }
  if (s) snprintf(out, n, "%s", s);
  else snprintf(out, n, "(error object is a %s value)", luaL_typename(L, idx));
}

/* Checks the results of a converter from idx to the top: nothing, nil or
 * true is success; false or nil, message is failure; anything else is a
 * wrong return value.  Returns 0 on success, with the message set otherwise. */
static int check_results(lua_State *L, call_ctx *c, int idx) {
  int n = lua_gettop(L) - idx + 1;
  if (n <= 0) return 0;
  if (lua_isnil(L, idx) && n == 1) return 0;
  if (lua_isboolean(L, idx) && lua_toboolean(L, idx)) return 0;
  char text[512];
  if (lua_isnil(L, idx) || (lua_isboolean(L, idx) && !lua_toboolean(L, idx))) {
    if (n >= 2 && lua_type(L, idx + 1) == LUA_TSTRING) snprintf(text, sizeof text, "%s", lua_tostring(L, idx + 1));
    else if (n >= 2) error_text(L, idx + 1, text, sizeof text);
    else snprintf(text, sizeof text, "the converter returned false");
  } else {
    snprintf(text, sizeof text, "wrong return value (a %s; a converter returns nothing, true, or nil and a message)",
             luaL_typename(L, idx));
  }
  set_msg(c->r, c->what, text);
  return 1;
}

/* Sets up a converter call on the caller's thread: which lua_State, and
 * whether it may run there.  Returns NULL with the message set. */
static lua_State *enter(rep *r, const char *what) {
  lua_State *L = lmpio_lua_caller;
  if (!L) {
    set_msg(r, what, "called outside a data access made from Lua (no Lua state to run the converter)");
    return NULL;
  }
  if (!r->alive) {
    set_msg(r, what, "the Lua state that registered the representation is closed");
    return NULL;
  }
  if (!lua_checkstack(L, 16)) {
    set_msg(r, what, "no room on the Lua stack");
    return NULL;
  }
  if (lmpio_lua_owner(L) != r->owner) {
    set_msg(r, what, "the representation was registered in another Lua state");
    return NULL;
  }
  return L;
}

static int fail(lua_State *L, call_ctx *c, int top) {
  char text[512];
  error_text(L, -1, text, sizeof text);
  set_msg(c->r, c->what, text);
  lua_settop(L, top);
  ctx_free(c);
  return MPI_ERR_CONVERSION;
}

/* The full form: prepare the objects (protected), call the converter
 * (protected), invalidate the objects, check what it returned. */
static int run_full(lua_State *L, call_ctx *c) {
  int top = lua_gettop(L);
  lua_pushcfunction(L, prepare_full);
  lua_pushlightuserdata(L, c);
  if (lua_pcall(L, 1, 4, 0) != LUA_OK) return fail(L, c, top);
  /* top+1 userbuf, top+2 datatype, top+3 filebuf, top+4 the function */
  lmpio_lua_buffer *ub = lmpio_lua_tobuffer(L, top + 1);
  lmpio_lua_buffer *fb = lmpio_lua_tobuffer(L, top + 3);
  lmpio_lua_datatype *dt = luaL_testudata(L, top + 2, LMPIO_LUA_DATATYPE);
  lua_pushvalue(L, top + 4);
  lua_pushvalue(L, top + 1);
  lua_pushvalue(L, top + 2);
  lua_pushinteger(L, c->count);
  lua_pushvalue(L, top + 3);
  lua_pushinteger(L, (lua_Integer)c->position);
  int st = lua_pcall(L, 5, LUA_MULTRET, 0);
  lmpio_lua_invalidate(ub);
  lmpio_lua_invalidate(fb);
  if (dt && !lmpio_lua_isnamed(c->dt)) dt->valid = 0;
  if (st != LUA_OK) return fail(L, c, top);
  int bad = check_results(L, c, top + 5);
  lua_settop(L, top);
  ctx_free(c);
  return bad ? MPI_ERR_CONVERSION : MPI_SUCCESS;
}

/***
The encoder of a representation (the `encode` field of
`lmpio.register_datarep`'s spec): one predefined item to its bytes in the
file.  Called once per item (pair types such as DOUBLE_INT are two items):
about 20-30 MB/s, some 30 times slower than the formats and read/write forms.
@function encode
@param typename the item's predefined type name ("DOUBLE", "INT", ...)
@param value the item: a number (an integer for integer types), a boolean for
  C_BOOL and LOGICAL types, or, for types Lua has no value for (complex
  types), the item's native bytes as a string
@return a string of exactly the type's file extent
@raise any error, or a result that is not such a string, fails the access with
  `MPI_ERR_CONVERSION`
*/
/***
The decoder of a representation (the `decode` field of
`lmpio.register_datarep`'s spec): the bytes of one predefined item in the
file to its value.  Called once per item, as `encode`.
@function decode
@param typename the item's predefined type name ("DOUBLE", "INT", ...)
@param bytes a string of the type's file extent
@return the item's value (as `encode` receives it; the native bytes as a
  string for types Lua has no value for)
@raise any error, or `nil`, fails the access with `MPI_ERR_CONVERSION`
*/
/* Protected: the encode/decode form, item by item. */
static int codec_items(lua_State *L) {
  call_ctx *c = lua_touserdata(L, 1);
  push_spec(L, c->r);
  int spec = lua_gettop(L);
  lua_getfield(L, spec, c->dir == DIR_READ ? "decode" : "encode");
  int fn = spec + 1;
  walk_start(L, c);
  unsigned char *file = c->filebuf;
  unsigned char *user = c->userbuf;
  MPI_Count left = c->count, item = c->position;
  while (left > 0) {
    MPI_Aint off;
    MPI_Datatype b;
    MPI_Count es;
    MPI_Count n = walk_next(L, c, left, &off, &b, &es);
    MPI_Aint fext = lua_extent(L, c->r, b);
    const char *tname = lmpio_lua_typename(b);
    if (!tname) tname = "?";
    int kind = lmpio_lua_typekind(b);
    int arr = 0;
    if (kind != LMPIO_LUA_K_NONE) {
      lmpio_lua_pushborrowed(L, user + off, (size_t)n, b, c->dir == DIR_WRITE);
      arr = lua_gettop(L);
    }
    lua_pushstring(L, tname);
    int key = lua_gettop(L);
    for (MPI_Count k = 0; k < n; k++, item++, file += fext) {
      lua_pushvalue(L, fn);
      lua_pushvalue(L, key);
      if (c->dir == DIR_WRITE) {
        if (arr) lua_geti(L, arr, (lua_Integer)k + 1);
        else lua_pushlstring(L, (const char *)user + off + k * es, (size_t)es);
        lua_call(L, 2, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
          lmpio_lua_error(L, MPI_ERR_ARG, "encode for item %I (%s) returned %s, not a string", (lua_Integer)item, tname,
                     luaL_typename(L, -1));
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len != (size_t)fext)
          lmpio_lua_error(L, MPI_ERR_ARG, "encode for item %I (%s) returned %d bytes, the file extent is %d", (lua_Integer)item,
                     tname, (int)len, (int)fext);
        memcpy(file, s, len);
      } else {
        lua_pushlstring(L, (const char *)file, (size_t)fext);
        lua_call(L, 2, 1);
        if (lua_isnil(L, -1))
          lmpio_lua_error(L, MPI_ERR_ARG, "decode for item %I (%s) returned nil", (lua_Integer)item, tname);
        if (arr) {
          lua_seti(L, arr, (lua_Integer)k + 1);
          continue;
        }
        size_t len = 0;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        if (!s || len != (size_t)es)
          lmpio_lua_error(L, MPI_ERR_ARG, "decode for item %I (%s) must return the %d native bytes of the item as a string",
                     (lua_Integer)item, tname, (int)es);
        memcpy(user + off + k * es, s, len);
      }
      lua_pop(L, 1);
    }
    if (arr) lmpio_lua_invalidate(lmpio_lua_tobuffer(L, arr));
    lua_settop(L, fn);
    left -= n;
  }
  return 0;
}

static int run_codec(lua_State *L, call_ctx *c) {
  int top = lua_gettop(L);
  lua_pushcfunction(L, codec_items);
  lua_pushlightuserdata(L, c);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return fail(L, c, top);
  lua_settop(L, top);
  ctx_free(c);
  return MPI_SUCCESS;
}

static int convert(rep *r, int dir, void *userbuf, MPI_Datatype dt, int count, void *filebuf,
                   MPI_Offset position) {
  const char *what = dir == DIR_READ ? "the read converter" : "the write converter";
  lua_State *L = enter(r, what);
  if (!L) return MPI_ERR_CONVERSION;
  call_ctx c;
  memset(&c, 0, sizeof c);
  c.r = r;
  c.dir = dir;
  c.userbuf = userbuf;
  c.dt = dt;
  c.count = count;
  c.filebuf = filebuf;
  c.position = position;
  c.what = what;
  if (count <= 0) return MPI_SUCCESS;
  return r->form == FORM_FULL ? run_full(L, &c) : run_codec(L, &c);
}

/***
The read converter of a representation (the `read` field of
`lmpio.register_datarep`'s spec): converts `count` items from the file
representation in `filebuf` into the user's buffer.  Called once per chunk of
the staging buffer (hint `lmpio_conversion_buffer_size`, 4 MiB), on the
thread of the data access, under `pcall`; the costs are those of the Lua it
runs (`lmpio.byteswap` over the chunk: about the rate of `external32`).
@function read
@param userbuf the user's buffer, borrowed: an array of `datatype`'s elements
  when it is predefined (this call's items are `position + 1 .. position +
  count`), bytes otherwise; valid only during the call (a nonblocking call or
  a split collective, which would use it later, refuses it: copy it)
@param datatype the memory datatype of the access (a borrowed datatype object
  when derived, valid only during the call); `datatype:items(position,
  count)` lists this call's items as runs of one predefined type with their
  byte offsets in `userbuf` (a record type's fields, for instance), the file
  bytes being those items one after the other at their file extents
@param count how many predefined items this call converts (integer)
@param filebuf the chunk's bytes in file representation, exactly `count`
  items at their file extents (borrowed bytes, read-only, valid only during
  the call)
@param position the index of the first item, from 0, of the items of
  `datatype` tiled over the user's buffer (integer)
@return nothing or `true` on success; `false` or `nil, message` fail the access
@raise any error fails the access with `MPI_ERR_CONVERSION` carrying its message
*/
static int read_fn(void *userbuf, MPI_Datatype datatype, int count, void *filebuf,
                   MPI_Offset position, void *extra_state) {
  return convert(extra_state, DIR_READ, userbuf, datatype, count, filebuf, position);
}

/***
The write converter of a representation (the `write` field of
`lmpio.register_datarep`'s spec): converts `count` items of the user's buffer
into the file representation in `filebuf`.  The same arguments, calls and
costs as `read`, with `userbuf` read-only and `filebuf` writable (zeroed
first: bytes left unset reach the file as zeros).
@function write
@param userbuf the user's buffer, borrowed and read-only (see `read`)
@param datatype the memory datatype of the access (see `read`)
@param count how many predefined items this call converts (integer)
@param filebuf room for exactly `count` items at their file extents (borrowed bytes)
@param position the index of the first item, from 0 (integer)
@return nothing or `true` on success; `false` or `nil, message` fail the access
@raise any error fails the access with `MPI_ERR_CONVERSION` carrying its message
*/
static int write_fn(void *userbuf, MPI_Datatype datatype, int count, void *filebuf,
                    MPI_Offset position, void *extra_state) {
  return convert(extra_state, DIR_WRITE, userbuf, datatype, count, filebuf, position);
}

static int extent_call(lua_State *L) {
  call_ctx *c = lua_touserdata(L, 1);
  c->ext = lua_extent(L, c->r, c->ext_type);
  return 0;
}

/***
The extent function of a representation (the `extent` field of
`lmpio.register_datarep`'s spec, for the read/write and encode/decode forms):
the size in the file of one item of a predefined type.  Asked once per type
and representation (by `set_view`, `get_type_extent` or the first access that
meets the type); its first answer is kept for good.  Instead of a function,
`extent` may be a table of extents by type name (`{DOUBLE = 8, INT = 4}`).
The formats form takes its extents from the formats' sizes.
@function extent
@param datatype a predefined datatype (e.g. `lmpio.DOUBLE`)
@return its file extent in bytes (a positive integer)
@raise any error, or a value that is not a positive integer, fails the
  calling operation with `MPI_ERR_CONVERSION`
*/
static int extent_fn(MPI_Datatype datatype, MPI_Aint *file_extent, void *extra_state) {
  rep *r = extra_state;
  if (cached_extent(r, datatype, file_extent)) return MPI_SUCCESS;
  lua_State *L = enter(r, "the extent function");
  if (!L) return MPI_ERR_CONVERSION;
  call_ctx c;
  memset(&c, 0, sizeof c);
  c.r = r;
  c.ext_type = datatype;
  c.what = "the extent function";
  int top = lua_gettop(L);
  lua_pushcfunction(L, extent_call);
  lua_pushlightuserdata(L, &c);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) return fail(L, &c, top);
  lua_settop(L, top);
  *file_extent = c.ext;
  return MPI_SUCCESS;
}

/* ---- the formats form (lua/formats.c) ----------------------------------------- */

typedef lmpio_lua_fmt fmt;

/* The kind of number of a predefined type (formats.h's N_*), or -1. */
static int numkind(MPI_Datatype t) {
  switch (lmpio_lua_typekind(t)) {
  case LMPIO_LUA_K_INT: return N_SINT;
  case LMPIO_LUA_K_UINT:
  case LMPIO_LUA_K_BOOL: return N_UINT;
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64:
  case LMPIO_LUA_K_LDOUBLE: return N_FLOAT;
  default: return -1;
  }
}

static const char *compile_format(fmt *f, MPI_Datatype t, const char *key, const char *text) {
  return lmpio_lua_fmt_compile(f, t, numkind(t), key, text);
}

static int fmt_convert(rep *r, int dir, void *userbuf, MPI_Datatype dt, MPI_Count count, void *filebuf,
                       MPI_Offset position) {
  char msg[400];
  int rc = lmpio_lua_fmt_convert(r->fmts, r->nfmts, dir, userbuf, dt, count, filebuf, position, msg, sizeof msg);
  if (rc != MPI_SUCCESS) set_msg(r, dir == DIR_READ ? "the read conversion" : "the write conversion", msg);
  return rc;
}

static int fmt_read(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                    void *extra_state) {
  return fmt_convert(extra_state, DIR_READ, userbuf, datatype, count, filebuf, position);
}

static int fmt_write(void *userbuf, MPI_Datatype datatype, MPI_Count count, void *filebuf, MPI_Offset position,
                     void *extra_state) {
  return fmt_convert(extra_state, DIR_WRITE, userbuf, datatype, count, filebuf, position);
}

/* The file extent of a type is the size of its format. */
static int fmt_extent(MPI_Datatype datatype, MPI_Aint *file_extent, void *extra_state) {
  rep *r = extra_state;
  char why[200];
  int rc = lmpio_lua_fmt_extent(r->fmts, r->nfmts, datatype, file_extent, why, sizeof why);
  if (rc != MPI_SUCCESS) set_msg(r, "the extent function", why);
  return rc;
}

/* Types that are bytes: without a format of their own, a formats
 * representation copies them as they are. */
static const char *const byte_types[] = {"BYTE", "CHAR", "SIGNED_CHAR", "UNSIGNED_CHAR", "CHARACTER", "PACKED", NULL};

/* Compiles the formats table at index src (type names: the table at index
 * types) into the fmt array of a userdata that it pushes (collected with
 * it, so an error leaks nothing), its length in *count.  Raises an argument
 * error naming the key of a bad entry. */
static int compile_formats(lua_State *L, int src, int types, int *count) {
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, src)) {
    n++;
    lua_pop(L, 1);
  }
  fmt *out = lua_newuserdatauv(L, sizeof(fmt) * (size_t)(n + 8), 0);
  int k = 0;
  lua_pushnil(L);
  while (lua_next(L, src)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats: key %s is not a type name",
                                                 luaL_tolstring(L, -2, NULL)));
    const char *key = lua_tostring(L, -2);
    if (lua_type(L, -1) != LUA_TSTRING)
      return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats.%s must be a string.pack format, not a %s", key,
                                                 luaL_typename(L, -1)));
    const char *text = lua_tostring(L, -1);
    lua_getfield(L, types, key);
    MPI_Datatype t = lmpio_lua_istype(L, -1) ? lmpio_lua_checktype(L, -1) : MPI_DATATYPE_NULL;
    lua_pop(L, 1);
    if (t == MPI_DATATYPE_NULL || !lmpio_lua_typename(t) || strlen(key) >= sizeof out->key)
      return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats.%s: '%s' is not a predefined type name", key, key));
    /* string.packsize must agree (it raises on a bad format) */
    lua_getglobal(L, "string");
    if (lua_getfield(L, -1, "packsize") != LUA_TFUNCTION) return lmpio_lua_error(L, MPI_ERR_INTERN, "string.packsize is not available");
    lua_pushvalue(L, -3);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK)
      return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats.%s: bad format '%s': %s", key, text, lua_tostring(L, -1)));
    lua_Integer psize = lua_tointeger(L, -1);
    lua_pop(L, 2);
    const char *why = compile_format(&out[k], t, key, text);
    if (!why && psize != out[k].fsize) why = "string.packsize disagrees with its size";
    if (why) return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats.%s: format '%s': %s", key, text, why));
    for (int i = 0; i < k; i++)
      if (out[i].t == t)
        return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "formats.%s: the same type as formats.%s", key, out[i].key));
    k++;
    lua_pop(L, 1);
  }
  for (int b = 0; byte_types[b]; b++) {
    lua_getfield(L, types, byte_types[b]);
    MPI_Datatype t = lmpio_lua_istype(L, -1) ? lmpio_lua_checktype(L, -1) : MPI_DATATYPE_NULL;
    lua_pop(L, 1);
    int have = t == MPI_DATATYPE_NULL;
    for (int i = 0; i < k && !have; i++) have = out[i].t == t;
    if (!have && !compile_format(&out[k], t, byte_types[b], "B")) {
      out[k].fkind = out[k].nkind; /* as they are, signed or not */
      out[k].op = OP_COPY;
      snprintf(out[k].text, sizeof out[k].text, "(bytes)");
      k++;
    }
  }
  *count = k;
  return 0;
}

/* ---- lmpio.register_datarep ---------------------------------------------------- */

static int optfunction(lua_State *L, int spec, const char *field) {
  int t = lua_getfield(L, spec, field);
  if (t != LUA_TNIL && t != LUA_TFUNCTION)
    lmpio_lua_argerror(L, 2, lua_pushfstring(L, "field '%s' must be a function", field));
  return t == LUA_TFUNCTION;
}

/***
Registers a user-defined data representation (MPI_Register_datarep).
`spec` takes one of three forms; what each costs per byte differs by a factor
of about 30 (figures from `bench/lua_bench.sh`, see the README):

* `{formats = {DOUBLE = ">d", INT = ">i4", ...}}` — each predefined type
  stored as one number in a `string.pack` format: a signed or unsigned
  integer of 1 to 16 bytes (`b B h H i[n] I[n] l L j J T`) or a float of 4 or
  8 bytes (`f d n`), with `<`, `>` or `=` (native) byte order (`!` is allowed
  and ignored).  The formats are compiled to C at registration: no Lua runs
  during a data access, byte swaps run as fast as `external32` and width
  changes (INT stored as `">i8"` or `"<i2"`, DOUBLE as `">f"`) are checked: a
  value that does not fit the other side fails the access with
  `MPI_ERR_CONVERSION`, as `external32` does, never truncated.  File extents
  are the formats' sizes.  The byte types BYTE, CHAR, SIGNED_CHAR,
  UNSIGNED_CHAR, CHARACTER and PACKED without a format are copied as they are
  (so byte etypes and strings work); any other type without a format fails
  with `MPI_ERR_CONVERSION` naming it.  A format that is not one such number
  (padding, strings, several values) is rejected at registration: use
  `encode`/`decode` for those.  The representation needs no Lua state: it works
  from any thread and after the registering state is closed.
* `{read = f, write = g, extent = h}` — converters called once per chunk of
  the staging buffer with the whole chunk (see `read`, `write`): as fast as
  the C they call, e.g. `lmpio.byteswap`.  Either converter may be omitted:
  that direction moves native bytes (MPI_CONVERSION_FN_NULL).
* `{encode = e, decode = d, extent = h}` — one Lua call per predefined item
  (see `encode`, `decode`): the simplest and the slowest form.

`extent` (required by the last two forms, not allowed with `formats`) is a
function (see `extent`) or a table of file extents by type name
(`{DOUBLE = 8, INT = 4}`).  Registrations are permanent, as in MPI.
@function lmpio.register_datarep
@param name the representation's name (string, shorter than MPI_MAX_DATAREP_STRING)
@param spec table of one of the three forms above; unknown fields are errors
@raise argument errors for a bad spec (a bad `formats` entry names its key:
  "formats.INT: format '>i4 x4': ..."); an lmpio error `MPI_ERR_DUP_DATAREP`
  when the name is taken, `MPI_ERR_ARG` for a bad name
*/
static int l_register_datarep(lua_State *L) {
  lmpio_lua_running(L);
  const char *name = lmpio_lua_checkstring(L, 1);
  lmpio_lua_checkluatype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  static const char *const fields[] = {"read", "write", "extent", "encode", "decode", "formats", NULL};
  lmpio_lua_checkfields(L, 2, fields);
  lua_createtable(L, 0, 8); /* 3: our own copy of the spec */
  int have_read = optfunction(L, 2, "read");
  lua_setfield(L, 3, "read");
  int have_write = optfunction(L, 2, "write");
  lua_setfield(L, 3, "write");
  int have_enc = optfunction(L, 2, "encode");
  lua_setfield(L, 3, "encode");
  int have_dec = optfunction(L, 2, "decode");
  lua_setfield(L, 3, "decode");
  int tf = lua_getfield(L, 2, "formats");
  int form = FORM_FULL;
  if (tf != LUA_TNIL) {
    if (tf != LUA_TTABLE) return lmpio_lua_argerror(L, 2, "field 'formats' must be a table");
    form = FORM_FORMATS;
  } else if (have_enc || have_dec) {
    form = FORM_CODEC;
  }
  if (form != FORM_FULL && (have_read || have_write))
    return lmpio_lua_argerror(L, 2, "give either read/write converters or encode/decode (or formats), not both");
  if (form == FORM_FORMATS && (have_enc || have_dec))
    return lmpio_lua_argerror(L, 2, "give either encode/decode or formats, not both");
  lua_pop(L, 1);

  /* Extents: a function or a table by type name; the formats' sizes. */
  int te = lua_getfield(L, 2, "extent"); /* 4 */
  if (form == FORM_FORMATS && te != LUA_TNIL)
    return lmpio_lua_argerror(L, 2, "field 'extent' is not used with 'formats' (the file extents are the formats' sizes)");
  if (te != LUA_TNIL && te != LUA_TFUNCTION && te != LUA_TTABLE)
    return lmpio_lua_argerror(L, 2, "field 'extent' must be a function or a table of extents by type name");
  if (te == LUA_TTABLE) { /* copy and check */
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, 4)) {
      if (lua_type(L, -2) != LUA_TSTRING || !lua_isinteger(L, -1) || lua_tointeger(L, -1) <= 0)
        return lmpio_lua_argerror(L, 2, "field 'extent' must map type names to positive integers");
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
    lua_replace(L, 4);
  }
  if (te == LUA_TNIL && form != FORM_FORMATS)
    return lmpio_lua_argerror(L, 2, "field 'extent' (a function or a table of extents by type name) is required");
  lua_setfield(L, 3, "extent");
  int nfmts = 0;
  const fmt *compiled = NULL;
  if (form == FORM_FORMATS) {
    lua_getfield(L, 2, "formats"); /* 4 */
    compile_formats(L, 4, lua_upvalueindex(1), &nfmts);
    compiled = lua_touserdata(L, -1);
  }

  rep *r = calloc(1, sizeof *r);
  fmt *fmts = nfmts ? malloc(sizeof *fmts * (size_t)nfmts) : NULL;
  if (!r || (nfmts && !fmts)) {
    free(r);
    free(fmts);
    return lmpio_lua_error(L, MPI_ERR_NO_MEM, "out of memory");
  }
  if (nfmts) memcpy(fmts, compiled, sizeof *fmts * (size_t)nfmts);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->owner = lmpio_lua_owner(L);
  r->alive = 1;
  r->form = form;
  r->fmts = fmts;
  r->nfmts = nfmts;
  int rc;
  if (form == FORM_FORMATS) {
    LMPIO_LUA_CORE(L, rc, lmpio_register_datarep_c(name, fmt_read, fmt_write, fmt_extent, r));
    if (rc != MPI_SUCCESS) {
      free(fmts);
      free(r);
      lmpio_lua_check(L, rc);
    }
  } else {
    lua_getfield(L, LUA_REGISTRYINDEX, REPS_KEY);
    lua_pushvalue(L, 3);
    lua_rawsetp(L, -2, r); /* may raise: r is not yet registered anywhere */
    lua_pop(L, 1);
    MPI_Datarep_conversion_function *rd = MPI_CONVERSION_FN_NULL, *wr = MPI_CONVERSION_FN_NULL;
    if (form == FORM_FULL) {
      if (have_read) rd = read_fn;
      if (have_write) wr = write_fn;
    } else {
      if (have_dec) rd = read_fn;
      if (have_enc) wr = write_fn;
    }
    LMPIO_LUA_CORE(L, rc, lmpio_register_datarep(name, rd, wr, extent_fn, r));
    if (rc != MPI_SUCCESS) {
      lua_getfield(L, LUA_REGISTRYINDEX, REPS_KEY);
      lua_pushnil(L);
      lua_rawsetp(L, -2, r);
      lua_pop(L, 1);
      free(r);
      lmpio_lua_check(L, rc);
    }
  }
  r->link = reps;
  reps = r;
  return 0;
}

/* ---- lmpio.byteswap ------------------------------------------------------------- */

/***
Reverses the bytes of items in bulk, in C: the tool of converters that
change byte order (the read/write form of `lmpio.register_datarep` runs at
about the rate of `external32` with it, where a Lua loop over the items would
be some 30 times slower).
@function lmpio.byteswap
@param dst the destination buffer or array (writable)
@param dst_offset byte offset into `dst`, from 0
@param src the source: a buffer, an array or a string
@param src_offset byte offset into `src`, from 0
@param nitems how many items (integer, 0 or more)
@param itemsize bytes of one item (1 to 1024)
@return dst
@raise argument errors when the items do not fit `dst` or `src`, when `dst`
  is read-only, or when the two ranges overlap other than exactly (in place)
*/
static int l_byteswap(lua_State *L) {
  lmpio_lua_buffer *d = lmpio_lua_checkflat(L, 1);
  lua_Integer doff = lmpio_lua_checkinteger(L, 2);
  const unsigned char *s;
  size_t slen;
  if (lua_type(L, 3) == LUA_TSTRING) {
    s = (const unsigned char *)lua_tolstring(L, 3, &slen);
  } else {
    lmpio_lua_buffer *b = lmpio_lua_checkflat(L, 3);
    lmpio_lua_checkheld(L, b, 0);
    s = b->data;
    slen = b->nbytes;
  }
  lua_Integer soff = lmpio_lua_checkinteger(L, 4);
  lua_Integer n = lmpio_lua_checkinteger(L, 5);
  lua_Integer size = lmpio_lua_checkinteger(L, 6);
  if (d->readonly) return lmpio_lua_argerror(L, 1, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld(L, d, 1);
  if (size < 1 || size > 1024) return lmpio_lua_argerror(L, 6, "item size must be 1..1024");
  if (n < 0) return lmpio_lua_argerror(L, 5, "must not be negative");
  if ((lua_Unsigned)n > (size_t)-1 / 2 / (size_t)size) return lmpio_lua_argerror(L, 5, "too many items");
  size_t bytes = (size_t)n * (size_t)size;
  if (doff < 0 || (lua_Unsigned)doff > d->nbytes || bytes > d->nbytes - (size_t)doff)
    return lmpio_lua_argerror(L, 2, lua_pushfstring(L, "%I bytes at offset %I do not fit the destination (%I bytes)",
                                               (lua_Integer)bytes, doff, (lua_Integer)d->nbytes));
  if (soff < 0 || (lua_Unsigned)soff > slen || bytes > slen - (size_t)soff)
    return lmpio_lua_argerror(L, 4, lua_pushfstring(L, "%I bytes at offset %I do not fit the source (%I bytes)",
                                               (lua_Integer)bytes, soff, (lua_Integer)slen));
  unsigned char *dp = d->data + doff;
  const unsigned char *sp = s + soff;
  if (bytes && dp != sp && dp < sp + bytes && sp < dp + bytes)
    return lmpio_lua_argerror(L, 3, "source and destination overlap (only the same range may be swapped in place)");
  if (bytes) lmpio_lua_fmt_swap(dp, sp, (size_t)n, (size_t)size);
  lua_settop(L, 1);
  return 1;
}

/* lmpio._debug.borrow(fn, type, n, readonly): calls fn with a borrowed array
 * over n zeroed elements on the C side, invalidates it when fn returns, and
 * returns it with the bytes fn left (the mechanism converters use). */
static int l_debug_borrow(lua_State *L) {
  lmpio_lua_checkluatype(L, 1, LUA_TFUNCTION);
  MPI_Datatype t = lmpio_lua_checktype(L, 2);
  lua_Integer n = lmpio_lua_checkinteger(L, 3);
  int ro = lua_toboolean(L, 4);
  unsigned char mem[64 * 16];
  MPI_Count es = lmpio_lua_isnamed(t) ? lmpio_lua_type_size(L, t) : 1;
  if (n < 0 || n > 64 || es <= 0 || (size_t)n * (size_t)es > sizeof mem)
    return lmpio_lua_argerror(L, 3, "0..64 elements of at most 16 bytes");
  memset(mem, 0, sizeof mem);
  lmpio_lua_buffer *b = lmpio_lua_pushborrowed(L, mem, (size_t)n, t, ro);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, -2);
  int rc = lua_pcall(L, 1, 0, 0);
  lmpio_lua_invalidate(b);
  if (rc != LUA_OK) return lua_error(L);
  lua_pushlstring(L, (const char *)mem, (size_t)n * (size_t)lmpio_lua_type_size(L, t));
  return 2;
}

/* ---- module --------------------------------------------------------------------- */

static void exit_hook(const void *owner) {
  for (rep *r = reps; r; r = r->link)
    if (!owner || r->owner == owner) r->alive = 0;
}

int lmpio_lua_datarep_open(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, REPS_KEY) != LUA_TTABLE) {
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REPS_KEY);
  }
  lua_pop(L, 1);
  static int hooked;
  if (!hooked) {
    hooked = 1;
    lmpio_lua_atexit(exit_hook);
  }
  lua_pushvalue(L, -1); /* the module table: type names for formats */
  lua_pushcclosure(L, l_register_datarep, 1);
  lua_setfield(L, -2, "register_datarep");
  lua_pushcfunction(L, l_byteswap);
  lua_setfield(L, -2, "byteswap");
  if (lua_getfield(L, -1, "_debug") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, "_debug");
  }
  lua_pushcfunction(L, l_debug_borrow);
  lua_setfield(L, -2, "borrow");
  lua_pop(L, 1);
  return 0;
}
