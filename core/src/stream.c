/* Streams: files without offsets (pipes, FIFOs, sockets, terminals and other
 * character devices, the process's standard output and input) opened
 * MPI_MODE_SEQUENTIAL.
 *
 * A stream is one sequence of bytes, so only rank 0 holds a descriptor and
 * every byte goes through it: what ranks write lands in the order rank 0
 * writes it, and what they read is the next bytes rank 0 reads for them.
 * The other ranks talk to rank 0 over a duplicate of the file's
 * communicator (p->comm):
 *
 *  - write_shared: a header {WRITE, n} and the n bytes, sent without
 *    waiting (a copy is sent; the rank goes on at once) while the rank's
 *    records in flight stay under LMPIO__PIPE_INFLIGHT_MAX bytes; beyond
 *    that the writer waits for rank 0 to receive them (send_copy), so a
 *    slow reader holds back the writers rather than their memory growing.
 *    Rank 0 writes them in one piece when it serves the header: a record
 *    is never mixed with another rank's bytes;
 *  - read_shared: a header {READ, n}; rank 0 reads up to n bytes and sends
 *    them back in chunks (a short chunk ends the reply: end of input);
 *  - every collective call on the handle starts with a header {SYNC, ...}
 *    from each rank (lmpio__pipe_enter): rank 0 serves the requests that
 *    arrive until it has every rank's SYNC, so the requests a rank made
 *    before the collective are done first, and no rank waits in read_shared
 *    for a rank 0 that waits for it in the collective.
 *
 * With MPI_THREAD_MULTIPLE (lmpio__async_available) rank 0 runs a server
 * thread for the handle that receives every header as it arrives and
 * serves it at once, so a rank's read_shared never waits for rank 0 to
 * call into the file (rank 0 may be in a barrier, or done with the file
 * until close); a mutex (p->mu) keeps the descriptor and the scratch
 * memory to one thread at a time, and rank 0's own calls wait on p->cv for
 * the SYNC round.  Without threads rank 0 serves requests in any of its
 * calls on the handle (and in every collective): a rank's read_shared then
 * waits until rank 0 makes one.  The
 * ordered collectives gather each rank's byte count in the SYNC round, then
 * rank 0 writes (or reads for) the ranks one after the other, in rank order,
 * and the outcome is agreed.  Writing to a pipe whose reader has gone is
 * MPI_ERR_IO (os.c blocks SIGPIPE around the write); the failure sticks to
 * the handle on rank 0 (later writes fail without writing) and reaches the
 * other ranks through the agreement of the next collective.
 *
 * The stream's bytes are the data of the view: its datarep must be native
 * and its filetype without holes (set_view checks, file.c). */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((MPI_Count)1 << 20)
enum { TAG_HDR = 1, TAG_DATA = 2, TAG_REPLY = 3, TAG_RERR = 4 };
enum { K_WRITE = 1, K_READ = 2, K_SYNC = 3, K_STOP = 4 };

struct lmpio__pipe {
  MPI_Comm comm;          /* the protocol's own communicator */
  int is_stdout;          /* rank 0: the descriptor is the process's standard output */
  /* rank 0 */
  int err;                /* a failed write (sticky): its class, 0 if none */
  int reported;           /* a collective call returned it */
  char errmsg[1024];
  int *synced;            /* per rank: its SYNC arrived */
  long long *sync_n;      /* per rank: what it sent with it (bytes, -1: failed checks) */
  int nsynced;
  char *chunk;            /* CHUNK bytes of scratch */
  int threaded;           /* the server thread runs (and owns every header) */
  pthread_t server;
  pthread_mutex_t mu;     /* with the thread: the descriptor, chunk, err, synced */
  pthread_cond_t cv;      /* a SYNC arrived */
  lmpio_file fh;          /* the handle, for the thread */
  /* other ranks: sends in flight and their buffers */
  MPI_Request *reqs;
  void **bufs;
  int *lens;
  int nreqs, capreqs;
  MPI_Count inflight;     /* bytes of bufs */
  int served;             /* every rank: rank 0 has the server thread */
};

