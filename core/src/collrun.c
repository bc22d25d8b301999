/* The collective run under the *_all calls (their entries: collective.c,
 * request.c): two-phase collective buffering,
 * in the steps of ROMIO's ad_write_coll / ad_read_coll:
 *
 *  1. my_range:      the file bytes [start, end) my access touches; the
 *                    call's first agreement (agree.c: one allgather) shares
 *                    every rank's range and its argument check (so no rank
 *                    writes when another passed bad arguments).  Above the
 *                    ranks it gathers, it reduces them (span, lengths), and
 *                    the ranges are gathered only when the choice needs them.
 *  2. choose:        two-phase or the independent path.  Hint romio_cb_read /
 *                    romio_cb_write: enable, disable, automatic (two-phase
 *                    only when the ranges of the ranks interleave and some
 *                    rank's access is not one contiguous run of the file).
 *                    Non-native representations and atomic mode always take
 *                    the independent path.  An automatic read across nodes
 *                    whose handle's last one went independent goes so at
 *                    once; its agreement's ranges choose for the next one.
 *  3. file_domains:  the union of the ranges split into one domain per
 *                    aggregator (chosen at open by node: hints cb_config_list
 *                    and cb_nodes, nodes.c), in rank order, aligned to the
 *                    stripe (hint striping_unit) or the file system's block
 *                    when the domains are that large; each domain is done in
 *                    rounds of windows of at most cb_buffer_size bytes.
 *  4. the rounds (round_trip): round_requests (my_pieces: for each window,
 *                    the (offset, length) pieces of my access in it, as
 *                    strided vectors, a strided view giving one vector per
 *                    window, and the contiguous range of my data stream
 *                    they hold); round_counts (MPI_Alltoall); round_buffers
 *                    (allocated, agreed); round_vectors and round_data (the
 *                    exchange, MPI_Alltoallv; contiguous user memory is sent
 *                    from and received into directly), around
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
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_CB_TOTAL (1 << 30) /* aggregators x cb_buffer_size, so int counts fit */

typedef lmpio__vec vec;

