/* The collectives of communicators over values and arrays, and messages
 * between ranks.
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
 *
 * Point-to-point: comm:send, comm:recv, comm:sendrecv, comm:isend and
 * comm:irecv move arrays (with their type and shape), strings (as bytes)
 * and the values bcast serialises.  A message is one MPI message of bytes:
 * a header (what it is) followed by the payload.  A large payload is sent
 * from and received into the array's memory directly, header and payload
 * described by one struct datatype at absolute addresses (MPI_BOTTOM); a
 * small one is copied next to the header.  Receives use matched probes
 * (MPI_Mprobe, MPI_Improbe): the size is known before the memory is
 * allocated, and no other receive can take the message in between.
 *
 * An irecv is matched when it is waited for or tested, or when a later
 * receive is: receives that are still waiting for their message are kept
 * in posting order (a registry table), and every attempt to match one first
 * tries those posted before it, so messages from one source with one tag
 * are received in the order they were sent, as MPI orders them. */
#include "lmpio_lua.h"

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

enum { LMPIO_LUA_ALLREDUCE, LMPIO_LUA_SCAN, LMPIO_LUA_EXSCAN };

/* MPI counts are ints: arrays go in pieces of this many elements. */
#define PIECE ((size_t)1 << 28)

/* The array at idx when it is one (NULL otherwise) that may be the data of
 * a collective or a message: an array or byte buffer of a predefined type,
 * not records.  Its type's code in *code. */
static lmpio_lua_buffer *toarray(lua_State *L, int idx, int *code) {
  if (!lmpio_lua_tobuffer(L, idx)) return NULL;
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  lmpio_lua_checkheld(L, b, 0);
  if (b->rec)
    luaL_argerror(L, idx, "records cannot be sent (send r:tostring() and rebuild them with lmpio.records)");
  int c = lmpio_lua_typecode(b->type);
  if (c < 0) luaL_argerror(L, idx, "only arrays of predefined datatypes can be sent");
  *code = c;
  return b;
}

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

/* The first six as comm.c's reductions of numbers (their places are what
 * the agreement compares). */
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
    const char *what;
    if (kind == LMPIO_LUA_ALLREDUCE) rc = MPI_Allreduce(in, out, n, mt, mop, comm), what = "MPI_Allreduce";
    else if (kind == LMPIO_LUA_SCAN) rc = MPI_Scan(in, out, n, mt, mop, comm), what = "MPI_Scan";
    else if (kind == LMPIO_LUA_EXSCAN) rc = MPI_Exscan(in, out, n, mt, mop, comm), what = "MPI_Exscan";
    else rc = MPI_Reduce(in, out, n, mt, mop, root, comm), what = "MPI_Reduce";
    lmpio_lua_checkmpi(L, rc, what);
  }
}

