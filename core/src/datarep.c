/* Data representations: the registry ("native", "internal", "external32"
 * and the ones users register) and the conversion driver.
 *
 * The driver walks the predefined items of the memory type (a leaf cursor)
 * and converts them through a staging buffer of bounded size (hint
 * "lmpio_conversion_buffer_size"): when the data does not fit, conversion
 * functions are called again with position advanced by the items already
 * converted, as the standard describes.  The file side of each chunk is an
 * ordinary access of bytes through the view, which the view's filetype lays
 * out with the representation's extents.
 *
 * "internal" uses the external32 layout: portable across machines, and the
 * one layout lmpio can always read back. */
#include "internal.h"
#include "external32.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lmpio__datarep {
  char name[MPI_MAX_DATAREP_STRING + 1];
  MPI_Datarep_conversion_function *read_fn, *write_fn;
  MPI_Datarep_extent_function *extent_fn;
  void *extra;
  int builtin; /* external32 layout, converted by lmpio itself */
  struct lmpio__datarep *next;
};

static lmpio__datarep external32 = {"external32", NULL, NULL, NULL, NULL, 1, NULL};
static lmpio__datarep internal = {"internal", NULL, NULL, NULL, NULL, 1, &external32};
static lmpio__datarep *registry = &internal;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static lmpio__datarep *lookup(const char *name) {
  for (lmpio__datarep *r = registry; r; r = r->next)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}

int lmpio__datarep_find(const char *name, const lmpio__datarep **rep, const char *call) {
  *rep = NULL;
  if (strcmp(name, "native") == 0) return MPI_SUCCESS;
  pthread_mutex_lock(&registry_lock);
  *rep = lookup(name);
  pthread_mutex_unlock(&registry_lock);
  if (!*rep)
    return lmpio__err(MPI_ERR_UNSUPPORTED_DATAREP, call, "unknown data representation \"%s\"", name);
  return MPI_SUCCESS;
}

int lmpio_register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                           MPI_Datarep_conversion_function *write_conversion_fn,
                           MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state) {
  const char *call = "lmpio_register_datarep";
  if (!datarep || !*datarep) return lmpio__err(MPI_ERR_ARG, call, "empty or NULL representation name");
  if (strlen(datarep) > MPI_MAX_DATAREP_STRING)
    return lmpio__err(MPI_ERR_ARG, call, "representation name longer than MPI_MAX_DATAREP_STRING (%d)",
                      MPI_MAX_DATAREP_STRING);
  if (!dtype_file_extent_fn) return lmpio__err(MPI_ERR_ARG, call, "the extent function is NULL");
  pthread_mutex_lock(&registry_lock);
  int dup = strcmp(datarep, "native") == 0 || lookup(datarep) != NULL;
  lmpio__datarep *r = dup ? NULL : calloc(1, sizeof *r);
  if (r) { /* registrations are permanent, as in MPI */
    strcpy(r->name, datarep);
    r->read_fn = read_conversion_fn;
    r->write_fn = write_conversion_fn;
    r->extent_fn = dtype_file_extent_fn;
    r->extra = extra_state;
    r->next = registry;
    registry = r;
  }
  pthread_mutex_unlock(&registry_lock);
  if (dup)
    return lmpio__err(MPI_ERR_DUP_DATAREP, call, "data representation \"%s\" is already registered", datarep);
  if (!r) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  return MPI_SUCCESS;
}

/* Why the last conversion or extent function failed, in its own words
 * (per thread): set through lmpio_conversion_error_detail. */
static _Thread_local char conversion_detail[512];

void lmpio_conversion_error_detail(const char *text) {
  snprintf(conversion_detail, sizeof conversion_detail, "%s", text ? text : "");
}

int lmpio__datarep_error(int cls, const char *call, const char *what) {
  int rc = lmpio__err(cls, call, "%s%s%s", what, conversion_detail[0] ? ": " : "", conversion_detail);
  conversion_detail[0] = '\0';
  return rc;
}

