/* The collective data access calls (*_all): two-phase collective buffering,
 * in the steps of ROMIO's ad_write_coll / ad_read_coll:
 *
 *  1. my_range:      the file bytes [start, end) my access touches; one
 *                    allgather shares every rank's range, its argument check
 *                    (so no rank writes when another passed bad arguments)
 *                    and rank 0's hints.
 *  2. choose:        two-phase or the independent path.  Hint romio_cb_read /
 *                    romio_cb_write: enable, disable, automatic (two-phase
 *                    only when the ranges of the ranks interleave and some
 *                    rank's access is not one contiguous run of the file).
 *                    Non-native representations and atomic mode always take
 *                    the independent path.
 *  3. file_domains:  the union of the ranges split into one domain per
 *                    aggregator (hint cb_nodes, at most MAX_AGGREGATORS),
 *                    aligned to ALIGN bytes when the domains are that large;
 *                    each domain is done in rounds of windows of at most
 *                    cb_buffer_size bytes.
 *  4. my_pieces:     for each window, the (offset, length) pieces of my
 *                    access in it, as strided vectors (a strided view gives
 *                    one vector per window), and the contiguous range of my
 *                    data stream they hold.  Counts go by MPI_Alltoall, the
 *                    vectors and the data by MPI_Alltoallv; contiguous user
 *                    memory is sent from and received into directly.
 *  5. agg_write / agg_read: an aggregator writes its window with one pwrite
 *                    (reading it first, under a byte-range lock, when the
 *                    pieces leave holes), or reads the covered extent once
 *                    and sends every rank its pieces.
 *  6. finish:        one allreduce agrees on errors (then lmpio__agree gives
 *                    every rank the same class and message).  A read's count
 *                    is the rank's data before end of file (fstat before the
 *                    rounds); memory for data past it is left alone, as the
 *                    independent path does.
 * A rank that fails during the rounds says so in the next round's counts,
 * and every rank stops there (an allocation failure is agreed on in the
 * same round, before the exchange that would need the buffer). */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_AGGREGATORS 64
#define ALIGN 4096
#define MAX_CB_TOTAL (1 << 30) /* aggregators x cb_buffer_size, so int counts fit */

/* Pieces of one rank in one window: count blocks of len bytes, stride apart. */
typedef struct { MPI_Offset off, len, stride, count; } vec;

typedef struct {
  lmpio_file fh;
  int dir;
  const char *call;
  char *buf;
  const lmpio__tm_node *m;
  int memcontig;           /* data is one run at buf + m->data_lb */
  int direct;              /* ... and small enough for int displacements */
  lmpio__cursor mc;
  MPI_Offset pos;          /* first data byte of the view */
  MPI_Count total;         /* data bytes of my access */
  MPI_Offset start, end;   /* file bytes it touches */
  /* domains */
  int naggr, me;           /* me: my aggregator index or -1 */
  int *agg;                /* rank of aggregator k */
  MPI_Offset gmin, gmax, base, fd, cb;
  int rounds;
  /* buffers, grown as needed */
  vec *sv, *rv;
  size_t sv_cap, rv_cap;
  char *sd, *rd, *win;
  size_t sd_cap, rd_cap, win_cap;
  uint64_t *bits;
  size_t bits_cap;
  int *scnt, *rcnt;        /* [pieces, bytes] per rank, sent and received */
  int *sdsp, *rdsp, *cnt2; /* per rank; cnt2 holds 2 * size scratch counts */
  MPI_Offset *d0;          /* my data range per aggregator this round */
  MPI_Count valid;         /* reads: my data bytes before end of file */
  size_t first;            /* first vector of the list being built */
  int took;                /* holds the kept buffers */
} coll;

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q) return -1;
  *p = q;
  *cap = n;
  return 0;
}

/* ---- 1. my range ------------------------------------------------------ */

static void my_range(coll *c) {
  const lmpio__view *v = &c->fh->view;
  c->start = c->end = 0;
  if (c->total == 0) return;
  c->start = lmpio__view_byte(v, c->pos);
  c->end = lmpio__view_byte(v, c->pos + c->total - 1) + 1;
}

/* ---- 3. file domains -------------------------------------------------- */

