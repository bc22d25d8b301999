/* Files: lmpio.open, lmpio.delete and every method of the core under its MPI
 * name (fh:set_view, fh:read_at_all, fh:write_ordered, ...).
 *
 * Nonblocking calls (fh:iread_at, ...) return an lmpio.request (lua/request.c).
 *
 * A file handle is a userdata whose closed state is fh == NULL.  Open files
 * stay referenced from the registry (so __gc never closes an open file, which
 * would be a collective call) until fh:close() or __close; files still open at
 * exit are closed by every rank in the order they were opened. */
#include "error.h"
#include "watch.h"
#include "helpers.h"
#include "lifetime.h"
#include "datatype.h"
#include "buffer.h"
#include "agree.h"
#include "comm.h"
#include "fileobj.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define OPEN_KEY "lmpio.open_files" /* registry: lightuserdata -> file object */

#define checkfile lmpio_lua_checkfile
#define checkoffset lmpio_lua_checkoffset
#define tofile lmpio_lua_tofile

static lfile *open_head, *open_tail;

static void unlink_open(lfile *f) {
  if (f->prev) f->prev->next = f->next;
  else if (open_head == f) open_head = f->next;
  if (f->next) f->next->prev = f->prev;
  else if (open_tail == f) open_tail = f->prev;
  f->prev = f->next = NULL;
}

/* Closes, in opening order, every file still open (of owner, or all).  The
 * core is told the script ended (lmpio_set_exiting): a rank whose script
 * ended while others went on to another collective call on the file fails
 * the close with a message saying so, and so do they.  In a job of several
 * ranks a close that fails here (that mismatch, or a file still in use by a
 * call this rank left with os.exit from a converter) aborts the job with
 * the message: going on to MPI_Finalize would leave the others waiting. */
static void close_open_files(const void *owner) {
  int fin = 1;
  MPI_Finalized(&fin);
  if (lmpio_lua_failing()) return; /* the job is being aborted: nothing collective */
  lfile *f = open_head;
  while (f) {
    lfile *next = f->next;
    if (!owner || f->owner == owner) {
      unlink_open(f);
      if (f->fh != LMPIO_FILE_NULL && !fin) {
        lmpio_set_exiting(1);
        int rc = lmpio_file_close(&f->fh);
        lmpio_set_exiting(0);
        if (rc != MPI_SUCCESS) {
          int n = f->nranks;
          char why[1200];
          snprintf(why, sizeof why, "could not close a file left open at exit: %s", lmpio_last_error_message());
          if (n > 1) lmpio_lua_abort(why);
          fprintf(stderr, "lmpio: closing a file left open at exit: %s\n", lmpio_last_error_message());
        }
      }
      f->fh = LMPIO_FILE_NULL;
    }
    f = next;
  }
}

/* ---- open / close / delete ----------------------------------------------- */

/* A file name: a string without embedded NUL (which would cut it short). */
static const char *checkpath(lua_State *L, int arg) {
  size_t len;
  const char *path = lmpio_lua_checklstring(L, arg, &len);
  if (strlen(path) != len) lmpio_lua_argerror(L, arg, "file name contains an embedded NUL");
  return path;
}

/* lmpio.open([comm,] path, amode [, info]), once the communicator is known
 * (l_open, below, agrees on argument errors). */
