/* The engine: runs the windows of a plan against a memory stream.  The one
 * place where data moves between memory and the file: packing and unpacking
 * through the memory-type cursor, the sieved read-modify-write under its
 * byte-range lock, and end of file. */
#include "path.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the memory stream -------------------------------------------------- */

int lmpio__stream_cursor(lmpio__stream *s) {
  if (lmpio__cursor_init(&s->mc, s->m, s->m->extent) == MPI_SUCCESS) return MPI_SUCCESS;
  s->contig = 1;
  return MPI_ERR_NO_MEM;
}

void lmpio__stream_bytes(lmpio__stream *s, void *buf, MPI_Count n) {
  memset(s, 0, sizeof *s);
  s->buf = buf;
  s->contig = 1;
  s->total = n;
}

void lmpio__stream_uncursor(lmpio__stream *s) {
  lmpio__cursor_free(&s->mc);
  s->contig = 1;
}

void lmpio__stream_seek(lmpio__stream *s, MPI_Count pos) {
  s->done = pos;
  if (!s->contig) lmpio__cursor_seek(&s->mc, pos);
}

void lmpio__stream_copy(lmpio__stream *s, char *p, MPI_Count n, int dir) {
  if (s->contig) {
    char *mem = s->buf + s->done;
    if (dir == LMPIO__WRITE) memcpy(p, mem, (size_t)n);
    else memcpy(mem, p, (size_t)n);
    s->done += n;
    return;
  }
  s->done += n;
  while (n > 0) {
    MPI_Aint mo;
    MPI_Count ml = lmpio__cursor_next(&s->mc, n, &mo);
    if (dir == LMPIO__WRITE) memcpy(p, s->buf + mo, (size_t)ml);
    else memcpy(s->buf + mo, p, (size_t)ml);
    p += ml;
    n -= ml;
  }
}

/* n blocks of len bytes between strided memory f (stride apart) and
 * contiguous memory m; fixed lengths become single loads and stores. */
#define STRIDED_LOOP(L)                                                           \
  do {                                                                            \
    if (to_f)                                                                     \
      for (MPI_Offset i = 0; i < n; i++) memcpy(f + i * stride, m + i * (L), (L)); \
    else                                                                          \
      for (MPI_Offset i = 0; i < n; i++) memcpy(m + i * (L), f + i * stride, (L)); \
  } while (0)

static void copy_strided(char *f, MPI_Offset stride, char *m, MPI_Offset len, MPI_Offset n, int to_f) {
  switch (len) {
  case 1: STRIDED_LOOP(1); break;
  case 2: STRIDED_LOOP(2); break;
  case 4: STRIDED_LOOP(4); break;
  case 8: STRIDED_LOOP(8); break;
  case 16: STRIDED_LOOP(16); break;
  case 32: STRIDED_LOOP(32); break;
  case 64: STRIDED_LOOP(64); break;
  default: STRIDED_LOOP((size_t)len); break;
  }
}

/* Copies the first n blocks of v between the stage (holding file bytes from
 * lo) and the stream. */
static void copy_vec(lmpio__stream *s, char *stage, MPI_Offset lo, const lmpio__vec *v, MPI_Offset n,
                     int dir) {
  char *f = stage + (v->off - lo);
  if (s->contig) {
    copy_strided(f, v->stride, s->buf + s->done, v->len, n, dir == LMPIO__WRITE);
    s->done += n * v->len;
    return;
  }
  for (MPI_Offset j = 0; j < n; j++) lmpio__stream_copy(s, f + j * v->stride, v->len, dir);
}

/* ---- system calls --------------------------------------------------------- */

/* A pread or pwrite of the plan's file, counted in v (this thread's
 * counters of the plan's handle, lmpio__stats_counters: a caller that
 * counts more finds them once). */
