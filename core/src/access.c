/* Independent data access: one routine serves explicit offsets and
 * individual pointers, reads and writes.  This file is an entry: it checks
 * arguments, picks the pointer, counts etypes and fills the status; the
 * plan, the engine and the conversion driver move the data. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lmpio__check_access(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pointer,
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

/* Etypes that count items of a type whose file layout is m make in the view. */
static int etypes_of(lmpio_file fh, MPI_Count count, const lmpio__tm_node *m, MPI_Offset *n, const char *call) {
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
  const lmpio__tm_node *m; /* sizes as in the file */
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  rc = etypes_of(fh, count, m, n, call);
  lmpio__typemap_release(m);
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

int lmpio__access(lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype type,
                  int dir, MPI_Count *bytes, MPI_Offset *etypes, const char *call) {
  *bytes = 0;
  *etypes = 0;
  if (offset < 0) return lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  /* A native view: the type's layout in memory is its layout in the file,
   * looked up once for the count and the transfer. */
  const lmpio__tm_node *m;
  int rc = lmpio__typemap_get_rep(type, fh->view.rep, &m, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset n, pos, fbytes = 0;
  if ((rc = etypes_of(fh, count, m, &n, call)) != MPI_SUCCESS || n == 0 ||
      (rc = lmpio__check_range(&fh->view, offset, n, &pos, call)) != MPI_SUCCESS) {
    lmpio__typemap_release(m);
    return rc;
  }
  lmpio__hold(fh);
  lmpio__plan own;
  const lmpio__plan *p = lmpio__plan_of(fh, dir, &own);
  rc = lmpio__transfer_node(p, pos, buf, count, type, fh->view.rep ? NULL : m, bytes, &fbytes, call);
  if (p == &own) lmpio__plan_free(&own);
  lmpio__release(fh);
  lmpio__typemap_release(m);
  *etypes = fh->view.esize == 1 ? fbytes : fbytes / fh->view.esize;
  return rc;
}

/* ---- public calls: explicit offsets and individual pointers ----------- */

int lmpio__independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
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

#define INDEPENDENT(name, args, offset, use_fp, buf, dir)                                      \
  int lmpio_file_##name args {                                                                 \
    LMPIO__COUNTED(fh, LMPIO__K_INDEP, dir, lmpio__independent(fh, offset, use_fp, (void *)buf, count, \
                                                               datatype, dir, status, "lmpio_file_" #name)); \
  }
INDEPENDENT(read_at, (lmpio_file fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__READ)
INDEPENDENT(write_at, (lmpio_file fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__WRITE)
INDEPENDENT(read, (lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__READ)
INDEPENDENT(write, (lmpio_file fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__WRITE)
INDEPENDENT(read_at_c, (lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__READ)
INDEPENDENT(write_at_c, (lmpio_file fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__WRITE)
INDEPENDENT(read_c, (lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__READ)
INDEPENDENT(write_c, (lmpio_file fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__WRITE)

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
    if (fh->drv->size(fh->fd, &size) < 0) return lmpio__os_error(errno, call, "cannot stat", fh->path);
    /* End of file in this view: the etypes that start before it, rounded up. */
    MPI_Offset data = lmpio__view_data_before(&fh->view, size);
    base = data / fh->view.esize + (data % fh->view.esize != 0);
    break;
  }
  default:
    return lmpio__err(MPI_ERR_ARG, call, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  }
  MPI_Offset to;
  if (!lmpio__add_ok(base, offset, &to))
    return lmpio__err(MPI_ERR_ARG, call, "seek to %lld + %lld overflows a 64-bit offset", (long long)base,
                      (long long)offset);
  if (to < 0) return lmpio__err(MPI_ERR_ARG, call, "seek to negative offset %lld", (long long)to);
  /* An offset no byte of the file can have is refused here, not wrapped later. */
  MPI_Offset pos, byte;
  int rc = MPI_SUCCESS;
  if (!lmpio__mul_ok(to, fh->view.esize, &pos) || (rc = lmpio__view_byte(&fh->view, pos, &byte, call)) != MPI_SUCCESS)
    return rc != MPI_SUCCESS ? rc : lmpio__err(MPI_ERR_ARG, call, "offset %lld (etypes of %lld bytes) overflows a 64-bit file position",
                                               (long long)to, (long long)fh->view.esize);
  fh->fp = to;
  return MPI_SUCCESS;
}

int lmpio_file_get_position(lmpio_file fh, MPI_Offset *offset) {
  const char *call = "lmpio_file_get_position";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!offset) return lmpio__err(MPI_ERR_ARG, call, "offset is NULL");
  *offset = fh->fp;
  return MPI_SUCCESS;
}