static int open_checked(lua_State *L) {
  lua_settop(L, 4);
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  const char *path = checkpath(L, 2);
  int amode = lmpio_lua_checkamode(L, 3);
  int std = strcmp(path, "-") == 0;
  if (std) { /* "-": rank 0's standard output (writing) or input (reading), a stream */
    if (amode & MPI_MODE_RDWR) lmpio_lua_argerror(L, 3, "\"-\" (a standard stream) is either read or written, not both");
    path = (amode & MPI_MODE_RDONLY) ? "/dev/stdin" : "/dev/stdout";
    amode = (amode & ~(MPI_MODE_CREATE | MPI_MODE_APPEND | MPI_MODE_EXCL)) | MPI_MODE_SEQUENTIAL;
    lua_pushstring(L, path);
    lua_replace(L, 2);
  } else if (!(amode & MPI_MODE_RDWR)) {
    /* A FIFO or a socket read or written ("r", "w", "a") is a stream, as
     * io.open would take it: opened sequential, never truncated. */
    struct stat sb;
    if (stat(path, &sb) == 0 && (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
      amode = (amode & ~(MPI_MODE_CREATE | MPI_MODE_APPEND | MPI_MODE_EXCL)) | MPI_MODE_SEQUENTIAL;
      std = 1;
    }
  }
  /* Every Lua object first, then the info (freed on every path below). */
  lfile *f = lua_newuserdatauv(L, sizeof *f, NUV);
  memset(f, 0, sizeof *f);
  f->owner = lmpio_lua_owner(L);
  luaL_setmetatable(L, LMPIO_LUA_FILE);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, -2, UV_PATH);
  lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  int fidx = lua_absindex(L, -2);
  MPI_Info info = lmpio_lua_checkinfo(L, 4);
  int rc;
  MPI_Comm_size(comm, &f->nranks);
  LMPIO_LUA_CORE(L, rc, lmpio_file_open(comm, path, amode, info, &f->fh));
  lmpio_lua_freeinfo(&info);
  lmpio_lua_check(L, rc);
  /* Keep it referenced until closed (no allocation failure can leave it open:
   * the registry table slot is set with the table already existing). */
  f->prev = open_tail;
  if (open_tail) open_tail->next = f;
  else open_head = f;
  open_tail = f;
  lua_pushlightuserdata(L, f);
  lua_pushvalue(L, fidx);
  lua_rawset(L, -3);
  /* "w" and "w+" truncate, as io.open does: once, collectively, when every
   * rank asked for it (ranks that disagree get MPI_ERR_NOT_SAME, and the
   * file is closed again). */
  int trunc[2] = {lmpio_lua_truncating_mode(L, 3) && !std, 0};
  trunc[1] = -trunc[0];
  int agreed[2] = {0, 0};
  if (f->nranks > 1) LMPIO_LUA_WAIT(L, "open", rc, MPI_Allreduce(trunc, agreed, 2, MPI_INT, MPI_MAX, comm));
  else memcpy(agreed, trunc, sizeof agreed);
  if (agreed[0] != -agreed[1]) {
    LMPIO_LUA_CORE(L, rc, lmpio_file_close(&f->fh)); /* the mismatch is the error raised */
    (void)rc;
    f->fh = LMPIO_FILE_NULL;
    unlink_open(f);
    return lmpio_lua_raise(L, MPI_ERR_NOT_SAME, "lmpio.open: some ranks passed \"w\"/\"w+\" (truncate) and others a mode that keeps the contents");
  }
  if (agreed[0]) {
    LMPIO_LUA_CORE(L, rc, lmpio_file_set_size(f->fh, 0));
    lmpio_lua_check(L, rc);
  }
  lua_pop(L, 1);
  return 1;
}


/* lmpio.open: collective, so an argument error on one rank fails the open
 * on every rank (see collective_call below). */
/***
Opens a file on every rank of a communicator (`MPI_File_open`); collective.
@function lmpio.open
@tparam[opt=lmpio.world] comm comm the ranks that open the file together
  (may be left out: `lmpio.open(path, mode)`)
@tparam string path the file's name (the same on every rank)
@param mode the access mode, the same on every rank: a string as for
  `io.open` (`"r"`, `"r+"`, `"w"`, `"w+"`, `"a"`, `"a+"`: `"w"` and `"w+"`
  truncate), words (`"rdwr create"`, `"wronly|create|excl"`,
  `"w+ delete_on_close"`), a table of words (`{"rdwr", "create"}`,
  `{rdwr = true}`) or an integer of OR-ed `lmpio.MODE_*` (see @{modes.md|modes, options and constants})
@tparam[opt] {[string]=string,...} info hints, such as
  `{cb_buffer_size = "1048576"}` (numbers and booleans are turned into
  strings)
@treturn file the open file

The path `"-"` is rank 0's standard output when the mode writes (`"w"`,
`"a"`) and its standard input when it reads (`"r"`), as Unix tools do;
it is opened as a stream (`sequential`: @{file:write_ordered},
@{file:write_shared}, @{file:read_ordered}, @{file:read_shared},
@{file:records_ordered}), whose bytes all go through rank 0 in order.
A FIFO or a socket opened `"r"`, `"w"` or `"a"` is a stream too (opened
`sequential`, not truncated); terminals and other character devices are
opened so with the `sequential` word (`"wronly sequential"`,
`"rdonly sequential"`).  Rank 0's `io.stdout` is
flushed before the file writes, so what `print` wrote comes first.
@raise an @{error} object, the same on every rank: `MPI_ERR_NO_SUCH_FILE`,
  `MPI_ERR_ACCESS`, `MPI_ERR_FILE_EXISTS` (with `excl`), `MPI_ERR_AMODE`
  (an invalid combination of modes), `MPI_ERR_NOT_SAME` (ranks gave
  different modes, or some truncate and others not), `MPI_ERR_INFO_VALUE`
  (a hint with an invalid value), `MPI_ERR_ARG` (a wrong argument on any rank)
@usage
local fh <close> = lmpio.open(lmpio.world, "/tmp/out.dat", "w+")
*/
static int l_open(lua_State *L) {
  lmpio_lua_running(L);
  int inserted = lua_type(L, 1) == LUA_TSTRING;
  if (inserted) { /* the communicator defaults to world */
    lua_getfield(L, lua_upvalueindex(1), "world");
    lua_insert(L, 1);
  }
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int shift = lmpio_lua_argshift;
  lmpio_lua_argshift = inserted; /* argument numbers as the script gave them */
  int n = lmpio_lua_collective_pcall(L, open_checked, NULL);
  lmpio_lua_argshift = shift;
  if (n >= 0) return 1;
  if (!lmpio_lua_isargerror(L, -1)) return lua_error(L);
  const char *msg = lmpio_lua_errormessage(L, -1);
  lmpio_fail_next_collective(MPI_ERR_ARG, msg);
  lmpio_file dummy = LMPIO_FILE_NULL;
  if (lmpio_file_open(comm, "?", MPI_MODE_RDONLY, MPI_INFO_NULL, &dummy) == MPI_SUCCESS)
    lmpio_file_close(&dummy); /* cannot happen: the open fails on every rank */
  return lmpio_lua_raise(L, MPI_ERR_ARG, msg);
}

