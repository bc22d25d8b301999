/* Independent data access: one routine serves explicit offsets and
 * individual pointers, reads and writes.
 *
 * Contiguous view and contiguous memory go straight to pread/pwrite.
 * Otherwise the file side is walked in windows of at most the sieve buffer
 * size (hints ind_rd_buffer_size / ind_wr_buffer_size): a window with many
 * small segments is read once and copied (data sieving; writes read, modify
 * and write back under a byte-range lock), a window of large segments is
 * transferred segment by segment.  Noncontiguous memory is packed or unpacked
 * by a cursor over the memory type. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
  lmpio_file fh;
  int dir;
  const char *call;
  char *buf;                 /* user buffer; memory offsets are relative to it */
  const lmpio__tm_node *m;
  int memcontig;             /* memory data is one run starting at buf + m->data_lb */
  lmpio__cursor mc;          /* otherwise: where the next memory byte is */
  MPI_Count done;            /* data bytes moved so far */
  char *stage;               /* staging / sieve buffer */
  size_t stage_size;
  int lock_windows;          /* writes lock each window they touch */
} xfer;

typedef struct { MPI_Aint off; MPI_Count len; } segment;

int lmpio__check_access(lmpio_file fh, int count, MPI_Datatype type, int dir, int pointer,
                        const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (count < 0) return lmpio__err(MPI_ERR_COUNT, call, "negative count %d", count);
  if (type == MPI_DATATYPE_NULL) return lmpio__err(MPI_ERR_TYPE, call, "datatype is MPI_DATATYPE_NULL");
  if (dir == LMPIO__WRITE && (fh->amode & MPI_MODE_RDONLY))
    return lmpio__err(MPI_ERR_READ_ONLY, call, "file \"%s\" was opened MPI_MODE_RDONLY", fh->path);
  if (dir == LMPIO__READ && (fh->amode & MPI_MODE_WRONLY))
    return lmpio__err(MPI_ERR_ACCESS, call, "file \"%s\" was opened MPI_MODE_WRONLY", fh->path);
  if (pointer != LMPIO__SHARED && (fh->amode & MPI_MODE_SEQUENTIAL))
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "only shared file pointer access is allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL",
                      fh->path);
  return MPI_SUCCESS;
}

int lmpio__count_etypes(lmpio_file fh, int count, MPI_Datatype type, MPI_Offset *n,
                        const char *call) {
  const lmpio__tm_node *m; /* sizes as in the file */
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Count total = (MPI_Count)count * m->size;
  lmpio__typemap_release(m);
  if (total % fh->view.esize != 0)
    return lmpio__err(MPI_ERR_TYPE, call, "%lld data bytes are not a whole number of etypes of %lld bytes",
                      (long long)total, (long long)fh->view.esize);
  *n = total / fh->view.esize;
  return MPI_SUCCESS;
}

void lmpio__set_status(MPI_Status *status, MPI_Count bytes) {
  if (status == MPI_STATUS_IGNORE) return;
  /* MPI_Get_count / MPI_Get_elements convert bytes to the caller's type. */
  MPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  MPI_Status_set_cancelled(status, 0);
}

/* One contiguous transfer at an absolute file offset; *got is short only
 * for a read that hits end of file. */
static int io(xfer *x, int dir, void *p, MPI_Count len, MPI_Offset off, MPI_Count *got) {
  lmpio_file fh = x->fh;
  long long n = dir == LMPIO__READ ? lmpio__posix_pread_all(fh->fd, p, (size_t)len, off)
                                   : lmpio__posix_pwrite_all(fh->fd, p, (size_t)len, off);
  if (n < 0)
    return lmpio__err_errno(errno, x->call, dir == LMPIO__READ ? "pread of" : "pwrite to", fh->path);
  *got = n;
  return MPI_SUCCESS;
}

/* Byte-range locks of writes (x->lock_windows): a read-modify-write of a
 * window with holes takes it exclusive; a write of data bytes only takes it
 * shared, so such writes by different ranks run at once, and only exclude
 * (and are excluded by) read-modify-writes over the same bytes.  A file
 * descriptor that cannot read takes exclusive locks (F_RDLCK needs read
 * access), which is correct, only slower. */
