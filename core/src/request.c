/* Nonblocking and split-collective data access.
 *
 * With MPI_THREAD_MULTIPLE the operations really run in the background: the
 * initiating call checks the arguments, moves the file pointer, makes the
 * transfer's plan (view, atomicity, hints, descriptor; a collective's also
 * its communicator and aggregators; the pointer to use becomes a position)
 * and queues it on the handle's worker (async.c), then returns; the worker
 * runs the plan while the caller computes, through the routines under the
 * blocking calls (lmpio__transfer, lmpio__coll_transfer: never the handle,
 * never an entry), and MPI_Wait / MPI_Test / MPI_Waitall / MPI_Testany on the
 * generalized request (or the split collective's _end) complete it:
 *
 *  - pointers (the individual one, and the shared one for iread_shared and
 *    iwrite_shared) move when the call is initiated, by the whole amount
 *    requested (the standard: "the next etype after the last one that will
 *    be accessed"), so the next call can be issued at once;
 *  - argument errors are reported by the initiating call, with *request
 *    set to MPI_REQUEST_NULL (collective variants agree on them there, and
 *    on whether every rank can run in the background); a failure in the
 *    background (a failed pwrite, a full disk) is the outcome of the
 *    completing call: MPI_Wait returns its class through MPI_COMM_WORLD's
 *    error handler (the status's MPI_ERROR under MPI_Waitall) and
 *    lmpio_last_error_message() on the completing thread gives its message
 *    (or, under lmpio_request_failures, the request completes as a success
 *    for MPI and the layer above hears of the failure: the drop-in hands it
 *    to the file's error handler);
 *  - collective variants: the initiating call checks the arguments and
 *    talks to no other rank; the worker runs the collective from its first
 *    agreement on (which carries those checks' outcome; then the two-phase
 *    exchange and the file transfer) on a duplicate communicator, in the
 *    order of initiation, and agrees on the outcome before completing the
 *    request, so it is the same on every rank;
 *  - a derived datatype is duplicated at initiation (the caller may free
 *    it); the buffer is the caller's until completion, untouched after;
 *  - close, set_view, set_size, preallocate, sync and set_atomicity wait for
 *    the handle's outstanding operations, and so do the blocking collective
 *    calls (lmpio__hold_all); a blocking independent call waits for the
 *    independent ones only (lmpio__hold: the collective lane may wait for
 *    ranks that have not started its jobs, async.c).
 *
 * Views of a user-defined representation (stage_user): its conversion
 * functions, perhaps written in Lua, run on the caller's thread, a write's
 * at initiation (into a buffer of the data's size in the file), a read's at
 * completion (in the query function, which MPI_Wait / MPI_Test call on the
 * completing thread, or in _end; a read whose request was freed with
 * MPI_Request_free, which no query will convert, at close); the worker
 * moves file bytes only.
 *
 * What still completes in the initiating call (the standard allows it): all
 * of them when MPI was initialised below MPI_THREAD_MULTIPLE (or with
 * LMPIO_ASYNC=0 in the environment), and every operation on a stream (a
 * pipe or FIFO, stream.c: its bytes go through rank 0 in program order).
 * Those run the blocking path and hand back a request that is already
 * complete.  The ordered split collectives place the ranks in _begin (a
 * prefix sum; the shared pointer moves) and transfer at this rank's
 * position in the background, agreed as any collective (on a regular file
 * opened MPI_MODE_SEQUENTIAL too: the worker's transfer is at an offset).
 *
 * Split collectives keep their state in the handle (fh->split, this file:
 * one active per handle, _end must match _begin's kind and buffer). */
#include "run.h"
#include "calls.h"

#include <pthread.h>
#include <stdio.h>
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

/* ---- in the background --------------------------------------------------- */

/* A transfer for the worker: its plan, made from the handle at initiation
 * (the job never reads the handle: the program may change it, a view or a
 * hint, while the job is pending). */
