/* Files: lmpio.open, lmpio.delete and every method of the core under its MPI
 * name (fh:set_view, fh:read_at_all, fh:write_ordered, ...).
 *
 * Nonblocking calls (fh:iread_at, ...) return an lmpio.request (lua/request.c).
 *
 * A file handle is a userdata whose closed state is fh == NULL.  Open files
 * stay referenced from the registry (so __gc never closes an open file, which
 * would be a collective call) until fh:close() or __close; files still open at
 * exit are closed by every rank in the order they were opened. */
#include "lmpio_lua.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define OPEN_KEY "lmpio.open_files" /* registry: lightuserdata -> file object */

typedef struct lfile {
  lmpio_file fh;           /* LMPIO_FILE_NULL once closed */
  int nranks;              /* of the file's communicator */
  void *owner;             /* lmpio_lua_owner of the lua_State that opened it */
  struct lfile *prev, *next; /* open files, in the order they were opened */
} lfile;
/* User values of a file object: 1 the path, 2 the buffer of the split
 * collective in progress (kept alive until its _end). */
enum { UV_PATH = 1, UV_SPLIT = 2, NUV = 2 };

/***
An open file, made by @{lmpio.open}: the MPI-IO file handle, with every
`MPI_File_*` call as a method of the same name in lower case without the
prefix.  `tostring(fh)` names the path.  Declared `<close>`, a file is
closed when its scope ends normally; leaving the scope with an error keeps
it open (the collective close could hang) and an uncaught error then aborts
the job.  Files still open at exit are closed by every rank in the order
they were opened.  Using a closed file raises
`"attempt to use a closed file"`.

**Collective methods** (`close`, `set_size`, `preallocate`, `sync`,
`set_info`, `set_atomicity`, `set_view`, `seek_shared`, the `_all`,
`_ordered` and split collective data access methods, their `i` forms) must
be called by every rank of the file's communicator.  They succeed on every
rank or fail on every rank with the same error class; a wrong argument on
one rank raises an @{error} of class `MPI_ERR_ARG` on every rank.

**Offsets** are counted in etypes of the current view from its
displacement (byte offsets under the default view), from 0.

**Memory arguments** of the data access methods, called *data* below:

  * for writing: `data [, count [, datatype]]` where data is an @{array},
    a byte buffer or a string (its bytes, as `lmpio.CHAR`);
  * for reading: `buf [, count [, datatype]]` to read into an array or
    buffer, or `n [, datatype]` to read n items of datatype (default
    `lmpio.BYTE`) into a new array.

Count and datatype default to the array's length and element type; a
datatype alone means as many whole items as fit; an explicit count must
fit the array.  Reads return the array and the number of items of the
datatype read (fewer at the end of the file); writes return the number of
items written.  The `i` methods return a @{request} instead.

Errors of the file system and of the file model raise an @{error} object:
`MPI_ERR_NO_SUCH_FILE`, `MPI_ERR_ACCESS`, `MPI_ERR_NO_SPACE`,
`MPI_ERR_QUOTA`, `MPI_ERR_IO` from the system; `MPI_ERR_READ_ONLY`
(writing a file opened `"r"`), `MPI_ERR_ACCESS` (reading a file opened
`"w"`), `MPI_ERR_UNSUPPORTED_OPERATION` (an individual pointer call on a
`sequential` file),
`MPI_ERR_CONVERSION` (a conversion that failed), `MPI_ERR_ARG`,
`MPI_ERR_TYPE`, `MPI_ERR_NOT_SAME` (collective arguments that must match
and do not).
@type file
*/

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

static lfile *tofile(lua_State *L) { return luaL_checkudata(L, 1, LMPIO_LUA_FILE); }

static lmpio_file checkfile(lua_State *L) {
  lfile *f = tofile(L);
  lmpio_lua_running(L);
  if (f->fh == LMPIO_FILE_NULL) luaL_error(L, "attempt to use a closed file");
  return f->fh;
}

/* ---- access modes ------------------------------------------------------------ */

static const struct { const char *name; int bit; } modes[] = {
  {"rdonly", MPI_MODE_RDONLY}, {"rdwr", MPI_MODE_RDWR}, {"wronly", MPI_MODE_WRONLY},
  {"create", MPI_MODE_CREATE}, {"excl", MPI_MODE_EXCL},
  {"delete_on_close", MPI_MODE_DELETE_ON_CLOSE}, {"unique_open", MPI_MODE_UNIQUE_OPEN},
  {"sequential", MPI_MODE_SEQUENTIAL}, {"append", MPI_MODE_APPEND},
};
#define NMODES (sizeof modes / sizeof modes[0])

static const struct { const char *name; int amode; } short_modes[] = {
  {"r", MPI_MODE_RDONLY},
  {"r+", MPI_MODE_RDWR},
  {"rw", MPI_MODE_RDWR},
  {"w", MPI_MODE_WRONLY | MPI_MODE_CREATE},
  {"w+", MPI_MODE_RDWR | MPI_MODE_CREATE},
  {"a", MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_APPEND},
  {"a+", MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_APPEND},
};

/* One flag name: "rdwr", "RDWR", "MODE_RDWR", "MPI_MODE_RDWR". */
static int mode_bit(lua_State *L, int arg, const char *s, size_t len) {
  char w[32];
  if (len >= sizeof w) len = sizeof w - 1;
  for (size_t i = 0; i < len; i++) w[i] = (char)tolower((unsigned char)s[i]);
  w[len] = '\0';
  const char *n = w;
  for (size_t i = 0; i < sizeof short_modes / sizeof short_modes[0]; i++)
    if (strcmp(n, short_modes[i].name) == 0) return short_modes[i].amode;
  if (strncmp(n, "mpi_", 4) == 0) n += 4;
  if (strncmp(n, "mode_", 5) == 0) n += 5;
  for (size_t i = 0; i < NMODES; i++)
    if (strcmp(n, modes[i].name) == 0) return modes[i].bit;
  return luaL_argerror(L, arg, lua_pushfstring(L, "unknown access mode '%s' (expected rdonly, rdwr, wronly, "
                                               "create, excl, delete_on_close, unique_open, sequential, "
                                               "append, or one of r r+ w w+ a a+)", w));
}

