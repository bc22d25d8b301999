/* The Lua module's MPI lifetime: MPI initialised by require "lmpio", how the
 * script ends (finished, or failed on one rank of a job: then the job is
 * aborted), the exit functions of the concerns (closing the files left
 * open) and MPI_Finalize at exit; the functions of the MPI environment
 * (lmpio.wtime, lmpio.wtick, lmpio.abort).
 *
 * Exit happens when the lua_State closes (a sentinel object's __gc; lua5.4
 * closes its state at the end of a script) or, for os.exit without closing
 * the state, from an atexit handler. */
#include "error.h"
#include "lifetime.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL_KEY "lmpio.sentinel"

static int we_initialized;  /* MPI_Init was ours: finalise at exit */
/* How the script ends.  In a job of several ranks, a rank whose script ends
 * with an uncaught error (or os.exit with a failure status) must not run
 * the collective close of its open files nor MPI_Finalize: the other ranks
 * would never join them.  It aborts the job instead (after lua5.4 printed
 * the error and its traceback), as python -m mpi4py does.
 *
 * Telling the two apart costs the script nothing (no hook on its calls):
 * lua5.4 (lua.c's docall) runs the script's main chunk under lua_pcall with
 * its message handler in the slot just below the chunk, in the frame of the
 * C function at the bottom of the stack (pmain).  Lua calls that handler
 * only for an error that no pcall of the script catches (every pcall sets a
 * handler of its own), so the module puts in that slot a handler that notes
 * the failure and makes the same message and traceback.  Required with `lua5.4 -l lmpio`, before the
 * script's chunk exists, a call hook waits for it once and goes away.  A
 * host that runs its chunk otherwise is not watched: its ending counts as
 * finished (as does an out-of-memory error, for which Lua calls no handler). */
static int watching;        /* the script's handler is wrapped */
static int failed;          /* an uncaught error reached it */
static int exit_called;     /* os.exit(success) */
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

