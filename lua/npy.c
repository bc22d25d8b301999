/* .npy files (numpy's array format) through MPI-IO: lmpio.npy.open writes
 * or reads the header once, collectively, and leaves the handle's view at
 * the data, (offset, type, type, datarep), so that the ranks read and write
 * the array's elements as they would any file's.
 *
 * The ranks agree with raw MPI (one MPI_Allreduce; a broadcast when
 * something is wrong or a header travels); the file is opened, viewed,
 * written and closed through the module's own functions (lmpio.open and
 * the file's methods, called as Lua functions), so their agreement, error
 * objects and tracking of open files are the ones every file has. */
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "datatype.h"
#include "error.h"
#include "fileobj.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
/* A header longer than this is refused (numpy's own limit is 10000 bytes
 * unless told otherwise): a corrupt length must not make rank 0 read GiBs. */
#define NPY_MAX_HEADER (1 << 24)
#define NPY_ALIGN 64 /* numpy's rule: the data starts at a multiple of 64 */

static int host_little(void) {
  const unsigned short one = 1;
  return *(const unsigned char *)&one == 1;
}

/* ---- numpy's type codes ----------------------------------------------------- */

/* The lmpio type that reads a numpy kind and size: the first candidate
 * whose native size is that size (the C type when it has it, else the
 * fixed-width type).  Every one has the same size in external32, through
 * which big-endian files are read. */
static const struct {
  char kind;
  int size;
  MPI_Datatype t[2];
} readable[] = {
  {'b', 1, {MPI_C_BOOL, MPI_UINT8_T}},
  {'i', 1, {MPI_INT8_T, MPI_INT8_T}},
  {'u', 1, {MPI_UINT8_T, MPI_UINT8_T}},
  {'i', 2, {MPI_SHORT, MPI_INT16_T}},
  {'u', 2, {MPI_UNSIGNED_SHORT, MPI_UINT16_T}},
  {'i', 4, {MPI_INT, MPI_INT32_T}},
  {'u', 4, {MPI_UNSIGNED, MPI_UINT32_T}},
  {'i', 8, {MPI_INT64_T, MPI_INT64_T}},
  {'u', 8, {MPI_UINT64_T, MPI_UINT64_T}},
  {'f', 4, {MPI_FLOAT, MPI_FLOAT}},
  {'f', 8, {MPI_DOUBLE, MPI_DOUBLE}},
  {'c', 8, {MPI_C_FLOAT_COMPLEX, MPI_C_FLOAT_COMPLEX}},
  {'c', 16, {MPI_C_DOUBLE_COMPLEX, MPI_C_DOUBLE_COMPLEX}},
};
#define NREADABLE (sizeof readable / sizeof readable[0])
#define READABLE_LIST "b1, i1, u1, i2, u2, i4, u4, i8, u8, f4, f8, c8, c16"

static MPI_Datatype type_of(char kind, int size) {
  for (size_t i = 0; i < NREADABLE; i++) {
    if (readable[i].kind != kind || readable[i].size != size) continue;
    int s = 0;
    MPI_Type_size(readable[i].t[0], &s);
    return s == size ? readable[i].t[0] : readable[i].t[1];
  }
  return MPI_DATATYPE_NULL;
}

/* numpy's kind of a predefined type ('b', 'i', 'u', 'f', 'c'), or 0. */
static char kind_of(MPI_Datatype t, int size) {
  switch (lmpio_lua_typekind(t)) {
  case LMPIO_LUA_K_INT: return size == 1 || size == 2 || size == 4 || size == 8 ? 'i' : 0;
  case LMPIO_LUA_K_UINT: return size == 1 || size == 2 || size == 4 || size == 8 ? 'u' : 0;
  case LMPIO_LUA_K_BOOL: return size == 1 ? 'b' : 0;
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64: return size == 4 || size == 8 ? 'f' : 0;
  case LMPIO_LUA_K_NONE: {
    const char *name = lmpio_lua_typename(t);
    return name && strstr(name, "COMPLEX") && (size == 8 || size == 16) ? 'c' : 0;
  }
  default: return 0; /* long double: no size numpy reads alike everywhere */
  }
}

/* ---- the header ------------------------------------------------------------- */

typedef struct {
  char order;      /* '<', '>', '|' or '=' */
  char kind;
  int size;
  int fortran;
  long long ndim;
  long long *dims; /* room for as many as the header could hold */
} npy_desc;