/* amode: an integer of OR-ed lmpio.MODE_*; a string ("r", "w+", "rdwr create",
 * "wronly|create|excl"); or a table ({"rdwr", "create"} or {rdwr = true}). */
static int checkamode(lua_State *L, int arg) {
  switch (lua_type(L, arg)) {
  case LUA_TNUMBER: {
    lua_Integer v = luaL_checkinteger(L, arg);
    if (v < 0 || v > INT_MAX) luaL_argerror(L, arg, "invalid access mode");
    return (int)v;
  }
  case LUA_TSTRING: {
    const char *s = lua_tostring(L, arg);
    for (size_t i = 0; i < sizeof short_modes / sizeof short_modes[0]; i++)
      if (strcmp(s, short_modes[i].name) == 0) return short_modes[i].amode;
    int amode = 0, any = 0;
    while (*s) {
      size_t n = strcspn(s, " \t,|");
      if (n) {
        amode |= mode_bit(L, arg, s, n);
        any = 1;
      }
      s += n;
      if (*s) s++;
    }
    if (!any) luaL_argerror(L, arg, "empty access mode");
    return amode;
  }
  case LUA_TTABLE: {
    int amode = 0;
    lua_pushnil(L);
    while (lua_next(L, arg)) {
      if (lua_type(L, -2) == LUA_TNUMBER && lua_type(L, -1) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        amode |= mode_bit(L, arg, s, n);
      } else if (lua_type(L, -2) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, -2, &n);
        int bit = mode_bit(L, arg, s, n);
        if (lua_toboolean(L, -1)) amode |= bit;
      } else {
        luaL_argerror(L, arg, "access mode tables hold flag names");
      }
      lua_pop(L, 1);
    }
    return amode;
  }
  default:
    return luaL_typeerror(L, arg, "access mode (integer, string or table)");
  }
}

static void pushamode_string(lua_State *L, int amode) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int first = 1;
  for (size_t i = 0; i < NMODES; i++)
    if (amode & modes[i].bit) {
      if (!first) luaL_addchar(&b, ',');
      luaL_addstring(&b, modes[i].name);
      first = 0;
    }
  luaL_pushresult(&b);
}

/* ---- open / close / delete ----------------------------------------------- */

/* Whether the mode argument is "w" or "w+" (io.open's truncating modes). */
static int truncating_mode(lua_State *L, int arg) {
  const char *m = lua_type(L, arg) == LUA_TSTRING ? lua_tostring(L, arg) : NULL;
  return m && (strcmp(m, "w") == 0 || strcmp(m, "w+") == 0);
}

/* A file name: a string without embedded NUL (which would cut it short). */
static const char *checkpath(lua_State *L, int arg) {
  size_t len;
  const char *path = luaL_checklstring(L, arg, &len);
  if (strlen(path) != len) luaL_argerror(L, arg, "file name contains an embedded NUL");
  return path;
}

/* lmpio.open([comm,] path, amode [, info]), once the communicator is known
 * (l_open, below, agrees on argument errors). */
