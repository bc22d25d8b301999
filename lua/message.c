/* The collectives of communicators over values and arrays.
 *
 * Collectives: comm:bcast, comm:allgather, comm:allreduce, comm:scan and
 * comm:exscan of Lua values (serialised, lua/serial.c) and of arrays
 * (element-wise reductions into a new array, bcast into arrays, allgather
 * concatenated), and comm:reduce, comm:gather and comm:scatter.  Every
 * collective keeps the rule of lua/agree.c: its first communication
 * is an agreement (lmpio_lua_agree, or allgather's lmpio_lua_gather_blocks)
 * that carries what each rank gave (kind of value, type, count, root, op),
 * so that a mismatch on one rank makes every rank raise and none hang.
 * Arrays travel as their own MPI datatype, straight from and into their
 * memory.
 */
#include "error.h"
#include "helpers.h"
#include "datatype.h"
#include "buffer.h"
#include "agree.h"
#include "comm.h"
#include "serial.h"

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

enum { LMPIO_LUA_ALLREDUCE, LMPIO_LUA_SCAN, LMPIO_LUA_EXSCAN };

/* MPI counts are ints: arrays go in pieces of this many elements. */
#define PIECE ((size_t)1 << 28)

static const char *typename_of(long long code) {
  const char *n = lmpio_lua_typename(lmpio_lua_codetype(code));
  return n ? n : "?";
}

/* A new array like a (type, count, shape), zeroed. */
static lmpio_lua_buffer *newlike(lua_State *L, const lmpio_lua_buffer *a) {
  lmpio_lua_buffer *r = lmpio_lua_newbuffer(L, a->type, a->count);
  r->ndim = a->ndim;
  r->forder = a->forder;
  memcpy(r->dims, a->dims, sizeof r->dims);
  return r;
}

/* An address for MPI when an array has no memory (0 elements). */
static void *mem(const lmpio_lua_buffer *b) { return b->data ? (void *)b->data : (void *)&b->count; }

/* Raises the agreed argument error of a collective (every rank raises the
 * same one: its cause is in what every rank learned from the agreement). */
static int agreed(lua_State *L, const char *name, int arg, const char *why) {
  return lmpio_lua_raise(L, MPI_ERR_ARG, lua_pushfstring(L, "bad argument #%d to '%s' (%s)", arg, name, why));
}

/* ---- reductions ---------------------------------------------------------------- */

/* The one table of reduction operations, for numbers, booleans and arrays
 * (their places are what the agreements compare). */
static const char *const opnames[] = {"sum", "max", "min", "prod", "land", "lor", "band", "bor", "bxor", NULL};
enum { OP_SUM, OP_MAX, OP_MIN, OP_PROD, OP_LAND, OP_LOR, OP_BAND, OP_BOR, OP_BXOR };
static const MPI_Op mpiops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_LOR, MPI_BAND, MPI_BOR, MPI_BXOR};

/* The MPI datatype and op that do op on elements of type t; NULL, or why
 * op does not apply to them.  Booleans take every op as "all" (min, prod,
 * land) or "any" (the others), as comm:allreduce of booleans does; bytes
 * and chars are reduced as the unsigned or signed chars they are. */
static const char *opfor(MPI_Datatype t, int op, MPI_Datatype *mt, MPI_Op *mop) {
  int bitwise = op >= OP_BAND, logical = op == OP_LAND || op == OP_LOR;
  *mt = t;
  *mop = mpiops[op];
  switch (lmpio_lua_typekind(t)) {
  case LMPIO_LUA_K_F32:
  case LMPIO_LUA_K_F64:
  case LMPIO_LUA_K_LDOUBLE:
    if (bitwise || logical) return "applies to integers and booleans, not to floats";
    return NULL;
  case LMPIO_LUA_K_BOOL:
    if (bitwise) return "applies to integers, not to booleans";
    *mop = op == OP_MIN || op == OP_PROD || op == OP_LAND ? MPI_LAND : MPI_LOR;
    return NULL;
  case LMPIO_LUA_K_INT:
  case LMPIO_LUA_K_UINT:
    if (t == MPI_CHAR) *mt = CHAR_MIN < 0 ? MPI_SIGNED_CHAR : MPI_UNSIGNED_CHAR;
    else if ((t == MPI_BYTE || t == MPI_PACKED || t == MPI_CHARACTER) && !bitwise) *mt = MPI_UNSIGNED_CHAR;
    return NULL;
  default: /* complex numbers */
    return op == OP_SUM || op == OP_PROD ? NULL : "applies to complex numbers only as \"sum\" or \"prod\"";
  }
}

/* MPI leaves rank 0's result of an exscan undefined: the identity of op,
 * as for numbers (0, 1, all bits for band); 0 for max and min, whose
 * identities are no value (the caller returns nil). */
static int identity(lmpio_lua_buffer *r, int op) {
  int kind = lmpio_lua_typekind(r->type);
  if (kind == LMPIO_LUA_K_BOOL) op = op == OP_MIN || op == OP_PROD || op == OP_LAND ? OP_LAND : OP_LOR;
  if (op == OP_MAX || op == OP_MIN) return 0;
  if (!r->count || op == OP_SUM || op == OP_LOR || op == OP_BOR || op == OP_BXOR) return 1; /* zeroed */
  if (op == OP_BAND) {
    memset(r->data, 0xff, r->nbytes);
    return 1;
  }
  unsigned char one[32] = {0}; /* 1 as an element of r */
  size_t es = r->esize;
  if (kind == LMPIO_LUA_K_F32 || (kind == LMPIO_LUA_K_NONE && es == 2 * sizeof(float))) {
    float x = 1;
    memcpy(one, &x, sizeof x);
  } else if (kind == LMPIO_LUA_K_F64 || (kind == LMPIO_LUA_K_NONE && es == 2 * sizeof(double))) {
    double x = 1;
    memcpy(one, &x, sizeof x);
  } else if (kind == LMPIO_LUA_K_LDOUBLE || kind == LMPIO_LUA_K_NONE) {
    long double x = 1;
    memcpy(one, &x, sizeof x < sizeof one ? sizeof x : sizeof one);
  } else {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    one[es - 1] = 1;
#else
    one[0] = 1;
#endif
  }
  for (size_t i = 0; i < r->count; i++) memcpy(r->data + i * es, one, es < sizeof one ? es : sizeof one);
  return 1;
}

