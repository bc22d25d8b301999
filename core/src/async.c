/* The workers of a file handle: jobs (the transfers of nonblocking and split
 * collective operations, request.c) run on background threads while the
 * caller computes.
 *
 * A handle that starts such operations gets two workers, one per lane: one
 * thread and a queue each, run in the order the operations were started.
 * The independent lane never waits for another rank, so a blocking
 * independent call may wait for it (lmpio__async_wait_independent) without
 * any risk of a hang; the collective lane runs the collective operations in
 * the same order on every rank of the file's communicator, and only calls
 * that every rank makes wait for it (close, set_view, sync, the blocking
 * collectives: every rank started the same collective jobs before them).
 * A blocking independent call therefore never waits behind a collective
 * that another rank has not started yet.  Operations of the two lanes may
 * overlap in time, as the standard allows for outstanding operations;
 * each worker reaches the file through a descriptor of its own (a new
 * open file description of the same file), so the byte-range locks of
 * sieved writes and atomic mode exclude the other lane and the caller's
 * thread as they exclude other processes.
 *
 * Workers are taken from a pool when a handle needs one and given back when
 * the handle closes, so a program that opens many files does not create a
 * thread each time (and the buffers a thread keeps, collrun.c, are
 * reused).
 *
 * A job that carries a generalized request (made by the layer above) is
 * completed by its worker when it has run (MPI_Grequest_complete from
 * another thread: this needs MPI_THREAD_MULTIPLE, lmpio__async_available);
 * a job without one (split collectives) is waited for with
 * lmpio__async_join.
 *
 * Collective jobs talk to the other ranks on a duplicate of the handle's
 * communicator (lmpio__async_comm), so they never mix with the caller's own
 * collective calls on the handle.
 *
 * This file knows nothing of what a job does: it calls the job's run
 * function, given by the layer above. */
#include "ground.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct lmpio__worker {
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* a job arrived, a job finished, or stop */
  pthread_t thread;
  lmpio__job *head, *tail;
  int pending;             /* jobs submitted and not yet finished */
  int stop;
  MPI_Comm comm;           /* the handle's duplicate communicator, or MPI_COMM_NULL */
  MPI_Request comm_req;    /* the MPI_Comm_idup making it, until the worker completes it */
  int fd;                  /* its own descriptor of the handle's file, or -1: the handle's */
  lmpio__worker *next;     /* in the pool */
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static lmpio__worker *pool;

/* ---- jobs -------------------------------------------------------------- */

static void job_drop(lmpio__job *job) {
  if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    if (job->dispose) job->dispose(job);
    free(job);
  }
}

/* The worker may run on any core the process may use, whatever core the
 * launcher bound the rank to (Open MPI binds each rank to one core when
 * there are no more ranks than cores): the transfer overlaps the caller's
 * computation only on another core.  LMPIO_ASYNC_BIND=1 keeps the binding. */
static void unbind(void) {
  const char *env = getenv("LMPIO_ASYNC_BIND");
  if (env && strcmp(env, "1") == 0) return;
  long n = sysconf(_SC_NPROCESSORS_CONF);
  if (n < 1 || n > CPU_SETSIZE) n = CPU_SETSIZE;
  cpu_set_t all;
  CPU_ZERO(&all);
  for (long i = 0; i < n; i++) CPU_SET((int)i, &all);
  (void)pthread_setaffinity_np(pthread_self(), sizeof all, &all); /* the kernel keeps it to the allowed ones */
}

static void *worker_main(void *arg) {
  lmpio__worker *w = arg;
  unbind();
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->head && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->head) break; /* stopped: the process is ending */
    lmpio__job *job = w->head;
    w->head = job->next;
    if (!w->head) w->tail = NULL;
    MPI_Request dup = w->comm_req; /* (set before the job was queued) */
    w->comm_req = MPI_REQUEST_NULL;
    pthread_mutex_unlock(&w->mu);

    if (dup != MPI_REQUEST_NULL) MPI_Wait(&dup, MPI_STATUS_IGNORE);
    job->rc = job->run(job);
    if (job->rc != MPI_SUCCESS) snprintf(job->msg, sizeof job->msg, "%s", lmpio_last_error_message());
    /* Complete first: whoever waits for the handle's jobs (close, set_view,
     * sync, ...) then finds every request complete.  The request stays
     * valid after the handle is closed. */
    if (job->req != MPI_REQUEST_NULL) MPI_Grequest_complete(job->req);

    pthread_mutex_lock(&w->mu);
    job->done = 1;
    w->pending--;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    job_drop(job);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* ---- the public face of this file ----------------------------------------- */

int lmpio__async_available(void) {
  static int level = -1; /* MPI_Query_thread once */
  int l = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (l < 0) {
    int provided = MPI_THREAD_SINGLE, init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (!init || fin) return 0;
    MPI_Query_thread(&provided);
    const char *env = getenv("LMPIO_ASYNC");
    l = provided == MPI_THREAD_MULTIPLE && !(env && strcmp(env, "0") == 0);
    __atomic_store_n(&level, l, __ATOMIC_RELAXED);
  }
  return l;
}