/* Window of aggregator k in round r: [*ws, *we), empty when *ws >= *we. */
static void window(const coll *c, int k, int r, MPI_Offset *ws, MPI_Offset *we) {
  MPI_Offset dlo = c->base + (MPI_Offset)k * c->fd;
  MPI_Offset lo = dlo + (MPI_Offset)r * c->cb;
  MPI_Offset hi = lo + c->cb;
  if (hi > dlo + c->fd) hi = dlo + c->fd;
  if (lo < c->gmin) lo = c->gmin;
  if (hi > c->gmax) hi = c->gmax;
  *ws = lo;
  *we = hi;
}

static void file_domains(coll *c, MPI_Offset cb_nodes, MPI_Offset cb_size) {
  int size = c->fh->size;
  MPI_Offset n = cb_nodes < 1 ? 1 : cb_nodes;
  if (n > size) n = size;
  if (n > MAX_AGGREGATORS) n = MAX_AGGREGATORS;
  c->naggr = (int)n;
  c->me = -1;
  for (int k = 0; k < c->naggr; k++) {
    c->agg[k] = (int)((long long)k * size / c->naggr);
    if (c->agg[k] == c->fh->rank) c->me = k;
  }
  MPI_Offset span = c->gmax - c->gmin;
  c->base = c->gmin;
  c->fd = (span + c->naggr - 1) / c->naggr;
  if (c->fd >= ALIGN) {
    c->base = c->gmin / ALIGN * ALIGN;
    c->fd = (c->gmax - c->base + c->naggr - 1) / c->naggr;
    c->fd = (c->fd + ALIGN - 1) / ALIGN * ALIGN;
  }
  if (c->fd < 1) c->fd = 1;
  MPI_Offset cb = cb_size < 1 ? 1 : cb_size;
  if (cb > MAX_CB_TOTAL / c->naggr) cb = MAX_CB_TOTAL / c->naggr;
  if (cb > c->fd) cb = c->fd;
  c->cb = cb;
  c->rounds = (int)((c->fd + cb - 1) / cb);
}

/* ---- 4. my pieces ----------------------------------------------------- */

static int push(coll *c, size_t *n, MPI_Offset off, MPI_Offset len, MPI_Offset stride,
                MPI_Offset count) {
  if (count == 1 && *n > c->first) { /* never into another aggregator's list */
    vec *l = &c->sv[*n - 1];
    if (l->count == 1 && off == l->off + l->len) { l->len += len; return 0; }
    if (l->count == 1 && len == l->len) { l->stride = off - l->off; l->count = 2; return 0; }
    if (l->count >= 2 && len == l->len && off == l->off + l->count * l->stride) { l->count++; return 0; }
  }
  if (grow((void **)&c->sv, &c->sv_cap, *n + 1, sizeof(vec)) < 0) return -1;
  c->sv[(*n)++] = (vec){off, len, stride, count};
  return 0;
}

/* Appends the pieces of data bytes [a, b) of the view (absolute positions). */
static int my_pieces(coll *c, MPI_Offset a, MPI_Offset b, size_t *n) {
  const lmpio__view *v = &c->fh->view;
  const lmpio__tm_node *ft = v->ft;
  if (ft->contiguous) { /* one run per tile: head, whole tiles, tail */
    MPI_Offset S = ft->size, E = ft->extent, base = v->disp + ft->data_lb;
    MPI_Offset p = a;
    if (p % S != 0 || b - p < S) {
      MPI_Offset len = S - p % S < b - p ? S - p % S : b - p;
      if (push(c, n, base + p / S * E + p % S, len, len, 1) < 0) return -1;
      p += len;
    }
    MPI_Offset T = (b - p) / S;
    if (T > 0) {
      if (E == S || T == 1) {
        if (push(c, n, base + p / S * E, T * S, T * S, 1) < 0) return -1;
      } else if (push(c, n, base + p / S * E, S, E, T) < 0) {
        return -1;
      }
      p += T * S;
    }
    if (p < b && push(c, n, base + p / S * E, b - p, b - p, 1) < 0) return -1;
    return 0;
  }
  lmpio__cursor fc;
  if (lmpio__cursor_init(&fc, ft, ft->extent) != MPI_SUCCESS) return -1;
  lmpio__cursor_seek(&fc, a);
  int rc = 0;
  for (MPI_Offset p = a; p < b && rc == 0;) {
    MPI_Aint off;
    MPI_Count len = lmpio__cursor_next(&fc, b - p, &off);
    rc = push(c, n, v->disp + off, len, len, 1);
    p += len;
  }
  lmpio__cursor_free(&fc);
  return rc;
}

