/* Data access: every method of files that moves data (fh:read_at,
 * fh:write_all, fh:iread_shared, fh:read_all_begin, ... and
 * fh:records_ordered), described by one table of rows (access_methods
 * below) and served by one function, data_access; and the agreement of
 * collective methods on argument errors, for these and for the other
 * collective methods of files (lua/file.c).
 *
 * Nonblocking calls return an lmpio.request (lua/request.c).  The memory
 * of a call is parsed by lmpio_lua_checkmem (lua/buffer.c): an array, a
 * slice (one item of its own datatype), a byte buffer or a string. */
#include "error.h"
#include "watch.h"
#include "buffer.h"
#include "agree.h"
#include "request.h"
#include "fileobj.h"

#include <stdlib.h>
#include <string.h>

#define checkfile lmpio_lua_checkfile
#define checkoffset lmpio_lua_checkoffset
#define tofile lmpio_lua_tofile

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
fit the array.  A typed array takes only datatypes made of its element
type (`lmpio.INT` or `lmpio.INT32_T` for an `INT` array, a vector of
`INT`, ...; or `lmpio.BYTE` for its raw bytes): another is an
`MPI_ERR_ARG` naming both types; byte buffers and strings take any
datatype.  Reads return the array and the number of items of the
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
and do not); wrong arguments `MPI_ERR_ARG`, a closed file `MPI_ERR_FILE`.
@type file
*/

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
  lfile *f = lmpio_lua_checkudata(L, lua_upvalueindex(1), LMPIO_LUA_FILE);
  if (f->fh == LMPIO_FILE_NULL) return lmpio_lua_error(L, MPI_ERR_FILE, "attempt to use a closed file");
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
  lfile *f = lmpio_lua_checkudata(L, 1, LMPIO_LUA_FILE);
  lmpio_lua_running(L);
  if (f->fh == LMPIO_FILE_NULL) return lmpio_lua_error(L, MPI_ERR_FILE, "attempt to use a closed file");
  lua_Integer max = 1 << 20;
  int sep = '\n';
  if (!lua_isnoneornil(L, 2)) {
    lmpio_lua_checkluatype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 2, "max") != LUA_TNIL) {
      int isnum;
      max = lua_tointegerx(L, -1, &isnum);
      if (!isnum || max < 1 || max > INT_MAX / 2) lmpio_lua_argerror(L, 2, "max must be an integer from 1 to 1073741823");
    }
    if (lua_getfield(L, 2, "sep") != LUA_TNIL) {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      if (!s || lua_type(L, -1) != LUA_TSTRING || n != 1) lmpio_lua_argerror(L, 2, "sep must be a string of one character");
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
  lmpio_lua_checkudata(L, 1, RECORDS_PASS);
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
      return lmpio_lua_argerror(L, 2, "not the buffer given to the matching _begin");
  }
  MPI_Status st;
  int rc;
  lmpio_lua_entered = 1; /* (a core call, watched: it waits for the transfer, which may wait for other ranks) */
  LMPIO_LUA_WAIT(L, a->name, rc, reading ? a->core.read_end(fh, ptr, &st) : a->core.write_end(fh, ptr, &st));
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
Begins the split collective form of @{file:{RW}_{FORM}}
(`MPI_File_{RW}_{FORM}_begin`); collective.
One split collective at a time per file; finish it with @{file:{RW}_{FORM}_end}.
The data is kept alive until then.
@each RW = read, write
@each FORM = ordered, at_all, all
@function file:{RW}_{FORM}_begin
@only FORM = at_all: @tparam integer offset where to start, in etypes of the view from its displacement
@only RW = read: @param buf an array or buffer to read into, or a number of items for a new array; then optional count and datatype (see @{file})
@only RW = write: @param data what to write, then optional count and datatype (see @{file})
@raise an @{error} object, the same on every rank, when the call fails on any
  rank: `MPI_ERR_OTHER` when a split collective is already active
*/
/***
Ends the split collective begun by @{file:{RW}_{FORM}_begin}
(`MPI_File_{RW}_{FORM}_end`); collective.
@each RW = read, write
@each FORM = ordered, at_all, all
@function file:{RW}_{FORM}_end
@param[opt] data what the `_begin` call received (checked when given)
@only RW = read: @return the array or buffer read into (the one `_begin` received or made)
@only RW = read: @treturn integer the number of items read
@only RW = write: @treturn integer the number of items written
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

typedef lmpio_lua_fail_fn fail_fn;
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

static int fail_records(lfile *f) {
  char *rec = NULL;
  MPI_Count len;
  int more;
  int rc = lmpio_file_read_records_ordered(f->fh, '\n', 1, &rec, &len, &more);
  free(rec);
  return rc;
}

typedef lmpio_lua_file_method collective_method;

static const lfile_access *end_row(const lfile_access *begin_row);

/* The error on top, raised by a collective method of f before it
 * entered the core: every rank fails the call (fail joins it; a split
 * collective's _begin, row a, joins with the same _begin and empty memory,
 * then ends it at once: where the others' run in the background, their _end
 * raises the error; here none stays active, as after any failed _begin). */
