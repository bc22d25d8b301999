/* The one transfer routine under every entry: a plan, a position in the
 * view's data and the caller's memory.  Native views go straight to the
 * engine; other representations through the conversion driver, which feeds
 * the engine in bounded pieces.  Independent, collective (when the ranks do
 * not aggregate), shared-pointer, ordered and background calls all end here,
 * each with the plan it built once.
 *
 * The conversion driver: data in a representation other than native moves
 * through a staging buffer of bounded size (hint
 * lmpio_conversion_buffer_size) that feeds the engine.
 *
 * The driver walks the predefined items of the memory type (a leaf cursor)
 * and converts them chunk by chunk: when the data does not fit, conversion
 * functions are called again with position advanced by the items already
 * converted, as the standard describes.  The file side of each chunk is a
 * run of the engine over bytes of the view, which the view's filetype lays
 * out with the representation's extents.  Sizes are 64-bit throughout; a
 * conversion function taking an int count is never given more than INT_MAX
 * items at once. */
#include "path.h"
#include "external32.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIECES 65536

/* A run of items of one predefined type: where it is in memory and in the
 * staging buffer. */
typedef struct {
  MPI_Aint mem;
  MPI_Offset stage;
  MPI_Count n, fext, nsize;
  MPI_Datatype basic;
} piece;

/* A few file extents remembered for the length of one call, so an extent
 * function (perhaps written in Lua) is not called once per item. */
typedef struct {
  MPI_Datatype t[8];
  MPI_Aint e[8];
  int n, next;
} extent_memo;

static int memo_extent(const lmpio__datarep *rep, extent_memo *m, MPI_Datatype t, MPI_Aint *e) {
  for (int i = 0; i < m->n; i++)
    if (m->t[i] == t) {
      *e = m->e[i];
      return MPI_SUCCESS;
    }
  int rc = lmpio__typemap_extent(rep, t, e);
  if (rc != MPI_SUCCESS) return rc;
  m->t[m->next] = t;
  m->e[m->next] = *e;
  m->next = (m->next + 1) % 8;
  if (m->n < 8) m->n++;
  return MPI_SUCCESS;
}

static int conversion_error(const lmpio__datarep *rep, int dir, int code, MPI_Offset position,
                            const char *call) {
  char what[256];
  snprintf(what, sizeof what, "the %s conversion of representation \"%s\" failed at item %lld (code %d)",
           dir == LMPIO__READ ? "read" : "write", rep->name, (long long)position, code);
  return lmpio__err_conversion(MPI_ERR_CONVERSION, call, what);
}

/* Calls the user's conversion function for items [position, position + n). */
static int user_convert(const lmpio__datarep *rep, int dir, void *buf, MPI_Datatype type, MPI_Count n,
                        char *stage, MPI_Offset position, const char *call) {
  lmpio__err_clear_detail(); /* only what this call says counts */
  int code;
  lmpio__err_converting(1); /* (no collective call from in there: agree.c) */
  lmpio__watch_pause();      /* (the binding's code, which its where function reads) */
  if (rep->large)
    code = (dir == LMPIO__READ ? rep->read_fn_c : rep->write_fn_c)(buf, type, n, stage, position, rep->extra);
  else
    code = (dir == LMPIO__READ ? rep->read_fn : rep->write_fn)(buf, type, (int)n, stage, position, rep->extra);
  lmpio__watch_resume();
  lmpio__err_converting(-1);
  return code == MPI_SUCCESS ? MPI_SUCCESS : conversion_error(rep, dir, code, position, call);
}

static int has_user_fn(const lmpio__datarep *rep, int dir) {
  if (rep->builtin) return 1;
  if (rep->large) return (dir == LMPIO__READ ? rep->read_fn_c : rep->write_fn_c) != NULL;
  return (dir == LMPIO__READ ? rep->read_fn : rep->write_fn) != MPI_CONVERSION_FN_NULL;
}