static int is_std(const char *path) { return strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/stdin") == 0; }

int lmpio__pipe_kind(const char *path, int *kind) {
  struct stat sb;
  *kind = 0;
  if (is_std(path)) {
    *kind = 2;
    return 0;
  }
  if (lmpio__os_stat(path, &sb) < 0) return errno == ENOENT ? 0 : -1;
  if (S_ISCHR(sb.st_mode)) *kind = 1;
  else if (lmpio__os_is_stream(sb.st_mode)) *kind = 2;
  return 0;
}

int lmpio__pipe_open(const char *path, int amode) {
  int wr = (amode & MPI_MODE_RDONLY) == 0;
  if (is_std(path)) {
    int out = strcmp(path, "/dev/stdout") == 0;
    if (out != wr) {
      errno = EBADF;
      return -1;
    }
    if (out) fflush(stdout); /* what was printed before comes first */
    return lmpio__os_dup(out ? STDOUT_FILENO : STDIN_FILENO);
  }
  return lmpio__os_open(path, (wr ? O_WRONLY : O_RDONLY) | O_CLOEXEC, 0666);
}

int lmpio__pipe_init(lmpio_file fh, const char *call) {
  lmpio__pipe *p = calloc(1, sizeof *p);
  if (!p) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  p->comm = MPI_COMM_NULL;
  p->fh = fh;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  fh->pipe = p;
  if (fh->rank == 0) {
    p->is_stdout = strcmp(fh->path, "/dev/stdout") == 0;
    p->synced = calloc((size_t)fh->size, sizeof *p->synced);
    p->sync_n = calloc((size_t)fh->size, sizeof *p->sync_n);
    p->chunk = malloc((size_t)CHUNK);
    if (!p->synced || !p->sync_n || !p->chunk) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  }
  return MPI_SUCCESS;
}

/* Collective (open, after the agreement on the descriptors). */
static void *server_main(void *arg);

int lmpio__pipe_comm(lmpio_file fh, const char *call) {
  lmpio__pipe *p = fh->pipe;
  if (MPI_Comm_dup(fh->comm, &p->comm) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_COMM, call, "cannot duplicate the communicator");
  /* (No thread: rank 0 serves inside its own calls, as documented.) */
  if (fh->rank == 0 && fh->size > 1 && lmpio__async_available() && pthread_create(&p->server, NULL, server_main, p) == 0)
    p->threaded = 1;
  /* Whether writers may wait for rank 0 (back-pressure, send_copy). */
  p->served = p->threaded;
  if (fh->size > 1 && MPI_Bcast(&p->served, 1, MPI_INT, 0, p->comm) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Bcast failed");
  return MPI_SUCCESS;
}

/* Waits for (all: every) send in flight and frees what completed. */
static void reap(lmpio__pipe *p, int all) {
  int j = 0;
  for (int i = 0; i < p->nreqs; i++) {
    int done = 0;
    if (all) MPI_Wait(&p->reqs[i], MPI_STATUS_IGNORE), done = 1;
    else MPI_Test(&p->reqs[i], &done, MPI_STATUS_IGNORE);
    if (done) {
      free(p->bufs[i]);
      p->inflight -= p->lens[i];
    } else {
      p->reqs[j] = p->reqs[i];
      p->lens[j] = p->lens[i];
      p->bufs[j++] = p->bufs[i];
    }
  }
  p->nreqs = j;
}

void lmpio__pipe_free(lmpio_file fh) {
  lmpio__pipe *p = fh->pipe;
  if (!p) return;
  if (p->threaded) { /* a header from rank 0 itself ends the thread */
    long long h[2] = {K_STOP, 0};
    MPI_Send(h, (int)sizeof h, MPI_BYTE, 0, TAG_HDR, p->comm);
    pthread_join(p->server, NULL);
    p->threaded = 0;
  }
  reap(p, 1);
  free(p->reqs);
  free(p->bufs);
  free(p->lens);
  free(p->synced);
  free(p->sync_n);
  free(p->chunk);
  if (p->comm != MPI_COMM_NULL) MPI_Comm_free(&p->comm);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
  fh->pipe = NULL;
}

/* Waits for the oldest send in flight and frees its copy. */
static void reap_oldest(lmpio__pipe *p) {
  MPI_Wait(&p->reqs[0], MPI_STATUS_IGNORE);
  free(p->bufs[0]);
  p->inflight -= p->lens[0];
  p->nreqs--;
  memmove(p->reqs, p->reqs + 1, sizeof *p->reqs * (size_t)p->nreqs);
  memmove(p->bufs, p->bufs + 1, sizeof *p->bufs * (size_t)p->nreqs);
  memmove(p->lens, p->lens + 1, sizeof *p->lens * (size_t)p->nreqs);
}

/* Sends n bytes (a copy; buf may be reused at once) to rank 0.  record: a
 * piece of a write_shared record.  When rank 0's server thread receives
 * them, a record is sent synchronously (in flight until rank 0 received
 * it, not merely buffered by MPI) and the writer first waits until the
 * records in flight leave room for n bytes: a slow reader slows the
 * writers down instead of their backlog growing in memory.  (Without the thread rank 0 receives only
 * inside its calls on the file, and a rank waiting for it could wait for
 * a rank 0 that waits for it elsewhere: no bound then.) */
#define INFLIGHT_REQS 256
static int send_copy(lmpio__pipe *p, const void *buf, int n, int tag, int record, const char *call) {
  record = record && p->served;
  if (record) {
    reap(p, 0);
    while (p->nreqs > 0 && (p->inflight + n > LMPIO__PIPE_INFLIGHT_MAX || p->nreqs >= INFLIGHT_REQS))
      reap_oldest(p);
  }
  if (p->nreqs == p->capreqs) {
    int cap = p->capreqs ? 2 * p->capreqs : 16;
    MPI_Request *r = realloc(p->reqs, sizeof *r * (size_t)cap);
    if (r) p->reqs = r;
    void **b = realloc(p->bufs, sizeof *b * (size_t)cap);
    if (b) p->bufs = b;
    int *l = realloc(p->lens, sizeof *l * (size_t)cap);
    if (l) p->lens = l;
    if (!r || !b || !l) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    p->capreqs = cap;
  }
  void *copy = malloc(n > 0 ? (size_t)n : 1);
  if (!copy) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  if (n > 0) memcpy(copy, buf, (size_t)n);
  int sent = record ? MPI_Issend(copy, n, MPI_BYTE, 0, tag, p->comm, &p->reqs[p->nreqs])
                    : MPI_Isend(copy, n, MPI_BYTE, 0, tag, p->comm, &p->reqs[p->nreqs]);
  if (sent != MPI_SUCCESS) {
    free(copy);
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Isend failed");
  }
  p->lens[p->nreqs] = n;
  p->bufs[p->nreqs++] = copy;
  p->inflight += n;
  return MPI_SUCCESS;
}

MPI_Count lmpio__pipe_inflight(lmpio_file fh) { return fh->pipe ? fh->pipe->inflight : 0; }

static int send_header(lmpio__pipe *p, int kind, long long n, const char *call) {
  long long h[2] = {kind, n};
  return send_copy(p, h, (int)sizeof h, TAG_HDR, kind == K_WRITE, call);
}

/* ---- rank 0: writing and reading the descriptor ---------------------------- */

static int put(lmpio_file fh, const void *buf, MPI_Count n, const char *call) {
  lmpio__pipe *p = fh->pipe;
  if (p->err) return lmpio__err(p->err, call, "%s", p->errmsg);
  if (n == 0) return MPI_SUCCESS;
  if (p->is_stdout) fflush(stdout); /* the process's own buffered output first */
  long long t0 = lmpio__stats_now();
  long long w = lmpio__os_write_all(fh->fd, buf, n);
  lmpio__stats_add(fh->stats, LMPIO__S_POSIX_WRITE_TIME, lmpio__stats_now() - t0);
  lmpio__stats_add(fh->stats, LMPIO__S_POSIX_WRITES, 1);
  if (w >= 0) {
    lmpio__stats_add(fh->stats, LMPIO__S_POSIX_BYTES_WRITTEN, w);
    return MPI_SUCCESS;
  }
  int e = errno;
  if (e == EPIPE)
    p->err = lmpio__err(MPI_ERR_IO, call, "cannot write to \"%s\": the reader closed the pipe (%s)", fh->path,
                        strerror(e));
  else
    p->err = lmpio__os_error(e, call, "cannot write to", fh->path);
  snprintf(p->errmsg, sizeof p->errmsg, "%s", lmpio_last_error_message());
  /* The message of later calls names the first failure. */
  return p->err;
}

static int get(lmpio_file fh, void *buf, MPI_Count n, MPI_Count *got, const char *call) {
  *got = 0;
  if (n == 0) return MPI_SUCCESS;
  long long t0 = lmpio__stats_now();
  long long r = lmpio__os_read_all(fh->fd, buf, n);
  lmpio__stats_add(fh->stats, LMPIO__S_POSIX_READ_TIME, lmpio__stats_now() - t0);
  lmpio__stats_add(fh->stats, LMPIO__S_POSIX_READS, 1);
  if (r < 0) return lmpio__os_error(errno, call, "cannot read from", fh->path);
  lmpio__stats_add(fh->stats, LMPIO__S_POSIX_BYTES_READ, r);
  *got = r;
  return MPI_SUCCESS;
}

/* Receives n bytes from rank src in chunks and writes them (or, once
 * something failed, only receives them: the sender must not hang). */
static int recv_and_put(lmpio_file fh, int src, MPI_Count n, int tag, int rc, const char *call) {
  lmpio__pipe *p = fh->pipe;
  while (n > 0) {
    int len = (int)(n < CHUNK ? n : CHUNK);
    if (MPI_Recv(p->chunk, len, MPI_BYTE, src, tag, p->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS && rc == MPI_SUCCESS)
      rc = lmpio__err(MPI_ERR_OTHER, call, "MPI_Recv failed");
    if (rc == MPI_SUCCESS) rc = put(fh, p->chunk, len, call);
    n -= len;
  }
  return rc;
}

/* Reads up to n bytes for rank dst and sends them in chunks of CHUNK; a
 * shorter chunk (perhaps empty) ends the reply.  *got: the bytes sent. */
static int get_and_send(lmpio_file fh, int dst, MPI_Count n, MPI_Count *got, const char *call) {
  lmpio__pipe *p = fh->pipe;
  *got = 0;
  for (;;) {
    MPI_Count want = n - *got < CHUNK ? n - *got : CHUNK, g = 0;
    int rc = get(fh, p->chunk, want, &g, call);
    if (rc != MPI_SUCCESS) {
      int cls = rc;
      MPI_Send(&cls, 1, MPI_INT, dst, TAG_RERR, p->comm);
      return rc;
    }
    MPI_Send(p->chunk, (int)g, MPI_BYTE, dst, TAG_REPLY, p->comm);
    *got += g;
    if (g < CHUNK) return MPI_SUCCESS; /* short (or the last, when n is a multiple: an empty one follows) */
  }
}

/* The receiving side of get_and_send: up to n bytes into the memory stream. */
static int recv_reply(lmpio_file fh, lmpio__stream *s, MPI_Count n, MPI_Count *got, const char *call) {
  lmpio__pipe *p = fh->pipe;
  char *tmp = s->contig ? NULL : malloc((size_t)CHUNK);
  if (!s->contig && !tmp) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"); /* cannot happen often: 1 MiB */
  int rc = MPI_SUCCESS;
  *got = 0;
  for (;;) {
    MPI_Status st;
    MPI_Probe(0, MPI_ANY_TAG, p->comm, &st);
    if (st.MPI_TAG == TAG_RERR) {
      int cls = MPI_ERR_IO;
      MPI_Recv(&cls, 1, MPI_INT, 0, TAG_RERR, p->comm, MPI_STATUS_IGNORE);
      rc = lmpio__err(cls, call, "reading \"%s\" failed on rank 0", fh->path);
      break;
    }
    MPI_Count want = n - *got < CHUNK ? n - *got : CHUNK;
    char *dst = s->contig ? s->buf + s->done : tmp;
    int g = 0;
    MPI_Recv(dst, (int)want, MPI_BYTE, 0, TAG_REPLY, p->comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &g);
    if (s->contig) s->done += g;
    else lmpio__stream_copy(s, tmp, g, LMPIO__READ);
    *got += g;
    if (g < CHUNK) break;
  }
  free(tmp);
  return rc;
}

/* Rank 0 serves one request whose header it received from src; a SYNC is
 * recorded. */
static int serve_one(lmpio_file fh, int src, const long long *h, const char *call) {
  lmpio__pipe *p = fh->pipe;
  MPI_Count got;
  switch ((int)h[0]) {
  case K_WRITE: return recv_and_put(fh, src, h[1], TAG_DATA, MPI_SUCCESS, call);
  case K_READ: return get_and_send(fh, src, h[1], &got, call);
  default:
    p->synced[src] = 1;
    p->sync_n[src] = h[1];
    p->nsynced++;
    return MPI_SUCCESS;
  }
}

/* Rank 0: serves what has arrived (wait: until every other rank's SYNC).
 * A failure serving one rank's write_shared is the sticky error (put); a
 * failure of a read is that reader's (it got TAG_RERR). */
static void serve(lmpio_file fh, int wait, const char *call) {
  lmpio__pipe *p = fh->pipe;
  if (p->threaded) { /* the thread serves; a SYNC round waits for it */
    if (!wait) return;
    pthread_mutex_lock(&p->mu);
    while (p->nsynced < fh->size - 1) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return;
  }
  while (!wait || p->nsynced < fh->size - 1) {
    MPI_Status st;
    if (!wait) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, TAG_HDR, p->comm, &flag, &st);
      if (!flag) return;
    }
    long long h[2];
    MPI_Recv(h, (int)sizeof h, MPI_BYTE, MPI_ANY_SOURCE, TAG_HDR, p->comm, &st);
    serve_one(fh, st.MPI_SOURCE, h, call);
  }
}

/* Rank 0's server thread: every header, served as it arrives (under the
 * mutex, which rank 0's own transfers take too). */
static void *server_main(void *arg) {
  lmpio__pipe *p = arg;
  for (;;) {
    long long h[2];
    MPI_Status st;
    if (MPI_Recv(h, (int)sizeof h, MPI_BYTE, MPI_ANY_SOURCE, TAG_HDR, p->comm, &st) != MPI_SUCCESS) break;
    if (h[0] == K_STOP && st.MPI_SOURCE == 0) break;
    pthread_mutex_lock(&p->mu);
    serve_one(p->fh, st.MPI_SOURCE, h, "lmpio_file_read_shared/write_shared (served by rank 0)");
    if (h[0] == K_SYNC) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  return NULL;
}

/* Rank 0's own transfers on the descriptor, beside the server thread. */
static void lock(lmpio__pipe *p) {
  if (p->threaded) pthread_mutex_lock(&p->mu);
}
static void unlock(lmpio__pipe *p) {
  if (p->threaded) pthread_mutex_unlock(&p->mu);
}

/* ---- entries ---------------------------------------------------------------- */

void lmpio__pipe_serve(lmpio_file fh, const char *call) {
  if (!fh->pipe) return;
  if (fh->rank == 0) serve(fh, 0, call);
  else reap(fh->pipe, 0);
}

/* Every collective call on a stream starts here: the requests each rank
 * made before are served; n rides along to rank 0 (sync_n). */
static int enter(lmpio_file fh, long long n, const char *call) {
  lmpio__pipe *p = fh->pipe;
  if (fh->size == 1) {
    p->sync_n[0] = n;
    return MPI_SUCCESS;
  }
  if (fh->rank != 0) {
    int rc = send_header(p, K_SYNC, n, call);
    reap(p, 1); /* rank 0 receives them all in this round */
    return rc;
  }
  serve(fh, 1, call);
  lock(p);
  p->sync_n[0] = n;
  memset(p->synced, 0, sizeof *p->synced * (size_t)fh->size);
  p->nsynced = 0;
  unlock(p);
  return MPI_SUCCESS;
}

void lmpio__pipe_enter(lmpio_file fh, const char *call) {
  if (fh != LMPIO_FILE_NULL && fh->pipe) enter(fh, 0, call);
}

int lmpio__pipe_unreported(lmpio_file fh) {
  lmpio__pipe *p = fh->pipe;
  if (!p || fh->rank != 0) return 0;
  lock(p);
  int rc = MPI_SUCCESS;
  if (p->err && !p->reported) {
    p->reported = 1;
    rc = lmpio__err(p->err, "lmpio_file_close", "%s", p->errmsg);
  }
  unlock(p);
  return rc;
}

/* Data bytes (native view) of count items: the checks of shared access. */
static int prepare(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir, lmpio__stream *s,
                   const lmpio__tm_node **m, MPI_Count *n, int rc, const char *call) {
  MPI_Offset et = 0;
  *m = NULL;
  *n = 0;
  lmpio__stream_bytes(s, NULL, 0);
  if (rc == MPI_SUCCESS) rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
  if (rc == MPI_SUCCESS) rc = lmpio__count_etypes(fh, count, type, &et, call);
  if (rc == MPI_SUCCESS) rc = lmpio__typemap_get(type, m, call);
  if (rc == MPI_SUCCESS) {
    if (lmpio__stream_init(s, buf, *m, count) != MPI_SUCCESS) rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    *n = s->total;
  }
  return rc;
}

static void unprepare(lmpio__stream *s, const lmpio__tm_node *m) {
  lmpio__stream_free(s);
  if (m) lmpio__typemap_release(m);
}

/* Sends (rank != 0) or writes (rank 0) the data of memory stream s, chunk
 * by chunk (whole when contiguous).  independent: sent as copies. */
static int emit(lmpio_file fh, lmpio__stream *s, int independent, const char *call) {
  lmpio__pipe *p = fh->pipe;
  int rc = MPI_SUCCESS;
  char *tmp = NULL;
  if (!s->contig && fh->rank != 0 && !(tmp = malloc((size_t)CHUNK))) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  while (s->done < s->total) {
    MPI_Count len = s->total - s->done;
    if (len > CHUNK && (fh->rank != 0 || !s->contig)) len = CHUNK;
    const char *from = s->buf + s->done;
    if (!s->contig) {
      char *dst = fh->rank == 0 ? p->chunk : tmp;
      lmpio__stream_copy(s, dst, len, LMPIO__WRITE);
      from = dst;
    } else {
      s->done += len;
    }
    if (fh->rank == 0) {
      int r = put(fh, from, len, call);
      if (rc == MPI_SUCCESS) rc = r;
      if (rc != MPI_SUCCESS) break;
    } else if (independent) {
      if ((rc = send_copy(p, from, (int)len, TAG_DATA, 1, call)) != MPI_SUCCESS) break;
    } else if (MPI_Send(from, (int)len, MPI_BYTE, 0, TAG_DATA, p->comm) != MPI_SUCCESS) {
      rc = lmpio__err(MPI_ERR_OTHER, call, "MPI_Send failed");
      break;
    }
  }
  free(tmp);
  return rc;
}

/* Rank 0 reads into its own memory stream. */
static int take(lmpio_file fh, lmpio__stream *s, MPI_Count *got, const char *call) {
  lmpio__pipe *p = fh->pipe;
  *got = 0;
  int rc = MPI_SUCCESS;
  if (s->contig) {
    rc = get(fh, s->buf, s->total, got, call);
    s->done = *got;
    return rc;
  }
  while (rc == MPI_SUCCESS && s->done < s->total) {
    MPI_Count want = s->total - s->done < CHUNK ? s->total - s->done : CHUNK, g = 0;
    rc = get(fh, p->chunk, want, &g, call);
    lmpio__stream_copy(s, p->chunk, g, LMPIO__READ);
    *got += g;
    if (g < want) break;
  }
  return rc;
}

/* The view must be the data as it is in memory: native, no holes. */
int lmpio__pipe_check_view(lmpio_file fh, const lmpio__view *v, const char *call) {
  if (v->rep)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "file \"%s\" is a stream: its data representation can only be \"native\", not \"%s\"", fh->path,
                      v->datarep);
  if (!v->contiguous && !v->empty)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "file \"%s\" is a stream: a filetype with holes has no meaning there", fh->path);
  return MPI_SUCCESS;
}