static int reduce_array(lua_State *L, MPI_Comm comm, int kind, const char *name) {
  lua_settop(L, 3);
  int code;
  lmpio_lua_buffer *a = toarray(L, 2, &code);
  int op = luaL_checkoption(L, 3, lmpio_lua_typekind(a->type) == LMPIO_LUA_K_BOOL ? "land" : "sum", opnames);
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
  lua_Integer root = luaL_optinteger(L, 4, 0);
  int size = lmpio_lua_commsize(comm), rank = lmpio_lua_commrank(comm);
  if (root < 0 || root >= size) luaL_argerror(L, 4, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  int code = -1;
  lmpio_lua_buffer *a = toarray(L, 2, &code);
  int isbool = !a && lua_type(L, 2) == LUA_TBOOLEAN;
  if (!a && !isbool) luaL_checknumber(L, 2);
  int kind = a ? 2 : isbool;
  int boolish = isbool || (a && lmpio_lua_typekind(a->type) == LMPIO_LUA_K_BOOL);
  int op = luaL_checkoption(L, 3, boolish ? "land" : "sum", opnames);
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
  int rc = allint ? MPI_Reduce(&iv, &ir, 1, MPI_LONG_LONG, mop, (int)root, comm)
                  : MPI_Reduce(&dv, &dr, 1, MPI_DOUBLE, mop, (int)root, comm);
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
  lmpio_lua_buffer *a = toarray(L, idx, &code);
  if (!a) return 0;
  if (!isroot && a->readonly) luaL_argerror(L, idx, "cannot receive into a read-only array");
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
  for (size_t off = 0; off < a->nbytes; off += PIECE) {
    int m = (int)(a->nbytes - off < PIECE ? a->nbytes - off : PIECE);
    lmpio_lua_checkmpi(L, MPI_Bcast(a->data + off, m, MPI_BYTE, root, comm), "MPI_Bcast");
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
  lmpio_lua_buffer *a = toarray(L, 2, &code);
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
  lmpio_lua_checkmpi(L, MPI_Allgatherv(mem(a), (int)a->count, a->type, mem(all), cd, cd + size, a->type, comm),
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
  lua_Integer root = luaL_optinteger(L, 3, 0);
  if (root < 0 || root >= size) luaL_argerror(L, 3, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  unsigned char *blocks = lua_newuserdatauv(L, (size_t)size * LMPIO_LUA_GATHER_BLOCK, 0); /* 4 */
  long long *n = lua_newuserdatauv(L, (size_t)size * sizeof *n, 0);                       /* 5 */
  unsigned char *mine = blocks + (size_t)rank * LMPIO_LUA_GATHER_BLOCK;
  lmpio_lua_buffer *a = toarray(L, 2, &code);
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
    lmpio_lua_checkmpi(L, MPI_Gatherv(mem(a), (int)a->count, a->type, all ? mem(all) : NULL, cd, cd + size, a->type,
                                      (int)root, comm),
                       "MPI_Gatherv");
    if (!all) lua_pushnil(L);
    return 1;
  }
  unsigned char *got = NULL;
  if (!fits) {
    if (rank == root) got = lua_newuserdatauv(L, (size_t)(cd[size - 1] + cd[2 * size - 1]) + 1, 0);
    lmpio_lua_checkmpi(L, MPI_Gatherv(bytes ? (void *)bytes : (void *)blocks, (int)len, MPI_BYTE, got, cd, cd + size,
                                      MPI_BYTE, (int)root, comm),
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
  lua_Integer root = luaL_optinteger(L, 3, 0);
  if (root < 0 || root >= size) luaL_argerror(L, 3, lua_pushfstring(L, "root %I is not a rank of %d", root, size));
  long long v[LMPIO_LUA_NAGREE] = {0, root, -root};
  lmpio_lua_buffer *a = NULL;
  unsigned char *all = NULL;
  int *lens = lua_newuserdatauv(L, 2 * (size_t)size * sizeof(int), 0); /* 4: a table's pieces */
  if (rank == root) {
    int code;
    a = toarray(L, 2, &code);
    if (a) {
      v[S_KIND] = 2;
      v[S_CODE] = code;
      v[S_COUNT] = (long long)a->count;
    } else if (lua_type(L, 2) == LUA_TTABLE) {
      lua_Integer nt = (lua_Integer)lua_rawlen(L, 2);
      if (nt != size)
        luaL_argerror(L, 2, lua_pushfstring(L, "a table of %d values expected (one for each rank), got %I", size, nt));
      luaL_checkstack(L, size + 4, "scatter");
      long long total = 0;
      for (int r = 0; r < size; r++) { /* serialised one by one: 5 .. 5 + size - 1 */
        size_t len;
        lua_rawgeti(L, 2, r + 1);
        lmpio_lua_serialise(L, -1, 2, &len);
        lua_remove(L, -2);
        if ((long long)len > INT_MAX - total) luaL_argerror(L, 2, "the values add up to more than 2 GiB");
        lens[r] = (int)len;
        lens[size + r] = (int)total;
        total += (long long)len;
      }
      all = lua_newuserdatauv(L, (size_t)total + 1, 0);
      for (int r = 0; r < size; r++) memcpy(all + lens[size + r], lua_touserdata(L, 5 + r), (size_t)lens[r]);
      v[S_KIND] = 1;
      v[S_BYTES] = total;
    } else {
      luaL_typeerror(L, 2, "array or table");
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
    lmpio_lua_checkmpi(L, MPI_Scatterv(a ? mem(a) : NULL, cd, cd + size, t, mem(part), cd[rank], t, (int)root, comm),
                       "MPI_Scatterv");
    return 1;
  }
  int mylen = 0;
  lmpio_lua_checkmpi(L, MPI_Scatter(lens, 1, MPI_INT, &mylen, 1, MPI_INT, (int)root, comm), "MPI_Scatter");
  unsigned char *got = lua_newuserdatauv(L, (size_t)mylen + 1, 0);
  lmpio_lua_checkmpi(L, MPI_Scatterv(all, lens, lens + size, MPI_BYTE, got, mylen, MPI_BYTE, (int)root, comm),
                     "MPI_Scatterv");
  lmpio_lua_deserialise(L, got, (size_t)mylen);
  return 1;
}

/* ---- messages ------------------------------------------------------------------ */

enum { K_VALUE = 1, K_STRING, K_ARRAY };
#define MAGIC 0x6c6d7069u /* "lmpi": a message that lmpio sent */

typedef struct {
  uint32_t magic;
  int32_t kind;   /* K_* */
  int32_t code;   /* an array's type code */
  int32_t ndim;   /* an array's shape */
  int32_t forder;
  int32_t pad;
  uint64_t dims[LMPIO_LUA_MAXDIM];
} msghdr;
#define HDR sizeof(msghdr)
/* Messages up to this size (header included) are copied through the
 * request: one contiguous MPI_BYTE buffer, no datatype to build. */
enum { SMALL = 1024 };

typedef struct {
  MPI_Request req; /* the Isend or Imrecv while active */
  MPI_Comm comm;
  int sending;
  int state;       /* ST_* */
  int src, tag;    /* a receive: what it matches */
  int rsrc, rtag;  /* a receive: where its message came from */
  int large;       /* the payload is in user value UV_DATA, not after the header */
  int waited;      /* completed by a wait or test (waitany skips it) */
  lmpio_lua_hold *hold; /* a send's: of the array sent, until it completes (user value UV_HOLD) */
  size_t total;    /* bytes of the message, header included */
  union {
    msghdr hdr;
    unsigned char bytes[SMALL];
  } u;
} mreq;
enum { ST_PENDING, ST_ACTIVE, ST_DONE };
enum { UV_DATA = 1, UV_RESULT, UV_COMM, UV_HOLD, NUV = UV_HOLD };
#define PENDING_KEY "lmpio.pendingrecvs" /* registry: receives not matched yet, in posting order */

static int finalized(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin;
}

/* A datatype (committed; free it) of the header at h followed by n bytes at
 * data, at absolute addresses (for MPI_BOTTOM). */
static MPI_Datatype msgtype(lua_State *L, const void *h, const void *data, size_t n) {
  MPI_Datatype piece, t;
  lmpio_lua_checkmpi(L, MPI_Type_contiguous(1 << 30, MPI_BYTE, &piece), "MPI_Type_contiguous");
  size_t q = n >> 30, rest = n & ((1u << 30) - 1);
  int bl[3] = {(int)HDR, (int)q, (int)rest};
  MPI_Aint at[3];
  MPI_Get_address(h, &at[0]);
  MPI_Get_address(data ? data : h, &at[1]);
  at[2] = MPI_Aint_add(at[1], (MPI_Aint)(q << 30));
  MPI_Datatype types[3] = {MPI_BYTE, piece, MPI_BYTE};
  int rc = MPI_Type_create_struct(3, bl, at, types, &t);
  MPI_Type_free(&piece);
  lmpio_lua_checkmpi(L, rc, "MPI_Type_create_struct");
  if ((rc = MPI_Type_commit(&t)) != MPI_SUCCESS) {
    MPI_Type_free(&t);
    lmpio_lua_checkmpi(L, rc, "MPI_Type_commit");
  }
  return t;
}

/* What the value at idx sends: its header into h, its payload (p, n);
 * pushes what keeps the payload alive (the value, or its serialised
 * bytes). */
static void outgoing(lua_State *L, int idx, msghdr *h, const void **p, size_t *n) {
  int code;
  memset(h, 0, sizeof *h);
  h->magic = MAGIC;
  lmpio_lua_buffer *a = toarray(L, idx, &code);
  if (a) {
    h->kind = K_ARRAY;
    h->code = code;
    h->ndim = a->ndim;
    h->forder = a->forder;
    for (int k = 0; k < a->ndim; k++) h->dims[k] = (uint64_t)a->dims[k];
    *p = a->data;
    *n = a->nbytes;
    lua_pushvalue(L, idx);
  } else if (lua_type(L, idx) == LUA_TSTRING) {
    h->kind = K_STRING;
    *p = lua_tolstring(L, idx, n);
    lua_pushvalue(L, idx);
  } else {
    h->kind = K_VALUE;
    *p = lmpio_lua_serialise(L, idx, idx, n);
  }
}

static int tag_ub(void) {
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767;
}

/* A rank argument: nil is lmpio.PROC_NULL (no partner); receives also take
 * lmpio.ANY_SOURCE. */
static int checkpeer(lua_State *L, int arg, MPI_Comm comm, int receiving) {
  if (lua_isnoneornil(L, arg)) return MPI_PROC_NULL;
  lua_Integer r = luaL_checkinteger(L, arg);
  int size = lmpio_lua_commsize(comm);
  if (r == MPI_PROC_NULL || (receiving && r == MPI_ANY_SOURCE)) return (int)r;
  if (r < 0 || r >= size)
    luaL_argerror(L, arg, lua_pushfstring(L, "%I is not a rank of the communicator (0 to %d), lmpio.PROC_NULL%s", r,
                                          size - 1, receiving ? " or lmpio.ANY_SOURCE" : ""));
  return (int)r;
}

static int checktag(lua_State *L, int arg, int receiving) {
  if (lua_isnoneornil(L, arg)) return receiving ? MPI_ANY_TAG : 0;
  lua_Integer t = luaL_checkinteger(L, arg);
  if (receiving && t == MPI_ANY_TAG) return MPI_ANY_TAG;
  if (t < 0 || t > tag_ub())
    luaL_argerror(L, arg, lua_pushfstring(L, "a tag is from 0 to %d%s", tag_ub(), receiving ? ", or lmpio.ANY_TAG" : ""));
  return (int)t;
}

/* Pushes a new request of comm (the communicator object at commidx). */
static mreq *newreq(lua_State *L, int commidx, MPI_Comm comm, int sending) {
  commidx = lua_absindex(L, commidx);
  mreq *r = lua_newuserdatauv(L, sizeof *r, NUV);
  memset(r, 0, offsetof(mreq, u) + HDR);
  r->req = MPI_REQUEST_NULL;
  r->comm = comm;
  r->sending = sending;
  r->state = ST_DONE;
  luaL_setmetatable(L, LMPIO_LUA_MSGREQUEST);
  lua_pushvalue(L, commidx);
  lua_setiuservalue(L, -2, UV_COMM);
  return r;
}

/* Sends the value at idx: blocking (MPI_Send), or into the request r at
 * ridx (MPI_Isend; r keeps the payload alive, and holds an array against
 * writes as the method `call`: a small one is copied at once, but what Lua
 * may do with an array does not depend on its size). */
static void sendvalue(lua_State *L, int idx, MPI_Comm comm, int dest, int tag, mreq *r, int ridx, const char *call) {
  msghdr h;
  const void *p;
  size_t n;
  ridx = ridx ? lua_absindex(L, ridx) : 0;
  outgoing(L, idx, &h, &p, &n); /* pushes the keeper */
  if (dest == MPI_PROC_NULL) return;
  int rc;
  if (n <= SMALL - HDR) {
    unsigned char tmp[SMALL];
    unsigned char *buf = r ? r->u.bytes : tmp;
    memcpy(buf, &h, HDR);
    if (n) memcpy(buf + HDR, p, n);
    rc = r ? MPI_Isend(buf, (int)(HDR + n), MPI_BYTE, dest, tag, comm, &r->req)
           : MPI_Send(buf, (int)(HDR + n), MPI_BYTE, dest, tag, comm);
  } else {
    const void *hp = &h;
    if (r) {
      r->u.hdr = h;
      hp = &r->u.hdr;
      lua_pushvalue(L, -1);
      lua_setiuservalue(L, ridx, UV_DATA);
    }
    MPI_Datatype t = msgtype(L, hp, p, n);
    rc = r ? MPI_Isend(MPI_BOTTOM, 1, t, dest, tag, comm, &r->req) : MPI_Send(MPI_BOTTOM, 1, t, dest, tag, comm);
    MPI_Type_free(&t);
  }
  lmpio_lua_checkmpi(L, rc, r ? "MPI_Isend" : "MPI_Send");
  if (!r) return;
  r->state = ST_ACTIVE;
  if (h.kind == K_ARRAY) {
    lmpio_lua_mem m = {0};
    m.buf = lmpio_lua_tobuffer(L, idx);
    r->hold = lmpio_lua_hold_push(L, idx, &m, 0, call, 0, &r->req);
    lua_setiuservalue(L, ridx, UV_HOLD);
  }
}

/* The send of r is done with: its array is the script's again. */
static void let_go(mreq *r) {
  lmpio_lua_unhold(r->hold);
  r->hold = NULL;
}

/* Starts receiving the message msg (status st) into r (at ridx). */
static void startrecv(lua_State *L, int ridx, mreq *r, MPI_Message *msg, MPI_Status *st) {
  ridx = lua_absindex(L, ridx);
  MPI_Count total = 0;
  MPI_Get_elements_x(st, MPI_BYTE, &total);
  r->rsrc = st->MPI_SOURCE;
  r->rtag = st->MPI_TAG;
  r->total = (size_t)total;
  int rc;
  if (total <= SMALL) {
    r->large = 0;
    rc = MPI_Imrecv(r->u.bytes, (int)total, MPI_BYTE, msg, &r->req);
  } else {
    lmpio_lua_buffer *b = lmpio_lua_newbuffer(L, MPI_BYTE, (size_t)total - HDR);
    lua_setiuservalue(L, ridx, UV_DATA);
    r->large = 1;
    MPI_Datatype t = msgtype(L, &r->u.hdr, b->data, b->nbytes);
    rc = MPI_Imrecv(MPI_BOTTOM, 1, t, msg, &r->req);
    MPI_Type_free(&t);
  }
  lmpio_lua_checkmpi(L, rc, "MPI_Imrecv");
  r->state = ST_ACTIVE;
}

/* The received message of r (at ridx) as a Lua value, kept as its result. */
static void finishrecv(lua_State *L, int ridx, mreq *r) {
  ridx = lua_absindex(L, ridx);
  r->state = ST_DONE;
  r->waited = 1;
  msghdr h;
  memcpy(&h, r->u.bytes, HDR);
  if (r->total < HDR || h.magic != MAGIC || h.ndim < 0 || h.ndim > LMPIO_LUA_MAXDIM)
    luaL_error(L, "received a message (from rank %d, tag %d) that lmpio did not send", r->rsrc, r->rtag);
  size_t n = r->total - HDR;
  lmpio_lua_buffer *big = NULL;
  const unsigned char *p = r->u.bytes + HDR;
  if (r->large) {
    lua_getiuservalue(L, ridx, UV_DATA);
    big = lmpio_lua_tobuffer(L, -1);
    p = big->data;
  }
  switch (h.kind) {
  case K_ARRAY: {
    MPI_Datatype t = lmpio_lua_codetype(h.code);
    MPI_Count es = 0;
    if (t == MPI_DATATYPE_NULL || MPI_Type_size_x(t, &es) != MPI_SUCCESS || es <= 0 || n % (size_t)es)
      luaL_error(L, "received an array (from rank %d) of an unknown type", r->rsrc);
    lmpio_lua_buffer *a = big;
    if (!a) {
      a = lmpio_lua_newbuffer(L, t, n / (size_t)es);
      if (n) memcpy(a->data, p, n);
    } else { /* the memory received into becomes the array */
      lua_pushvalue(L, -1); /* the result; one copy stays for the pop below */
      a->type = t;
      a->esize = (size_t)es;
      a->count = n / (size_t)es;
      a->kind = lmpio_lua_typekind(t);
    }
    size_t total = 1;
    for (int k = 0; k < h.ndim; k++) total *= (size_t)h.dims[k];
    if (h.ndim > 0 && total == a->count) {
      a->ndim = h.ndim;
      a->forder = h.forder != 0;
      for (int k = 0; k < h.ndim; k++) a->dims[k] = (size_t)h.dims[k];
    }
    break;
  }
  case K_STRING: lua_pushlstring(L, (const char *)p, n); break;
  case K_VALUE: lmpio_lua_deserialise(L, p, n); break;
  default: luaL_error(L, "received a message (from rank %d, tag %d) that lmpio did not send", r->rsrc, r->rtag);
  }
  lua_setiuservalue(L, ridx, UV_RESULT);
  lua_pushnil(L);
  lua_setiuservalue(L, ridx, UV_DATA);
  if (big) lua_pop(L, 1);
}

/* Whether receives a and b could take the same message. */
static int overlap(const mreq *a, const mreq *b) {
  return a->comm == b->comm && (a->src == b->src || a->src == MPI_ANY_SOURCE || b->src == MPI_ANY_SOURCE) &&
         (a->tag == b->tag || a->tag == MPI_ANY_TAG || b->tag == MPI_ANY_TAG);
}

static void pushpending(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, PENDING_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
  }
}

/* Tries to match the receives waiting for their message, in posting order,
 * up to target: starts those whose message has arrived and takes them off
 * the list.  A receive is not tried while an earlier one that could take
 * the same message still waits (the message is the earlier one's, as MPI
 * matches in posting order).  Returns whether target may block in
 * MPI_Mprobe (no earlier receive waits that could take its message). */
static int probe_pending(lua_State *L, const mreq *target) {
  pushpending(L);
  int list = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, list), w = 0;
  const mreq **kept = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *kept, 0);
  int stop = 0, free_to_block = 1;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    mreq *q = lua_touserdata(L, -1);
    if (q->state != ST_PENDING) {
      lua_pop(L, 1);
      continue;
    }
    int blocked = 0;
    for (lua_Integer k = 0; k < w && !blocked; k++) blocked = overlap(kept[k], q);
    if (!stop && !blocked) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      lmpio_lua_checkmpi(L, MPI_Improbe(q->src, q->tag, q->comm, &flag, &msg, &st), "MPI_Improbe");
      if (flag) {
        startrecv(L, -1, q, &msg, &st);
        lua_pop(L, 1);
        if (q == target) stop = 1;
        continue;
      }
    }
    if (q == target) {
      stop = 1;
      free_to_block = !blocked;
    }
    kept[w] = q;
    lua_rawseti(L, list, ++w); /* still waiting: keeps its place */
  }
  for (lua_Integer i = w + 1; i <= n; i++) {
    lua_pushnil(L);
    lua_rawseti(L, list, i);
  }
  lua_pop(L, 2);
  return free_to_block;
}

/* Takes r off the list of waiting receives. */
static void unlist(lua_State *L, const mreq *r) {
  pushpending(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1), w = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, -1, i);
    if (lua_touserdata(L, -1) == r) lua_pop(L, 1);
    else lua_rawseti(L, -2, ++w);
  }
  for (lua_Integer i = w + 1; i <= n; i++) {
    lua_pushnil(L);
    lua_rawseti(L, -2, i);
  }
  lua_pop(L, 1);
}