/***
Opens rank 0's standard output as a stream (a shortcut for
`lmpio.open(comm, "-", "w")`); collective.  What the ranks write with
@{file:write_ordered} comes out in rank order, as one process would have
written it; @{file:write_shared} writes whole records in some order.
A reader that has gone (`| head`) makes the writes fail with
`MPI_ERR_IO` on every rank.  In a pipeline, start the program with
`lmpio run` (the `lmpio` command) rather than plain `mpirun`: Open MPI 4.1's
`mpirun` crashes in some runs forwarding standard input and output.
@function lmpio.stdout
@tparam[opt=lmpio.world] comm comm the ranks that write
@treturn file the open stream
@raise an @{error} object, the same on every rank, when the open fails
@usage
local out <close> = lmpio.stdout()
out:write_ordered(("line from rank %d\n"):format(lmpio.world:rank()))
*/
static int l_stdout(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 1);
  if (lua_isnil(L, 1)) lua_pop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_pushstring(L, "-");
  lua_pushstring(L, "w");
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/***
Opens rank 0's standard input as a stream (a shortcut for
`lmpio.open(comm, "-", "r")`); collective.  @{file:read_ordered} hands
each rank the next bytes in rank order (a short count at the end of
input); @{file:records_ordered} hands out whole lines.
@function lmpio.stdin
@tparam[opt=lmpio.world] comm comm the ranks that read
@treturn file the open stream
@raise an @{error} object, the same on every rank, when the open fails
@usage
local input <close> = lmpio.stdin()
for lines in input:records_ordered() do io.write(lines:upper()) end
*/
static int l_stdin(lua_State *L) {
  lmpio_lua_running(L);
  lua_settop(L, 1);
  if (lua_isnil(L, 1)) lua_pop(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_pushstring(L, "-");
  lua_pushstring(L, "r");
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

static int dropfile(lua_State *L, lfile *f) {
  unlink_open(f);
  lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  lua_pushlightuserdata(L, f);
  lua_pushnil(L);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setiuservalue(L, 1, UV_SPLIT);
  return 0;
}

/* fh:close(): collective; closing a closed file does nothing. */
/***
Closes the file (`MPI_File_close`); collective.  Closing a closed file
does nothing.  With `delete_on_close` the file is deleted.  A close that
fails after it went ahead still closes the file; a close that is refused
(a call in progress uses the file) leaves it open.
@function file:close
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_FILE` ("in use") when called from a converter inside a
  call on this file
*/
static int f_close(lua_State *L) {
  lfile *f = tofile(L);
  lmpio_lua_running(L);
  if (f->fh == LMPIO_FILE_NULL) return 0;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_close(&f->fh));
  /* The core frees the handle once the close went ahead, even when it
   * failed; it keeps it when it refused (a call in progress uses it, a
   * pending failure): the file is still open then.  Every pending call on
   * it has finished: their data is the script's again. */
  if (f->fh == LMPIO_FILE_NULL) {
    lmpio_lua_unhold_file(L, 1);
    dropfile(L, f);
  }
  lmpio_lua_check(L, rc);
  return 0;
}

/* __close: as fh:close() when the scope ends normally.  Leaving it with an
 * error must not start the collective close, which the other ranks may
 * never join: the file stays open; an uncaught error then aborts the job
 * (lmpio.c), a caught one leaves it to fh:close() or the exit. */
/***
Closes the file when a `<close>` variable holding it goes out of scope
normally, as @{file:close} (collective).  When the scope is left with an
error in a job of several ranks the file stays open, since the other ranks
may never join the close; an uncaught error then aborts the job.
@function file:__close
*/
static int f_close_meta(lua_State *L) {
  lfile *f = tofile(L);
  if (!lua_isnoneornil(L, 2) && f->nranks > 1) return 0;
  lua_settop(L, 1);
  return f_close(L);
}

/* __gc: an open file is still in the registry, so it can only be collected
 * when the whole lua_State closes, i.e. at exit: then every rank closes
 * every file it left open, in opening order. */
static int f_gc(lua_State *L) {
  lfile *f = tofile(L);
  if (f->fh != LMPIO_FILE_NULL) close_open_files(f->owner);
  return 0;
}

static int f_tostring(lua_State *L) {
  lfile *f = tofile(L);
  if (f->fh == LMPIO_FILE_NULL) {
    lua_pushliteral(L, "lmpio.file (closed)");
  } else {
    lua_getiuservalue(L, 1, UV_PATH);
    lua_pushfstring(L, "lmpio.file (\"%s\"): %p", lua_tostring(L, -1), (void *)f);
  }
  return 1;
}

/* lmpio.delete(path [, info]) */
/***
Deletes a file (`MPI_File_delete`), and what a crashed job left of its
shared file pointer.  Not collective.
@function lmpio.delete
@tparam string path the file's name
@tparam[opt] {[string]=string,...} info hints (none used)
@raise an @{error} object: `MPI_ERR_NO_SUCH_FILE`, `MPI_ERR_ACCESS`,
  `MPI_ERR_FILE_IN_USE`, `MPI_ERR_IO`
*/
static int l_delete(lua_State *L) {
  lmpio_lua_running(L);
  const char *path = checkpath(L, 1);
  MPI_Info info = lmpio_lua_checkinfo(L, 2);
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_delete(path, info));
  lmpio_lua_freeinfo(&info);
  lmpio_lua_check(L, rc);
  return 0;
}

