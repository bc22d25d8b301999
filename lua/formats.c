/* The formats form of user-defined representations, compiled to C: each
 * predefined type stored as one number in a string.pack format (an integer
 * of 1 to 16 bytes or an IEEE float of 4 or 8, big-, little- or
 * native-endian), compiled at registration into a copy, a byte reversal, or
 * a checked integer or float conversion, and run over a call's items by
 * the core's item walker.  Plain C over MPI and the public header: no Lua
 * (lua/datarep.c registers and calls it). */
#include "formats.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef lmpio_lua_fmt fmt;


/* Reverses the bytes of n items of size bytes from s into d (d may be s). */
void lmpio_lua_fmt_swap(unsigned char *d, const unsigned char *s, size_t n, size_t size) {
  switch (size) {
  case 1:
    if (d != s) memmove(d, s, n);
    return;
  case 2:
    for (size_t i = 0; i < n; i++) {
      uint16_t v;
      memcpy(&v, s + 2 * i, 2);
      v = __builtin_bswap16(v);
      memcpy(d + 2 * i, &v, 2);
    }
    return;
  case 4:
    for (size_t i = 0; i < n; i++) {
      uint32_t v;
      memcpy(&v, s + 4 * i, 4);
      v = __builtin_bswap32(v);
      memcpy(d + 4 * i, &v, 4);
    }
    return;
  case 8:
    for (size_t i = 0; i < n; i++) {
      uint64_t v;
      memcpy(&v, s + 8 * i, 8);
      v = __builtin_bswap64(v);
      memcpy(d + 8 * i, &v, 8);
    }
    return;
  default:
    for (size_t i = 0; i < n; i++) {
      unsigned char *di = d + size * i;
      const unsigned char *si = s + size * i;
      for (size_t a = 0, b = size - 1; a <= b && b != (size_t)-1; a++, b--) {
        unsigned char x = si[a], y = si[b];
        di[a] = y;
        di[b] = x;
      }
    }
  }
}

/* A format of the formats form is one number in a fixed layout: a signed or
 * unsigned integer of 1 to 16 bytes or an IEEE float of 4 or 8 bytes, big-,
 * little- or native-endian.  Each is compiled at registration into one of
 * four loops over a run of items: a copy, a byte reversal, or an integer or
 * float conversion that changes the width (checked: a value that does not fit
 * the other side fails with MPI_ERR_CONVERSION, as external32 does).  The
 * converters and the extent function of the form are plain C: no Lua runs
 * during a data access, and the representation keeps working once the
 * registering Lua state is closed. */
static int host_big(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 0;
}

/* Parses a string.pack format holding one number.  Returns NULL and sets
 * kind, size and big, or the reason it is not such a format. */
static const char *parse_format(const char *s, unsigned char *kind, unsigned char *size, unsigned char *big) {
  int letter = 0, be = host_big();
  while (*s) {
    int c = (unsigned char)*s++;
    switch (c) {
    case ' ': continue;
    case '<': be = 0; continue;
    case '>': be = 1; continue;
    case '=': be = host_big(); continue;
    case '!':
      while (*s >= '0' && *s <= '9') s++;
      continue; /* alignment: no effect on one value at offset 0 */
    }
    if (letter) return "more than one value (one number per format)";
    int k, n = 0;
    switch (c) {
    case 'b': k = N_SINT, n = 1; break;
    case 'B': k = N_UINT, n = 1; break;
    case 'h': k = N_SINT, n = (int)sizeof(short); break;
    case 'H': k = N_UINT, n = (int)sizeof(short); break;
    case 'l': k = N_SINT, n = (int)sizeof(long); break;
    case 'L': k = N_UINT, n = (int)sizeof(long); break;
    case 'j': k = N_SINT, n = (int)sizeof(long long); break; /* lua_Integer's size in a default Lua 5.4 (registration checks string.packsize agrees) */
    case 'J': k = N_UINT, n = (int)sizeof(long long); break; /* lua_Integer's size in a default Lua 5.4 (registration checks string.packsize agrees) */
    case 'T': k = N_UINT, n = (int)sizeof(size_t); break;
    case 'f': k = N_FLOAT, n = (int)sizeof(float); break;
    case 'd': k = N_FLOAT, n = (int)sizeof(double); break;
    case 'n': k = N_FLOAT, n = (int)sizeof(double); break; /* lua_Number's, likewise */
    case 'i':
    case 'I':
      k = c == 'i' ? N_SINT : N_UINT;
      if (*s >= '0' && *s <= '9') {
        while (*s >= '0' && *s <= '9' && n <= 16) n = n * 10 + (*s++ - '0');
        if (n < 1 || n > 16) return "integer size out of 1..16";
      } else {
        n = (int)sizeof(int);
      }
      break;
    default:
      return "only one number (b B h H i[n] I[n] l L j J T f d n, with < > = !) compiles; "
             "other layouts need encode/decode";
    }
    if (k == N_FLOAT && n != 4 && n != 8) return "floats are 4 or 8 bytes";
    letter = 1;
    *kind = (unsigned char)k;
    *size = (unsigned char)n;
  }
  if (!letter) return "no number in the format";
  *big = (unsigned char)be;
  return NULL;
}