static int agree_failure(lua_State *L, lfile *f, const char *name, fail_fn fail, const lfile_access *a) {
  if (!f || f->fh == LMPIO_FILE_NULL || !lmpio_lua_isargerror(L, -1))
    return lua_error(L); /* nothing to agree on: the error object as it is */
  const char *msg = lmpio_lua_errormessage(L, -1);
  lmpio_fail_next_collective(MPI_ERR_ARG, msg);
  lua_State *saved_caller = lmpio_lua_caller;
  lmpio_lua_caller = L;
  lmpio_watch_begin(name); /* (the core's own watch inside would name the stand-in call) */
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
  lmpio_watch_end();
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

/* Every data access method, a row per call of lmpio.h's lists: name,
 * writing, pointer, collective, form, how a failing rank joins the
 * collective, the core call (the union's member named after the call's
 * kind: iwrite_at, read_begin, write_end...).  A split collective's _end is
 * not collective by itself: its _begin agreed. */
#define WRITING_READ 0
#define WRITING_WRITE 1
#define COLLECTIVE_INDEP 0
#define COLLECTIVE_COLL 1
#define COLLECTIVE_ORDERED 1
#define FAIL_INDEP_BLOCKING NULL
#define FAIL_INDEP_NONBLOCKING NULL
#define FAIL_COLL_BLOCKING fail_io
#define FAIL_ORDERED_BLOCKING fail_ordered
#define FAIL_COLL_NONBLOCKING fail_nonblocking
#define FAIL_COLL_BEGIN NULL /* (agree_failure joins with the same _begin) */
#define FAIL_ORDERED_BEGIN NULL
#define MEMBER_PRE_BLOCKING
#define MEMBER_PRE_NONBLOCKING i
#define MEMBER_PRE_BEGIN
#define MEMBER_DIR_READ read
#define MEMBER_DIR_WRITE write
#define MEMBER_AT_EXPLICIT _at
#define MEMBER_AT_INDIVIDUAL
#define MEMBER_AT_SHARED
#define MEMBER_POST_BLOCKING
#define MEMBER_POST_NONBLOCKING
#define MEMBER_POST_BEGIN _begin
#define PASTE(a, b) PASTE_(a, b)
#define PASTE_(a, b) a##b
#define MEMBER(pointer, form, dir) \
  PASTE(PASTE(PASTE(MEMBER_PRE_##form, MEMBER_DIR_##dir), MEMBER_AT_##pointer), MEMBER_POST_##form)
#define ROW(name, pointer, coll, form, dir)                                                        \
  {#name, WRITING_##dir, P_##pointer, COLLECTIVE_##coll, F_##form, FAIL_##coll##_##form,            \
   {.MEMBER(pointer, form, dir) = lmpio_file_##name}},
#define ROW_END(name, pointer, coll, form, dir) \
  {#name, WRITING_##dir, P_##pointer, 0, F_END, NULL, {.PASTE(MEMBER_DIR_##dir, _end) = lmpio_file_##name}},
static const lfile_access access_methods[] = {LMPIO_CALLS(ROW) LMPIO_CALLS_END(ROW_END)};

/* The _end row of a split collective's _begin row ("read_all_begin": "read_all_end"). */
static const lfile_access *end_row(const lfile_access *begin_row) {
  size_t stem = strlen(begin_row->name) - strlen("_begin");
  for (size_t i = 0; i < sizeof access_methods / sizeof access_methods[0]; i++)
    if (access_methods[i].form == F_END && strncmp(access_methods[i].name, begin_row->name, stem) == 0 &&
        strcmp(access_methods[i].name + stem, "_end") == 0)
      return &access_methods[i];
  return NULL; /* (every _begin row has its _end row) */
}

static const collective_method records_method = {"records_ordered", f_records_ordered, fail_records};

int lmpio_lua_access_open(lua_State *L) {
  luaL_getmetatable(L, LMPIO_LUA_FILE);
  lua_getfield(L, -1, "__index");
  for (size_t i = 0; i < lmpio_lua_nfile_methods; i++) {
    lua_pushlightuserdata(L, (void *)&lmpio_lua_file_methods[i]);
    lua_pushcclosure(L, collective_call, 1);
    lua_setfield(L, -2, lmpio_lua_file_methods[i].name);
  }
  lua_pushlightuserdata(L, (void *)&records_method);
  lua_pushcclosure(L, collective_call, 1);
  lua_setfield(L, -2, records_method.name);
  for (size_t i = 0; i < sizeof access_methods / sizeof access_methods[0]; i++) {
    const lfile_access *a = &access_methods[i];
    lua_pushlightuserdata(L, (void *)a);
    lua_pushcclosure(L, a->collective ? collective_access : data_access, 1);
    lua_setfield(L, -2, a->name);
  }
  lua_pop(L, 2);
  if (luaL_newmetatable(L, RECORDS_PASS)) {
    lua_pushcfunction(L, records_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  return 0;
}