static int world_size(void) {
  int init = 0, fin = 0, n = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static void abort_job(const char *why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fflush(stdout);
  fprintf(stderr, "lmpio: rank %d of %d %s; aborting the job (MPI_Abort)\n", rank, world_size(), why);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Whether this rank is leaving because its script failed. */
static int failed_exit(void) { return failed && world_size() > 1; }

/* The script's message handler: an error that reaches it is uncaught.  It
 * makes the message as lua.c's own does (its source is the reference): a
 * string or what __tostring makes of the error object, a traceback after a
 * string; calling the original from here would add this frame to it. */
static int uncaught(lua_State *L) {
  failed = 1;
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  /* lua.c prints what this returns and nothing else: one message, one
   * traceback (an lmpio error object gets one too, unlike lua.c's own
   * handler, and abort_job prints none again: issue 32) */
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Whether the frame at level of thread m is a main chunk run by the C
 * function at the bottom of the stack (lua.c's pmain, at level + 1); then
 * wraps the message handler, in the slot of that C frame just below the
 * chunk's function (a vararg chunk's frame starts higher up: the slot where
 * it was called is the first one that holds it). */
static int wrap_handler(lua_State *m, int level) {
  lua_Debug ar, below;
  if (!lua_getstack(m, level, &ar) || !lua_getinfo(m, "Sf", &ar)) return 0;
  int chunk = lua_gettop(m);
  if (strcmp(ar.what, "main") != 0 || !lua_getstack(m, level + 1, &below) || lua_getstack(m, level + 2, &ar) ||
      !lua_getinfo(m, "S", &below) || strcmp(below.what, "C") != 0) {
    lua_pop(m, 1);
    return 0;
  }
  int n = 0, at = 0;
  while (!at && lua_getlocal(m, &below, n + 1)) {
    n++;
    if (lua_rawequal(m, -1, chunk)) at = n;
    lua_pop(m, 1);
  }
  lua_pop(m, 1); /* the chunk */
  if (at < 2 || !lua_getlocal(m, &below, at - 1)) return 0;
  int handler = lua_iscfunction(m, -1) && lua_tocfunction(m, -1) != uncaught;
  lua_pop(m, 1);
  if (!handler) return 0;
  lua_pushcfunction(m, uncaught);
  if (!lua_setlocal(m, &below, at - 1)) {
    lua_pop(m, 1);
    return 0;
  }
  watching = 1;
  return 1;
}

/* `lua5.4 -l lmpio script.lua`: the script's chunk is called later; a call
 * hook catches that call and goes away. */
static void wait_for_chunk(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (wrap_handler(L, 0)) lua_sethook(L, NULL, 0, 0);
}

static void watch_main(lua_State *L) {
  /* (with one rank too: its uncaught error object gets its traceback) */
  if (watching) return;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State *m = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!m) return;
  lua_Debug ar;
  int depth = 0;
  while (lua_getstack(m, depth + 1, &ar)) depth++;
  /* the outermost Lua frame sits just above the bottom C frame */
  if (depth >= 1 && wrap_handler(m, depth - 1)) return;
  /* required by -l: C frames only (require below pmain), no chunk yet */
  for (int level = 0; level <= depth; level++)
    if (!lua_getstack(m, level, &ar) || !lua_getinfo(m, "S", &ar) || strcmp(ar.what, "C") != 0) return;
  if (depth >= 1 && lua_gethook(m) == NULL) lua_sethook(m, wait_for_chunk, LUA_MASKCALL, 0);
}

/* os.exit([code [, close]]): a failure on one rank of a job ends the job; a
 * success exits as usual (the other ranks are expected to finish too). */
static int l_os_exit(lua_State *L) {
  int ok = lua_isboolean(L, 1) ? lua_toboolean(L, 1) : lmpio_lua_optinteger(L, 1, 0) == 0;
  if (!ok && world_size() > 1) abort_job("called os.exit with a failure status");
  exit_called = 1;
  failed = 0;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

static void wrap_os_exit(lua_State *L) {
  if (lua_getglobal(L, "os") != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, "exit");
  if (lua_tocfunction(L, -1) == l_os_exit || !lua_isfunction(L, -1)) {
    lua_pop(L, 2);
    return;
  }
  lua_pushcclosure(L, l_os_exit, 1);
  lua_setfield(L, -2, "exit");
  lua_pop(L, 1);
}

int lmpio_lua_failing(void) { return failed_exit(); }

void lmpio_lua_abort(const char *why) { abort_job(why); }

static void run_exit_fns(const void *owner) {
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
  if (failed_exit()) abort_job("ended with an uncaught error (reported above)");
  if (watching && !exit_called && world_size() > 1) abort_job("exited without finishing its script");
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
  if (failed_exit()) abort_job("ended with an uncaught error (reported above)");
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
  if (fin) return lmpio_lua_error(L, MPI_ERR_OTHER, "lmpio: MPI was already finalized");
  if (!init) {
    promote_libmpi();
    int provided = 0;
    /* MPI_THREAD_MULTIPLE: the core's worker threads complete the requests
     * of nonblocking calls while the script computes (with less, those
     * calls complete in the call that starts them). */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return lmpio_lua_error(L, MPI_ERR_OTHER, "lmpio: MPI_Init failed");
    we_initialized = 1;
    /* Errors become Lua errors, not aborts. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    atexit(at_process_exit);
  }
  return 0;
}

/***
Wall-clock time, as `MPI_Wtime`.
@function lmpio.wtime
@treturn number seconds since some time in the past (differences measure elapsed
  time)
*/
static int l_wtime(lua_State *L) {
  lua_pushnumber(L, MPI_Wtime());
  return 1;
}

/***
Resolution of `lmpio.wtime`, as `MPI_Wtick`.
@function lmpio.wtick
@treturn number seconds between successive ticks of the clock
*/
static int l_wtick(lua_State *L) {
  lua_pushnumber(L, MPI_Wtick());
  return 1;
}

/***
Ends the whole job at once, as `MPI_Abort` on `lmpio.world`: every rank
stops, no file is closed, nothing collective runs.
@function lmpio.abort
@tparam[opt=1] integer code exit status handed to `MPI_Abort`
@return never returns
*/
static int l_abort(lua_State *L) {
  lmpio_lua_running(L);
  int code = (int)lmpio_lua_optinteger(L, 1, 1);
  MPI_Abort(MPI_COMM_WORLD, code);
  return 0;
}

/* require "lmpio": MPI initialised, the script's end watched, os.exit
 * wrapped, and the sentinel of this lua_State made (before any file of it,
 * so that its finalizer runs after theirs). */
int lmpio_lua_lifetime_open(lua_State *L) {
  init_mpi(L);
  watch_main(L);
  wrap_os_exit(L);
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
  return 0;
}

/* The module's functions of the MPI environment, and its version. */
int lmpio_lua_environment_open(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"wtime", l_wtime}, {"wtick", l_wtick}, {"abort", l_abort}, {NULL, NULL},
  };
  lmpio_lua_setfuncs(L, funcs);
  lua_pushliteral(L, LMPIO_VERSION);
  lua_setfield(L, -2, "version");
  return 0;
}
