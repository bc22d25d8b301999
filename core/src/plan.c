/* The plan: data bytes [pos, end) of a view -> windows of file pieces, each
 * sieved (one transfer of the window's span plus copies) or direct (one
 * transfer per piece), with the byte-range lock it needs.  One generator
 * serves the independent calls, the conversion driver (through the engine)
 * and two-phase's "my pieces" (decide == 0, unbounded windows).
 *
 * Three shapes of view:
 *  - CONTIG: the tiled filetype is one run of data: one piece.
 *  - STRIDED: a tile is one run of equally spaced blocks of equal length (a
 *    vector, a block resized to a larger extent, the rows of a subarray):
 *    block k of the view lies at
 *        first + (k / c) * E + (k % c) * s     (c blocks per tile, extent E)
 *    or, when the tiles continue the spacing (c == 0), at first + k * s, so a
 *    window is counted, not walked: a head block, a strided vector, a tail.
 *  - WALK: anything else, walked segment by segment with a typemap cursor;
 *    pieces that continue a regular pattern merge into strided vectors. */
#include "path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_CONTIG, KIND_STRIDED, KIND_WALK };

/* Segments at least this long on average are written one by one, not sieved. */
#define DIRECT_SEGMENT_MIN 65536
/* A window is sieved when its hole bytes are fewer than this many per
 * segment: reading (and for writes writing back) that much more costs about
 * what the system call per segment saved does.  Reads, measured on /dev/shm:
 * 4 KiB blocks with 4 KiB holes read 1.7x faster block by block, 64-byte
 * blocks much faster sieved.  Writes cost far more per call on a disk file
 * system, where concurrent small pwrites queue on the inode lock: 4 KiB
 * blocks interleaved over 2 ranks wrote at 750 MB/s block by block and 4900
 * MB/s sieved on ext4 (tmpfs: 3450 and 4550; but with 12 KiB holes, at 4
 * ranks, tmpfs wrote 15% slower sieved: its system calls are cheap, so there
 * only windows that are at least half data, or have small holes, are sieved). */
#define SIEVE_READ_HOLES_PER_SEGMENT 2048
#define SIEVE_WRITE_HOLES_PER_SEGMENT 65536
#define SIEVE_WRITE_HOLES_PER_SEGMENT_IN_MEMORY 8192
#define MAX_WINDOW_SEGMENTS 8192
/* Fewer blocks per tile than this, with tiles that break the spacing, go
 * through the general walk. */
#define STRIDED_MIN_GROUP 16
/* Windows moved block by block need no buffer, only a lock: they may span
 * this much whatever the sieve buffer size. */
#define DIRECT_WINDOW_MAX 4194304
/* The sieve window: the hint, but at most what stays in a core's cache, so
 * that the copy out of the buffer finds what the system call put there
 * (256 KiB reads strided 64-byte blocks 1.2x faster than the 4 MiB default
 * of ind_rd_buffer_size). */
#define WINDOW_MAX 262144

void lmpio__plan_free(lmpio__plan *p) {
  if (p->ft) lmpio__typemap_release(p->ft);
  p->ft = NULL;
}

void lmpio__plan_view(const lmpio__plan *p, lmpio__view *v) {
  v->datarep[0] = '\0'; /* (field by field: the blocking collectives' every call makes one) */
  v->eextent = 0;
  v->disp = p->disp;
  v->etype = v->filetype = MPI_DATATYPE_NULL;
  v->rep = p->rep;
  v->ft = p->ft;
  v->esize = p->esize;
  v->contiguous = p->contiguous;
  v->empty = p->ft->size == 0;
  v->any_holes = p->lock_direct;
}

void lmpio__coll_plan_free(lmpio__coll_plan *cp) { lmpio__plan_free(&cp->plan); }

MPI_Count lmpio__plan_buffer(const lmpio__plan *p) {
  MPI_Offset b = p->dir == LMPIO__READ ? p->hints.ind_rd_buffer_size : p->hints.ind_wr_buffer_size;
  if (b > WINDOW_MAX) b = WINDOW_MAX;
  return b > 0 ? b : 1;
}

/* ---- windows ------------------------------------------------------------ */

void lmpio__window_free(lmpio__window *w) {
  free(w->v);
  w->v = NULL;
  w->n = w->cap = 0;
}