/* Completes the request r at ridx: waits when blocking, else tests.
 * Returns whether it is done. */
static int complete(lua_State *L, int ridx, mreq *r, int blocking) {
  ridx = lua_absindex(L, ridx);
  while (r->state == ST_PENDING) {
    int may_block = probe_pending(L, r);
    if (r->state != ST_PENDING) break;
    if (!blocking) return 0;
    if (may_block) {
      MPI_Message msg;
      MPI_Status st;
      lmpio_lua_checkmpi(L, MPI_Mprobe(r->src, r->tag, r->comm, &msg, &st), "MPI_Mprobe");
      unlist(L, r);
      startrecv(L, ridx, r, &msg, &st);
      break;
    }
    sched_yield(); /* an earlier receive that could take the message is waiting */
  }
  if (r->state == ST_ACTIVE) {
    int flag = 1;
    int rc = blocking ? MPI_Wait(&r->req, MPI_STATUS_IGNORE) : MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      r->state = ST_DONE;
      r->waited = 1;
      let_go(r);
      lmpio_lua_checkmpi(L, rc, blocking ? "MPI_Wait" : "MPI_Test");
    }
    if (!flag) return 0;
    if (r->sending) {
      r->state = ST_DONE;
      let_go(r);
      lua_pushnil(L);
      lua_setiuservalue(L, ridx, UV_DATA);
    } else {
      finishrecv(L, ridx, r);
    }
  }
  r->waited = 1;
  return 1;
}