/* Copies n bytes of my data stream from position d between memory and p. */
static void copy_mem(coll *c, char *p, MPI_Offset d, MPI_Offset n) {
  if (c->dir == LMPIO__READ && d + n > c->valid) n = c->valid - d; /* memory past EOF is left alone */
  if (n <= 0) return;
  if (c->memcontig) {
    char *mem = c->buf + c->m->data_lb + d;
    if (c->dir == LMPIO__WRITE) memcpy(p, mem, (size_t)n);
    else memcpy(mem, p, (size_t)n);
    return;
  }
  lmpio__cursor_seek(&c->mc, d);
  lmpio__access_copy(&c->mc, c->buf, p, n, c->dir);
}

/* ---- 5. aggregators --------------------------------------------------- */

static void extent_of(const vec *v, size_t n, MPI_Offset *lo, MPI_Offset *hi, MPI_Offset *sum) {
  for (size_t i = 0; i < n; i++) {
    MPI_Offset e = v[i].off + (v[i].count - 1) * v[i].stride + v[i].len;
    if (v[i].off < *lo) *lo = v[i].off;
    if (e > *hi) *hi = e;
    *sum += v[i].count * v[i].len;
  }
}

static void set_bits(uint64_t *bits, MPI_Offset a, MPI_Offset n) {
  while (n > 0) {
    int b = (int)(a & 63);
    MPI_Offset k = 64 - b < n ? 64 - b : n;
    bits[a >> 6] |= (k == 64 ? ~0ULL : (1ULL << k) - 1) << b;
    a += k;
    n -= k;
  }
}

static int test_bit(const uint64_t *bits, MPI_Offset a) { return (bits[a >> 6] >> (a & 63)) & 1; }

static int io_err(coll *c, const char *what) {
  return lmpio__err_errno(errno, c->call, what, c->fh->path);
}

/* Writes the pieces received this round (rv: vectors, rd: their data). */
static int agg_write(coll *c, size_t nv, int ncontrib) {
  lmpio_file fh = c->fh;
  MPI_Offset lo = LLONG_MAX, hi = 0, sum = 0;
  extent_of(c->rv, nv, &lo, &hi, &sum);
  if (nv == 0 || sum == 0) return MPI_SUCCESS;
  MPI_Offset span = hi - lo;
  if (grow((void **)&c->win, &c->win_cap, (size_t)span, 1) < 0)
    return lmpio__err(MPI_ERR_NO_MEM, c->call, "cannot allocate a %lld-byte collective buffer", (long long)span);
  /* One rank's pieces never overlap; several ranks' pieces may. */
  int covered = sum == span && ncontrib == 1, have_bits = 0;
  if (!covered && (sum >= span || !fh->fd_readable)) {
    size_t words = (size_t)(span + 63) / 64;
    if (grow((void **)&c->bits, &c->bits_cap, words, sizeof(uint64_t)) < 0)
      return lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
    memset(c->bits, 0, words * sizeof(uint64_t));
    for (size_t i = 0; i < nv; i++)
      for (MPI_Offset j = 0; j < c->rv[i].count; j++)
        set_bits(c->bits, c->rv[i].off + j * c->rv[i].stride - lo, c->rv[i].len);
    have_bits = 1;
    MPI_Offset full = 0;
    for (size_t w = 0; w < (size_t)span / 64; w++) full += c->bits[w] == ~0ULL ? 64 : __builtin_popcountll(c->bits[w]);
    for (MPI_Offset b = span / 64 * 64; b < span; b++) full += test_bit(c->bits, b);
    covered = full == span;
  }
  int rc = MPI_SUCCESS, locked = fh->size > 1;
  if (locked && lmpio__posix_lock(fh->fd, 1, lo, span) < 0) return io_err(c, "byte-range lock on");
  if (!covered && fh->fd_readable) { /* holes keep what the file has */
    long long got = lmpio__posix_pread_all(fh->fd, c->win, (size_t)span, lo);
    if (got < 0) rc = io_err(c, "pread of");
    else if (got < span) memset(c->win + got, 0, (size_t)(span - got));
  }
  if (rc == MPI_SUCCESS) {
    const char *d = c->rd;
    for (size_t i = 0; i < nv; i++) {
      const vec *v = &c->rv[i];
      char *w = c->win + (v->off - lo);
      if (v->len == 8) {
        for (MPI_Offset j = 0; j < v->count; j++, d += 8) memcpy(w + j * v->stride, d, 8);
      } else {
        for (MPI_Offset j = 0; j < v->count; j++, d += v->len) memcpy(w + j * v->stride, d, (size_t)v->len);
      }
    }
    if (covered || fh->fd_readable) {
      if (lmpio__posix_pwrite_all(fh->fd, c->win, (size_t)span, lo) < 0) rc = io_err(c, "pwrite to");
    } else if (have_bits) { /* write-only file with holes: write each run */
      for (MPI_Offset b = 0; b < span && rc == MPI_SUCCESS;) {
        if (!test_bit(c->bits, b)) { b++; continue; }
        MPI_Offset e = b;
        while (e < span && test_bit(c->bits, e)) e++;
        if (lmpio__posix_pwrite_all(fh->fd, c->win + b, (size_t)(e - b), lo + b) < 0) rc = io_err(c, "pwrite to");
        b = e;
      }
    }
  }
  if (locked) lmpio__posix_unlock(fh->fd, lo, span);
  return rc;
}

