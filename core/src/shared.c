/* The shared file pointer and the ordered collectives.
 *
 * The pointer lives in a small helper file beside the data file (same file
 * system, so it works when ranks are on different machines), read and
 * written under a byte-range lock: any rank updates it without the help of
 * any other rank, so a rank busy outside MPI stalls nobody.  The helper file
 * is created by whichever rank needs it first and removed at close; while it
 * is empty the pointer has its initial value.  With a one-rank communicator
 * nobody else can see the pointer, so it simply lives in the handle.
 *
 * Ordered collectives take one prefix sum of the requested sizes, move the
 * pointer once (the last rank, which knows the total, does it), broadcast
 * the base, and then every rank transfers its part in parallel. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SPLIT_NONE, SPLIT_READ_ORDERED, SPLIT_WRITE_ORDERED };

int lmpio__shared_init(lmpio_file fh, MPI_Offset initial, const char *call) {
  fh->sh_fd = -1;
  fh->sh_local = fh->sh_initial = initial;
  if (fh->size == 1) return MPI_SUCCESS;
  /* Rank 0 names the helper: unique per open, agreed by every rank. */
  struct { long long id; MPI_Offset initial; } msg = {0, initial};
  if (fh->rank == 0) {
    static unsigned serial;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    msg.id = (lmpio__hash(host) ^ ((long long)getpid() << 20) ^ (long long)__atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED)) & 0xffffffffffffLL;
  }
  MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, fh->comm);
  fh->sh_initial = msg.initial;
  const char *slash = strrchr(fh->path, '/');
  int dirlen = slash ? (int)(slash - fh->path + 1) : 0;
  const char *base = slash ? slash + 1 : fh->path;
  size_t n = strlen(fh->path) + 64;
  fh->sh_path = malloc(n);
  if (!fh->sh_path) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  snprintf(fh->sh_path, n, "%.*s.%s.lmpio-shfp-%llx", dirlen, fh->path, base, msg.id);
  return MPI_SUCCESS;
}

void lmpio__shared_free(lmpio_file fh) {
  if (fh->sh_fd >= 0) close(fh->sh_fd);
  fh->sh_fd = -1;
  if (fh->sh_path && fh->rank == 0) unlink(fh->sh_path); /* every rank closed it */
  free(fh->sh_path);
  fh->sh_path = NULL;
}