/* Pushes what a completed request gives: nothing for a send; the value,
 * its source and tag for a receive. */
static int results(lua_State *L, int ridx, const mreq *r) {
  if (r->sending) return 0;
  lua_getiuservalue(L, ridx, UV_RESULT);
  lua_pushinteger(L, r->rsrc);
  lua_pushinteger(L, r->rtag);
  return 3;
}

/* Pushes a receive request of src and tag on the communicator at 1, listed
 * as waiting for its message (or done at once for lmpio.PROC_NULL). */
static mreq *postrecv(lua_State *L, MPI_Comm comm, int src, int tag) {
  mreq *r = newreq(L, 1, comm, 0);
  r->src = src;
  r->tag = tag;
  if (src == MPI_PROC_NULL) { /* no message: nil from PROC_NULL, as MPI's status says */
    r->rsrc = MPI_PROC_NULL;
    r->rtag = MPI_ANY_TAG;
    return r;
  }
  r->state = ST_PENDING;
  pushpending(L);
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  return r;
}

/***
Sends a value to one rank (`MPI_Send`).
An array travels as it is, straight from its memory, and arrives as an
array of the same type and shape; a string arrives as the same bytes; the
values `comm:bcast` sends (nil, booleans, numbers, tables of them) arrive
as copies.  Blocks until the message is on its way (for large messages,
until the receiver takes it); sending to oneself needs `comm:isend` or
`comm:sendrecv`.
@function comm:send
@param x the value
@param dest the rank to send to; nil or `lmpio.PROC_NULL`: nobody (nothing
  is sent)
@param[opt=0] tag a non-negative integer the receiver can select on
@raise when dest or tag is out of range or x cannot be sent (functions,
  userdata other than arrays, records)
@usage comm:send(lmpio.array(lmpio.DOUBLE, {1, 2, 3}), 1)   -- on rank 0
local a = comm:recv(0)                                   -- on rank 1
*/
static int c_send(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  luaL_checkany(L, 2);
  int dest = checkpeer(L, 3, comm, 0), tag = checktag(L, 4, 0);
  lua_settop(L, 4);
  sendvalue(L, 2, comm, dest, tag, NULL, 0, NULL);
  return 0;
}