/* Compiles format text for type t into f; returns NULL or the reason it
 * cannot be compiled. */
const char *lmpio_lua_fmt_compile(fmt *f, MPI_Datatype t, int kind, const char *key, const char *text) {
  memset(f, 0, sizeof *f);
  f->t = t;
  snprintf(f->key, sizeof f->key, "%s", key);
  snprintf(f->text, sizeof f->text, "%s", text);
  int size = 0;
  if (MPI_Type_size(t, &size) != MPI_SUCCESS) return "not a usable type";
  if (kind < N_SINT || kind > N_FLOAT)
    return "the type is not one integer or float (complex and pair types need encode/decode)";
  f->nkind = (unsigned char)kind;
  if (f->nkind != N_FLOAT && size != 1 && size != 2 && size != 4 && size != 8)
    return "integers of this native size are not supported";
  if (f->nkind == N_FLOAT && size != sizeof(float) && size != sizeof(double) && size != sizeof(long double))
    return "floats of this native size are not supported";
  f->nsize = (unsigned char)size;
  const char *why = parse_format(text, &f->fkind, &f->fsize, &f->fbig);
  if (why) return why;
  if ((f->nkind == N_FLOAT) != (f->fkind == N_FLOAT))
    return f->nkind == N_FLOAT ? "a float type needs a float format (f, d or n)"
                               : "an integer type needs an integer format (b B h H i I l L j J T)";
  int same = f->nsize == f->fsize && (f->nkind == f->fkind || f->nkind == N_FLOAT);
  if (same && (f->nsize == 1 || f->fbig == host_big())) f->op = OP_COPY;
  else if (same) f->op = OP_SWAP;
  else f->op = f->nkind == N_FLOAT ? OP_FLOAT : OP_INT;
  return NULL;
}

/* An integer on its way: value = neg ? (int64_t)bits : bits. */
typedef struct {
  uint64_t bits;
  int neg;
} ival;

static void ival_text(ival v, char *out, size_t n) {
  if (v.neg) snprintf(out, n, "%lld", (long long)(int64_t)v.bits);
  else snprintf(out, n, "%llu", (unsigned long long)v.bits);
}

/* Whether v fits an integer of kind k and size bytes. */
static int ival_fits(ival v, int k, int size) {
  if (k == N_SINT) {
    if (size > 8) return 1;
    if (size == 8) return v.neg || v.bits <= (uint64_t)INT64_MAX;
    int64_t lim = (int64_t)1 << (8 * size - 1);
    return v.neg ? (int64_t)v.bits >= -lim : v.bits < (uint64_t)lim;
  }
  if (v.neg) return 0;
  return size >= 8 || v.bits < (uint64_t)1 << (8 * size);
}

/* The integer of kind k in size (1..16) little-endian bytes le; 0 when it
 * does not fit 64 bits. */