/* Reads the extent the requests (rv) cover and packs each rank's pieces
 * into sd at the displacements sdsp, counts scnt. */
static int agg_read(coll *c, size_t nv) {
  lmpio_file fh = c->fh;
  MPI_Offset lo = LLONG_MAX, hi = 0, sum = 0;
  extent_of(c->rv, nv, &lo, &hi, &sum);
  if (nv == 0 || sum == 0) return MPI_SUCCESS;
  MPI_Offset span = hi - lo;
  if (grow((void **)&c->win, &c->win_cap, (size_t)span, 1) < 0)
    return lmpio__err(MPI_ERR_NO_MEM, c->call, "cannot allocate a %lld-byte collective buffer", (long long)span);
  long long got = lmpio__posix_pread_all(fh->fd, c->win, (size_t)span, lo);
  if (got < 0) return io_err(c, "pread of");
  if (got < span) memset(c->win + got, 0, (size_t)(span - got));
  char *d = c->sd;
  for (size_t i = 0; i < nv; i++) {
    const vec *v = &c->rv[i];
    const char *w = c->win + (v->off - lo);
    if (v->len == 8) {
      for (MPI_Offset j = 0; j < v->count; j++, d += 8) memcpy(d, w + j * v->stride, 8);
    } else {
      for (MPI_Offset j = 0; j < v->count; j++, d += v->len) memcpy(d, w + j * v->stride, (size_t)v->len);
    }
  }
  return MPI_SUCCESS;
}

/* ---- the rounds ------------------------------------------------------- */

/* One round: returns 1 when every rank must stop (a rank failed); *prc is
 * this rank's own outcome. */
