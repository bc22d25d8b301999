/* Declarations shared by the C files of the Lua module `lmpio`.
 *
 * One file per concern, each with an lmpio_lua_<concern>_open(L) that adds
 * its functions to the module table on top of the stack (lmpio.c, the top,
 * only calls them in order; no file calls lmpio.c).  A concern added later
 * (e.g. lua/datarep.c) defines lmpio_lua_datarep_open: lmpio.c calls it
 * when it is linked in.
 *
 * Metatables: "lmpio.buffer" (typed arrays and byte buffers), "lmpio.datatype",
 * "lmpio.comm", "lmpio.file", "lmpio.error", "lmpio.request". */
#ifndef LMPIO_LUA_H
#define LMPIO_LUA_H

#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>
#include <lua.h>

#include "lmpio.h"

/* Lua's raising functions never return (they longjmp to the protected
 * call): said here so that the compiler and `make lint` follow the code as
 * it runs, not into a use of what the check before refused. */
int lua_error(lua_State *L) __attribute__((noreturn));
int luaL_error(lua_State *L, const char *fmt, ...) __attribute__((noreturn));
int luaL_argerror(lua_State *L, int arg, const char *extramsg) __attribute__((noreturn));
int luaL_typeerror(lua_State *L, int arg, const char *tname) __attribute__((noreturn));

#define LMPIO_LUA_BUFFER "lmpio.buffer"
#define LMPIO_LUA_DATATYPE "lmpio.datatype"
#define LMPIO_LUA_COMM "lmpio.comm"
#define LMPIO_LUA_FILE "lmpio.file"
#define LMPIO_LUA_ERROR "lmpio.error"
#define LMPIO_LUA_REQUEST "lmpio.request"
#define LMPIO_LUA_MSGREQUEST "lmpio.msgrequest"

/* ---- lifetime.c: MPI's lifetime ------------------------------------------ */

/* Whether this rank is leaving a job of several ranks because its script
 * failed (then nothing collective may run: the job is aborted). */
int lmpio_lua_failing(void);
/* Prints why (after "rank N of M ") and aborts the job (MPI_Abort). */
void lmpio_lua_abort(const char *why);


/* ---- error.c: MPI-IO failures as Lua error objects ------------------- */

/* Pushes an error object {class=, name=, message=} with metatable
 * "lmpio.error" (its __tostring prints all three).  msg NULL: the core's
 * lmpio_last_error_message(). */
void lmpio_lua_pusherror(lua_State *L, int cls, const char *msg);
/* Raises the error object for cls (never returns). */
int lmpio_lua_raise(lua_State *L, int cls, const char *msg);
/* The traceback of the last error object raised ("" if none), printed when
 * an uncaught error aborts the job (lua5.4 prints none for an object). */
const char *lmpio_lua_last_traceback(void);
/* Raises "'name' called after MPI was finalized" once MPI is finalized
 * (name: the running function's, as registered).  Every function that may
 * reach MPI calls it first: methods in the check of their object
 * (of a file, a communicator, a datatype, a request). */
void lmpio_lua_running(lua_State *L);
/* The message on top of the stack, "bad argument #3 to '?' (...)" from a
 * method run under lua_pcall (which hides its name, and that argument 1 is
 * self), rewritten in place as "bad argument #2 to 'name' (...)": self is 1
 * for a method, 0 for a function. */
void lmpio_lua_fix_argerror(lua_State *L, const char *name, int self);
/* Raises when rc is not MPI_SUCCESS; call it after the core returned. */
#define lmpio_lua_check(L, rc)                                                 \
  do {                                                                         \
    int lmpio_lua_rc_ = (rc);                                                  \
    if (lmpio_lua_rc_ != MPI_SUCCESS) lmpio_lua_raise((L), lmpio_lua_rc_, NULL); \
  } while (0)

/* Raises the error object of a failed MPI call (not an lmpio call): class from
 * MPI_Error_class, message "what: MPI_Error_string". */