static int io_counted(const lmpio__plan *p, long long *v, int dir, void *mem, MPI_Offset len, MPI_Offset off,
                      MPI_Offset *got, const char *call) {
  unsigned gen = 0;
  /* (on tmpfs nothing is settled and seen is 0: no call) */
  MPI_Offset seen = dir == LMPIO__WRITE && !p->fd_in_memory ? lmpio__filemap_seen(p->map, &gen) : 0;
  /* (timed on a handle whose calls are: two clock reads, about 30 ns of a
   * 0.4 us 4 KiB pread) */
  long long t0 = lmpio__stats_start(p->stats);
  long long n = dir == LMPIO__READ ? p->drv->pread(p->fd, mem, len, off) : p->drv->pwrite(p->fd, mem, len, off);
  if (t0)
    lmpio__stats_bump(v, dir == LMPIO__READ ? LMPIO__S_POSIX_READ_TIME : LMPIO__S_POSIX_WRITE_TIME,
                      lmpio__stats_now() - t0);
  lmpio__stats_bump(v, dir == LMPIO__READ ? LMPIO__S_POSIX_READS : LMPIO__S_POSIX_WRITES, 1);
  if (n > 0)
    lmpio__stats_bump(v, dir == LMPIO__READ ? LMPIO__S_POSIX_BYTES_READ : LMPIO__S_POSIX_BYTES_WRITTEN, n);
  if (n < 0 && errno == ESTALE)
    return lmpio__err(MPI_ERR_IO, call,
                      "pread of \"%s\" at offset %lld came back short of the size the file server gives, twice: "
                      "the client's cache (driver %s) cannot be refreshed; turn its caches off, or open the file "
                      "with the hint lmpio_fs_driver naming a driver that fits",
                      p->path, (long long)off, p->drv->name);
  if (n < 0) return lmpio__os_error(errno, call, dir == LMPIO__READ ? "pread of" : "pwrite to", p->path);
  if (n > 0 && dir == LMPIO__READ) lmpio__filemap_saw(p->map, off + n);
  else if (n > 0) lmpio__filemap_wrote(p->map, gen, seen, off + n);
  *got = n;
  return MPI_SUCCESS;
}

static int io(const lmpio__plan *p, int dir, void *mem, MPI_Offset len, MPI_Offset off, MPI_Offset *got,
              const char *call) {
  return io_counted(p, lmpio__stats_counters(p->stats), dir, mem, len, off, got, call);
}

static int stage(lmpio__engine *e, MPI_Offset size, const char *call) {
  if ((MPI_Offset)e->size >= size) return MPI_SUCCESS;
  free(e->stage);
  e->stage = malloc((size_t)size);
  e->size = e->stage ? (size_t)size : 0;
  if (!e->stage) return lmpio__err(MPI_ERR_NO_MEM, call, "cannot allocate a %lld-byte buffer", (long long)size);
  return MPI_SUCCESS;
}

void lmpio__engine_free(lmpio__engine *e) {
  free(e->stage);
  e->stage = NULL;
  e->size = 0;
}

/* ---- windows --------------------------------------------------------------- */

/* One piece of len bytes at off, directly (staged in chunks when memory is
 * not contiguous).  From contiguous memory, data accessed again goes
 * through the handle's mapping of the file (filemap.c) when it can: two
 * ranks each writing and reading back their own 128 KiB of a tmpfs file,
 * meeting after each, took 16.9 us a step by pwrite and pread (the writes
 * take turns on the inode's lock) and 6.3 through a mapping; on ext4 14.4
 * and 6.3.  Not in atomic mode, whose locks pair with system calls. */
static int direct_piece(const lmpio__plan *p, lmpio__engine *e, lmpio__stream *s, MPI_Offset off,
                        MPI_Offset len, int *eof, const char *call) {
  MPI_Offset got = 0;
  if (s->contig && !p->atomic &&
      lmpio__filemap_copy(p->map, p->dir, p->dir == LMPIO__READ ? p->hints.map_reads : p->hints.map_writes,
                          s->buf + s->done, len, off)) {
    s->done += len;
    return MPI_SUCCESS;
  }
  if (s->contig) {
    int rc = io(p, p->dir, s->buf + s->done, len, off, &got, call);
    if (rc == MPI_SUCCESS) {
      s->done += got;
      if (got < len) *eof = 1;
    }
    return rc;
  }
  MPI_Offset chunk = lmpio__plan_buffer(p);
  if (chunk > len) chunk = len;
  int rc = stage(e, chunk, call);
  for (MPI_Offset at = 0; rc == MPI_SUCCESS && at < len; at += chunk) {
    MPI_Offset n = len - at < chunk ? len - at : chunk;
    if (p->dir == LMPIO__WRITE) {
      lmpio__stream_copy(s, e->stage, n, LMPIO__WRITE);
      rc = io(p, LMPIO__WRITE, e->stage, n, off + at, &got, call);
    } else {
      rc = io(p, LMPIO__READ, e->stage, n, off + at, &got, call);
      if (rc == MPI_SUCCESS) lmpio__stream_copy(s, e->stage, got, LMPIO__READ);
      if (rc == MPI_SUCCESS && got < n) {
        *eof = 1;
        break;
      }
    }
  }
  return rc;
}