static int lock_mode(xfer *x, int excl, MPI_Offset off, MPI_Offset len) {
  if (lmpio__posix_lock(x->fh->fd, excl || !x->fh->fd_readable, off, len) < 0)
    return lmpio__err_errno(errno, x->call, "byte-range lock on", x->fh->path);
  return MPI_SUCCESS;
}

static int lock(xfer *x, MPI_Offset off, MPI_Offset len) { return lock_mode(x, 0, off, len); }

static void unlock(xfer *x, MPI_Offset off, MPI_Offset len) {
  lmpio__posix_unlock(x->fh->fd, off, len);
}

void lmpio__access_copy(lmpio__cursor *mc, char *buf, char *p, MPI_Count n, int dir) {
  while (n > 0) {
    MPI_Aint mo;
    MPI_Count ml = lmpio__cursor_next(mc, n, &mo);
    if (dir == LMPIO__WRITE) memcpy(p, buf + mo, (size_t)ml);
    else memcpy(buf + mo, p, (size_t)ml);
    p += ml;
    n -= ml;
  }
}

/* Copies n data bytes between the user's memory (at the current position)
 * and p, in the direction of the transfer. */
static void copy_mem(xfer *x, char *p, MPI_Count n) {
  if (x->memcontig) {
    char *mem = x->buf + x->m->data_lb + x->done;
    if (x->dir == LMPIO__WRITE) memcpy(p, mem, (size_t)n);
    else memcpy(mem, p, (size_t)n);
  } else {
    lmpio__access_copy(&x->mc, x->buf, p, n, x->dir);
  }
  x->done += n;
}

static int ensure_stage(xfer *x, size_t size) {
  if (x->stage_size >= size) return MPI_SUCCESS;
  free(x->stage);
  x->stage = malloc(size);
  x->stage_size = x->stage ? size : 0;
  if (!x->stage) return lmpio__err(MPI_ERR_NO_MEM, x->call, "cannot allocate a %zu-byte buffer", size);
  return MPI_SUCCESS;
}

/* The sieve window and staging size: the hint, but at most what stays in a
 * core's cache, so that the copy out of the buffer finds what the system
 * call put there (256 KiB reads strided 64-byte blocks 1.2x faster than the
 * 4 MiB default of ind_rd_buffer_size). */
#define WINDOW_MAX 262144

static MPI_Count buffer_size(const xfer *x) {
  MPI_Offset b = x->dir == LMPIO__READ ? x->fh->ind_rd_buffer_size : x->fh->ind_wr_buffer_size;
  if (b > WINDOW_MAX) b = WINDOW_MAX;
  return b > 0 ? b : 1;
}

/* Moves len data bytes between memory and the contiguous file range at off.
 * Stops early only at end of file (reads). */
static int xfer_contig(xfer *x, MPI_Offset off, MPI_Count len, int *eof) {
  int rc = MPI_SUCCESS;
  int locked = x->lock_windows;
  if (locked && (rc = lock(x, off, len)) != MPI_SUCCESS) return rc;
  if (x->memcontig) {
    MPI_Count got;
    rc = io(x, x->dir, x->buf + x->m->data_lb + x->done, len, off, &got);
    if (rc == MPI_SUCCESS) {
      x->done += got;
      if (got < len) *eof = 1;
    }
  } else {
    MPI_Count chunk = buffer_size(x);
    if (chunk > len) chunk = len;
    rc = ensure_stage(x, (size_t)chunk);
    for (MPI_Count pos = 0; rc == MPI_SUCCESS && pos < len;) {
      MPI_Count n = len - pos < chunk ? len - pos : chunk, got = 0;
      if (x->dir == LMPIO__WRITE) {
        copy_mem(x, x->stage, n);
        rc = io(x, x->dir, x->stage, n, off + pos, &got);
      } else {
        rc = io(x, x->dir, x->stage, n, off + pos, &got);
        if (rc == MPI_SUCCESS) copy_mem(x, x->stage, got);
        if (rc == MPI_SUCCESS && got < n) { *eof = 1; break; }
      }
      pos += n;
    }
  }
  if (locked) unlock(x, off, len);
  return rc;
}