typedef struct lmpio__xfer xfer;
struct lmpio__xfer {
  lmpio__job job;              /* first: async.c frees the whole record */
  int fd;                      /* the worker's descriptor (its locks exclude the caller's) */
  int collective, dir;
  MPI_Offset offset;           /* in etypes */
  void *buf;
  MPI_Count count;
  MPI_Datatype type;
  int dup;                     /* type is our duplicate, freed after the run */
  int pre_rc;                  /* collective: this rank's outcome of the checks at initiation */
  int standin;                 /* ... a binding's failure (lmpio__take_standin) */
  char pre_msg[1024];          /* and its message */
  const char *call;
  /* A view of a user-defined representation: the worker moves file bytes
   * only (raw), converted here on the caller's thread. */
  char *raw;
  MPI_Offset raw_len;
  const lmpio__datarep *rep;
  MPI_Offset cap;              /* its conversion buffer size */
  void *ubuf;                  /* the caller's buffer, count and type */
  MPI_Count ucount;
  MPI_Datatype utype;
  int udup;
  MPI_Count native;            /* data bytes of the caller's (a write's) */
  int converted;               /* a read's conversion at completion ran */
  /* Its plan, made at initiation (the view, the worker's descriptor; a
   * collective's also its communicator, the worker's duplicate, and the
   * aggregators), and where it starts in the view's data: an independent
   * transfer's is plan, a collective's cplan (with n etypes). */
  lmpio__plan plan;
  lmpio__coll_plan cplan;
  int planned;
  MPI_Offset pos, n;
  /* A job with a request is on its handle's list (req_mu) until the
   * request is freed or the handle closes: close converts the reads whose
   * requests were freed before their conversion ran, and the failure of a
   * request names its file (lmpio_request_failures). */
  lmpio_file origin;           /* the handle, or LMPIO_FILE_NULL once closed */
  xfer *prev, *next;           /* on origin->requests */
  int freed;                   /* freed before its conversion ran: close runs it */
};

static pthread_mutex_t req_mu = PTHREAD_MUTEX_INITIALIZER;

/* Who hears of failed requests on this thread (lmpio_request_failures). */
static _Thread_local lmpio_request_failure_fn *failure_fn;
static _Thread_local void *failure_arg;

void lmpio_request_failures(lmpio_request_failure_fn *fn, void *arg) {
  failure_fn = fn;
  failure_arg = fn ? arg : NULL;
}

/* Takes x off its handle's list (req_mu held). */
static void unlink_request(xfer *x) {
  if (x->prev) x->prev->next = x->next;
  else x->origin->requests = x->next;
  if (x->next) x->next->prev = x->prev;
  x->prev = x->next = NULL;
  x->origin = LMPIO_FILE_NULL;
}

static int run(lmpio__job *job) {
  xfer *x = (xfer *)job;
  MPI_Count bytes = 0;
  int rc;
  if (x->collective) {
    if (x->pre_rc != MPI_SUCCESS) lmpio__err_set_message(x->pre_msg); /* this rank's, for the agreement */
    if (x->standin) lmpio__set_standin(); /* on the worker's thread, for its first agreement */
    MPI_Offset fbytes;
    rc = lmpio__coll_transfer(&x->cplan, x->pre_rc, x->pos, x->n, x->buf, x->count, x->type, NULL, &bytes, &fbytes,
                              x->call);
  } else {
    MPI_Offset fbytes;
    rc = x->count > 0 ? lmpio__transfer(&x->plan, x->pos, x->buf, x->count, x->type, &bytes, &fbytes, x->call)
                      : MPI_SUCCESS;
  }
  /* The worker has time: start the written pages' way to the disk now, so
   * that a sync after the wait has less left to do. */
  if (rc == MPI_SUCCESS && x->dir == LMPIO__WRITE && bytes > 0) lmpio__os_writeback(x->fd);
  if (x->dup) MPI_Type_free(&x->type);
  x->dup = 0;
  /* A staged write moved its file bytes: the status counts the caller's. */
  job->bytes = x->raw && x->dir == LMPIO__WRITE && rc == MPI_SUCCESS ? x->native : bytes;
  return rc;
}

static void dispose(lmpio__job *job) {
  xfer *x = (xfer *)job;
  if (x->planned) lmpio__plan_free(x->collective ? &x->cplan.plan : &x->plan);
  x->planned = 0;
  if (x->dup) MPI_Type_free(&x->type);
  if (x->udup) MPI_Type_free(&x->utype);
  lmpio__transfer_stage_free(x->raw, (size_t)x->raw_len);
}