static int round_trip(coll *c, int r, int *prc) {
  int rc = *prc;
  lmpio_file fh = c->fh;
  int size = fh->size;
  size_t nsv = 0;
  MPI_Offset sbytes = 0;
  /* My pieces for every aggregator's window of this round. */
  for (int j = 0; j < size; j++) c->scnt[2 * j] = c->scnt[2 * j + 1] = 0;
  for (int k = 0; k < c->naggr && rc == MPI_SUCCESS; k++) {
    MPI_Offset ws, we, a = 0, b = 0;
    window(c, k, r, &ws, &we);
    if (c->total > 0 && ws < we && ws < c->end && we > c->start) {
      a = lmpio__view_data_before(&fh->view, ws) - c->pos;
      b = lmpio__view_data_before(&fh->view, we) - c->pos;
      if (a < 0) a = 0;
      if (b > c->total) b = c->total;
      if (a > b) a = b;
    }
    c->d0[k] = a;
    size_t before = nsv;
    c->first = nsv;
    if (b > a && my_pieces(c, c->pos + a, c->pos + b, &nsv) < 0)
      rc = lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
    c->scnt[2 * c->agg[k]] = (int)(nsv - before);
    c->scnt[2 * c->agg[k] + 1] = (int)(b - a);
    sbytes += b - a;
  }
  if (rc != MPI_SUCCESS)
    for (int j = 0; j < size; j++) c->scnt[2 * j] = -1;
  if (MPI_Alltoall(c->scnt, 2, MPI_INT, c->rcnt, 2, MPI_INT, fh->comm) != MPI_SUCCESS) {
    *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoall failed");
    return 1;
  }
  int stop = 0;
  for (int j = 0; j < size; j++) stop |= c->rcnt[2 * j] < 0;
  if (stop) {
    *prc = rc;
    return 1;
  }

  /* Buffers for this round; every rank says whether it has them. */
  long long nrv = 0, rbytes = 0;
  int ncontrib = 0;
  for (int j = 0; j < size; j++) {
    nrv += c->rcnt[2 * j];
    rbytes += c->rcnt[2 * j + 1];
    ncontrib += c->rcnt[2 * j + 1] > 0;
  }
  int fail = 0;
  if (nrv * (long long)sizeof(vec) > INT_MAX || rbytes > INT_MAX) fail = 1;
  else if (grow((void **)&c->rv, &c->rv_cap, (size_t)nrv, sizeof(vec)) < 0) fail = 1;
  else if (c->dir == LMPIO__WRITE && grow((void **)&c->rd, &c->rd_cap, (size_t)rbytes, 1) < 0) fail = 1;
  else if (c->dir == LMPIO__READ && grow((void **)&c->sd, &c->sd_cap, (size_t)rbytes, 1) < 0) fail = 1;
  else if (!c->direct && grow((void **)(c->dir == LMPIO__WRITE ? &c->sd : &c->rd),
                              c->dir == LMPIO__WRITE ? &c->sd_cap : &c->rd_cap, (size_t)sbytes, 1) < 0)
    fail = 1;
  int anyfail = 0;
  MPI_Allreduce(&fail, &anyfail, 1, MPI_INT, MPI_MAX, fh->comm);
  if (anyfail) {
    if (fail) *prc = lmpio__err(MPI_ERR_NO_MEM, c->call, "cannot allocate the buffers of a collective round");
    return 1;
  }

  /* The vectors, to the aggregators. */
  int *sc = c->cnt2 + size, *rc2 = c->cnt2; /* counts in bytes */
  int so = 0, ro = 0;
  for (int j = 0; j < size; j++) {
    sc[j] = c->scnt[2 * j] * (int)sizeof(vec);
    c->sdsp[j] = so;
    so += sc[j];
    rc2[j] = c->rcnt[2 * j] * (int)sizeof(vec);
    c->rdsp[j] = ro;
    ro += rc2[j];
  }
  if (MPI_Alltoallv(c->sv, sc, c->sdsp, MPI_BYTE, c->rv, rc2, c->rdsp, MPI_BYTE, fh->comm) != MPI_SUCCESS) {
    *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoallv failed");
    return 1;
  }

  /* The data: my stream range for aggregator k is [d0[k], d0[k] + bytes). */
  int *mycnt = sc, *mydsp = c->sdsp, *thcnt = rc2, *thdsp = c->rdsp;
  so = 0;
  ro = 0;
  for (int j = 0; j < size; j++) { mycnt[j] = 0; mydsp[j] = 0; }
  for (int k = 0; k < c->naggr; k++) {
    int j = c->agg[k];
    mycnt[j] = c->scnt[2 * j + 1];
    mydsp[j] = c->direct ? (int)c->d0[k] : so;
    so += mycnt[j];
  }
  for (int j = 0; j < size; j++) {
    thcnt[j] = c->rcnt[2 * j + 1];
    thdsp[j] = ro;
    ro += thcnt[j];
  }
  char *mine = c->direct ? c->buf + c->m->data_lb : (c->dir == LMPIO__WRITE ? c->sd : c->rd);
  if (c->dir == LMPIO__WRITE) {
    if (!c->direct)
      for (int k = 0; k < c->naggr; k++)
        if (mycnt[c->agg[k]] > 0) copy_mem(c, c->sd + mydsp[c->agg[k]], c->d0[k], mycnt[c->agg[k]]);
    if (MPI_Alltoallv(mine, mycnt, mydsp, MPI_BYTE, c->rd, thcnt, thdsp, MPI_BYTE, fh->comm) != MPI_SUCCESS) {
      *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoallv failed");
      return 1;
    }
    if (rc == MPI_SUCCESS && c->me >= 0) rc = agg_write(c, (size_t)nrv, ncontrib);
  } else {
    if (rc == MPI_SUCCESS && c->me >= 0) rc = agg_read(c, (size_t)nrv);
    if (MPI_Alltoallv(c->sd, thcnt, thdsp, MPI_BYTE, mine, mycnt, mydsp, MPI_BYTE, fh->comm) != MPI_SUCCESS) {
      *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoallv failed");
      return 1;
    }
    if (!c->direct)
      for (int k = 0; k < c->naggr; k++)
        if (mycnt[c->agg[k]] > 0) copy_mem(c, c->rd + mydsp[c->agg[k]], c->d0[k], mycnt[c->agg[k]]);
  }
  *prc = rc;
  return 0;
}