/* Where the file bytes of the conversion go (writes) or come from (reads):
 * the view, through the engine (plan p, from view data byte pos), or memory
 * (len bytes at mem; a read finds end of file at len). */
typedef struct {
  const lmpio__plan *p;
  MPI_Offset pos;
  char *mem;
  MPI_Offset len;
} sink;

/* Moves the stream's bytes to or from the sink, at file byte `at` of the
 * conversion. */
static int move(const sink *to, int dir, lmpio__stream *s, MPI_Offset at, const char *call) {
  if (to->p) return lmpio__engine_run(to->p, to->pos + at, s, call);
  MPI_Offset n = s->total - s->done, room = to->len - at;
  if (n > room) n = room > 0 ? room : 0;
  if (s->contig && s->buf == to->mem + at) s->done += n; /* converted in place */
  else if (n > 0) lmpio__stream_copy(s, to->mem + at, n, dir);
  return MPI_SUCCESS;
}

static int convert(const lmpio__datarep *rep, int dir, MPI_Offset cap, const sink *to, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes, const char *call);

int lmpio__convert(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes, const char *call) {
  const sink k = {p, pos, NULL, 0};
  return convert(p->rep, p->dir, p->hints.conv_buffer_size, &k, buf, count, type, bytes, file_bytes, call);
}

int lmpio__convert_memory(const lmpio__datarep *rep, int dir, MPI_Offset cap, char *mem, MPI_Offset len, void *buf,
                          MPI_Count count, MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes,
                          const char *call) {
  const sink k = {NULL, 0, mem, len};
  return convert(rep, dir, cap, &k, buf, count, type, bytes, file_bytes, call);
}

