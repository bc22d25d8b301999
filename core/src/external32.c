/* external32: conversions between native items and the standard's portable
 * representation (MPI-3.1 13.5.2, table 13.2): big-endian two's complement
 * integers, IEEE 754 binary32/64/128 floats, the table's sizes.
 *
 * The "internal" representation of lmpio is this same layout, byte for
 * byte: the standard leaves "internal" to the implementation, and choosing
 * external32 makes an "internal" file portable across machines and builds
 * (and readable under either name).  Nothing else is stored in the file.
 *
 * Types and their sizes (external32 bytes; "x2" = two parts):
 *   1: MPI_PACKED, MPI_BYTE, MPI_CHAR, MPI_UNSIGNED_CHAR, MPI_SIGNED_CHAR,
 *      MPI_CHARACTER, MPI_C_BOOL, MPI_CXX_BOOL, MPI_INT8_T, MPI_UINT8_T,
 *      MPI_INTEGER1, MPI_LOGICAL1
 *   2: MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT16_T, MPI_UINT16_T,
 *      MPI_INTEGER2, MPI_LOGICAL2
 *   4: MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_FLOAT,
 *      MPI_INTEGER, MPI_LOGICAL, MPI_REAL, MPI_INT32_T, MPI_UINT32_T,
 *      MPI_INTEGER4, MPI_REAL4, MPI_LOGICAL4
 *   8: MPI_LONG_LONG(_INT), MPI_UNSIGNED_LONG_LONG, MPI_DOUBLE,
 *      MPI_DOUBLE_PRECISION, MPI_INT64_T, MPI_UINT64_T, MPI_INTEGER8,
 *      MPI_REAL8, MPI_LOGICAL8, MPI_AINT, MPI_OFFSET, MPI_COUNT
 *  16: MPI_LONG_DOUBLE (binary128), MPI_REAL16, MPI_INTEGER16
 *  x2: MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_C_(FLOAT_|DOUBLE_|LONG_DOUBLE_)COMPLEX,
 *      MPI_CXX_*_COMPLEX, MPI_COMPLEX8/16/32; and Open MPI's named pairs
 *      MPI_2INTEGER, MPI_2REAL, MPI_2DOUBLE_PRECISION (x2), MPI_2COMPLEX,
 *      MPI_2DOUBLE_COMPLEX (x4), which its envelope reports as predefined.
 *   0: MPI_LB, MPI_UB where still defined (markers, no data).
 * Types made by MPI_Type_create_f90_{integer,real,complex} get the sizes the
 * standard gives for them from their (p, r) parameters.
 *
 * Known deviation of Open MPI 4.1 (MPI_Pack_external "external32"): it packs
 * MPI_LONG and MPI_UNSIGNED_LONG in 8 bytes on LP64 machines and
 * MPI_LONG_DOUBLE as the raw 80-bit x87 format; the standard's table (4
 * bytes, binary128) decides here, as it does in MPICH 4.0.  Fortran REAL*16
 * is taken to be binary128 natively (gfortran, ifort), so it is only
 * byte-reversed.
 *
 * Integers whose native and external widths differ are range checked on the
 * narrowing side (MPI_ERR_CONVERSION, never silent truncation) and sign or
 * zero extended on the widening side.  MPI_WCHAR is an unsigned 16-bit code
 * unit.  x87 80-bit long double widens to binary128 exactly and narrows with
 * round to nearest even (overflow to inf, subnormals, NaN payload kept). */
#include "external32.h"

#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* ---- the type table ------------------------------------------------------ */

enum {
  K_BAD,   /* known, but this build's native form cannot be converted */
  K_NONE,  /* no data (MPI_LB, MPI_UB) */
  K_SAME,  /* same width: reverse the bytes of each element on little-endian hosts */
  K_SINT,  /* signed integer of another native width */
  K_UINT,  /* unsigned integer of another native width */
  K_LDBL   /* native long double (not binary128) <-> binary128 */
};

