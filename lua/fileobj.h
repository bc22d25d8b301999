/* The file object, shared by lua/file.c (the handle: open, close, views,
 * positions, the file's other methods) and lua/access.c (data access: the
 * methods that move data, their table of descriptors, and the agreement of
 * collective methods on argument errors). */
#ifndef LMPIO_LUA_FILEOBJ_H
#define LMPIO_LUA_FILEOBJ_H

#include "buffer.h"
#include "lifetime.h"

typedef struct lfile {
  lmpio_file fh;           /* LMPIO_FILE_NULL once closed */
  int nranks;              /* of the file's communicator */
  void *owner;             /* lmpio_lua_owner of the lua_State that opened it */
  struct lfile *prev, *next; /* open files, in the order they were opened */
} lfile;
/* User values of a file object: 1 the path, 2 the buffer of the split
 * collective in progress (kept alive until its _end). */
enum { UV_PATH = 1, UV_SPLIT = 2, NUV = 2 };

static inline lfile *lmpio_lua_tofile(lua_State *L) { return lmpio_lua_checkudata(L, 1, LMPIO_LUA_FILE); }

/* The open file at 1; raises "attempt to use a closed file". */
static inline lmpio_file lmpio_lua_checkfile(lua_State *L) {
  lfile *f = lmpio_lua_tofile(L);
  lmpio_lua_running(L);
  if (f->fh == LMPIO_FILE_NULL) lmpio_lua_error(L, MPI_ERR_FILE, "attempt to use a closed file");
  return f->fh;
}

static inline MPI_Offset lmpio_lua_checkoffset(lua_State *L, int idx) {
  return (MPI_Offset)lmpio_lua_checkinteger(L, idx);
}

/* A collective method of files other than data access: how a rank whose
 * arguments were wrong joins the call (fail), so that every rank raises. */
typedef int (*lmpio_lua_fail_fn)(lfile *f);
typedef struct {
  const char *name;
  lua_CFunction fn;
  lmpio_lua_fail_fn fail;
} lmpio_lua_file_method;

/* file.c: the collective methods of files other than data access. */
extern const lmpio_lua_file_method lmpio_lua_file_methods[];
extern const size_t lmpio_lua_nfile_methods;

/* amode.c: the access mode at arg (a mode string as io.open's, words of
 * MPI_MODE_* bits, or an integer) as MPI_MODE_* bits; whether it is "w" or
 * "w+" (which truncate); pushes the words of amode ("rdwr create"); sets
 * the lmpio.MODE_* constants in the table on top. */
int lmpio_lua_checkamode(lua_State *L, int arg);
int lmpio_lua_truncating_mode(lua_State *L, int arg);
void lmpio_lua_pushamode(lua_State *L, int amode);
void lmpio_lua_amode_constants(lua_State *L);

/* access.c: adds the collective methods of files (those of file.c under
 * the agreement on argument errors) and the data access methods to the
 * file objects' methods (after lmpio_lua_file_open). */
int lmpio_lua_access_open(lua_State *L);
int lmpio_lua_file_open(lua_State *L);
/* npy.c: lmpio.npy (.npy files: the header, then a view at the data). */
int lmpio_lua_npy_open(lua_State *L);

#endif