static int reduce_kinds(lua_State *L, const char *name, const long long *v) {
  static const char *const kinds[] = {"numbers", "booleans", "arrays"};
  long long hi = v[3], lo = -v[4];
  if (hi < 0 || hi > 2 || lo < 0 || lo > 2) hi = lo = 0;
  return agreed(L, name, 1, lua_pushfstring(L, "%s on some ranks, %s on others", kinds[hi], kinds[lo]));
}

/* The agreement of reductions: v[1], v[2] op; v[3], v[4] kind (comm.c's
 * layout), then type code and count of arrays, and the root of reduce.
 * Checks what every rank learned; raises on every rank alike. */
enum { V_OP = 1, V_KIND = 3, V_FLOAT = 5, V_CODE = 8, V_COUNT = 10, V_ROOT = 12 };

static void check_agreed(lua_State *L, const char *name, const long long *v, int arrays) {
  if (v[V_KIND] != -v[V_KIND + 1]) reduce_kinds(L, name, v);
  if (v[V_ROOT] != -v[V_ROOT + 1])
    agreed(L, name, 3, lua_pushfstring(L, "the ranks name different roots, from %d to %d", (int)-v[V_ROOT + 1],
                                       (int)v[V_ROOT]));
  if (v[V_OP] != -v[V_OP + 1])
    agreed(L, name, 2, lua_pushfstring(L, "the ranks name different operations, '%s' and '%s'", opnames[-v[V_OP + 1]],
                                       opnames[v[V_OP]]));
  if (!arrays) return;
  if (v[V_CODE] != -v[V_CODE + 1])
    agreed(L, name, 1, lua_pushfstring(L, "arrays of different types on different ranks, %s and %s",
                                       typename_of(-v[V_CODE + 1]), typename_of(v[V_CODE])));
  if (v[V_COUNT] != -v[V_COUNT + 1])
    agreed(L, name, 1, lua_pushfstring(L, "arrays of different lengths on different ranks, from %I to %I",
                                       (lua_Integer)-v[V_COUNT + 1], (lua_Integer)v[V_COUNT]));
}

/* Runs the reduction of kind (LMPIO_LUA_ALLREDUCE, _SCAN, _EXSCAN, or -1
 * for reduce to root) of a into r (NULL on reduce's other ranks). */
static void reduce_pieces(lua_State *L, MPI_Comm comm, int kind, int root, const lmpio_lua_buffer *a,
                          lmpio_lua_buffer *r, MPI_Datatype mt, MPI_Op mop) {
  for (size_t off = 0; off < a->count; off += PIECE) {
    int n = (int)(a->count - off < PIECE ? a->count - off : PIECE);
    const void *in = a->data + off * a->esize;
    void *out = r ? (void *)(r->data + off * r->esize) : NULL;
    int rc;
    const char *what = kind == LMPIO_LUA_ALLREDUCE ? "MPI_Allreduce"
                       : kind == LMPIO_LUA_SCAN    ? "MPI_Scan"
                       : kind == LMPIO_LUA_EXSCAN  ? "MPI_Exscan"
                                                   : "MPI_Reduce";
    LMPIO_LUA_WAIT(L, lmpio_lua_collective_name, rc,
                   kind == LMPIO_LUA_ALLREDUCE ? MPI_Allreduce(in, out, n, mt, mop, comm)
                   : kind == LMPIO_LUA_SCAN    ? MPI_Scan(in, out, n, mt, mop, comm)
                   : kind == LMPIO_LUA_EXSCAN  ? MPI_Exscan(in, out, n, mt, mop, comm)
                                               : MPI_Reduce(in, out, n, mt, mop, root, comm));
    lmpio_lua_checkmpi(L, rc, what);
  }
}

static int reduce_array(lua_State *L, MPI_Comm comm, int kind, const char *name) {
  lua_settop(L, 3);
  int code;
  lmpio_lua_buffer *a = lmpio_lua_toarray_flat(L, 2, &code);
  int op = lmpio_lua_checkoption(L, 3, lmpio_lua_typekind(a->type) == LMPIO_LUA_K_BOOL ? "land" : "sum", opnames);
  lmpio_lua_buffer *r = newlike(L, a); /* 4: before the agreement (no error after it but MPI's) */
  long long n = (long long)a->count;
  long long v[LMPIO_LUA_NAGREE] = {0, op, -op, 2, -2, 0, 0, 0, code, -code, n, -n};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  check_agreed(L, name, v, 1);
  MPI_Datatype mt;
  MPI_Op mop;
  const char *why = opfor(a->type, op, &mt, &mop);
  if (why) agreed(L, name, 2, lua_pushfstring(L, "'%s' %s", opnames[op], why));
  reduce_pieces(L, comm, kind, 0, a, r, mt, mop);
  if (kind == LMPIO_LUA_EXSCAN && lmpio_lua_commrank(comm) == 0 && !identity(r, op)) lua_pushnil(L);
  return 1;
}