int lmpio__pipe_shared(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                       MPI_Count *bytes, const char *call) {
  lmpio__stream s;
  const lmpio__tm_node *m;
  MPI_Count n;
  *bytes = 0;
  int rc = prepare(fh, buf, count, type, dir, &s, &m, &n, MPI_SUCCESS, call);
  if (rc == MPI_SUCCESS) lmpio__pipe_serve(fh, call); /* what others asked for first */
  if (rc == MPI_SUCCESS && n > 0) {
    if (dir == LMPIO__WRITE) {
      if (fh->rank != 0) rc = send_header(fh->pipe, K_WRITE, n, call);
      if (fh->rank == 0) lock(fh->pipe);
      if (rc == MPI_SUCCESS) rc = emit(fh, &s, 1, call);
      if (fh->rank == 0) unlock(fh->pipe);
      if (rc == MPI_SUCCESS) *bytes = n;
    } else if (fh->rank == 0) {
      lock(fh->pipe);
      rc = take(fh, &s, bytes, call);
      unlock(fh->pipe);
    } else {
      rc = send_header(fh->pipe, K_READ, n, call);
      if (rc == MPI_SUCCESS) rc = recv_reply(fh, &s, n, bytes, call);
    }
  }
  lmpio__stats_path(fh->stats, LMPIO__P_STREAM, dir, *bytes);
  unprepare(&s, m);
  return rc;
}