/***
Sends a value without waiting (`MPI_Isend`): the request's `wait` (or a
`test` that returns true) completes it.
The value is the message as `comm:send` sends it; an array's memory is
sent from directly, so until the request completes the array is the
call's, as for a file's `iwrite`: writing it (`a[i] = v`, `a:fill`,
reading a file or a `bcast` into it, through any view of the same memory)
raises "array is held by a pending isend; wait for its request first";
reading it, or sending it again, is fine.  The hold ends when `wait`, a
`test` that returns true, `lmpio.waitall` or `lmpio.waitany` completes the
request, or when the request is collected.  The request keeps the value
alive until then.
@function comm:isend
@param x the value
@param dest the rank to send to, nil or `lmpio.PROC_NULL` (nothing is
  sent, nothing held)
@param[opt=0] tag as for `comm:send`
@return a @{msgrequest}
@raise as `comm:send`
@usage local req = comm:isend(a, right)
-- a[1] = 0 here would raise: a is held until the send completes
local halo = comm:recv(left)
req:wait()
a[1] = halo[1]
*/
static int c_isend(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  luaL_checkany(L, 2);
  int dest = checkpeer(L, 3, comm, 0), tag = checktag(L, 4, 0);
  lua_settop(L, 4);
  mreq *r = newreq(L, 1, comm, 1); /* 5 */
  sendvalue(L, 2, comm, dest, tag, r, 5, "isend");
  lua_settop(L, 5);
  return 1;
}