/* A sieved read: what lies in [lo, lo + got) reaches the stream, up to the
 * first piece end of file cuts. */
static void sieve_copy_out(lmpio__stream *s, char *stage, const lmpio__window *w, MPI_Offset got, int *eof) {
  for (size_t i = 0; i < w->n; i++) {
    const lmpio__vec *v = &w->v[i];
    MPI_Offset end = v->off - w->lo + (v->count - 1) * v->stride + v->len;
    if (end <= got) {
      copy_vec(s, stage, w->lo, v, v->count, LMPIO__READ);
      continue;
    }
    for (MPI_Offset j = 0; j < v->count; j++) { /* end of file inside this vector */
      MPI_Offset at = v->off - w->lo + j * v->stride;
      MPI_Offset avail = got - at < v->len ? got - at : v->len;
      if (avail > 0) lmpio__stream_copy(s, stage + at, avail, LMPIO__READ);
      if (avail < v->len) break;
    }
    *eof = 1;
    return;
  }
}

/* A byte-range lock, counted with the time it waited. */
static int lock(const lmpio__plan *p, int excl, MPI_Offset lo, MPI_Offset len) {
  long long t0 = lmpio__stats_now();
  int r = p->drv->lock(p->fd, excl, lo, len);
  lmpio__stats_add(p->stats, LMPIO__S_LOCK_TIME, lmpio__stats_now() - t0);
  lmpio__stats_add(p->stats, LMPIO__S_LOCKS, 1);
  return r;
}

/* ---- mapped reads and writes ---------------------------------------------- */

/* Strided reads of local files copy their pieces straight out of a mapping
 * of the window: each data byte is copied once, with no system call per
 * piece and no hole bytes copied (pread moves every piece, or the whole
 * window with its holes, through a copy of the kernel's).  Measured at 2
 * ranks, 4 KiB blocks: ext4 page cache 0.5 -> 0.95 of plain pread's
 * bandwidth, tmpfs 0.75 -> 0.85.
 *
 * Writes that the plan would sieve store their pieces into a writable
 * mapping of the window instead: the holes are neither read nor written
 * back, so the window needs only the lock a direct write takes (shared,
 * against other programs' sieves), not the exclusive one that makes ranks
 * writing interleaved blocks take turns.  Measured at 2 ranks writing
 * interleaved blocks on tmpfs (CPU time per call): 8- and 64-byte blocks
 * 1.4-1.7x the read-modify-write's bandwidth, 4 KiB blocks 2x.  On ext4
 * each page's first write through a mapping is a journaled fault (again
 * after every writeback): a mapping per window paid it every call and wrote
 * 4 KiB blocks 3x slower than read-modify-write, so on disk file systems
 * writes use only the handle's kept mapping (a first write there: 4 KiB
 * blocks 8-10.7 GB/s against 1.8-5.4 sieved; again: 19.5 against 5.1),
 * and only into bytes a pwrite of the handle settled (filemap.c: another
 * rank's extending write could wipe the stores), so a call's first window
 * of a file not yet written through the handle is sieved.
 *
 * Both for calls of at least MAP_MIN data bytes (plan.c: a smaller one does
 * not pay for the mapping), in windows of up to MAP_WINDOW file bytes; a window
 * that reaches past the size the file had at the start of the call, or
 * cannot be mapped, goes the usual way. */