void lmpio_lua_checkmpi(lua_State *L, int rc, const char *what);

/* The lua_State of the innermost core call in progress on this thread, so that
 * a converter written in Lua runs on the caller's thread (coroutine).  Every
 * core call of the module goes through LMPIO_LUA_CORE. */
extern _Thread_local lua_State *lmpio_lua_caller;
/* Set when a method has entered the core (lua/file.c: an error raised before
 * that is an argument error, which collective methods agree on). */
extern _Thread_local int lmpio_lua_entered;
#define LMPIO_LUA_CORE(L, rcvar, expr)                                         \
  do {                                                                         \
    lua_State *lmpio_lua_saved_ = lmpio_lua_caller;                            \
    lmpio_lua_caller = (L);                                                    \
    lmpio_lua_entered = 1;                                                     \
    (rcvar) = (expr);                                                          \
    lmpio_lua_caller = lmpio_lua_saved_;                                       \
  } while (0)

/* Checked arithmetic for the sizes the binding computes from what a script
 * gives (counts, extents, lengths): 0 on overflow, *r unspecified then. */
static inline int lmpio_lua_mul_ok(long long a, long long b, long long *r) { return !__builtin_mul_overflow(a, b, r); }
static inline int lmpio_lua_add_ok(long long a, long long b, long long *r) { return !__builtin_add_overflow(a, b, r); }

/* ---- buffer.c: typed arrays and byte buffers over C memory ------------ */

#define LMPIO_LUA_MAXDIM 8 /* dimensions of a shaped array */

struct lmpio_lua_records;
struct lmpio_lua_hold;
typedef struct lmpio_lua_buffer {
  unsigned char *data;   /* NULL only when nbytes == 0 */
  size_t nbytes;         /* bytes usable from data */
  size_t count;          /* elements (nbytes / esize for arrays of elements) */
  size_t esize;          /* bytes of one element (of one record for records) */
  MPI_Datatype type;     /* element type (MPI_BYTE for byte buffers) */
  int kind;              /* how elements are read/written from Lua (buffer.c) */
  int borrowed;          /* memory belongs to someone else */
  int valid;             /* 0: every access raises "used after the converter returned" */
  int readonly;          /* writes from Lua raise */
  int fresh;             /* allocated by a read from a count: trimmed to the items read */
  long long itemext;     /* fresh bytes of a derived type: extent of one item, */
  long long itemtail;    /*   and bytes of the last item from its start */
  struct lmpio_lua_buffer *root;        /* a view: the buffer owning the memory (user value 1) */
  const struct lmpio_lua_records *rec;  /* records: their fields (user value 2), else NULL */
  int isref;             /* one record of a records array: string keys are its fields */
  int ndim;              /* 0: no shape (one dimension of count elements) */
  int forder;            /* the shape is in Fortran order (first index fastest) */
  size_t dims[LMPIO_LUA_MAXDIM];
  int strided;           /* a slice: element k of dimension d at data + sum(k_d * strides[d]) */
  ptrdiff_t strides[LMPIO_LUA_MAXDIM]; /* a slice's, in bytes */
  MPI_Datatype dtype;    /* a slice's datatype (its object in user value 2), from data */
  struct lmpio_lua_hold *holds; /* of a root: pending calls that hold its memory (buffer.c) */
} lmpio_lua_buffer;

/* Checks that idx is a buffer that may be used; raises otherwise. */
lmpio_lua_buffer *lmpio_lua_checkbuffer(lua_State *L, int idx);
/* The same, raising for a slice (for what needs one block of memory). */
lmpio_lua_buffer *lmpio_lua_checkflat(lua_State *L, int idx);
/* Pushes a view of count elements of b's type at data (inside the memory
 * of b, at bidx, which it keeps alive); no shape. */
lmpio_lua_buffer *lmpio_lua_pushview(lua_State *L, int bidx, const lmpio_lua_buffer *b, unsigned char *data,
                                     size_t count);