/***
Receives a value from one rank (`MPI_Mprobe` and `MPI_Mrecv`).
What arrives is what was sent with `comm:send`, `comm:isend` or
`comm:sendrecv`: an array is received straight into the memory of a new
array of the sender's type and shape.  Messages from one rank with one tag
arrive in the order they were sent, also across earlier `comm:irecv`s.
@function comm:recv
@param src the rank to receive from, `lmpio.ANY_SOURCE`, or nil
  (`lmpio.PROC_NULL`: no message, nil is returned at once)
@param[opt] tag the tag to select (default `lmpio.ANY_TAG`: any)
@return the value
@return the rank it came from
@return its tag
@raise when src or tag is out of range, or the message was not sent by lmpio
@usage local x, from = comm:recv(lmpio.ANY_SOURCE)
*/
static int c_recv(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int src = checkpeer(L, 2, comm, 1), tag = checktag(L, 3, 1);
  lua_settop(L, 3);
  mreq *r = postrecv(L, comm, src, tag); /* 4 */
  complete(L, 4, r, 1);
  return results(L, 4, r);
}

/***
Starts receiving a value (`MPI_Improbe` and `MPI_Imrecv`): the request's
`wait` gives it.
The message is matched when the request is waited for or tested (or
earlier, when a later receive is), and always before any receive posted
after it: the order of messages is MPI's.
@function comm:irecv
@param src the rank to receive from, `lmpio.ANY_SOURCE`, or nil
  (`lmpio.PROC_NULL`)
@param[opt] tag as for `comm:recv`
@return a @{msgrequest} whose `wait` returns what `comm:recv` returns
@raise as `comm:recv`
@usage local left, right = comm:irecv(l), comm:irecv(r)
comm:send(edge_l, l); comm:send(edge_r, r)   -- (isend when l or r is self)
local from_l, from_r = left:wait(), right:wait()
*/
static int c_irecv(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  int src = checkpeer(L, 2, comm, 1), tag = checktag(L, 3, 1);
  lua_settop(L, 3);
  postrecv(L, comm, src, tag);
  return 1;
}

/***
Sends a value to one rank and receives one from another, without
deadlock whatever the order in which ranks call it (`MPI_Sendrecv`): the
exchange of a halo.
The value sent and the one received are messages as `comm:send` and
`comm:recv` move them (arrays zero-copy, with their type and shape); the
send and the receive use the same tag.
@function comm:sendrecv
@param x the value to send
@param dest the rank to send to; nil or `lmpio.PROC_NULL`: nobody
@param src the rank to receive from, `lmpio.ANY_SOURCE`; nil or
  `lmpio.PROC_NULL`: nobody (nil is received)
@param[opt] tag the tag of both (sent with 0 and received with any when
  absent)
@return the value received, the rank it came from, its tag
@raise as `comm:send` and `comm:recv`
@usage -- a ring: each rank's last element to the right, halo from the left
local n, size = #u, comm:size()
local right, left = (rank + 1) % size, (rank - 1) % size
local halo = comm:sendrecv(u:sub(n, n), right, left)
*/
static int c_sendrecv(lua_State *L) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  luaL_checkany(L, 2);
  int dest = checkpeer(L, 3, comm, 0), src = checkpeer(L, 4, comm, 1);
  int tag = lua_isnoneornil(L, 5) ? 0 : checktag(L, 5, 0);
  int rtag = lua_isnoneornil(L, 5) ? MPI_ANY_TAG : tag;
  lua_settop(L, 5);
  mreq *s = newreq(L, 1, comm, 1); /* 6: if anything below raises, its __gc waits for the send */
  sendvalue(L, 2, comm, dest, tag, s, 6, "sendrecv");
  lua_settop(L, 6);
  mreq *r = postrecv(L, comm, src, rtag); /* 7 */
  complete(L, 7, r, 1);
  complete(L, 6, s, 1);
  return results(L, 7, r);
}