/***
Whether two paths name the same file: the same device and inode, symbolic
links followed, so a hard link, a symbolic link or another spelling of a
path is the same file.  A path that does not exist names no file (false).
Local (no MPI call); a tool that writes `b` after reading `a` asks it before
truncating `b` (`lmpio convert` does).
@function lmpio.same_file
@tparam string a a path
@tparam string b another path
@treturn boolean
*/
static int l_same_file(lua_State *L) {
  const char *a = checkpath(L, 1), *b = checkpath(L, 2);
  struct stat sa, sb;
  lua_pushboolean(L, stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
  return 1;
}

/* ---- file manipulation ----------------------------------------------------- */

/***
The size of the file in bytes (`MPI_File_get_size`).
@function file:get_size
@treturn integer bytes
@raise an @{error} object when the call fails
*/
static int f_get_size(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset n = 0;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_size(fh, &n));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/***
Truncates or extends the file to a size in bytes (`MPI_File_set_size`);
collective, with the same size on every rank.
@function file:set_size
@tparam integer size the new size in bytes
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_NOT_SAME` when the sizes differ, `MPI_ERR_READ_ONLY` on a
  file opened read-only, `MPI_ERR_UNSUPPORTED_OPERATION` on a `sequential`
  file
*/
static int f_set_size(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset n = checkoffset(L, 2);
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_set_size(fh, n));
  lmpio_lua_check(L, rc);
  return 0;
}

/***
Makes sure the first size bytes of the file are allocated on storage
(`MPI_File_preallocate`); collective.  The file grows to at least size.
@function file:preallocate
@tparam integer size bytes to allocate
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
static int f_preallocate(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset n = checkoffset(L, 2);
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_preallocate(fh, n));
  lmpio_lua_check(L, rc);
  return 0;
}

/***
Flushes what this rank wrote to storage and makes other ranks' writes
visible after the matching sync (`MPI_File_sync`); collective.
@function file:sync
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
static int f_sync(lua_State *L) {
  lmpio_file fh = checkfile(L);
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_sync(fh));
  lmpio_lua_check(L, rc);
  return 0;
}

/* fh:get_group() -> table of the ranks in lmpio.world of the file's group
 * (indexed from 1 by group rank + 1), size */