static int open_checked(lua_State *L) {
  lua_settop(L, 4);
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  const char *path = checkpath(L, 2);
  int amode = checkamode(L, 3);
  int std = strcmp(path, "-") == 0;
  if (std) { /* "-": rank 0's standard output (writing) or input (reading), a stream */
    if (amode & MPI_MODE_RDWR) luaL_argerror(L, 3, "\"-\" (a standard stream) is either read or written, not both");
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
  int trunc[2] = {truncating_mode(L, 3) && !std, 0};
  trunc[1] = -trunc[0];
  int agreed[2] = {0, 0};
  if (f->nranks > 1) MPI_Allreduce(trunc, agreed, 2, MPI_INT, MPI_MAX, comm);
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
  int n = lmpio_lua_collective_pcall(L, open_checked, NULL);
  if (n >= 0) return 1;
  if (lua_type(L, -1) != LUA_TSTRING) return lua_error(L);
  lmpio_lua_fix_argerror(L, "open", inserted);
  const char *msg = lua_tostring(L, -1);
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

static MPI_Offset checkoffset(lua_State *L, int idx) {
  return (MPI_Offset)luaL_checkinteger(L, idx);
}

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
    return luaL_error(L, "get_group: the file's group is larger than lmpio.world");
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
  pushamode_string(L, amode);
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
  if (!st) { MPI_Info_free(&info); return luaL_error(L, "stack overflow"); }
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
  luaL_checkany(L, 2);
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
  const char *rep = luaL_optstring(L, 5, "native");
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
    luaL_argerror(L, idx, "invalid whence");
  }
  return vals[luaL_checkoption(L, idx, "set", names)];
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

/* ---- data access ----------------------------------------------------------- */

/* Items of m's type that the status says were transferred (whole items). */
static lua_Integer status_count(const MPI_Status *st, const lmpio_lua_mem *m) {
  MPI_Count bytes = 0;
  if (MPI_Get_elements_x(st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED) bytes = 0;
  return m->type_size > 0 ? (lua_Integer)(bytes / m->type_size) : 0;
}

/* The data access methods (fh:read_at, fh:write_all, fh:iread_shared,
 * fh:read_all_begin, ...) are rows of one table, access_methods below: what
 * each moves (reading or writing), through which pointer (an explicit
 * offset, the individual or the shared pointer), whether it is collective,
 * its form (blocking, nonblocking, or one half of a split collective) and
 * its core function.  data_access serves them all. */
enum { P_EXPLICIT, P_INDIVIDUAL, P_SHARED };
enum { F_BLOCKING, F_NONBLOCKING, F_BEGIN, F_END };

typedef struct lfile_access {
  const char *name;
  unsigned char writing, pointer, collective, form;
  int (*fail)(lfile *f); /* collective: joins the call as a failing rank */
  union {                 /* the core function, by the kind above */
    int (*read_at)(lmpio_file, MPI_Offset, void *, int, MPI_Datatype, MPI_Status *);
    int (*write_at)(lmpio_file, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *);
    int (*read)(lmpio_file, void *, int, MPI_Datatype, MPI_Status *);
    int (*write)(lmpio_file, const void *, int, MPI_Datatype, MPI_Status *);
    int (*iread_at)(lmpio_file, MPI_Offset, void *, int, MPI_Datatype, MPI_Request *);
    int (*iwrite_at)(lmpio_file, MPI_Offset, const void *, int, MPI_Datatype, MPI_Request *);
    int (*iread)(lmpio_file, void *, int, MPI_Datatype, MPI_Request *);
    int (*iwrite)(lmpio_file, const void *, int, MPI_Datatype, MPI_Request *);
    int (*read_at_begin)(lmpio_file, MPI_Offset, void *, int, MPI_Datatype);
    int (*write_at_begin)(lmpio_file, MPI_Offset, const void *, int, MPI_Datatype);
    int (*read_begin)(lmpio_file, void *, int, MPI_Datatype);
    int (*write_begin)(lmpio_file, const void *, int, MPI_Datatype);
    int (*read_end)(lmpio_file, void *, MPI_Status *);
    int (*write_end)(lmpio_file, const void *, MPI_Status *);
  } core;
} lfile_access;

/* The core call of a (blocking) row. */
static int transfer(const lfile_access *a, lmpio_file fh, MPI_Offset off, const lmpio_lua_mem *m, MPI_Status *st) {
  if (a->pointer == P_EXPLICIT)
    return a->writing ? a->core.write_at(fh, off, m->ptr, m->count, m->type, st)
                      : a->core.read_at(fh, off, m->ptr, m->count, m->type, st);
  return a->writing ? a->core.write(fh, m->ptr, m->count, m->type, st) : a->core.read(fh, m->ptr, m->count, m->type, st);
}

/* The core call of a nonblocking row. */
static int start(const lfile_access *a, lmpio_file fh, MPI_Offset off, const lmpio_lua_mem *m, MPI_Request *req) {
  if (a->pointer == P_EXPLICIT)
    return a->writing ? a->core.iwrite_at(fh, off, m->ptr, m->count, m->type, req)
                      : a->core.iread_at(fh, off, m->ptr, m->count, m->type, req);
  return a->writing ? a->core.iwrite(fh, m->ptr, m->count, m->type, req)
                    : a->core.iread(fh, m->ptr, m->count, m->type, req);
}

/* fh:NAME([offset,] data [, count [, datatype]]), the row NAME being
 * upvalue 1.  Reads return the buffer read into (a new one for a count)
 * and the items read; writes the items written; nonblocking calls a
 * request (its wait returns those). */
static int split_begin(lua_State *L, const lfile_access *a);
static int split_end(lua_State *L, const lfile_access *a);

static int data_access(lua_State *L) {
  const lfile_access *a = lua_touserdata(L, lua_upvalueindex(1));
  if (a->form == F_BEGIN) return split_begin(L, a);
  if (a->form == F_END) return split_end(L, a);
  lmpio_file fh = checkfile(L);
  int at = a->pointer == P_EXPLICIT;
  MPI_Offset off = at ? checkoffset(L, 2) : 0;
  int idx = at ? 3 : 2;
  lmpio_lua_mem m;
  int made = lmpio_lua_checkmem(L, idx, a->writing, &m) == 2; /* a new buffer for a count, on top */
  int rc;
  if (a->form == F_NONBLOCKING) {
    lmpio_lua_checklasting(L, idx, &m);
    lmpio_lua_request *r = lmpio_lua_newrequest(L, made ? lua_gettop(L) : idx, &m, !a->writing);
    LMPIO_LUA_CORE_MEM(L, &m, rc, start(a, fh, off, &m, &r->req));
    lmpio_lua_check(L, rc);
    return 1;
  }
  if (!a->writing && !made) lua_pushvalue(L, idx); /* the result buffer on top */
  MPI_Status st;
  LMPIO_LUA_CORE_MEM(L, &m, rc, transfer(a, fh, off, &m, &st));
  lmpio_lua_check(L, rc);
  lua_Integer n = status_count(&st, &m);
  if (a->writing) {
    lua_pushinteger(L, n);
    return 1;
  }
  lmpio_lua_readdone(m.buf, n); /* a buffer made from a count holds the n items read */
  lua_pushinteger(L, n);
  return 2;
}

/***
Reads at an explicit offset (`MPI_File_read_at`).
@function file:read_at
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object when the call fails
*/
/***
Reads at an explicit offset, collectively (`MPI_File_read_at_all`).
@function file:read_at_all
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
@usage local a, n = fh:read_at_all(0, 3, lmpio.DOUBLE) -- a new array of 3 doubles
*/
/***
Writes at an explicit offset (`MPI_File_write_at`).
@function file:write_at
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object when the call fails
*/
/***
Writes at an explicit offset, collectively (`MPI_File_write_at_all`).
@function file:write_at_all
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
@usage fh:write_at_all(0, lmpio.array(lmpio.DOUBLE, {1, 2, 3}))
*/
/***
Reads at this rank's individual file pointer, and advances it (`MPI_File_read`).
@function file:read
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object when the call fails
*/
/***
Reads at the individual file pointer, collectively, and advances it
(`MPI_File_read_all`).
@function file:read_all
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Writes at this rank's individual file pointer, and advances it
(`MPI_File_write`).
@function file:write
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object when the call fails
*/
/***
Writes at the individual file pointer, collectively, and advances it
(`MPI_File_write_all`).
@function file:write_all
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Reads at the shared file pointer, and advances it for every rank
(`MPI_File_read_shared`).
Not collective: the ranks' accesses are serialised in some order.
@function file:read_shared
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object when the call fails
*/
/***
Writes at the shared file pointer, and advances it for every rank
(`MPI_File_write_shared`).
Not collective: the ranks' accesses are serialised in some order.
@function file:write_shared
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object when the call fails
*/
/***
Reads at the shared file pointer, collectively, in rank order
(`MPI_File_read_ordered`).
Each rank's data comes after that of the ranks below it; the pointer
moves past all of them.
@function file:read_ordered
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@return the array or buffer read into: the given one (its size kept), or a new
  one holding exactly the items read (`#` is n: no padding at end of file)
@treturn integer the number of items read (fewer at the end of the file)
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Writes at the shared file pointer, collectively, in rank order
(`MPI_File_write_ordered`).
Each rank's data comes after that of the ranks below it; the pointer
moves past all of them.
@function file:write_ordered
@param data what to write, then optional count and datatype (see @{file})
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
@usage fh:write_ordered(string.format("rank %d\\n", rank))
*/

/* ---- records ------------------------------------------------------------------ */

#define RECORDS_PASS "lmpio.records_pass"

/* One collective step of a records iterator: pushes the string (or nil at
 * the end) and returns 1.  Upvalues of the iterator: 1 the file, 2 the
 * separator (integer), 3 max, 4 the first batch (read by records_ordered
 * itself) or false, 5 done. */
static int records_step(lua_State *L, lfile *f, int sep, lua_Integer max) {
  char *rec = NULL;
  MPI_Count len = 0;
  int more = 0, rc;
  LMPIO_LUA_CORE(L, rc, lmpio_file_read_records_ordered(f->fh, sep, (MPI_Count)max, &rec, &len, &more));
  if (rc != MPI_SUCCESS) {
    free(rec);
    return lmpio_lua_raise(L, rc, NULL);
  }
  if (more) lua_pushlstring(L, rec ? rec : "", (size_t)len); /* (memory error: rec leaks; rare) */
  else lua_pushnil(L);
  free(rec);
  return 1;
}

static int records_iter(lua_State *L) {
  if (lua_toboolean(L, lua_upvalueindex(5))) {
    lua_pushnil(L);
    return 1;
  }
  if (lua_type(L, lua_upvalueindex(4)) == LUA_TSTRING) {
    lua_pushvalue(L, lua_upvalueindex(4));
    lua_pushboolean(L, 0);
    lua_replace(L, lua_upvalueindex(4));
    return 1;
  }
  lfile *f = luaL_checkudata(L, lua_upvalueindex(1), LMPIO_LUA_FILE);
  if (f->fh == LMPIO_FILE_NULL) return luaL_error(L, "attempt to use a closed file");
  records_step(L, f, (int)lua_tointeger(L, lua_upvalueindex(2)), lua_tointeger(L, lua_upvalueindex(3)));
  if (lua_isnil(L, -1)) {
    lua_pushboolean(L, 1);
    lua_replace(L, lua_upvalueindex(5));
  }
  return 1;
}

/***
Iterates over whole records in rank order; collective (every call of the
iterator too).  Each step reads about `max` bytes per rank at the shared
file pointer (as @{file:read_ordered}), then the ranks pass each other the
pieces of records that straddle them, so that every rank gets a string of
whole records (each ending with `sep`; the last record of the input may
lack it), the ranks' strings following each other in rank order, nothing
split across ranks and nothing lost.  A rank's string may be empty (`""`)
in a step where others got records (a record longer than `max` spans the
steps of several ranks); the loop ends on every rank in the same step, at
the end of the input.  Leaving the loop early (`break`, or an error) ends
the pass: the record it left unfinished is dropped, so the next pass starts
with the bytes at the shared pointer (moving the pointer, with
@{file:seek_shared}, @{file:set_view} or another access through it, drops
it too).  Works on regular files and streams (pipes,
@{lmpio.stdin}); the view must count bytes (the default view).  In C:
`lmpio_file_read_records_ordered`.
@function file:records_ordered
@tparam[opt] table options `max` (integer, default 1 MiB: bytes each rank
  reads per step), `sep` (a one-character string, default `"\n"`; the
  same on every rank)
@treturn function the iterator: each call returns the next string, then nil
@return nil, nil and the pass's closing value (a generic `for` closes it
  when the loop is left)
@raise an @{error} object, the same on every rank, when a read fails or an
  option is wrong on any rank (`MPI_ERR_ARG`, `MPI_ERR_NOT_SAME` when
  ranks pass different separators)
@usage
local input <close> = lmpio.stdin()
local out <close> = lmpio.stdout()
for lines in input:records_ordered{max = 1 << 20} do
  out:write_ordered((lines:gsub("[^\n]*\n", function(l) return l:upper() end)))
end
*/
static int f_records_ordered(lua_State *L) {
  lfile *f = luaL_checkudata(L, 1, LMPIO_LUA_FILE);
  lmpio_lua_running(L);
  if (f->fh == LMPIO_FILE_NULL) return luaL_error(L, "attempt to use a closed file");
  lua_Integer max = 1 << 20;
  int sep = '\n';
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 2, "max") != LUA_TNIL) {
      int isnum;
      max = lua_tointegerx(L, -1, &isnum);
      if (!isnum || max < 1 || max > INT_MAX / 2) luaL_argerror(L, 2, "max must be an integer from 1 to 1073741823");
    }
    if (lua_getfield(L, 2, "sep") != LUA_TNIL) {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      if (!s || lua_type(L, -1) != LUA_TSTRING || n != 1) luaL_argerror(L, 2, "sep must be a string of one character");
      sep = (unsigned char)s[0];
    }
    lua_pop(L, 2);
  }
  lua_settop(L, 1);
  /* The first step now: a collective call, so argument errors agree. */
  records_step(L, f, sep, max);          /* 2: the first batch, or nil */
  int done = lua_isnil(L, 2);
  if (done) {
    lua_pushboolean(L, 0);
    lua_replace(L, 2);
  }
  lua_pushvalue(L, 1);                   /* upvalues: file, sep, max, first batch, done */
  lua_pushinteger(L, sep);
  lua_pushinteger(L, max);
  lua_pushvalue(L, 2);
  lua_pushboolean(L, done);
  lua_pushcclosure(L, records_iter, 5);
  /* The generic for's closing value: leaving the loop early (break,
   * goto, an error) ends the pass, dropping the record left unfinished. */
  lua_pushnil(L);
  lua_pushnil(L);
  lua_newuserdatauv(L, 0, 2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, -4);
  lua_setiuservalue(L, -2, 2);
  luaL_setmetatable(L, RECORDS_PASS);
  return 4;
}

