/* Nonblocking and split-collective data access.
 *
 * Every operation here completes in the call that starts it: the i-calls run
 * the blocking path (access.c, collective.c, shared.c) and then hand back an
 * MPI generalized request that is already complete, so MPI_Wait, MPI_Test and
 * MPI_Waitall return at once with the status (MPI_Get_count works on it).
 * The standard allows this (a nonblocking operation may complete in its
 * start call; a split collective may be done entirely by _begin), it is
 * simple, and it is correct: pointers advance when the call is initiated,
 * errors are reported by the initiating call (with *request set to
 * MPI_REQUEST_NULL), and the collective variants agree on the outcome as the
 * blocking ones do.  What it does not give is overlap of I/O with
 * computation: that would need a progress thread (or asynchronous POSIX I/O)
 * carrying the transfer while the caller computes -- future work.
 *
 * Split collectives keep their state in the handle (fh->split, this file:
 * one active per handle, _end must match _begin's kind and buffer). */
#include "internal.h"

#include <stdlib.h>

typedef struct {
  MPI_Count bytes; /* data bytes moved, for the status */
} record;

static int query_fn(void *extra_state, MPI_Status *status) {
  const record *r = extra_state;
  lmpio__set_status(status, r->bytes);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = MPI_SUCCESS;
  return MPI_SUCCESS;
}

static int free_fn(void *extra_state) {
  free(extra_state);
  return MPI_SUCCESS;
}

static int cancel_fn(void *extra_state, int complete) {
  (void)extra_state; /* always complete: nothing to cancel */
  (void)complete;
  return MPI_SUCCESS;
}

/* Before the transfer: the record and the generalized request, so that
 * nothing can fail after data moved (for the collective variants the
 * outcome of this step is agreed with the transfer's checks). */
static int prepare(MPI_Request *request, record **r, const char *call) {
  *r = NULL;
  if (!request) return lmpio__err(MPI_ERR_ARG, call, "request is NULL");
  *request = MPI_REQUEST_NULL;
  record *p = calloc(1, sizeof *p);
  if (!p) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  if (MPI_Grequest_start(query_fn, free_fn, cancel_fn, p, request) != MPI_SUCCESS) {
    free(p);
    *request = MPI_REQUEST_NULL;
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Grequest_start failed");
  }
  *r = p;
  return MPI_SUCCESS;
}

/* After the transfer: completes the request with the status's byte count,
 * or, when the transfer failed, frees it (free_fn frees the record). */
static int finish(int rc, const MPI_Status *st, record *r, MPI_Request *request) {
  if (!r) return rc; /* prepare failed: rc is its (agreed) error */
  if (rc == MPI_SUCCESS) {
    MPI_Count bytes = 0;
    if (MPI_Get_elements_x(st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED) bytes = 0;
    r->bytes = bytes;
  }
  MPI_Grequest_complete(*request);
  if (rc != MPI_SUCCESS) MPI_Request_free(request); /* sets MPI_REQUEST_NULL */
  return rc;
}

static int independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  record *r;
  int rc = prepare(request, &r, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st;
  rc = lmpio__independent(fh, offset, use_fp, buf, count, type, dir, &st, call);
  return finish(rc, &st, r, request);
}

static int collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                      MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  record *r;
  int rc = prepare(request, &r, call);
  MPI_Status st;
  rc = lmpio__collective(fh, offset, use_fp, buf, count, type, dir, &st, rc, call);
  return finish(rc, &st, r, request);
}