/* The round buffers are kept per thread from one call to the next (up to
 * KEEP_BYTES each): a fresh multi-megabyte buffer costs a page fault per
 * page every call. */
#define KEEP_BYTES ((size_t)64 << 20)
typedef struct {
  vec *sv, *rv;
  size_t sv_cap, rv_cap;
  char *sd, *rd, *win;
  size_t sd_cap, rd_cap, win_cap;
  uint64_t *bits;
  size_t bits_cap;
} kept;
static __thread kept keep; /* (__thread: cppcheck does not know _Thread_local) */

static void take_kept(coll *c) {
  c->sv = keep.sv;
  c->sv_cap = keep.sv_cap;
  c->rv = keep.rv;
  c->rv_cap = keep.rv_cap;
  c->sd = keep.sd;
  c->sd_cap = keep.sd_cap;
  c->rd = keep.rd;
  c->rd_cap = keep.rd_cap;
  c->win = keep.win;
  c->win_cap = keep.win_cap;
  c->bits = keep.bits;
  c->bits_cap = keep.bits_cap;
  memset(&keep, 0, sizeof keep);
  c->took = 1;
}

static void *keep_or_free(void *p, size_t *cap, size_t elem) {
  if (*cap * elem <= KEEP_BYTES) return p;
  free(p);
  *cap = 0;
  return NULL;
}

static void coll_free(coll *c) {
  if (c->took) {
    keep.sv = keep_or_free(c->sv, &c->sv_cap, sizeof(vec));
    keep.sv_cap = c->sv_cap;
    keep.rv = keep_or_free(c->rv, &c->rv_cap, sizeof(vec));
    keep.rv_cap = c->rv_cap;
    keep.sd = keep_or_free(c->sd, &c->sd_cap, 1);
    keep.sd_cap = c->sd_cap;
    keep.rd = keep_or_free(c->rd, &c->rd_cap, 1);
    keep.rd_cap = c->rd_cap;
    keep.win = keep_or_free(c->win, &c->win_cap, 1);
    keep.win_cap = c->win_cap;
    keep.bits = keep_or_free(c->bits, &c->bits_cap, sizeof(uint64_t));
    keep.bits_cap = c->bits_cap;
  }
  free(c->scnt);
  free(c->agg);
  free(c->d0);
  if (c->m && !c->memcontig) lmpio__cursor_free(&c->mc);
  if (c->m) lmpio__typemap_release(c->m);
}

/* ---- the calls -------------------------------------------------------- */

enum { G_RC, G_START, G_END, G_CONTIG, G_MODE, G_CBSIZE, G_CBNODES, G_N };