/***
Combines a number, a boolean or an array from every rank on one rank
(`MPI_Reduce`).
Collective.  Values and ops are those of `comm:allreduce`; only the root
gets the result.  Every rank must give the same kind of value (number,
boolean or array; arrays of the same type and length), the same op and
the same root: otherwise every rank raises, none hangs.
@function comm:reduce
@param x a number, a boolean or an array
@param[opt] op as for `comm:allreduce`
@param[opt=0] root the rank that gets the result
@return on the root the combination (a new array for arrays); nil on the
  other ranks
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when any rank's
  arguments are wrong or the ranks disagree
@usage local total = comm:reduce(counts, "sum", 0)   -- counts: an array
if comm:rank() == 0 then print(total:totable()) end
*/
static int c_reduce(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  lua_settop(L, 4);
  lua_Integer root = lmpio_lua_optinteger(L, 4, 0);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm);
  if (root < 0 || root >= size) lmpio_lua_argerror(L, 4, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  int code = -1;
  lmpio_lua_buffer *a = lmpio_lua_toarray_flat(L, 2, &code);
  int isbool = !a && lua_type(L, 2) == LUA_TBOOLEAN;
  if (!a && !isbool) lmpio_lua_checknumber(L, 2);
  int kind = a ? 2 : isbool;
  int boolish = isbool || (a && lmpio_lua_typekind(a->type) == LMPIO_LUA_K_BOOL);
  int op = lmpio_lua_checkoption(L, 3, boolish ? "land" : "sum", opnames);
  int isfloat = !a && !isbool && !lua_isinteger(L, 2);
  lmpio_lua_buffer *r = a && rank == root ? newlike(L, a) : NULL; /* 5 */
  long long n = a ? (long long)a->count : 0;
  long long v[LMPIO_LUA_NAGREE] = {0, op, -op, kind, -kind, isfloat, 0, 0, code, -code, n, -n, root, -root};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  check_agreed(L, "reduce", v, a != NULL);
  MPI_Datatype mt;
  MPI_Op mop;
  if (a) {
    const char *why = opfor(a->type, op, &mt, &mop);
    if (why) agreed(L, "reduce", 2, lua_pushfstring(L, "'%s' %s", opnames[op], why));
    reduce_pieces(L, comm, -1, (int)root, a, r, mt, mop);
    if (!r) lua_pushnil(L);
    return 1;
  }
  /* one number or boolean, as comm.c reduces them */
  int allint = !v[V_FLOAT];
  if (isbool) {
    mop = op == OP_MIN || op == OP_PROD || op == OP_LAND ? MPI_LAND : MPI_LOR;
    if (op >= OP_BAND) agreed(L, "reduce", 2, lua_pushfstring(L, "'%s' applies to integers, not to booleans", opnames[op]));
  } else {
    mop = mpiops[op];
    if (!allint && (op == OP_LAND || op == OP_LOR || op >= OP_BAND))
      agreed(L, "reduce", 2, lua_pushfstring(L, "'%s' applies to integers, not to floats", opnames[op]));
  }
  long long iv = isbool ? lua_toboolean(L, 2) : allint ? (long long)lua_tointeger(L, 2) : 0, ir = 0;
  double dv = isbool || allint ? 0 : (double)lua_tonumber(L, 2), dr = 0;
  int rc;
  LMPIO_LUA_WAIT(L, lmpio_lua_collective_name, rc,
                 allint ? MPI_Reduce(&iv, &ir, 1, MPI_LONG_LONG, mop, (int)root, comm)
                        : MPI_Reduce(&dv, &dr, 1, MPI_DOUBLE, mop, (int)root, comm));
  lmpio_lua_checkmpi(L, rc, "MPI_Reduce");
  if (rank != root) lua_pushnil(L);
  else if (isbool) lua_pushboolean(L, ir != 0);
  else if (allint) lua_pushinteger(L, (lua_Integer)ir);
  else lua_pushnumber(L, (lua_Number)dr);
  return 1;
}

/* ---- bcast of arrays --------------------------------------------------------- */

/* Words of bcast's agreement (comm.c's first four are the failure, the
 * roots and the length of a serialised value).  Encodings that are 0 on a
 * rank without an array, so that only the arrays count in the maximum. */
#define BIG (LLONG_MAX / 4)
enum {
  B_ROOTARRAY = 4, /* the root gave an array */
  B_ANY,           /* some rank gave one */
  B_RCODE,         /* the root's type code + 1 */
  B_RCOUNT,        /* the root's count + 1 */
  B_CODEHI,        /* over the arrays: the largest code + 1, */
  B_CODELO,        /*   and BIG - the smallest */
  B_COUNTHI,       /* the same for counts */
  B_COUNTLO,
  B_RNDIM,         /* the root's shape: ndim, order, then its sizes in the */
  B_RFORDER,       /*   words of the short value (arrays do not use them) */
};

static int bcast_prepare(lua_State *L, int idx, int isroot, long long *v) {
  int code;
  lmpio_lua_buffer *a = lmpio_lua_toarray(L, idx, &code);
  if (!a) return 0;
  if (!isroot && a->readonly) lmpio_lua_argerror(L, idx, "cannot receive into a read-only array");
  if (!isroot) lmpio_lua_checkheld(L, a, 1);
  long long n = (long long)a->count;
  v[B_ANY] = 1;
  v[B_CODEHI] = code + 1;
  v[B_CODELO] = BIG - code;
  v[B_COUNTHI] = n + 1;
  v[B_COUNTLO] = BIG - n;
  if (isroot) {
    v[B_ROOTARRAY] = 1;
    v[B_RCODE] = code + 1;
    v[B_RCOUNT] = n + 1;
    v[B_RNDIM] = a->ndim;
    v[B_RFORDER] = a->forder;
    for (int k = 0; k < a->ndim; k++) v[LMPIO_LUA_NAGREE + k] = (long long)a->dims[k];
  }
  return 1;
}