static int shared(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                  MPI_Request *request, const char *call) {
  record *r;
  int rc = prepare(request, &r, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st;
  rc = lmpio__shared_access(fh, buf, count, type, dir, &st, call);
  return finish(rc, &st, r, request);
}

#define IACCESS(name, how, args, offset, use_fp, buf, dir)                                      \
  int lmpio_file_##name args {                                                                 \
    return how(fh, offset, use_fp, (void *)buf, count, datatype, dir, request, "lmpio_file_" #name); \
  }
#define ISHARED(name, args, buf, dir)                                                           \
  int lmpio_file_##name args {                                                                 \
    return shared(fh, (void *)buf, count, datatype, dir, request, "lmpio_file_" #name);         \
  }
#define IARGS_AT(C, B) (lmpio_file fh, MPI_Offset offset, B buf, C count, MPI_Datatype datatype, MPI_Request *request)
#define IARGS(C, B) (lmpio_file fh, B buf, C count, MPI_Datatype datatype, MPI_Request *request)
IACCESS(iread_at, independent, IARGS_AT(int, void *), offset, 0, buf, LMPIO__READ)
IACCESS(iwrite_at, independent, IARGS_AT(int, const void *), offset, 0, buf, LMPIO__WRITE)
IACCESS(iread, independent, IARGS(int, void *), 0, 1, buf, LMPIO__READ)
IACCESS(iwrite, independent, IARGS(int, const void *), 0, 1, buf, LMPIO__WRITE)
IACCESS(iread_at_all, collective, IARGS_AT(int, void *), offset, 0, buf, LMPIO__READ)
IACCESS(iwrite_at_all, collective, IARGS_AT(int, const void *), offset, 0, buf, LMPIO__WRITE)
IACCESS(iread_all, collective, IARGS(int, void *), 0, 1, buf, LMPIO__READ)
IACCESS(iwrite_all, collective, IARGS(int, const void *), 0, 1, buf, LMPIO__WRITE)
ISHARED(iread_shared, IARGS(int, void *), buf, LMPIO__READ)
ISHARED(iwrite_shared, IARGS(int, const void *), buf, LMPIO__WRITE)
IACCESS(iread_at_c, independent, IARGS_AT(MPI_Count, void *), offset, 0, buf, LMPIO__READ)
IACCESS(iwrite_at_c, independent, IARGS_AT(MPI_Count, const void *), offset, 0, buf, LMPIO__WRITE)
IACCESS(iread_c, independent, IARGS(MPI_Count, void *), 0, 1, buf, LMPIO__READ)
IACCESS(iwrite_c, independent, IARGS(MPI_Count, const void *), 0, 1, buf, LMPIO__WRITE)
IACCESS(iread_at_all_c, collective, IARGS_AT(MPI_Count, void *), offset, 0, buf, LMPIO__READ)
IACCESS(iwrite_at_all_c, collective, IARGS_AT(MPI_Count, const void *), offset, 0, buf, LMPIO__WRITE)
IACCESS(iread_all_c, collective, IARGS(MPI_Count, void *), 0, 1, buf, LMPIO__READ)
IACCESS(iwrite_all_c, collective, IARGS(MPI_Count, const void *), 0, 1, buf, LMPIO__WRITE)
ISHARED(iread_shared_c, IARGS(MPI_Count, void *), buf, LMPIO__READ)
ISHARED(iwrite_shared_c, IARGS(MPI_Count, const void *), buf, LMPIO__WRITE)

/* ---- split collectives --------------------------------------------------- */

/* _begin runs the blocking collective (which fails on every rank while a
 * split collective is active) and records the outcome for _end; a failed
 * _begin (the same error on every rank) leaves none active. */
static int split_begin(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int kind, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int dir = kind == LMPIO__SPLIT_READ_ORDERED || kind == LMPIO__SPLIT_READ_AT_ALL || kind == LMPIO__SPLIT_READ_ALL
                ? LMPIO__READ : LMPIO__WRITE;
  MPI_Count bytes = 0;
  int rc;
  if (kind == LMPIO__SPLIT_READ_ORDERED || kind == LMPIO__SPLIT_WRITE_ORDERED) {
    rc = fh->split.kind != LMPIO__SPLIT_NONE
             ? lmpio__err(MPI_ERR_OTHER, call, "a split collective is already active on file \"%s\"", fh->path)
             : MPI_SUCCESS;
    rc = lmpio__ordered(fh, buf, count, type, dir, &bytes, rc, call);
  } else {
    MPI_Status st;
    rc = lmpio__collective(fh, offset, use_fp, buf, count, type, dir, &st, MPI_SUCCESS, call);
    if (rc == MPI_SUCCESS && (MPI_Get_elements_x(&st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED))
      bytes = 0;
  }
  if (rc != MPI_SUCCESS) return rc;
  fh->split.kind = kind;
  fh->split.bytes = bytes;
  fh->split.buf = buf;
  return MPI_SUCCESS;
}

static int split_end(lmpio_file fh, int kind, const void *buf, MPI_Status *status, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  if (fh->split.kind != kind)
    return lmpio__err(MPI_ERR_OTHER, call, "no matching split collective is active on file \"%s\"", fh->path);
  if (buf != fh->split.buf)
    return lmpio__err(MPI_ERR_OTHER, call, "buf is not the buffer given to the matching _begin on file \"%s\"",
                      fh->path);
  fh->split.kind = LMPIO__SPLIT_NONE;
  fh->split.buf = NULL;
  lmpio__set_status(status, fh->split.bytes);
  return MPI_SUCCESS;
}

#define SPLIT(name, C, args, offset, use_fp, buf, kind)                                          \
  int lmpio_file_##name args {                                                                 \
    return split_begin(fh, offset, use_fp, (void *)buf, count, datatype, kind, "lmpio_file_" #name); \
  }
#define SPLIT_END(name, B, kind)                                                                \
  int lmpio_file_##name(lmpio_file fh, B buf, MPI_Status *status) {                            \
    return split_end(fh, kind, buf, status, "lmpio_file_" #name);                              \
  }
#define SARGS_AT(C, B) (lmpio_file fh, MPI_Offset offset, B buf, C count, MPI_Datatype datatype)
#define SARGS(C, B) (lmpio_file fh, B buf, C count, MPI_Datatype datatype)
SPLIT(read_at_all_begin, int, SARGS_AT(int, void *), offset, 0, buf, LMPIO__SPLIT_READ_AT_ALL)
SPLIT(write_at_all_begin, int, SARGS_AT(int, const void *), offset, 0, buf, LMPIO__SPLIT_WRITE_AT_ALL)
SPLIT(read_all_begin, int, SARGS(int, void *), 0, 1, buf, LMPIO__SPLIT_READ_ALL)
SPLIT(write_all_begin, int, SARGS(int, const void *), 0, 1, buf, LMPIO__SPLIT_WRITE_ALL)
SPLIT(read_ordered_begin, int, SARGS(int, void *), 0, 0, buf, LMPIO__SPLIT_READ_ORDERED)
SPLIT(write_ordered_begin, int, SARGS(int, const void *), 0, 0, buf, LMPIO__SPLIT_WRITE_ORDERED)
SPLIT(read_at_all_begin_c, MPI_Count, SARGS_AT(MPI_Count, void *), offset, 0, buf, LMPIO__SPLIT_READ_AT_ALL)
SPLIT(write_at_all_begin_c, MPI_Count, SARGS_AT(MPI_Count, const void *), offset, 0, buf, LMPIO__SPLIT_WRITE_AT_ALL)
SPLIT(read_all_begin_c, MPI_Count, SARGS(MPI_Count, void *), 0, 1, buf, LMPIO__SPLIT_READ_ALL)
SPLIT(write_all_begin_c, MPI_Count, SARGS(MPI_Count, const void *), 0, 1, buf, LMPIO__SPLIT_WRITE_ALL)
SPLIT(read_ordered_begin_c, MPI_Count, SARGS(MPI_Count, void *), 0, 0, buf, LMPIO__SPLIT_READ_ORDERED)
SPLIT(write_ordered_begin_c, MPI_Count, SARGS(MPI_Count, const void *), 0, 0, buf, LMPIO__SPLIT_WRITE_ORDERED)
SPLIT_END(read_at_all_end, void *, LMPIO__SPLIT_READ_AT_ALL)
SPLIT_END(write_at_all_end, const void *, LMPIO__SPLIT_WRITE_AT_ALL)
SPLIT_END(read_all_end, void *, LMPIO__SPLIT_READ_ALL)
SPLIT_END(write_all_end, const void *, LMPIO__SPLIT_WRITE_ALL)
SPLIT_END(read_ordered_end, void *, LMPIO__SPLIT_READ_ORDERED)
SPLIT_END(write_ordered_end, const void *, LMPIO__SPLIT_WRITE_ORDERED)
