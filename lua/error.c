/* MPI-IO failures as Lua error objects: {class = n, name = "MPI_ERR_...",
 * message = "...", where = "script.lua:12", rank = r, call = "write_at"}
 * with a __tostring that prints where, name, class and message. */
#define LMPIO_LUA_ERROR_C /* the one file that calls Lua's raising helpers */
#include "error.h"
#include "buffer.h"

/***
The error object that a failing call raises (with `error`, so `pcall`
returns it as its second value).  Its metatable is `"lmpio.error"`;
`tostring(err)` gives `"where: name (error class n): message"`.
Check for one with @{lmpio.iserror}.

Every error a function or method of the module raises is such an object,
argument errors included (`MPI_ERR_ARG`, `"bad argument #2 (number
expected, got string)"`, numbered as Lua does: #1 is the first argument
after self), a closed file `MPI_ERR_FILE`.  In collective
methods (`open`, `close`, `set_view`, `set_size`, `preallocate`, `sync`,
`set_info`, `set_atomicity`, `seek_shared`, the `_all`, `_ordered` and
split collective data access methods), every rank raises an error object
of class `MPI_ERR_ARG` carrying the message of the rank whose
argument was wrong, so that no rank waits for another one (when another
rank failed too, the lowest failing rank's class and message, on every
rank).  In the nonblocking and split collective forms the rank whose
argument was wrong raises at once and leaves nothing active; the other
ranks' request (`wait`, `test`) or `_end` raises the same error object.
@type error
*/

/***
The MPI error class, an integer (compare with `lmpio.ERR_IO`, ...).
@field error.class
*/

/***
The class's name, a string such as `"MPI_ERR_NO_SUCH_FILE"`.
@field error.name
*/

/***
What went wrong, a string: the path, the system's error text, the
rank (the same on every rank for a collective call); not the call nor the
class's name, which are fields of their own.
@field error.message
*/

/***
The script's `file:line` of the call, a string (nil when no Lua function
made it).
@field error.where
*/

/***
This process's rank in `lmpio.world`, an integer (-1 when MPI is not
running).
@field error.rank
*/

/***
The lmpio call that failed, a string such as `"write_at"`, `"open"`, or a
metamethod's name (`"__newindex"` for `a[i] = v`); never nil (`"?"` when
unknown).
@field error.call
*/
#include <stdarg.h>
#include <string.h>

_Thread_local lua_State *lmpio_lua_caller;
/* The data access call in progress (datarep.c), and whether the method in
 * progress entered the core (collective methods agree on errors before). */
_Thread_local const lmpio_lua_mem *lmpio_lua_caller_mem;
_Thread_local int lmpio_lua_entered;

_Thread_local int lmpio_lua_argshift;

/***
The error as one line: `"where: name (error class n) in call: message"`,
what `lua5.4` prints for an uncaught error (then the traceback).
@function error:__tostring
@treturn string
*/
static int error_tostring(lua_State *L) {
  lua_settop(L, 1);
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "class");
  lua_getfield(L, 1, "call");
  lua_getfield(L, 1, "message");
  lua_getfield(L, 1, "where");
  const char *where = lua_tostring(L, 6);
  lua_pushfstring(L, "%s%s%s (error class %d) in %s: %s", where ? where : "", where ? ": " : "",
                  lua_isstring(L, 2) ? lua_tostring(L, 2) : "?", (int)lua_tointeger(L, 3),
                  lua_isstring(L, 4) ? lua_tostring(L, 4) : "?", lua_isstring(L, 5) ? lua_tostring(L, 5) : "");
  return 1;
}

/* The script's file:line of the call: the innermost Lua function. */
static void push_where(lua_State *L) {
  lua_Debug ar;
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
      lua_pushfstring(L, "%s:%d", ar.short_src, ar.currentline);
      return;
    }
  }
  lua_pushnil(L);
}

static int pushcall(lua_State *L);

/* The length of the name of a call that msg starts with ("lmpio_file_open: "
 * or "set_view: "), to drop it: the error's call says it. */