/* __close of a records pass: the iterator is done, the unfinished record
 * gone (local: nothing collective runs, whenever the loop is left). */
static int records_close(lua_State *L) {
  luaL_checkudata(L, 1, RECORDS_PASS);
  if (lua_getiuservalue(L, 1, 2) == LUA_TFUNCTION) {
    lua_pushboolean(L, 0);
    lua_setupvalue(L, -2, 4);
    lua_pushboolean(L, 1);
    lua_setupvalue(L, -2, 5);
  }
  lfile *f = lua_getiuservalue(L, 1, 1) == LUA_TUSERDATA ? luaL_testudata(L, -1, LMPIO_LUA_FILE) : NULL;
  if (f && f->fh != LMPIO_FILE_NULL) lmpio_file_drop_records(f->fh);
  return 0;
}

/* ---- nonblocking data access: each returns an lmpio.request ------------------ */

/***
Starts @{file:read_at} as a nonblocking operation (`MPI_File_iread_at`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iread_at
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@treturn request whose `wait` returns the array read into and the number of
  items read
@raise an @{error} object when the call fails
*/
/***
Starts @{file:read_at_all} as a nonblocking operation (`MPI_File_iread_at_all`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iread_at_all
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@treturn request whose `wait` returns the array read into and the number of
  items read
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Starts @{file:write_at} as a nonblocking operation (`MPI_File_iwrite_at`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iwrite_at
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param data what to write, then optional count and datatype (see @{file})
@treturn request whose `wait` returns the number of items written
@raise an @{error} object when the call fails
*/
/***
Starts @{file:write_at_all} as a nonblocking operation
(`MPI_File_iwrite_at_all`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iwrite_at_all
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param data what to write, then optional count and datatype (see @{file})
@treturn request whose `wait` returns the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Starts @{file:read} as a nonblocking operation (`MPI_File_iread`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iread
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@treturn request whose `wait` returns the array read into and the number of
  items read
@raise an @{error} object when the call fails
*/
/***
Starts @{file:read_all} as a nonblocking operation (`MPI_File_iread_all`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iread_all
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@treturn request whose `wait` returns the array read into and the number of
  items read
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Starts @{file:write} as a nonblocking operation (`MPI_File_iwrite`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iwrite
@param data what to write, then optional count and datatype (see @{file})
@treturn request whose `wait` returns the number of items written
@raise an @{error} object when the call fails
*/
/***
Starts @{file:write_all} as a nonblocking operation (`MPI_File_iwrite_all`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iwrite_all
@param data what to write, then optional count and datatype (see @{file})
@treturn request whose `wait` returns the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank
*/
/***
Starts @{file:read_shared} as a nonblocking operation (`MPI_File_iread_shared`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iread_shared
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@treturn request whose `wait` returns the array read into and the number of
  items read
@raise an @{error} object when the call fails
*/
/***
Starts @{file:write_shared} as a nonblocking operation
(`MPI_File_iwrite_shared`).
The transfer runs in the background; do not touch the data until the
request completes (see @{request}).
@function file:iwrite_shared
@param data what to write, then optional count and datatype (see @{file})
@treturn request whose `wait` returns the number of items written
@raise an @{error} object when the call fails
*/

