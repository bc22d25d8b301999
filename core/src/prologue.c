/* The argument prologue of the data access calls: the checks every entry
 * makes (handle, access mode, pointer), the etypes a count makes in the
 * view, the range it covers, and the status (their common cases inline in
 * run.h, as is the handle held around one transfer, the runs' frame); and
 * the plans made of a handle (a snapshot: the plan never sees the handle).
 * Nothing here moves data. */
#include "run.h"

#include <string.h>

int lmpio__check_access_refused(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pointer,
                                const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (count < 0) return lmpio__err(MPI_ERR_COUNT, call, "negative count %lld", (long long)count);
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

int lmpio__etypes_counted(lmpio_file fh, MPI_Count count, const lmpio__tm_node *m, MPI_Offset *n,
                          const char *call) {
  MPI_Count total;
  if (__builtin_mul_overflow(count, m->size, &total))
    return lmpio__err(MPI_ERR_COUNT, call, "count %lld of a %lld-byte datatype overflows a 64-bit size",
                      (long long)count, (long long)m->size);
  if (total > 0 && fh->view.empty)
    return lmpio__err(MPI_ERR_ARG, call, "the view of file \"%s\" has no data (its filetype has size 0): only a count of 0 can be accessed",
                      fh->path);
  if (fh->view.esize == 1) { /* (no division: the default view's etype, MPI_BYTE) */
    *n = total;
    return MPI_SUCCESS;
  }
  if (total % fh->view.esize != 0)
    return lmpio__err(MPI_ERR_TYPE, call, "%lld data bytes are not a whole number of etypes of %lld bytes",
                      (long long)total, (long long)fh->view.esize);
  *n = total / fh->view.esize;
  return MPI_SUCCESS;
}

int lmpio__count_etypes(lmpio_file fh, MPI_Count count, MPI_Datatype type, MPI_Offset *n,
                        const char *call) {
  return lmpio__etypes_held(fh, count, type, n, NULL, call);
}

int lmpio__etypes_held(lmpio_file fh, MPI_Count count, MPI_Datatype type, MPI_Offset *n,
                       const lmpio__tm_node **held, const char *call) {
  const lmpio__tm_node *m; /* sizes as in the file */
  if (held) *held = NULL;
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  rc = lmpio__etypes_of(fh, count, m, n, call);
  if (held && rc == MPI_SUCCESS) *held = m;
  else lmpio__typemap_release(m);
  return rc;
}

void lmpio__set_status(MPI_Status *status, MPI_Count bytes) {
  if (status == MPI_STATUS_IGNORE) return;
  /* MPI_Get_count / MPI_Get_elements convert bytes to the caller's type. */
  MPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  MPI_Status_set_cancelled(status, 0);
}

/* Checks that n etypes from etype offset `offset` of the view have file
 * offsets that fit an MPI_Offset; *pos: the data byte of offset. */
int lmpio__check_range(const lmpio__view *v, MPI_Offset offset, MPI_Offset n, MPI_Offset *pos, const char *call) {
  MPI_Offset end, last;
  if (!lmpio__mul_ok(n, v->esize, &n)) return lmpio__err(MPI_ERR_COUNT, call, "count overflows a 64-bit size");
  if (!lmpio__mul_ok(offset, v->esize, pos) || !lmpio__add_ok(*pos, n, &end))
    return lmpio__err(MPI_ERR_ARG, call, "offset %lld (etypes of %lld bytes) overflows a 64-bit file position",
                      (long long)offset, (long long)v->esize);
  if (n > 0) return lmpio__view_byte(v, end - 1, &last, call);
  return MPI_SUCCESS;
}

/* ---- plans of the handle --------------------------------------------------- */

void lmpio__prologue_plan(lmpio__plan *p, lmpio_file fh, int dir) {
  p->dir = dir;
  p->fd = fh->fd;
  p->drv = fh->drv;
  p->fd_readable = fh->fd_readable;
  p->fd_in_memory = fh->fd_in_memory;
  p->path = fh->path;
  p->disp = fh->view.disp;
  p->ft = fh->view.ft;
  lmpio__typemap_retain(p->ft);
  p->contiguous = fh->view.contiguous;
  p->atomic = fh->atomic;
  p->lock_direct = fh->view.any_holes;
  p->gate = fh->gate;
  p->sieve_check = fh->drv->id == LMPIO__FS_LOCAL;
  p->hints = fh->hints;
  p->rep = fh->view.rep;
  p->esize = fh->view.esize;
  p->stats = fh->stats;
  p->map = fh->map;
  p->aggregator = 0;
  p->rank = fh->rank;
  p->size = fh->size;
}

void lmpio__prologue_coll_plan(lmpio__coll_plan *cp, lmpio_file fh, MPI_Comm comm, int dir) {
  lmpio__prologue_plan(&cp->plan, fh, dir);
  cp->comm = comm;
  cp->rank = fh->rank;
  cp->size = fh->size;
  cp->one_node = fh->one_node;
  cp->way = &fh->coll_way[dir];
  cp->naggr = fh->naggr;
  memcpy(cp->aggr, fh->aggr, sizeof cp->aggr);
  cp->align = lmpio__domain_alignment(fh);
}

void lmpio__prologue_drop(lmpio_file fh) {
  for (int dir = 0; dir < 2; dir++) lmpio__coll_plan_free(&fh->plans[dir]);
}

void lmpio__prologue_refresh(lmpio_file fh) {
  lmpio__prologue_drop(fh);
  fh->coll_way[0] = fh->coll_way[1] = 0; /* (a new view: no guess from the old one's calls) */
  for (int dir = 0; dir < 2; dir++) lmpio__prologue_coll_plan(&fh->plans[dir], fh, fh->comm, dir);
}