/***
The ranks that opened the file (`MPI_File_get_group`).
@function file:get_group
@treturn {integer,...} the rank in `lmpio.world` of each rank of the file's
  group, indexed by group rank + 1
@treturn integer the number of ranks in the group
@raise an @{error} object when the call fails
*/
static int f_get_group(lua_State *L) {
  lmpio_file fh = checkfile(L);
  int wsize = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  lua_newtable(L);
  lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, MPI_INT, (size_t)wsize * 2);
  MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_group(fh, &g));
  lmpio_lua_check(L, rc);
  int n = 0;
  MPI_Group_size(g, &n);
  if (n > wsize) {
    MPI_Group_free(&g);
    return lmpio_lua_error(L, MPI_ERR_INTERN, "get_group: the file's group is larger than lmpio.world");
  }
  int *in = (int *)b->data, *out = in + n;
  for (int i = 0; i < n; i++) in[i] = i;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int mrc = MPI_Group_translate_ranks(g, n, in, wg, out);
  MPI_Group_free(&wg);
  MPI_Group_free(&g);
  lmpio_lua_checkmpi(L, mrc, "MPI_Group_translate_ranks");
  lua_pop(L, 1);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, out[i] == MPI_UNDEFINED ? -1 : out[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushinteger(L, n);
  return 2;
}

/* fh:get_amode() -> integer, "rdwr,create" */
/***
The access mode the file was opened with (`MPI_File_get_amode`).
@function file:get_amode
@treturn integer the OR-ed `lmpio.MODE_*` bits
@treturn string the same as words, e.g. `"rdwr,create"`
@raise an @{error} object when the call fails
*/
static int f_get_amode(lua_State *L) {
  lmpio_file fh = checkfile(L);
  int amode = 0, rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_amode(fh, &amode));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, amode);
  lmpio_lua_pushamode(L, amode);
  return 2;
}

/***
Sets hints (`MPI_File_set_info`); collective.  Keys lmpio does not know
are ignored; see @{modes.md|modes, options and constants} for those it knows.
@function file:set_info
@tparam {[string]=string,...} info hints (numbers and booleans are turned
  into strings)
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_INFO_VALUE` for a value that is not valid for its
  key, `MPI_ERR_NOT_SAME` for a hint that must be the same on every rank
*/
static int f_set_info(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Info info = lmpio_lua_checkinfo(L, 2);
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_set_info(fh, info));
  lmpio_lua_freeinfo(&info);
  lmpio_lua_check(L, rc);
  return 0;
}

/***
The hints in effect (`MPI_File_get_info`), with their defaults.
@function file:get_info
@treturn {[string]=string,...} every hint lmpio knows, and `lmpio_version`
@raise an @{error} object when the call fails
*/
static int f_get_info(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Info info = MPI_INFO_NULL;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_info(fh, &info));
  lmpio_lua_check(L, rc);
  /* Pushing may raise (memory): read the info into Lua, then free it. */
  int st = lua_checkstack(L, 4);
  if (!st) { MPI_Info_free(&info); return lmpio_lua_error(L, MPI_ERR_NO_MEM, "stack overflow"); }
  lmpio_lua_pushinfo(L, info);
  MPI_Info_free(&info);
  return 1;
}

/***
Statistics of this process's calls on the file (`lmpio_file_get_stats`, an
lmpio extension; local): calls by kind, bytes and time, and the path each
byte took.  Names are Darshan's where one fits (`POSIX_READS`,
`POSIX_BYTES_WRITTEN`, `MPIIO_INDEP_READS`, `MPIIO_COLL_WRITES`,
`MPIIO_SPLIT_READS`, `MPIIO_NB_WRITES`, `MPIIO_BYTES_READ`,
`MPIIO_F_WRITE_TIME`, ...), lmpio's own for the paths
(`LMPIO_DIRECT_BYTES_READ`, `LMPIO_SIEVED_BYTES_READ`,
`LMPIO_SIEVE_READ_AMPLIFICATION`, `LMPIO_TWOPHASE_BYTES_WRITTEN`,
`LMPIO_STREAM_BYTES_READ`, `LMPIO_LOCKS`, `LMPIO_F_LOCK_TIME`, ...); the
README's "Statistics" lists them all.
@function file:stats
@treturn {[string]=number,...} counts as integers, times (`_TIME`) in
  seconds and ratios (`_AMPLIFICATION`) as floats
@raise an @{error} object when the call fails
*/
static int f_stats(lua_State *L) {
  lmpio_file fh = checkfile(L);
  double v[128];
  int n = 0, rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_stats(fh, v, 128, &n));
  lmpio_lua_check(L, rc);
  if (n > 128) n = 128;
  lua_createtable(L, 0, n);
  for (int i = 0; i < n; i++) {
    const char *name = lmpio_stats_name(i);
    size_t len = strlen(name);
    int real = (len > 5 && strcmp(name + len - 5, "_TIME") == 0) ||
               (len > 14 && strcmp(name + len - 14, "_AMPLIFICATION") == 0);
    if (real || v[i] != (double)(lua_Integer)v[i]) lua_pushnumber(L, (lua_Number)v[i]);
    else lua_pushinteger(L, (lua_Integer)v[i]);
    lua_setfield(L, -2, name);
  }
  return 1;
}

