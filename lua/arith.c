/* Array arithmetic in C: a:copy(src), a:add / a:subtract / a:multiply /
 * a:divide (a number or a same-shape array or slice; in place, or into a
 * result), a:axpy(alpha, x), and the operators + - * / (into a new array).
 *
 * Operands are arrays or slices of one shape and one element type
 * (DOUBLE, FLOAT, or 32- and 64-bit integers; integers wrap modulo 2^n as
 * Lua's integers do, and have no division).  They are walked together
 * element by element in storage order (lua/slice.c, lmpio_lua_walk), row
 * by row along the fastest dimension: a row whose elements are adjacent
 * in every operand runs as a plain C loop that the compiler vectorises.
 * Cost: one pass over the elements per call, at memory speed; no
 * allocation but the result of an operator.  Operands that overlap other
 * than exactly (a shifted view of the same memory) give unspecified
 * results, except for copy, which copies as memmove does row by row. */
#include "datatype.h"
#include "buffer.h"

#include <stdint.h>
#include <string.h>

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_AXPY };
enum { T_F64, T_F32, T_I32, T_I64 };

typedef struct {
  int op, t;
  int scalar; /* the second operand is the number s */
  double s;
  int64_t si;
} ctx;

#define KERNEL(name, T, U, FLOAT)                                                                   \
  static void name(void *vc, unsigned char *const *p, const ptrdiff_t *st, size_t n) {             \
    const ctx *c = vc;                                                                              \
    T s = FLOAT ? (T)c->s : (T)c->si;                                                               \
    ptrdiff_t so = st[0], sa = st[1], sx = c->scalar ? 0 : st[2];                                   \
    if (so == (ptrdiff_t)sizeof(T) && sa == (ptrdiff_t)sizeof(T) &&                                 \
        (c->scalar || sx == (ptrdiff_t)sizeof(T)) && (uintptr_t)p[0] % _Alignof(T) == 0 &&          \
        (uintptr_t)p[1] % _Alignof(T) == 0 && (c->scalar || (uintptr_t)p[2] % _Alignof(T) == 0)) { \
      T *o = (T *)(void *)p[0];                                                                     \
      const T *a = (const T *)(const void *)p[1];                                                   \
      const T *x = c->scalar ? NULL : (const T *)(const void *)p[2];                                \
      switch (c->op) {                                                                              \
      case OP_ADD:                                                                                  \
        if (x) for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] + (U)x[i]);                        \
        else for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] + (U)s);                             \
        return;                                                                                     \
      case OP_SUB:                                                                                  \
        if (x) for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] - (U)x[i]);                        \
        else for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] - (U)s);                             \
        return;                                                                                     \
      case OP_MUL:                                                                                  \
        if (x) for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] * (U)x[i]);                        \
        else for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] * (U)s);                             \
        return;                                                                                     \
      case OP_DIV:                                                                                  \
        if (x) for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] / (U)x[i]);                        \
        else for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] / (U)s);                             \
        return;                                                                                     \
      case OP_AXPY: for (size_t i = 0; i < n; i++) o[i] = (T)((U)a[i] + (U)s * (U)x[i]); return;    \
      }                                                                                             \
      return;                                                                                       \
    }                                                                                               \
    for (size_t i = 0; i < n; i++) {                                                                \
      T a, x = s, r;                                                                                \
      memcpy(&a, p[1] + (ptrdiff_t)i * sa, sizeof a);                                               \
      if (!c->scalar) memcpy(&x, p[2] + (ptrdiff_t)i * sx, sizeof x);                               \
      switch (c->op) {                                                                              \
      case OP_ADD: r = (T)((U)a + (U)x); break;                                                     \
      case OP_SUB: r = (T)((U)a - (U)x); break;                                                     \
      case OP_MUL: r = (T)((U)a * (U)x); break;                                                     \
      case OP_DIV: r = (T)((U)a / (U)x); break;                                                     \
      default: r = (T)((U)a + (U)s * (U)x); break;                                                  \
      }                                                                                             \
      memcpy(p[0] + (ptrdiff_t)i * so, &r, sizeof r);                                               \
    }                                                                                               \
  }
KERNEL(k_f64, double, double, 1)
KERNEL(k_f32, float, float, 1)
KERNEL(k_i32, int32_t, uint32_t, 0)
KERNEL(k_i64, int64_t, uint64_t, 0)

/* The kind of arithmetic of b's elements, or -1. */
static int arithtype(const lmpio_lua_buffer *b) {
  if (b->rec) return -1;
  if (b->kind == LMPIO_LUA_K_F64 && b->esize == sizeof(double)) return T_F64;
  if (b->kind == LMPIO_LUA_K_F32 && b->esize == sizeof(float)) return T_F32;
  if (b->kind == LMPIO_LUA_K_INT && b->esize == 4) return T_I32;
  if (b->kind == LMPIO_LUA_K_INT && b->esize == 8) return T_I64;
  return -1;
}