int lmpio__window_push(lmpio__window *w, MPI_Offset off, MPI_Offset len, MPI_Offset stride,
                       MPI_Offset count) {
  if (count == 1 && w->n > 0) { /* continue the last vector where the pattern allows */
    lmpio__vec *l = &w->v[w->n - 1];
    if (l->count == 1 && off == l->off + l->len) { l->len += len; return MPI_SUCCESS; }
    if (l->count == 1 && len == l->len && off > l->off + l->len) {
      l->stride = off - l->off;
      l->count = 2;
      return MPI_SUCCESS;
    }
    if (l->count >= 2 && len == l->len && off == l->off + l->count * l->stride) {
      l->count++;
      return MPI_SUCCESS;
    }
  }
  if (w->n == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 16;
    lmpio__vec *v = realloc(w->v, cap * sizeof *v);
    if (!v) return MPI_ERR_NO_MEM;
    w->v = v;
    w->cap = cap;
  }
  w->v[w->n++] = (lmpio__vec){off, len, stride, count};
  return MPI_SUCCESS;
}

/* ---- the iterator ------------------------------------------------------- */

static int view_strided(const lmpio__plan *p, lmpio__plan_iter *it) {
  const lmpio__tm_node *ft = p->ft;
  if (ft->nruns != 1) return 0;
  const lmpio__tm_run *r = &ft->runs[0];
  if (r->kind == LMPIO__RUN_NEST) return 0;
  it->first = r->disp + r->lo;
  it->extent = ft->extent;
  if (r->kind == LMPIO__RUN_FLAT || r->count == 1) { /* one block per tile */
    it->len = r->kind == LMPIO__RUN_FLAT ? r->count * r->esize : r->esize;
    it->stride = ft->extent;
    it->c = 0;
  } else {
    it->len = r->esize;
    it->stride = r->stride;
    it->c = (MPI_Count)ft->extent == r->count * (MPI_Count)r->stride ? 0 : r->count;
    if (it->c && it->c < STRIDED_MIN_GROUP) return 0;
  }
  return it->len > 0 && it->stride > it->len;
}

int lmpio__plan_start(lmpio__plan_iter *it, const lmpio__plan *p, MPI_Offset pos, MPI_Offset end) {
  memset(it, 0, sizeof *it);
  it->p = p;
  it->pos = pos;
  it->end = end;
  if (pos >= end) {
    it->kind = KIND_CONTIG;
    return MPI_SUCCESS;
  }
  if (p->contiguous) {
    it->kind = KIND_CONTIG;
  } else if (view_strided(p, it)) {
    it->kind = KIND_STRIDED;
    it->k = pos / it->len;
    it->koff = pos % it->len;
  } else {
    it->kind = KIND_WALK;
    if (lmpio__cursor_init(&it->fc, p->ft, p->ft->extent) != MPI_SUCCESS) return MPI_ERR_NO_MEM;
    lmpio__cursor_seek(&it->fc, pos);
  }
  return MPI_SUCCESS;
}

void lmpio__plan_stop(lmpio__plan_iter *it) {
  if (it->kind == KIND_WALK) lmpio__cursor_free(&it->fc);
  it->kind = KIND_CONTIG;
}

/* Whether a window of nseg segments holding wdata data bytes over span file
 * bytes is sieved or moved segment by segment.  Sieving pays for the hole
 * bytes (read, and for writes read and written back under an exclusive
 * lock); moving segments pays one system call per segment.  The hints
 * romio_ds_read / romio_ds_write force either. */
static int choose_sieve(const lmpio__plan *p, MPI_Count nseg, MPI_Count wdata, MPI_Count span) {
  if (nseg <= 1) return 0;
  int ds = p->dir == LMPIO__READ ? p->hints.ds_read : p->hints.ds_write;
  if (p->dir == LMPIO__WRITE && wdata < span && (!p->fd_readable || !p->drv->sieve_writes)) return 0;
  if (ds != LMPIO__HINT_AUTOMATIC) return ds == LMPIO__HINT_ENABLE;
  MPI_Count holes = span - wdata;
  if (p->dir == LMPIO__READ) return holes < nseg * SIEVE_READ_HOLES_PER_SEGMENT;
  if (wdata / nseg >= DIRECT_SEGMENT_MIN) return 0;
  if (p->fd_in_memory) /* cheap calls: sieve only what is mostly data */
    return holes <= wdata || holes < nseg * SIEVE_WRITE_HOLES_PER_SEGMENT_IN_MEMORY;
  return holes < nseg * SIEVE_WRITE_HOLES_PER_SEGMENT;
}

