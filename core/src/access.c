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

/* Segments at least this long on average are moved one by one, not sieved. */
#define DIRECT_SEGMENT_MIN 1024
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

static int lock(xfer *x, MPI_Offset off, MPI_Offset len) {
  if (lmpio__posix_lock(x->fh->fd, 1, off, len) < 0)
    return lmpio__err_errno(errno, x->call, "byte-range lock on", x->fh->path);
  return MPI_SUCCESS;
}

static void unlock(xfer *x, MPI_Offset off, MPI_Offset len) {
  lmpio__posix_unlock(x->fh->fd, off, len);
}

/* Copies n data bytes between the user's memory (at the current position)
 * and p, in the direction of the transfer. */
static void copy_mem(xfer *x, char *p, MPI_Count n) {
  if (x->memcontig) {
    char *mem = x->buf + x->m->data_lb + x->done;
    if (x->dir == LMPIO__WRITE) memcpy(p, mem, (size_t)n);
    else memcpy(mem, p, (size_t)n);
  } else {
    MPI_Count left = n;
    while (left > 0) {
      MPI_Aint mo;
      MPI_Count ml = lmpio__cursor_next(&x->mc, left, &mo);
      if (x->dir == LMPIO__WRITE) memcpy(p, x->buf + mo, (size_t)ml);
      else memcpy(x->buf + mo, p, (size_t)ml);
      p += ml;
      left -= ml;
    }
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

static MPI_Count buffer_size(const xfer *x) {
  MPI_Offset b = x->dir == LMPIO__READ ? x->fh->ind_rd_buffer_size : x->fh->ind_wr_buffer_size;
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

/* One window of segments [ws, we) relative to the view's displacement. */
static int xfer_window(xfer *x, const segment *seg, int nseg, MPI_Count wdata, int *eof) {
  lmpio_file fh = x->fh;
  MPI_Offset disp = fh->view.disp;
  MPI_Aint ws = seg[0].off, we = seg[nseg - 1].off + (MPI_Aint)seg[nseg - 1].len;
  MPI_Count span = we - ws;
  int ds = x->dir == LMPIO__READ ? fh->ds_read : fh->ds_write;
  int sieve = nseg > 1 && ds != 0 && (ds == 1 || wdata / nseg < DIRECT_SEGMENT_MIN);
  if (x->dir == LMPIO__WRITE && wdata < span && !fh->fd_readable) sieve = 0;

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
  if (x->lock_windows && (rc = lock(x, disp + ws, span)) != MPI_SUCCESS) return rc;
  if (wdata < span) { /* holes: keep what the file has there */
    rc = io(x, LMPIO__READ, sv, span, disp + ws, &got);
    if (rc == MPI_SUCCESS && got < span) memset(sv + got, 0, (size_t)(span - got));
  }
  for (int i = 0; i < nseg && rc == MPI_SUCCESS; i++) copy_mem(x, sv + (seg[i].off - ws), seg[i].len);
  if (rc == MPI_SUCCESS) rc = io(x, LMPIO__WRITE, sv, span, disp + ws, &got);
  if (x->lock_windows) unlock(x, disp + ws, span);
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
  /* Atomic mode locks the whole range once; otherwise writes lock what they
   * touch so that another rank's read-modify-write cannot undo them. */
  MPI_Offset lo = 0, hi = 0;
  if (fh->atomic) {
    lo = lmpio__view_byte(v, pos);
    hi = lmpio__view_byte(v, pos + total - 1) + 1;
    if (lmpio__posix_lock(fh->fd, dir == LMPIO__WRITE, lo, hi - lo) < 0)
      rc = lmpio__err_errno(errno, call, "byte-range lock on", fh->path);
  } else {
    x.lock_windows = dir == LMPIO__WRITE && fh->size > 1;
  }
  if (rc == MPI_SUCCESS) {
    if (v->contiguous) {
      int eof = 0;
      rc = xfer_contig(&x, lmpio__view_byte(v, pos), total, &eof);
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

static int independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
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
  return independent(fh, offset, 0, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_at");
}

int lmpio_file_write_at(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status) {
  return independent(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, status,
                     "lmpio_file_write_at");
}

int lmpio_file_read(lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
  return independent(fh, 0, 1, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read");
}

int lmpio_file_write(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                     MPI_Status *status) {
  return independent(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, status, "lmpio_file_write");
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