typedef struct {
  const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int accept(cursor *c, char ch) {
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A Python string literal without escapes: 1, or 0 when there is none. */
static int py_string(cursor *c, const char **s, size_t *n) {
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char q = *c->p++;
  const char *start = c->p;
  while (c->p < c->end && *c->p != q && *c->p != '\\') c->p++;
  if (c->p >= c->end || *c->p != q) return 0;
  *s = start;
  *n = (size_t)(c->p - start);
  c->p++;
  return 1;
}

static int py_word(cursor *c, const char *w) {
  skip_space(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
    c->p += n;
    return 1;
  }
  return 0;
}

/* A non-negative integer (Python 2's long suffix L allowed): 1, or 0. */
static int py_int(cursor *c, long long *v) {
  skip_space(c);
  const char *s = c->p;
  long long x = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *c->p - '0', &x)) return 0;
    c->p++;
  }
  if (c->p == s) return 0;
  if (c->p < c->end && *c->p == 'L') c->p++;
  *v = x;
  return 1;
}

/* The descr string: byte order, kind, size.  MPI_SUCCESS or a class, with
 * the reason in err. */
static int parse_descr(const char *s, size_t n, npy_desc *d, char *err, size_t errsz) {
  size_t i = 0;
  d->order = '=';
  if (n > 0 && strchr("<>|=", s[0])) d->order = s[i++];
  if (i < n && s[i] == '?' && i + 1 == n) {
    d->kind = 'b';
    d->size = 1;
    return MPI_SUCCESS;
  }
  int size = 0, digits = 0;
  char kind = i < n ? s[i++] : 0;
  for (; i < n && s[i] >= '0' && s[i] <= '9' && size < 1000; i++, digits++) size = size * 10 + (s[i] - '0');
  if (i == n && digits && type_of(kind, size) != MPI_DATATYPE_NULL) {
    d->kind = kind;
    d->size = size;
    return MPI_SUCCESS;
  }
  const char *what = "";
  if (kind == 'S' || kind == 'a' || kind == 'U') what = " (strings)";
  else if (kind == 'O') what = " (Python objects)";
  else if (kind == 'V') what = " (raw records)";
  else if (kind == 'M' || kind == 'm') what = " (dates and times)";
  else if (kind == 'f' && size == 2) what = " (half precision)";
  else if (kind == 'f' || kind == 'c') what = " (extended precision)";
  snprintf(err, errsz, "dtype '%.*s'%s is not supported (lmpio reads " READABLE_LIST ")", (int)(n > 40 ? 40 : n), s,
           what);
  return MPI_ERR_UNSUPPORTED_DATAREP;
}

#define BAD(...) return snprintf(err, errsz, __VA_ARGS__), MPI_ERR_IO

/* The header's dictionary: {'descr': '<f8', 'fortran_order': False,
 * 'shape': (3, 4), } followed by blanks.  d->dims has room for n / 2 + 1
 * dimensions (each takes a digit and a comma). */