/* shape.c: the address of element i (0-based, storage order) of a slice. */
unsigned char *lmpio_lua_slice_at(const lmpio_lua_buffer *b, size_t i);
/* shape.c: the dimensions of b (its shape, or one of count elements) and
 * the byte strides of each (a slice's, or those of its dense order);
 * returns the number of dimensions. */
int lmpio_lua_layout(const lmpio_lua_buffer *b, size_t *dims, ptrdiff_t *strides);
/* shape.c: whether a and b have the same dimensions. */
int lmpio_lua_sameshape(const lmpio_lua_buffer *a, const lmpio_lua_buffer *b);
/* shape.c: a walk over the elements of 1 to 3 arrays or slices of the same
 * shape, element by element in step, as rows: row(ctx, p, st, n) gets the
 * address of the row's first element in each (p[o]), the byte stride
 * between its elements (st[o]) and their number.  Rows follow the fastest
 * dimension of the first operand; dimensions contiguous in every operand
 * are merged, so an array is one row. */
typedef struct {
  int nd, nops;
  size_t dims[LMPIO_LUA_MAXDIM];
  unsigned char *base[3];
  ptrdiff_t st[3][LMPIO_LUA_MAXDIM];
} lmpio_lua_walk;
typedef void (*lmpio_lua_row)(void *ctx, unsigned char *const *p, const ptrdiff_t *st, size_t n);
void lmpio_lua_walk_init(lmpio_lua_walk *w, lmpio_lua_buffer *const *bs, int n);
void lmpio_lua_walk_run(const lmpio_lua_walk *w, lmpio_lua_row row, void *ctx);
/* NULL when idx is not a buffer (does not check validity). */
lmpio_lua_buffer *lmpio_lua_tobuffer(lua_State *L, int idx);
/* A new zeroed owned buffer of count elements of predefined or derived type
 * (derived: count * extent bytes, not indexable from Lua). */
lmpio_lua_buffer *lmpio_lua_newbuffer(lua_State *L, MPI_Datatype type, size_t count);
/* A borrowed view on someone else's memory (e.g. a converter's buffers): call
 * lmpio_lua_invalidate on it before the memory goes away. */
lmpio_lua_buffer *lmpio_lua_pushborrowed(lua_State *L, void *data, size_t count,
                                         MPI_Datatype type, int readonly);
void lmpio_lua_invalidate(lmpio_lua_buffer *b);
/* After a read into b that transferred n items: a buffer the call allocated
 * from a count (b->fresh) keeps only those n items; others are unchanged. */
void lmpio_lua_readdone(lmpio_lua_buffer *b, lua_Integer n);

/* Memory arguments of a data access call: (data [, count [, datatype]]) at
 * idx.  data is a buffer, or a Lua string when writing.  Count and type
 * default from the buffer; an explicit pair that does not fit is an error. */
typedef struct {
  void *ptr;
  int count;
  MPI_Datatype type;
  MPI_Count type_size;   /* data bytes of one item of type */
  lmpio_lua_buffer *buf; /* NULL for a string */
  struct lmpio_lua_datatype *tobj; /* the datatype object given, if any (kept in use during the call) */
} lmpio_lua_mem;
/* Parses the memory arguments.  writing: strings are accepted.  For reads,
 * a number at idx allocates a new buffer (pushed on the stack) of that
 * count of type (default lmpio.BYTE).  Returns the number of stack slots used. */
int lmpio_lua_checkmem(lua_State *L, int idx, int writing, lmpio_lua_mem *m);
/* Raises when the memory of m (parsed from idx) is a converter's borrowed
 * buffer or a view of one: a call that keeps the memory past its return (a
 * nonblocking call, a split collective's _begin) would use it after the
 * converter returned and the memory is gone. */
void lmpio_lua_checklasting(lua_State *L, int idx, const lmpio_lua_mem *m);
/* datarep.c: the memory of the data access call in progress on this thread,
 * so that a converter's userbuf covers the caller's whole buffer. */