static int ival_from_le(const unsigned char *le, int k, int size, ival *v) {
  int low = size < 8 ? size : 8;
  uint64_t bits = 0;
  for (int b = 0; b < low; b++) bits |= (uint64_t)le[b] << (8 * b);
  int neg = k == N_SINT && (le[size - 1] & 0x80);
  if (size < 8 && neg) bits |= ~(uint64_t)0 << (8 * size);
  for (int b = 8; b < size; b++)
    if (le[b] != (neg ? 0xff : 0)) return 0;
  if (neg && !(bits >> 63)) return 0; /* below INT64_MIN */
  v->bits = bits;
  v->neg = neg;
  return 1;
}

static void ival_to_le(ival v, unsigned char *le, int size) {
  for (int b = 0; b < size; b++) le[b] = b < 8 ? (unsigned char)(v.bits >> (8 * b)) : (v.neg ? 0xff : 0);
}

/* Native bytes <-> little-endian order (a copy or a reversal). */
static void to_le(unsigned char *le, const unsigned char *p, int size, int big) {
  for (int b = 0; b < size; b++) le[b] = p[big ? size - 1 - b : b];
}

/* The integer of kind k in size bytes at p, reversed when swap (the host's
 * order otherwise); 0 when it does not fit 64 bits. */
static inline int load_int(const unsigned char *p, int size, int k, int swap, ival *v) {
  uint64_t bits;
  switch (size) {
  case 1: bits = p[0]; break;
  case 2: { uint16_t x; memcpy(&x, p, 2); bits = swap ? __builtin_bswap16(x) : x; break; }
  case 4: { uint32_t x; memcpy(&x, p, 4); bits = swap ? __builtin_bswap32(x) : x; break; }
  case 8: { uint64_t x; memcpy(&x, p, 8); bits = swap ? __builtin_bswap64(x) : x; break; }
  default: {
    unsigned char le[16];
    to_le(le, p, size, host_big() != swap);
    return ival_from_le(le, k, size, v);
  }
  }
  int neg = k == N_SINT && (bits >> (8 * size - 1)) & 1;
  if (neg && size < 8) bits |= ~(uint64_t)0 << (8 * size);
  v->bits = bits;
  v->neg = neg;
  return 1;
}

/* Stores v (which fits) in size bytes at p, reversed when swap. */
static inline void store_int(unsigned char *p, int size, int swap, ival v) {
  switch (size) {
  case 1: p[0] = (unsigned char)v.bits; return;
  case 2: { uint16_t x = (uint16_t)v.bits; if (swap) x = __builtin_bswap16(x); memcpy(p, &x, 2); return; }
  case 4: { uint32_t x = (uint32_t)v.bits; if (swap) x = __builtin_bswap32(x); memcpy(p, &x, 4); return; }
  case 8: { uint64_t x = v.bits; if (swap) x = __builtin_bswap64(x); memcpy(p, &x, 8); return; }
  default: {
    unsigned char le[16];
    ival_to_le(v, le, size);
    to_le(p, le, size, host_big() != swap);
  }
  }
}

/* Integers whose width or signedness differ: checked on the way. */
static MPI_Count convert_ints(const fmt *f, int dir, unsigned char *user, unsigned char *file, MPI_Count n,
                              char *why, size_t whylen) {
  const int swap = f->fbig != host_big();
  const int ns = f->nsize, fs = f->fsize, nk = f->nkind, fk = f->fkind;
  ival v = {0, 0};
  char t[32];
  if (dir == DIR_WRITE) {
    for (MPI_Count i = 0; i < n; i++) {
      load_int(user + i * ns, ns, nk, 0, &v); /* native widths fit 64 bits */
      if (!ival_fits(v, fk, fs)) {
        ival_text(v, t, sizeof t);
        snprintf(why, whylen, "the value %s does not fit", t);
        return i;
      }
      store_int(file + i * fs, fs, swap, v);
    }
  } else {
    for (MPI_Count i = 0; i < n; i++) {
      if (!load_int(file + i * fs, fs, fk, swap, &v)) {
        snprintf(why, whylen, "the file's value does not fit 64 bits");
        return i;
      }
      if (!ival_fits(v, nk, ns)) {
        ival_text(v, t, sizeof t);
        snprintf(why, whylen, "the file's value %s does not fit the native type", t);
        return i;
      }
      store_int(user + i * ns, ns, 0, v);
    }
  }
  return n;
}

