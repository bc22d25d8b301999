/* Streams: pipes, FIFOs and standard streams opened MPI_MODE_SEQUENTIAL.
 * Rank 0 makes a pipe (or FIFO) and a thread that reads (or writes) its
 * other end; the file is opened by the name "/proc/self/fd/N" (or the
 * FIFO's path), which only rank 0 opens. */
#include "testlib.h"
#include "internals.h" /* lmpio__async_available */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

/* ---- the other end of the pipe, on a thread of rank 0 ----------------------- */

typedef struct {
  int fd;
  char *buf;          /* reader: what came; writer: what to send */
  size_t len, cap;
  int delay_us;       /* reader: pause after every read (a slow reader) */
  size_t stop_after;  /* reader: close after this many bytes (0: never) */
  const char *fifo;   /* open this FIFO first (fd is then set by the thread) */
  size_t block;       /* reader: keep nothing, count blocks of this size instead */
  size_t blocks[256]; /* ... by their first byte */
  size_t mixed;       /* ... and bytes that differ from their block's first */
  pthread_t th;
} peer;

static void *reader(void *arg) {
  peer *p = arg;
  if (p->fifo) p->fd = open(p->fifo, O_RDONLY);
  char tmp[4096];
  for (;;) {
    ssize_t n = read(p->fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (p->block) {
      for (ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)tmp[i];
        if ((p->len + (size_t)i) % p->block == 0) {
          p->blocks[c]++;
          p->cap = c; /* the block's first byte */
        } else if (c != p->cap) {
          p->mixed++;
        }
      }
      p->len += (size_t)n;
      if (p->delay_us) usleep((useconds_t)p->delay_us);
      continue;
    }
    if (p->len + (size_t)n > p->cap) {
      p->cap = 2 * (p->len + (size_t)n);
      p->buf = realloc(p->buf, p->cap);
    }
    memcpy(p->buf + p->len, tmp, (size_t)n);
    p->len += (size_t)n;
    if (p->stop_after && p->len >= p->stop_after) break;
    if (p->delay_us) usleep((useconds_t)p->delay_us);
  }
  close(p->fd);
  return NULL;
}

static void *writer(void *arg) {
  peer *p = arg;
  if (p->fifo) p->fd = open(p->fifo, O_WRONLY);
  size_t done = 0;
  while (done < p->len) {
    ssize_t n = write(p->fd, p->buf + done, p->len - done < 1000 ? p->len - done : 1000);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += (size_t)n;
  }
  close(p->fd);
  return NULL;
}

/* Rank 0 makes a pipe; the file is one end (write_end: the write end, and
 * the peer reads), named "/proc/self/fd/N" for every rank. */
typedef struct {
  peer p;
  int mine;
} piped;