/* What a type is made of, before native sizes are known. */
enum { C_INT, C_UINT, C_FLOAT, C_LDBL, C_MARK };

typedef struct {
  MPI_Datatype t;
  unsigned char kind;
  unsigned char nsize, esize; /* bytes of one element, native and external32 */
  unsigned char parts;        /* elements per item: 2 for complex, ... */
} ent;

#define MAX_ENTS 96
#define HASH_BITS 8
static ent ents[MAX_ENTS];
static int nents;
static unsigned char slots[1u << HASH_BITS]; /* entry index + 1; 0 is empty */
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static unsigned hash_type(MPI_Datatype t) {
  uint64_t k = (uint64_t)(uintptr_t)t;
  k ^= k >> 29;
  k *= 0x9E3779B97F4A7C15ull;
  return (unsigned)(k >> (64 - HASH_BITS));
}

/* The native format of long double is told by LDBL_MANT_DIG: 113 binary128
 * (copied), 64 x87 extended, 53 double (both converted, K_LDBL); others
 * (IBM double-double) have no external32 MPI_LONG_DOUBLE here.  Plain C
 * conditions on constants, not #if, keep every variant compiled. */

/* Fills one entry from the class and the external size of one element.
 * Types this build of MPI lacks (size 0) or whose native form we cannot
 * convert get no entry: lmpio__external32_size then reports 0. */
static ent resolve(MPI_Datatype t, int cls, int esize, int parts, int total_native) {
  ent e = {t, K_BAD, 0, 0, (unsigned char)parts};
  if (cls == C_MARK) {
    e.kind = K_NONE;
    return e;
  }
  int ns = total_native > 0 && total_native % parts == 0 ? total_native / parts : 0;
  e.nsize = (unsigned char)ns;
  if (cls == C_INT || cls == C_UINT) {
    if (ns == esize) e.kind = K_SAME;
    else if (ns == 1 || ns == 2 || ns == 4 || ns == 8) e.kind = cls == C_INT ? K_SINT : K_UINT;
    else return e;
  } else if (cls == C_LDBL && LDBL_MANT_DIG != 113) {
    if ((LDBL_MANT_DIG != 64 && LDBL_MANT_DIG != 53) || ns != (int)sizeof(long double)) return e;
    e.kind = K_LDBL;
  } else { /* IEEE float of the same width (Fortran REAL*16 is binary128 too) */
    if (ns != esize) return e;
    e.kind = K_SAME;
  }
  e.esize = (unsigned char)esize;
  return e;
}

static void add(MPI_Datatype t, int cls, int esize, int parts) {
  if (t == MPI_DATATYPE_NULL || nents == MAX_ENTS) return;
  unsigned h = hash_type(t);
  for (unsigned i = h;; i = (i + 1) & ((1u << HASH_BITS) - 1)) {
    if (slots[i] == 0) {
      int sz = 0;
      if (cls != C_MARK && MPI_Type_size(t, &sz) != MPI_SUCCESS) sz = 0;
      ents[nents] = resolve(t, cls, esize, parts, sz);
      slots[i] = (unsigned char)++nents;
      return;
    }
    if (ents[slots[i] - 1].t == t) return; /* an alias (MPI_LONG_LONG_INT ...) */
  }
}

