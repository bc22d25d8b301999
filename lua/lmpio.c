/* The Lua module `lmpio`: entry point and MPI lifetime.
 *
 * require "lmpio" initialises MPI when it is not yet initialised (so a script
 * run without mpirun is one process) and, at exit, closes the files a script
 * left open (every rank, in opening order) and then finalises MPI if the
 * module initialised it.  Exit happens when the lua_State closes (a sentinel
 * object's __gc; lua5.4 closes its state at the end of a script) or, for
 * os.exit without closing the state, from an atexit handler. */
#include "lmpio_lua.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL_KEY "lmpio.sentinel"

static int we_initialized;  /* MPI_Init was ours: finalise at exit */
static int states;          /* lua_States holding a sentinel */
static int exiting_done;

#define MAX_EXIT_FNS 8
static lmpio_lua_exit_fn exit_fns[MAX_EXIT_FNS];
static int n_exit_fns;

void lmpio_lua_atexit(lmpio_lua_exit_fn fn) {
  for (int i = 0; i < n_exit_fns; i++)
    if (exit_fns[i] == fn) return;
  if (n_exit_fns < MAX_EXIT_FNS) exit_fns[n_exit_fns++] = fn;
}

void *lmpio_lua_owner(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  void *p = (void *)lua_tothread(L, -1);
  lua_pop(L, 1);
  return p;
}

static void run_exit_fns(void *owner) {
  for (int i = 0; i < n_exit_fns; i++) exit_fns[i](owner);
}

static void finalize_mpi(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (we_initialized && init && !fin) MPI_Finalize();
}

/* Process exit without the state being closed (os.exit(n) in a script). */
static void at_process_exit(void) {
  if (exiting_done) return;
  exiting_done = 1;
  int fin = 1;
  MPI_Finalized(&fin);
  if (!fin) run_exit_fns(NULL);
  finalize_mpi();
}

/* The sentinel dies with its lua_State; it was made before any file of that
 * state, so its finalizer runs after theirs. */
static int sentinel_gc(lua_State *L) {
  void **owner = lua_touserdata(L, 1);
  run_exit_fns(*owner);
  if (--states == 0 && !exiting_done) {
    exiting_done = 1;
    finalize_mpi();
  }
  return 0;
}

/* Open MPI loads its components with dlopen and needs libmpi's symbols to be
 * global; a Lua C module is loaded RTLD_LOCAL, so promote libmpi. */
static void promote_libmpi(void) {
  Dl_info info;
  if (dladdr((void *)&MPI_Init, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

static int init_mpi(lua_State *L) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (fin) return luaL_error(L, "lmpio: MPI was already finalized");
  if (!init) {
    promote_libmpi();
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return luaL_error(L, "lmpio: MPI_Init failed");
    we_initialized = 1;
    /* Errors become Lua errors, not aborts. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    atexit(at_process_exit);
  }
  return 0;
}

static int l_wtime(lua_State *L) {
  lua_pushnumber(L, MPI_Wtime());
  return 1;
}

static int l_wtick(lua_State *L) {
  lua_pushnumber(L, MPI_Wtick());
  return 1;
}

/* lmpio.abort([code]): MPI_Abort on lmpio.world (ends every rank). */
static int l_abort(lua_State *L) {
  int code = (int)luaL_optinteger(L, 1, 1);
  MPI_Abort(MPI_COMM_WORLD, code);
  return 0;
}

/* Concerns added later define these; they are called when linked in. */
int lmpio_lua_datarep_open(lua_State *L) __attribute__((weak));

/* A misspelt option key is an error, not silently ignored (luaposix). */
void lmpio_lua_checkfields(lua_State *L, int idx, const char *const *names) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; names[i]; i++)
        if (strcmp(lua_tostring(L, -2), names[i]) == 0) ok = 1;
    if (!ok) {
      lua_pop(L, 1);
      luaL_argerror(L, idx, lua_pushfstring(L, "unknown field '%s'", luaL_tolstring(L, -1, NULL)));
    }
    lua_pop(L, 1);
  }
}

LUAMOD_API int luaopen_lmpio(lua_State *L) {
  init_mpi(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, SENTINEL_KEY) == LUA_TNIL) {
    void **owner = lua_newuserdatauv(L, sizeof(void *), 0);
    *owner = lmpio_lua_owner(L);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, SENTINEL_KEY);
    states++;
  }
  lua_pop(L, 1);

  lua_newtable(L);
  lmpio_lua_error_open(L);
  lmpio_lua_datatype_open(L);
  lmpio_lua_buffer_open(L);
  lmpio_lua_comm_open(L);
  lmpio_lua_file_open(L);
  lmpio_lua_request_open(L);
  if (lmpio_lua_datarep_open) lmpio_lua_datarep_open(L);

  static const luaL_Reg funcs[] = {
    {"wtime", l_wtime}, {"wtick", l_wtick}, {"abort", l_abort}, {NULL, NULL},
  };
  lmpio_lua_setfuncs(L, funcs);
  lua_pushliteral(L, LMPIO_VERSION);
  lua_setfield(L, -2, "version");
  return 1;
}