int lmpio__datarep_type_extent(const lmpio__datarep *rep, MPI_Datatype basic, MPI_Aint *ext) {
  if (rep->builtin) {
    *ext = lmpio__external32_size(basic);
    return *ext > 0 ? MPI_SUCCESS : MPI_ERR_TYPE;
  }
  MPI_Aint e = 0;
  conversion_detail[0] = '\0'; /* only what this call says counts */
  if (rep->extent_fn(basic, &e, rep->extra) != MPI_SUCCESS || e <= 0) return MPI_ERR_CONVERSION;
  *ext = e;
  return MPI_SUCCESS;
}

int lmpio_file_get_type_extent(lmpio_file fh, MPI_Datatype datatype, MPI_Aint *extent) {
  const char *call = "lmpio_file_get_type_extent";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!extent) return lmpio__err(MPI_ERR_ARG, call, "extent is NULL");
  const lmpio__tm_node *n;
  int rc = lmpio__typemap_get_rep(datatype, fh->view.rep, &n, call);
  if (rc != MPI_SUCCESS) return rc;
  *extent = n->extent;
  lmpio__typemap_release(n);
  return MPI_SUCCESS;
}

/* ---- the conversion driver ------------------------------------------- */

#define DEFAULT_CONVERSION_BUFFER (4 << 20)
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
  int rc = lmpio__datarep_type_extent(rep, t, e);
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
  return lmpio__datarep_error(MPI_ERR_CONVERSION, call, what);
}