static void pipe_open_end(piped *q, int write_end, char *name) {
  memset(&q->p, 0, sizeof q->p);
  q->mine = -1;
  memset(name, 0, 64);
  if (tl_rank == 0) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    q->p.fd = write_end ? fds[0] : fds[1];
    q->mine = write_end ? fds[1] : fds[0];
    snprintf(name, 64, "/proc/self/fd/%d", q->mine);
  }
  MPI_Bcast(name, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* Starts the peer once the file is open (then the test closes its own end:
 * the file's descriptor is the only one left, so the peer sees the end). */
static void pipe_start(piped *q, int write_end) {
  if (tl_rank != 0) return;
  close(q->mine);
  pthread_create(&q->p.th, NULL, write_end ? reader : writer, &q->p);
}

static void pipe_join(piped *q) {
  if (tl_rank == 0) pthread_join(q->p.th, NULL);
}

/* The lines rank r writes in call k of a test. */
static int make_lines(char *out, int r, int k) {
  int n = 0;
  for (int i = 0; i < (r * 7 + k * 3) % 11; i++) n += sprintf(out + n, "call %d rank %d line %d %.*s\n", k, r, i, (r + i) % 23, "abcdefghijklmnopqrstuvwxyz");
  return n;
}

/* ---- cases ------------------------------------------------------------------- */

static void test_write_ordered_pipe(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  char *buf = malloc(4096);
  for (int k = 0; k < 20; k++) {
    int n = make_lines(buf, tl_rank, k);
    MPI_Status st;
    TL_OK(lmpio_file_write_ordered(fh, buf, n, MPI_CHAR, &st));
    int c = -1;
    MPI_Get_count(&st, MPI_CHAR, &c);
    TL_EQ(c, n);
  }
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    /* what one process writing every rank's lines in turn writes */
    size_t cap = 1 << 20, len = 0;
    char *want = malloc(cap);
    for (int k = 0; k < 20; k++)
      for (int r = 0; r < tl_size; r++) len += (size_t)make_lines(want + len, r, k);
    TL_EQ(q.p.len, len);
    TL_CHECK(q.p.len == len && memcmp(q.p.buf, want, len) == 0);
    free(want);
  }
  free(q.p.buf);
  free(buf);
}

static void test_fifo_write_and_read(void) {
  char *path = tl_path("fifo");
  if (tl_rank == 0) TL_CHECK(mkfifo(path, 0600) == 0);
  MPI_Barrier(MPI_COMM_WORLD);
  peer p;
  memset(&p, 0, sizeof p);
  p.fifo = path;
  if (tl_rank == 0) pthread_create(&p.th, NULL, reader, &p);
  lmpio_file fh;
  /* the open waits for the reader, as open(2) does */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  int v[3] = {tl_rank, tl_rank * 10, tl_rank * 100};
  TL_OK(lmpio_file_write_ordered(fh, v, 3, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  if (tl_rank == 0) {
    pthread_join(p.th, NULL);
    TL_EQ(p.len, sizeof(int) * 3 * (size_t)tl_size);
    for (int r = 0; r < tl_size && p.len == sizeof(int) * 3 * (size_t)tl_size; r++) {
      int *w = (int *)p.buf + 3 * r;
      TL_CHECK(w[0] == r && w[1] == r * 10 && w[2] == r * 100);
    }
  }
  free(p.buf);
  /* And reading: a writer thread feeds the FIFO. */
  memset(&p, 0, sizeof p);
  p.fifo = path;
  p.len = 5000;
  p.buf = malloc(p.len);
  for (size_t i = 0; i < p.len; i++) p.buf[i] = (char)(i % 251);
  if (tl_rank == 0) pthread_create(&p.th, NULL, writer, &p);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  char got[300];
  size_t at = 0;
  for (int k = 0; k < 40; k++) {
    MPI_Status st;
    TL_OK(lmpio_file_read_ordered(fh, got, 300, MPI_CHAR, &st));
    int c = -1;
    MPI_Get_count(&st, MPI_CHAR, &c);
    size_t mine = at + 300 * (size_t)tl_rank;
    size_t want = mine >= 5000 ? 0 : (5000 - mine < 300 ? 5000 - mine : 300);
    TL_EQ(c, want);
    for (int i = 0; i < c && (size_t)i < want; i++)
      if (got[i] != (char)((mine + (size_t)i) % 251)) {
        TL_CHECK(!"read_ordered: wrong byte");
        break;
      }
    at += 300 * (size_t)tl_size;
  }
  TL_OK(lmpio_file_close(&fh));
  if (tl_rank == 0) pthread_join(p.th, NULL);
  free(p.buf);
  tl_unlink(path);
}

static void test_write_shared_records_whole(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  q.p.delay_us = 200; /* a slow reader: the pipe fills */
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  enum { N = 50, SMALL = 100, BIG = 3 << 20 };
  char *rec = malloc(BIG);
  memset(rec, 'A' + tl_rank % 26, BIG);
  for (int i = 0; i < N; i++) {
    rec[SMALL - 1] = '\n';
    TL_OK(lmpio_file_write_shared(fh, rec, SMALL, MPI_CHAR, MPI_STATUS_IGNORE));
    rec[SMALL - 1] = 'A' + tl_rank % 26;
  }
  /* one record bigger than the chunks the bytes move in */
  rec[BIG - 1] = '\n';
  TL_OK(lmpio_file_write_shared(fh, rec, BIG, MPI_CHAR, MPI_STATUS_IGNORE));
  /* the nonblocking form too */
  MPI_Request req;
  rec[SMALL - 1] = '\n';
  TL_OK(lmpio_file_iwrite_shared(fh, rec, SMALL, MPI_CHAR, &req));
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    size_t want = (size_t)tl_size * ((N + 1) * SMALL + BIG);
    TL_EQ(q.p.len, want);
    /* every line is one rank's letter only, of one of the two lengths */
    int count[26] = {0}, big[26] = {0};
    size_t at = 0;
    while (at < q.p.len) {
      char *nl = memchr(q.p.buf + at, '\n', q.p.len - at);
      if (!nl) {
        TL_CHECK(!"a record without its end");
        break;
      }
      size_t l = (size_t)(nl - (q.p.buf + at)) + 1;
      char c = q.p.buf[at];
      for (size_t i = 0; i + 1 < l; i++)
        if (q.p.buf[at + i] != c) {
          TL_CHECK(!"a record mixes two ranks' bytes");
          break;
        }
      if (l == SMALL) count[c - 'A']++;
      else if (l == BIG) big[c - 'A']++;
      else TL_CHECK(!"a record of a wrong length");
      at += l;
    }
    for (int r = 0; r < tl_size && r < 26; r++) {
      TL_EQ(count[r], N + 1);
      TL_EQ(big[r], 1);
    }
  }
  free(q.p.buf);
  free(rec);
}

/* Ranks write_shared many 1 MiB records to a pipe whose reader is slow:
 * the copies of the records in flight to rank 0 stay under a bound (the
 * writer waits), instead of the whole backlog piling up in memory (300 MiB
 * of 300 records before, the calls returning at once). */
static void test_write_shared_backpressure(void) {
  if (!lmpio__async_available()) {
    if (tl_rank == 0) printf("# skipped: the bound needs rank 0's server thread (MPI_THREAD_MULTIPLE)\n");
    return;
  }
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  q.p.block = 1 << 20;
  q.p.delay_us = 50; /* a slow reader: 4 KiB per read */
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  enum { NREC = 24 };
  char *rec = malloc(1 << 20);
  MPI_Count peak = 0;
  for (int k = 0; k < NREC; k++) {
    memset(rec, 1 + tl_rank % 255, 1 << 20);
    TL_OK(lmpio_file_write_shared(fh, rec, 1 << 20, MPI_CHAR, MPI_STATUS_IGNORE));
    MPI_Count now = lmpio__pipe_inflight(fh);
    if (now > peak) peak = now;
  }
  TL_CHECK(peak <= LMPIO__PIPE_INFLIGHT_MAX);
  if (peak > LMPIO__PIPE_INFLIGHT_MAX)
    fprintf(stderr, "[rank %d] %lld bytes of records in flight to rank 0\n", tl_rank, (long long)peak);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    TL_EQ(q.p.len, (size_t)NREC * (size_t)tl_size << 20);
    TL_EQ(q.p.mixed, 0); /* whole records */
    for (int r = 0; r < tl_size && r < 255; r++) TL_EQ(q.p.blocks[1 + r], NREC);
  }
  free(rec);
}

/* On a stream too, ranks in different collective calls fail with
 * MPI_ERR_NOT_SAME naming both, and the stream works on afterwards (every
 * call's round with rank 0 comes before its first agreement, so the rounds
 * stay in step).  Hung before. */
static void test_different_calls(void) {
  if (tl_size < 2) return;
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  int last = tl_size - 1;
  char b = (char)('a' + tl_rank % 26);
  int rc = tl_rank == last ? lmpio_file_close(&fh) : lmpio_file_write_ordered(fh, &b, 1, MPI_CHAR, MPI_STATUS_IGNORE);
  TL_EQ(rc, MPI_ERR_NOT_SAME);
  char want[128];
  snprintf(want, sizeof want, "rank %d called close while rank 0 called write_ordered", last);
  TL_CHECK(strstr(lmpio_last_error_message(), want) != NULL);
  rc = tl_rank == last ? lmpio_file_sync(fh) : lmpio_file_write_shared(fh, &b, 1, MPI_CHAR, MPI_STATUS_IGNORE);
  if (tl_rank != last) TL_OK(rc); /* (independent: not a collective call) */
  if (tl_rank == last) TL_EQ(rc, MPI_ERR_NOT_SAME); /* the others' next collective call is write_ordered */
  if (tl_rank != last) {
    TL_RC(lmpio_file_write_ordered(fh, &b, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_NOT_SAME);
    TL_CHECK(strstr(lmpio_last_error_message(), "called sync") != NULL);
  }
  TL_OK(lmpio_file_write_ordered(fh, &b, 1, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    /* the write_shared bytes of the ranks but the last, then one of each rank in order */
    TL_EQ(q.p.len, (size_t)(tl_size - 1) + (size_t)tl_size);
    for (int r = 0; r < tl_size && q.p.len == (size_t)(2 * tl_size - 1); r++)
      TL_EQ(q.p.buf[tl_size - 1 + r], 'a' + r % 26);
  }
  free(q.p.buf);
}

/* A pipe whose writer (rank 0's thread) sends total bytes counting modulo
 * 251, opened for reading as a stream. */
static lmpio_file open_counting_input(piped *q, char *name, size_t total) {
  pipe_open_end(q, 0, name);
  q->p.len = total;
  q->p.buf = malloc(total);
  for (size_t i = 0; i < total; i++) q->p.buf[i] = (char)(i % 251);
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(q, 0);
  return fh;
}

static void test_read_shared_eof(void) {
  char name[64];
  piped q;
  enum { TOTAL = 20011 };
  lmpio_file fh = open_counting_input(&q, name, TOTAL);
  long long mine = 0;
  char got[97];
  for (;;) {
    MPI_Status st;
    int rc = lmpio_file_read_shared(fh, got, 97, MPI_CHAR, &st);
    TL_OK(rc);
    int c = 0;
    MPI_Get_count(&st, MPI_CHAR, &c);
    for (int i = 1; i < c; i++)
      if ((unsigned char)got[i] != ((unsigned char)got[i - 1] + 1) % 251) {
        TL_CHECK(!"read_shared: not the next bytes of the input");
        break;
      }
    mine += c;
    if (c < 97 || rc != MPI_SUCCESS) break; /* end of input: a short count, not an error */
  }
  /* (rank 0 serves the other ranks' read_shared in its calls on the file:
   * the close, a collective, before anything outside lmpio) */
  TL_OK(lmpio_file_close(&fh));
  long long all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  TL_EQ(all, TOTAL);
  pipe_join(&q);
  free(q.p.buf);
}

static void test_reader_closes_early(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  q.p.stop_after = 1000;
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  char *buf = malloc(1 << 16);
  memset(buf, 'x', 1 << 16);
  int rc = MPI_SUCCESS, k;
  for (k = 0; k < 1000 && rc == MPI_SUCCESS; k++) rc = lmpio_file_write_ordered(fh, buf, 1 << 16, MPI_CHAR, MPI_STATUS_IGNORE);
  /* every rank fails alike, with the reason; nobody died of SIGPIPE */
  TL_EQ(rc, MPI_ERR_IO);
  TL_CHECK(strstr(lmpio_last_error_message(), "closed the pipe") != NULL);
  int mn = 0, mx = 0;
  MPI_Allreduce(&k, &mn, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&k, &mx, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  TL_EQ(mn, mx);
  /* later writes fail too, and write_shared's failure reaches close */
  TL_RC(lmpio_file_write_ordered(fh, buf, 10, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_IO);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  /* SIGPIPE is neither blocked nor pending afterwards */
  sigset_t set;
  sigpending(&set);
  TL_CHECK(!sigismember(&set, SIGPIPE));
  pthread_sigmask(SIG_BLOCK, NULL, &set);
  TL_CHECK(!sigismember(&set, SIGPIPE));
  free(q.p.buf);

  /* write_shared alone: the failure is reported by close on every rank */
  pipe_open_end(&q, 1, name);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  if (tl_rank == 0) { /* no reader at all */
    close(q.mine);
    close(q.p.fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* rank 0 writes its own at once and fails; the others' fail when rank 0
   * serves them (in close) */
  TL_RC(lmpio_file_write_shared(fh, buf, 100, MPI_CHAR, MPI_STATUS_IGNORE), tl_rank == 0 ? MPI_ERR_IO : MPI_SUCCESS);
  TL_RC(lmpio_file_close(&fh), MPI_ERR_IO);
  TL_CHECK(fh == LMPIO_FILE_NULL);
  free(q.p.buf);
  free(buf);
}

static void test_slow_reader_big_writes(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  q.p.delay_us = 50;
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  enum { PER = 300000 };
  char *buf = malloc(PER);
  for (int i = 0; i < PER; i++) buf[i] = (char)(tl_rank * 31 + i);
  /* a noncontiguous memory type: every other int */
  MPI_Datatype vec;
  MPI_Type_vector(PER / 8, 1, 2, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  TL_OK(lmpio_file_write_ordered(fh, buf, PER, MPI_CHAR, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_write_ordered(fh, buf, 1, vec, MPI_STATUS_IGNORE));
  /* and the split form */
  TL_OK(lmpio_file_write_ordered_begin(fh, buf, 1000, MPI_CHAR));
  TL_OK(lmpio_file_write_ordered_end(fh, buf, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    size_t vb = (size_t)(PER / 8) * 4;
    TL_EQ(q.p.len, (size_t)tl_size * (PER + vb + 1000));
    int ok = q.p.len == (size_t)tl_size * (PER + vb + 1000);
    size_t at = 0;
    for (int r = 0; r < tl_size && ok; r++)
      for (int i = 0; i < PER; i++)
        if (q.p.buf[at++] != (char)(r * 31 + i)) ok = 0;
    for (int r = 0; r < tl_size && ok; r++)
      for (int i = 0; i < PER / 8; i++)
        for (int b = 0; b < 4; b++)
          if (q.p.buf[at++] != (char)(r * 31 + i * 8 + b)) ok = 0;
    TL_CHECK(ok);
  }
  MPI_Type_free(&vec);
  free(q.p.buf);
  free(buf);
}

static void test_stdout(void) {
  /* rank 0's standard output is a pipe for this case */
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  int saved = -1;
  if (tl_rank == 0) {
    fflush(stdout);
    saved = dup(1);
    dup2(q.mine, 1);
  }
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, "/dev/stdout", MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  if (tl_rank == 0) {
    printf("before\n"); /* buffered: comes out before what the file writes */
    dup2(saved, 1);     /* the file keeps its own descriptor */
    close(saved);
  }
  pipe_start(&q, 1);
  char line[64];
  int n = sprintf(line, "rank %d\n", tl_rank);
  TL_OK(lmpio_file_write_ordered(fh, line, n, MPI_CHAR, MPI_STATUS_IGNORE));
  /* reading standard output, or opening it for reading, is refused */
  TL_RC(lmpio_file_read_shared(fh, line, 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_ACCESS);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    char want[4096] = "before\n";
    for (int r = 0; r < tl_size; r++) sprintf(want + strlen(want), "rank %d\n", r);
    TL_EQ(q.p.len, strlen(want));
    TL_CHECK(q.p.len == strlen(want) && memcmp(q.p.buf, want, q.p.len) == 0);
  }
  free(q.p.buf);
}

static void test_errors(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 1, name);
  lmpio_file fh = LMPIO_FILE_NULL;
  /* a pipe without MPI_MODE_SEQUENTIAL */
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_CHECK(strstr(lmpio_last_error_message(), "MPI_MODE_SEQUENTIAL") != NULL);
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 1);
  MPI_Offset size;
  TL_RC(lmpio_file_get_size(fh, &size), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_CHECK(strstr(lmpio_last_error_message(), "stream") != NULL);
  TL_RC(lmpio_file_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write_at(fh, 0, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_write_all(fh, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_set_size(fh, 0), MPI_ERR_UNSUPPORTED_OPERATION);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_OPERATION);
  MPI_Datatype holes;
  MPI_Type_create_resized(MPI_INT, 0, 8, &holes);
  MPI_Type_commit(&holes);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_INT, holes, "native", MPI_INFO_NULL), MPI_ERR_UNSUPPORTED_OPERATION);
  MPI_Type_free(&holes);
  /* a view of ints works: counts are in ints, bytes as in memory */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_RC(lmpio_file_write_ordered(fh, "abc", 3, MPI_CHAR, MPI_STATUS_IGNORE), MPI_ERR_TYPE);
  int v = tl_rank;
  TL_OK(lmpio_file_write_ordered(fh, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_sync(fh));
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  if (tl_rank == 0) {
    TL_EQ(q.p.len, sizeof(int) * (size_t)tl_size);
    for (int r = 0; r < tl_size && q.p.len == sizeof(int) * (size_t)tl_size; r++) TL_EQ(((int *)q.p.buf)[r], r);
  }
  free(q.p.buf);
}

/* Input lines of many lengths, one longer than max. */
static size_t make_input(char *buf) {
  size_t n = 0;
  for (int i = 0; i < 3000; i++) {
    int l = (i * 37) % 90;
    if (i == 1234) l = 5000;
    for (int j = 0; j < l; j++) buf[n++] = (char)('a' + (i + j) % 26);
    buf[n++] = '\n';
  }
  memcpy(buf + n, "no newline at the end", 21);
  return n + 21;
}

static void check_records(lmpio_file fh, const char *input, size_t inlen, MPI_Count max) {
  char *all = malloc(inlen + 1);
  size_t at = 0;
  int calls = 0, more = 1;
  while (more) {
    char *rec;
    MPI_Count len;
    TL_OK(lmpio_file_read_records_ordered(fh, '\n', max, &rec, &len, &more));
    int flags[2] = {more, -more}, mm[2];
    MPI_Allreduce(flags, mm, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    TL_EQ(mm[0], -mm[1]); /* every rank sees the end at the same call */
    /* whole records: each rank's piece ends with a separator, except the
     * input's last record */
    if (len > 0 && rec[len - 1] != '\n') TL_CHECK(at + (size_t)len <= inlen);
    int *lens = malloc(sizeof(int) * (size_t)tl_size);
    int l = (int)len;
    MPI_Allgather(&l, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD);
    int *displs = malloc(sizeof(int) * (size_t)tl_size), tot = 0;
    for (int r = 0; r < tl_size; r++) {
      displs[r] = tot;
      tot += lens[r];
    }
    if (at + (size_t)tot > inlen) {
      TL_CHECK(!"more bytes than the input");
      more = 0;
    } else {
      MPI_Allgatherv(rec, l, MPI_CHAR, all + at, lens, displs, MPI_CHAR, MPI_COMM_WORLD);
      for (int r = 0; r < tl_size; r++) /* starts a record */
        if (lens[r] > 0) TL_CHECK(at + (size_t)displs[r] == 0 || all[at + (size_t)displs[r] - 1] == '\n');
      at += (size_t)tot;
    }
    free(lens);
    free(displs);
    free(rec);
    calls++;
    if (calls > 100000) break;
  }
  TL_EQ(at, inlen);
  TL_CHECK(at == inlen && memcmp(all, input, inlen) == 0);
  free(all);
}

static void test_records_pipe_and_file(void) {
  char *input = malloc(1 << 20);
  size_t inlen = make_input(input);
  for (int maxi = 0; maxi < 2; maxi++) {
    MPI_Count max = maxi ? 4096 : 100;
    char name[64];
    piped q;
    pipe_open_end(&q, 0, name);
    q.p.buf = input;
    q.p.len = inlen;
    lmpio_file fh;
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
    pipe_start(&q, 0);
    check_records(fh, input, inlen, max);
    TL_OK(lmpio_file_close(&fh));
    pipe_join(&q);
  }
  /* a regular file: the same */
  char *path = tl_path("records");
  if (tl_rank == 0) {
    FILE *f = fopen(path, "w");
    fwrite(input, 1, inlen, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  check_records(fh, input, inlen, 777);
  /* chunks far shorter than the lines: the carry grows over many calls (the
   * 5000-byte line past its first buffer), and moves to its front */
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  check_records(fh, input, inlen, 50);
  /* arguments every rank must agree on */
  char *rec;
  MPI_Count len;
  int more;
  if (tl_size > 1)
    TL_RC(lmpio_file_read_records_ordered(fh, tl_rank ? ';' : '\n', 10, &rec, &len, &more), MPI_ERR_NOT_SAME);
  TL_RC(lmpio_file_read_records_ordered(fh, '\n', tl_rank == tl_size - 1 ? 0 : 10, &rec, &len, &more), MPI_ERR_ARG);
  TL_RC(lmpio_file_read_records_ordered(fh, 300, 10, &rec, &len, &more), MPI_ERR_ARG);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
  free(input);
}

/* A pass over the records left after one step (a break), then the shared
 * pointer moved (seek_shared, a new view, read_ordered) or the pass
 * dropped (lmpio_file_drop_records): the next pass starts with the bytes
 * at the pointer, not with the unfinished record of the abandoned pass.  The
 * abandoned record was glued in front of the next pass before. */
static void test_records_abandoned(void) {
  char *input = malloc(1 << 20);
  size_t inlen = make_input(input);
  char *path = tl_path("records-abandoned");
  if (tl_rank == 0) {
    FILE *f = fopen(path, "w");
    fwrite(input, 1, inlen, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  for (int how = 0; how < 4; how++) {
    char *rec = NULL;
    MPI_Count len = 0;
    int more = 0;
    TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET)); /* (the last pass ended at end of input) */
    /* 100 bytes a rank: the last line read is unfinished */
    TL_OK(lmpio_file_read_records_ordered(fh, '\n', 100, &rec, &len, &more));
    TL_EQ(more, 1);
    free(rec);
    if (how == 0) {
      TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
      check_records(fh, input, inlen, 777);
    } else if (how == 1) {
      TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
      check_records(fh, input, inlen, 777);
    } else if (how == 2) {
      /* the pointer stays: the next pass starts inside a line */
      TL_OK(lmpio_file_drop_records(fh));
      size_t skip = 100 * (size_t)tl_size;
      check_records(fh, input + skip, inlen - skip, 777);
    } else {
      /* another access through the shared pointer: the pass starts after it */
      char b[10];
      TL_OK(lmpio_file_read_ordered(fh, b, 10, MPI_CHAR, MPI_STATUS_IGNORE));
      size_t skip = 110 * (size_t)tl_size;
      check_records(fh, input + skip, inlen - skip, 777);
    }
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
  free(input);
}

static void test_empty_input(void) {
  char name[64];
  piped q;
  pipe_open_end(&q, 0, name);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
  pipe_start(&q, 0);
  char b[10];
  MPI_Status st;
  TL_OK(lmpio_file_read_ordered(fh, b, 10, MPI_CHAR, &st));
  int c = -1;
  MPI_Get_count(&st, MPI_CHAR, &c);
  TL_EQ(c, 0);
  char *rec;
  MPI_Count len;
  int more = 1;
  TL_OK(lmpio_file_read_records_ordered(fh, '\n', 10, &rec, &len, &more));
  TL_EQ(more, 0);
  TL_EQ(len, 0);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
}

/* Ranks other than 0 read_shared to the end while rank 0 never calls into
 * the file before a barrier: rank 0's server thread (MPI_THREAD_MULTIPLE)
 * answers them.  Without the thread this hangs (rank 0 serves only inside
 * its own calls on the file): skipped then (LMPIO_ASYNC=0 run). */
static void test_read_shared_rank0_elsewhere(void) {
  if (!lmpio__async_available()) {
    if (tl_rank == 0) printf("# skipped: no server thread without MPI_THREAD_MULTIPLE\n");
    return;
  }
  char name[64];
  piped q;
  enum { TOTAL = 30011 };
  lmpio_file fh = open_counting_input(&q, name, TOTAL);
  long long mine = 0;
  if (tl_rank != 0 || tl_size == 1) {
    char got[113];
    for (;;) {
      MPI_Status st;
      TL_OK(lmpio_file_read_shared(fh, got, 113, MPI_CHAR, &st));
      int c = 0;
      MPI_Get_count(&st, MPI_CHAR, &c);
      mine += c;
      if (c < 113) break;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD); /* rank 0 waits here, outside lmpio, from the start */
  long long all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  TL_EQ(all, TOTAL);
  TL_OK(lmpio_file_close(&fh));
  pipe_join(&q);
  free(q.p.buf);
}

int main(int argc, char **argv) {
  /* Threads when the MPI library has them (rank 0 then serves read_shared
   * and write_shared on a thread); check.sh also runs it with
   * LMPIO_ASYNC=0, the path without. */
  int provided;
  (void)tl_init;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &tl_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tl_size);
  tl_run("write_ordered to a pipe: byte-identical to one process writing in rank order", test_write_ordered_pipe);
  tl_run("a FIFO: write_ordered, then read_ordered in rank order with a short count at the end", test_fifo_write_and_read);
  tl_run("write_shared records land whole through a slow reader (and iwrite_shared)", test_write_shared_records_whole);
  tl_run("write_shared of many big records through a slow reader: memory in flight bounded",
         test_write_shared_backpressure);
  tl_run("different collective calls on a stream fail on every rank, naming both", test_different_calls);
  tl_run("read_shared hands out the input once; end of input is a short count", test_read_shared_eof);
  tl_run("a reader that closes early: MPI_ERR_IO on every rank, no SIGPIPE", test_reader_closes_early);
  tl_run("big and noncontiguous writes through a slow reader (full pipe), split form", test_slow_reader_big_writes);
  tl_run("\"/dev/stdout\" is rank 0's standard output, after what it printed", test_stdout);
  tl_run("calls that have no meaning on a stream fail clearly", test_errors);
  tl_run("read_records_ordered: whole records in rank order from a pipe and a file", test_records_pipe_and_file);
  tl_run("read_records_ordered after an abandoned pass: seek_shared, set_view, drop_records", test_records_abandoned);
  tl_run("empty input: a short read and no records on every rank", test_empty_input);
  tl_run("read_shared answered while rank 0 waits elsewhere (its server thread)", test_read_shared_rank0_elsewhere);
  return tl_finish();
}