static const char *tname(const lmpio_lua_buffer *b) {
  const char *n = lmpio_lua_typename(b->type);
  return b->rec ? "records" : n ? n : "?";
}

/* The array at idx, readable (and writable: out) now. */
static lmpio_lua_buffer *operand(lua_State *L, int idx, int out) {
  lmpio_lua_buffer *b = lmpio_lua_checkbuffer(L, idx);
  if (out && b->readonly) lmpio_lua_argerror(L, idx, "attempt to write to a read-only buffer");
  lmpio_lua_checkheld(L, b, out);
  return b;
}

/* Raises unless b has a's shape and type. */
static void match(lua_State *L, int idx, const lmpio_lua_buffer *a, const lmpio_lua_buffer *b) {
  if (b->type != a->type || b->rec || a->rec)
    lmpio_lua_argerror(L, idx, lua_pushfstring(L, "an array of %s expected (as the array operated on), got %s", tname(a),
                                          tname(b)));
  if (!lmpio_lua_sameshape(a, b))
    lmpio_lua_argerror(L, idx, lua_pushfstring(L, "an array or slice of the same shape expected (%I elements, got %I)",
                                          (lua_Integer)a->count, (lua_Integer)b->count));
}

/* out = a op x, where x (at xidx) is a number or an array; scale: axpy's
 * alpha.  Returns out. */
static void run(lua_State *L, int op, lmpio_lua_buffer *out, int outidx, lmpio_lua_buffer *a, int aidx, int xidx,
                double alpha) {
  ctx c = {op, arithtype(a), 0, alpha, 0};
  if (c.t < 0)
    lmpio_lua_argerror(L, aidx, lua_pushfstring(L, "arithmetic applies to arrays of DOUBLE, FLOAT and 32- and 64-bit "
                                              "integers, not of %s", tname(a)));
  match(L, outidx, a, out);
  lmpio_lua_buffer *ops[3] = {out, a, NULL};
  int isint = c.t == T_I32 || c.t == T_I64;
  if (op == OP_AXPY && isint) {
    if (!lua_isinteger(L, xidx - 1)) lmpio_lua_argerror(L, xidx - 1, "an integer scale for an integer array");
    c.si = (int64_t)lua_tointeger(L, xidx - 1);
  }
  if (lua_type(L, xidx) == LUA_TNUMBER && op != OP_AXPY) {
    c.scalar = 1;
    if (isint) {
      if (!lua_isinteger(L, xidx)) lmpio_lua_argerror(L, xidx, "an integer expected for an integer array");
      c.si = (int64_t)lua_tointeger(L, xidx);
      if (c.t == T_I32 && (c.si < INT32_MIN || c.si > INT32_MAX)) lmpio_lua_argerror(L, xidx, "out of range of an INT");
    } else {
      c.s = (double)lua_tonumber(L, xidx);
    }
  } else {
    ops[2] = operand(L, xidx, 0);
    match(L, xidx, a, ops[2]);
  }
  if (isint && op == OP_DIV) lmpio_lua_argerror(L, aidx, "integer arrays have no division (use arrays of floats)");
  lmpio_lua_walk w;
  lmpio_lua_walk_init(&w, ops, c.scalar ? 2 : 3);
  static const lmpio_lua_row kernels[] = {k_f64, k_f32, k_i32, k_i64};
  lmpio_lua_walk_run(&w, kernels[c.t], &c);
}

/* a:op(x [, out]) */
static int elementwise(lua_State *L, int op) {
  lmpio_lua_buffer *a = operand(L, 1, 0);
  lmpio_lua_checkany(L, 2);
  int outidx = lua_isnoneornil(L, 3) ? 1 : 3;
  lmpio_lua_buffer *out = operand(L, outidx, 1);
  run(L, op, out, outidx, a, 1, 2, 0);
  lua_settop(L, outidx);
  return 1;
}

/***
Adds x to every element, in C: `a:add(x)` is a = a + x, `a:add(x, out)`
is out = a + x (a unchanged).
x is a number, or an array or slice of a's shape (the same dimensions)
and element type, added element by element (in storage order).  Arrays
of DOUBLE, FLOAT and 32- and 64-bit integers (which wrap modulo 2^n, and
take integers only).  One pass over the elements, at memory speed: no
allocation.  `a + x` (and `x + a` for a number x) gives a new array.
@function array:add
@param x a number or an array or slice of a's shape
@param[opt] out an array or slice of a's shape and type for the result
  (may be a or x)
@return out, or a
@raise when shapes or element types differ, or the type has no arithmetic
@usage u:slice({2, -2}, {2, -2}):add(1)      -- the interior, in place
*/
static int a_add(lua_State *L) { return elementwise(L, OP_ADD); }

