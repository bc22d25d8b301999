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
 * Split collectives keep their state in the handle (shared.c: one active per
 * handle, _end must match _begin's kind and buffer). */
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

static int independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                       MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  record *r;
  int rc = prepare(request, &r, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st;
  rc = lmpio__independent(fh, offset, use_fp, buf, count, type, dir, &st, call);
  return finish(rc, &st, r, request);
}

static int collective(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                      MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  record *r;
  int rc = prepare(request, &r, call);
  MPI_Status st;
  rc = lmpio__collective(fh, offset, use_fp, buf, count, type, dir, &st, rc, call);
  return finish(rc, &st, r, request);
}

static int shared(lmpio_file fh, void *buf, int count, MPI_Datatype type, int dir,
                  MPI_Request *request, const char *call) {
  record *r;
  int rc = prepare(request, &r, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st;
  rc = lmpio__shared_access(fh, buf, count, type, dir, &st, call);
  return finish(rc, &st, r, request);
}

int lmpio_file_iread_at(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                        MPI_Datatype datatype, MPI_Request *request) {
  return independent(fh, offset, 0, buf, count, datatype, LMPIO__READ, request, "lmpio_file_iread_at");
}

int lmpio_file_iwrite_at(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                         MPI_Datatype datatype, MPI_Request *request) {
  return independent(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, request,
                     "lmpio_file_iwrite_at");
}

int lmpio_file_iread_at_all(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                            MPI_Datatype datatype, MPI_Request *request) {
  return collective(fh, offset, 0, buf, count, datatype, LMPIO__READ, request, "lmpio_file_iread_at_all");
}

int lmpio_file_iwrite_at_all(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                             MPI_Datatype datatype, MPI_Request *request) {
  return collective(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, request,
                    "lmpio_file_iwrite_at_all");
}

int lmpio_file_iread(lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
  return independent(fh, 0, 1, buf, count, datatype, LMPIO__READ, request, "lmpio_file_iread");
}

int lmpio_file_iwrite(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                      MPI_Request *request) {
  return independent(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, request, "lmpio_file_iwrite");
}

int lmpio_file_iread_all(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                         MPI_Request *request) {
  return collective(fh, 0, 1, buf, count, datatype, LMPIO__READ, request, "lmpio_file_iread_all");
}

int lmpio_file_iwrite_all(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                          MPI_Request *request) {
  return collective(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, request, "lmpio_file_iwrite_all");
}

int lmpio_file_iread_shared(lmpio_file fh, void *buf, int count, MPI_Datatype datatype,
                            MPI_Request *request) {
  return shared(fh, buf, count, datatype, LMPIO__READ, request, "lmpio_file_iread_shared");
}

int lmpio_file_iwrite_shared(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype,
                             MPI_Request *request) {
  return shared(fh, (void *)buf, count, datatype, LMPIO__WRITE, request, "lmpio_file_iwrite_shared");
}

/* ---- split collectives --------------------------------------------------- */

/* _begin runs the blocking collective (which fails on every rank while a
 * split collective is active) and records the outcome for _end. */
static int split_begin(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, int count,
                       MPI_Datatype type, int dir, int kind, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  MPI_Status st;
  int rc = lmpio__collective(fh, offset, use_fp, buf, count, type, dir, &st, MPI_SUCCESS, call);
  if (rc != MPI_SUCCESS) return rc; /* agreed by every rank; nothing becomes active */
  MPI_Count bytes = 0;
  if (MPI_Get_elements_x(&st, MPI_BYTE, &bytes) != MPI_SUCCESS || bytes == MPI_UNDEFINED) bytes = 0;
  lmpio__split_record(fh, kind, buf, bytes);
  return MPI_SUCCESS;
}

int lmpio_file_read_at_all_begin(lmpio_file fh, MPI_Offset offset, void *buf, int count,
                                 MPI_Datatype datatype) {
  return split_begin(fh, offset, 0, buf, count, datatype, LMPIO__READ, LMPIO__SPLIT_READ_AT_ALL,
                     "lmpio_file_read_at_all_begin");
}

int lmpio_file_read_at_all_end(lmpio_file fh, void *buf, MPI_Status *status) {
  return lmpio__split_end(fh, LMPIO__SPLIT_READ_AT_ALL, buf, status, "lmpio_file_read_at_all_end");
}

int lmpio_file_write_at_all_begin(lmpio_file fh, MPI_Offset offset, const void *buf, int count,
                                  MPI_Datatype datatype) {
  return split_begin(fh, offset, 0, (void *)buf, count, datatype, LMPIO__WRITE, LMPIO__SPLIT_WRITE_AT_ALL,
                     "lmpio_file_write_at_all_begin");
}

int lmpio_file_write_at_all_end(lmpio_file fh, const void *buf, MPI_Status *status) {
  return lmpio__split_end(fh, LMPIO__SPLIT_WRITE_AT_ALL, buf, status, "lmpio_file_write_at_all_end");
}

int lmpio_file_read_all_begin(lmpio_file fh, void *buf, int count, MPI_Datatype datatype) {
  return split_begin(fh, 0, 1, buf, count, datatype, LMPIO__READ, LMPIO__SPLIT_READ_ALL,
                     "lmpio_file_read_all_begin");
}

int lmpio_file_read_all_end(lmpio_file fh, void *buf, MPI_Status *status) {
  return lmpio__split_end(fh, LMPIO__SPLIT_READ_ALL, buf, status, "lmpio_file_read_all_end");
}

int lmpio_file_write_all_begin(lmpio_file fh, const void *buf, int count, MPI_Datatype datatype) {
  return split_begin(fh, 0, 1, (void *)buf, count, datatype, LMPIO__WRITE, LMPIO__SPLIT_WRITE_ALL,
                     "lmpio_file_write_all_begin");
}

int lmpio_file_write_all_end(lmpio_file fh, const void *buf, MPI_Status *status) {
  return lmpio__split_end(fh, LMPIO__SPLIT_WRITE_ALL, buf, status, "lmpio_file_write_all_end");
}