/* ---- split collectives ------------------------------------------------------ */

/* The split collective in progress: its memory, kept as user value UV_SPLIT
 * (a table {data, type_size, ptr, hold, the _begin's name}) until _end. */
static void keep_split(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading, const char *call) {
  lua_createtable(L, 5, 0);
  lua_pushvalue(L, dataidx);
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, (lua_Integer)m->type_size);
  lua_rawseti(L, -2, 2);
  lua_pushlightuserdata(L, m->ptr);
  lua_rawseti(L, -2, 3);
  lmpio_lua_hold_push(L, dataidx, m, reading, call, 1, NULL); /* the data is the split's until _end */
  lua_rawseti(L, -2, 4);
  lua_pushstring(L, call);
  lua_rawseti(L, -2, 5);
  lua_setiuservalue(L, 1, UV_SPLIT);
}

/* The core call of a split collective's _begin row. */
static int begin(const lfile_access *a, lmpio_file fh, MPI_Offset off, const lmpio_lua_mem *m) {
  if (a->pointer == P_EXPLICIT)
    return a->writing ? a->core.write_at_begin(fh, off, m->ptr, m->count, m->type)
                      : a->core.read_at_begin(fh, off, m->ptr, m->count, m->type);
  return a->writing ? a->core.write_begin(fh, m->ptr, m->count, m->type)
                    : a->core.read_begin(fh, m->ptr, m->count, m->type);
}

/* fh:read_ordered_begin(buf|count [, count, type]), fh:write_ordered_begin(data
 * [, count, type]); the _at_all ones take an offset first. */
static int split_begin(lua_State *L, const lfile_access *a) {
  lmpio_file fh = checkfile(L);
  int at = a->pointer == P_EXPLICIT;
  MPI_Offset off = at ? checkoffset(L, 2) : 0;
  int idx = at ? 3 : 2;
  lmpio_lua_mem m;
  int dataidx = lmpio_lua_checkmem(L, idx, a->writing, &m) == 2 ? lua_gettop(L) : idx;
  lmpio_lua_checklasting(L, idx, &m);
  lua_getiuservalue(L, 1, UV_SPLIT); /* the active split's memory, if any */
  int previdx = lua_gettop(L);
  keep_split(L, dataidx, &m, !a->writing, a->name);
  int rc;
  LMPIO_LUA_CORE_MEM(L, &m, rc, begin(a, fh, off, &m));
  if (rc != MPI_SUCCESS) { /* nothing new became active: keep what was */
    lua_getiuservalue(L, 1, UV_SPLIT);
    lua_rawgeti(L, -1, 4);
    lmpio_lua_unhold_at(L, -1);
    lua_pop(L, 2);
    lua_pushvalue(L, previdx);
    lua_setiuservalue(L, 1, UV_SPLIT);
  }
  lmpio_lua_check(L, rc);
  return 0;
}