/***
Subtracts x from every element: `a:subtract(x [, out])`, as `array:add`
(`a:sub` is the view of elements i..j).
@function array:subtract
@param x a number or an array or slice of a's shape
@param[opt] out the result (default: a)
@return out, or a
@raise as `array:add`
*/
static int a_subtract(lua_State *L) { return elementwise(L, OP_SUB); }

/***
Multiplies every element by x: `a:multiply(x [, out])`, as `array:add`.
@function array:multiply
@param x a number or an array or slice of a's shape
@param[opt] out the result (default: a)
@return out, or a
@raise as `array:add`
*/
static int a_multiply(lua_State *L) { return elementwise(L, OP_MUL); }

/***
Divides every element by x: `a:divide(x [, out])`, as `array:add`; floats
only (IEEE division: x / 0 is an infinity or NaN).
@function array:divide
@param x a number or an array or slice of a's shape
@param[opt] out the result (default: a)
@return out, or a
@raise as `array:add`, and for integer arrays
*/
static int a_divide(lua_State *L) { return elementwise(L, OP_DIV); }

/***
The scaled add y = y + alpha * x, in C, in one pass (BLAS's axpy).
@function array:axpy
@param alpha a number (an integer for integer arrays)
@param x an array or slice of y's shape and type
@return y
@raise as `array:add`
@usage -- one step of the heat equation on the interior c of u
t:copy(n):add(s):add(w):add(e):axpy(-4, c)   -- t = n + s + w + e - 4c
c:axpy(0.2, t)                               -- c = c + 0.2 t
*/
static int a_axpy(lua_State *L) {
  lmpio_lua_buffer *y = operand(L, 1, 1);
  double alpha = (double)lmpio_lua_checknumber(L, 2);
  lmpio_lua_checkbuffer(L, 3);
  run(L, OP_AXPY, y, 1, y, 1, 3, alpha);
  lua_settop(L, 1);
  return 1;
}

/***
Copies the elements of src into a, in C: arrays and slices of one shape
and element type, element by element in storage order (a slice's
elements where they are).  The way to move data between arrays and slices
(`a:set(i, src)` copies in storage order from element i, whatever the
shapes).
@function array:copy
@param src an array or slice of a's shape and type
@return a
@raise when the shapes or the element types differ, or a is read-only
@usage ghost:copy(u:slice(2, nil))   -- a row into a row-shaped array
*/
static int a_copy(lua_State *L) {
  lmpio_lua_buffer *a = operand(L, 1, 1);
  lmpio_lua_buffer *src = operand(L, 2, 0);
  match(L, 2, a, src);
  lmpio_lua_copy(a, src);
  lua_settop(L, 1);
  return 1;
}

/* The operators: a new array shaped as the array operand (C memory in its
 * order) = a op b; a number on the left fills it first. */
static int binop(lua_State *L, int op) {
  int ai = lmpio_lua_tobuffer(L, 1) ? 1 : 2;
  lmpio_lua_buffer *a = operand(L, ai, 0);
  lmpio_lua_buffer *r = lmpio_lua_newbuffer(L, a->type, a->count); /* 3 */
  size_t dims[LMPIO_LUA_MAXDIM];
  ptrdiff_t st[LMPIO_LUA_MAXDIM];
  r->ndim = lmpio_lua_layout(a, dims, st);
  if (a->ndim == 0) r->ndim = 0;
  memcpy(r->dims, dims, sizeof dims);
  r->forder = a->forder;
  if (ai == 1) {
    run(L, op, r, 3, a, 1, 2, 0);
  } else { /* number op a: r (zeros) + x, then op a */
    lmpio_lua_checknumber(L, 1);
    run(L, OP_ADD, r, 3, r, 3, 1, 0);
    run(L, op, r, 3, r, 3, 2, 0);
  }
  lua_settop(L, 3);
  return 1;
}

static int m_add(lua_State *L) { return binop(L, OP_ADD); }
static int m_sub(lua_State *L) { return binop(L, OP_SUB); }
static int m_mul(lua_State *L) { return binop(L, OP_MUL); }
static int m_div(lua_State *L) { return binop(L, OP_DIV); }

int lmpio_lua_arith_open(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"add", a_add}, {"subtract", a_subtract}, {"multiply", a_multiply}, {"divide", a_divide},
    {"axpy", a_axpy}, {"copy", a_copy}, {NULL, NULL},
  };
  static const luaL_Reg meta[] = {
    {"__add", m_add}, {"__sub", m_sub}, {"__mul", m_mul}, {"__div", m_div}, {NULL, NULL},
  };
  luaL_getmetatable(L, LMPIO_LUA_BUFFER);
  luaL_setfuncs(L, meta, 0);
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
  return 0;
}