/* Whether a window of nseg segments holding wdata data bytes over span file
 * bytes is sieved (one transfer of the span plus copies) or moved segment by
 * segment.  Sieving pays for the hole bytes (read, and for writes read and
 * written back under an exclusive lock); moving segments pays one system
 * call per segment.  The hints romio_ds_read/romio_ds_write force either. */
static int choose_sieve(const xfer *x, MPI_Count nseg, MPI_Count wdata, MPI_Count span) {
  lmpio_file fh = x->fh;
  if (nseg <= 1) return 0;
  int ds = x->dir == LMPIO__READ ? fh->ds_read : fh->ds_write;
  if (x->dir == LMPIO__WRITE && wdata < span && !fh->fd_readable) return 0;
  if (ds != 2) return ds != 0;
  MPI_Count holes = span - wdata;
  if (x->dir == LMPIO__READ) return holes < nseg * SIEVE_READ_HOLES_PER_SEGMENT;
  if (wdata / nseg >= DIRECT_SEGMENT_MIN) return 0;
  if (fh->fd_in_memory) /* cheap calls: sieve only what is mostly data */
    return holes <= wdata || holes < nseg * SIEVE_WRITE_HOLES_PER_SEGMENT_IN_MEMORY;
  return holes < nseg * SIEVE_WRITE_HOLES_PER_SEGMENT;
}

/* One window of segments [ws, we) relative to the view's displacement. */
static int xfer_window(xfer *x, const segment *seg, int nseg, MPI_Count wdata, int *eof) {
  lmpio_file fh = x->fh;
  MPI_Offset disp = fh->view.disp;
  MPI_Aint ws = seg[0].off, we = seg[nseg - 1].off + (MPI_Aint)seg[nseg - 1].len;
  MPI_Count span = we - ws;
  int sieve = choose_sieve(x, nseg, wdata, span);

  if (!sieve) { /* segment by segment, under one lock for writes */
    int rc = MPI_SUCCESS, locked = x->lock_windows;
    if (locked && (rc = lock(x, disp + ws, span)) != MPI_SUCCESS) return rc;
    x->lock_windows = 0;
    for (int i = 0; i < nseg && rc == MPI_SUCCESS && !*eof; i++)
      rc = xfer_contig(x, disp + seg[i].off, seg[i].len, eof);
    x->lock_windows = locked;
    if (locked) unlock(x, disp + ws, span);
    return rc;
  }

  int rc = ensure_stage(x, (size_t)span);
  if (rc != MPI_SUCCESS) return rc;
  char *sv = x->stage;
  MPI_Count got = 0;
  if (x->dir == LMPIO__READ) {
    rc = io(x, LMPIO__READ, sv, span, disp + ws, &got);
    for (int i = 0; i < nseg && rc == MPI_SUCCESS; i++) {
      MPI_Count at = seg[i].off - ws;
      MPI_Count avail = got - at < seg[i].len ? got - at : seg[i].len;
      if (avail > 0) copy_mem(x, sv + at, avail);
      if (avail < seg[i].len) { *eof = 1; break; }
    }
    return rc;
  }
  if (x->lock_windows && (rc = lock_mode(x, wdata < span, disp + ws, span)) != MPI_SUCCESS) return rc;
  if (wdata < span) { /* holes: keep what the file has there */
    rc = io(x, LMPIO__READ, sv, span, disp + ws, &got);
    if (rc == MPI_SUCCESS && got < span) memset(sv + got, 0, (size_t)(span - got));
  }
  for (int i = 0; i < nseg && rc == MPI_SUCCESS; i++) copy_mem(x, sv + (seg[i].off - ws), seg[i].len);
  if (rc == MPI_SUCCESS) rc = io(x, LMPIO__WRITE, sv, span, disp + ws, &got);
  if (x->lock_windows) unlock(x, disp + ws, span);
  return rc;
}

/* ---- strided views ------------------------------------------------------
 *
 * A filetype whose tile is one run of equally spaced blocks of equal length
 * (a vector, a block resized to a larger extent, the rows of a subarray)
 * makes the view a strided pattern: block k of the view lies at
 *
 *     first + (k / c) * E + (k % c) * s      (c blocks per tile, extent E)
 *
 * or, when the tiles continue the spacing (c == 0 below), at first + k * s.
 * Windows are then counted rather than walked, and copied by tight loops. */