/* _end([data]): data, when given, must be what _begin received. */
static int split_end(lua_State *L, const lfile_access *a) {
  int reading = !a->writing;
  lua_settop(L, 2);
  lmpio_file fh = checkfile(L);
  lmpio_lua_mem m;
  memset(&m, 0, sizeof m);
  void *ptr = NULL;
  int have = lua_getiuservalue(L, 1, UV_SPLIT) == LUA_TTABLE;
  int kept = lua_gettop(L), same = 0;
  if (have) {
    /* (whether it is this _end's _begin: "read_at_all_begin" for "read_at_all_end") */
    lua_rawgeti(L, kept, 5);
    const char *began = lua_tostring(L, -1);
    size_t stem = strlen(a->name) - strlen("_end");
    same = began && strncmp(began, a->name, stem) == 0 && strcmp(began + stem, "_begin") == 0;
    lua_pop(L, 1);
    lua_rawgeti(L, kept, 2);
    m.type_size = (MPI_Count)lua_tointeger(L, -1);
    lua_rawgeti(L, kept, 3);
    ptr = lua_touserdata(L, -1);
    lua_pop(L, 2);
    lua_rawgeti(L, kept, 1); /* the data, at kept + 1 */
    if (!lua_isnoneornil(L, 2) && !lua_rawequal(L, 2, -1))
      return luaL_argerror(L, 2, "not the buffer given to the matching _begin");
  }
  MPI_Status st;
  int rc;
  if (reading) LMPIO_LUA_CORE(L, rc, a->core.read_end(fh, ptr, &st));
  else LMPIO_LUA_CORE(L, rc, a->core.write_end(fh, ptr, &st));
  /* The matching _end ends the split even when its transfer failed; a
   * mismatched one leaves it active: keep its memory then. */
  if (rc == MPI_SUCCESS || same) {
    if (have) {
      lua_rawgeti(L, kept, 4);
      lmpio_lua_unhold_at(L, -1);
      lua_pop(L, 1);
    }
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_SPLIT);
  }
  lmpio_lua_check(L, rc);
  if (reading) {
    lua_Integer n = status_count(&st, &m);
    if (have) lmpio_lua_readdone(lmpio_lua_tobuffer(L, -1), n);
    else lua_pushnil(L);
    lua_pushinteger(L, n);
    return 2;
  }
  lua_pushinteger(L, status_count(&st, &m));
  return 1;
}

/***
Begins the split collective form of @{file:read_ordered}
(`MPI_File_read_ordered_begin`); collective.
One split collective at a time per file; finish it with
@{file:read_ordered_end}.
The data is kept alive until then.
@function file:read_ordered_begin
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Begins the split collective form of @{file:write_ordered}
(`MPI_File_write_ordered_begin`); collective.
One split collective at a time per file; finish it with
@{file:write_ordered_end}.
The data is kept alive until then.
@function file:write_ordered_begin
@param data what to write, then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Ends the split collective begun by @{file:read_ordered_begin}
(`MPI_File_read_ordered_end`); collective.
@function file:read_ordered_end
@param[opt] data what the `_begin` call received (checked when given)
@return the array or buffer read into (the one `_begin` received or made)
@treturn integer the number of items read
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/
/***
Ends the split collective begun by @{file:write_ordered_begin}
(`MPI_File_write_ordered_end`); collective.
@function file:write_ordered_end
@param[opt] data what the `_begin` call received (checked when given)
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/
/***
Begins the split collective form of @{file:read_at_all}
(`MPI_File_read_at_all_begin`); collective.
One split collective at a time per file; finish it with @{file:read_at_all_end}.
The data is kept alive until then.
@function file:read_at_all_begin
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Begins the split collective form of @{file:write_at_all}
(`MPI_File_write_at_all_begin`); collective.
One split collective at a time per file; finish it with
@{file:write_at_all_end}.
The data is kept alive until then.
@function file:write_at_all_begin
@tparam integer offset where to start, in etypes of the view from its
  displacement
@param data what to write, then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Ends the split collective begun by @{file:read_at_all_begin}
(`MPI_File_read_at_all_end`); collective.
@function file:read_at_all_end
@param[opt] data what the `_begin` call received (checked when given)
@return the array or buffer read into (the one `_begin` received or made)
@treturn integer the number of items read
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/
/***
Ends the split collective begun by @{file:write_at_all_begin}
(`MPI_File_write_at_all_end`); collective.
@function file:write_at_all_end
@param[opt] data what the `_begin` call received (checked when given)
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/
/***
Begins the split collective form of @{file:read_all}
(`MPI_File_read_all_begin`); collective.
One split collective at a time per file; finish it with @{file:read_all_end}.
The data is kept alive until then.
@function file:read_all_begin
@param buf an array or buffer to read into, or a number of items for a new
  array; then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Begins the split collective form of @{file:write_all}
(`MPI_File_write_all_begin`); collective.
One split collective at a time per file; finish it with @{file:write_all_end}.
The data is kept alive until then.
@function file:write_all_begin
@param data what to write, then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Ends the split collective begun by @{file:read_all_begin}
(`MPI_File_read_all_end`); collective.
@function file:read_all_end
@param[opt] data what the `_begin` call received (checked when given)
@return the array or buffer read into (the one `_begin` received or made)
@treturn integer the number of items read
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/
/***
Ends the split collective begun by @{file:write_all_begin}
(`MPI_File_write_all_end`); collective.
@function file:write_all_end
@param[opt] data what the `_begin` call received (checked when given)
@treturn integer the number of items written
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when no matching split collective is active;
  a Lua error when data is not what `_begin` received
*/

/* ---- collective methods agree on argument errors ------------------------------
 *
 * A collective method runs its argument checks under a protected call.  An
 * error raised before the core was entered (a bad argument on this rank) is
 * handed to the core with lmpio_fail_next_collective and the same collective
 * is entered with empty arguments: every rank then fails with the same class
 * and this rank's message, instead of the others waiting for this one.  This
 * rank raises an error object of that class whose message is the argument
 * error. */