static void build_table(void) {
  add(MPI_PACKED, C_UINT, 1, 1);
  add(MPI_BYTE, C_UINT, 1, 1);
  add(MPI_CHAR, C_UINT, 1, 1);
  add(MPI_UNSIGNED_CHAR, C_UINT, 1, 1);
  add(MPI_SIGNED_CHAR, C_INT, 1, 1);
  add(MPI_WCHAR, C_UINT, 2, 1);
  add(MPI_SHORT, C_INT, 2, 1);
  add(MPI_UNSIGNED_SHORT, C_UINT, 2, 1);
  add(MPI_INT, C_INT, 4, 1);
  add(MPI_UNSIGNED, C_UINT, 4, 1);
  add(MPI_LONG, C_INT, 4, 1);
  add(MPI_UNSIGNED_LONG, C_UINT, 4, 1);
  add(MPI_LONG_LONG_INT, C_INT, 8, 1);
  add(MPI_LONG_LONG, C_INT, 8, 1);
  add(MPI_UNSIGNED_LONG_LONG, C_UINT, 8, 1);
  add(MPI_FLOAT, C_FLOAT, 4, 1);
  add(MPI_DOUBLE, C_FLOAT, 8, 1);
  add(MPI_LONG_DOUBLE, C_LDBL, 16, 1);
  add(MPI_C_BOOL, C_UINT, 1, 1);
  add(MPI_INT8_T, C_INT, 1, 1);
  add(MPI_INT16_T, C_INT, 2, 1);
  add(MPI_INT32_T, C_INT, 4, 1);
  add(MPI_INT64_T, C_INT, 8, 1);
  add(MPI_UINT8_T, C_UINT, 1, 1);
  add(MPI_UINT16_T, C_UINT, 2, 1);
  add(MPI_UINT32_T, C_UINT, 4, 1);
  add(MPI_UINT64_T, C_UINT, 8, 1);
  add(MPI_AINT, C_INT, 8, 1);
  add(MPI_OFFSET, C_INT, 8, 1);
  add(MPI_COUNT, C_INT, 8, 1);
  /* Optional names are tested in groups that MPI libraries define together
   * (few distinct conditions keep cppcheck's configurations few). */
#if defined(MPI_C_FLOAT_COMPLEX) && defined(MPI_C_DOUBLE_COMPLEX) && defined(MPI_C_LONG_DOUBLE_COMPLEX)
  add(MPI_C_COMPLEX, C_FLOAT, 4, 2);
  add(MPI_C_FLOAT_COMPLEX, C_FLOAT, 4, 2);
  add(MPI_C_DOUBLE_COMPLEX, C_FLOAT, 8, 2);
  add(MPI_C_LONG_DOUBLE_COMPLEX, C_LDBL, 16, 2);
#endif
#if defined(MPI_CXX_BOOL) && defined(MPI_CXX_LONG_DOUBLE_COMPLEX)
  add(MPI_CXX_BOOL, C_UINT, 1, 1);
  add(MPI_CXX_FLOAT_COMPLEX, C_FLOAT, 4, 2);
  add(MPI_CXX_DOUBLE_COMPLEX, C_FLOAT, 8, 2);
  add(MPI_CXX_LONG_DOUBLE_COMPLEX, C_LDBL, 16, 2);
#endif
  /* Fortran */
  add(MPI_CHARACTER, C_UINT, 1, 1);
  add(MPI_LOGICAL, C_INT, 4, 1);
  add(MPI_INTEGER, C_INT, 4, 1);
  add(MPI_REAL, C_FLOAT, 4, 1);
  add(MPI_DOUBLE_PRECISION, C_FLOAT, 8, 1);
  add(MPI_COMPLEX, C_FLOAT, 4, 2);
  add(MPI_DOUBLE_COMPLEX, C_FLOAT, 8, 2);
  add(MPI_2INTEGER, C_INT, 4, 2);
  add(MPI_2REAL, C_FLOAT, 4, 2);
  add(MPI_2DOUBLE_PRECISION, C_FLOAT, 8, 2);
#if defined(MPI_2COMPLEX) && defined(MPI_2DOUBLE_COMPLEX)
  add(MPI_2COMPLEX, C_FLOAT, 4, 4);
  add(MPI_2DOUBLE_COMPLEX, C_FLOAT, 8, 4);
#endif
#if defined(MPI_INTEGER1) && defined(MPI_INTEGER2) && defined(MPI_INTEGER4) && defined(MPI_INTEGER8)
  add(MPI_INTEGER1, C_INT, 1, 1);
  add(MPI_INTEGER2, C_INT, 2, 1);
  add(MPI_INTEGER4, C_INT, 4, 1);
  add(MPI_INTEGER8, C_INT, 8, 1);
#endif
#ifdef MPI_INTEGER16
  add(MPI_INTEGER16, C_INT, 16, 1);
#endif
#if defined(MPI_LOGICAL1) && defined(MPI_LOGICAL2) && defined(MPI_LOGICAL4) && defined(MPI_LOGICAL8)
  add(MPI_LOGICAL1, C_INT, 1, 1);
  add(MPI_LOGICAL2, C_INT, 2, 1);
  add(MPI_LOGICAL4, C_INT, 4, 1);
  add(MPI_LOGICAL8, C_INT, 8, 1);
#endif
#if defined(MPI_REAL2) && defined(MPI_COMPLEX4)
  add(MPI_REAL2, C_FLOAT, 2, 1);
  add(MPI_COMPLEX4, C_FLOAT, 2, 2);
#endif
#if defined(MPI_REAL4) && defined(MPI_REAL8) && defined(MPI_COMPLEX8) && defined(MPI_COMPLEX16)
  add(MPI_REAL4, C_FLOAT, 4, 1);
  add(MPI_REAL8, C_FLOAT, 8, 1);
  add(MPI_COMPLEX8, C_FLOAT, 4, 2);
  add(MPI_COMPLEX16, C_FLOAT, 8, 2);
#endif
#if defined(MPI_REAL16) && defined(MPI_COMPLEX32)
  add(MPI_REAL16, C_FLOAT, 16, 1);
  add(MPI_COMPLEX32, C_FLOAT, 16, 2);
#endif
  /* MPI_LB and MPI_UB were removed in MPI-3.0; Open MPI defines them only
   * with --enable-mpi1-compatibility (otherwise the names expand to a static
   * assertion), MPICH still defines them. */
#if defined(OMPI_ENABLE_MPI1_COMPAT) ? OMPI_ENABLE_MPI1_COMPAT : defined(MPI_LB)
  add(MPI_LB, C_MARK, 0, 1);
  add(MPI_UB, C_MARK, 0, 1);
#endif
}