static int parse_header(const char *text, size_t n, npy_desc *d, char *err, size_t errsz) {
  cursor c = {text, text + n};
  int seen[3] = {0, 0, 0};
  if (!accept(&c, '{')) BAD("the header is not a dictionary ({'descr': ..., 'fortran_order': ..., 'shape': ...})");
  while (!accept(&c, '}')) {
    const char *k;
    size_t kn;
    if (!py_string(&c, &k, &kn)) BAD("the header's dictionary is malformed at byte %ld", (long)(c.p - text));
    if (!accept(&c, ':')) BAD("the header's dictionary lacks ':' after '%.*s'", (int)(kn > 40 ? 40 : kn), k);
    if (kn == 5 && memcmp(k, "descr", 5) == 0) {
      const char *s;
      size_t sn;
      skip_space(&c);
      if (c.p < c.end && *c.p == '[') {
        snprintf(err, errsz, "structured dtypes (a list of fields as descr) are not supported");
        return MPI_ERR_UNSUPPORTED_DATAREP;
      }
      if (!py_string(&c, &s, &sn)) BAD("the header's 'descr' is not a string");
      int rc = parse_descr(s, sn, d, err, errsz);
      if (rc != MPI_SUCCESS) return rc;
      seen[0]++;
    } else if (kn == 13 && memcmp(k, "fortran_order", 13) == 0) {
      if (py_word(&c, "True")) d->fortran = 1;
      else if (py_word(&c, "False")) d->fortran = 0;
      else BAD("the header's 'fortran_order' is neither True nor False");
      seen[1]++;
    } else if (kn == 5 && memcmp(k, "shape", 5) == 0) {
      if (!accept(&c, '(')) BAD("the header's 'shape' is not a tuple");
      d->ndim = 0;
      while (!accept(&c, ')')) {
        long long v;
        if (!py_int(&c, &v)) BAD("the header's 'shape' holds something other than non-negative integers");
        d->dims[d->ndim++] = v;
        if (!accept(&c, ',')) {
          if (!accept(&c, ')')) BAD("the header's 'shape' is malformed");
          if (d->ndim == 1) BAD("the header's 'shape' (n) lacks the comma of a tuple (n,)");
          break;
        }
      }
      seen[2]++;
    } else {
      BAD("the header has an unexpected key '%.*s'", (int)(kn > 40 ? 40 : kn), k);
    }
    if (!accept(&c, ',')) {
      if (accept(&c, '}')) break;
      BAD("the header's dictionary is malformed at byte %ld", (long)(c.p - text));
    }
  }
  skip_space(&c);
  if (c.p != c.end) BAD("the header has more than a dictionary (byte %ld)", (long)(c.p - text));
  static const char *const keys[] = {"descr", "fortran_order", "shape"};
  for (int i = 0; i < 3; i++) {
    if (seen[i] == 0) BAD("the header lacks '%s'", keys[i]);
    if (seen[i] > 1) BAD("the header gives '%s' twice", keys[i]);
  }
  return MPI_SUCCESS;
}

/* Bytes of the data: the product of the dimensions and the size, or -1. */
static long long data_bytes(const long long *dims, long long ndim, int size) {
  long long n = size;
  for (long long i = 0; i < ndim; i++)
    if (!lmpio_lua_mul_ok(n, dims[i], &n)) return -1;
  return n;
}

/* Pushes the header numpy would write for d: the preamble (magic, version
 * 1.0, or 2.0 when the dictionary needs more than 65535 bytes, and the
 * length), the dictionary, blanks up to a multiple of 64 bytes, '\n'. */
static void push_header(lua_State *L, const npy_desc *d) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "{'descr': '%c%c%d', 'fortran_order': %s, 'shape': (", d->order, d->kind, d->size,
                  d->fortran ? "True" : "False");
  luaL_addvalue(&b);
  for (long long i = 0; i < d->ndim; i++) {
    char num[32];
    snprintf(num, sizeof num, i + 1 < d->ndim ? "%lld, " : d->ndim == 1 ? "%lld," : "%lld", d->dims[i]);
    luaL_addstring(&b, num);
  }
  luaL_addstring(&b, "), }");
  luaL_pushresult(&b);
  size_t n = lua_rawlen(L, -1) + 1; /* with the '\n' */
  size_t pre = NPY_MAGIC_LEN + 2 + 2;
  if (n + (NPY_ALIGN - (pre + n) % NPY_ALIGN) % NPY_ALIGN > 65535) pre = NPY_MAGIC_LEN + 2 + 4;
  size_t pad = (NPY_ALIGN - (pre + n) % NPY_ALIGN) % NPY_ALIGN;
  size_t len = n + pad;
  unsigned char head[NPY_MAGIC_LEN + 2 + 4];
  memcpy(head, NPY_MAGIC, NPY_MAGIC_LEN);
  head[6] = pre == 10 ? 1 : 2;
  head[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) head[8 + i] = (unsigned char)(len >> (8 * i)); /* little-endian */
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, (const char *)head, pre);
  lua_pushvalue(L, -2);
  luaL_addvalue(&b);
  for (size_t i = 0; i < pad; i++) luaL_addchar(&b, ' ');
  luaL_addchar(&b, '\n');
  luaL_pushresult(&b);
  lua_remove(L, -2); /* the dictionary */
}

/* ---- agreement -------------------------------------------------------------- */

static long long hash(const char *s, size_t n) {
  unsigned long long h = 1469598103934665603ULL; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return (long long)(h >> 2);
}