static MPI_Offset strided_off(const lmpio__plan_iter *it, MPI_Offset k) {
  if (!it->c) return it->first + k * it->stride;
  return it->first + (k / it->c) * it->extent + (k % it->c) * it->stride;
}

/* Blocks in the window that starts at byte off of block k: those that end
 * within bound bytes of its start (at least one), no more than the data
 * left, and within one group. */
static MPI_Offset window_blocks(const lmpio__plan_iter *it, MPI_Offset remaining, MPI_Offset bound) {
  const MPI_Offset L = it->len, off = it->koff;
  MPI_Offset len0 = L - off < remaining ? L - off : remaining, n = 1;
  if (len0 < remaining && L - off < bound) {
    MPI_Offset more = (bound - (L - off)) / it->stride;
    MPI_Offset bydata = (remaining - len0 + L - 1) / L;
    if (more > bydata) more = bydata;
    if (it->c && more > it->c - 1 - it->k % it->c) more = it->c - 1 - it->k % it->c;
    n += more;
  }
  return n;
}

static int strided_window(lmpio__plan_iter *it, MPI_Offset bound, int decide, lmpio__window *w) {
  const lmpio__plan *p = it->p;
  const MPI_Offset L = it->len, S = it->stride, off = it->koff, remaining = it->end - it->pos;
  MPI_Offset o0 = p->disp + strided_off(it, it->k) + off;
  MPI_Offset len0 = L - off < remaining ? L - off : remaining;
  MPI_Offset n = window_blocks(it, remaining, bound), lastlen, wdata, span;
  for (int pass = 0; pass < 2; pass++) {
    if (n == 1) {
      lastlen = wdata = span = len0;
    } else {
      lastlen = remaining - len0 - (n - 2) * L;
      if (lastlen > L) lastlen = L;
      wdata = len0 + (n - 2) * L + lastlen;
      span = (n - 1) * S - off + lastlen;
    }
    w->sieve = decide && choose_sieve(p, n, wdata, span);
    /* No buffer needed block by block: lock fewer, longer windows. */
    if (pass == 1 || !decide || w->sieve || bound >= DIRECT_WINDOW_MAX) break;
    n = window_blocks(it, remaining, DIRECT_WINDOW_MAX);
  }
  int rc = lmpio__window_push(w, o0, len0, len0, 1);
  if (rc == MPI_SUCCESS && n > 2) rc = lmpio__window_push(w, o0 - off + S, L, S, n - 2);
  if (rc == MPI_SUCCESS && n > 1) rc = lmpio__window_push(w, o0 - off + (n - 1) * S, lastlen, lastlen, 1);
  if (rc != MPI_SUCCESS) return rc;
  it->segs = n;
  w->lo = o0;
  w->hi = o0 + span;
  w->data = wdata;
  if (n == 1) {
    it->koff += len0;
  } else {
    it->k += n - 1;
    it->koff = lastlen;
  }
  if (it->koff == L) {
    it->k++;
    it->koff = 0;
  }
  it->pos += wdata;
  return MPI_SUCCESS;
}

static int walk_window(lmpio__plan_iter *it, MPI_Offset bound, lmpio__window *w) {
  const lmpio__plan *p = it->p;
  MPI_Offset remaining = it->end - it->pos;
  MPI_Aint off;
  MPI_Count len = lmpio__cursor_next(&it->fc, remaining, &off), wdata = len;
  MPI_Aint ws = off, we = off + (MPI_Aint)len, wlo = off;
  int rc = lmpio__window_push(w, p->disp + off, len, len, 1);
  MPI_Offset nseg = 1;
  if (len < bound) {
    while (rc == MPI_SUCCESS && wdata < remaining && nseg < MAX_WINDOW_SEGMENTS) {
      MPI_Aint o = lmpio__cursor_peek(&it->fc);
      if (o - ws >= bound) break;
      MPI_Count room = bound - (o - ws);
      MPI_Count want = remaining - wdata < room ? remaining - wdata : room;
      len = lmpio__cursor_next(&it->fc, want, &off);
      rc = lmpio__window_push(w, p->disp + off, len, len, 1);
      wdata += len;
      if (off + (MPI_Aint)len > we) we = off + (MPI_Aint)len;
      if (off < wlo) wlo = off; /* a filetype that overlaps itself (read-only files) */
      nseg++;
    }
  }
  it->segs = nseg;
  w->lo = p->disp + wlo;
  w->hi = p->disp + we;
  w->data = wdata;
  it->pos += wdata;
  return rc;
}