static int helper_open(lmpio_file fh, int create, const char *call) {
  if (fh->sh_fd >= 0) return MPI_SUCCESS;
  int fd;
  do fd = open(fh->sh_path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return lmpio__err_errno(errno, call, "cannot open the shared file pointer", fh->sh_path);
  fh->sh_fd = fd;
  return MPI_SUCCESS;
}

enum { SH_ADD, SH_SET };

/* Atomically reads the pointer into *old and replaces it by old + arg (ADD)
 * or arg (SET); a result below zero is refused. */
static int modify(lmpio_file fh, int op, MPI_Offset arg, MPI_Offset *old, const char *call) {
  if (fh->size == 1) {
    MPI_Offset v = op == SH_ADD ? fh->sh_local + arg : arg;
    if (v < 0) return lmpio__err(MPI_ERR_ARG, call, "shared file pointer would become negative (%lld)", (long long)v);
    *old = fh->sh_local;
    fh->sh_local = v;
    return MPI_SUCCESS;
  }
  int rc = helper_open(fh, 1, call);
  if (rc != MPI_SUCCESS) return rc;
  if (lmpio__posix_lock(fh->sh_fd, 1, 0, sizeof(long long)) < 0)
    return lmpio__err_errno(errno, call, "cannot lock the shared file pointer", fh->sh_path);
  long long cur = fh->sh_initial;
  long long got = lmpio__posix_pread_all(fh->sh_fd, &cur, sizeof cur, 0);
  if (got < 0) rc = lmpio__err_errno(errno, call, "cannot read the shared file pointer", fh->sh_path);
  else if (got < (long long)sizeof cur) cur = fh->sh_initial;
  long long v = op == SH_ADD ? cur + arg : arg;
  if (rc == MPI_SUCCESS && v < 0)
    rc = lmpio__err(MPI_ERR_ARG, call, "shared file pointer would become negative (%lld)", v);
  if (rc == MPI_SUCCESS && lmpio__posix_pwrite_all(fh->sh_fd, &v, sizeof v, 0) < 0)
    rc = lmpio__err_errno(errno, call, "cannot write the shared file pointer", fh->sh_path);
  lmpio__posix_unlock(fh->sh_fd, 0, sizeof(long long));
  *old = cur;
  return rc;
}

int lmpio__shared_get(lmpio_file fh, MPI_Offset *value, const char *call) {
  if (fh->size == 1) {
    *value = fh->sh_local;
    return MPI_SUCCESS;
  }
  int rc = helper_open(fh, 1, call);
  if (rc != MPI_SUCCESS) return rc;
  if (lmpio__posix_lock(fh->sh_fd, 0, 0, sizeof(long long)) < 0)
    return lmpio__err_errno(errno, call, "cannot lock the shared file pointer", fh->sh_path);
  long long cur = fh->sh_initial;
  long long got = lmpio__posix_pread_all(fh->sh_fd, &cur, sizeof cur, 0);
  lmpio__posix_unlock(fh->sh_fd, 0, sizeof(long long));
  if (got < 0) return lmpio__err_errno(errno, call, "cannot read the shared file pointer", fh->sh_path);
  *value = got < (long long)sizeof cur ? fh->sh_initial : cur;
  return MPI_SUCCESS;
}

int lmpio__shared_reset(lmpio_file fh, const char *call) {
  fh->sh_local = 0;
  if (fh->size == 1) return MPI_SUCCESS;
  int rc = MPI_SUCCESS;
  /* Every rank is inside set_view, so no update is in flight.  If nobody
   * has created the helper yet, the new initial value is all it takes. */
  if (fh->rank == 0 && (fh->sh_fd >= 0 || helper_open(fh, 0, call) == MPI_SUCCESS)) {
    MPI_Offset old;
    rc = modify(fh, SH_SET, 0, &old, call);
  }
  fh->sh_initial = 0;
  return lmpio__agree(fh->comm, rc, 0, call);
}

/* ---- independent shared-pointer access -------------------------------- */

static int shared_access(lmpio_file fh, void *buf, int count, MPI_Datatype type, int dir,
                         MPI_Status *status, const char *call) {
  int rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
  MPI_Offset n = 0, at = 0;
  MPI_Count bytes = 0;
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &n, call);
  /* Reserve the range first: concurrent calls then never overlap. */
  if (rc == MPI_SUCCESS && n > 0) rc = modify(fh, SH_ADD, n, &at, call);
  if (rc == MPI_SUCCESS && n > 0) rc = lmpio__access(fh, at, buf, count, type, dir, &bytes, call);
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio_file_read_shared(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                           MPI_Status *status) {
  return shared_access(fh, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_shared");
}

int lmpio_file_write_shared(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                            MPI_Status *status) {
  return shared_access(fh, (void *)buf, count, datatype, LMPIO__WRITE, status,
                       "lmpio_file_write_shared");
}

int lmpio_file_get_position_shared(lmpio_file fh, MPI_Offset *offset) {
  const char *call = "lmpio_file_get_position_shared";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (!offset) return lmpio__err(MPI_ERR_ARG, call, "offset is NULL");
  return lmpio__shared_get(fh, offset, call);
}

int lmpio_file_seek_shared(lmpio_file fh, MPI_Offset offset, int whence) {
  const char *call = "lmpio_file_seek_shared";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int rc = MPI_SUCCESS;
  if (whence != MPI_SEEK_SET && whence != MPI_SEEK_CUR && whence != MPI_SEEK_END)
    rc = lmpio__err(MPI_ERR_ARG, call, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  rc = lmpio__agree(fh->comm, rc, (long long)offset * 4 + whence, call);
  if (rc != MPI_SUCCESS) return rc;
  if (fh->rank == 0) {
    MPI_Offset old, base = 0;
    if (whence == MPI_SEEK_END) {
      MPI_Offset size;
      rc = lmpio_file_get_size(fh, &size);
      base = (lmpio__view_data_before(&fh->view, size) + fh->view.esize - 1) / fh->view.esize;
    }
    if (rc == MPI_SUCCESS)
      rc = whence == MPI_SEEK_CUR ? modify(fh, SH_ADD, offset, &old, call)
                                  : modify(fh, SH_SET, base + offset, &old, call);
  }
  return lmpio__agree(fh->comm, rc, 0, call);
}

/* ---- ordered collectives ------------------------------------------------ */

static int ordered(lmpio_file fh, void *buf, int count, MPI_Datatype type, int dir,
                   MPI_Count *bytes, const char *call) {
  *bytes = 0;
  int rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
  MPI_Offset n = 0;
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &n, call);
  /* One prefix sum of {failed, etypes}: each rank's end position, the total
   * and the number of failures at the last rank. */
  long long mine[2] = {rc != MPI_SUCCESS, rc == MPI_SUCCESS ? n : 0}, incl[2];
  if (MPI_Scan(mine, incl, 2, MPI_LONG_LONG, MPI_SUM, fh->comm) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Scan failed");
  long long base[2] = {0, 0}; /* {somebody failed, pointer before this call} */
  if (fh->rank == fh->size - 1) {
    if (incl[0] > 0) base[0] = 1;
    else if (incl[1] > 0 && (rc = modify(fh, SH_ADD, incl[1], &base[1], call)) != MPI_SUCCESS) base[0] = 1;
  }
  MPI_Bcast(base, 2, MPI_LONG_LONG, fh->size - 1, fh->comm);
  if (base[0]) return lmpio__agree(fh->comm, rc, 0, call); /* somebody failed: who and why */
  if (n > 0) rc = lmpio__access(fh, base[1] + incl[1] - n, buf, count, type, dir, bytes, call);
  return lmpio__agree(fh->comm, rc, 0, call);
}

static int ordered_call(lmpio_file fh, void *buf, int count, MPI_Datatype type, int dir,
                        MPI_Status *status, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  MPI_Count bytes;
  int rc = ordered(fh, buf, count, type, dir, &bytes, call);
  lmpio__set_status(status, bytes);
  return rc;
}

int lmpio_file_read_ordered(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                            MPI_Status *status) {
  return ordered_call(fh, buf, count, datatype, LMPIO__READ, status, "lmpio_file_read_ordered");
}

int lmpio_file_write_ordered(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                             MPI_Status *status) {
  return ordered_call(fh, (void *)buf, count, datatype, LMPIO__WRITE, status,
                      "lmpio_file_write_ordered");
}

/* Split collectives: _begin does the whole transfer, _end hands over the
 * outcome; one split collective may be active per file handle. */
static int split_begin(lmpio_file fh, void *buf, int count, MPI_Datatype type, int kind,
                       const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int rc = MPI_SUCCESS;
  if (fh->split_kind != SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is already active on file \"%s\"", fh->path);
  rc = lmpio__agree(fh->comm, rc, 0, call);
  if (rc != MPI_SUCCESS) return rc;
  fh->split_kind = kind;
  fh->split_rc = ordered(fh, buf, count, type, kind == SPLIT_READ_ORDERED ? LMPIO__READ : LMPIO__WRITE,
                         &fh->split_bytes, call);
  return MPI_SUCCESS;
}

static int split_end(lmpio_file fh, int kind, MPI_Status *status, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (fh->split_kind != kind)
    return lmpio__err(MPI_ERR_OTHER, call, "no matching split collective is active on file \"%s\"", fh->path);
  fh->split_kind = SPLIT_NONE;
  lmpio__set_status(status, fh->split_bytes);
  return fh->split_rc;
}

int lmpio_file_read_ordered_begin(lmpio_file fh, void *buf, int count, MPI_Datatype datatype) {
  return split_begin(fh, buf, count, datatype, SPLIT_READ_ORDERED, "lmpio_file_read_ordered_begin");
}

int lmpio_file_read_ordered_end(lmpio_file fh, void *buf, MPI_Status *status) {
  (void)buf;
  return split_end(fh, SPLIT_READ_ORDERED, status, "lmpio_file_read_ordered_end");
}

int lmpio_file_write_ordered_begin(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype) {
  return split_begin(fh, (void *)buf, count, datatype, SPLIT_WRITE_ORDERED, "lmpio_file_write_ordered_begin");
}

int lmpio_file_write_ordered_end(lmpio_file fh, const void *buf, MPI_Status *status) {
  (void)buf;
  return split_end(fh, SPLIT_WRITE_ORDERED, status, "lmpio_file_write_ordered_end");
}