/* Rank root's string to every rank (pushed). */
static void bcast_string(lua_State *L, MPI_Comm comm, int root, const char *s, size_t len) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  long long n = rank == root ? (long long)len : 0;
  MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm);
  char *buf = lua_newuserdatauv(L, (size_t)n + 1, 0);
  if (rank == root) memcpy(buf, s, (size_t)n);
  MPI_Bcast(buf, (int)n, MPI_CHAR, root, comm);
  lua_pushlstring(L, buf, (size_t)n);
  lua_remove(L, -2);
}

/* Every rank learns whether any rank's arguments were wrong (err, local),
 * whether the ranks read or write alike and give the same header (key):
 * one MPI_Allreduce, and a broadcast of the first wrong rank's reason. */
static void agree(lua_State *L, MPI_Comm comm, const char *err, int writing, long long key) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  long long v[5] = {err ? rank : size, writing, -writing, key, -key}, r[5];
  MPI_Allreduce(v, r, 5, MPI_LONG_LONG, MPI_MIN, comm);
  if (r[0] < size) {
    bcast_string(L, comm, (int)r[0], err ? err : "", err ? strlen(err) : 0);
    if (size > 1) lua_pushfstring(L, "%s (rank %d)", lua_tostring(L, -1), (int)r[0]);
    else lua_pushfstring(L, "%s", lua_tostring(L, -1));
    lmpio_lua_raise(L, MPI_ERR_ARG, lua_tostring(L, -1));
  }
  if (r[1] != -r[2])
    lmpio_lua_raise(L, MPI_ERR_NOT_SAME, "some ranks read (\"r\", \"r+\") and others write (\"w\", \"w+\")");
  if (r[3] != -r[4])
    lmpio_lua_raise(L, MPI_ERR_NOT_SAME, "the ranks give different descriptions (type, shape, order, datarep)");
}

/* ---- the description a script gives ------------------------------------------ */

static const char *const desc_fields[] = {"type", "shape", "order", "datarep", "offset", "info", NULL};

/* Checks the description at idx (writing: every field; reading: only
 * info may be given); fills d (dims: a new userdata, left on the stack) and
 * *type.  NULL, or the reason (pushed). */