int lmpio__plan_next(lmpio__plan_iter *it, MPI_Offset bound, int decide, lmpio__window *w) {
  const lmpio__plan *p = it->p;
  w->n = 0;
  w->sieve = w->fill = w->zero_eof = 0;
  w->lock = LMPIO__LOCK_NONE;
  if (it->pos >= it->end) return 0;
  int rc;
  switch (it->kind) {
  case KIND_CONTIG: {
    MPI_Offset off = p->disp + p->ft->data_lb + it->pos, len = it->end - it->pos;
    rc = lmpio__window_push(w, off, len, len, 1);
    w->lo = off;
    w->hi = off + len;
    w->data = len;
    it->segs = 1;
    it->pos = it->end;
    break;
  }
  case KIND_STRIDED:
    rc = strided_window(it, bound, decide, w);
    break;
  default:
    rc = walk_window(it, bound, w);
    if (decide) w->sieve = choose_sieve(p, it->segs, w->data, w->hi - w->lo);
    break;
  }
  if (rc != MPI_SUCCESS) return -1;
  w->fill = decide && p->dir == LMPIO__WRITE && w->sieve && w->data < w->hi - w->lo;
  if (decide && p->dir == LMPIO__WRITE && !p->atomic) {
    /* A sieved write reads, modifies and writes back bytes it does not own:
     * it always holds an exclusive lock on its window, whatever the
     * communicator (two programs may write one file).  Direct writes take a
     * shared lock, which such a sieve excludes, when some rank's view has
     * holes.  A descriptor that cannot read takes exclusive locks (F_RDLCK
     * needs read access). */
    if (w->sieve || !p->fd_readable) w->lock = w->sieve || p->lock_direct ? LMPIO__LOCK_EXCL : LMPIO__LOCK_NONE;
    else w->lock = p->lock_direct ? LMPIO__LOCK_SHARED : LMPIO__LOCK_NONE;
  }
  return 1;
}

/* ---- decisions for the whole access ------------------------------------- */

/* Calls of fewer data bytes do not pay for a mapping (engine.c says why). */
#define MAP_MIN 1048576

int lmpio__plan_may_map(const lmpio__plan *p, MPI_Offset total) {
  int wr = p->dir == LMPIO__WRITE, hint = wr ? p->hints.map_writes : p->hints.map_reads;
  return !p->contiguous && (wr ? p->drv->map_writes && p->fd_readable : p->drv->map_reads) &&
         (hint == LMPIO__HINT_ENABLE || (hint == LMPIO__HINT_AUTOMATIC && total >= MAP_MIN));
}

int lmpio__plan_needs_kept_map(const lmpio__plan *p) {
  /* (automatic writes on a disk file system: only through the kept mapping) */
  return p->dir == LMPIO__WRITE && p->hints.map_writes == LMPIO__HINT_AUTOMATIC && !p->fd_in_memory;
}

int lmpio__plan_lock_range(const lmpio__plan *p, MPI_Offset pos, MPI_Offset total, MPI_Offset *lo, MPI_Offset *hi) {
  *lo = *hi = 0;
  /* A monotone view: the first and last bytes bound the access; a
   * filetype that overlaps itself (read-only files) locks from disp on. */
  if (!p->ft->monotone) {
    *lo = p->disp;
    *hi = INT64_MAX;
  } else if (p->contiguous) {
    *lo = p->disp + p->ft->data_lb + pos;
    *hi = *lo + total;
  } else {
    lmpio__cursor c;
    if (lmpio__cursor_init(&c, p->ft, p->ft->extent) != MPI_SUCCESS) return MPI_ERR_NO_MEM;
    lmpio__cursor_seek(&c, pos);
    *lo = p->disp + lmpio__cursor_peek(&c);
    lmpio__cursor_seek(&c, pos + total - 1);
    *hi = p->disp + lmpio__cursor_peek(&c) + 1;
    lmpio__cursor_free(&c);
  }
  return MPI_SUCCESS;
}