/***
Sets atomic mode (`MPI_File_set_atomicity`); collective, with the same
flag on every rank.  In atomic mode, conflicting accesses of different
ranks see each other whole.
@function file:set_atomicity
@tparam boolean flag true for atomic mode
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
static int f_set_atomicity(lua_State *L) {
  lmpio_file fh = checkfile(L);
  lmpio_lua_checkany(L, 2);
  int flag = lua_toboolean(L, 2), rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_set_atomicity(fh, flag));
  lmpio_lua_check(L, rc);
  return 0;
}

/***
Whether the file is in atomic mode (`MPI_File_get_atomicity`).
@function file:get_atomicity
@treturn boolean
@raise an @{error} object when the call fails
*/
static int f_get_atomicity(lua_State *L) {
  lmpio_file fh = checkfile(L);
  int flag = 0, rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_atomicity(fh, &flag));
  lmpio_lua_check(L, rc);
  lua_pushboolean(L, flag);
  return 1;
}

/* ---- views ----------------------------------------------------------------- */

/* fh:set_view(disp, etype, filetype, datarep, info) or fh:set_view{disp=,
 * etype=, filetype=, datarep=, info=}; defaults: 0, BYTE, etype, "native".
 * disp may be lmpio.DISPLACEMENT_CURRENT. */
/***
Sets this rank's view of the file (`MPI_File_set_view`); collective.
The view is the displacement, the etype (the unit of offsets and counts),
the filetype (tiled over the file from the displacement: the parts it
covers are what this rank sees) and the data representation.  Resets the
individual and shared file pointers to 0.  Also
`fh:set_view{disp = d, etype = e, filetype = f, datarep = r, info = i}`
(another key is an error).
@function file:set_view
@tparam[opt=0] integer disp the displacement in bytes, or
  `lmpio.DISPLACEMENT_CURRENT` (files opened `sequential`)
@tparam[opt=lmpio.BYTE] datatype etype the elementary type (the same size
  on every rank for the shared pointer calls)
@tparam[opt=etype] datatype filetype the filetype: etype or a type built of
  etypes
@tparam[opt="native"] string datarep `"native"`, `"internal"`,
  `"external32"` or a name given to @{lmpio.register_datarep}, the same on
  every rank
@tparam[opt] {[string]=string,...} info hints
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_UNSUPPORTED_DATAREP` for an unknown representation,
  `MPI_ERR_TYPE` for an invalid etype or filetype, `MPI_ERR_NOT_SAME`
@usage fh:set_view(rank * 8, lmpio.DOUBLE, lmpio.type.resized(lmpio.DOUBLE, 0, size * 8))
*/
static int f_set_view(lua_State *L) {
  lmpio_file fh = checkfile(L);
  if (lua_type(L, 2) == LUA_TTABLE) {
    static const char *const names[] = {"disp", "etype", "filetype", "datarep", "info", NULL};
    lmpio_lua_checkfields(L, 2, names);
    lua_settop(L, 2);
    for (int i = 0; i < 5; i++) lua_getfield(L, 2, names[i]);
    lua_remove(L, 2);
  }
  MPI_Offset disp = lua_isnoneornil(L, 2) ? 0 : checkoffset(L, 2);
  MPI_Datatype etype = lmpio_lua_opttype(L, 3, MPI_BYTE);
  MPI_Datatype ftype = lmpio_lua_opttype(L, 4, etype);
  const char *rep = lmpio_lua_optstring(L, 5, "native");
  MPI_Info info = lmpio_lua_checkinfo(L, 6);
  int rc;
  /* An extent function written in Lua runs inside: it cannot free the types. */
  lmpio_lua_datatype *eo = lmpio_lua_totype(L, 3), *fo = lmpio_lua_totype(L, 4);
  lmpio_lua_type_use(eo);
  lmpio_lua_type_use(fo);
  LMPIO_LUA_CORE(L, rc, lmpio_file_set_view(fh, disp, etype, ftype, rep, info));
  lmpio_lua_type_unuse(fo);
  lmpio_lua_type_unuse(eo);
  lmpio_lua_freeinfo(&info);
  lmpio_lua_check(L, rc);
  return 0;
}