static const char *check_desc(lua_State *L, int idx, int writing, npy_desc *d, MPI_Datatype *type, const char **rep) {
  if (lua_isnoneornil(L, idx)) {
    if (writing) return lua_pushstring(L, "writing needs a description {type = ..., shape = {...}}");
    return NULL;
  }
  if (!lua_istable(L, idx)) return lua_pushfstring(L, "the description is a %s, not a table", luaL_typename(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    int known = 0;
    for (int i = 0; lua_type(L, -1) == LUA_TSTRING && desc_fields[i]; i++)
      known |= strcmp(lua_tostring(L, -1), desc_fields[i]) == 0;
    if (!known) {
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1);
      return lua_pushfstring(L, "unknown field '%s' in the description (type, shape, order, datarep, info)", k);
    }
    if (!writing && strcmp(lua_tostring(L, -1), "info") != 0)
      return lua_pushfstring(L, "field '%s': reading takes the description from the header (only info may be given)",
                             lua_tostring(L, -1));
  }
  if (!writing) return NULL;
  /* type */
  lua_getfield(L, idx, "type");
  if (lua_isnil(L, -1)) return lua_pushstring(L, "the description lacks its type (e.g. type = lmpio.DOUBLE)");
  if (!lmpio_lua_istype(L, -1)) return lua_pushfstring(L, "the description's type is a %s, not a datatype", luaL_typename(L, -1));
  *type = lmpio_lua_checktype(L, -1);
  lua_pop(L, 1);
  const char *tname = lmpio_lua_typename(*type);
  if (!lmpio_lua_isnamed(*type) || !tname)
    return lua_pushstring(L, "the description's type is a derived datatype (.npy holds a predefined one, e.g. lmpio.DOUBLE)");
  int size = 0;
  MPI_Type_size(*type, &size);
  d->kind = kind_of(*type, size);
  d->size = size;
  if (!d->kind)
    return lua_pushfstring(L, "type %s has no .npy dtype (numpy's are " READABLE_LIST ")", tname);
  /* datarep */
  lua_getfield(L, idx, "datarep");
  *rep = lua_isnil(L, -1) ? "native" : lua_tostring(L, -1);
  if (lua_type(L, -1) != LUA_TSTRING && !lua_isnil(L, -1))
    return lua_pushfstring(L, "the description's datarep is a %s, not a string", luaL_typename(L, -1));
  lua_pop(L, 1);
  int big = !host_little();
  if (strcmp(*rep, "external32") == 0) {
    /* only the types a read gives back: their size is the same in
     * external32 (LONG, for one, is 8 bytes here and 4 there) */
    int same = 0;
    for (size_t i = 0; i < NREADABLE; i++) same |= readable[i].t[0] == *type || readable[i].t[1] == *type;
    if (!same)
      return lua_pushfstring(L, "type %s in external32: write it in native, or as one of the types a read gives "
                             "(lmpio.npy.open's list)", tname);
    big = 1;
  } else if (strcmp(*rep, "native") != 0) {
    return lua_pushfstring(L, "datarep '%s': a .npy file is written in native or external32", *rep);
  }
  d->order = size == 1 ? '|' : big ? '>' : '<';
  /* order */
  lua_getfield(L, idx, "order");
  const char *order = lua_isnil(L, -1) ? "C" : lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
  if (strcmp(order, "C") != 0 && strcmp(order, "F") != 0)
    return lua_pushfstring(L, "the description's order is '%s' (\"C\" or \"F\")", luaL_tolstring(L, -1, NULL));
  d->fortran = order[0] == 'F';
  lua_pop(L, 1);
  /* shape */
  lua_getfield(L, idx, "shape");
  if (lua_isnil(L, -1)) return lua_pushstring(L, "the description lacks its shape (a table of dimensions: {n}, {m, n}, {} for one value)");
  if (!lua_istable(L, -1)) return lua_pushfstring(L, "the description's shape is a %s, not a table of dimensions", luaL_typename(L, -1));
  lua_Unsigned n = lua_rawlen(L, -1);
  if (n > NPY_MAX_HEADER / 3) return lua_pushfstring(L, "the shape has %I dimensions, too many", (lua_Integer)n);
  d->dims = lua_newuserdatauv(L, (n ? n : 1) * sizeof *d->dims, 0);
  lua_insert(L, -2);
  d->ndim = (long long)n;
  for (lua_Unsigned i = 0; i < n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, -1, &isint);
    if (!isint || v < 0)
      return lua_pushfstring(L, "dimension %I of the shape is %s, not a non-negative integer", (lua_Integer)i + 1,
                             luaL_tolstring(L, -1, NULL));
    d->dims[i] = v;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (data_bytes(d->dims, d->ndim, d->size) < 0) return lua_pushstring(L, "the shape holds more bytes than a file can");
  return NULL;
}

/* ---- the open ---------------------------------------------------------------- */

/* Pushes the description {type=, shape=, order=, offset=, datarep=}. */
static void push_desc(lua_State *L, const npy_desc *d, MPI_Datatype type, long long offset, const char *rep) {
  lua_createtable(L, 0, 5);
  lmpio_lua_pushtype(L, type, 0);
  lua_setfield(L, -2, "type");
  lua_createtable(L, (int)(d->ndim < 1000000 ? d->ndim : 0), 0);
  for (long long i = 0; i < d->ndim; i++) {
    lua_pushinteger(L, d->dims[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "shape");
  lua_pushstring(L, d->fortran ? "F" : "C");
  lua_setfield(L, -2, "order");
  lua_pushinteger(L, offset);
  lua_setfield(L, -2, "offset");
  lua_pushstring(L, rep);
  lua_setfield(L, -2, "datarep");
}

/* Under lua_pcall: 1 the file, 2 the bytes this rank writes at 0 (or
 * nil), 3 the offset, 4 the type, 5 the datarep: writes, sets the view. */
static int finish_open(lua_State *L) {
  if (!lua_isnil(L, 2)) {
    lua_getfield(L, 1, "write_at_all");
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    lua_pushvalue(L, 2);
    lua_call(L, 3, 0);
  }
  lua_getfield(L, 1, "set_view");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 5);
  lua_call(L, 5, 0);
  return 0;
}

/* Closes the file at fidx (every rank failed alike) and raises the error on top. */
static int close_and_raise(lua_State *L, int fidx) {
  lua_getfield(L, fidx, "close");
  lua_pushvalue(L, fidx);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1); /* the first error is the one said */
  return lua_error(L);
}

/* Rank 0: reads the preamble and the header of the file at fidx; on
 * success pushes the dictionary's text and sets *offset, else pushes the
 * reason and returns its class.  Checks that the data fit in the file
 * when it is only read (check_size). */