/* ---- requests of messages ------------------------------------------------------ */

/***
The request of `comm:isend` or `comm:irecv`.
Complete it with `wait` (or `test` until it returns true), or with
`lmpio.waitall` or `lmpio.waitany`, which take these requests too, in one
list with those of files; until then it keeps the data it sends or
receives alive, and an array it sends is held against writes (see
`comm:isend`).  A receive makes its own array: none given to `comm:irecv`
is held.  A request collected before it completed is waited for first.
@type msgrequest
*/

static mreq *checkmreq(lua_State *L) { return luaL_checkudata(L, 1, LMPIO_LUA_MSGREQUEST); }

/***
Waits until the send or receive is complete (`MPI_Wait`).
Waiting again returns the same.
@function msgrequest:wait
@return nothing for a send; for a receive the value, the rank it came from
  and its tag, as `comm:recv`
@raise when the message was not sent by lmpio, or MPI fails
*/
static int m_wait(lua_State *L) {
  mreq *r = checkmreq(L);
  lmpio_lua_running(L);
  complete(L, 1, r, 1);
  return results(L, 1, r);
}

/***
Whether the send or receive is complete (`MPI_Test`); completes it if so.
@function msgrequest:test
@treturn boolean false while it is in progress, or true followed by what
  `msgrequest:wait` returns
@raise as `msgrequest:wait`
*/
static int m_test(lua_State *L) {
  mreq *r = checkmreq(L);
  lmpio_lua_running(L);
  if (!complete(L, 1, r, 0)) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, 1);
  return 1 + results(L, 1, r);
}

static int m_gc(lua_State *L) {
  mreq *r = checkmreq(L);
  /* MPI may still read or write the data, alive until this finalizer
   * returns; a rank leaving on an error does not wait (its partner may
   * never come: the job is being aborted) */
  if (r->state == ST_ACTIVE && r->req != MPI_REQUEST_NULL && !finalized() && !lmpio_lua_failing())
    MPI_Wait(&r->req, MPI_STATUS_IGNORE);
  r->state = ST_DONE;
  let_go(r);
  return 0;
}

static int m_tostring(lua_State *L) {
  const mreq *r = checkmreq(L);
  static const char *const states[] = {"waiting for its message", "in progress", "complete"};
  lua_pushfstring(L, "lmpio.msgrequest (%s, %s): %p", r->sending ? "send" : "receive", states[r->state],
                  (const void *)r);
  return 1;
}

/* lmpio.waitall over a list that may hold message requests too: the file
 * requests go to request.c's waitall (upvalue 1) together, then the
 * message requests are waited for in order. */
static int l_waitall(lua_State *L) {
  lmpio_lua_running(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_Integer n = luaL_len(L, 1), k = 0;
  int mine = 0;
  lua_newtable(L); /* 2: the others */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    if (luaL_testudata(L, -1, LMPIO_LUA_MSGREQUEST)) {
      mine = 1;
      lua_pop(L, 1);
    } else {
      lua_rawseti(L, 2, ++k);
    }
  }
  if (k || !mine) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, mine ? 2 : 1);
    lua_call(L, 1, 0);
  }
  for (lua_Integer i = 1; mine && i <= n; i++) {
    lua_geti(L, 1, i);
    mreq *r = luaL_testudata(L, -1, LMPIO_LUA_MSGREQUEST);
    if (r) complete(L, -1, r, 1);
    lua_pop(L, 1);
  }
  return 0;
}

/* lmpio.waitany over a list that may hold message requests too.  Without
 * them it is request.c's (upvalue 1: MPI_Waitany).  With them there is no
 * MPI request to wait for (a receive is matched only when it is tested or
 * waited for), so the requests are tested in order, round after round,
 * until one completes: the first listing of each, skipping those a wait or
 * test completed already, as MPI skips null requests. */
static int l_waitany(lua_State *L) {
  lmpio_lua_running(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  lua_Integer n = luaL_len(L, 1);
  if (n < 0 || n > INT_MAX) luaL_argerror(L, 1, "too many requests");
  unsigned char *dup = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1), 0); /* 2: listed before */
  lua_createtable(L, 0, (int)n); /* 3: the requests seen */
  int mine = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    if (luaL_testudata(L, -1, LMPIO_LUA_MSGREQUEST)) mine = 1;
    else if (!luaL_testudata(L, -1, LMPIO_LUA_REQUEST))
      luaL_argerror(L, 1, lua_pushfstring(L, "element %I is not a request", i));
    lua_pushvalue(L, -1);
    dup[i - 1] = lua_rawget(L, 3) != LUA_TNIL;
    lua_pop(L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, 3);
  }
  if (!mine) {
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_call(L, 1, LUA_MULTRET);
    return lua_gettop(L) - 3;
  }
  for (;;) {
    int pending = 0;
    for (lua_Integer i = 1; i <= n; i++) {
      if (dup[i - 1]) continue;
      lua_settop(L, 2);
      lua_geti(L, 1, i); /* 3 */
      lua_pushinteger(L, i); /* 4 */
      mreq *m = luaL_testudata(L, 3, LMPIO_LUA_MSGREQUEST);
      if (m) {
        if (m->waited) continue;
        pending = 1;
        if (complete(L, 3, m, 0)) return 1 + results(L, 3, m);
        continue;
      }
      const lmpio_lua_request *f = lua_touserdata(L, 3);
      if (f->done) continue;
      pending = 1;
      lua_getfield(L, 3, "test"); /* the request's own test: its converters, its failure */
      lua_pushvalue(L, 3);
      lua_call(L, 1, LUA_MULTRET); /* 5: false, or true and what wait returns */
      if (lua_toboolean(L, 5)) {
        lua_remove(L, 5);
        return lua_gettop(L) - 3;
      }
    }
    if (!pending) {
      lua_pushnil(L);
      return 1;
    }
    sched_yield(); /* the others' turn: a worker finishing a file request, a sender */
  }
}