/* On the completing thread (the one calling MPI_Wait, MPI_Test, ... or
 * _end): a staged read converts the file bytes the worker read into the
 * caller's buffer, once (the query function may be called again).  Its
 * failure is this rank's outcome (a nonblocking read of a user
 * representation does not agree on conversion errors: completion may not
 * talk to the other ranks). */
static void complete_on_caller(lmpio__job *job) {
  xfer *x = (xfer *)job;
  if (!x->raw || x->dir != LMPIO__READ || x->converted) return;
  x->converted = 1;
  if (job->rc != MPI_SUCCESS) return;
  MPI_Count native = 0;
  MPI_Offset fbytes = 0;
  int rc = lmpio__convert_memory(x->rep, LMPIO__READ, x->cap, x->raw, job->bytes, x->ubuf, x->ucount, x->utype,
                                 &native, &fbytes, x->call);
  job->bytes = native;
  if (rc != MPI_SUCCESS) {
    job->rc = rc;
    snprintf(job->msg, sizeof job->msg, "%s", lmpio_last_error_message());
  }
}

/* The generalized request of a job: completed by the worker; the
 * completing call (MPI_Wait, MPI_Test, ... on whichever thread) calls
 * query_fn, which fills the status and makes the job's outcome that
 * thread's: its class is what the call returns (through MPI_COMM_WORLD's
 * error handler, as for every generalized request) and its message becomes
 * the thread's lmpio_last_error_message(). */