static int read_header(lua_State *L, int fidx, long long *offset, int check_size) {
  lfile *f = lmpio_lua_checkudata(L, fidx, LMPIO_LUA_FILE);
  unsigned char pre[12];
  MPI_Status st;
  int rc, got = 0;
  LMPIO_LUA_CORE(L, rc, lmpio_file_read_at(f->fh, 0, pre, (int)sizeof pre, MPI_BYTE, &st));
  if (rc != MPI_SUCCESS) {
    lua_pushstring(L, lmpio_last_error_message());
    return rc;
  }
  MPI_Get_count(&st, MPI_BYTE, &got);
  if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
    lua_pushstring(L, "not a .npy file (it does not start with \\x93NUMPY)");
    return MPI_ERR_IO;
  }
  if (got < 10) {
    lua_pushfstring(L, "truncated: %d bytes, too few for the .npy preamble", got);
    return MPI_ERR_IO;
  }
  int major = pre[6], minor = pre[7];
  long long len;
  if (major == 1 && minor == 0) {
    len = pre[8] | pre[9] << 8;
    *offset = 10;
  } else if ((major == 2 || major == 3) && minor == 0 && got == 12) {
    len = (long long)pre[8] | (long long)pre[9] << 8 | (long long)pre[10] << 16 | (long long)pre[11] << 24;
    *offset = 12;
  } else if (major == 2 || major == 3) {
    lua_pushfstring(L, "truncated: %d bytes, too few for the .npy %d.0 preamble", got, major);
    return MPI_ERR_IO;
  } else {
    lua_pushfstring(L, ".npy format version %d.%d is not supported (1.0, 2.0, 3.0)", major, minor);
    return MPI_ERR_IO;
  }
  if (len > NPY_MAX_HEADER) {
    lua_pushfstring(L, "its header is %I bytes long, more than lmpio reads (%d)", (lua_Integer)len, NPY_MAX_HEADER);
    return MPI_ERR_IO;
  }
  char *text = lua_newuserdatauv(L, (size_t)len + 1, 0);
  LMPIO_LUA_CORE(L, rc, lmpio_file_read_at(f->fh, *offset, text, (int)len, MPI_BYTE, &st));
  if (rc != MPI_SUCCESS) {
    lua_pushstring(L, lmpio_last_error_message());
    return rc;
  }
  MPI_Get_count(&st, MPI_BYTE, &got);
  if (got < len) {
    lua_pushfstring(L, "truncated header: %d of its %I bytes", got, (lua_Integer)len);
    return MPI_ERR_IO;
  }
  *offset += len;
  lua_pushlstring(L, text, (size_t)len);
  lua_remove(L, -2);
  if (!check_size) return MPI_SUCCESS;
  /* the data must be there: parse here too (every rank parses again) */
  npy_desc d = {0};
  char err[160];
  d.dims = lua_newuserdatauv(L, ((size_t)len / 2 + 1) * sizeof *d.dims, 0);
  rc = parse_header(lua_tostring(L, -2), (size_t)len, &d, err, sizeof err);
  lua_pop(L, 1);
  if (rc != MPI_SUCCESS) return MPI_SUCCESS; /* said by every rank's parse */
  MPI_Offset fsize = 0;
  LMPIO_LUA_CORE(L, rc, lmpio_file_get_size(f->fh, &fsize));
  long long need = data_bytes(d.dims, d.ndim, d.size);
  if (rc == MPI_SUCCESS && (need < 0 || fsize - *offset < need)) {
    lua_pop(L, 1);
    lua_pushfstring(L, "truncated data: its header promises %I bytes of data, the file holds %I", (lua_Integer)need,
                    (lua_Integer)(fsize - *offset));
    return MPI_ERR_IO;
  }
  return MPI_SUCCESS;
}