static int bcast_arrays(lua_State *L, MPI_Comm comm, int root, const long long *v, int idx) {
  if (!v[B_ANY]) return 0;
  if (!v[B_ROOTARRAY])
    agreed(L, "bcast", 1, "the root's value is not an array, other ranks give arrays to fill");
  long long code = v[B_RCODE] - 1, n = v[B_RCOUNT] - 1;
  if (v[B_CODEHI] - 1 != code || BIG - v[B_CODELO] != code)
    agreed(L, "bcast", 1, lua_pushfstring(L, "the root sends an array of %s, other ranks give arrays of other types",
                                          typename_of(code)));
  if (v[B_COUNTHI] - 1 != n || BIG - v[B_COUNTLO] != n)
    agreed(L, "bcast", 1, lua_pushfstring(L, "the root sends %I elements, other ranks give arrays of other lengths",
                                          (lua_Integer)n));
  lmpio_lua_buffer *a;
  if (idx) {
    a = lmpio_lua_checkbuffer(L, idx);
    lua_pushvalue(L, idx);
  } else { /* a rank that gave no array gets a new one, shaped as the root's */
    a = lmpio_lua_newbuffer(L, lmpio_lua_codetype(code), (size_t)n);
    if (v[B_RNDIM] > 0 && v[B_RNDIM] <= LMPIO_LUA_MAXDIM) {
      a->ndim = (int)v[B_RNDIM];
      a->forder = (int)v[B_RFORDER];
      for (int k = 0; k < a->ndim; k++) a->dims[k] = (size_t)v[LMPIO_LUA_NAGREE + k];
    }
  }
  if (a->strided) { /* a slice: its elements scattered where they are */
    LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Bcast(a->data, 1, a->dtype, root, comm), "MPI_Bcast");
    return 1;
  }
  for (size_t off = 0; off < a->count; off += PIECE) { /* typed, as a slice on another rank takes them */
    int m = (int)(a->count - off < PIECE ? a->count - off : PIECE);
    LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Bcast(a->data + off * a->esize, m, a->type, root, comm), "MPI_Bcast");
  }
  return 1;
}

/* ---- allgather, gather and scatter ------------------------------------------- */

static void put64(unsigned char *b, uint64_t u) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (8 * i));
}

static uint64_t get64(const unsigned char *b) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)b[i] << (8 * i);
  return u;
}

/* Counts and displacements (in elements) of arrays of n[r] elements, one
 * per rank, into int arrays pushed as one userdata; raises on every rank
 * when they add up to more than MPI can count. */
static int *layout(lua_State *L, int size, const long long *n, const char *name) {
  int *cd = lua_newuserdatauv(L, 2 * (size_t)size * sizeof(int), 0);
  long long at = 0;
  for (int r = 0; r < size; r++) {
    if (n[r] > INT_MAX - at) agreed(L, name, 1, "the arrays add up to more than 2^31 - 1 elements");
    cd[r] = (int)n[r];
    cd[size + r] = (int)at;
    at += n[r];
  }
  return cd;
}

static int allgather_array(lua_State *L, MPI_Comm comm) {
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm), code;
  lmpio_lua_buffer *a = lmpio_lua_toarray(L, 2, &code);
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * LMPIO_LUA_GATHER_BLOCK, 0); /* 3 */
  long long *n = lua_newuserdatauv(L, (size_t)size * sizeof *n, 0);                       /* 4 */
  unsigned char *mine = blocks + (size_t)rank * LMPIO_LUA_GATHER_BLOCK;
  put64(mine, LMPIO_LUA_GATHER_ARRAY);
  put64(mine + 8, (uint64_t)code);
  put64(mine + 16, (uint64_t)a->count);
  lmpio_lua_gather_blocks(L, comm, blocks, NULL);
  long long total = 0;
  for (int r = 0; r < size; r++) {
    const unsigned char *b = blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK;
    if (get64(b) != LMPIO_LUA_GATHER_ARRAY) agreed(L, "allgather", 1, "arrays on some ranks, other values on others");
    if ((long long)get64(b + 8) != code)
      agreed(L, "allgather", 1, lua_pushfstring(L, "arrays of different types on different ranks, %s and %s",
                                                typename_of(code), typename_of((long long)get64(b + 8))));
    n[r] = (long long)get64(b + 16);
    total += n[r];
  }
  int *cd = layout(L, size, n, "allgather");
  lmpio_lua_buffer *all = lmpio_lua_newbuffer(L, a->type, (size_t)total);
  lmpio_lua_span sp;
  lmpio_lua_spanof(L, 2, a, &sp);
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Allgatherv(sp.ptr, sp.count, sp.type, mem(all), cd, cd + size, a->type, comm),
                           "MPI_Allgatherv");
  return 1;
}

/* gather's blocks: the length of the serialised value (or
 * LMPIO_LUA_GATHER_ARRAY), the root, an array's type code and count, then
 * a short value. */
enum { G_ROOT = 8, G_CODE = 16, G_COUNT = 24, G_VALUE = 32, G_INLINE = LMPIO_LUA_GATHER_BLOCK - G_VALUE };