/***
The source of a receive that takes a message from any rank (`MPI_ANY_SOURCE`).
@field lmpio.ANY_SOURCE
*/

/***
The tag of a receive that takes a message of any tag (`MPI_ANY_TAG`).
@field lmpio.ANY_TAG
*/

/***
The rank of no process (`MPI_PROC_NULL`): a send to it sends nothing, a
receive from it gets nil at once; nil as a rank means the same.
@field lmpio.PROC_NULL
*/

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
  int root = lmpio_lua_checkint(L, 3, luaL_optinteger(L, 3, 0), 0);
  if (root >= size) luaL_argerror(L, 3, lua_pushfstring(L, "root %d is not a rank of %d", root, size));
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
      lmpio_lua_checkmpi(L, MPI_Bcast(all + off, (int)n, MPI_BYTE, root, comm), "MPI_Bcast");
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
    lmpio_lua_checkmpi(L, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, all, counts, displs, MPI_BYTE, comm),
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
/* The operations on numbers and booleans (arrays take more, opnames). */
static const char *const value_opnames[] = {"sum", "max", "min", "prod", "land", "lor", NULL};

/* allreduce, scan and exscan of one number or boolean. */
static int reduce(lua_State *L, int kind, const char *name) {
  MPI_Comm comm = lmpio_lua_checkcomm(L, 1);
  if (lmpio_lua_tobuffer(L, 2)) return reduce_array(L, comm, kind, name);
  static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_LOR};
  int isbool = lua_type(L, 2) == LUA_TBOOLEAN;
  if (!isbool) luaL_checknumber(L, 2);
  int op = luaL_checkoption(L, 3, isbool ? "land" : "sum", value_opnames);
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
                                                           name, value_opnames[-v[2]], value_opnames[v[1]]));
  int allint = isbool || v[5] == 0;
  MPI_Op mop = ops[op];
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
  if (kind == R_ALLREDUCE) rc = MPI_Allreduce(in, out, 1, t, mop, comm);
  else if (kind == R_SCAN) rc = MPI_Scan(in, out, 1, t, mop, comm);
  else rc = MPI_Exscan(in, out, 1, t, mop, comm);
  lmpio_lua_checkmpi(L, rc, kind == R_ALLREDUCE ? "MPI_Allreduce" : kind == R_SCAN ? "MPI_Scan" : "MPI_Exscan");
  if (kind == R_EXSCAN && lmpio_lua_commrank(comm) == 0) {
    /* MPI leaves rank 0's result undefined: the op's identity, if any */
    if (mop == MPI_MAX || mop == MPI_MIN) {
      lua_pushnil(L);
      return 1;
    }
    ir = mop == MPI_PROD || mop == MPI_LAND;
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
  and for integer arrays also `"band"`, `"bor"` and `"bxor"` (default
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
  static const luaL_Reg local[] = {
    {"send", c_send}, {"isend", c_isend}, {"recv", c_recv}, {"irecv", c_irecv}, {"sendrecv", c_sendrecv},
    {NULL, NULL},
  };
  lmpio_lua_comm_methods(L, collectives, sizeof collectives / sizeof *collectives, local);
  if (luaL_newmetatable(L, LMPIO_LUA_MSGREQUEST)) {
    static const luaL_Reg meta[] = {{"__gc", m_gc}, {"__tostring", m_tostring}, {NULL, NULL}};
    static const luaL_Reg methods[] = {{"wait", m_wait}, {"test", m_test}, {NULL, NULL}};
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, -1, "waitall") == LUA_TFUNCTION) { /* request.c's, for file requests */
    lua_pushcclosure(L, l_waitall, 1);
    lua_setfield(L, -2, "waitall");
  } else {
    lua_pop(L, 1);
  }
  if (lua_getfield(L, -1, "waitany") == LUA_TFUNCTION) {
    lua_pushcclosure(L, l_waitany, 1);
    lua_setfield(L, -2, "waitany");
  } else {
    lua_pop(L, 1);
  }
  lua_pushinteger(L, MPI_ANY_SOURCE);
  lua_setfield(L, -2, "ANY_SOURCE");
  lua_pushinteger(L, MPI_ANY_TAG);
  lua_setfield(L, -2, "ANY_TAG");
  lua_pushinteger(L, MPI_PROC_NULL);
  lua_setfield(L, -2, "PROC_NULL");
  return 0;
}