typedef struct {
  MPI_Aint first;  /* offset from disp of the first data byte of tile 0 */
  MPI_Count len;   /* bytes per block */
  MPI_Aint stride; /* between the starts of blocks of one group */
  MPI_Count c;     /* blocks per group; 0: one endless group */
  MPI_Aint extent; /* between groups */
} strided;

/* Fewer blocks per tile than this, with tiles that break the spacing, go
 * through the general walk. */
#define STRIDED_MIN_GROUP 16

static int view_strided(const lmpio__view *v, strided *p) {
  const lmpio__tm_node *ft = v->ft;
  if (v->contiguous || ft->nruns != 1) return 0;
  const lmpio__tm_run *r = &ft->runs[0];
  if (r->kind == LMPIO__RUN_NEST) return 0;
  p->first = r->disp + r->lo;
  p->extent = ft->extent;
  if (r->kind == LMPIO__RUN_FLAT || r->count == 1) { /* one block per tile */
    p->len = r->kind == LMPIO__RUN_FLAT ? r->count * r->esize : r->esize;
    p->stride = ft->extent;
    p->c = 0;
  } else {
    p->len = r->esize;
    p->stride = r->stride;
    p->c = (MPI_Count)ft->extent == r->count * (MPI_Count)r->stride ? 0 : r->count;
    if (p->c && p->c < STRIDED_MIN_GROUP) return 0;
  }
  return p->len > 0 && p->stride > (MPI_Aint)p->len;
}

static MPI_Aint strided_off(const strided *p, MPI_Count k) {
  if (!p->c) return p->first + (MPI_Aint)k * p->stride;
  return p->first + (MPI_Aint)(k / p->c) * p->extent + (MPI_Aint)(k % p->c) * p->stride;
}

/* n blocks of len bytes between strided file-side memory (stride apart) and
 * contiguous user memory; fixed lengths become single loads and stores. */
#define STRIDED_LOOP(L)                                                           \
  do {                                                                            \
    if (to_file)                                                                  \
      for (MPI_Count i = 0; i < n; i++) memcpy(f + i * stride, m + i * (L), (L)); \
    else                                                                          \
      for (MPI_Count i = 0; i < n; i++) memcpy(m + i * (L), f + i * stride, (L)); \
  } while (0)

static void copy_strided(char *f, MPI_Aint stride, char *m, MPI_Count len, MPI_Count n, int to_file) {
  switch (len) {
  case 1: STRIDED_LOOP(1); break;
  case 2: STRIDED_LOOP(2); break;
  case 4: STRIDED_LOOP(4); break;
  case 8: STRIDED_LOOP(8); break;
  case 16: STRIDED_LOOP(16); break;
  default: STRIDED_LOOP((size_t)len); break;
  }
}

/* Windows moved block by block need no buffer, only a lock: they may span
 * this much whatever the sieve buffer size. */
#define DIRECT_WINDOW_MAX 4194304

/* Blocks in the window that starts at byte off of block k: those that end
 * within bound bytes of its start (at least one), no more than the data
 * left, and within one group. */
static MPI_Count window_blocks(const strided *p, MPI_Count k, MPI_Count off, MPI_Count remaining,
                               MPI_Count bound) {
  const MPI_Count L = p->len;
  MPI_Count len0 = L - off < remaining ? L - off : remaining, n = 1;
  if (len0 < remaining && L - off < bound) {
    MPI_Count more = (bound - (L - off)) / p->stride;
    MPI_Count bydata = (remaining - len0 + L - 1) / L;
    if (more > bydata) more = bydata;
    if (p->c && more > p->c - 1 - k % p->c) more = p->c - 1 - k % p->c;
    n += more;
  }
  return n;
}

/* Data bytes of the last block, of the window, and the file bytes it spans,
 * for a window of n blocks starting at byte off of its first block. */