/* The external32 sizes the standard gives types made by
 * MPI_Type_create_f90_*: from the requested precision p and range r. */
static int f90_entry(MPI_Datatype t, ent *e) {
  int ni, na, nd, comb;
  if (MPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
  if ((comb != MPI_COMBINER_F90_INTEGER && comb != MPI_COMBINER_F90_REAL &&
       comb != MPI_COMBINER_F90_COMPLEX) || ni < 1 || ni > 2 || na != 0 || nd != 0)
    return 0;
  int ints[2] = {MPI_UNDEFINED, MPI_UNDEFINED};
  MPI_Aint addr;
  MPI_Datatype dt;
  if (MPI_Type_get_contents(t, ni, 0, 0, ints, &addr, &dt) != MPI_SUCCESS) return 0;
  int size, es, parts = comb == MPI_COMBINER_F90_COMPLEX ? 2 : 1;
  if (MPI_Type_size(t, &size) != MPI_SUCCESS) return 0;
  if (comb == MPI_COMBINER_F90_INTEGER) {
    int r = ints[0];
    if (r > 38) return 0;
    es = r > 18 ? 16 : r > 9 ? 8 : r > 4 ? 4 : r > 2 ? 2 : 1;
    *e = resolve(t, C_INT, es, 1, size);
  } else {
    int p = ints[0], r = ints[1]; /* MPI_UNDEFINED is negative: no demand */
    if (p > 33 || r > 4931) return 0;
    es = p > 15 || r > 307 ? 16 : p > 6 || r > 37 ? 8 : 4;
    *e = resolve(t, C_FLOAT, es, parts, size);
  }
  return e->esize > 0;
}

/* The entry of t in *e; 0 when t has no external32 form. */
static int find(MPI_Datatype t, ent *e) {
  if (t == MPI_DATATYPE_NULL) return 0;
  pthread_once(&table_once, build_table);
  for (unsigned i = hash_type(t); slots[i]; i = (i + 1) & ((1u << HASH_BITS) - 1))
    if (ents[slots[i] - 1].t == t) {
      *e = ents[slots[i] - 1];
      return e->esize > 0 || e->kind == K_NONE;
    }
  return f90_entry(t, e);
}

MPI_Aint lmpio__external32_size(MPI_Datatype t) {
  ent e;
  return find(t, &e) ? (MPI_Aint)e.esize * e.parts : 0;
}

/* ---- byte order ------------------------------------------------------------ */

/* Folded to a constant by the compiler. */
static int host_big(void) {
  const uint16_t one = 1;
  unsigned char low;
  memcpy(&low, &one, 1);
  return low == 0;
}
static uint16_t be16(uint16_t v) { return host_big() ? v : __builtin_bswap16(v); }
static uint32_t be32(uint32_t v) { return host_big() ? v : __builtin_bswap32(v); }
static uint64_t be64(uint64_t v) { return host_big() ? v : __builtin_bswap64(v); }

/* Same-width elements: the hot path.  Loads and stores go through memcpy
 * (items may be unaligned) and compile to plain moves; restrict lets the
 * loop vectorize without an aliasing check (clang -O2, gcc -O3).  gcc -O2 on
 * baseline x86-64 (no pshufb) keeps scalar bswap, which measured within 10%
 * of the vector loop: the loop is bound by memory either way. */
#define SWAP_LOOP(W, TYPE, SWAP)                                                        \
  static void swap##W(const unsigned char *restrict s, unsigned char *restrict d, size_t n) { \
    for (size_t i = 0; i < n; i++) {                                                    \
      TYPE v;                                                                           \
      memcpy(&v, s + i * W, W);                                                         \
      v = SWAP(v);                                                                      \
      memcpy(d + i * W, &v, W);                                                         \
    }                                                                                   \
  }