/***
Opens a `.npy` file (numpy's array format) on every rank of a communicator,
reading or writing its header once; collective.

Writing (`"w"`, `"w+"`: the file is created or emptied), the description
gives the array: `type`, a predefined datatype with a numpy dtype (`b1`
from `C_BOOL`, `i1`..`i8`, `u1`..`u8`, `f4`, `f8`, `c8`, `c16`: integers,
floating-point and complex types of 1 to 16 bytes), and `shape`, a table
of dimensions (`{}` for a single value); `order` `"C"` (default: the last
index varies fastest) or `"F"` (Fortran's, the first fastest); `datarep`
`"native"` (default) or `"external32"` (big-endian); `info` hints for the
open.  Rank 0 writes the header, padded so that the data start at a
multiple of 64 bytes (version 1.0, or 2.0 for a header longer than
65535 bytes); every rank must give the same description.  The other
fields of a description that `lmpio.npy.open` returned (`offset`) are
allowed and ignored, so a read description writes a copy.

Reading (`"r"`, `"r+"`), rank 0 reads the header (versions 1.0, 2.0 and
3.0) and every rank gets the description it holds.  numpy's dtypes
`b1`, `i1`, `u1`, `i2`, `u2`, `i4`, `u4`, `i8`, `u8`, `f4`, `f8`,
`c8` and `c16` are read as `lmpio.C_BOOL`, `INT8_T`, `UINT8_T`, `SHORT`,
`UNSIGNED_SHORT`, `INT`, `UNSIGNED`, `INT64_T`, `UINT64_T`, `FLOAT`,
`DOUBLE`, `C_FLOAT_COMPLEX` and `C_DOUBLE_COMPLEX`; little-endian (`<`)
and byte (`|`) data through the `native` representation, big-endian
(`>`) data through `external32`.  (On a big-endian machine `>` is
native, and `<` data, for which MPI has no representation, is refused
with `MPI_ERR_UNSUPPORTED_DATAREP`.)  Opened `"r"`, a file shorter than
its header's shape says is an error; `"r+"` allows it (data still to
be written).

Either way the file's view is `(offset, type, type, datarep)`: offsets
count elements of the array in the file's order (`order`), so
`fh:read_at_all(0, n, desc.type)` reads the first n and a subarray
filetype (`lmpio.type.subarray(desc.shape, ...)`) with `fh:set_view` gives
each rank its block.
@function lmpio.npy.open
@tparam[opt=lmpio.world] comm comm the ranks that open the file together
@tparam string path the file's name
@tparam string mode `"r"`, `"r+"`, `"w"` or `"w+"`
@tparam[opt] table desc writing: `{type = , shape = , order = , datarep = , info = }`;
  reading: nothing, or `{info = }`
@treturn file the open file, its view at the data
@treturn table the description: `type` (a datatype), `shape` (a table of
  integers), `order` (`"C"` or `"F"`), `offset` (bytes before the data),
  `datarep` (`"native"` or `"external32"`)
@raise an @{error} object, the same on every rank: `MPI_ERR_ARG` (a wrong
  argument or description on any rank: a missing type or shape, a type
  with no numpy dtype), `MPI_ERR_NOT_SAME` (ranks give different
  descriptions, or some read and others write), `MPI_ERR_IO` (not a `.npy`
  file, a header or data cut short, a malformed header),
  `MPI_ERR_UNSUPPORTED_DATAREP` (a dtype lmpio does not read: structured,
  strings, objects, dates, half or extended precision), and the errors of
  @{lmpio.open}
@usage
-- a 2-d array, each rank writing its block of rows
local rows, cols = 4 * world:size(), 6
local fh <close>, desc = lmpio.npy.open(world, "/tmp/a.npy", "w",
                                        {type = lmpio.DOUBLE, shape = {rows, cols}})
fh:set_view(desc.offset, desc.type, lmpio.type.subarray({rows, cols},
            {4, cols}, {4 * world:rank(), 0}, desc.type))
fh:write_at_all(0, lmpio.array(lmpio.DOUBLE, 4 * cols))
*/
static int l_npy_open(lua_State *L) {
  lmpio_lua_running(L);
  if (lua_type(L, 1) == LUA_TSTRING) { /* the communicator defaults to world */
    lua_getfield(L, lua_upvalueindex(1), "world");
    lua_insert(L, 1);
  }
  lua_settop(L, 4);
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int rank;
  MPI_Comm_rank(comm, &rank);
  const char *err = NULL;
  const char *mode = lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : NULL;
  int writing = mode && (strcmp(mode, "w") == 0 || strcmp(mode, "w+") == 0);
  int reading = mode && (strcmp(mode, "r") == 0 || strcmp(mode, "r+") == 0);
  npy_desc d = {0};
  MPI_Datatype type = MPI_DATATYPE_NULL;
  const char *rep = "native";
  if (lua_type(L, 2) != LUA_TSTRING) err = lua_pushfstring(L, "the path is a %s, not a string", luaL_typename(L, 2));
  else if (!writing && !reading)
    err = lua_pushfstring(L, "mode '%s': a .npy file is opened \"r\" or \"r+\" (its header read) or \"w\" or \"w+\" (written)",
                          luaL_tolstring(L, 3, NULL));
  else err = check_desc(L, 4, writing, &d, &type, &rep);
  long long key = 0;
  if (!err && writing) {
    push_header(L, &d);
    size_t n;
    const char *h = lua_tolstring(L, -1, &n);
    key = hash(h, n) ^ hash(rep, strlen(rep));
    if (n > NPY_MAX_HEADER) /* (what a read would refuse) */
      err = lua_pushfstring(L, "the header would be %I bytes, more than lmpio reads (%d)", (lua_Integer)n, NPY_MAX_HEADER);
  }
  agree(L, comm, err, writing, key);
  int hidx = lua_gettop(L); /* writing: the header */

  lua_getfield(L, lua_upvalueindex(1), "open");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  if (lua_istable(L, 4)) lua_getfield(L, 4, "info");
  else lua_pushnil(L);
  lua_call(L, 4, 1);
  int fidx = lua_gettop(L);

  long long offset = 0;
  if (writing) {
    offset = (long long)lua_rawlen(L, hidx);
    lua_pushcfunction(L, finish_open);
    lua_pushvalue(L, fidx);
    if (rank == 0) lua_pushvalue(L, hidx);
    else lua_pushliteral(L, "");
  } else {
    /* rank 0 reads the header; every rank gets its text (or the reason) */
    long long h[2] = {MPI_SUCCESS, 0};
    if (rank == 0) {
      h[0] = read_header(L, fidx, &h[1], strcmp(mode, "r") == 0);
    }
    MPI_Bcast(h, 2, MPI_LONG_LONG, 0, comm);
    size_t tn = 0;
    const char *t0 = rank == 0 ? lua_tolstring(L, -1, &tn) : "";
    bcast_string(L, comm, 0, t0, tn);
    if (h[0] != MPI_SUCCESS) {
      const char *why = lua_tostring(L, -1);
      lua_pushfstring(L, "%s: %s", lua_tostring(L, 2), why);
      lmpio_lua_pusherror(L, (int)h[0], lua_tostring(L, -1));
      return close_and_raise(L, fidx);
    }
    size_t n;
    const char *text = lua_tolstring(L, -1, &n);
    offset = h[1];
    d.dims = lua_newuserdatauv(L, (n / 2 + 1) * sizeof *d.dims, 0);
    char why[200];
    int rc = parse_header(text, n, &d, why, sizeof why);
    MPI_Datatype t = rc == MPI_SUCCESS ? type_of(d.kind, d.size) : MPI_DATATYPE_NULL;
    int big = d.order == '>' && d.size > 1, little = d.order == '<' && d.size > 1;
    rep = (big && host_little()) ? "external32" : "native";
    if (rc == MPI_SUCCESS && little && !host_little()) {
      snprintf(why, sizeof why, "little-endian data ('<') on a big-endian machine: MPI has no representation for it");
      rc = MPI_ERR_UNSUPPORTED_DATAREP;
    }
    if (rc != MPI_SUCCESS) {
      lua_pushfstring(L, "%s: %s", lua_tostring(L, 2), why);
      lmpio_lua_pusherror(L, rc, lua_tostring(L, -1));
      return close_and_raise(L, fidx);
    }
    type = t;
    lua_pushcfunction(L, finish_open);
    lua_pushvalue(L, fidx);
    lua_pushnil(L);
  }
  lua_pushinteger(L, offset);
  lmpio_lua_pushtype(L, type, 0);
  lua_pushstring(L, rep);
  if (lua_pcall(L, 5, 0, 0) != LUA_OK) return close_and_raise(L, fidx);
  lua_pushvalue(L, fidx);
  push_desc(L, &d, type, offset, rep);
  return 2;
}

int lmpio_lua_npy_open(lua_State *L) {
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, -2); /* the module table, for lmpio.open and lmpio.world */
  lua_pushcclosure(L, l_npy_open, 1);
  lua_setfield(L, -2, "open");
  lua_setfield(L, -2, "npy");
  return 0;
}