static void window_sizes(const strided *p, MPI_Count off, MPI_Count remaining, MPI_Count n,
                         MPI_Count *lastlen, MPI_Count *wdata, MPI_Count *span) {
  const MPI_Count L = p->len;
  MPI_Count len0 = L - off < remaining ? L - off : remaining;
  if (n == 1) {
    *lastlen = len0;
    *wdata = *span = len0;
    return;
  }
  *lastlen = remaining - len0 - (n - 2) * L;
  if (*lastlen > L) *lastlen = L;
  *wdata = len0 + (n - 2) * L + *lastlen;
  *span = (MPI_Count)(n - 1) * p->stride - off + *lastlen;
}

/* A strided view and contiguous memory (x->memcontig). */
static int xfer_strided(xfer *x, const strided *p, MPI_Offset pos, MPI_Count total) {
  lmpio_file fh = x->fh;
  const MPI_Offset disp = fh->view.disp;
  const MPI_Count L = p->len, B = buffer_size(x);
  const MPI_Aint S = p->stride;
  char *mem = x->buf + x->m->data_lb;
  MPI_Count k = pos / L, off = pos % L; /* the next data byte: block k, byte off */
  int rc = MPI_SUCCESS, eof = 0;
  while (rc == MPI_SUCCESS && !eof && x->done < total) {
    MPI_Count remaining = total - x->done;
    MPI_Offset o0 = disp + strided_off(p, k) + off;
    MPI_Count len0 = L - off < remaining ? L - off : remaining;
    MPI_Count n = window_blocks(p, k, off, remaining, B), lastlen, wdata, span;
    window_sizes(p, off, remaining, n, &lastlen, &wdata, &span);
    int sieve = choose_sieve(x, n, wdata, span);
    if (!sieve && B < DIRECT_WINDOW_MAX) { /* no buffer: lock fewer, longer windows */
      n = window_blocks(p, k, off, remaining, DIRECT_WINDOW_MAX);
      window_sizes(p, off, remaining, n, &lastlen, &wdata, &span);
    }
    if (n == 1) {
      rc = xfer_contig(x, o0, len0, &eof);
      off += len0;
      if (off == L) { k++; off = 0; }
      continue;
    }
    if (!sieve) { /* block by block, one shared lock */
      int locked = x->lock_windows;
      if (locked && (rc = lock(x, o0, span)) != MPI_SUCCESS) return rc;
      for (MPI_Count j = 0; j < n && rc == MPI_SUCCESS && !eof; j++) {
        MPI_Count bl = j == 0 ? len0 : j == n - 1 ? lastlen : L, got;
        MPI_Offset o = j == 0 ? o0 : o0 - off + (MPI_Offset)j * S;
        rc = io(x, x->dir, mem + x->done, bl, o, &got);
        if (rc == MPI_SUCCESS) {
          x->done += got;
          if (got < bl) eof = 1;
        }
      }
      if (locked) unlock(x, o0, span);
    } else {
      if ((rc = ensure_stage(x, (size_t)span)) != MPI_SUCCESS) return rc;
      char *sv = x->stage, *m = mem + x->done;
      char *f1 = sv + S - off; /* block k+1 in the stage */
      MPI_Count got = 0;
      if (x->dir == LMPIO__READ) {
        rc = io(x, LMPIO__READ, sv, span, o0, &got);
        if (rc != MPI_SUCCESS) return rc;
        if (got == span) {
          memcpy(m, sv, (size_t)len0);
          copy_strided(f1, S, m + len0, L, n - 2, 0);
          memcpy(m + len0 + (n - 2) * L, f1 + (n - 2) * S, (size_t)lastlen);
          x->done += wdata;
        } else { /* end of file inside the window: what is there, block by block */
          for (MPI_Count j = 0; j < n; j++) {
            MPI_Count at = j == 0 ? 0 : j * S - off, bl = j == 0 ? len0 : j == n - 1 ? lastlen : L;
            MPI_Count avail = got - at < bl ? got - at : bl;
            if (avail > 0) {
              memcpy(mem + x->done, sv + at, (size_t)avail);
              x->done += avail;
            }
            if (avail < bl) break;
          }
          eof = 1;
        }
      } else {
        int locked = x->lock_windows;
        if (locked && (rc = lock_mode(x, 1, o0, span)) != MPI_SUCCESS) return rc;
        rc = io(x, LMPIO__READ, sv, span, o0, &got); /* keep the holes */
        if (rc == MPI_SUCCESS && got < span) memset(sv + got, 0, (size_t)(span - got));
        if (rc == MPI_SUCCESS) {
          memcpy(sv, m, (size_t)len0);
          copy_strided(f1, S, m + len0, L, n - 2, 1);
          memcpy(f1 + (n - 2) * S, m + len0 + (n - 2) * L, (size_t)lastlen);
          rc = io(x, LMPIO__WRITE, sv, span, o0, &got);
          if (rc == MPI_SUCCESS) x->done += wdata;
        }
        if (locked) unlock(x, o0, span);
      }
    }
    k += n - 1;
    off = lastlen;
    if (off == L) { k++; off = 0; }
  }
  return rc;
}