SWAP_LOOP(2, uint16_t, be16)
SWAP_LOOP(4, uint32_t, be32)
SWAP_LOOP(8, uint64_t, be64)

/* Reverses the bytes of n elements of w bytes (copies on big-endian hosts).
 * The same operation encodes and decodes. */
static void swap_n(const unsigned char *s, unsigned char *d, size_t n, unsigned w) {
  if (host_big() || w == 1) {
    memmove(d, s, n * w);
    return;
  }
  switch (w) {
  case 2: swap2(s, d, n); break;
  case 4: swap4(s, d, n); break;
  case 8: swap8(s, d, n); break;
  default:
    for (size_t i = 0; i < n; i++, s += w, d += w)
      for (unsigned j = 0; j < w; j++) d[j] = s[w - 1 - j];
  }
}

/* ---- integers of different widths ------------------------------------------ */

/* A native integer of w bytes as a 64-bit value (sign or zero extended). */
static uint64_t load_native(const unsigned char *p, unsigned w, int sgn) {
  switch (w) {
  case 1: { uint8_t v = *p; return sgn ? (uint64_t)(int64_t)(int8_t)v : v; }
  case 2: { uint16_t v; memcpy(&v, p, 2); return sgn ? (uint64_t)(int64_t)(int16_t)v : v; }
  case 4: { uint32_t v; memcpy(&v, p, 4); return sgn ? (uint64_t)(int64_t)(int32_t)v : v; }
  default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

static void store_native(unsigned char *p, unsigned w, uint64_t v) {
  switch (w) {
  case 1: *p = (uint8_t)v; break;
  case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
  default: memcpy(p, &v, 8);
  }
}

/* Big-endian, w bytes (1..8; wider external integers are sign or zero
 * extended beyond 8 bytes). */
static uint64_t load_be(const unsigned char *p, unsigned w, int sgn, int *fits) {
  *fits = 1;
  unsigned skip = w > 8 ? w - 8 : 0; /* high bytes beyond 64 bits must be an extension */
  uint64_t v = 0;
  for (unsigned i = skip; i < w; i++) v = v << 8 | p[i];
  if (skip) {
    unsigned char ext = sgn && (v >> 63) ? 0xFF : 0;
    for (unsigned i = 0; i < skip; i++)
      if (p[i] != ext) *fits = 0;
  } else if (sgn && w < 8 && (v >> (8 * w - 1)) & 1) {
    v |= ~(uint64_t)0 << (8 * w); /* sign extend */
  }
  return v;
}

static void store_be(unsigned char *p, unsigned w, uint64_t v, int sgn) {
  unsigned char ext = sgn && (v >> 63) ? 0xFF : 0;
  for (unsigned i = w; i-- > 0; v >>= 8)
    p[i] = w - 1 - i < 8 ? (unsigned char)v : ext;
}

/* Does v (as a signed or unsigned 64-bit value) fit w bytes? */
static int fits_width(uint64_t v, unsigned w, int sgn) {
  if (w >= 8) return 1;
  unsigned bits = 8 * w;
  if (!sgn) return v >> bits == 0;
  int64_t s = (int64_t)v, lim = (int64_t)1 << (bits - 1);
  return s >= -lim && s < lim;
}

/* ---- long double <-> binary128 -------------------------------------------- */

/* binary128 as sign, 15-bit biased exponent, 112-bit fraction (hi: top 48). */
typedef struct {
  int sign;
  unsigned exp;
  uint64_t hi, lo;
} q128;

static void put_q(unsigned char *d, q128 q) {
  uint64_t hi = (uint64_t)(q.sign ? 1 : 0) << 63 | (uint64_t)q.exp << 48 | (q.hi & 0xFFFFFFFFFFFFull);
  for (int i = 0; i < 8; i++) {
    d[i] = (unsigned char)(hi >> (56 - 8 * i));
    d[8 + i] = (unsigned char)(q.lo >> (56 - 8 * i));
  }
}

static q128 get_q(const unsigned char *s) {
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; i++) {
    hi = hi << 8 | s[i];
    lo = lo << 8 | s[8 + i];
  }
  q128 q = {(int)(hi >> 63), (unsigned)(hi >> 48) & 0x7FFF, hi & 0xFFFFFFFFFFFFull, lo};
  return q;
}

static int msb64(uint64_t v) { return 63 - __builtin_clzll(v); }

/* A finite nonzero value m * 2^e with m < 2^64 (exactly) as binary128:
 * every such value of x87 or double is representable. */
static q128 q_from_scaled(int sign, uint64_t m, int e) {
  q128 q = {sign, 0, 0, 0};
  int k = msb64(m);
  int ex = e + k; /* exponent of the leading bit */
  int shift;      /* fraction bits = m << shift, the leading bit dropped when normal */
  if (ex >= -16382) {
    q.exp = (unsigned)(ex + 16383);
    m &= k == 63 ? ~(uint64_t)0 >> 1 : ((uint64_t)1 << k) - 1;
    shift = 112 - k;
  } else {
    shift = e + 16494; /* subnormal: units of 2^-16494 */
  }
  if (shift >= 64) {
    q.hi = m << (shift - 64);
  } else if (shift > 0) {
    q.hi = m >> (64 - shift);
    q.lo = m << shift;
  } else {
    q.lo = m;
  }
  return q;
}

/* (hi:lo) >> k, the low 64 bits. */
static uint64_t shr128(uint64_t hi, uint64_t lo, unsigned k) {
  if (k >= 128) return 0;
  if (k >= 64) return hi >> (k - 64);
  return k ? hi << (64 - k) | lo >> k : lo;
}

/* Is any of the bits of (hi:lo) below bit k set? */
static int any_below(uint64_t hi, uint64_t lo, unsigned k) {
  if (k >= 128) return (hi | lo) != 0;
  if (k >= 64) return lo != 0 || (hi & (((uint64_t)1 << (k - 64)) - 1)) != 0;
  return (lo & (((uint64_t)1 << k) - 1)) != 0;
}

/* Rounds a finite nonzero binary128 to a significand of p bits (p <= 64)
 * with minimum normal exponent emin, round to nearest even.  Returns the
 * significand *m (with its leading bit; < 2^(p-1) when subnormal or 0) and
 * the exponent *e of its leading bit position p-1; overflow is the caller's
 * test (*e > emax). */
static void q_round(q128 q, int p, int emin, uint64_t *m, int *e) {
  /* value = sig * 2^sq, sig < 2^113 in (shi, slo) */
  uint64_t shi = q.hi, slo = q.lo;
  int sq;
  if (q.exp == 0) {
    sq = -16494;
  } else {
    shi |= (uint64_t)1 << 48;
    sq = (int)q.exp - 16383 - 112;
  }
  int bits = shi ? 64 + msb64(shi) + 1 : msb64(slo) + 1;
  int lead = sq + bits - 1;
  int tq = (lead < emin ? emin : lead) - (p - 1); /* exponent of the result's units */
  int shift = tq - sq; /* >= 49 for p <= 64 */
  uint64_t r = shr128(shi, slo, (unsigned)shift);
  uint64_t guard = shr128(shi, slo, (unsigned)shift - 1) & 1;
  int sticky = any_below(shi, slo, (unsigned)shift - 1);
  if (guard && (sticky || (r & 1))) {
    r++;
    if (p < 64 ? r >> p != 0 : r == 0) { /* carried into a new leading bit */
      r = (uint64_t)1 << (p - 1);
      tq++;
    }
  }
  *m = r;
  *e = tq + p - 1;
}

/* x87 extended: 64-bit significand with an explicit leading bit, then
 * sign and 15-bit exponent (same bias as binary128), little-endian. */
static void x87_encode(const unsigned char *s, unsigned char *d) {
  uint64_t m;
  uint16_t se;
  memcpy(&m, s, 8);
  memcpy(&se, s + 8, 2);
  int sign = se >> 15;
  unsigned ex = se & 0x7FFF;
  q128 q = {sign, 0, 0, 0};
  if (ex == 0x7FFF) {
    q.exp = 0x7FFF;
    uint64_t frac = m & (~(uint64_t)0 >> 1);
    if (!(m >> 63) && !frac) frac = (uint64_t)1 << 62; /* pseudo-infinity: invalid, NaN */
    else if (!(m >> 63)) frac |= (uint64_t)1 << 62;
    q.hi = frac >> 15; /* quiet bit 62 lands on bit 111 */
    q.lo = frac << 49;
  } else if (ex != 0 && !(m >> 63)) { /* unnormal: the FPU rejects it, so do we */
    q.exp = 0x7FFF;
    q.hi = (uint64_t)1 << 47;
  } else if (m != 0) {
    q = q_from_scaled(sign, m, (ex ? (int)ex : 1) - 16383 - 63);
  }
  put_q(d, q);
}

static void x87_decode(const unsigned char *s, unsigned char *d, unsigned nsize) {
  q128 q = get_q(s);
  uint64_t m = 0;
  unsigned ex = 0;
  if (q.exp == 0x7FFF) {
    ex = 0x7FFF;
    m = (uint64_t)1 << 63;
    if (q.hi | q.lo) { /* NaN: keep the top of the payload, stay a NaN */
      m |= q.hi << 15 | q.lo >> 49;
      if (!(m & (~(uint64_t)0 >> 1))) m |= (uint64_t)1 << 62;
    }
  } else if (q.exp | q.hi | q.lo) {
    int e;
    q_round(q, 64, -16382, &m, &e);
    if (e > 16383) { /* overflow */
      ex = 0x7FFF;
      m = (uint64_t)1 << 63;
    } else {
      ex = m >> 63 ? (unsigned)(e + 16383) : 0;
    }
  }
  uint16_t se = (uint16_t)((q.sign ? 0x8000 : 0) | ex);
  memcpy(d, &m, 8);
  memcpy(d + 8, &se, 2);
  if (nsize > 10) memset(d + 10, 0, nsize - 10); /* padding */
}
/* long double that is IEEE double. */
static void dbl_encode(const unsigned char *s, unsigned char *d) {
  uint64_t b;
  memcpy(&b, s, 8);
  int sign = (int)(b >> 63);
  unsigned ex = (unsigned)(b >> 52) & 0x7FF;
  uint64_t f = b & 0xFFFFFFFFFFFFFull;
  q128 q = {sign, 0, 0, 0};
  if (ex == 0x7FF) {
    q.exp = 0x7FFF;
    q.hi = f >> 4;
    q.lo = f << 60;
  } else if (ex != 0 || f != 0) {
    q = q_from_scaled(sign, ex ? f | (uint64_t)1 << 52 : f, (ex ? (int)ex : 1) - 1023 - 52);
  }
  put_q(d, q);
}

static void dbl_decode(const unsigned char *s, unsigned char *d) {
  q128 q = get_q(s);
  uint64_t b = (uint64_t)(q.sign ? 1 : 0) << 63;
  if (q.exp == 0x7FFF) {
    uint64_t f = q.hi << 4 | q.lo >> 60;
    if ((q.hi | q.lo) && !f) f = (uint64_t)1 << 51;
    b |= (uint64_t)0x7FF << 52 | f;
  } else if (q.exp | q.hi | q.lo) {
    uint64_t m;
    int e;
    q_round(q, 53, -1022, &m, &e);
    if (e > 1023) b |= (uint64_t)0x7FF << 52;
    else if (m >> 52) b |= (uint64_t)(e + 1023) << 52 | (m & 0xFFFFFFFFFFFFFull);
    else b |= m;
  }
  memcpy(d, &b, 8);
}

/* ---- the conversions -------------------------------------------------------- */

int lmpio__external32_encode(MPI_Datatype t, const void *src, void *dst, MPI_Count n,
                             MPI_Count *bad) {
  ent e;
  *bad = 0;
  if (!find(t, &e)) return MPI_ERR_TYPE;
  const unsigned char *s = src;
  unsigned char *d = dst;
  size_t elems = (size_t)n * e.parts;
  switch (e.kind) {
  case K_SAME:
    swap_n(s, d, elems, e.esize);
    break;
  case K_SINT:
  case K_UINT: {
    int sgn = e.kind == K_SINT;
    for (size_t i = 0; i < elems; i++, s += e.nsize, d += e.esize) {
      uint64_t v = load_native(s, e.nsize, sgn);
      if (!fits_width(v, e.esize, sgn)) {
        *bad = (MPI_Count)(i / e.parts);
        return MPI_ERR_CONVERSION;
      }
      store_be(d, e.esize, v, sgn);
    }
    break;
  }
  case K_LDBL:
    for (size_t i = 0; i < elems; i++, s += e.nsize, d += e.esize) {
      if (LDBL_MANT_DIG == 64) x87_encode(s, d);
      else dbl_encode(s, d);
    }
    break;
  default:
    break;
  }
  return MPI_SUCCESS;
}

int lmpio__external32_decode(MPI_Datatype t, const void *src, void *dst, MPI_Count n,
                             MPI_Count *bad) {
  ent e;
  *bad = 0;
  if (!find(t, &e)) return MPI_ERR_TYPE;
  const unsigned char *s = src;
  unsigned char *d = dst;
  size_t elems = (size_t)n * e.parts;
  switch (e.kind) {
  case K_SAME:
    swap_n(s, d, elems, e.esize);
    break;
  case K_SINT:
  case K_UINT: {
    int sgn = e.kind == K_SINT;
    for (size_t i = 0; i < elems; i++, s += e.esize, d += e.nsize) {
      int fits;
      uint64_t v = load_be(s, e.esize, sgn, &fits);
      if (!fits || !fits_width(v, e.nsize, sgn)) {
        *bad = (MPI_Count)(i / e.parts);
        return MPI_ERR_CONVERSION;
      }
      store_native(d, e.nsize, v);
    }
    break;
  }
  case K_LDBL:
    for (size_t i = 0; i < elems; i++, s += e.esize, d += e.nsize) {
      if (LDBL_MANT_DIG == 64) x87_decode(s, d, e.nsize);
      else dbl_decode(s, d);
    }
    break;
  default:
    break;
  }
  return MPI_SUCCESS;
}