static int job_query_fn(void *extra_state, MPI_Status *status) {
  lmpio__job *job = extra_state;
  complete_on_caller(job);
  lmpio__set_status(status, job->rc == MPI_SUCCESS ? job->bytes : 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = job->rc;
  if (job->rc == MPI_SUCCESS) return MPI_SUCCESS;
  lmpio__err_set_message(job->msg);
  if (!failure_fn) return job->rc;
  /* A layer above reports it (the drop-in: the file's error handler). */
  pthread_mutex_lock(&req_mu);
  lmpio_file origin = ((xfer *)job)->origin;
  pthread_mutex_unlock(&req_mu);
  status->MPI_ERROR = MPI_SUCCESS;
  failure_fn(failure_arg, job->req, origin, job->rc, job->msg);
  return MPI_SUCCESS;
}

/* MPI frees the request: after its completion (whatever thread completes
 * it, the worker's when MPI_Request_free came first).  A staged read whose
 * conversion never ran (the request was freed, so no MPI_Wait will run it)
 * stays on its handle's list: close converts it. */
static int job_free_fn(void *extra_state) {
  xfer *x = extra_state;
  int linked = 0;
  pthread_mutex_lock(&req_mu);
  if (x->origin != LMPIO_FILE_NULL) {
    if (x->raw && x->dir == LMPIO__READ && !x->converted) {
      x->freed = 1;
    } else {
      unlink_request(x);
      linked = 1;
    }
  }
  pthread_mutex_unlock(&req_mu);
  if (linked) lmpio__async_release(&x->job); /* the list's reference */
  lmpio__async_release(&x->job);
  return MPI_SUCCESS;
}

/* At close, once every job of fh ran: its requests no longer name fh, and
 * a read of a user representation whose request was freed before its
 * conversion ran (MPI_Request_free) converts now, on this thread.  Close
 * calls it through the handle (fh->requests_close), which the first
 * request sets. */
static void requests_close(lmpio_file fh) {
  pthread_mutex_lock(&req_mu);
  xfer *list = fh->requests;
  fh->requests = NULL;
  for (xfer *x = list; x; x = x->next) x->origin = LMPIO_FILE_NULL;
  pthread_mutex_unlock(&req_mu);
  while (list) {
    xfer *x = list;
    list = x->next;
    x->prev = x->next = NULL;
    if (x->freed) { /* nobody waits for it: its values reach the buffer now */
      fh->busy++;   /* the conversion function may try to close fh */
      complete_on_caller(&x->job);
      fh->busy--;
    }
    lmpio__async_release(&x->job);
  }
}

/* Queues x on fh's worker (prepared), with a request when request != NULL. */
static int submit(lmpio_file fh, xfer *x, MPI_Request *request, const char *call) {
  x->job.req = MPI_REQUEST_NULL;
  if (request && MPI_Grequest_start(job_query_fn, job_free_fn, cancel_fn, &x->job, &x->job.req) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Grequest_start failed");
  if (request) *request = x->job.req;
  lmpio__async_submit(&fh->workers, &x->job);
  if (request) { /* on fh's list, with a reference of its own */
    lmpio__async_retain(&x->job);
    pthread_mutex_lock(&req_mu);
    x->origin = fh;
    x->prev = NULL;
    x->next = fh->requests;
    if (x->next) x->next->prev = x;
    fh->requests = x;
    fh->requests_close = requests_close;
    pthread_mutex_unlock(&req_mu);
  }
  return MPI_SUCCESS;
}

/* Whether fh's operations can run in the background: threads.  (A user
 * representation's conversions run on the caller's thread: stage_user.) */
static int can_run_later(lmpio_file fh) {
  /* Streams (stream.c) complete at initiation: their bytes go through rank 0 in program order. */
  return lmpio__async_available() && fh->drv->background;
}

/* The record of a transfer starting at etype offset etpos (checked by the
 * caller); its plan comes later (plan_xfer, plan_collective). */
static int make_xfer(lmpio_file fh, int collective, MPI_Offset etpos, void *buf, MPI_Count count,
                     MPI_Datatype type, int dir, xfer **out, const char *call) {
  xfer *x = calloc(1, sizeof *x);
  if (!x) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  x->job.run = run;
  x->job.dispose = dispose;
  x->job.lane = collective ? LMPIO__LANE_COLLECTIVE : LMPIO__LANE_INDEPENDENT;
  x->fd = lmpio__async_fd(&fh->workers, x->job.lane);
  x->collective = collective;
  x->dir = dir;
  x->offset = etpos;
  x->buf = buf;
  x->count = count;
  x->type = type;
  x->call = call;
  if (type != MPI_DATATYPE_NULL && !lmpio__type_is_named(type)) { /* the caller may free its type before completion */
    if (MPI_Type_dup(type, &x->type) != MPI_SUCCESS) {
      free(x);
      return lmpio__err(MPI_ERR_TYPE, call, "MPI_Type_dup failed");
    }
    x->dup = 1;
  }
  *out = x;
  return MPI_SUCCESS;
}

static void drop_xfer(xfer *x) {
  dispose(&x->job);
  free(x);
}

/* A view of a user-defined representation: its conversion functions (C,
 * or Lua, whose state is not thread-safe) run on the caller's thread, and
 * the worker moves only the file bytes, through a plan whose view is the
 * same layout read as native (job_plan).  A write converts into x->raw here; a
 * read lands there and is converted at completion (complete_on_caller).
 * n: the etypes of the access.  The staging holds the whole access (its
 * size in the file), for the length of the operation. */
static int stage_user(lmpio_file fh, xfer *x, MPI_Offset n, const char *call) {
  const lmpio__datarep *rep = fh->view.rep;
  if (!rep || rep->builtin) return MPI_SUCCESS;
  /* (the job's plan then reads the view as native: job_plan) */
  MPI_Offset len;
  if (!lmpio__mul_ok(n, fh->view.esize, &len) || (MPI_Offset)(size_t)len != len)
    return lmpio__err(MPI_ERR_COUNT, call, "%lld etypes of %lld bytes do not fit memory", (long long)n,
                      (long long)fh->view.esize);
  x->raw = lmpio__transfer_stage_alloc((size_t)len);
  if (!x->raw)
    return lmpio__err(MPI_ERR_NO_MEM, call, "cannot allocate the %lld bytes that stage a transfer in representation \"%s\"",
                      (long long)len, rep->name);
  x->raw_len = len;
  x->rep = rep;
  x->cap = fh->hints.conv_buffer_size;
  x->ubuf = x->buf;
  x->ucount = x->count;
  x->utype = x->type;
  x->udup = x->dup;
  x->dup = 0;
  if (x->dir == LMPIO__WRITE && x->utype != MPI_DATATYPE_NULL) {
    MPI_Offset fbytes = 0;
    /* The conversion function may try to close fh: refused while the
     * initiating call still uses the handle (file.c). */
    fh->busy++;
    int rc = lmpio__convert_memory(rep, LMPIO__WRITE, x->cap, x->raw, len, x->ubuf, x->ucount, x->utype, &x->native,
                                   &fbytes, call);
    fh->busy--;
    if (rc != MPI_SUCCESS) return rc;
  }
  x->buf = x->raw;
  x->count = len;
  x->type = x->utype == MPI_DATATYPE_NULL ? MPI_DATATYPE_NULL : MPI_BYTE;
  return MPI_SUCCESS;
}

/* How a transfer's position was given: use_fp is FP_EXPLICIT (offset),
 * FP_INDIVIDUAL (the individual pointer) or FP_SHARED (offset, placed from
 * the shared pointer by the initiating call: an ordered collective). */
enum { FP_EXPLICIT = 0, FP_INDIVIDUAL = 1, FP_SHARED = -1 };

/* The checks of the initiating call, and where the transfer starts (etypes);
 * *n: the etypes requested. */
static int initiate_checks(lmpio_file fh, MPI_Offset offset, int use_fp, MPI_Count count, MPI_Datatype type,
                           int dir, MPI_Offset *etpos, MPI_Offset *n, const char *call) {
  int pointer = use_fp == FP_INDIVIDUAL ? LMPIO__INDIVIDUAL : use_fp == FP_SHARED ? LMPIO__SHARED : LMPIO__EXPLICIT;
  int rc = lmpio__check_access(fh, count, type, dir, pointer, call);
  if (use_fp == FP_SHARED) use_fp = FP_EXPLICIT; /* from here on, an offset */
  if (rc == MPI_SUCCESS && !use_fp && offset < 0)
    rc = lmpio__err(MPI_ERR_ARG, call, "negative offset %lld", (long long)offset);
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, n, call);
  *etpos = use_fp ? fh->fp : offset;
  MPI_Offset end;
  if (rc == MPI_SUCCESS && !lmpio__add_ok(*etpos, *n, &end))
    rc = lmpio__err(MPI_ERR_ARG, call, "offset %lld + %lld etypes overflows a 64-bit offset", (long long)*etpos,
                    (long long)*n);
  return rc;
}

/* What a job's plan changes in the handle's: the worker's descriptor, and
 * a staged view (stage_user) read as native, file bytes only. */
static void job_plan(const xfer *x, lmpio__plan *p) {
  p->fd = x->fd;
  if (x->raw) p->rep = NULL;
}

/* The plan of an independent job, checked as the blocking call checks its
 * range: the worker only runs it. */
static int plan_xfer(lmpio_file fh, xfer *x, MPI_Offset n, const char *call) {
  if (n == 0) {
    x->count = 0;
    return MPI_SUCCESS;
  }
  int rc = lmpio__check_range(&fh->view, x->offset, n, &x->pos, call);
  if (rc != MPI_SUCCESS) return rc;
  lmpio__prologue_plan(&x->plan, fh, x->dir);
  job_plan(x, &x->plan);
  x->planned = 1;
  return MPI_SUCCESS;
}

/* The collective plan of a collective job, on the worker's communicator
 * comm: every check of the blocking call ran at initiation (its outcome is
 * the job's pre_rc), the worker runs the transfer from the first agreement
 * on. */
static void plan_collective(lmpio_file fh, xfer *x, MPI_Comm comm) {
  lmpio__prologue_coll_plan(&x->cplan, fh, comm, x->dir);
  job_plan(x, &x->cplan.plan);
  x->planned = 1;
}

/* Starts an independent transfer in the background. */
static int independent_later(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                             MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  MPI_Offset etpos, n = 0;
  int rc = initiate_checks(fh, offset, use_fp, count, type, dir, &etpos, &n, call);
  xfer *x = NULL;
  if (rc == MPI_SUCCESS) rc = lmpio__async_prepare(&fh->workers, LMPIO__LANE_INDEPENDENT, call);
  if (rc == MPI_SUCCESS) rc = make_xfer(fh, 0, etpos, buf, count, type, dir, &x, call);
  if (rc == MPI_SUCCESS && (rc = stage_user(fh, x, n, call)) != MPI_SUCCESS) drop_xfer(x);
  else if (rc == MPI_SUCCESS && (rc = plan_xfer(fh, x, n, call)) != MPI_SUCCESS) drop_xfer(x);
  else if (rc == MPI_SUCCESS && (rc = submit(fh, x, request, call)) != MPI_SUCCESS) drop_xfer(x);
  if (rc == MPI_SUCCESS && use_fp) fh->fp += n;
  return rc;
}

/* Starts a collective transfer in the background.  Nothing here talks to
 * the other ranks (collective calls on different files may be started in
 * different orders on different ranks): this rank's argument checks ride
 * along as the job's pre_rc, and the worker agrees on them with the other
 * ranks before any transfer, so an argument error on one rank is every
 * rank's outcome at completion.  Returns an error only when a split
 * collective is active (then after the failed job's agreement) or the job
 * cannot be made. */
static int collective_later(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                            MPI_Datatype type, int dir, MPI_Request *request, lmpio__job **job, int pre_rc,
                            const char *call) {
  /* (a failure a binding asked for is this call's, even when it is refused) */
  int rc = lmpio__pending(pre_rc, call);
  int refused = lmpio__agree_refuses(call); /* (its job's agreement would run on a worker, and meet no one) */
  if (refused != MPI_SUCCESS) return refused;
  /* A split collective active here fails the call; its job still goes to
   * the worker, failed, so that the other ranks' jobs meet it and fail too
   * (a rank that left a split collective active when the others did not
   * would have them wait for ever), and the call returns what that job's
   * agreement gives: the same class on every rank. */
  int active = fh->split.kind != LMPIO__SPLIT_NONE;
  if (active && rc == MPI_SUCCESS)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  MPI_Offset etpos = 0, n = 0;
  if (rc == MPI_SUCCESS) rc = initiate_checks(fh, offset, use_fp, count, type, dir, &etpos, &n, call);
  MPI_Offset pos = 0;
  if (rc == MPI_SUCCESS) rc = lmpio__coll_position(fh, etpos, &pos, call);
  MPI_Comm comm;
  xfer *x = NULL;
  int mrc = lmpio__async_comm(&fh->workers, &comm, call);
  if (mrc == MPI_SUCCESS) mrc = make_xfer(fh, 1, etpos, buf, count, rc == MPI_SUCCESS ? type : MPI_DATATYPE_NULL,
                                          dir, &x, call);
  /* A conversion that fails at initiation is this rank's argument error. */
  if (mrc == MPI_SUCCESS && rc == MPI_SUCCESS) rc = stage_user(fh, x, n, call);
  int standin = lmpio__take_standin(); /* (the initiating thread does not agree) */
  if (mrc == MPI_SUCCESS) {
    plan_collective(fh, x, comm);
    x->pos = rc == MPI_SUCCESS ? pos : 0;
    x->n = rc == MPI_SUCCESS ? n : 0;
    x->pre_rc = rc;
    x->standin = standin;
    if (rc != MPI_SUCCESS) snprintf(x->pre_msg, sizeof x->pre_msg, "%s", lmpio_last_error_message());
    if ((mrc = submit(fh, x, active ? NULL : request, call)) != MPI_SUCCESS) {
      drop_xfer(x);
    } else if (active) {
      lmpio__async_join(&fh->workers, &x->job);
      rc = x->job.rc != MPI_SUCCESS ? x->job.rc : rc;
      lmpio__err_set_message(x->job.rc != MPI_SUCCESS ? x->job.msg : x->pre_msg);
      lmpio__async_release(&x->job);
      return rc;
    }
  }
  if (mrc != MPI_SUCCESS) return mrc;
  if (job) *job = &x->job;
  if (rc == MPI_SUCCESS && use_fp == FP_INDIVIDUAL) fh->fp += n;
  return MPI_SUCCESS;
}

/* ---- in the initiating call ------------------------------------------------ */

static int independent(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count,
                       MPI_Datatype type, int dir, MPI_Request *request, const char *call) {
  if (!request) return lmpio__err(MPI_ERR_ARG, call, "request is NULL");
  *request = MPI_REQUEST_NULL;
  if (fh != LMPIO_FILE_NULL && can_run_later(fh))
    return independent_later(fh, offset, use_fp, buf, count, type, dir, request, call);
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
  if (request && can_run_later(fh)) {
    *request = MPI_REQUEST_NULL;
    return collective_later(fh, offset, use_fp, buf, count, type, dir, request, NULL, MPI_SUCCESS, call);
  }
  record *r;
  int rc = prepare(request, &r, call);
  MPI_Status st;
  rc = lmpio__collective(fh, offset, use_fp, buf, count, type, dir, &st, rc, call);
  return finish(rc, &st, r, request);
}

static int shared(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                  MPI_Request *request, const char *call) {
  if (request && fh != LMPIO_FILE_NULL && can_run_later(fh)) {
    /* The shared pointer moves now; the transfer, at that offset, later. */
    *request = MPI_REQUEST_NULL;
    MPI_Offset at, n;
    xfer *x = NULL;
    int rc = lmpio__async_prepare(&fh->workers, LMPIO__LANE_INDEPENDENT, call);
    if (rc == MPI_SUCCESS) rc = make_xfer(fh, 0, 0, buf, count, type, dir, &x, call);
    /* A write of a user representation converts before the pointer moves. */
    if (rc == MPI_SUCCESS && fh->view.rep && !fh->view.rep->builtin) {
      rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
      if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &n, call);
      if (rc == MPI_SUCCESS) rc = stage_user(fh, x, n, call);
    }
    if (rc == MPI_SUCCESS) rc = lmpio__shared_reserve(fh, count, type, dir, &at, &n, NULL, call);
    if (rc == MPI_SUCCESS) {
      x->offset = at;
      rc = plan_xfer(fh, x, n, call);
    }
    if (rc == MPI_SUCCESS) rc = submit(fh, x, request, call);
    if (rc != MPI_SUCCESS && x) drop_xfer(x);
    return rc;
  }
  record *r;
  int rc = prepare(request, &r, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status st;
  rc = lmpio__shared_access(fh, buf, count, type, dir, &st, call);
  return finish(rc, &st, r, request);
}

/* The nonblocking calls: independent, collective or shared-pointer (by
 * coll and pointer; a shared-pointer call has no offset). */
static int shared_nb(lmpio_file fh, MPI_Offset offset, int use_fp, void *buf, MPI_Count count, MPI_Datatype type,
                     int dir, MPI_Request *request, const char *call) {
  (void)offset, (void)use_fp;
  return shared(fh, buf, count, type, dir, request, call);
}
#define NB_RUN_INDEP_EXPLICIT independent
#define NB_RUN_INDEP_INDIVIDUAL independent
#define NB_RUN_COLL_EXPLICIT collective
#define NB_RUN_COLL_INDIVIDUAL collective
#define NB_RUN_INDEP_SHARED shared_nb
#define NONBLOCKING(name, pointer, coll, form, dir, C, sfx)                                              \
  int lmpio_file_##name##sfx LMPIO__CALL_PARAMS(lmpio_file, C, pointer, form, dir) {                       \
    lmpio__stats *st = fh ? fh->stats : NULL;                                                             \
    long long t0 = lmpio__stats_start(st);                                                                \
    int rc = NB_RUN_##coll##_##pointer(fh, LMPIO__CALL_OFFSET_VALUE_##pointer, LMPIO__CALL_USE_FP_##pointer, \
                                       (void *)buf, count, datatype, LMPIO__##dir, request,              \
                                       "lmpio_file_" #name #sfx);                                        \
    lmpio__stats_call(st, LMPIO__K_NB, LMPIO__##dir, t0);                                                 \
    return rc;                                                                                            \
  }
#define DEFINE_NB(name, pointer, coll, form, dir) NONBLOCKING(name, pointer, coll, form, dir, int, )
#define DEFINE_NB_C(name, pointer, coll, form, dir) NONBLOCKING(name, pointer, coll, form, dir, MPI_Count, _c)
LMPIO__CALLS_NONBLOCKING(DEFINE_NB)
LMPIO__CALLS_NONBLOCKING(DEFINE_NB_C)

/* ---- split collectives --------------------------------------------------- */

/* A split collective started in the background: _end joins its job. */
static int split_active(lmpio_file fh, int kind, void *buf, lmpio__job *job) {
  fh->split.kind = kind;
  fh->split.bytes = 0;
  fh->split.buf = buf;
  fh->split.job = job;
  return MPI_SUCCESS;
}

/* _begin starts the collective in the background (or, when it cannot, runs
 * it and records the outcome for _end); a failed _begin (the same error on
 * every rank) leaves none active. */
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
    if (can_run_later(fh)) {
      /* The positions now (a collective step, as _begin may take), the
       * transfer at this rank's position in the background, its outcome
       * agreed by the worker like any collective's. */
      MPI_Offset at, n;
      int agreed;
      rc = lmpio__ordered_reserve(fh, count, type, dir, rc, &at, &n, &agreed, NULL, call);
      if (rc != MPI_SUCCESS && agreed) return rc;
      lmpio__job *job = NULL;
      rc = collective_later(fh, at, FP_SHARED, buf, count, type, dir, NULL, &job, rc, call);
      return rc == MPI_SUCCESS ? split_active(fh, kind, buf, job) : rc;
    }
    rc = lmpio__ordered(fh, buf, count, type, dir, &bytes, rc, call);
  } else {
    lmpio__job *job = NULL;
    if (can_run_later(fh)) {
      rc = collective_later(fh, offset, use_fp, buf, count, type, dir, NULL, &job, MPI_SUCCESS, call);
      return rc == MPI_SUCCESS ? split_active(fh, kind, buf, job) : rc;
    }
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
  int rc = MPI_SUCCESS;
  if (fh->split.job) { /* running in the background: its outcome, agreed by the worker */
    lmpio__job *job = fh->split.job;
    fh->split.job = NULL;
    lmpio__async_join(&fh->workers, job);
    fh->busy++; /* a read's conversion function may try to close fh */
    complete_on_caller(job);
    fh->busy--;
    rc = job->rc;
    fh->split.bytes = rc == MPI_SUCCESS ? job->bytes : 0;
    if (rc != MPI_SUCCESS) lmpio__err_set_message(job->msg);
    lmpio__async_release(job);
  }
  lmpio__set_status(status, fh->split.bytes);
  return rc;
}