/***
Every rank's value, or array, on the root (`MPI_Gatherv`).
Collective.  Arrays (every rank an array of the same type; lengths may
differ) arrive concatenated in rank order in one new array, as
`comm:allgather` concatenates them; other values (those `comm:bcast` can
send) arrive as a table whose element `r + 1` is rank r's value.  Every
rank must name the same root and give the same kind of value.
@function comm:gather
@param x this rank's value or array
@param[opt=0] root the rank that gets them
@return on the root the array or the table; nil on the other ranks
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when a value cannot
  be sent, or the ranks disagree on the root or the kind of value
@usage local all = comm:gather(mine)   -- rank 0: every rank's part, in order
*/
static int c_gather(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm), code = 0;
  lua_settop(L, 3);
  lua_Integer root = lmpio_lua_optinteger(L, 3, 0);
  if (root < 0 || root >= size) lmpio_lua_argerror(L, 3, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * LMPIO_LUA_GATHER_BLOCK, 0); /* 4 */
  long long *n = lua_newuserdatauv(L, (size_t)size * sizeof *n, 0);                       /* 5 */
  unsigned char *mine = blocks + (size_t)rank * LMPIO_LUA_GATHER_BLOCK;
  lmpio_lua_buffer *a = lmpio_lua_toarray(L, 2, &code);
  size_t len = 0;
  const unsigned char *bytes = NULL;
  if (a) {
    put64(mine, LMPIO_LUA_GATHER_ARRAY);
    put64(mine + G_CODE, (uint64_t)code);
    put64(mine + G_COUNT, (uint64_t)a->count);
  } else {
    bytes = lmpio_lua_serialise(L, 2, 2, &len); /* 6 */
    put64(mine, (uint64_t)len);
    if (len <= G_INLINE) memcpy(mine + G_VALUE, bytes, len);
  }
  put64(mine + G_ROOT, (uint64_t)root);
  lmpio_lua_gather_blocks(L, comm, blocks, NULL);
  int fits = 1;
  for (int r = 0; r < size; r++) {
    const unsigned char *b = blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK;
    if ((lua_Integer)get64(b + G_ROOT) != root)
      agreed(L, "gather", 2, lua_pushfstring(L, "the ranks name different roots, %I and %I", root,
                                             (lua_Integer)get64(b + G_ROOT)));
    if ((get64(b) == LMPIO_LUA_GATHER_ARRAY) != (a != NULL))
      agreed(L, "gather", 1, "arrays on some ranks, other values on others");
    if (a && (long long)get64(b + G_CODE) != code)
      agreed(L, "gather", 1, lua_pushfstring(L, "arrays of different types on different ranks, %s and %s",
                                             typename_of(code), typename_of((long long)get64(b + G_CODE))));
    n[r] = (long long)get64(b + (a ? G_COUNT : 0));
    if (n[r] > G_INLINE) fits = 0;
  }
  int *cd = layout(L, size, n, "gather");
  if (a) {
    lmpio_lua_buffer *all = rank == root ? lmpio_lua_newbuffer(L, a->type, (size_t)(cd[size - 1] + cd[2 * size - 1]))
                                         : NULL;
    lmpio_lua_span sp;
    lmpio_lua_spanof(L, 2, a, &sp);
    LMPIO_LUA_COLLECTIVE_MPI(L,
                             MPI_Gatherv(sp.ptr, sp.count, sp.type, all ? mem(all) : NULL, cd, cd + size, a->type,
                                         (int)root, comm),
                       "MPI_Gatherv");
    if (!all) lua_pushnil(L);
    return 1;
  }
  unsigned char *got = NULL;
  if (!fits) {
    if (rank == root) got = lua_newuserdatauv(L, (size_t)(cd[size - 1] + cd[2 * size - 1]) + 1, 0);
    LMPIO_LUA_COLLECTIVE_MPI(L,
                             MPI_Gatherv(bytes ? (void *)bytes : (void *)blocks, (int)len, MPI_BYTE, got, cd,
                                         cd + size, MPI_BYTE, (int)root, comm),
                       "MPI_Gatherv");
  }
  if (rank != root) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, size, 0);
  for (int r = 0; r < size; r++) {
    const unsigned char *b = fits ? blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK + G_VALUE : got + cd[size + r];
    lmpio_lua_deserialise(L, b, (size_t)n[r]);
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}

/* scatter's agreement: v[1], v[2] the root; from the root: what it gives
 * (1 a table, 2 an array), an array's type code and count, a table's
 * serialised bytes. */
enum { S_ROOT = 1, S_KIND = 3, S_CODE, S_COUNT, S_BYTES };

/***
Hands out the parts of the root's array, or the values of its table, one
to each rank (`MPI_Scatterv`).
Collective.  An array is cut by the block distribution of `lmpio.block`
(rank r gets elements `first + 1 .. first + count` for `first, count =
lmpio.block(#a, comm:size(), r)`; the last ranks may get none), so that
`comm:gather` of the parts gives the array back.  A table must hold one
value per rank (`#t == comm:size()`): rank r gets `t[r + 1]`, a copy, as
`comm:bcast` sends it.  The value given on the other ranks is ignored.
@function comm:scatter
@param a the root's array or table (ignored on the other ranks)
@param[opt=0] root the rank that gives it
@return this rank's part: a new array (maybe empty), or its value
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when the root's value
  is neither, a table does not hold one value per rank, or the ranks name
  different roots
@usage local mine = comm:scatter(rank == 0 and everything or nil)
*/
static int c_scatter(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm);
  lua_settop(L, 3);
  lua_Integer root = lmpio_lua_optinteger(L, 3, 0);
  if (root < 0 || root >= size) lmpio_lua_argerror(L, 3, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  long long v[LMPIO_LUA_NAGREE] = {0, root, -root};
  lmpio_lua_buffer *a = NULL;
  unsigned char *all = NULL;
  int *lens = lua_newuserdatauv(L, 2 * (size_t)size * sizeof(int), 0); /* 4: a table's pieces */
  if (rank == root) {
    int code;
    a = lmpio_lua_toarray_flat(L, 2, &code);
    if (a) {
      v[S_KIND] = 2;
      v[S_CODE] = code;
      v[S_COUNT] = (long long)a->count;
    } else if (lua_type(L, 2) == LUA_TTABLE) {
      lua_Integer nt = (lua_Integer)lua_rawlen(L, 2);
      if (nt != size)
        lmpio_lua_argerror(L, 2, lua_pushfstring(L, "a table of %d values expected (one for each rank), got %I", size, nt));
      lmpio_lua_checkstack(L, size + 4, "scatter");
      long long total = 0;
      for (int r = 0; r < size; r++) { /* serialised one by one: 5 .. 5 + size - 1 */
        size_t len;
        lua_rawgeti(L, 2, r + 1);
        lmpio_lua_serialise(L, -1, 2, &len);
        lua_remove(L, -2);
        if ((long long)len > INT_MAX - total) lmpio_lua_argerror(L, 2, "the values add up to more than 2 GiB");
        lens[r] = (int)len;
        lens[size + r] = (int)total;
        total += (long long)len;
      }
      all = lua_newuserdatauv(L, (size_t)total + 1, 0);
      for (int r = 0; r < size; r++) memcpy(all + lens[size + r], lua_touserdata(L, 5 + r), (size_t)lens[r]);
      v[S_KIND] = 1;
      v[S_BYTES] = total;
    } else {
      lmpio_lua_typeerror(L, 2, "array or table");
    }
  }
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  if (v[S_ROOT] != -v[S_ROOT + 1])
    agreed(L, "scatter", 2, lua_pushfstring(L, "the ranks name different roots, from %d to %d", (int)-v[S_ROOT + 1],
                                            (int)v[S_ROOT]));
  if (v[S_KIND] == 2) {
    long long n = v[S_COUNT];
    long long *counts = lua_newuserdatauv(L, (size_t)size * sizeof *counts, 0);
    for (int r = 0; r < size; r++) {
      lua_Integer first, count;
      lmpio_lua_block((lua_Integer)n, size, r, &first, &count);
      counts[r] = (long long)count;
    }
    int *cd = layout(L, size, counts, "scatter");
    MPI_Datatype t = lmpio_lua_codetype(v[S_CODE]);
    lmpio_lua_buffer *part = lmpio_lua_newbuffer(L, t, (size_t)cd[rank]);
    LMPIO_LUA_COLLECTIVE_MPI(
        L, MPI_Scatterv(a ? mem(a) : NULL, cd, cd + size, t, mem(part), cd[rank], t, (int)root, comm), "MPI_Scatterv");
    return 1;
  }
  int mylen = 0;
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Scatter(lens, 1, MPI_INT, &mylen, 1, MPI_INT, (int)root, comm), "MPI_Scatter");
  unsigned char *got = lua_newuserdatauv(L, (size_t)mylen + 1, 0);
  LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Scatterv(all, lens, lens + size, MPI_BYTE, got, mylen, MPI_BYTE, (int)root, comm),
                           "MPI_Scatterv");
  lmpio_lua_deserialise(L, got, (size_t)mylen);
  return 1;
}