/* double <-> float in the file, the common width change, on its own loop. */
static MPI_Count convert_double_float(const fmt *f, int dir, unsigned char *user, unsigned char *file, MPI_Count n,
                                      char *why, size_t whylen) {
  const int swap = f->fbig != host_big();
  for (MPI_Count i = 0; i < n; i++) {
    double d;
    float x;
    uint32_t bits;
    if (dir == DIR_WRITE) {
      memcpy(&d, user + 8 * i, 8);
      x = (float)d;
      if (__builtin_isinf(x) && !__builtin_isinf(d)) {
        snprintf(why, whylen, "the value %g does not fit", d);
        return i;
      }
      memcpy(&bits, &x, 4);
      if (swap) bits = __builtin_bswap32(bits);
      memcpy(file + 4 * i, &bits, 4);
    } else {
      memcpy(&bits, file + 4 * i, 4);
      if (swap) bits = __builtin_bswap32(bits);
      memcpy(&x, &bits, 4);
      d = x;
      memcpy(user + 8 * i, &d, 8);
    }
  }
  return n;
}

/* Floats of other widths (float <-> double in the file, long double),
 * through long double; narrowing that overflows to infinity fails. */
static MPI_Count convert_floats(const fmt *f, int dir, unsigned char *user, unsigned char *file, MPI_Count n,
                                char *why, size_t whylen) {
  if (f->nsize == sizeof(double) && f->fsize == sizeof(float))
    return convert_double_float(f, dir, user, file, n, why, whylen);
  const int swap = f->fbig != host_big();
  const int ssize = dir == DIR_WRITE ? f->nsize : f->fsize, dsize = dir == DIR_WRITE ? f->fsize : f->nsize;
  for (MPI_Count i = 0; i < n; i++) {
    unsigned char *src = dir == DIR_WRITE ? user + i * f->nsize : file + i * f->fsize;
    unsigned char *dst = dir == DIR_WRITE ? file + i * f->fsize : user + i * f->nsize;
    unsigned char tmp[sizeof(long double)];
    long double x;
    if (dir == DIR_READ && swap) {
      lmpio_lua_fmt_swap(tmp, src, 1, (size_t)ssize);
      src = tmp;
    }
    if (ssize == sizeof(float)) {
      float v;
      memcpy(&v, src, sizeof v);
      x = v;
    } else if (ssize == sizeof(double)) {
      double v;
      memcpy(&v, src, sizeof v);
      x = v;
    } else {
      memcpy(&x, src, sizeof x);
    }
    int inf = 0;
    if (dsize == sizeof(float)) {
      float v = (float)x;
      inf = __builtin_isinf(v);
      memcpy(tmp, &v, sizeof v);
    } else if (dsize == sizeof(double)) {
      double v = (double)x;
      inf = __builtin_isinf(v);
      memcpy(tmp, &v, sizeof v);
    } else {
      memcpy(tmp, &x, sizeof x);
    }
    if (inf && !__builtin_isinf(x)) {
      snprintf(why, whylen, "%sthe value %Lg does not fit", dir == DIR_READ ? "the file's value: " : "", x);
      return i;
    }
    if (dir == DIR_WRITE && swap) lmpio_lua_fmt_swap(dst, tmp, 1, (size_t)dsize);
    else memcpy(dst, tmp, (size_t)dsize);
  }
  return n;
}

/* Converts n back-to-back items between memory (user) and the file (file)
 * with format f.  Returns n, or the index of the first item that does not
 * fit, with its value in why. */
static MPI_Count convert_run(const fmt *f, int dir, unsigned char *user, unsigned char *file, MPI_Count n,
                             char *why, size_t whylen) {
  switch (f->op) {
  case OP_COPY:
    if (dir == DIR_WRITE) memcpy(file, user, (size_t)n * f->nsize);
    else memcpy(user, file, (size_t)n * f->nsize);
    return n;
  case OP_SWAP:
    if (dir == DIR_WRITE) lmpio_lua_fmt_swap(file, user, (size_t)n, f->nsize);
    else lmpio_lua_fmt_swap(user, file, (size_t)n, f->nsize);
    return n;
  case OP_INT: return convert_ints(f, dir, user, file, n, why, whylen);
  default: return convert_floats(f, dir, user, file, n, why, whylen);
  }
}