/* fh:get_view() -> disp, etype, filetype, datarep */
/***
The current view (`MPI_File_get_view`).
@function file:get_view
@treturn integer the displacement in bytes
@treturn datatype the etype (a copy for a derived type)
@treturn datatype the filetype (a copy for a derived type)
@treturn string the data representation
@raise an @{error} object when the call fails
*/
static int f_get_view(lua_State *L) {
  lmpio_file fh = checkfile(L);
  /* The objects that will own the returned handles, made first. */
  lmpio_lua_datatype *e = lmpio_lua_pushtype(L, MPI_DATATYPE_NULL, 1);
  lmpio_lua_datatype *t = lmpio_lua_pushtype(L, MPI_DATATYPE_NULL, 1);
  char rep[MPI_MAX_DATAREP_STRING + 1] = "";
  MPI_Offset disp = 0;
  MPI_Datatype et = MPI_DATATYPE_NULL, ft = MPI_DATATYPE_NULL;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_view(fh, &disp, &et, &ft, rep));
  if (rc == MPI_SUCCESS) {
    /* Derived types come back as new handles that we own; named ones not. */
    e->type = et;
    t->type = ft;
    e->owned = !lmpio_lua_isnamed(et);
    t->owned = !lmpio_lua_isnamed(ft);
  }
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)disp);
  lua_insert(L, -3);                          /* disp e t */
  if (!e->owned) { lmpio_lua_pushtype(L, et, 0); lua_replace(L, -3); }
  if (!t->owned) { lmpio_lua_pushtype(L, ft, 0); lua_replace(L, -2); }
  lua_pushstring(L, rep);
  return 4;
}

/***
The extent of a datatype in the file under the view's data representation
(`MPI_File_get_type_extent`).  For example 4 for `lmpio.LONG` in
`"external32"`; for a representation written in Lua, what its extent
function says.
@function file:get_type_extent
@tparam datatype datatype the type
@treturn integer its extent in the file, in bytes
@raise an @{error} object when the call fails
*/
static int f_get_type_extent(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Datatype t = lmpio_lua_checktype(L, 2);
  MPI_Aint ext = 0;
  int rc;
  lmpio_lua_datatype *to = lmpio_lua_totype(L, 2);
  lmpio_lua_type_use(to); /* an extent function written in Lua runs inside */
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_type_extent(fh, t, &ext));
  lmpio_lua_type_unuse(to);
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)ext);
  return 1;
}

/* ---- positioning ----------------------------------------------------------- */

static int checkwhence(lua_State *L, int idx) {
  static const char *const names[] = {"set", "cur", "end", NULL};
  static const int vals[] = {MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END};
  if (lua_isinteger(L, idx)) { /* lmpio.SEEK_SET ... */
    lua_Integer w = lua_tointeger(L, idx);
    for (int i = 0; i < 3; i++)
      if (w == vals[i]) return vals[i];
    lmpio_lua_argerror(L, idx, "invalid whence");
  }
  return vals[lmpio_lua_checkoption(L, idx, "set", names)];
}

/***
Moves this rank's individual file pointer (`MPI_File_seek`).
@function file:seek
@tparam[opt=0] integer offset in etypes of the view
@param[opt="set"] whence `"set"` (from the start of the view), `"cur"` (from
  the pointer), `"end"` (from the end of the file), or `lmpio.SEEK_SET`,
  `lmpio.SEEK_CUR`, `lmpio.SEEK_END`
@treturn integer the new position, in etypes of the view (as `io`'s
  `file:seek` returns it)
@raise an @{error} object: `MPI_ERR_ARG` for a position before the start of
  the view, `MPI_ERR_UNSUPPORTED_OPERATION` on a `sequential` file
*/
static int f_seek(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset off = lua_isnoneornil(L, 2) ? 0 : checkoffset(L, 2);
  int whence = checkwhence(L, 3), rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_seek(fh, off, whence));
  lmpio_lua_check(L, rc);
  /* as io's file:seek, the position it moved to (in etypes of the view) */
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_position(fh, &off));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)off);
  return 1;
}

/***
Moves the shared file pointer (`MPI_File_seek_shared`); collective, with
the same arguments on every rank.
@function file:seek_shared
@tparam[opt=0] integer offset in etypes of the view
@param[opt="set"] whence as for @{file:seek}
@treturn integer the new position of the shared pointer, in etypes of the view
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_NOT_SAME` when the ranks disagree
*/
static int f_seek_shared(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset off = lua_isnoneornil(L, 2) ? 0 : checkoffset(L, 2);
  int whence = checkwhence(L, 3), rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_seek_shared(fh, off, whence));
  lmpio_lua_check(L, rc);
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_position_shared(fh, &off));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)off);
  return 1;
}

/***
This rank's individual file pointer (`MPI_File_get_position`).
@function file:get_position
@treturn integer the offset, in etypes of the view
@raise an @{error} object when the call fails
*/
static int f_get_position(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset off = 0;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_position(fh, &off));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)off);
  return 1;
}

/***
The shared file pointer (`MPI_File_get_position_shared`).
@function file:get_position_shared
@treturn integer the offset, in etypes of the view
@raise an @{error} object when the call fails
*/
static int f_get_position_shared(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset off = 0;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_position_shared(fh, &off));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)off);
  return 1;
}