/* ---- collectives of values and arrays ------------------------------------ */

/* LMPIO_LUA_NAGREE values to agree on, then NINLINE words that carry up to
 * NINLINE * 7 bytes of a bcast's value (7 bytes a word, so that every word
 * is non-negative and MPI_MAX with the zeros of the other ranks is the
 * root's word). */
enum { AGREE_WORDS = LMPIO_LUA_AGREE_WORDS, NINLINE = AGREE_WORDS - LMPIO_LUA_NAGREE };

/* MPI counts are ints: large messages go in pieces. */
#define CHUNK ((size_t)1 << 30)

static void fail_bcast(lua_State *L, MPI_Comm comm, const char *msg) {
  long long v[AGREE_WORDS] = {lmpio_lua_commsize(comm) - lmpio_lua_commrank(comm)};
  lmpio_lua_agree(L, comm, v, AGREE_WORDS, msg);
}

static void pack7(long long *w, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) w[i / 7] |= (long long)b[i] << (8 * (i % 7));
}

static void unpack7(unsigned char *b, const long long *w, size_t n) {
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(w[i / 7] >> (8 * (i % 7)));
}

/***
Sends a value from the root to every rank.
Collective.  The value is serialised; one `MPI_Allreduce` agrees on the
arguments and carries a short value (up to 238 bytes serialised), and a
longer one follows with `MPI_Bcast`.  The value may be nil, a boolean, a number (integers stay
integers), a string, or a table of those (nested tables too; keys are
booleans, numbers or strings).  Tables arrive as new tables without
metatables; a table that contains itself, functions, userdata
(communicators, records, ...) and threads cannot be sent.  The value
passed on the other ranks is ignored, except an array.
An array on the root is sent straight from its memory (`MPI_Bcast`): the
other ranks that give an array (of the same type and length) get it
filled, the others get a new array of the root's type and shape.  When
the root's value cannot be sent, arrays disagree, or the ranks name
different roots, every rank raises: no rank is left waiting.
@function comm:bcast
@param value the value to send (used on the root only), or an array: to
  send on the root, to fill on the others
@param[opt=0] root the rank that sends (the same on every rank)
@return the root's value (on the root: the value itself; an array given
  on another rank: that array, filled)
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when the root's value
  cannot be sent, or a root is out of range or differs between ranks, or
  ranks give arrays of another type or length than the root's, or arrays
  to fill while the root sends no array
@usage local params = lmpio.array(lmpio.DOUBLE, 3)
if comm:rank() == 0 then params:set(1, {0.1, 0.2, 0.3}) end
comm:bcast(params)          -- every rank's params now hold the root's
*/
static int c_bcast(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int rank = lmpio_lua_commrank(comm), size = lmpio_lua_commsize(comm);
  lua_settop(L, 3);
  int root = lmpio_lua_checkint(L, 3, lmpio_lua_optinteger(L, 3, 0), 0);
  if (root >= size) lmpio_lua_argerror(L, 3, lua_pushfstring(L, "root %d is not a rank of %d", root, size));
  size_t len = 0;
  const unsigned char *bytes = NULL;
  /* one agreement: roots (max and -min), the length, and a short value;
   * arrays put what they are in v[4..] (lua/message.c) */
  long long v[AGREE_WORDS] = {0, root, -root, 0};
  int isarray = bcast_prepare(L, 2, rank == root, v);
  if (rank == root && !isarray) {
    bytes = lmpio_lua_serialise(L, 2, 2, &len); /* 4 */
    v[3] = (long long)len;
    if (len <= NINLINE * 7) pack7(v + LMPIO_LUA_NAGREE, bytes, len);
  }
  lmpio_lua_agree(L, comm, v, AGREE_WORDS, NULL);
  if (v[1] != -v[2])
    return lmpio_lua_raise(L, MPI_ERR_ARG, lua_pushfstring(L, "bad argument #2 to 'bcast' (the ranks name "
                                                           "different roots, from %d to %d)", (int)-v[2], (int)v[1]));
  if (bcast_arrays(L, comm, root, v, isarray ? 2 : 0)) return 1;
  len = (size_t)v[3];
  unsigned char *all = rank == root ? (unsigned char *)bytes : lua_newuserdatauv(L, len ? len : 1, 0);
  if (len <= NINLINE * 7) {
    if (rank != root) unpack7(all, v + LMPIO_LUA_NAGREE, len);
  } else { /* the rest in pieces (MPI counts are ints) */
    for (size_t off = 0; off < len; off += CHUNK) {
      size_t n = len - off < CHUNK ? len - off : CHUNK;
      LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Bcast(all + off, (int)n, MPI_BYTE, root, comm), "MPI_Bcast");
    }
  }
  if (rank == root) lua_pushvalue(L, 2);
  else lmpio_lua_deserialise(L, all, len);
  return 1;
}