/* 2. Whether the ranges interleave: some two nonempty ranges overlap. */
static int choose(coll *c, const long long *g, int size) {
  int any = 0, interleaved = 0, allcontig = 1;
  for (int j = 0; j < size; j++) {
    MPI_Offset s = g[j * G_N + G_START], e = g[j * G_N + G_END];
    if (e <= s) continue;
    if (!any || s < c->gmin) c->gmin = s;
    if (!any || e > c->gmax) c->gmax = e;
    any = 1;
    allcontig &= g[j * G_N + G_CONTIG] != 0;
    for (int i = 0; i < j && !interleaved; i++) {
      MPI_Offset s2 = g[i * G_N + G_START], e2 = g[i * G_N + G_END];
      if (e2 > s2 && s < e2 && s2 < e) interleaved = 1;
    }
  }
  int mode = (int)g[G_MODE]; /* rank 0's hint */
  /* Automatic: aggregate only interleaved accesses, and only when the ranks
   * span nodes.  On one node every rank shares one page cache, so moving the
   * data through aggregators costs an extra copy and saves nothing: measured
   * here, independent sieving was faster for every strided write. */
  return any && (mode == 1 || (mode == 2 && !c->fh->one_node && interleaved && !allcontig));
}

/* Prepares my side: memory type, data range, file range.  Fills c. */
static int setup(coll *c, MPI_Offset pos, int count, MPI_Datatype type) {
  int rc = lmpio__typemap_get(type, &c->m, c->call);
  if (rc != MPI_SUCCESS) {
    c->m = NULL;
    return rc;
  }
  c->pos = pos;
  c->total = (MPI_Count)count * c->m->size;
  c->memcontig = c->total == 0 || (c->m->contiguous && (count == 1 || c->m->size == c->m->extent));
  if (!c->memcontig && lmpio__cursor_init(&c->mc, c->m, c->m->extent) != MPI_SUCCESS) {
    c->memcontig = 1; /* nothing to free */
    return lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
  }
  my_range(c);
  /* Reads: the data past end of file, as the file is now, is not touched,
   * so data that may reach it is received into a staging buffer. */
  c->valid = c->total;
  if (c->dir == LMPIO__READ && c->total > 0) {
    struct stat sb;
    if (fstat(c->fh->fd, &sb) < 0) return lmpio__err_errno(errno, c->call, "cannot stat", c->fh->path);
    if (c->end > sb.st_size) {
      MPI_Offset v = lmpio__view_data_before(&c->fh->view, sb.st_size) - c->pos;
      c->valid = v < 0 ? 0 : v < c->total ? v : c->total;
    }
  }
  c->direct = c->memcontig && c->total <= INT_MAX && c->valid == c->total;
  return MPI_SUCCESS;
}