int lmpio__pipe_ordered(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                        MPI_Count *bytes, int pre_rc, const char *call) {
  lmpio__pipe *p = fh->pipe;
  lmpio__stream s;
  const lmpio__tm_node *m;
  MPI_Count n;
  *bytes = 0;
  int rc = prepare(fh, buf, count, type, dir, &s, &m, &n, lmpio__pending(pre_rc, call), call);
  /* Every rank's count (or its failed checks) reaches rank 0 in the SYNC
   * round; then the call's first agreement says whether to go on. */
  int erc = enter(fh, rc == MPI_SUCCESS ? n : -1, call);
  if (rc == MPI_SUCCESS) rc = erc;
  rc = lmpio__agree_first(fh->comm, rc, NULL, call);
  if (rc != MPI_SUCCESS) {
    unprepare(&s, m);
    return rc;
  }
  if (fh->rank == 0) {
    /* The whole ordered transfer under the mutex: a request another rank
     * makes after this collective waits until it is written. */
    lock(p);
    if (dir == LMPIO__WRITE) {
      rc = emit(fh, &s, 0, call);
      if (rc == MPI_SUCCESS) *bytes = n;
      for (int r = 1; r < fh->size; r++) rc = recv_and_put(fh, r, p->sync_n[r], TAG_DATA, rc, call);
      if (p->err) p->reported = 1;
    } else {
      rc = take(fh, &s, bytes, call);
      for (int r = 1; r < fh->size; r++) {
        MPI_Count got;
        if (p->sync_n[r] == 0) continue;
        if (rc != MPI_SUCCESS) { /* tell the reader: nothing more */
          int cls = rc;
          MPI_Send(&cls, 1, MPI_INT, r, TAG_RERR, p->comm);
        } else {
          rc = get_and_send(fh, r, p->sync_n[r], &got, call);
        }
      }
    }
    unlock(p);
  } else if (n > 0) {
    if (dir == LMPIO__WRITE) {
      rc = emit(fh, &s, 0, call);
      if (rc == MPI_SUCCESS) *bytes = n;
    } else {
      rc = recv_reply(fh, &s, n, bytes, call);
    }
  }
  lmpio__stats_path(fh->stats, LMPIO__P_STREAM, dir, *bytes);
  unprepare(&s, m);
  return fh->size > 1 ? lmpio__agree(fh->comm, rc, 0, call) : rc;
}