/***
Every rank's value, on every rank (`MPI_Allgather` of their serialised
forms).
Collective.  Values are those that `comm:bcast` can send (nil, booleans,
numbers, strings, tables of them); each arrives as a copy.  Arrays (every
rank an array of the same type, of any length) arrive concatenated in
rank order in one new array (`MPI_Allgatherv`, from and into their
memory).  When any rank's value cannot be sent, or some ranks give arrays
and others not, every rank raises.
@function comm:allgather
@param value this rank's value, or array
@return a table whose element `r + 1` is rank `r`'s value (a rank that sent
  nil leaves a hole), or the concatenated array
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when any rank's value
  cannot be sent; every rank raises when the values add up to more than
  2 GiB (arrays: 2^31 - 1 elements)
*/
static int c_allgather(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm);
  lua_settop(L, 2);
  if (lmpio_lua_tobuffer(L, 2)) return allgather_array(L, comm);
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * LMPIO_LUA_GATHER_BLOCK, 0); /* 3 */
  int *counts = lua_newuserdatauv(L, 2 * (size_t)size * sizeof(int), 0);        /* 4 */
  int *displs = counts + size;
  size_t len = 0;
  const unsigned char *bytes = lmpio_lua_serialise(L, 2, 2, &len); /* 5 */
  unsigned char *mine = blocks + (size_t)rank * LMPIO_LUA_GATHER_BLOCK;
  lmpio_lua_put_le64(mine, (uint64_t)len);
  memcpy(mine + 8, bytes, len < LMPIO_LUA_GATHER_BLOCK - 8 ? len : LMPIO_LUA_GATHER_BLOCK - 8);
  lmpio_lua_gather_blocks(L, comm, blocks, NULL);
  for (int r = 0; r < size; r++) /* every rank sees every block: all raise */
    if (lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK) == LMPIO_LUA_GATHER_ARRAY)
      return lmpio_lua_raise(L, MPI_ERR_ARG, "bad argument #1 to 'allgather' (arrays on some ranks, other "
                                             "values on others)");
  uint64_t total = 0;
  int fits = 1;
  for (int r = 0; r < size; r++) {
    uint64_t n = lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK);
    if (n > LMPIO_LUA_GATHER_BLOCK - 8) fits = 0;
    total += n < (uint64_t)INT_MAX + 1 ? n : (uint64_t)INT_MAX + 1; /* > INT_MAX is refused below: no wrap */
  }
  unsigned char *all = NULL;
  if (!fits) { /* every rank knows every length: they all take this branch */
    if (total > INT_MAX)
      return lmpio_lua_raise(L, MPI_ERR_ARG, "allgather: the values add up to more than 2 GiB");
    all = lua_newuserdatauv(L, total ? total : 1, 0); /* 6 */
    int at = 0;
    for (int r = 0; r < size; r++) {
      counts[r] = (int)lmpio_lua_get_le64(blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK);
      displs[r] = at;
      at += counts[r];
    }
    memcpy(all + displs[rank], bytes, len);
    LMPIO_LUA_COLLECTIVE_MPI(L, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, counts, displs, MPI_BYTE, comm),
                             "MPI_Allgatherv");
  }
  lua_createtable(L, size, 0);
  for (int r = 0; r < size; r++) {
    const unsigned char *b = blocks + (size_t)r * LMPIO_LUA_GATHER_BLOCK;
    size_t n = (size_t)lmpio_lua_get_le64(b);
    lmpio_lua_deserialise(L, fits ? b + 8 : all + displs[r], n);
    lua_rawseti(L, -2, r + 1);
  }
  return 1;
}

/* ---- reductions --------------------------------------------------------- */

enum { R_ALLREDUCE = LMPIO_LUA_ALLREDUCE, R_SCAN = LMPIO_LUA_SCAN, R_EXSCAN = LMPIO_LUA_EXSCAN };

