/* Typed memory and what works on it: arrays and buffers (lua/buffer.c), values (values.c), holds (holds.c), memory arguments (memarg.c), shapes and slices (shape.c, slice.c), array operations (array_ops.c, arith.c), records (records.c). */
#ifndef LMPIO_LUA_BUFFER_H
#define LMPIO_LUA_BUFFER_H

#include "datatype.h"
#include "error.h"

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
/* vidx must be absolute (what is pushed above the value). */
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

int lmpio_lua_buffer_open(lua_State *L);
int lmpio_lua_array_ops_open(lua_State *L);
int lmpio_lua_slice_open(lua_State *L);
int lmpio_lua_records_open(lua_State *L);
int lmpio_lua_arith_open(lua_State *L);

#endif