#define MAP_WINDOW 4194304

typedef struct {
  lmpio__stream *s;
  char *at;
  const lmpio__window *w;
  int dir, rank, size;
} map_copy;

/* Stores into the mapping of pieces [k0, k1) of window w (counted across
 * its vectors) from contiguous memory m, which holds all of w's pieces. */
static void store_pieces(char *at, const lmpio__window *w, const char *m, MPI_Offset k0, MPI_Offset k1) {
  MPI_Offset k = 0;
  for (size_t i = 0; i < w->n && k < k1; i++) {
    const lmpio__vec *v = &w->v[i];
    MPI_Offset a = k0 > k ? k0 - k : 0, b = k1 - k < v->count ? k1 - k : v->count;
    if (a < b)
      copy_strided(at + (v->off - w->lo) + a * v->stride, v->stride, (char *)m + a * v->len, v->len, b - a, 1);
    m += v->count * v->len;
    k += v->count;
  }
}

/* Ranks that store interleaved pieces at the same time fight over the cache
 * lines they share (8-byte blocks interleaved over 2 processes, a mapping
 * of a tmpfs file: 7.5-8.7 GB/s a process when both store from the start,
 * 14.7 when the second starts halfway, as fast as one alone).  So rank r of
 * size starts r/size of the way through the window's pieces and wraps
 * around: ranks running alongside stay apart.  The pieces of a write do
 * not overlap, so their order is free.  Not for pieces of a cache line or
 * more, which share a line with another rank's only at their ends: there,
 * storing together moves each line once from core to core, and starting
 * apart measured slower (64-byte blocks: 8.5-10.9 against 10.9-11.4 GB/s).
 * Reads keep their order: ranks reading the same lines together share them. */
static void store_window(lmpio__stream *s, char *at, const lmpio__window *w, int rank, int size) {
  MPI_Offset pieces = 0, bytes = 0;
  for (size_t i = 0; i < w->n; i++) {
    pieces += w->v[i].count;
    bytes += w->v[i].count * w->v[i].len;
  }
  if (!s->contig || size < 2 || bytes >= 64 * pieces) {
    for (size_t i = 0; i < w->n; i++) copy_vec(s, at, w->lo, &w->v[i], w->v[i].count, LMPIO__WRITE);
    return;
  }
  /* (a window's pieces are at most its span's bytes: no overflow) */
  MPI_Offset k0 = pieces / size * rank + pieces % size * rank / size;
  store_pieces(at, w, s->buf + s->done, k0, pieces);
  store_pieces(at, w, s->buf + s->done, 0, k0);
  s->done += bytes;
}

static void map_copy_run(void *arg) {
  map_copy *m = arg;
  int eof = 0;
  if (m->dir == LMPIO__READ) {
    sieve_copy_out(m->s, m->at, m->w, m->w->hi - m->w->lo, &eof);
    return;
  }
  store_window(m->s, m->at, m->w, m->rank, m->size);
}

/* Whether window w went through a mapping (then *rc is its outcome): the
 * handle's mapping of the whole file (filemap.c) where it has one, else one
 * of the window.  The window's lock comes before the mapping is held and
 * goes after it is let go: a sieved window takes its lock and then tells
 * the mapping what its pread saw, and the other order deadlocks with it (a
 * collective job of the handle beside the caller's independent call).  A
 * SIGBUS in the copy (the file cut short under the mapping, an I/O error,
 * or a disk file system out of space or quota in a write fault) fails a
 * read with MPI_ERR_IO; a write is done again by system calls (0: the usual
 * windows), whose error, if any, is the one that says what happened. */