/* Noncontiguous view: walk the file segments window by window. */
static int xfer_view(xfer *x, MPI_Offset pos, MPI_Count total) {
  lmpio_file fh = x->fh;
  const lmpio__tm_node *ft = fh->view.ft;
  lmpio__cursor fc;
  int rc = lmpio__cursor_init(&fc, ft, ft->extent);
  if (rc != MPI_SUCCESS) return lmpio__err(rc, x->call, "out of memory");
  /* A window never holds more segments than the access has data bytes. */
  int maxseg = total < MAX_WINDOW_SEGMENTS ? (int)total : MAX_WINDOW_SEGMENTS;
  segment *seg = malloc(sizeof *seg * (size_t)maxseg);
  if (!seg) {
    lmpio__cursor_free(&fc);
    return lmpio__err(MPI_ERR_NO_MEM, x->call, "out of memory");
  }
  lmpio__cursor_seek(&fc, pos);
  MPI_Count B = buffer_size(x);
  int eof = 0;
  while (rc == MPI_SUCCESS && !eof && x->done < total) {
    MPI_Count remaining = total - x->done;
    int nseg = 0;
    MPI_Count wdata = 0;
    seg[0].len = lmpio__cursor_next(&fc, remaining, &seg[0].off);
    wdata = seg[0].len;
    nseg = 1;
    MPI_Aint ws = seg[0].off;
    if (seg[0].len < B) {
      while (wdata < remaining && nseg < maxseg) {
        MPI_Aint o = lmpio__cursor_peek(&fc);
        if (o >= ws + (MPI_Aint)B) break;
        MPI_Count room = ws + (MPI_Aint)B - o;
        MPI_Count want = remaining - wdata < room ? remaining - wdata : room;
        seg[nseg].len = lmpio__cursor_next(&fc, want, &seg[nseg].off);
        wdata += seg[nseg].len;
        nseg++;
      }
    }
    rc = xfer_window(x, seg, nseg, wdata, &eof);
  }
  free(seg);
  lmpio__cursor_free(&fc);
  return rc;
}

int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, int count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call) {
  *bytes = 0;
  *etypes = 0;
  if (offset < 0) return lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  if (fh->view.rep) return lmpio__datarep_access(fh, offset, buf, count, type, dir, bytes, etypes, call);
  MPI_Offset n;
  int rc = lmpio__count_etypes(fh, count, type, &n, call);
  if (rc != MPI_SUCCESS) return rc;
  rc = lmpio__access_at(fh, offset * fh->view.esize, buf, count, type, dir, bytes, call);
  *etypes = *bytes / fh->view.esize;
  return rc;
}