extern _Thread_local const lmpio_lua_mem *lmpio_lua_caller_mem;
/* LMPIO_LUA_CORE for data access calls: also records their memory, and
 * keeps its datatype object in use (a converter cannot free it). */
#define LMPIO_LUA_CORE_MEM(L, m, rcvar, expr)                                  \
  do {                                                                         \
    const lmpio_lua_mem *lmpio_lua_saved_mem_ = lmpio_lua_caller_mem;          \
    lmpio_lua_caller_mem = (m);                                                \
    lmpio_lua_type_use((m)->tobj);                                             \
    LMPIO_LUA_CORE(L, rcvar, expr);                                            \
    lmpio_lua_type_unuse((m)->tobj);                                           \
    lmpio_lua_caller_mem = lmpio_lua_saved_mem_;                               \
  } while (0)

/* Holds: memory that a pending call (a nonblocking call until its request
 * completes, a split collective until its _end) transfers in the
 * background.  Lua may read memory a pending write holds, and neither read
 * nor write memory a pending read holds; a call that would raises "array
 * is held by a pending iwrite_at; wait for its request first" (file calls;
 * comm:isend holds as a write does).  Views of
 * the same memory are covered byte range by byte range. */
typedef struct lmpio_lua_hold lmpio_lua_hold;
/* Pushes a hold of m's buffer (the value at dataidx) by `call`, a read or
 * not, on behalf of the file object at fileidx (released when it closes;
 * 0: no file, a message's).
 * req: the request of a nonblocking call (the hold counts only while it is
 * not MPI_REQUEST_NULL: a call that failed holds nothing); NULL for a split
 * collective (held until released at its _end).  Pushes nil and returns
 * NULL when m has no buffer (a string). */
lmpio_lua_hold *lmpio_lua_hold_push(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading, const char *call,
                                    int fileidx, const MPI_Request *req);
/* Releases a hold (again: nothing). */
void lmpio_lua_unhold(lmpio_lua_hold *h);
/* Releases the hold at idx, if it is one. */
void lmpio_lua_unhold_at(lua_State *L, int idx);
/* Releases every hold made for the file object at fileidx (close). */
void lmpio_lua_unhold_file(lua_State *L, int fileidx);
/* Raises when b's memory is held: by any pending call when Lua is to write
 * it, by a pending read when Lua is to read it.  One test when nothing
 * holds it. */
#define LMPIO_LUA_HELD(b) (((b)->root ? (b)->root : (b))->holds != NULL)
void lmpio_lua_checkheld_(lua_State *L, const lmpio_lua_buffer *b, int writing);
static inline void lmpio_lua_checkheld(lua_State *L, const lmpio_lua_buffer *b, int writing) {
  if (b && LMPIO_LUA_HELD(b)) lmpio_lua_checkheld_(L, b, writing);
}

/* The array at idx when it is one (NULL otherwise) that may be the data of
 * a collective or a message: an array, slice or byte buffer of a
 * predefined type, not records.  Its type's code in *code. */
lmpio_lua_buffer *lmpio_lua_toarray(lua_State *L, int idx, int *code);
/* The same, a slice replaced at idx by a contiguous copy (for
 * MPI's reductions, which take contiguous data). */
lmpio_lua_buffer *lmpio_lua_toarray_flat(lua_State *L, int idx, int *code);
/* shape.c: copies src's elements into dst (same shape and type). */
void lmpio_lua_copy(lmpio_lua_buffer *dst, lmpio_lua_buffer *src);
/* An array's memory as MPI takes it: (ptr, count, type); a slice is one
 * item of its datatype from its first element. */
typedef struct {
  void *ptr;
  int count;
  MPI_Datatype type;
} lmpio_lua_span;
/* The span of the array b at idx (raises when it has more than INT_MAX
 * elements). */
void lmpio_lua_spanof(lua_State *L, int idx, const lmpio_lua_buffer *b, lmpio_lua_span *s);

/* buffer.c: whether b's memory may be used (a converter's buffer, or a
 * view of one, no longer may once the converter returned). */