static int map_window(const lmpio__plan *p, const lmpio__window *w, MPI_Offset size, lmpio__stream *s, int *rc,
                      const char *call) {
  int wr = p->dir == LMPIO__WRITE;
  if (w->hi > size || (w->n == 1 && w->v[0].count == 1) || (wr && !w->sieve)) return 0;
  /* (the lock of a direct write: none in atomic mode, which locked the call,
   * nor when the handle's gate lets it go without) */
  int lk = w->lock == LMPIO__LOCK_NONE || !p->lock_direct ? LMPIO__LOCK_NONE : LMPIO__LOCK_SHARED;
  int gated = lk != LMPIO__LOCK_NONE && lmpio__gate_direct_begin(p->gate);
  if (gated) lk = LMPIO__LOCK_NONE;
  if (lk != LMPIO__LOCK_NONE && lock(p, 0, w->lo, w->hi - w->lo) < 0) {
    *rc = lmpio__os_error(errno, call, "byte-range lock on", p->path);
    return 1;
  }
  char *at = lmpio__filemap_hold(p->map, p->dir, w->lo, w->hi, size);
  void *m = NULL;
  size_t len = 0;
  /* (a writable mapping made for one window pays a page fault per page each
   * time, journaled on a disk file system: there only when asked for, and
   * into settled bytes only: filemap.c) */
  if (!at && (!wr || p->fd_in_memory ||
              (p->hints.map_writes == LMPIO__HINT_ENABLE && lmpio__filemap_may_store(p->map, w->hi))))
    m = lmpio__os_map(p->fd, w->lo, w->hi - w->lo, wr, &at, &len);
  int bus = 0;
  MPI_Count before = s->done;
  if (at) {
    map_copy c = {s, at, w, p->dir, p->rank, p->size};
    bus = lmpio__os_guarded(map_copy_run, &c) < 0;
    if (m) lmpio__os_munmap(m, len);
    else lmpio__filemap_release(p->map, p->dir, !bus);
  }
  *rc = MPI_SUCCESS;
  if (bus && !wr)
    *rc = lmpio__err(MPI_ERR_IO, call, "reading \"%s\" through a mapping of bytes %lld to %lld failed (the file was cut "
                                       "short during the read, or an I/O error)",
                     p->path, (long long)w->lo, (long long)w->hi);
  if (lk != LMPIO__LOCK_NONE && p->drv->unlock(p->fd, 0, w->lo, w->hi - w->lo) < 0 && *rc == MPI_SUCCESS)
    *rc = lmpio__os_error(errno, call, "unlock of", p->path);
  if (gated) lmpio__gate_direct_end(p->gate);
  if (*rc == MPI_SUCCESS && (!at || (bus && wr))) { /* the usual windows instead */
    lmpio__stream_seek(s, before);
    return 0;
  }
  /* (no system call per piece, no hole bytes: counted as direct) */
  lmpio__stats_path(p->stats, p->aggregator ? LMPIO__P_AGGREGATOR : LMPIO__P_DIRECT, p->dir, s->done - before);
  return 1;
}

/* The gate (gate.c) of a write window: a read-modify-write on a local file
 * system asks other handles' gates first (and its own handle's), and goes
 * piece by piece when one is open; a direct write of a gated handle goes
 * without its lock while no sieve of the handle is under way. */
enum { GATE_NONE, GATE_DIRECT, GATE_SIEVE };

static int gate_enter(const lmpio__plan *p, const lmpio__window *w, int *sieve, int *lk) {
  *sieve = w->sieve;
  *lk = w->lock;
  if (p->dir != LMPIO__WRITE) return GATE_NONE;
  if (w->sieve && w->fill && p->sieve_check) { /* (atomic mode's too, under the call's lock) */
    if (lmpio__gate_sieve_begin(p->gate, p->fd)) return GATE_SIEVE;
    *sieve = 0; /* (under its lock still) */
    return GATE_NONE;
  }
  if (!w->sieve && w->lock != LMPIO__LOCK_NONE && lmpio__gate_direct_begin(p->gate)) {
    *lk = LMPIO__LOCK_NONE;
    return GATE_DIRECT;
  }
  return GATE_NONE;
}

static void gate_leave(const lmpio__plan *p, int gate) {
  if (gate == GATE_DIRECT) lmpio__gate_direct_end(p->gate);
  else if (gate == GATE_SIEVE) lmpio__gate_sieve_end(p->gate, p->fd);
}