typedef int (*fail_fn)(lfile *f);
static int fail_io(lfile *f) { return lmpio_file_write_at_all(f->fh, 0, NULL, 0, MPI_BYTE, MPI_STATUS_IGNORE); }
static int fail_ordered(lfile *f) { return lmpio_file_write_ordered(f->fh, NULL, 0, MPI_BYTE, MPI_STATUS_IGNORE); }
/* A nonblocking collective joins in the same form as the other ranks'
 * (theirs may run in the background, where a blocking call would never meet
 * them), then completes at once: its outcome is the agreed one.  The others
 * learn of the failure when they complete theirs.  (A split collective's
 * _begin joins with the same _begin: agree_failure.) */
static int fail_nonblocking(lfile *f) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = lmpio_file_iwrite_at_all(f->fh, 0, NULL, 0, MPI_BYTE, &req);
  if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  return rc;
}

static int fail_view(lfile *f) { return lmpio_file_set_view(f->fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL); }
static int fail_size(lfile *f) { return lmpio_file_set_size(f->fh, 0); }
static int fail_info(lfile *f) { return lmpio_file_set_info(f->fh, MPI_INFO_NULL); }
static int fail_atomicity(lfile *f) { return lmpio_file_set_atomicity(f->fh, 0); }
static int fail_sync(lfile *f) { return lmpio_file_sync(f->fh); }
static int fail_seek_shared(lfile *f) { return lmpio_file_seek_shared(f->fh, 0, MPI_SEEK_SET); }
static int fail_close(lfile *f) { return lmpio_file_close(&f->fh); }
static int fail_records(lfile *f) {
  char *rec = NULL;
  MPI_Count len;
  int more;
  int rc = lmpio_file_read_records_ordered(f->fh, '\n', 1, &rec, &len, &more);
  free(rec);
  return rc;
}

typedef struct {
  const char *name;
  lua_CFunction fn;
  fail_fn fail;
} collective_method;

static const lfile_access *end_row(const lfile_access *begin_row);

/* The error on top, raised by a collective method of f named name before it
 * entered the core: every rank fails the call (fail joins it; a split
 * collective's _begin, row a, joins with the same _begin and empty memory,
 * then ends it at once: where the others' run in the background, their _end
 * raises the error; here none stays active, as after any failed _begin). */
static int agree_failure(lua_State *L, lfile *f, const char *name, fail_fn fail, const lfile_access *a) {
  if (!f || f->fh == LMPIO_FILE_NULL || lua_type(L, -1) != LUA_TSTRING)
    return lua_error(L); /* nothing to agree on */
  lmpio_lua_fix_argerror(L, name, 1);
  const char *msg = lua_tostring(L, -1);
  lmpio_fail_next_collective(MPI_ERR_ARG, msg);
  lua_State *saved_caller = lmpio_lua_caller;
  lmpio_lua_caller = L;
  int rc;
  if (a && a->form == F_BEGIN) {
    lmpio_lua_mem none;
    memset(&none, 0, sizeof none);
    none.type = MPI_BYTE;
    rc = begin(a, f->fh, 0, &none);
    const lfile_access *e = end_row(a);
    if (rc == MPI_SUCCESS && e) rc = a->writing ? e->core.write_end(f->fh, NULL, MPI_STATUS_IGNORE)
                                           : e->core.read_end(f->fh, NULL, MPI_STATUS_IGNORE);
  } else {
    rc = fail(f);
  }
  lmpio_lua_caller = saved_caller;
  /* What the core agreed on: this rank's argument error, or the failure of
   * a lower rank that failed too (every rank raises the same class and
   * message: the lowest failing rank's). */
  const char *agreed = lmpio_last_error_message();
  if (rc != MPI_SUCCESS && !(rc == MPI_ERR_ARG && agreed && strstr(agreed, msg)))
    return lmpio_lua_raise(L, rc, agreed);
  return lmpio_lua_raise(L, MPI_ERR_ARG, msg);
}

static int collective_call(lua_State *L) {
  const collective_method *cm = lua_touserdata(L, lua_upvalueindex(1));
  lfile *f = luaL_testudata(L, 1, LMPIO_LUA_FILE);
  int n = lmpio_lua_collective_pcall(L, cm->fn, NULL);
  if (n >= 0) return n;
  return agree_failure(L, f, cm->name, cm->fail, NULL);
}

/* A collective data access method: data_access under the agreement. */
static int collective_access(lua_State *L) {
  const lfile_access *a = lua_touserdata(L, lua_upvalueindex(1));
  lfile *f = luaL_testudata(L, 1, LMPIO_LUA_FILE);
  int n = lmpio_lua_collective_pcall(L, data_access, a);
  if (n >= 0) return n;
  return agree_failure(L, f, a->name, a->fail, a);
}

static const collective_method collective_methods[] = {
  {"close", f_close, fail_close},
  {"set_size", f_set_size, fail_size}, {"preallocate", f_preallocate, fail_size},
  {"sync", f_sync, fail_sync}, {"set_info", f_set_info, fail_info},
  {"set_atomicity", f_set_atomicity, fail_atomicity}, {"set_view", f_set_view, fail_view},
  {"seek_shared", f_seek_shared, fail_seek_shared},
  {"records_ordered", f_records_ordered, fail_records},
};

/* Every data access method: name, writing, pointer, collective, form,
 * how a failing rank joins the collective, the core call.  (A split
 * collective's _end is not collective by itself: its _begin agreed.) */