int lmpio_lua_usable(const lmpio_lua_buffer *b);
/* buffer.c: a new zeroed buffer object of inline_bytes of memory (MPI_BYTE
 * elements until the caller says otherwise). */
lmpio_lua_buffer *lmpio_lua_allocbuffer(lua_State *L, size_t inline_bytes);
/* buffer.c: pushes a view of count elements (type, kind, esize; records
 * rec) at data, inside the memory of b (at bidx), which it keeps alive. */
lmpio_lua_buffer *lmpio_lua_pushview_of(lua_State *L, int bidx, const lmpio_lua_buffer *b, unsigned char *data,
                                        size_t count, size_t esize, MPI_Datatype type, int kind,
                                        const struct lmpio_lua_records *rec);
/* buffer.c: the layout of the record datatype object at idx (pushed), or
 * NULL (nothing pushed); n zeroed records of layout r (at lidx), pushed. */
const struct lmpio_lua_records *lmpio_lua_findlayout(lua_State *L, int idx);
lmpio_lua_buffer *lmpio_lua_newrecords(lua_State *L, int lidx, const struct lmpio_lua_records *r, size_t n);
/* buffer.c: the data bytes of one item of t; the bytes from a buffer's
 * start that count items of t span (their data must start at or after 0):
 * LMPIO_LUA_SPAN_BELOW when they reach below 0, LMPIO_LUA_SPAN_HUGE when
 * the span does not fit a 64-bit size. */
MPI_Count lmpio_lua_type_size(lua_State *L, MPI_Datatype t);
enum { LMPIO_LUA_SPAN_BELOW = -1, LMPIO_LUA_SPAN_HUGE = -2 };
long long lmpio_lua_typespan(lua_State *L, int count, MPI_Datatype t);

/* values.c: stores the value at vidx into the element of kind and esize
 * bytes at p: LMPIO_LUA_ST_OK or why not (nothing stored); storeerror
 * raises the error of such an outcome for "what" (e.g. "element 3 of a
 * DOUBLE array"). */
enum { LMPIO_LUA_ST_OK, LMPIO_LUA_ST_NEEDINT, LMPIO_LUA_ST_NOTINT, LMPIO_LUA_ST_RANGE, LMPIO_LUA_ST_NEEDNUM,
       LMPIO_LUA_ST_NEEDBOOL, LMPIO_LUA_ST_NOLUA };
int lmpio_lua_storeelem(lua_State *L, int kind, size_t esize, unsigned char *p, int vidx);
int lmpio_lua_storeerror(lua_State *L, int st, int kind, size_t esize, int vidx, const char *what);

/* holds.c: the check of n elements of b from element i (a slice: its
 * span); the hold metatable and registry (at open); a registry table with
 * weak keys at key. */
void lmpio_lua_checkheld_elems(lua_State *L, const lmpio_lua_buffer *b, size_t i, size_t n, int writing);
void lmpio_lua_holds_open(lua_State *L);
void lmpio_lua_new_weak_keys(lua_State *L, const char *key);

/* buffer.c: the 0-based storage position of the element at the 1-based
 * indices given as arguments first..last (one index: a position; one per
 * dimension: in the shape); whether the option at idx names Fortran order;
 * the shape (a table of sizes) at idx into dims, its dimensions returned,
 * the product in *total. */
size_t lmpio_lua_argposition(lua_State *L, const lmpio_lua_buffer *b, int first, int last);
int lmpio_lua_checkorder(lua_State *L, int idx);
int lmpio_lua_checkshape(lua_State *L, int idx, size_t *dims, size_t *total);

/* Elements i..j given as arguments ai and aj (optional; clamped as
 * string.sub clamps, negative from the end) -> start (0-based), n. */
void lmpio_lua_range(lua_State *L, const lmpio_lua_buffer *b, int ai, int aj, size_t *start, size_t *n);
/* Pushes the value of an element of kind and esize bytes at p, as a[i]
 * reads it; 0 (nothing pushed) when Lua cannot hold it. */