static size_t call_prefix(const char *msg, const char *call) {
  size_t n = strlen(call), skip = 0;
  if (strncmp(msg, "lmpio_file_", 11) == 0) skip = 11;
  else if (strncmp(msg, "lmpio_", 6) == 0) skip = 6;
  const char *colon = strchr(msg, ':');
  if (skip && colon && colon[1] == ' ' && strspn(msg + skip, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(colon - msg) - skip)
    return (size_t)(colon - msg) + 2;
  if (strncmp(msg, call, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') return n + 2;
  return 0;
}

void lmpio_lua_pusherror(lua_State *L, int cls, const char *msg) {
  char s[MPI_MAX_ERROR_STRING];
  if (!msg) msg = lmpio_last_error_message();
  if (!msg || !*msg) {
    int n = 0;
    if (lmpio_error_string(cls, s, &n) != MPI_SUCCESS) n = 0;
    s[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = '\0';
    msg = s;
  }
  lua_createtable(L, 0, 6);
  pushcall(L);
  /* the core's "(MPI_ERR_IO, rank 3)": the name is the error's name */
  const char *name = lmpio_error_class_name(cls), *at;
  size_t nl = strlen(name);
  msg += call_prefix(msg, lua_tostring(L, -1));
  for (at = strchr(msg, '('); at && !(strncmp(at + 1, name, nl) == 0 && at[nl + 1] == ','); at = strchr(at + 1, '('))
    ;
  if (at) {
    lua_pushlstring(L, msg, (size_t)(at - msg) + 1);
    lua_pushstring(L, at + nl + 3); /* after "NAME, " */
    lua_concat(L, 2);
  } else {
    lua_pushstring(L, msg);
  }
  lua_setfield(L, -3, "message");
  lua_setfield(L, -2, "call");
  lua_pushinteger(L, cls);
  lua_setfield(L, -2, "class");
  lua_pushstring(L, lmpio_error_class_name(cls));
  lua_setfield(L, -2, "name");
  push_where(L);
  lua_setfield(L, -2, "where");
  int init = 0, fin = 0, rank = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  lua_pushinteger(L, rank);
  lua_setfield(L, -2, "rank");
  luaL_setmetatable(L, LMPIO_LUA_ERROR);
}

int lmpio_lua_raise(lua_State *L, int cls, const char *msg) {
  lmpio_lua_pusherror(L, cls, msg);
  lua_error(L);
}

const char *lmpio_lua_errormessage(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) return lua_tostring(L, idx);
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "message");
    const char *m = lua_tostring(L, -1);
    lua_pop(L, 1); /* the object holds the string */
    if (m) return m;
  }
  return luaL_tolstring(L, idx, NULL); /* left on the stack */
}

int lmpio_lua_isargerror(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TSTRING) return 1;
  if (!lua_istable(L, idx)) return 0;
  lua_getfield(L, idx, "class");
  int yes = lua_tointeger(L, -1) == MPI_ERR_ARG;
  lua_pop(L, 1);
  return yes;
}

/* ---- the module's luaL_check* family ---------------------------------------
 * Each checks as Lua's does and raises an MPI_ERR_ARG error object; the
 * message names the argument as Lua does (#1 is the first after self). */

int lmpio_lua_error(lua_State *L, int cls, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char *msg = lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lmpio_lua_raise(L, cls, msg);
}

int lmpio_lua_argerror(lua_State *L, int arg, const char *extramsg) {
  int self = pushcall(L);
  lua_pop(L, 1);
  int n = arg - self - lmpio_lua_argshift;
  if (arg > 0 && n <= 0 && self)
    lmpio_lua_error(L, MPI_ERR_ARG, "bad self (%s)", extramsg);
  lmpio_lua_error(L, MPI_ERR_ARG, "bad argument #%d (%s)", arg > 0 ? n : arg, extramsg);
}

int lmpio_lua_typeerror(lua_State *L, int arg, const char *tname) {
  const char *got;
  if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING) got = lua_tostring(L, -1);
  else if (lua_type(L, arg) == LUA_TLIGHTUSERDATA) got = "light userdata";
  else got = luaL_typename(L, arg);
  lmpio_lua_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", tname, got));
}