/***
The absolute byte position in the file of an offset of the view
(`MPI_File_get_byte_offset`).
@function file:get_byte_offset
@tparam integer offset in etypes of the view
@treturn integer the byte position
@raise an @{error} object when the call fails
*/
static int f_get_byte_offset(lua_State *L) {
  lmpio_file fh = checkfile(L);
  MPI_Offset off = checkoffset(L, 2), disp = 0;
  int rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_byte_offset(fh, off, &disp));
  lmpio_lua_check(L, rc);
  lua_pushinteger(L, (lua_Integer)disp);
  return 1;
}

/* How a rank whose arguments were wrong joins each collective method (see
 * lua/access.c). */
static int fail_view(lfile *f) { return lmpio_file_set_view(f->fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL); }
static int fail_size(lfile *f) { return lmpio_file_set_size(f->fh, 0); }
static int fail_info(lfile *f) { return lmpio_file_set_info(f->fh, MPI_INFO_NULL); }
static int fail_atomicity(lfile *f) { return lmpio_file_set_atomicity(f->fh, 0); }
static int fail_sync(lfile *f) { return lmpio_file_sync(f->fh); }
static int fail_seek_shared(lfile *f) { return lmpio_file_seek_shared(f->fh, 0, MPI_SEEK_SET); }
static int fail_close(lfile *f) { return lmpio_file_close(&f->fh); }
const lmpio_lua_file_method lmpio_lua_file_methods[] = {
  {"close", f_close, fail_close},
  {"set_size", f_set_size, fail_size}, {"preallocate", f_preallocate, fail_size},
  {"sync", f_sync, fail_sync}, {"set_info", f_set_info, fail_info},
  {"set_atomicity", f_set_atomicity, fail_atomicity}, {"set_view", f_set_view, fail_view},
  {"seek_shared", f_seek_shared, fail_seek_shared},
};

const size_t lmpio_lua_nfile_methods = sizeof lmpio_lua_file_methods / sizeof lmpio_lua_file_methods[0];

static void exit_hook(const void *owner) { close_open_files(owner); }

int lmpio_lua_file_open(lua_State *L) {
  if (luaL_newmetatable(L, LMPIO_LUA_FILE)) {
    static const luaL_Reg meta[] = {
      {"__gc", f_gc}, {"__close", f_close_meta}, {"__tostring", f_tostring}, {NULL, NULL},
    };
    /* the independent methods; collective and data access ones: add_methods */
    static const luaL_Reg methods[] = {
      {"get_size", f_get_size}, {"get_group", f_get_group}, {"get_amode", f_get_amode},
      {"get_info", f_get_info}, {"stats", f_stats}, {"get_atomicity", f_get_atomicity},
      {"get_view", f_get_view}, {"get_type_extent", f_get_type_extent},
      {"seek", f_seek}, {"get_position", f_get_position},
      {"get_position_shared", f_get_position_shared}, {"get_byte_offset", f_get_byte_offset},
      {NULL, NULL},
    };
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods); /* the collective and data access methods: lua/access.c */
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, OPEN_KEY) != LUA_TTABLE) {
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, OPEN_KEY);
  }
  lua_pop(L, 1);
  static int hooked;
  if (!hooked) {
    hooked = 1;
    lmpio_lua_atexit(exit_hook);
  }

  lua_pushvalue(L, -1); /* the module table, for lmpio.world */
  lua_pushcclosure(L, l_open, 1);
  lua_setfield(L, -2, "open");
  lua_pushcfunction(L, l_delete);
  lua_setfield(L, -2, "delete");
  lua_pushcfunction(L, l_same_file);
  lua_setfield(L, -2, "same_file");
  lua_getfield(L, -1, "open");
  lua_pushcclosure(L, l_stdout, 1);
  lua_setfield(L, -2, "stdout");
  lua_getfield(L, -1, "open");
  lua_pushcclosure(L, l_stdin, 1);
  lua_setfield(L, -2, "stdin");
  lmpio_lua_amode_constants(L);
  lua_pushinteger(L, (lua_Integer)MPI_DISPLACEMENT_CURRENT);
  lua_setfield(L, -2, "DISPLACEMENT_CURRENT");
  lua_pushinteger(L, MPI_SEEK_SET);
  lua_setfield(L, -2, "SEEK_SET");
  lua_pushinteger(L, MPI_SEEK_CUR);
  lua_setfield(L, -2, "SEEK_CUR");
  lua_pushinteger(L, MPI_SEEK_END);
  lua_setfield(L, -2, "SEEK_END");
  return 0;
}