/* A descriptor of fd's file with an open file description of its own (its
 * byte-range locks then exclude those taken through fd), or -1 when there
 * is none to be had: the worker then uses fd (streams, or no /proc). */
static int own_descriptor(int fd) {
  struct stat st;
  if (lmpio__os_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  int flags = lmpio__os_flags(fd);
  if (flags < 0) return -1;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  int own = lmpio__os_open(path, (flags & (O_ACCMODE | O_DIRECT | O_SYNC | O_DSYNC)) | O_CLOEXEC, 0);
  struct stat st2;
  if (own >= 0 && (lmpio__os_fstat(own, &st2) != 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)) {
    lmpio__os_close(own); /* not the same file after all */
    own = -1;
  }
  return own;
}

/* The handle's worker of a lane: from the pool, or a new thread. */
static int worker_of(lmpio__workers *ws, int lane, const char *call) {
  if (ws->lane[lane]) return MPI_SUCCESS;
  pthread_mutex_lock(&pool_mu);
  lmpio__worker *w = pool;
  if (w) pool = w->next;
  pthread_mutex_unlock(&pool_mu);
  if (!w) {
    w = calloc(1, sizeof *w);
    if (!w) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    lmpio__stay_loaded(); /* (pooled threads live until the process ends) */
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      pthread_cond_destroy(&w->cv);
      pthread_mutex_destroy(&w->mu);
      free(w);
      return lmpio__err(MPI_ERR_OTHER, call, "cannot start the worker thread of file \"%s\"", ws->path);
    }
  }
  w->next = NULL;
  w->comm = MPI_COMM_NULL;
  w->comm_req = MPI_REQUEST_NULL;
  w->fd = own_descriptor(ws->fd);
  ws->lane[lane] = w;
  return MPI_SUCCESS;
}

int lmpio__async_prepare(lmpio__workers *ws, int lane, const char *call) { return worker_of(ws, lane, call); }

int lmpio__async_fd(lmpio__workers *ws, int lane) {
  const lmpio__worker *w = ws->lane[lane];
  return w && w->fd >= 0 ? w->fd : ws->fd;
}

/* The duplicate is made with MPI_Comm_idup, which does not wait for the
 * other ranks: the worker completes it before its first job runs. */
int lmpio__async_comm(lmpio__workers *ws, MPI_Comm *comm, const char *call) {
  int rc = worker_of(ws, LMPIO__LANE_COLLECTIVE, call);
  if (rc != MPI_SUCCESS) return rc;
  lmpio__worker *w = ws->lane[LMPIO__LANE_COLLECTIVE];
  if (w->comm == MPI_COMM_NULL) {
    MPI_Request req;
    if (MPI_Comm_idup(ws->comm, &w->comm, &req) != MPI_SUCCESS) {
      w->comm = MPI_COMM_NULL;
      return lmpio__err(MPI_ERR_OTHER, call, "MPI_Comm_idup failed");
    }
    pthread_mutex_lock(&w->mu);
    w->comm_req = req;
    pthread_mutex_unlock(&w->mu);
  }
  *comm = w->comm;
  return MPI_SUCCESS;
}

void lmpio__async_submit(lmpio__workers *ws, lmpio__job *job) {
  job->next = NULL;
  job->done = 0;
  job->rc = MPI_SUCCESS;
  job->msg[0] = '\0';
  job->refs = 2; /* the worker's, and the request's or the joiner's */
  lmpio__worker *w = ws->lane[job->lane];
  pthread_mutex_lock(&w->mu);
  if (w->tail) w->tail->next = job;
  else w->head = job;
  w->tail = job;
  w->pending++;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void lmpio__async_join(lmpio__workers *ws, lmpio__job *job) {
  lmpio__worker *w = ws->lane[job->lane];
  pthread_mutex_lock(&w->mu);
  while (!job->done) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

void lmpio__async_retain(lmpio__job *job) { __atomic_add_fetch(&job->refs, 1, __ATOMIC_ACQ_REL); }

void lmpio__async_release(lmpio__job *job) { job_drop(job); }

static void wait_lane(lmpio__worker *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  while (w->pending > 0) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

void lmpio__async_wait_lane(lmpio__workers *ws, int lane) { wait_lane(ws->lane[lane]); }

void lmpio__async_wait(lmpio__workers *ws) {
  wait_lane(ws->lane[LMPIO__LANE_INDEPENDENT]);
  wait_lane(ws->lane[LMPIO__LANE_COLLECTIVE]);
}

void lmpio__async_close(lmpio__workers *ws) {
  lmpio__async_wait(ws);
  for (int lane = 0; lane < 2; lane++) {
    lmpio__worker *w = ws->lane[lane];
    if (!w) continue;
    if (w->comm_req != MPI_REQUEST_NULL) MPI_Wait(&w->comm_req, MPI_STATUS_IGNORE); /* no job used it */
    if (w->comm != MPI_COMM_NULL) MPI_Comm_free(&w->comm);
    if (w->fd >= 0) lmpio__os_close(w->fd);
    w->fd = -1;
    ws->lane[lane] = NULL;
    pthread_mutex_lock(&pool_mu);
    w->next = pool;
    pool = w;
    pthread_mutex_unlock(&pool_mu);
  }
}