lua_Integer lmpio_lua_checkinteger(lua_State *L, int arg) {
  int isnum;
  lua_Integer d = lua_tointegerx(L, arg, &isnum);
  if (!isnum) {
    if (lua_isnumber(L, arg)) lmpio_lua_argerror(L, arg, "number has no integer representation");
    lmpio_lua_typeerror(L, arg, lua_typename(L, LUA_TNUMBER));
  }
  return d;
}

lua_Integer lmpio_lua_optinteger(lua_State *L, int arg, lua_Integer def) {
  return lua_isnoneornil(L, arg) ? def : lmpio_lua_checkinteger(L, arg);
}

lua_Number lmpio_lua_checknumber(lua_State *L, int arg) {
  int isnum;
  lua_Number d = lua_tonumberx(L, arg, &isnum);
  if (!isnum) lmpio_lua_typeerror(L, arg, lua_typename(L, LUA_TNUMBER));
  return d;
}

lua_Number lmpio_lua_optnumber(lua_State *L, int arg, lua_Number def) {
  return lua_isnoneornil(L, arg) ? def : lmpio_lua_checknumber(L, arg);
}

const char *lmpio_lua_checklstring(lua_State *L, int arg, size_t *len) {
  const char *s = lua_tolstring(L, arg, len);
  if (!s) lmpio_lua_typeerror(L, arg, lua_typename(L, LUA_TSTRING));
  return s;
}

const char *lmpio_lua_optlstring(lua_State *L, int arg, const char *def, size_t *len) {
  if (!lua_isnoneornil(L, arg)) return lmpio_lua_checklstring(L, arg, len);
  if (len) *len = def ? strlen(def) : 0;
  return def;
}

void lmpio_lua_checkluatype(lua_State *L, int arg, int t) {
  if (lua_type(L, arg) != t) lmpio_lua_typeerror(L, arg, lua_typename(L, t));
}

void lmpio_lua_checkany(lua_State *L, int arg) {
  if (lua_type(L, arg) == LUA_TNONE) lmpio_lua_argerror(L, arg, "value expected");
}

void *lmpio_lua_checkudata(lua_State *L, int arg, const char *tname) {
  void *p = luaL_testudata(L, arg, tname);
  if (!p) lmpio_lua_typeerror(L, arg, tname);
  return p;
}

int lmpio_lua_checkoption(lua_State *L, int arg, const char *def, const char *const lst[]) {
  const char *name = def ? lmpio_lua_optstring(L, arg, def) : lmpio_lua_checkstring(L, arg);
  for (int i = 0; lst[i]; i++)
    if (strcmp(lst[i], name) == 0) return i;
  return lmpio_lua_argerror(L, arg, lua_pushfstring(L, "invalid option '%s'", name));
}

void lmpio_lua_checkstack(lua_State *L, int n, const char *msg) {
  if (!lua_checkstack(L, n)) lmpio_lua_error(L, MPI_ERR_NO_MEM, "stack overflow (%s)", msg ? msg : "too many values");
}

lua_Integer lmpio_lua_len(lua_State *L, int idx) {
  int isnum;
  lua_len(L, idx);
  lua_Integer n = lua_tointegerx(L, -1, &isnum);
  if (!isnum) lmpio_lua_error(L, MPI_ERR_ARG, "object length is not an integer");
  lua_pop(L, 1);
  return n;
}

/***
The text of an error class, as `MPI_Error_string`.
@function lmpio.error_string
@tparam integer class an MPI error class (`lmpio.ERR_IO`, `err.class`, ...)
@treturn string|nil name and description, e.g. `"MPI_ERR_IO: I/O error"`; for
  a code lmpio does not define, the MPI library's text; nil when the MPI
  library does not know the code either
*/
static int l_error_string(lua_State *L) {
  lmpio_lua_running(L);
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (lmpio_error_string((int)lmpio_lua_checkinteger(L, 1), s, &n) != MPI_SUCCESS) return 0;
  lua_pushlstring(L, s, (size_t)n);
  return 1;
}

/***
The name of an error class.
@function lmpio.error_class_name
@tparam integer class an MPI error class
@treturn string its name, e.g. `"MPI_ERR_IO"` for `lmpio.ERR_IO`;
  `"MPI_ERR_UNKNOWN"` for a number that is no error class of lmpio
@usage assert(lmpio.error_class_name(err.class) == err.name)
*/
static int l_error_class_name(lua_State *L) {
  lmpio_lua_running(L);
  lua_pushstring(L, lmpio_error_class_name((int)lmpio_lua_checkinteger(L, 1)));
  return 1;
}