static const fmt *find_fmt(const fmt *fmts, int n, MPI_Datatype t) {
  for (int i = 0; i < n; i++)
    if (fmts[i].t == t) return &fmts[i];
  return NULL;
}

/* "no format for type DOUBLE" into why. */
static void no_format(MPI_Datatype t, char *why, size_t whylen) {
  char name[MPI_MAX_OBJECT_NAME] = "";
  int len = 0;
  if (MPI_Type_get_name(t, name, &len) != MPI_SUCCESS || !len) snprintf(name, sizeof name, "(unnamed)");
  snprintf(why, whylen, "no format for type %s", strncmp(name, "MPI_", 4) ? name : name + 4);
}

int lmpio_lua_fmt_extent(const fmt *fmts, int n, MPI_Datatype t, MPI_Aint *file_extent, char *why, size_t whylen) {
  const fmt *f = find_fmt(fmts, n, t);
  if (!f) {
    no_format(t, why, whylen);
    return MPI_ERR_CONVERSION;
  }
  *file_extent = f->fsize;
  return MPI_SUCCESS;
}

int lmpio_lua_fmt_convert(const fmt *fmts, int nfmts, int dir, void *userbuf, MPI_Datatype dt, MPI_Count count,
                          void *filebuf, MPI_Offset position, char *msg, size_t msglen) {
  unsigned char *user = userbuf, *file = filebuf;
  char why[128];
  const fmt *f = find_fmt(fmts, nfmts, dt);
  if (f) { /* a predefined type: its items tile the buffer */
    MPI_Count done = convert_run(f, dir, user + position * f->nsize, file, count, why, sizeof why);
    if (done == count) return MPI_SUCCESS;
    snprintf(msg, msglen, "item %lld (%s, format '%s'): %s", (long long)(position + done), f->key, f->text, why);
    return MPI_ERR_CONVERSION;
  }
  lmpio_items one = NULL, items = NULL;
  if (lmpio_items_open(dt, 1, &one) != MPI_SUCCESS) {
    snprintf(msg, msglen, "%s", lmpio_last_error_message());
    return MPI_ERR_CONVERSION;
  }
  MPI_Count per = lmpio_items_skip(one, (MPI_Count)1 << 62);
  lmpio_items_close(one);
  if (per <= 0) {
    snprintf(msg, msglen, "the datatype has no data");
    return MPI_ERR_CONVERSION;
  }
  if (lmpio_items_open(dt, (position + count + per - 1) / per, &items) != MPI_SUCCESS) {
    snprintf(msg, msglen, "%s", lmpio_last_error_message());
    return MPI_ERR_CONVERSION;
  }
  int rc = MPI_SUCCESS;
  if (lmpio_items_skip(items, position) != position) {
    snprintf(msg, msglen, "the datatype has too few items");
    rc = MPI_ERR_CONVERSION;
  }
  MPI_Count left = count, item = position;
  while (rc == MPI_SUCCESS && left > 0) {
    MPI_Aint off;
    MPI_Datatype b;
    MPI_Count n = lmpio_items_next(items, left, &off, &b, NULL);
    if (n <= 0) {
      snprintf(msg, msglen, "the datatype has too few items");
      rc = MPI_ERR_CONVERSION;
      break;
    }
    if (!(f = find_fmt(fmts, nfmts, b))) {
      no_format(b, msg, msglen);
      rc = MPI_ERR_CONVERSION;
      break;
    }
    MPI_Count done = convert_run(f, dir, user + off, file, n, why, sizeof why);
    if (done != n) {
      snprintf(msg, msglen, "item %lld (%s, format '%s'): %s", (long long)(item + done), f->key, f->text, why);
      rc = MPI_ERR_CONVERSION;
      break;
    }
    file += n * f->fsize;
    item += n;
    left -= n;
  }
  lmpio_items_close(items);
  return rc;
}