int lmpio__engine_window(const lmpio__plan *p, lmpio__engine *e, const lmpio__window *w,
                         lmpio__stream *s, int *eof, const char *call) {
  MPI_Offset span = w->hi - w->lo, got = 0;
  MPI_Count before = s->done;
  int rc = MPI_SUCCESS, sieve, lk;
  int gate = gate_enter(p, w, &sieve, &lk);
  if (lk != LMPIO__LOCK_NONE && lock(p, lk == LMPIO__LOCK_EXCL, w->lo, span) < 0) {
    rc = lmpio__os_error(errno, call, "byte-range lock on", p->path);
    gate_leave(p, gate);
    return rc;
  }
  if (!sieve) {
    for (size_t i = 0; i < w->n && rc == MPI_SUCCESS && !*eof; i++)
      for (MPI_Offset j = 0; j < w->v[i].count && rc == MPI_SUCCESS && !*eof; j++)
        rc = direct_piece(p, e, s, w->v[i].off + j * w->v[i].stride, w->v[i].len, eof, call);
  } else if ((rc = stage(e, span, call)) == MPI_SUCCESS) {
    if (p->dir == LMPIO__READ) {
      rc = io(p, LMPIO__READ, e->stage, span, w->lo, &got, call);
      if (rc == MPI_SUCCESS && !p->aggregator) lmpio__stats_add(p->stats, LMPIO__S_SIEVE_READ_SPAN, got);
      if (rc == MPI_SUCCESS && got < span && w->zero_eof) {
        memset(e->stage + got, 0, (size_t)(span - got));
        got = span;
      }
      if (rc == MPI_SUCCESS) sieve_copy_out(s, e->stage, w, got, eof);
    } else {
      if (w->fill) { /* holes keep what the file has there */
        rc = io(p, LMPIO__READ, e->stage, span, w->lo, &got, call);
        if (rc == MPI_SUCCESS && !p->aggregator) lmpio__stats_add(p->stats, LMPIO__S_SIEVE_FILL, got);
        if (rc == MPI_SUCCESS && got < span) memset(e->stage + got, 0, (size_t)(span - got));
      }
      for (size_t i = 0; i < w->n && rc == MPI_SUCCESS; i++)
        copy_vec(s, e->stage, w->lo, &w->v[i], w->v[i].count, LMPIO__WRITE);
      if (rc == MPI_SUCCESS) rc = io(p, LMPIO__WRITE, e->stage, span, w->lo, &got, call);
      if (rc == MPI_SUCCESS && !p->aggregator) lmpio__stats_add(p->stats, LMPIO__S_SIEVE_WRITE_SPAN, span);
    }
  }
  lmpio__stats_path(p->stats, p->aggregator ? LMPIO__P_AGGREGATOR : sieve ? LMPIO__P_SIEVED : LMPIO__P_DIRECT,
                    p->dir, s->done - before);
  /* A caching client flushes what it wrote before the lock goes: a failure
   * there is the write's. */
  if (lk != LMPIO__LOCK_NONE && p->drv->unlock(p->fd, p->dir == LMPIO__WRITE, w->lo, span) < 0 &&
      rc == MPI_SUCCESS)
    rc = lmpio__os_error(errno, call, "flush and unlock of", p->path);
  gate_leave(p, gate);
  return rc;
}

/* The windows of data bytes [a, b) of the view, in order; map: through
 * mappings where the file (of size bytes) allows, in larger windows. */
static int run_range(const lmpio__plan *p, lmpio__engine *e, lmpio__stream *s, MPI_Offset a, MPI_Offset b, int map,
                     MPI_Offset size, int *eof, const char *call) {
  lmpio__plan_iter it;
  lmpio__window w;
  memset(&w, 0, sizeof w);
  if (lmpio__plan_start(&it, p, a, b) != MPI_SUCCESS) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  MPI_Offset bound = lmpio__plan_buffer(p);
  if (map && bound < MAP_WINDOW) bound = MAP_WINDOW;
  int rc = MPI_SUCCESS, more;
  for (MPI_Offset at = a; rc == MPI_SUCCESS && !*eof && (more = lmpio__plan_next(&it, bound, 1, &w)) != 0; at = it.pos) {
    if (more < 0) rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    else if (!map) rc = lmpio__engine_window(p, e, &w, s, eof, call);
    else if (!map_window(p, &w, size, s, &rc, call)) /* the usual windows instead */
      rc = run_range(p, e, s, at, it.pos, 0, 0, eof, call);
  }
  lmpio__plan_stop(&it);
  lmpio__window_free(&w);
  return rc;
}