#define R 0
#define W 1
static const lfile_access access_methods[] = {
  {"read_at", R, P_EXPLICIT, 0, F_BLOCKING, NULL, {.read_at = lmpio_file_read_at}},
  {"write_at", W, P_EXPLICIT, 0, F_BLOCKING, NULL, {.write_at = lmpio_file_write_at}},
  {"read_at_all", R, P_EXPLICIT, 1, F_BLOCKING, fail_io, {.read_at = lmpio_file_read_at_all}},
  {"write_at_all", W, P_EXPLICIT, 1, F_BLOCKING, fail_io, {.write_at = lmpio_file_write_at_all}},
  {"read", R, P_INDIVIDUAL, 0, F_BLOCKING, NULL, {.read = lmpio_file_read}},
  {"write", W, P_INDIVIDUAL, 0, F_BLOCKING, NULL, {.write = lmpio_file_write}},
  {"read_all", R, P_INDIVIDUAL, 1, F_BLOCKING, fail_io, {.read = lmpio_file_read_all}},
  {"write_all", W, P_INDIVIDUAL, 1, F_BLOCKING, fail_io, {.write = lmpio_file_write_all}},
  {"read_shared", R, P_SHARED, 0, F_BLOCKING, NULL, {.read = lmpio_file_read_shared}},
  {"write_shared", W, P_SHARED, 0, F_BLOCKING, NULL, {.write = lmpio_file_write_shared}},
  {"read_ordered", R, P_SHARED, 1, F_BLOCKING, fail_ordered, {.read = lmpio_file_read_ordered}},
  {"write_ordered", W, P_SHARED, 1, F_BLOCKING, fail_ordered, {.write = lmpio_file_write_ordered}},
  {"iread_at", R, P_EXPLICIT, 0, F_NONBLOCKING, NULL, {.iread_at = lmpio_file_iread_at}},
  {"iwrite_at", W, P_EXPLICIT, 0, F_NONBLOCKING, NULL, {.iwrite_at = lmpio_file_iwrite_at}},
  {"iread_at_all", R, P_EXPLICIT, 1, F_NONBLOCKING, fail_nonblocking, {.iread_at = lmpio_file_iread_at_all}},
  {"iwrite_at_all", W, P_EXPLICIT, 1, F_NONBLOCKING, fail_nonblocking, {.iwrite_at = lmpio_file_iwrite_at_all}},
  {"iread", R, P_INDIVIDUAL, 0, F_NONBLOCKING, NULL, {.iread = lmpio_file_iread}},
  {"iwrite", W, P_INDIVIDUAL, 0, F_NONBLOCKING, NULL, {.iwrite = lmpio_file_iwrite}},
  {"iread_all", R, P_INDIVIDUAL, 1, F_NONBLOCKING, fail_nonblocking, {.iread = lmpio_file_iread_all}},
  {"iwrite_all", W, P_INDIVIDUAL, 1, F_NONBLOCKING, fail_nonblocking, {.iwrite = lmpio_file_iwrite_all}},
  {"iread_shared", R, P_SHARED, 0, F_NONBLOCKING, NULL, {.iread = lmpio_file_iread_shared}},
  {"iwrite_shared", W, P_SHARED, 0, F_NONBLOCKING, NULL, {.iwrite = lmpio_file_iwrite_shared}},
  {"read_at_all_begin", R, P_EXPLICIT, 1, F_BEGIN, NULL, {.read_at_begin = lmpio_file_read_at_all_begin}},
  {"write_at_all_begin", W, P_EXPLICIT, 1, F_BEGIN, NULL, {.write_at_begin = lmpio_file_write_at_all_begin}},
  {"read_all_begin", R, P_INDIVIDUAL, 1, F_BEGIN, NULL, {.read_begin = lmpio_file_read_all_begin}},
  {"write_all_begin", W, P_INDIVIDUAL, 1, F_BEGIN, NULL, {.write_begin = lmpio_file_write_all_begin}},
  {"read_ordered_begin", R, P_SHARED, 1, F_BEGIN, NULL, {.read_begin = lmpio_file_read_ordered_begin}},
  {"write_ordered_begin", W, P_SHARED, 1, F_BEGIN, NULL, {.write_begin = lmpio_file_write_ordered_begin}},
  {"read_at_all_end", R, P_EXPLICIT, 0, F_END, NULL, {.read_end = lmpio_file_read_at_all_end}},
  {"write_at_all_end", W, P_EXPLICIT, 0, F_END, NULL, {.write_end = lmpio_file_write_at_all_end}},
  {"read_all_end", R, P_INDIVIDUAL, 0, F_END, NULL, {.read_end = lmpio_file_read_all_end}},
  {"write_all_end", W, P_INDIVIDUAL, 0, F_END, NULL, {.write_end = lmpio_file_write_all_end}},
  {"read_ordered_end", R, P_SHARED, 0, F_END, NULL, {.read_end = lmpio_file_read_ordered_end}},
  {"write_ordered_end", W, P_SHARED, 0, F_END, NULL, {.write_end = lmpio_file_write_ordered_end}},
};
#undef R
#undef W

/* The _end row of a split collective's _begin row ("read_all_begin": "read_all_end"). */
static const lfile_access *end_row(const lfile_access *begin_row) {
  size_t stem = strlen(begin_row->name) - strlen("_begin");
  for (size_t i = 0; i < sizeof access_methods / sizeof access_methods[0]; i++)
    if (access_methods[i].form == F_END && strncmp(access_methods[i].name, begin_row->name, stem) == 0 &&
        strcmp(access_methods[i].name + stem, "_end") == 0)
      return &access_methods[i];
  return NULL; /* (every _begin row has its _end row) */
}

/* Adds the collective methods and the data access methods to the methods
 * table on top of the stack, each as what runs: its agreement around the
 * method for the collective ones, data_access with its row for the others. */
static void add_methods(lua_State *L) {
  for (size_t i = 0; i < sizeof collective_methods / sizeof collective_methods[0]; i++) {
    lua_pushlightuserdata(L, (void *)&collective_methods[i]);
    lua_pushcclosure(L, collective_call, 1);
    lua_setfield(L, -2, collective_methods[i].name);
  }
  for (size_t i = 0; i < sizeof access_methods / sizeof access_methods[0]; i++) {
    const lfile_access *a = &access_methods[i];
    lua_pushlightuserdata(L, (void *)a);
    lua_pushcclosure(L, a->collective ? collective_access : data_access, 1);
    lua_setfield(L, -2, a->name);
  }
}

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
    luaL_newlib(L, methods);
    add_methods(L);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, RECORDS_PASS)) {
    lua_pushcfunction(L, records_close);
    lua_setfield(L, -2, "__close");
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
  for (size_t i = 0; i < NMODES; i++) {
    char name[40];
    snprintf(name, sizeof name, "MODE_%s", modes[i].name);
    for (char *p = name; *p; p++) *p = (char)toupper((unsigned char)*p);
    lua_pushinteger(L, modes[i].bit);
    lua_setfield(L, -2, name);
  }
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