int lmpio__collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                      MPI_Datatype type, int dir, MPI_Status *status, int pre_rc, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int rc = pre_rc;
  /* The standard: no other collective access while a split collective is active. */
  if (rc == MPI_SUCCESS && fh->split_kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  if (rc == MPI_SUCCESS)
    rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc == MPI_SUCCESS && !use_fp && offset < 0)
    rc = lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  /* A count that is not whole etypes on one rank must stop every rank
   * before anything is written. */
  MPI_Offset n = 0;
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &n, call);
  MPI_Offset etpos = use_fp ? fh->fp : offset;
  int size = fh->size;

  coll c;
  memset(&c, 0, sizeof c);
  c.fh = fh;
  c.dir = dir;
  c.call = call;
  c.buf = buf;
  c.memcontig = 1;
  /* Two-phase needs a native view and no atomic mode (the same on every
   * rank: both are set collectively). */
  int eligible = fh->view.rep == NULL && !fh->atomic;
  c.scnt = malloc(sizeof(int) * 8 * (size_t)size);
  c.agg = malloc(sizeof(int) * (size_t)size);
  c.d0 = malloc(sizeof(MPI_Offset) * (size_t)(size < MAX_AGGREGATORS ? size : MAX_AGGREGATORS));
  long long *g = malloc(sizeof(long long) * G_N * (size_t)size);
  if (rc == MPI_SUCCESS && (!c.scnt || !c.agg || !c.d0 || !g))
    rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  if (rc == MPI_SUCCESS && eligible) rc = setup(&c, etpos * fh->view.esize, count, type);

  /* 1. Everyone's range, argument check and rank 0's hints, in one allgather. */
  int fail = rc != MPI_SUCCESS;
  if (g) {
    long long mine[G_N] = {fail, c.start, c.end, c.total == c.end - c.start,
                           dir == LMPIO__WRITE ? fh->cb_write : fh->cb_read, fh->cb_buffer_size,
                           fh->cb_nodes};
    if (MPI_Allgather(mine, G_N, MPI_LONG_LONG, g, G_N, MPI_LONG_LONG, fh->comm) != MPI_SUCCESS) {
      fail = 1;
    } else {
      for (int j = 0; j < size; j++) fail |= g[j * G_N + G_RC] != 0;
    }
  } else {
    fail = 1;
  }
  if (fail) { /* the failing ranks' class and message, on every rank */
    rc = lmpio__agree(fh->comm, rc, 0, call);
    if (rc == MPI_SUCCESS) rc = lmpio__err(MPI_ERR_OTHER, call, "the collective exchange failed");
    free(g);
    coll_free(&c);
    lmpio__set_status(status, 0);
    return rc;
  }
  c.rcnt = c.scnt + 2 * size;
  c.sdsp = c.scnt + 4 * size;
  c.rdsp = c.scnt + 5 * size;
  c.cnt2 = c.scnt + 6 * size; /* and 7 * size: scratch counts */

  /* 2. Two-phase or independent. */
  int twophase = eligible && choose(&c, g, size);
  MPI_Offset cb_size = g[G_CBSIZE], cb_nodes = g[G_CBNODES];
  free(g);
  MPI_Count bytes = 0;
  MPI_Offset etypes = 0;
  if (!twophase) {
    coll_free(&c);
    rc = lmpio__access(fh, etpos, buf, count, type, dir, &bytes, &etypes, call);
    if (use_fp) fh->fp += etypes;
    rc = lmpio__agree(fh->comm, rc, 0, call);
    lmpio__set_status(status, bytes);
    return rc;
  }

  /* 3.-5. Domains, then the rounds. */
  file_domains(&c, cb_nodes, cb_size);
  take_kept(&c);
  /* A rank that fails says so in the next round's counts; all stop there. */
  for (int r = 0; r < c.rounds; r++)
    if (round_trip(&c, r, &rc)) break;

  /* 6. Errors, agreed: lmpio__agree only when some rank failed. */
  int bad = rc != MPI_SUCCESS, anybad = 1;
  if (MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, fh->comm) != MPI_SUCCESS && rc == MPI_SUCCESS)
    rc = lmpio__err(MPI_ERR_OTHER, call, "MPI_Allreduce failed");
  if (anybad) {
    rc = lmpio__agree(fh->comm, rc, 0, call);
    if (rc == MPI_SUCCESS) rc = lmpio__err(MPI_ERR_OTHER, call, "the collective exchange failed");
  }
  if (rc == MPI_SUCCESS) bytes = dir == LMPIO__READ ? c.valid : c.total;
  etypes = bytes / fh->view.esize;
  if (use_fp) fh->fp += etypes;
  coll_free(&c);
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio_file_read_at_all(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                           MPI_Datatype datatype, MPI_Status *status) {
  return lmpio__collective(fh, offset, 0, buf, count, datatype, LMPIO__READ, status, MPI_SUCCESS,
                           "lmpio_file_read_at_all");
}

int lmpio_file_write_at_all(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                            MPI_Datatype datatype, MPI_Status *status) {
  return lmpio__collective(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, status,
                           MPI_SUCCESS, "lmpio_file_write_at_all");
}

int lmpio_file_read_all(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                        MPI_Status *status) {
  return lmpio__collective(fh, 0, 1, buf, count, datatype, LMPIO__READ, status, MPI_SUCCESS,
                           "lmpio_file_read_all");
}

int lmpio_file_write_all(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                         MPI_Status *status) {
  return lmpio__collective(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, status,
                           MPI_SUCCESS, "lmpio_file_write_all");
}