int lmpio__datarep_access(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                          MPI_Datatype type, int dir, MPI_Count *bytes, MPI_Offset *etypes,
                          const char *call) {
  const lmpio__datarep *rep = fh->view.rep;
  MPI_Datarep_conversion_function *fn = dir == LMPIO__READ ? rep->read_fn : rep->write_fn;
  MPI_Offset n_etypes;
  int rc = lmpio__count_etypes(fh, count, type, &n_etypes, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset fpos = offset * fh->view.esize;
  if (!rep->builtin && fn == MPI_CONVERSION_FN_NULL) { /* the data moves in native form */
    rc = lmpio__access_at(fh, fpos, buf, count, type, dir, bytes, call);
    *etypes = *bytes / fh->view.esize;
    return rc;
  }
  const lmpio__tm_node *m;
  if ((rc = lmpio__typemap_get(type, &m, call)) != MPI_SUCCESS) return rc;
  MPI_Count total = (MPI_Count)count * m->nitems;
  if (total == 0) {
    lmpio__typemap_release(m);
    return MPI_SUCCESS;
  }
  lmpio__cursor c;
  size_t cap = fh->conv_buffer_size > 0 ? (size_t)fh->conv_buffer_size : DEFAULT_CONVERSION_BUFFER;
  /* Small accesses get small buffers: an external32 item is at most twice
   * its native size (long double as double -> binary128), and there are at
   * most as many pieces as items. */
  if (rep->builtin && (MPI_Count)cap / 2 > (MPI_Count)count * m->size)
    cap = (size_t)((MPI_Count)count * m->size * 2);
  int max_pieces = total < MAX_PIECES ? (int)total : MAX_PIECES;
  char *stage = malloc(cap);
  piece *pc = malloc(sizeof *pc * (size_t)max_pieces);
  if (!stage || !pc || lmpio__cursor_init_leaves(&c, m, m->extent) != MPI_SUCCESS) {
    free(stage);
    free(pc);
    lmpio__typemap_release(m);
    return lmpio__err(MPI_ERR_NO_MEM, call, "cannot allocate the %zu-byte conversion buffer", cap);
  }
  extent_memo memo = {{0}, {0}, 0, 0};
  MPI_Offset position = 0, moved = 0; /* items converted, file bytes moved */
  MPI_Count native = 0;
  int eof = 0;
  while (rc == MPI_SUCCESS && !eof && position < total) {
    /* Plan a chunk: whole items, as many as fit the staging buffer. */
    int np = 0;
    MPI_Offset used = 0;
    MPI_Count items = 0;
    while (position + items < total && np < max_pieces) {
      MPI_Aint fext;
      MPI_Datatype basic = lmpio__cursor_peek_leaf(&c);
      if ((rc = memo_extent(rep, &memo, basic, &fext)) != MPI_SUCCESS) {
        rc = rc == MPI_ERR_TYPE
                 ? lmpio__err(MPI_ERR_TYPE, call, "a predefined type in the data has no %s representation", rep->name)
                 : lmpio__datarep_error(MPI_ERR_CONVERSION, call, "the extent function failed");
        break;
      }
      MPI_Count fit = ((MPI_Offset)cap - used) / fext;
      if (fit == 0) {
        if (used > 0) break;
        char *bigger = realloc(stage, (size_t)fext); /* one item larger than the buffer */
        if (!bigger) { rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"); break; }
        stage = bigger;
        cap = (size_t)fext;
        fit = 1;
      }
      piece *p = &pc[np++];
      p->n = lmpio__cursor_next_leaf(&c, fit < total - position - items ? fit : total - position - items,
                                     &p->mem, &p->basic, &p->nsize);
      p->fext = fext;
      p->stage = used;
      used += p->n * fext;
      items += p->n;
    }
    if (rc != MPI_SUCCESS) break;

    MPI_Count got = 0, nat = 0;
    if (dir == LMPIO__WRITE) {
      if (rep->builtin) {
        for (int i = 0; i < np && rc == MPI_SUCCESS; i++) {
          MPI_Count bad = 0;
          if (lmpio__external32_encode(pc[i].basic, (char *)buf + pc[i].mem, stage + pc[i].stage, pc[i].n, &bad) != MPI_SUCCESS)
            rc = lmpio__err(MPI_ERR_CONVERSION, call, "item %lld does not fit its %s size in the file",
                            (long long)(position + bad), rep->name);
          position += pc[i].n;
          nat += pc[i].n * pc[i].nsize;
        }
        position -= items;
      } else {
        conversion_detail[0] = '\0'; /* only what this call says counts */
        int code = fn(buf, type, (int)items, stage, position, rep->extra);
        if (code != MPI_SUCCESS) rc = conversion_error(rep, dir, code, position, call);
        for (int i = 0; i < np; i++) nat += pc[i].n * pc[i].nsize;
      }
      if (rc == MPI_SUCCESS) rc = lmpio__access_at(fh, fpos + moved, stage, (int)used, MPI_BYTE, dir, &got, call);
    } else {
      rc = lmpio__access_at(fh, fpos + moved, stage, (int)used, MPI_BYTE, dir, &got, call);
      if (got < used) { /* end of file: convert the whole items that arrived */
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
      }
      if (rep->builtin) {
        for (int i = 0; i < np && rc == MPI_SUCCESS; i++) {
          MPI_Count bad = 0;
          if (lmpio__external32_decode(pc[i].basic, stage + pc[i].stage, (char *)buf + pc[i].mem, pc[i].n, &bad) != MPI_SUCCESS)
            rc = lmpio__err(MPI_ERR_CONVERSION, call, "item %lld of the file does not fit its native type",
                            (long long)(position + bad));
          nat += pc[i].n * pc[i].nsize;
        }
      } else if (rc == MPI_SUCCESS && items > 0) {
        conversion_detail[0] = '\0'; /* only what this call says counts */
        int code = fn(buf, type, (int)items, stage, position, rep->extra);
        if (code != MPI_SUCCESS) rc = conversion_error(rep, dir, code, position, call);
        for (int i = 0; i < np; i++) nat += pc[i].n * pc[i].nsize;
      }
      if (eof) {
        used = 0;
        for (int i = 0; i < np; i++) used += pc[i].n * pc[i].fext;
      }
    }
    if (rc == MPI_SUCCESS) {
      position += items;
      moved += used;
      native += nat;
    }
  }
  *bytes = native;
  *etypes = moved / fh->view.esize;
  lmpio__cursor_free(&c);
  free(stage);
  free(pc);
  lmpio__typemap_release(m);
  return rc;
}