/***
Whether a value is an lmpio @{error} object.
@function lmpio.iserror
@param v any value (e.g. the second result of `pcall`)
@treturn boolean true for an error object raised by lmpio
@usage
local ok, err = pcall(lmpio.open, lmpio.world, "/nonexistent/x", "r")
if not ok and lmpio.iserror(err) then print(err.name, err.message) end
*/
static int l_iserror(lua_State *L) {
  lmpio_lua_running(L);
  int yes = 0;
  if (lua_getmetatable(L, 1)) {
    luaL_getmetatable(L, LMPIO_LUA_ERROR);
    yes = lua_rawequal(L, -1, -2);
  }
  lua_pushboolean(L, yes);
  return 1;
}

static const struct { const char *name; int cls; } classes[] = {
  {"SUCCESS", MPI_SUCCESS}, {"ERR_ARG", MPI_ERR_ARG}, {"ERR_COUNT", MPI_ERR_COUNT},
  {"ERR_TYPE", MPI_ERR_TYPE}, {"ERR_COMM", MPI_ERR_COMM}, {"ERR_INFO", MPI_ERR_INFO},
  {"ERR_INFO_VALUE", MPI_ERR_INFO_VALUE}, {"ERR_BUFFER", MPI_ERR_BUFFER},
  {"ERR_NO_MEM", MPI_ERR_NO_MEM}, {"ERR_FILE", MPI_ERR_FILE}, {"ERR_NOT_SAME", MPI_ERR_NOT_SAME},
  {"ERR_AMODE", MPI_ERR_AMODE}, {"ERR_UNSUPPORTED_DATAREP", MPI_ERR_UNSUPPORTED_DATAREP},
  {"ERR_UNSUPPORTED_OPERATION", MPI_ERR_UNSUPPORTED_OPERATION},
  {"ERR_NO_SUCH_FILE", MPI_ERR_NO_SUCH_FILE}, {"ERR_FILE_EXISTS", MPI_ERR_FILE_EXISTS},
  {"ERR_BAD_FILE", MPI_ERR_BAD_FILE}, {"ERR_ACCESS", MPI_ERR_ACCESS},
  {"ERR_NO_SPACE", MPI_ERR_NO_SPACE}, {"ERR_QUOTA", MPI_ERR_QUOTA},
  {"ERR_READ_ONLY", MPI_ERR_READ_ONLY}, {"ERR_FILE_IN_USE", MPI_ERR_FILE_IN_USE},
  {"ERR_DUP_DATAREP", MPI_ERR_DUP_DATAREP}, {"ERR_CONVERSION", MPI_ERR_CONVERSION},
  {"ERR_IO", MPI_ERR_IO}, {"ERR_REQUEST", MPI_ERR_REQUEST}, {"ERR_OTHER", MPI_ERR_OTHER},
  {"ERR_INTERN", MPI_ERR_INTERN},
};

/* Where a long wait of this thread is, for the core's hang reports
 * (lmpio_watch_where): the script's line that made the innermost core or
 * MPI call in progress.  Called from the core's watchdog thread while this
 * thread waits inside that call (the core lets it return only after the
 * report), so the Lua stack holds still; lua_getinfo "Sl" only reads it. */
static void script_where(void *arg, char *buf, size_t n) {
  lua_State *L = *(lua_State *const *)arg;
  lua_Debug ar;
  for (int level = 0; L && lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    snprintf(buf, n, "%s:%d", ar.short_src, ar.currentline);
    return;
  }
}

int lmpio_lua_error_open(lua_State *L) {
  lmpio_watch_where(script_where, &lmpio_lua_caller);
  if (luaL_newmetatable(L, LMPIO_LUA_ERROR)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, LMPIO_LUA_ERROR);
    lua_setfield(L, -2, "__name");
  }
  lua_pop(L, 1);
  static const luaL_Reg funcs[] = {
    {"error_string", l_error_string},
    {"error_class_name", l_error_class_name},
    {"iserror", l_iserror},
    {NULL, NULL},
  };
  lmpio_lua_setfuncs(L, funcs);
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
    lua_pushinteger(L, classes[i].cls);
    lua_setfield(L, -2, classes[i].name);
  }
  return 0;
}