static int convert(const lmpio__datarep *rep, int dir, MPI_Offset cap, const sink *to, void *buf, MPI_Count count,
                   MPI_Datatype type, MPI_Count *bytes, MPI_Offset *file_bytes, const char *call) {
  *bytes = 0;
  *file_bytes = 0;
  const lmpio__tm_node *m;
  int rc = lmpio__typemap_get(type, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  if (!has_user_fn(rep, dir)) { /* MPI_CONVERSION_FN_NULL: the data moves in native form */
    lmpio__stream s;
    rc = lmpio__stream_init(&s, buf, m, count);
    if (rc == MPI_SUCCESS) rc = move(to, dir, &s, 0, call);
    else rc = lmpio__err(rc, call, "out of memory");
    *bytes = *file_bytes = s.done;
    lmpio__stream_free(&s);
    lmpio__typemap_release(m);
    return rc;
  }
  MPI_Count total;
  if (__builtin_mul_overflow(count, m->nitems, &total)) {
    lmpio__typemap_release(m);
    return lmpio__err(MPI_ERR_COUNT, call, "count %lld of a type of %lld items overflows", (long long)count,
                      (long long)m->nitems);
  }
  if (total == 0) {
    lmpio__typemap_release(m);
    return MPI_SUCCESS;
  }
  /* The user's conversion function gets a handle of our own: it may free
   * the caller's (a Lua converter can) while the call goes on. */
  MPI_Datatype utype = type;
  if (!rep->builtin && !lmpio__type_is_named(type) && MPI_Type_dup(type, &utype) != MPI_SUCCESS) {
    lmpio__typemap_release(m);
    return lmpio__err(MPI_ERR_TYPE, call, "cannot duplicate the memory datatype");
  }
  /* Small accesses get small buffers: an external32 item is at most twice
   * its native size (long double as double -> binary128). */
  MPI_Offset natbytes;
  if (rep->builtin && !__builtin_mul_overflow(count, m->size, &natbytes) && natbytes <= cap / 2) cap = natbytes * 2;
  if (cap < 1) cap = 1;
  int max_pieces = total < MAX_PIECES ? (int)total : MAX_PIECES;
  char *stage = (MPI_Offset)(size_t)cap == cap ? malloc((size_t)cap) : NULL;
  piece *pc = malloc(sizeof *pc * (size_t)max_pieces);
  lmpio__cursor c;
  if (!stage || !pc || lmpio__cursor_init_leaves(&c, m, m->extent) != MPI_SUCCESS) {
    free(stage);
    free(pc);
    if (utype != type) MPI_Type_free(&utype);
    lmpio__typemap_release(m);
    return lmpio__err(MPI_ERR_NO_MEM, call, "cannot allocate the %lld-byte conversion buffer", (long long)cap);
  }
  /* Items per call of an int-count conversion function. */
  const MPI_Count call_max = rep->builtin || rep->large ? total : INT_MAX;
  extent_memo memo = {{0}, {0}, 0, 0};
  MPI_Offset position = 0, moved = 0; /* items converted, file bytes moved */
  MPI_Count native = 0;
  int eof = 0;
  while (rc == MPI_SUCCESS && !eof && position < total) {
    /* Plan a chunk: whole items, as many as fit the staging buffer. */
    int np = 0;
    MPI_Offset used = 0;
    MPI_Count items = 0;
    while (position + items < total && items < call_max && np < max_pieces) {
      MPI_Aint fext;
      MPI_Datatype basic = lmpio__cursor_peek_leaf(&c);
      if ((rc = memo_extent(rep, &memo, basic, &fext)) != MPI_SUCCESS) {
        rc = rc == MPI_ERR_TYPE
                 ? lmpio__err(MPI_ERR_TYPE, call, "a predefined type in the data has no %s representation", rep->name)
                 : lmpio__err_conversion(MPI_ERR_CONVERSION, call, "the extent function failed");
        break;
      }
      MPI_Count fit = (cap - used) / fext;
      if (fit == 0) {
        if (used > 0) break;
        char *bigger = realloc(stage, (size_t)fext); /* one item larger than the buffer */
        if (!bigger) {
          rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
          break;
        }
        stage = bigger;
        cap = fext;
        fit = 1;
      }
      MPI_Count want = total - position - items;
      if (want > call_max - items) want = call_max - items;
      piece *pp = &pc[np++];
      pp->n = lmpio__cursor_next_leaf(&c, fit < want ? fit : want, &pp->mem, &pp->basic, &pp->nsize);
      pp->fext = fext;
      pp->stage = used;
      used += pp->n * fext;
      items += pp->n;
    }
    if (rc != MPI_SUCCESS) break;

    MPI_Count nat = 0;
    /* The chunk's file bytes: the staging buffer, or in place in a memory
     * sink (as far as it reaches: a read finds end of file there). */
    char *chunk = stage;
    if (to->mem) {
      if (dir == LMPIO__WRITE && moved + used > to->len) {
        rc = lmpio__err(MPI_ERR_INTERN, call, "the conversion needs more than its %lld bytes", (long long)to->len);
        break;
      }
      chunk = to->mem + moved;
    }
    lmpio__stream s;
    lmpio__stream_bytes(&s, chunk, used);
    if (dir == LMPIO__WRITE) {
      if (rep->builtin) {
        for (int i = 0; i < np && rc == MPI_SUCCESS; i++) {
          MPI_Count bad = 0;
          if (lmpio__external32_encode(pc[i].basic, (char *)buf + pc[i].mem, chunk + pc[i].stage, pc[i].n, &bad) != MPI_SUCCESS)
            rc = lmpio__err(MPI_ERR_CONVERSION, call, "item %lld does not fit its %s size in the file",
                            (long long)(position + pc[i].stage / pc[i].fext + bad), rep->name);
          nat += pc[i].n * pc[i].nsize;
        }
      } else {
        /* A conversion function may leave bytes of its file buffer unset:
         * they reach the file as zeros, never as stale heap contents. */
        memset(chunk, 0, (size_t)used);
        rc = user_convert(rep, dir, buf, utype, items, chunk, position, call);
        for (int i = 0; i < np; i++) nat += pc[i].n * pc[i].nsize;
      }
      if (rc == MPI_SUCCESS) rc = move(to, dir, &s, moved, call);
    } else {
      rc = move(to, dir, &s, moved, call);
      MPI_Offset got = s.done;
      if (rc == MPI_SUCCESS && got < used) { /* end of file: convert the whole items that arrived */
        eof = 1;
        MPI_Count keep = 0;
        int k = 0;
        for (; k < np && pc[k].stage + pc[k].n * pc[k].fext <= got; k++) keep += pc[k].n;
        if (k < np) {
          pc[k].n = (got - pc[k].stage) / pc[k].fext;
          keep += pc[k].n;
          k++;
        }
        np = k;
        items = keep;
        used = 0;
        for (int i = 0; i < np; i++) used += pc[i].n * pc[i].fext;
      }
      if (rc == MPI_SUCCESS && rep->builtin) {
        for (int i = 0; i < np && rc == MPI_SUCCESS; i++) {
          MPI_Count bad = 0;
          if (lmpio__external32_decode(pc[i].basic, chunk + pc[i].stage, (char *)buf + pc[i].mem, pc[i].n, &bad) != MPI_SUCCESS)
            rc = lmpio__err(MPI_ERR_CONVERSION, call, "item %lld of the file does not fit its native type",
                            (long long)(position + bad));
          nat += pc[i].n * pc[i].nsize;
        }
      } else if (rc == MPI_SUCCESS && items > 0) {
        rc = user_convert(rep, dir, buf, utype, items, chunk, position, call);
        for (int i = 0; i < np; i++) nat += pc[i].n * pc[i].nsize;
      }
    }
    if (rc == MPI_SUCCESS) {
      position += items;
      moved += used;
      native += nat;
    }
  }
  *bytes = native;
  *file_bytes = moved;
  lmpio__cursor_free(&c);
  free(stage);
  free(pc);
  if (utype != type) MPI_Type_free(&utype);
  lmpio__typemap_release(m);
  return rc;
}

/* ---- the one transfer routine (lmpio__transfer_node: inline, path.h) --- */

int lmpio__transfer(const lmpio__plan *p, MPI_Offset pos, void *buf, MPI_Count count, MPI_Datatype type,
                    MPI_Count *bytes, MPI_Offset *fbytes, const char *call) {
  return lmpio__transfer_node(p, pos, buf, count, type, NULL, bytes, fbytes, call);
}

/* The memory of staged transfers (request.c's stage_user): the last one
 * freed is kept for the next, so a program that writes a checkpoint after each step does
 * not pay for fresh pages (zeroed by the kernel: about as long as the
 * conversion) every time.  lmpio__transfer_trim (at close) gives it back. */
static pthread_mutex_t stage_mu = PTHREAD_MUTEX_INITIALIZER;
static char *stage_kept;
static size_t stage_kept_len;

char *lmpio__transfer_stage_alloc(size_t len) {
  char *p = NULL;
  pthread_mutex_lock(&stage_mu);
  if (stage_kept && stage_kept_len >= len && stage_kept_len / 2 <= len) { /* not much bigger */
    p = stage_kept;
    stage_kept = NULL;
  }
  pthread_mutex_unlock(&stage_mu);
  return p ? p : malloc(len > 0 ? len : 1);
}

void lmpio__transfer_stage_free(char *p, size_t len) {
  if (!p) return;
  pthread_mutex_lock(&stage_mu);
  if (!stage_kept || stage_kept_len < len) {
    char *old = stage_kept;
    stage_kept = p;
    stage_kept_len = len;
    p = old;
  }
  pthread_mutex_unlock(&stage_mu);
  free(p);
}

void lmpio__transfer_trim(void) {
  pthread_mutex_lock(&stage_mu);
  char *p = stage_kept;
  stage_kept = NULL;
  stage_kept_len = 0;
  pthread_mutex_unlock(&stage_mu);
  free(p);
}