int lmpio__access_at(lmpio_file fh, MPI_Offset pos, void *buf, int count,
                     MPI_Datatype type, int dir, MPI_Count *bytes, const char *call) {
  *bytes = 0;
  const lmpio__tm_node *m;
  int rc = lmpio__typemap_get(type, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  const lmpio__view *v = &fh->view;
  MPI_Count total = (MPI_Count)count * m->size;
  if (total == 0) {
    lmpio__typemap_release(m);
    return MPI_SUCCESS;
  }

  xfer x;
  memset(&x, 0, sizeof x);
  x.fh = fh;
  x.dir = dir;
  x.call = call;
  x.buf = buf;
  x.m = m;
  x.memcontig = m->contiguous && (count == 1 || m->size == m->extent);
  if (!x.memcontig && (rc = lmpio__cursor_init(&x.mc, m, m->extent)) != MPI_SUCCESS) {
    lmpio__typemap_release(m);
    return lmpio__err(rc, call, "out of memory");
  }
  /* Atomic mode locks the whole range once.  Otherwise, when some rank's
   * view has holes (so some rank may sieve writes: read, modify, write back
   * a window), writes lock what they touch so that such a read-modify-write
   * cannot undo them; when no view has holes nobody sieves writes and
   * nothing needs a lock. */
  MPI_Offset lo = 0, hi = 0;
  if (fh->atomic) {
    lo = lmpio__view_byte(v, pos);
    hi = lmpio__view_byte(v, pos + total - 1) + 1;
    if (lmpio__posix_lock(fh->fd, dir == LMPIO__WRITE, lo, hi - lo) < 0)
      rc = lmpio__err_errno(errno, call, "byte-range lock on", fh->path);
  } else {
    x.lock_windows = dir == LMPIO__WRITE && fh->size > 1 && v->any_holes;
  }
  if (rc == MPI_SUCCESS) {
    strided sp;
    if (v->contiguous) {
      int eof = 0;
      rc = xfer_contig(&x, lmpio__view_byte(v, pos), total, &eof);
    } else if (x.memcontig && view_strided(v, &sp)) {
      rc = xfer_strided(&x, &sp, pos, total);
    } else {
      rc = xfer_view(&x, pos, total);
    }
    if (fh->atomic) lmpio__posix_unlock(fh->fd, lo, hi - lo);
  }
  *bytes = x.done;
  free(x.stage);
  if (!x.memcontig) lmpio__cursor_free(&x.mc);
  lmpio__typemap_release(m);
  return rc;
}

/* ---- public calls: explicit offsets and individual pointers ----------- */

int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                       MPI_Datatype type, int dir, MPI_Status *status, const char *call) {
  int rc = lmpio__check_access(fh, count, type, dir, use_fp ? LMPIO__INDIVIDUAL : LMPIO__EXPLICIT, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Count bytes = 0;
  MPI_Offset etypes = 0;
  rc = lmpio__access(fh, use_fp ? fh->fp : offset, buf, count, type, dir, &bytes, &etypes, call);
  if (use_fp) fh->fp += etypes;
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio_file_read_at(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                       MPI_Datatype datatype, MPI_Status *status) {
  return lmpio__independent(fh, offset, 0, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_at");
}

int lmpio_file_write_at(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status) {
  return lmpio__independent(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, status,
                     "lmpio_file_write_at");
}

int lmpio_file_read(lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
  return lmpio__independent(fh, 0, 1, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read");
}

int lmpio_file_write(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                     MPI_Status *status) {
  return lmpio__independent(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, status, "lmpio_file_write");
}

int lmpio_file_seek(lmpio_file fh, MPI_Offset offset, int whence) {
  const char *call = "lmpio_file_seek";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (fh->amode & MPI_MODE_SEQUENTIAL)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "seek is not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  MPI_Offset base;
  switch (whence) {
  case MPI_SEEK_SET: base = 0; break;
  case MPI_SEEK_CUR: base = fh->fp; break;
  case MPI_SEEK_END: {
    MPI_Offset size;
    int rc = lmpio_file_get_size(fh, &size);
    if (rc != MPI_SUCCESS) return rc;
    /* End of file in this view: the etypes that start before it, rounded up. */
    MPI_Offset data = lmpio__view_data_before(&fh->view, size);
    base = (data + fh->view.esize - 1) / fh->view.esize;
    break;
  }
  default:
    return lmpio__err(MPI_ERR_ARG, call, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  }
  if (base + offset < 0)
    return lmpio__err(MPI_ERR_ARG, call, "seek to negative offset %lld", (long long)(base + offset));
  fh->fp = base + offset;
  return MPI_SUCCESS;
}

int lmpio_file_get_position(lmpio_file fh, MPI_Offset *offset) {
  const char *call = "lmpio_file_get_position";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!offset) return lmpio__err(MPI_ERR_ARG, call, "offset is NULL");
  *offset = fh->fp;
  return MPI_SUCCESS;
}