int lmpio_lua_loadelem(lua_State *L, int kind, size_t esize, const unsigned char *p);

/* Raises when count items of type do not fit nbytes of memory. */
void lmpio_lua_checkfit(lua_State *L, int arg, size_t nbytes, int count, MPI_Datatype type);

/* ---- datatype.c --------------------------------------------------------- */

typedef struct lmpio_lua_datatype {
  MPI_Datatype type;
  int owned;   /* freed by __gc */
  int valid;   /* 0: borrowed and no longer valid */
  int in_use;  /* core calls in progress that use the type: free() refuses */
} lmpio_lua_datatype;

MPI_Datatype lmpio_lua_checktype(lua_State *L, int idx);
/* The datatype object at idx, or NULL when idx holds none. */
lmpio_lua_datatype *lmpio_lua_totype(lua_State *L, int idx);
/* Around a core call that uses d's type (d may be NULL): while the call is
 * in progress (a converter or extent function written in Lua runs inside
 * it), d:free() raises instead of freeing the handle the core holds.  Only
 * around calls that cannot raise: every use needs its unuse. */
static inline void lmpio_lua_type_use(lmpio_lua_datatype *d) {
  if (d) d->in_use++;
}
static inline void lmpio_lua_type_unuse(lmpio_lua_datatype *d) {
  if (d) d->in_use--;
}
MPI_Datatype lmpio_lua_opttype(lua_State *L, int idx, MPI_Datatype def);
int lmpio_lua_istype(lua_State *L, int idx);
/* Pushes a datatype object; owned: freed when collected.  Predefined types
 * are pushed as the module's own constants when possible. */
lmpio_lua_datatype *lmpio_lua_pushtype(lua_State *L, MPI_Datatype t, int owned);
/* How elements of a predefined type are read and written from Lua. */
enum { LMPIO_LUA_K_NONE, LMPIO_LUA_K_INT, LMPIO_LUA_K_UINT, LMPIO_LUA_K_BOOL,
       LMPIO_LUA_K_F32, LMPIO_LUA_K_F64, LMPIO_LUA_K_LDOUBLE };
int lmpio_lua_typekind(MPI_Datatype t);
/* The name of a predefined type ("DOUBLE"), or NULL. */
const char *lmpio_lua_typename(MPI_Datatype t);
/* Whether t is a predefined (named) type. */
int lmpio_lua_isnamed(MPI_Datatype t);
/* A small number naming a predefined type alike on every rank (-1 for
 * other types), and back (MPI_DATATYPE_NULL for an unknown number). */
int lmpio_lua_typecode(MPI_Datatype t);
MPI_Datatype lmpio_lua_codetype(long long code);

/* ---- comm.c ------------------------------------------------------------ */

/* A communicator object: the MPI communicator, and its shadow (a
 * duplicate made with it, for the second part of messages too large to
 * travel in one, lua/p2p.c, so that no receive of the script can take it). */
typedef struct lmpio_lua_comm {
  MPI_Comm comm;
  MPI_Comm shadow;
  unsigned seq;  /* the tag of this rank's next payload on the shadow */
  int owned;     /* freed by comm:free() (MPI_Comm_free is collective: never in __gc) */
} lmpio_lua_comm;
/* The communicator at idx; raises when it was freed or MPI was finalized. */
MPI_Comm lmpio_lua_checkcomm(lua_State *L, int idx);
lmpio_lua_comm *lmpio_lua_checklcomm(lua_State *L, int idx);
/* info.c: converts a Lua table (or nil) at idx to a new MPI_Info (or MPI_INFO_NULL):
 * values are strings, numbers or booleans ("true"/"false"), as strings;
 * validates everything before creating it. */