void lmpio_lua_checkmpi(lua_State *L, int rc, const char *what) {
  if (rc == MPI_SUCCESS) return;
  int cls = MPI_ERR_OTHER, n = 0;
  char s[MPI_MAX_ERROR_STRING];
  if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
  if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) n = 0;
  s[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = '\0';
  lua_pushfstring(L, "%s: %s", what, s);
  lmpio_lua_pusherror(L, cls, lua_tostring(L, -1));
  lua_error(L);
}

/* ---- after MPI_Finalize ------------------------------------------------------
 * A finalizer that runs late (a __gc of an object older than the module, a
 * <close> in an atexit path) may still call into the module once MPI is
 * finalized, where any MPI call makes Open MPI abort the process.  Every
 * function that may reach MPI starts with lmpio_lua_running (the methods in
 * the check of their object: a file's, a communicator's, ...): it
 * raises a Lua error naming the function instead. */

/* Pushes the name under which the running C function is registered: a key
 * of the module, of a table in it (lmpio.type, ...) or of a class's methods
 * (what Lua knows of the call is no help after a tail call or a pcall); a
 * metamethod's name ("__index"); else what Lua knows, or "?".  Returns 1
 * for a method (its argument 1 is self), else 0.  A collective method runs
 * its body under lua_pcall: the registered function is then one or two
 * levels up.  Runs only when an error is raised. */
static int pushcall(lua_State *L) {
  static const char *const kinds[] = {LMPIO_LUA_FILE, LMPIO_LUA_COMM, LMPIO_LUA_DATATYPE,
                                        LMPIO_LUA_REQUEST, LMPIO_LUA_MSGREQUEST, NULL};
  lmpio_lua_checkstack(L, 40, NULL);
  int top = lua_gettop(L);
  lua_pushnil(L);                               /* top + 1: the name */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "lmpio");                 /* the module */
  int module = lua_gettop(L), methods;
  if (lua_istable(L, module)) {                 /* the tables in it: lmpio.type, ... */
    lua_pushnil(L);
    while (lua_next(L, module)) {
      if (lua_istable(L, -1) && lua_gettop(L) < top + 30) lua_insert(L, -2);
      else lua_pop(L, 1);
    }
  }
  methods = lua_gettop(L) + 1;
  for (int i = 0; kinds[i]; i++) {            /* the classes' methods */
    luaL_getmetatable(L, kinds[i]);
    lua_getfield(L, -1, "__index");
    lua_remove(L, -2);
  }
  luaL_getmetatable(L, LMPIO_LUA_BUFFER);
  lua_getfield(L, -1, "methods");
  lua_remove(L, -2);
  int last = lua_gettop(L), self = 0;
  lua_Debug ar;
  for (int level = 0; level < 3 && lua_getstack(L, level, &ar) && lua_getinfo(L, "f", &ar); level++) {
    int fn = lua_gettop(L);
    for (int t = module; t <= last; t++) {
      if (!lua_istable(L, t)) continue;
      lua_pushnil(L);
      while (lua_next(L, t)) {
        if (lua_rawequal(L, -1, fn) && lua_type(L, -2) == LUA_TSTRING) {
          lua_pop(L, 1);
          lua_replace(L, top + 1); /* the key */
          lua_settop(L, top + 1);
          return t >= methods;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name) {
    if (strcmp(ar.namewhat, "metamethod") == 0) lua_pushfstring(L, "__%s", ar.name);
    else {
      lua_pushstring(L, ar.name);
      self = strcmp(ar.namewhat, "method") == 0;
    }
  } else {
    lua_pushliteral(L, "?");
  }
  return self;
}

void lmpio_lua_running(lua_State *L) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) return;
  pushcall(L);
  lmpio_lua_error(L, MPI_ERR_OTHER,
                  "lmpio: '%s' called after MPI was finalized (the script is ending): no MPI call can run any more",
                  lua_tostring(L, -1));
}