/* The split collectives' first halves; the kind of each (by pointer). */
#define SPLIT_KIND_EXPLICIT(dir) LMPIO__SPLIT_##dir##_AT_ALL
#define SPLIT_KIND_INDIVIDUAL(dir) LMPIO__SPLIT_##dir##_ALL
#define SPLIT_KIND_SHARED(dir) LMPIO__SPLIT_##dir##_ORDERED
#define SPLIT(name, pointer, coll, form, dir, C, sfx)                                                    \
  int lmpio_file_##name##sfx LMPIO__CALL_PARAMS(lmpio_file, C, pointer, form, dir) {                       \
    lmpio__stats *st = fh ? fh->stats : NULL;                                                             \
    long long t0 = lmpio__stats_start(st);                                                                \
    int rc = split_begin(fh, LMPIO__CALL_OFFSET_VALUE_##pointer, LMPIO__CALL_USE_FP_##pointer, (void *)buf, \
                         count, datatype, SPLIT_KIND_##pointer(dir), "lmpio_file_" #name #sfx);          \
    lmpio__stats_call(st, LMPIO__K_SPLIT, LMPIO__##dir, t0);                                              \
    return rc;                                                                                            \
  }
#define DEFINE_SPLIT(name, pointer, coll, form, dir) SPLIT(name, pointer, coll, form, dir, int, )
#define DEFINE_SPLIT_C(name, pointer, coll, form, dir) SPLIT(name, pointer, coll, form, dir, MPI_Count, _c)
LMPIO__CALLS_SPLIT(DEFINE_SPLIT)
LMPIO__CALLS_SPLIT(DEFINE_SPLIT_C)
#define SPLIT_END(name, B, kind)                                                                \
  int lmpio_file_##name(lmpio_file fh, B buf, MPI_Status *status) {                            \
    return split_end(fh, kind, buf, status, "lmpio_file_" #name);                              \
  }
SPLIT_END(read_at_all_end, void *, LMPIO__SPLIT_READ_AT_ALL)
SPLIT_END(write_at_all_end, const void *, LMPIO__SPLIT_WRITE_AT_ALL)
SPLIT_END(read_all_end, void *, LMPIO__SPLIT_READ_ALL)
SPLIT_END(write_all_end, const void *, LMPIO__SPLIT_WRITE_ALL)
SPLIT_END(read_ordered_end, void *, LMPIO__SPLIT_READ_ORDERED)
SPLIT_END(write_ordered_end, const void *, LMPIO__SPLIT_WRITE_ORDERED)