MPI_Info lmpio_lua_checkinfo(lua_State *L, int idx);
void lmpio_lua_freeinfo(MPI_Info *info);
/* Pushes an MPI_Info as a Lua table of strings. */
void lmpio_lua_pushinfo(lua_State *L, MPI_Info info);
/* The block distribution of the module (lmpio.block, comm:grid,
 * comm:scatter; darray's "block"): part i of parts (0-based) owns
 * items first .. first + count - 1 of n (0-based), ceil(n / parts) of them
 * or, for the last parts, fewer or none. */
void lmpio_lua_block(lua_Integer n, lua_Integer parts, lua_Integer i, lua_Integer *first, lua_Integer *count);

/* ---- agree.c: the agreement of collective methods ----------------------- */

/* The rank of this process in comm, and comm's size. */
int lmpio_lua_commrank(MPI_Comm comm);
int lmpio_lua_commsize(MPI_Comm comm);
/* Runs fn, a collective method, under lua_pcall on the arguments 1..top
 * (self kept alive below them; up, when not NULL, fn's upvalue 1 as a light
 * userdata: the row of a table that describes it): returns the number of
 * its results (on top).  An error raised before the method joined its first communication
 * (lmpio_lua_entered still 0: an argument error of this rank) is left on
 * top and -1 returned: the caller joins that communication as a failing
 * rank.  Any other error is raised as it is. */
int lmpio_lua_collective_pcall(lua_State *L, lua_CFunction fn, const void *up);

/* An agreement is an MPI_Allreduce (MPI_MAX) of LMPIO_LUA_NAGREE words
 * (LMPIO_LUA_AGREE_WORDS for bcast, whose short values travel in it): v[0]
 * is the failure flag (0 where the arguments were right), the other words
 * are the method's own (a value and its negation give max and min at
 * once).  When any rank failed, every rank raises MPI_ERR_ARG. */
enum { LMPIO_LUA_NAGREE = 16, LMPIO_LUA_AGREE_WORDS = LMPIO_LUA_NAGREE + 34 };
void lmpio_lua_agree(lua_State *L, MPI_Comm comm, long long *v, int n, const char *msg);
/* Joins an agreement of LMPIO_LUA_NAGREE words as a failing rank. */
void lmpio_lua_agree_failed(lua_State *L, MPI_Comm comm, const char *msg);
/* allgather's first communication: an MPI_Allgather of one block of
 * LMPIO_LUA_GATHER_BLOCK bytes per rank whose first 8 bytes (little-endian)
 * are a length, or UINT64_MAX on a failing rank (then every rank raises),
 * or LMPIO_LUA_GATHER_ARRAY for an array. */
#define LMPIO_LUA_GATHER_BLOCK 64
#define LMPIO_LUA_GATHER_ARRAY (UINT64_MAX - 1)
#define LMPIO_LUA_GATHER_FAILED UINT64_MAX
void lmpio_lua_gather_blocks(lua_State *L, MPI_Comm comm, unsigned char *blocks, const char *msg);
/* Joins lmpio_lua_gather_blocks as a failing rank. */
void lmpio_lua_gather_failed(lua_State *L, MPI_Comm comm, const char *msg);
/* A collective method: run under lua_pcall by comm.c, an error raised
 * before it joined its first communication (fail: joins it as a failing
 * rank) is raised by every rank. */
typedef struct lmpio_lua_collective {
  const char *name;
  lua_CFunction fn;
  void (*fail)(lua_State *L, MPI_Comm comm, const char *msg);
} lmpio_lua_collective;
/* Little-endian 64-bit words of the gather blocks. */
static inline void lmpio_lua_put_le64(unsigned char *b, uint64_t u) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(u >> (8 * i));
}
static inline uint64_t lmpio_lua_get_le64(const unsigned char *b) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)b[i] << (8 * i);
  return u;
}

/* ---- comm.c: for the collective methods of other files (message.c) ----- */

/* Adds collective methods (cm[0..n-1], static) and local ones (local, may
 * be NULL) to the communicators' methods. */
void lmpio_lua_comm_methods(lua_State *L, const lmpio_lua_collective *cm, size_t n, const luaL_Reg *local);

/* ---- serial.c: Lua values as bytes (message.c) ------------------------- */