typedef struct {
  const lmpio__coll_plan *cp; /* all the handle it sees */
  int dir;
  const char *call;
  char *buf;
  const lmpio__tm_node *m;
  int memcontig;           /* data is one run at buf + m->data_lb */
  int direct;              /* ... and small enough for int displacements */
  lmpio__stream ms;        /* my memory */
  lmpio__plan plan;        /* cp's, its windows counted as the aggregator's (filetype borrowed) */
  lmpio__view view;        /* cp's view, for view.c */
  lmpio__engine engine;
  lmpio__window w;
  MPI_Offset pos;          /* first data byte of the view */
  MPI_Count total;         /* data bytes of my access */
  MPI_Offset start, end;   /* file bytes it touches */
  /* domains */
  int naggr, me;           /* me: my aggregator index or -1 */
  const int *agg;          /* rank of aggregator k (cp's) */
  MPI_Offset gmin, gmax, base, domain, cb; /* the span, where domain 0 starts, a domain's bytes, a window's */
  MPI_Offset rounds;
  /* buffers, grown as needed */
  vec *sv, *rv;
  size_t sv_cap, rv_cap;
  char *sd, *rd;
  size_t sd_cap, rd_cap;
  uint64_t *bits;
  size_t bits_cap;
  long long *scnt, *rcnt;  /* [pieces, bytes, next round] per rank, sent and received */
  int *sdsp, *rdsp, *cnt2; /* per rank; cnt2 holds 2 * size scratch counts */
  MPI_Offset *d0;          /* my data range per aggregator this round */
  MPI_Count valid;         /* reads: my data bytes before end of file */
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

static int my_range(coll *c) {
  const lmpio__view *v = &c->view;
  c->start = c->end = 0;
  if (c->total == 0) return MPI_SUCCESS;
  int rc = lmpio__view_byte(v, c->pos, &c->start, c->call);
  if (rc == MPI_SUCCESS) rc = lmpio__view_byte(v, c->pos + c->total - 1, &c->end, c->call);
  c->end++;
  return rc;
}

/* ---- 3. file domains -------------------------------------------------- */

/* Window of aggregator k in round r: [*ws, *we), empty when *ws >= *we. */
static void window(const coll *c, int k, MPI_Offset r, MPI_Offset *ws, MPI_Offset *we) {
  MPI_Offset dlo = c->base + (MPI_Offset)k * c->domain;
  MPI_Offset lo = dlo + (MPI_Offset)r * c->cb;
  MPI_Offset hi = lo + c->cb;
  if (hi > dlo + c->domain) hi = dlo + c->domain;
  if (lo < c->gmin) lo = c->gmin;
  if (hi > c->gmax) hi = c->gmax;
  *ws = lo;
  *we = hi;
}

static void file_domains(coll *c, MPI_Offset cb_size) {
  c->naggr = c->cp->naggr;
  c->agg = c->cp->aggr;
  c->me = -1;
  for (int k = 0; k < c->naggr; k++)
    if (c->agg[k] == c->cp->rank) c->me = k;
  MPI_Offset span = c->gmax - c->gmin, align = c->cp->align;
  c->base = c->gmin;
  c->domain = (span + c->naggr - 1) / c->naggr;
  if (c->domain >= align) {
    c->base = c->gmin / align * align;
    c->domain = (c->gmax - c->base + c->naggr - 1) / c->naggr;
    c->domain = (c->domain + align - 1) / align * align;
  }
  if (c->domain < 1) c->domain = 1;
  MPI_Offset cb = cb_size < 1 ? 1 : cb_size;
  if (cb > MAX_CB_TOTAL / c->naggr) cb = MAX_CB_TOTAL / c->naggr;
  if (cb > c->domain) cb = c->domain;
  c->cb = cb;
  c->rounds = (c->domain + cb - 1) / cb;
}

/* ---- 4. my pieces ----------------------------------------------------- */

/* Appends the pieces of data bytes [a, b) of the view (absolute
 * positions) to sv: the plan's windows, unbounded. */
static int my_pieces(coll *c, MPI_Offset a, MPI_Offset b, size_t *n) {
  lmpio__plan_iter it;
  if (lmpio__plan_start(&it, &c->plan, a, b) != MPI_SUCCESS) return -1;
  int more, rc = 0;
  while (rc == 0 && (more = lmpio__plan_next(&it, LLONG_MAX / 4, 0, &c->w)) != 0) {
    if (more < 0 || grow((void **)&c->sv, &c->sv_cap, *n + c->w.n, sizeof(vec)) < 0) {
      rc = -1;
      break;
    }
    memcpy(c->sv + *n, c->w.v, c->w.n * sizeof(vec));
    *n += c->w.n;
  }
  lmpio__plan_stop(&it);
  return rc;
}

/* Copies n bytes of my data stream from position d between memory and p. */
static void copy_mem(coll *c, char *p, MPI_Offset d, MPI_Offset n) {
  if (c->dir == LMPIO__READ && d + n > c->valid) n = c->valid - d; /* memory past EOF is left alone */
  if (n <= 0) return;
  lmpio__stream_seek(&c->ms, d);
  lmpio__stream_copy(&c->ms, p, n, c->dir);
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

/* Whether the pieces received cover every byte of [lo, lo + span). */
static int covers(coll *c, size_t nv, int ncontrib, MPI_Offset lo, MPI_Offset span, MPI_Offset sum, int *rc) {
  if (ncontrib == 1) return sum == span; /* one rank's pieces never overlap */
  if (sum < span) return 0;
  size_t words = (size_t)(span + 63) / 64;
  if (grow((void **)&c->bits, &c->bits_cap, words, sizeof(uint64_t)) < 0) {
    *rc = lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
    return 0;
  }
  memset(c->bits, 0, words * sizeof(uint64_t));
  for (size_t i = 0; i < nv; i++)
    for (MPI_Offset j = 0; j < c->rv[i].count; j++)
      set_bits(c->bits, c->rv[i].off + j * c->rv[i].stride - lo, c->rv[i].len);
  MPI_Offset full = 0;
  for (size_t w = 0; w < (size_t)span / 64; w++) full += __builtin_popcountll(c->bits[w]);
  for (MPI_Offset b = span / 64 * 64; b < span; b++) full += test_bit(c->bits, b);
  return full == span;
}

/* The window an aggregator runs for the pieces it received (rv). */
static void agg_window(coll *c, size_t nv, MPI_Offset lo, MPI_Offset hi) {
  c->w.v = c->rv;
  c->w.n = c->w.cap = nv;
  c->w.lo = lo;
  c->w.hi = hi;
  c->w.sieve = 1;
  c->w.fill = c->w.zero_eof = 0;
  c->w.lock = LMPIO__LOCK_NONE;
}

/* Writes the pieces received this round (rv: vectors, rd: their data),
 * through the engine: one sieved window under an exclusive lock. */
static int agg_write(coll *c, size_t nv, int ncontrib) {
  MPI_Offset lo = LLONG_MAX, hi = 0, sum = 0;
  extent_of(c->rv, nv, &lo, &hi, &sum);
  if (nv == 0 || sum == 0) return MPI_SUCCESS;
  int rc = MPI_SUCCESS;
  int covered = covers(c, nv, ncontrib, lo, hi - lo, sum, &rc);
  if (rc != MPI_SUCCESS) return rc;
  lmpio__window saved = c->w;
  agg_window(c, nv, lo, hi);
  c->w.lock = LMPIO__LOCK_EXCL;
  c->w.fill = !covered;
  /* A write-only descriptor cannot read the holes back, and a caching
   * client's read of them may be stale (driver.h): piece by piece. */
  if (!covered && (!c->plan.fd_readable || !c->plan.drv->sieve_writes)) c->w.sieve = 0;
  lmpio__stream s;
  lmpio__stream_bytes(&s, c->rd, sum);
  int eof = 0;
  rc = lmpio__engine_window(&c->plan, &c->engine, &c->w, &s, &eof, c->call);
  c->w = saved;
  return rc;
}

/* Reads the extent the requests (rv) cover and packs each rank's pieces
 * into sd (bytes past end of file read as zeros). */
static int agg_read(coll *c, size_t nv) {
  MPI_Offset lo = LLONG_MAX, hi = 0, sum = 0;
  extent_of(c->rv, nv, &lo, &hi, &sum);
  if (nv == 0 || sum == 0) return MPI_SUCCESS;
  lmpio__window saved = c->w;
  agg_window(c, nv, lo, hi);
  c->w.zero_eof = 1;
  lmpio__stream s;
  lmpio__stream_bytes(&s, c->sd, sum);
  int eof = 0;
  int rc = lmpio__engine_window(&c->plan, &c->engine, &c->w, &s, &eof, c->call);
  c->w = saved;
  return rc;
}

/* ---- the rounds ------------------------------------------------------- */

/* The first round after r in which I have data for some aggregator (or
 * c->rounds): the rounds between are skipped when no rank has data there,
 * so the time follows the data, not the span of the file. */
static MPI_Offset my_next_round(coll *c, MPI_Offset r) {
  MPI_Offset next = c->rounds;
  if (c->total == 0) return next;
  for (int k = 0; k < c->naggr; k++) {
    MPI_Offset dlo = c->base + (MPI_Offset)k * c->domain, dhi = dlo + c->domain;
    if (dhi > c->gmax) dhi = c->gmax;
    MPI_Offset ws = dlo + (r + 1) * c->cb;
    if (ws < c->start) ws = c->start;
    if (ws >= dhi || ws >= c->end) continue;
    MPI_Offset a = lmpio__view_data_before(&c->view, ws) - c->pos, x;
    if (a < 0) a = 0;
    if (a >= c->total || lmpio__view_byte(&c->view, c->pos + a, &x, c->call) != MPI_SUCCESS) continue;
    if (x < dhi) {
      MPI_Offset rk = (x - dlo) / c->cb;
      if (rk < next) next = rk;
    }
  }
  return next;
}

/* Round step 1, my requests: my pieces for every aggregator's window of
 * round r (c->sv, counted in c->scnt); *nsv pieces, *sbytes data bytes. */
static int round_requests(coll *c, MPI_Offset r, int rc, size_t *nsv, MPI_Offset *sbytes) {
  int size = c->cp->size;
  *nsv = 0;
  *sbytes = 0;
  for (int j = 0; j < 3 * size; j++) c->scnt[j] = 0;
  for (int k = 0; k < c->naggr && rc == MPI_SUCCESS; k++) {
    MPI_Offset ws, we, a = 0, b = 0;
    window(c, k, r, &ws, &we);
    if (c->total > 0 && ws < we && ws < c->end && we > c->start) {
      a = lmpio__view_data_before(&c->view, ws) - c->pos;
      b = lmpio__view_data_before(&c->view, we) - c->pos;
      if (a < 0) a = 0;
      if (b > c->total) b = c->total;
      if (a > b) a = b;
    }
    c->d0[k] = a;
    size_t before = *nsv;
    if (b > a && my_pieces(c, c->pos + a, c->pos + b, nsv) < 0)
      rc = lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
    c->scnt[3 * c->agg[k]] = (long long)(*nsv - before);
    c->scnt[3 * c->agg[k] + 1] = b - a;
    *sbytes += b - a;
  }
  return rc;
}

/* Round step 2, the counts: every rank's pieces and bytes for every other,
 * and the next round each has data in (-1: it failed).  Returns 1 when
 * every rank must stop. */
static int round_counts(coll *c, MPI_Offset r, int rc, int *prc, MPI_Offset *next) {
  int size = c->cp->size;
  MPI_Offset mine = my_next_round(c, r);
  for (int j = 0; j < size; j++) c->scnt[3 * j + 2] = rc != MPI_SUCCESS ? -1 : mine;
  if (MPI_Alltoall(c->scnt, 3, MPI_LONG_LONG, c->rcnt, 3, MPI_LONG_LONG, c->cp->comm) != MPI_SUCCESS) {
    *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoall failed");
    return 1;
  }
  int stop = 0;
  *next = c->rounds;
  for (int j = 0; j < size; j++) {
    stop |= c->rcnt[3 * j + 2] < 0;
    if (c->rcnt[3 * j + 2] < *next) *next = c->rcnt[3 * j + 2];
  }
  if (stop) *prc = rc;
  return stop;
}

/* Round step 3, the buffers of the round; every rank says whether it has
 * them.  *nrv: the pieces this rank receives, *ncontrib: from how many
 * ranks.  Returns 1 when every rank must stop. */
static int round_buffers(coll *c, size_t nsv, MPI_Offset sbytes, long long *nrv, int *ncontrib, int *prc) {
  int size = c->cp->size;
  long long rbytes = 0;
  *nrv = 0;
  *ncontrib = 0;
  for (int j = 0; j < size; j++) {
    *nrv += c->rcnt[3 * j];
    rbytes += c->rcnt[3 * j + 1];
    *ncontrib += c->rcnt[3 * j + 1] > 0;
  }
  long long fail = 0;
  if (*nrv * (long long)sizeof(vec) > INT_MAX || rbytes > INT_MAX || sbytes > INT_MAX ||
      (long long)nsv * (long long)sizeof(vec) > INT_MAX) fail = 1;
  else if (grow((void **)&c->rv, &c->rv_cap, (size_t)*nrv, sizeof(vec)) < 0) fail = 1;
  else if (c->dir == LMPIO__WRITE && grow((void **)&c->rd, &c->rd_cap, (size_t)rbytes, 1) < 0) fail = 1;
  else if (c->dir == LMPIO__READ && grow((void **)&c->sd, &c->sd_cap, (size_t)rbytes, 1) < 0) fail = 1;
  else if (!c->direct && grow((void **)(c->dir == LMPIO__WRITE ? &c->sd : &c->rd),
                              c->dir == LMPIO__WRITE ? &c->sd_cap : &c->rd_cap, (size_t)sbytes, 1) < 0)
    fail = 1;
  int frc = fail ? lmpio__err(MPI_ERR_NO_MEM, c->call, "cannot allocate the buffers of a collective round")
                 : MPI_SUCCESS;
  if (lmpio__agree_values(c->cp->comm, MPI_SUCCESS, NULL, 0, NULL, &fail, 1, c->call) != MPI_SUCCESS || fail) {
    if (frc != MPI_SUCCESS) *prc = frc;
    return 1;
  }
  return 0;
}

/* Round step 4, the exchange of the pieces: the vectors, to the
 * aggregators.  Returns 1 when every rank must stop. */
static int round_vectors(coll *c, int *prc) {
  int size = c->cp->size;
  int *sc = c->cnt2 + size, *rc2 = c->cnt2; /* counts in bytes */
  int so = 0, ro = 0;
  for (int j = 0; j < size; j++) {
    sc[j] = (int)c->scnt[3 * j] * (int)sizeof(vec);
    c->sdsp[j] = so;
    so += sc[j];
    rc2[j] = (int)c->rcnt[3 * j] * (int)sizeof(vec);
    c->rdsp[j] = ro;
    ro += rc2[j];
  }
  if (MPI_Alltoallv(c->sv, sc, c->sdsp, MPI_BYTE, c->rv, rc2, c->rdsp, MPI_BYTE, c->cp->comm) != MPI_SUCCESS) {
    *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoallv failed");
    return 1;
  }
  return 0;
}

/* Round step 5, the data and the aggregators' I/O: my stream range for
 * aggregator k is [d0[k], d0[k] + bytes); a write sends, then the
 * aggregators write; a read: the aggregators read, then send.  Returns 1
 * when every rank must stop. */
static int round_data(coll *c, int rc, long long nrv, int ncontrib, int *prc) {
  int size = c->cp->size;
  int *mycnt = c->cnt2 + size, *mydsp = c->sdsp, *thcnt = c->cnt2, *thdsp = c->rdsp;
  int so = 0, ro = 0;
  for (int j = 0; j < size; j++) { mycnt[j] = 0; mydsp[j] = 0; }
  for (int k = 0; k < c->naggr; k++) {
    int j = c->agg[k];
    mycnt[j] = (int)c->scnt[3 * j + 1];
    mydsp[j] = c->direct ? (int)c->d0[k] : so;
    so += mycnt[j];
  }
  for (int j = 0; j < size; j++) {
    thcnt[j] = (int)c->rcnt[3 * j + 1];
    thdsp[j] = ro;
    ro += thcnt[j];
  }
  char *mine_buf = c->direct ? c->ms.buf : (c->dir == LMPIO__WRITE ? c->sd : c->rd);
  if (c->dir == LMPIO__WRITE) {
    if (!c->direct)
      for (int k = 0; k < c->naggr; k++)
        if (mycnt[c->agg[k]] > 0) copy_mem(c, c->sd + mydsp[c->agg[k]], c->d0[k], mycnt[c->agg[k]]);
    if (MPI_Alltoallv(mine_buf, mycnt, mydsp, MPI_BYTE, c->rd, thcnt, thdsp, MPI_BYTE, c->cp->comm) != MPI_SUCCESS) {
      *prc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Alltoallv failed");
      return 1;
    }
    if (rc == MPI_SUCCESS && c->me >= 0) rc = agg_write(c, (size_t)nrv, ncontrib);
  } else {
    if (rc == MPI_SUCCESS && c->me >= 0) rc = agg_read(c, (size_t)nrv);
    if (MPI_Alltoallv(c->sd, thcnt, thdsp, MPI_BYTE, mine_buf, mycnt, mydsp, MPI_BYTE, c->cp->comm) != MPI_SUCCESS) {
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

/* One round, in its named steps: returns 1 when every rank must stop (a
 * rank failed); *prc is this rank's own outcome; *next the next round any
 * rank has data in. */
static int round_trip(coll *c, MPI_Offset r, int *prc, MPI_Offset *next) {
  size_t nsv;
  MPI_Offset sbytes;
  long long nrv;
  int ncontrib;
  int rc = round_requests(c, r, *prc, &nsv, &sbytes);
  if (round_counts(c, r, rc, prc, next)) return 1;
  if (round_buffers(c, nsv, sbytes, &nrv, &ncontrib, prc)) return 1;
  if (round_vectors(c, prc)) return 1;
  return round_data(c, rc, nrv, ncontrib, prc);
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
  c->engine.stage = keep.win;
  c->engine.size = keep.win_cap;
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
    keep.win = keep_or_free(c->engine.stage, &c->engine.size, 1);
    keep.win_cap = c->engine.size;
    keep.bits = keep_or_free(c->bits, &c->bits_cap, sizeof(uint64_t));
    keep.bits_cap = c->bits_cap;
    c->engine.stage = NULL;
  }
  lmpio__engine_free(&c->engine);
  lmpio__window_free(&c->w);
  free(c->scnt);
  free(c->sdsp);
  free(c->d0);
  if (c->m) {
    lmpio__stream_free(&c->ms);
    lmpio__typemap_release(c->m);
  }
}

/* ---- the calls -------------------------------------------------------- */

/* What the call's first agreement gathers from every rank (up to
 * lmpio__agree_gathers ranks): its file range; and what it reduces. */
enum { G_START, G_END, G_N };
enum { R_INELIGIBLE, R_NONCONTIG, R_ANY, R_END, R_NEG_START, R_N };

/* Whether some two nonempty ranges of g (G_N values per rank) overlap. */
static int interleaved(const long long *g, int size) {
  for (int j = 0; j < size; j++) {
    MPI_Offset s = g[j * G_N + G_START], e = g[j * G_N + G_END];
    if (e <= s) continue;
    for (int i = 0; i < j; i++) {
      MPI_Offset s2 = g[i * G_N + G_START], e2 = g[i * G_N + G_END];
      if (e2 > s2 && s < e2 && s2 < e) return 1;
    }
  }
  return 0;
}

/* 2. Two-phase or independent, from the reduced values red (R_N) and the
 * sum of the ranges' lengths; g: every rank's range when the agreement
 * gathered them (NULL: gathered here when the answer depends on them). */
static int choose(coll *c, const long long *red, long long len_sum, const long long *g, int size, int *rc) {
  if (!red[R_ANY]) return 0;
  c->gmin = -red[R_NEG_START];
  c->gmax = red[R_END];
  int allcontig = !red[R_NONCONTIG];
  /* The hints are the same on every rank (open and set_info agree on them).
   * Automatic: aggregate only interleaved accesses, and only when the ranks
   * span nodes.  On one node every rank shares one page cache, so moving the
   * data through aggregators costs an extra copy and saves nothing: measured
   * here, independent sieving was faster for every strided write. */
  int mode = c->dir == LMPIO__WRITE ? c->plan.hints.cb_write : c->plan.hints.cb_read;
  if (mode == LMPIO__HINT_ENABLE) return 1;
  if (mode != LMPIO__HINT_AUTOMATIC || c->cp->one_node || allcontig) return 0;
  if (len_sum > c->gmax - c->gmin) return 1; /* more bytes than the span: some overlap */
  if (g) return interleaved(g, size);
  /* (above the agreement's gathering size: the ranges now) */
  long long mine[G_N] = {c->start, c->end}, *all = malloc(sizeof(long long) * G_N * (size_t)size);
  *rc = lmpio__agree(c->cp->comm, all ? MPI_SUCCESS : lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory"), 0, c->call);
  if (*rc == MPI_SUCCESS && MPI_Allgather(mine, G_N, MPI_LONG_LONG, all, G_N, MPI_LONG_LONG, c->cp->comm) != MPI_SUCCESS)
    *rc = lmpio__err(MPI_ERR_OTHER, c->call, "MPI_Allgather failed");
  int il = *rc == MPI_SUCCESS && interleaved(all, size);
  free(all);
  return il;
}

/* Prepares my side: memory stream, data range, file range (and for a
 * two-phase read, the data before end of file).  Fills c. */
static int setup(coll *c, MPI_Offset pos, MPI_Count count, MPI_Datatype type, const lmpio__tm_node *m,
                 int twophase_read) {
  int rc = MPI_SUCCESS;
  if (m) lmpio__typemap_retain(m); /* (the entry's lookup) */
  else rc = lmpio__typemap_get(type, &m, c->call);
  if (rc != MPI_SUCCESS) {
    c->m = NULL;
    return rc;
  }
  c->m = m;
  if (lmpio__stream_init(&c->ms, c->buf, c->m, count) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_NO_MEM, c->call, "out of memory");
  c->pos = pos;
  c->total = c->ms.total;
  c->memcontig = c->ms.contig;
  if ((rc = my_range(c)) != MPI_SUCCESS) return rc;
  /* Reads: the data past end of file, as the file is now, is not touched,
   * so data that may reach it is received into a staging buffer. */
  c->valid = c->total;
  if (c->dir == LMPIO__READ && c->total > 0 && twophase_read) {
    MPI_Offset size;
    if (c->plan.drv->size(c->plan.fd, &size) < 0) return lmpio__os_error(errno, c->call, "cannot stat", c->plan.path);
    if (c->end > size) {
      MPI_Offset v = lmpio__view_data_before(&c->view, size) - c->pos;
      c->valid = v < 0 ? 0 : v < c->total ? v : c->total;
    }
  }
  c->direct = c->memcontig && c->total <= INT_MAX && c->valid == c->total;
  return MPI_SUCCESS;
}

/* Two-phase, from the file domains on; returns this rank's outcome. */
static int two_phase(coll *c, int rc) {
  file_domains(c, c->plan.hints.cb_buffer_size);
  take_kept(c);
  /* A rank that fails says so in the next round's counts; all stop there. */
  MPI_Offset next = 0;
  for (MPI_Offset r = 0; r < c->rounds; r = next)
    if (round_trip(c, r, &rc, &next) || next <= r) break;
  return rc;
}

/* Whether every rank moves its own data, decided by each rank alone from
 * what is the same on every rank (hints, view, atomicity, where the ranks
 * run): then the call needs no exchange before the transfer.  Automatic:
 * on one node every rank shares one page cache, so moving the data through
 * aggregators costs an extra copy and saves nothing (measured here:
 * independent sieving was faster for every strided write). */
static int independent_here(const lmpio__coll_plan *cp, int eligible) {
  int mode = cp->plan.dir == LMPIO__WRITE ? cp->plan.hints.cb_write : cp->plan.hints.cb_read;
  return !eligible || mode == LMPIO__HINT_DISABLE || (mode == LMPIO__HINT_AUTOMATIC && cp->one_node);
}

/* This rank moves its own data (n etypes from data byte pos) through cp's
 * plan.  *fbytes: the file data bytes filled. */
static int own_part(const lmpio__coll_plan *cp, MPI_Offset pos, MPI_Offset n, void *buf, MPI_Count count,
                    MPI_Datatype type, const lmpio__tm_node *m, MPI_Count *bytes, MPI_Offset *fbytes,
                    const char *call) {
  *bytes = 0;
  *fbytes = 0;
  if (n == 0) return MPI_SUCCESS;
  lmpio__view v;
  lmpio__plan_view(&cp->plan, &v);
  int rc = lmpio__check_range(&v, pos / v.esize, n, &pos, call);
  if (rc != MPI_SUCCESS) return rc;
  return lmpio__transfer_node(&cp->plan, pos, buf, count, type, m, bytes, fbytes, call);
}

/* Each rank its own part, then the call's one exchange: which call every
 * rank is in, and the outcome.  A rank whose own arguments failed moves
 * nothing; the others have moved theirs when they learn of it, and every
 * rank returns the failing rank's class and message. */
static int independent(const lmpio__coll_plan *cp, int rc, MPI_Offset pos, MPI_Offset n, void *buf,
                       MPI_Count count, MPI_Datatype type, const lmpio__tm_node *m, MPI_Count *bytes,
                       MPI_Offset *fbytes, const char *call) {
  if (rc == MPI_SUCCESS) rc = own_part(cp, pos, n, buf, count, type, m, bytes, fbytes, call);
  /* lmpio_collective_outcome=local (the same on every rank): no exchange,
   * each rank its own outcome, as OMPIO.  (A binding's stand-in for a
   * failed call meets no one either: its rank alone fails.) */
  if (cp->plan.hints.collective_outcome == LMPIO__OUTCOME_LOCAL) {
    int refused = lmpio__agree_refuses(call); /* (from a conversion function, as when agreed) */
    if (refused != MPI_SUCCESS) rc = refused;
    else (void)lmpio__take_standin();
    if (rc != MPI_SUCCESS) *bytes = *fbytes = 0;
    return rc;
  }
  rc = lmpio__agree_first_of(cp->comm, cp->rank, cp->size, rc, NULL, call);
  if (rc != MPI_SUCCESS) *bytes = *fbytes = 0;
  return rc;
}

int lmpio__coll_transfer(const lmpio__coll_plan *cp, int rc, MPI_Offset pos, MPI_Offset n, void *buf,
                         MPI_Count count, MPI_Datatype type, const lmpio__tm_node *m, MPI_Count *bytes,
                         MPI_Offset *fbytes, const char *call) {
  *bytes = 0;
  *fbytes = 0;
  int size = cp->size, dir = cp->plan.dir;
  /* Two-phase needs a native view, no atomic mode and a filetype that does
   * not overlap itself (the same on every rank: they are set collectively,
   * and an overlapping filetype only on a read-only file). */
  int eligible = cp->plan.rep == NULL && !cp->plan.atomic && cp->plan.ft->monotone;
  if (independent_here(cp, eligible)) return independent(cp, rc, pos, n, buf, count, type, m, bytes, fbytes, call);

  coll c;
  memset(&c, 0, sizeof c);
  c.cp = cp;
  c.dir = dir;
  c.call = call;
  c.buf = buf;
  c.memcontig = 1;
  c.plan = cp->plan; /* (its filetype is cp's: not released here) */
  c.plan.aggregator = 1; /* its windows move every rank's data (stats.h) */
  lmpio__plan_view(&cp->plan, &c.view);
  int nagg = size < LMPIO__MAX_AGGREGATORS ? size : LMPIO__MAX_AGGREGATORS;
  c.scnt = malloc(sizeof(long long) * 6 * (size_t)size);
  c.sdsp = malloc(sizeof(int) * 4 * (size_t)size);
  c.d0 = malloc(sizeof(MPI_Offset) * (size_t)nagg);
  long long *g = lmpio__agree_gathers(size) ? malloc(sizeof(long long) * G_N * (size_t)size) : NULL;
  if (rc == MPI_SUCCESS && (!c.scnt || !c.sdsp || !c.d0 || (!g && lmpio__agree_gathers(size))))
    rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  /* A read across nodes, when the handle's last one went the independent
   * way (or none yet), goes so again at once: its one exchange then carries
   * the outcome with the ranges, which decide the next read's way.  Reading
   * has no effect that another rank's bad arguments must prevent (writes
   * wait for the agreement), and two-phase is never needed for the right
   * data, only for speed: a guess that should have been two-phase costs one
   * slower call.  (On one node reads always go so: independent_here.) */
  int guess = dir == LMPIO__READ && !*cp->way && cp->plan.hints.cb_read == LMPIO__HINT_AUTOMATIC &&
              lmpio__agree_gathers(size);
  if (rc == MPI_SUCCESS && eligible) rc = setup(&c, pos, count, type, m, dir == LMPIO__READ && !guess);
  if (guess && rc == MPI_SUCCESS) rc = own_part(cp, pos, n, buf, count, type, m, bytes, fbytes, call);

  /* 1. Everyone's range and argument check: the call's first agreement. */
  int nonempty = rc == MPI_SUCCESS && c.end > c.start;
  long long mine[G_N] = {c.start, c.end};
  long long red[R_N] = {!eligible, nonempty && c.total != c.end - c.start, nonempty, nonempty ? c.end : 0,
                        nonempty ? -c.start : LLONG_MIN};
  long long len_sum = nonempty ? c.end - c.start : 0;
  lmpio__first f = {.max = red, .nmax = R_N, .sum = &len_sum, .nsum = 1, .mine = mine, .nmine = G_N, .table = g};
  rc = lmpio__agree_first_of(cp->comm, cp->rank, cp->size, rc, &f, call);
  /* 2. Two-phase or independent: the same answer on every rank. */
  int twophase = rc == MPI_SUCCESS && !red[R_INELIGIBLE] && choose(&c, red, len_sum, f.gathered ? g : NULL, size, &rc);
  free(g);
  if (rc == MPI_SUCCESS) *cp->way = twophase; /* (every rank: the same exchange decided it) */
  if (rc != MPI_SUCCESS || guess) { /* the failing ranks' class and message, on every rank; or done */
    if (rc != MPI_SUCCESS) *bytes = *fbytes = 0;
    coll_free(&c);
    return rc;
  }
  c.rcnt = c.scnt + 3 * size;
  c.rdsp = c.sdsp + size;
  c.cnt2 = c.sdsp + 2 * size; /* and 3 * size: scratch counts */
  if (!twophase) { /* (the ranks span nodes, and their data do not interleave) */
    rc = own_part(cp, pos, n, buf, count, type, m, bytes, fbytes, call);
    coll_free(&c);
    return lmpio__agree(cp->comm, rc, 0, call);
  }

  /* 3.-5. Domains, then the rounds; 6. the outcome, agreed. */
  rc = lmpio__agree(cp->comm, two_phase(&c, rc), 0, call);
  if (rc == MPI_SUCCESS) *bytes = *fbytes = dir == LMPIO__READ ? c.valid : c.total;
  lmpio__stats_path(cp->plan.stats, LMPIO__P_TWOPHASE, dir, *bytes);
  coll_free(&c);
  return rc;
}

int lmpio__coll_position(lmpio_file fh, MPI_Offset etpos, MPI_Offset *pos, const char *call) {
  if (lmpio__mul_ok(etpos, fh->view.esize, pos)) return MPI_SUCCESS;
  return lmpio__err(MPI_ERR_ARG, call, "offset %lld (etypes of %lld bytes) overflows a 64-bit file position",
                    (long long)etpos, (long long)fh->view.esize);
}

/* The entry: checks, the pointer and the status, on the caller's thread;
 * the transfer on the handle's collective plan (fh->plans). */
int lmpio__collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                      MPI_Datatype type, int dir, MPI_Status *status, int pre_rc, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  /* A stream: the requests made before are served (a regular file does
   * not enter the stream's code at all). */
  if (fh->drv->id == LMPIO__FS_STREAM) lmpio__pipe_enter(fh, call);
  int rc = lmpio__pending(pre_rc, call);
  /* The standard: no other collective access while a split collective is active. */
  if (rc == MPI_SUCCESS && fh->split.kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  if (rc == MPI_SUCCESS)
    rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc == MPI_SUCCESS && !use_fp && offset < 0)
    rc = lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  /* A count that is not whole etypes fails this rank's part (and, through
   * the call's exchange, every rank's call). */
  MPI_Offset n = 0, pos = 0;
  const lmpio__tm_node *m = NULL; /* the type's layout in the file: looked up once */
  if (rc == MPI_SUCCESS) rc = lmpio__etypes_held(fh, count, type, &n, &m, call);
  if (rc == MPI_SUCCESS) rc = lmpio__coll_position(fh, use_fp ? fh->fp : offset, &pos, call);
  lmpio__hold_all(fh);
  MPI_Count bytes = 0;
  MPI_Offset fbytes = 0;
  lmpio__coll_plan own;
  const lmpio__coll_plan *cp = lmpio__coll_plan_of(fh, dir, &own);
  rc = lmpio__coll_transfer(cp, rc, pos, n, buf, count, type, fh->view.rep ? NULL : m, &bytes, &fbytes, call);
  if (m) lmpio__typemap_release(m);
  if (cp == &own) lmpio__coll_plan_free(&own);
  if (use_fp) fh->fp += fbytes / fh->view.esize;
  lmpio__release(fh);
  lmpio__set_status(status, bytes);
  return rc;
}