/* Whether data bytes [pos, pos + total) of the view are one run of the
 * file, and where it starts: a contiguous view, or an access inside one
 * tile of a filetype whose data is one segment (a resized or strided
 * element: one int a rank interleaved), which the windows would take ~500
 * instructions to find. */
static int one_run(const lmpio__plan *p, MPI_Offset pos, MPI_Offset total, MPI_Offset *off) {
  const lmpio__tm_node *ft = p->ft;
  if (p->contiguous) {
    *off = p->disp + ft->data_lb + pos;
    return 1;
  }
  if (!ft->contiguous || ft->size <= 0 || ft->extent < ft->size || pos % ft->size + total > ft->size) return 0;
  MPI_Offset at;
  return lmpio__mul_ok(pos / ft->size, ft->extent, &at) && lmpio__add_ok(at, p->disp + ft->data_lb + pos % ft->size, off);
}

int lmpio__engine_run(const lmpio__plan *p, MPI_Offset pos, lmpio__stream *s, const char *call) {
  MPI_Offset total = s->total - s->done;
  if (total <= 0) return MPI_SUCCESS;
  MPI_Offset off = 0;
  int fast = s->contig && !p->atomic && one_run(p, pos, total, &off);
  int gated = fast && p->dir == LMPIO__WRITE && p->lock_direct && lmpio__gate_direct_begin(p->gate);
  if (fast && (p->dir == LMPIO__READ || !p->lock_direct || gated)) {
    /* One run of the file from one run of memory, with no lock to take (the
     * window the plan would make): one system call, no window built. */
    MPI_Count before = s->done;
    int rc = MPI_SUCCESS;
    long long *v = lmpio__stats_counters(p->stats);
    if (lmpio__filemap_copy(p->map, p->dir, p->dir == LMPIO__READ ? p->hints.map_reads : p->hints.map_writes,
                            s->buf + s->done, total, off)) {
      s->done += total;
    } else { /* (direct_piece's contiguous case: no stage, end of file is the count) */
      MPI_Offset got = 0;
      rc = io_counted(p, v, p->dir, s->buf + s->done, total, off, &got, call);
      if (rc == MPI_SUCCESS) s->done += got;
    }
    if (gated) lmpio__gate_direct_end(p->gate);
    lmpio__stats_bump_path(v, p->aggregator ? LMPIO__P_AGGREGATOR : LMPIO__P_DIRECT, p->dir, s->done - before);
    return rc;
  }
  lmpio__engine e = {NULL, 0};
  int rc = MPI_SUCCESS;
  /* Atomic mode locks the whole range once (the windows then take none). */
  MPI_Offset lo = 0, hi = 0;
  if (p->atomic) {
    if (lmpio__plan_lock_range(p, pos, total, &lo, &hi) != MPI_SUCCESS)
      rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    if (rc == MPI_SUCCESS && lock(p, p->dir == LMPIO__WRITE, lo, hi - lo) < 0) {
      rc = lmpio__os_error(errno, call, "byte-range lock on", p->path);
      hi = lo;
    }
  }
  /* Through a mapping when the plan says so, given the file's size now and
   * whether the handle's kept mapping serves it. */
  MPI_Offset size = 0;
  int map = lmpio__plan_may_map(p, total) && p->drv->size(p->fd, &size) == 0;
  if (map && lmpio__plan_needs_kept_map(p) && !lmpio__filemap_serves(p->map, size)) map = 0;
  int eof = 0;
  if (rc == MPI_SUCCESS) rc = run_range(p, &e, s, pos, pos + total, map, size, &eof, call);
  if (p->atomic && hi > lo && p->drv->unlock(p->fd, p->dir == LMPIO__WRITE, lo, hi - lo) < 0 && rc == MPI_SUCCESS)
    rc = lmpio__os_error(errno, call, "flush and unlock of", p->path);
  lmpio__engine_free(&e);
  return rc;
}