/* The serialised form of the value at idx (argument arg, for messages),
 * as bcast sends it: pushes a userdata holding the bytes, returns them. */
unsigned char *lmpio_lua_serialise(lua_State *L, int idx, int arg, size_t *n);
/* Pushes the value serialised in p[0..n-1]; raises when it is corrupt. */
void lmpio_lua_deserialise(lua_State *L, const unsigned char *p, size_t n);

/* ---- request.c: requests of the nonblocking calls --------------------- */

typedef struct lmpio_lua_request {
  MPI_Request req;       /* MPI_REQUEST_NULL once waited (or never started) */
  lmpio_lua_hold *hold;  /* of its buffer until it completes (user value 2), or NULL */
  MPI_Count type_size;   /* data bytes of one item of the call's type */
  int reading;           /* wait returns the buffer too */
  int done;              /* waited: count holds the result */
  lua_Integer count;
  lmpio_lua_mem mem;     /* the call's memory (tobj NULL), for converters run at completion */
} lmpio_lua_request;

/* Pushes a new request object (req MPI_REQUEST_NULL, for the core call to
 * fill) that keeps the value at dataidx alive until it is waited for. */
lmpio_lua_request *lmpio_lua_newrequest(lua_State *L, int dataidx, const lmpio_lua_mem *m, int reading);

/* ---- lifetime.c: exit functions ------------------------------------------ */

/* Registers fn to be run (once, in registration order) before MPI_Finalize
 * at exit. */
typedef void (*lmpio_lua_exit_fn)(const void *owner);
void lmpio_lua_atexit(lmpio_lua_exit_fn fn);
/* The owner of objects created in L (its main thread), passed to exit
 * functions so that closing one lua_State only touches its own objects; exit
 * functions receive NULL at process exit (everything). */
void *lmpio_lua_owner(lua_State *L);

/* ---- concerns ------------------------------------------------------------ */

int lmpio_lua_error_open(lua_State *L);
int lmpio_lua_buffer_open(lua_State *L);
int lmpio_lua_datatype_open(lua_State *L);
int lmpio_lua_comm_open(lua_State *L);
int lmpio_lua_file_open(lua_State *L);
int lmpio_lua_request_open(lua_State *L);
int lmpio_lua_array_ops_open(lua_State *L);
int lmpio_lua_message_open(lua_State *L);
int lmpio_lua_p2p_open(lua_State *L);
int lmpio_lua_slice_open(lua_State *L);
int lmpio_lua_typemap_open(lua_State *L);
int lmpio_lua_records_open(lua_State *L);
int lmpio_lua_msgreq_open(lua_State *L);
int lmpio_lua_arith_open(lua_State *L);

/* p2p.c: the pace of every wait of the module that polls: a bounded number
 * of polls, then sched_yield for a while, then sleeps that grow. */
typedef struct {
  long long opaque[4];
} lmpio_lua_waiter; /* zeroed before a wait */
void lmpio_lua_pause(lmpio_lua_waiter *w);
/* The wait of w is over: adapts how long the next ones poll. */
void lmpio_lua_waited(const lmpio_lua_waiter *w);
/* lifetime.c: MPI initialised and the script's end watched (first); the
 * environment functions (wtime, wtick, abort, version). */
int lmpio_lua_lifetime_open(lua_State *L);
int lmpio_lua_environment_open(lua_State *L);

/* helpers.c: raises "unknown field 'x'" unless the table at idx has only the
 * string keys in names (NULL-terminated). */
void lmpio_lua_checkfields(lua_State *L, int idx, const char *const *names);
/* helpers.c: v, argument arg, as an int from min to INT_MAX; raises "out of
 * range" otherwise. */
int lmpio_lua_checkint(lua_State *L, int arg, lua_Integer v, lua_Integer min);

/* Registers the functions of l into the table on top of the stack. */
#define lmpio_lua_setfuncs(L, l) luaL_setfuncs((L), (l), 0)

#endif