/* allreduce, scan and exscan of one number or boolean. */
static int reduce(lua_State *L, int kind, const char *name) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  if (lmpio_lua_tobuffer(L, 2)) return reduce_array(L, comm, kind, name);
  int isbool = lua_type(L, 2) == LUA_TBOOLEAN;
  if (!isbool) lmpio_lua_checknumber(L, 2);
  int op = lmpio_lua_checkoption(L, 3, isbool ? "land" : "sum", opnames);
  int isint = lua_isinteger(L, 2);
  /* Every rank must pick the same MPI type and op: integers only when all
   * are, and every rank the same kind of value (0 numbers, 1 booleans, 2
   * arrays: lua/message.c) and the same op. */
  int b = isbool && lua_toboolean(L, 2);
  long long v[LMPIO_LUA_NAGREE] = {0, op, -op, isbool, -isbool, !isint, b, -b};
  lmpio_lua_agree(L, comm, v, LMPIO_LUA_NAGREE, NULL);
  if (v[3] != -v[4]) return reduce_kinds(L, name, v);
  if (v[1] != -v[2])
    return lmpio_lua_raise(L, MPI_ERR_ARG, lua_pushfstring(L, "bad argument #2 to '%s' (the ranks name "
                                                           "different operations, '%s' and '%s')",
                                                           name, opnames[-v[2]], opnames[v[1]]));
  int allint = isbool || v[5] == 0;
  if (op >= OP_BAND && (isbool || !allint)) /* every rank knows: all raise */
    agreed(L, name, 2, lua_pushfstring(L, "'%s' applies to integers, not to %s", opnames[op],
                                       isbool ? "booleans" : "floats"));
  MPI_Op mop = mpiops[op];
  if (isbool && kind == R_ALLREDUCE) { /* the agreement did it: any (max) or all (min) */
    int any = mop == MPI_LOR || mop == MPI_MAX || mop == MPI_SUM;
    lua_pushboolean(L, any ? v[6] != 0 : -v[7] != 0);
    return 1;
  }
  long long iv = isbool ? lua_toboolean(L, 2) : allint ? (long long)lua_tointeger(L, 2) : 0, ir = 0;
  double dv = isbool || allint ? 0 : (double)lua_tonumber(L, 2), dr = 0;
  void *in = allint ? (void *)&iv : (void *)&dv, *out = allint ? (void *)&ir : (void *)&dr;
  MPI_Datatype t = allint ? MPI_LONG_LONG : MPI_DOUBLE;
  int rc;
  if (kind == R_ALLREDUCE) LMPIO_LUA_WAIT(L, name, rc, MPI_Allreduce(in, out, 1, t, mop, comm));
  else if (kind == R_SCAN) LMPIO_LUA_WAIT(L, name, rc, MPI_Scan(in, out, 1, t, mop, comm));
  else LMPIO_LUA_WAIT(L, name, rc, MPI_Exscan(in, out, 1, t, mop, comm));
  lmpio_lua_checkmpi(L, rc, kind == R_ALLREDUCE ? "MPI_Allreduce" : kind == R_SCAN ? "MPI_Scan" : "MPI_Exscan");
  if (kind == R_EXSCAN && lmpio_lua_commrank(comm) == 0) {
    /* MPI leaves rank 0's result undefined: the op's identity, if any */
    if (mop == MPI_MAX || mop == MPI_MIN) {
      lua_pushnil(L);
      return 1;
    }
    ir = mop == MPI_BAND ? -1 : mop == MPI_PROD || mop == MPI_LAND;
    dr = (double)ir;
  }
  if (isbool) lua_pushboolean(L, ir != 0);
  else if (allint) lua_pushinteger(L, (lua_Integer)ir);
  else lua_pushnumber(L, (lua_Number)dr);
  return 1;
}

/***
Combines one number, boolean or array from every rank (`MPI_Allreduce`).
Collective.  For numbers the result is an integer when every rank gave an
integer, a float otherwise.  Arrays (every rank an array of the same type
and length) are combined element by element, in C, into a new array of
that type and shape: `comm:allreduce(counts)` adds up every rank's
histogram.  Every rank must give the same kind of value (numbers,
booleans or arrays) and the same operation; when they do not, or any
rank's arguments are wrong, every rank raises.
@function comm:allreduce
@param x a number, a boolean or an array
@param[opt] op `"sum"`, `"max"`, `"min"`, `"prod"`, `"land"` or `"lor"`,
  and for integers (numbers or arrays) also `"band"`, `"bor"` and `"bxor"` (default
  `"sum"`, `"land"` for booleans); on booleans every op is "all" (`"min"`,
  `"prod"`, `"land"`) or "any" (the others); on floats the logical and
  bitwise ops raise
@return the combination of every rank's x (a new array for arrays)
@raise an `lmpio.error` (`MPI_ERR_ARG`) on every rank when any rank's
  arguments are wrong or the ranks disagree on the op, the kind of value,
  or an array's type or length
@usage local total = world:allreduce(a:histogram(0, 1, 66))  -- INT64_T counts
*/
static int c_allreduce(lua_State *L) { return reduce(L, R_ALLREDUCE, "allreduce"); }

/***
Inclusive prefix reduction (`MPI_Scan`): rank r gets the combination of
the values of ranks 0 to r.
Collective; arguments as for `comm:allreduce`.
@function comm:scan
@param x a number, a boolean or an array (element by element)
@param[opt] op as for `comm:allreduce`
@return the combination of the values of ranks 0..r
@raise as `comm:allreduce`
*/
static int c_scan(lua_State *L) { return reduce(L, R_SCAN, "scan"); }

/***
Exclusive prefix reduction (`MPI_Exscan`): rank r gets the combination of
the values of ranks 0 to r - 1, for instance its offset in a file that
every rank appends a piece of.
Collective; arguments as for `comm:allreduce`.  Rank 0 gets the identity
of the op (`0` for `"sum"`, `1` for `"prod"`, `true` for `"land"`,
`false` for `"lor"`; for arrays an array of it) and nil for `"max"` and
`"min"`.
@function comm:exscan
@param x a number, a boolean or an array (element by element)
@param[opt] op as for `comm:allreduce`
@return the combination of the values of ranks 0..r-1
@raise as `comm:allreduce`
@usage local offset = comm:exscan(#mypiece)   -- where my piece goes
*/
static int c_exscan(lua_State *L) { return reduce(L, R_EXSCAN, "exscan"); }

int lmpio_lua_message_open(lua_State *L) {
  static const lmpio_lua_collective collectives[] = {
    {"bcast", c_bcast, fail_bcast}, {"allgather", c_allgather, lmpio_lua_gather_failed},
    {"allreduce", c_allreduce, lmpio_lua_agree_failed}, {"scan", c_scan, lmpio_lua_agree_failed},
    {"exscan", c_exscan, lmpio_lua_agree_failed},
    {"reduce", c_reduce, lmpio_lua_agree_failed},
    {"gather", c_gather, lmpio_lua_gather_failed},
    {"scatter", c_scatter, lmpio_lua_agree_failed},
  };
  lmpio_lua_comm_methods(L, collectives, sizeof collectives / sizeof *collectives, NULL);
  return 0;
}
