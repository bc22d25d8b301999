/* MPI-IO failures as Lua error objects: {class = n, name = "MPI_ERR_...",
 * message = "...", where = "script.lua:12", rank = r, call = "write_at"}
 * with a __tostring that prints where, name, class and message. */
#include "error.h"
#include "buffer.h"

/***
The error object that a failing call raises (with `error`, so `pcall`
returns it as its second value).  Its metatable is `"lmpio.error"`;
`tostring(err)` gives `"where: name (error class n): message"`.
Check for one with @{lmpio.iserror}.

Arguments of the wrong type or out of range raise an ordinary Lua error
(a string, `bad argument #2 to 'write_at' ...`), except in collective
methods (`open`, `close`, `set_view`, `set_size`, `preallocate`, `sync`,
`set_info`, `set_atomicity`, `seek_shared`, the `_all`, `_ordered` and
split collective data access methods): there every rank raises an error
object of class `MPI_ERR_ARG` carrying the message of the rank whose
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
What went wrong, a string: the call, the path, the system's error text, the
rank (the same on every rank for a collective call).
@field error.message
*/

/***
The script's `file:line` of the call, a string (nil when unknown).
@field error.where
*/

/***
This process's rank in `lmpio.world`, an integer (-1 when MPI is not
running).
@field error.rank
*/

/***
The lmpio call that failed, a string such as `"write_at"` (nil when the
error does not come from a call of the library).
@field error.call
*/
#include <string.h>

_Thread_local lua_State *lmpio_lua_caller;
/* The data access call in progress (datarep.c), and whether the method in
 * progress entered the core (collective methods agree on errors before). */
_Thread_local const lmpio_lua_mem *lmpio_lua_caller_mem;
_Thread_local int lmpio_lua_entered;

/* The traceback of the last lmpio error object raised (lua5.4 prints no
 * traceback for an error object with __tostring). */
static char last_traceback[4096];

static void note_traceback(const char *tb) {
  snprintf(last_traceback, sizeof last_traceback, "%s", tb ? tb : "");
}

const char *lmpio_lua_last_traceback(void) { return last_traceback; }


/***
The error as one line: `"where: name (error class n): message"`, what
`lua5.4` prints for an uncaught error.
@function error:__tostring
@treturn string
*/
static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "class");
  lua_getfield(L, 1, "message");
  lua_getfield(L, 1, "where");
  const char *where = lua_tostring(L, 5);
  lua_pushfstring(L, "%s%s%s (error class %d): %s", where ? where : "", where ? ": " : "",
                  luaL_optstring(L, 2, "?"), (int)luaL_optinteger(L, 3, -1), luaL_optstring(L, 4, ""));
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

/* The call a core message names ("lmpio_file_write_at: ..." -> "write_at"). */
static void push_call(lua_State *L, const char *msg) {
  const char *p = msg ? strstr(msg, "lmpio_") : NULL;
  if (p != msg) {
    lua_pushnil(L);
    return;
  }
  const char *e = strchr(p, ':');
  if (!e) {
    lua_pushnil(L);
    return;
  }
  if (strncmp(p, "lmpio_file_", 11) == 0) p += 11;
  else p += 6;
  lua_pushlstring(L, p, (size_t)(e - p));
}

void lmpio_lua_pusherror(lua_State *L, int cls, const char *msg) {
  if (!msg) msg = lmpio_last_error_message();
  if (!msg || !*msg) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (lmpio_error_string(cls, s, &n) != MPI_SUCCESS) n = 0;
    lua_pushlstring(L, s, (size_t)n);
  } else {
    lua_pushstring(L, msg);
  }
  lua_createtable(L, 0, 6);
  lua_insert(L, -2);
  push_call(L, lua_tostring(L, -1));
  lua_setfield(L, -3, "call");
  lua_setfield(L, -2, "message");
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

void lmpio_lua_fix_argerror(lua_State *L, const char *name, int self) {
  const char *msg = lua_tostring(L, -1);
  const char *p = msg ? strstr(msg, "bad argument #") : NULL;
  int n = 0, used = 0;
  if (!p || sscanf(p, "bad argument #%d to '?'%n", &n, &used) != 1 || used == 0) return;
  lua_pushlstring(L, msg, (size_t)(p - msg));
  lua_pushfstring(L, "bad argument #%d to '%s'%s", n - self, name, p + used);
  lua_concat(L, 2);
  lua_remove(L, -2);
}

int lmpio_lua_raise(lua_State *L, int cls, const char *msg) {
  lmpio_lua_pusherror(L, cls, msg);
  /* lua5.4 prints no traceback for an uncaught error object: keep one. */
  luaL_traceback(L, L, luaL_tolstring(L, -1, NULL), 1);
  note_traceback(lua_tostring(L, -1));
  lua_pop(L, 2);
  return lua_error(L);
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
  if (lmpio_error_string((int)luaL_checkinteger(L, 1), s, &n) != MPI_SUCCESS) return 0;
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
  lua_pushstring(L, lmpio_error_class_name((int)luaL_checkinteger(L, 1)));
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
 * of the module, of lmpio.type or of a class's methods (what Lua knows of
 * the call is no help after a tail call or a pcall), or "?".  A collective
 * method runs its body under lua_pcall: the registered function is then
 * one or two levels up. */
static void pushname(lua_State *L) {
  static const char *const kinds[] = {LMPIO_LUA_FILE, LMPIO_LUA_COMM, LMPIO_LUA_DATATYPE,
                                        LMPIO_LUA_REQUEST, LMPIO_LUA_MSGREQUEST, NULL};
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "lmpio");                 /* the module */
  lua_getfield(L, -1, "type");                  /* lmpio.type */
  for (int i = 0; kinds[i]; i++) {            /* the classes' methods */
    luaL_getmetatable(L, kinds[i]);
    lua_getfield(L, -1, "__index");
    lua_remove(L, -2);
  }
  int last = lua_gettop(L);
  lua_Debug ar;
  for (int level = 0; level < 3 && lua_getstack(L, level, &ar) && lua_getinfo(L, "f", &ar); level++) {
    int fn = lua_gettop(L);
    for (int t = top + 2; t <= last; t++) {
      if (!lua_istable(L, t)) continue;
      lua_pushnil(L);
      while (lua_next(L, t)) {
        if (lua_rawequal(L, -1, fn) && lua_type(L, -2) == LUA_TSTRING) {
          lua_pop(L, 1);
          lua_replace(L, top + 1); /* the key */
          lua_settop(L, top + 1);
          return;
        }
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  lua_pushliteral(L, "?");
}

void lmpio_lua_running(lua_State *L) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) return;
  pushname(L);
  luaL_error(L, "lmpio: '%s' called after MPI was finalized (the script is ending): no MPI call can run any more",
             lua_tostring(L, -1));
}
