/* The common MPI-IO patterns at one rank count, for the scale benchmark
 * (bench/scale.sh, make bench-scale).  A plain MPI program: the same binary
 * runs on the MPI library's own MPI-IO (--mca io ompio / romio321) and on
 * lmpio (LD_PRELOAD=liblmpio-mpi.so).
 *
 * Patterns, all ranks of MPI_COMM_WORLD on one file each:
 *   open      MPI_File_open + MPI_File_close (one "call" = the pair)
 *   small     write_at_all / read_at_all of one int per rank, interleaved
 *   twophase  write_all / read_all of a subarray view (2-D grid of ranks)
 *   shared    write_shared of records, then read_shared of as many
 *   ordered   write_ordered of records of rank-dependent size, then read_ordered
 *   nbcoll    iwrite_at_all + wait / iread_at_all + wait, 4 KiB interleaved
 * Every pattern checks what it read (and shared/ordered what the file holds).
 *
 * Each pattern runs one untimed step (LMPIO_SCALE_WARMUP), then times one,
 * then runs as many as fit in its time budget (at least 2): on 2 cores a
 * call at 64 ranks may take 100 times longer than at 1.  Around the timed steps every rank reads
 * what it handed to MPI (point-to-point messages, collective calls, bytes:
 * the counting layer of bench/scale_count.h, which sees lmpio's and ROMIO's
 * calls but not OMPIO's, made inside Open MPI) and its peak resident set
 * (getrusage).  The bench's own barriers and reductions fall outside.
 *
 * Usage: scale_bench DIRECTORY [LABEL]
 * Environment:
 *   LMPIO_BENCH_HINTS     "key=value,..." hints for every open
 *   LMPIO_BENCH_FILE_MB   pre-grow every file to this size first (0)
 *   LMPIO_SCALE_BUDGET    seconds of timed calls per pattern (0.3)
 *   LMPIO_SCALE_MAXCALLS  at most this many calls per pattern (100000); a
 *                         pattern whose file grows each step (nbcoll) also
 *                         stops at 1 GiB of file
 *   LMPIO_SCALE_WARMUP    untimed steps before the timed ones (1)
 *   LMPIO_SCALE_PATTERNS  comma list of patterns (all)
 *   LMPIO_SCALE_SUB_N     side of each rank's block of doubles (128)
 *   LMPIO_SCALE_TAP       1: also a line "ok scale PATTERN ..." or "not ok ...",
 *                         and "# RESULT ..." instead of "RESULT ..."
 * Prints one line per pattern (rank 0):
 *   RESULT pattern=small ranks=P backend=LABEL calls=N us_per_call=X
 *     msgs_per_call=M colls_per_call=C bytes_per_call=B msgs_max=..
 *     colls_max=.. bytes_max=.. rss_max_kb=.. rss_sum_kb=.. ok=1
 * (shared and ordered add a line pattern=shared_read, ordered_read.)
 * msgs/colls/bytes_per_call: per rank per call, averaged over the ranks;
 * _max: the rank with most, per call; rss: peak so far, the largest rank's
 * and the sum over ranks; us_per_call: the slowest rank's time. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_hints.h"

static int rank, size;
static const char *dir, *label;
static double budget;
/* Calls are counted up to 100000 so that the budget, not the count, ends
 * a cheap pattern: 2000 calls of 1 us span less than a scheduler's time
 * slice, and at more ranks than processors such a span measured which
 * rank the scheduler ran when (shared at 8 ranks: 1.0 to 3.7 us a call from
 * launch to launch; 4.3 to 4.8 over 50000 calls). */
static long maxcalls, warmup;
#define MAX_FILE (1LL << 30) /* a growing pattern's file at most this large */
static long long file_bytes;
static int bad; /* this rank's wrong data or failed calls */
static int tap; /* LMPIO_SCALE_TAP=1: also "ok"/"not ok" lines */

#define CHECK(call)                                                                 \
  do {                                                                              \
    if ((call) != MPI_SUCCESS) {                                                    \
      fprintf(stderr, "scale_bench rank %d: %s failed (line %d)\n", rank, #call, __LINE__); \
      bad++;                                                                        \
    }                                                                               \
  } while (0)

/* ---- counters: bench/scale_count.h ---- */

#include "scale_count.h"

enum { C_MSGS, C_COLLS, C_BYTES, NC };
static void counters_read(double c[NC]) {
  c[C_MSGS] = (double)scale_count.msgs;
  c[C_COLLS] = (double)scale_count.colls;
  c[C_BYTES] = (double)(scale_count.msg_bytes + scale_count.coll_bytes);
}

/* ---- files ---- */

static void file_path(char *out, size_t n, const char *pattern) {
  static int pid = -1;
  if (pid < 0) {
    pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  snprintf(out, n, "%s/scale-%d-%s.dat", dir, pid, pattern);
}

/* A new file of file_bytes (sparse), made by rank 0 without MPI-IO, so the
 * patterns run on a file of that size whatever the library. */
static void file_make(const char *p) {
  if (rank == 0) {
    unlink(p);
    if (file_bytes > 0) {
      FILE *f = fopen(p, "w");
      if (!f || fclose(f) != 0 || truncate(p, (off_t)file_bytes) != 0) {
        fprintf(stderr, "scale_bench: cannot make %s of %lld bytes\n", p, file_bytes);
        bad++;
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static MPI_File file_open(const char *p) {
  MPI_Info info = bench_hints("LMPIO_BENCH_HINTS", NULL);
  MPI_File f = MPI_FILE_NULL;
  CHECK(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &f));
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  return f;
}

static void file_done(MPI_File *f, const char *p) {
  if (*f != MPI_FILE_NULL) CHECK(MPI_File_close(f));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) unlink(p);
}

/* ---- the measurement ---- */

/* A pattern: setup once, then iter(i) runs its i-th step (calls_per_iter
 * calls); reads(n), when there is one, reads back what n steps wrote, one
 * call a step, and is timed as a pattern of its own (name_read); check(n)
 * verifies what n steps left in the file; teardown. */
typedef struct {
  const char *name;
  int calls_per_iter;
  int grows; /* bytes each step adds to the file per rank (0: rewrites in place) */
  void (*setup)(void);
  void (*iter)(long i);
  void (*reads)(long n);
  void (*check)(long n);
  void (*teardown)(void);
} pattern;

static double max_over_ranks(double x) {
  double m;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

/* One RESULT line: CALLS calls took T s on the slowest rank; C1 - C0 what
 * this rank handed to MPI meanwhile. */
static void report(const char *name, const char *suffix, double calls, double t, const double c0[NC],
                   const double c1[NC]) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double mine[NC + 1], sum[NC + 1], mx[NC + 1];
  for (int k = 0; k < NC; k++) mine[k] = c1[k] - c0[k];
  mine[NC] = (double)ru.ru_maxrss;
  MPI_Reduce(mine, sum, NC + 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(mine, mx, NC + 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  /* (under the cluster's runner, a note: it prints "# " lines) */
  printf("%sRESULT pattern=%s%s ranks=%d backend=%s calls=%.0f us_per_call=%.2f msgs_per_call=%.2f "
         "colls_per_call=%.2f bytes_per_call=%.0f msgs_max=%.2f colls_max=%.2f bytes_max=%.0f "
         "rss_max_kb=%.0f rss_sum_kb=%.0f ok=%d\n",
         tap ? "# " : "", name, suffix, size, label, calls, t * 1e6 / calls, sum[C_MSGS] / calls / size, sum[C_COLLS] / calls / size,
         sum[C_BYTES] / calls / size, mx[C_MSGS] / calls, mx[C_COLLS] / calls, mx[C_BYTES] / calls, mx[NC], sum[NC],
         allbad == 0);
  /* for the cluster's runner (core/test/cluster/cluster.sh counts these) */
  if (tap) printf("%sok scale %s%s %d ranks %s\n", allbad ? "not " : "", name, suffix, size, label);
  fflush(stdout);
}

/* Steps 0..warmup-1 untimed, the next timed alone (it sets how many fit the
 * budget), then n measured steps with the counters read around them. */
static void measure(const pattern *p) {
  bad = 0;
  p->setup();
  long w = 0;
  for (; w < warmup; w++) p->iter(w);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  p->iter(w++);
  double one = max_over_ranks(MPI_Wtime() - t0);
  long n = one > 0 ? (long)(budget / one) : maxcalls;
  if (n > maxcalls / p->calls_per_iter) n = maxcalls / p->calls_per_iter;
  if (p->grows && n > MAX_FILE / ((long long)p->grows * size)) n = (long)(MAX_FILE / ((long long)p->grows * size));
  if (n < 2) n = 2;
  double c0[NC], c1[NC];
  MPI_Barrier(MPI_COMM_WORLD);
  counters_read(c0);
  t0 = MPI_Wtime();
  for (long i = w; i < w + n; i++) p->iter(i);
  double t = MPI_Wtime() - t0;
  counters_read(c1);
  t = max_over_ranks(t);
  report(p->name, "", (double)n * p->calls_per_iter, t, c0, c1);
  if (p->reads) {
    MPI_Barrier(MPI_COMM_WORLD);
    counters_read(c0);
    t0 = MPI_Wtime();
    p->reads(w + n);
    t = MPI_Wtime() - t0;
    counters_read(c1);
    t = max_over_ranks(t);
    report(p->name, "_read", (double)(w + n), t, c0, c1);
  }
  p->check(w + n);
  p->teardown();
  /* a failure found by the checks fails the last line of the pattern */
  int allbad = 0;
  MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0 && allbad) {
    printf("RESULT pattern=%s ranks=%d backend=%s check=failed ok=0\n", p->name, size, label);
    if (tap) printf("not ok scale %s %d ranks %s: the file's check failed\n", p->name, size, label);
  }
}

/* The value of rank r's int/double/byte at step i: distinct per rank and step. */
static uint32_t word(long i, int r, long k) {
  uint64_t x = ((uint64_t)i * 1000003u + (uint64_t)r) * 2654435761u + (uint64_t)k * 40503u;
  x ^= x >> 29;
  return (uint32_t)(x * 0x9e3779b97f4a7c15ull >> 32);
}

/* ---- open ---- */

static char path[512];
static MPI_File fh;

static void open_setup(void) {
  file_path(path, sizeof path, "open");
  file_make(path);
}
static void open_iter(long i) {
  (void)i;
  MPI_File f = file_open(path);
  if (f != MPI_FILE_NULL) CHECK(MPI_File_close(&f));
}
static void open_check(long n) {
  (void)n;
  MPI_Offset sz = -1;
  MPI_File f = file_open(path);
  if (f != MPI_FILE_NULL) {
    CHECK(MPI_File_get_size(f, &sz));
    CHECK(MPI_File_close(&f));
  }
  if (sz != (MPI_Offset)file_bytes) {
    fprintf(stderr, "scale_bench rank %d: open: size %lld, not %lld\n", rank, (long long)sz, file_bytes);
    bad++;
  }
}
static void open_teardown(void) {
  MPI_File none = MPI_FILE_NULL;
  file_done(&none, path);
}

/* ---- small: one int per rank per call, interleaved ---- */

static MPI_Datatype ftype;

static void small_setup(void) {
  file_path(path, sizeof path, "small");
  file_make(path);
  fh = file_open(path);
  MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)sizeof(int) * size, &ftype);
  MPI_Type_commit(&ftype);
  CHECK(MPI_File_set_view(fh, (MPI_Offset)sizeof(int) * rank, MPI_INT, ftype, "native", MPI_INFO_NULL));
}
static void small_iter(long i) {
  int v = (int)word(i, rank, 0), w = ~v;
  CHECK(MPI_File_write_at_all(fh, i, &v, 1, MPI_INT, MPI_STATUS_IGNORE));
  CHECK(MPI_File_read_at_all(fh, i, &w, 1, MPI_INT, MPI_STATUS_IGNORE));
  if (w != v) bad++;
}
/* what every rank wrote, read back through a plain view by rank 0 */
static void small_check(long n) {
  CHECK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_File_sync(fh));
  CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  if (rank != 0) return;
  int *all = malloc(sizeof(int) * (size_t)n * (size_t)size);
  if (!all) {
    bad++;
    return;
  }
  CHECK(MPI_File_read_at(fh, 0, all, (int)(n * size), MPI_INT, MPI_STATUS_IGNORE));
  for (long i = 0; i < n; i++)
    for (int r = 0; r < size; r++)
      if (all[i * size + r] != (int)word(i, r, 0)) {
        if (!bad) fprintf(stderr, "scale_bench: small: step %ld rank %d wrong in the file\n", i, r);
        bad++;
      }
  free(all);
}
static void small_teardown(void) {
  file_done(&fh, path);
  MPI_Type_free(&ftype);
}

/* ---- twophase: a subarray of a 2-D matrix of doubles ---- */

static int sub_n, grid[2], coords[2];
static double *block, *back;

static double dval(long i, int r, long k) { return (double)word(i, r, k) + 0.25; }

static void twophase_setup(void) {
  file_path(path, sizeof path, "twophase");
  file_make(path);
  fh = file_open(path);
  grid[0] = grid[1] = 0;
  MPI_Dims_create(size, 2, grid);
  coords[0] = rank / grid[1];
  coords[1] = rank % grid[1];
  int sizes[2] = {grid[0] * sub_n, grid[1] * sub_n}, subs[2] = {sub_n, sub_n};
  int starts[2] = {coords[0] * sub_n, coords[1] * sub_n};
  MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_DOUBLE, &ftype);
  MPI_Type_commit(&ftype);
  CHECK(MPI_File_set_view(fh, 0, MPI_DOUBLE, ftype, "native", MPI_INFO_NULL));
  block = malloc(sizeof(double) * (size_t)sub_n * (size_t)sub_n);
  back = malloc(sizeof(double) * (size_t)sub_n * (size_t)sub_n);
  if (!block || !back) MPI_Abort(MPI_COMM_WORLD, 1);
}
static void twophase_iter(long i) {
  long nn = (long)sub_n * sub_n;
  for (long k = 0; k < nn; k++) block[k] = dval(i, rank, k);
  CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  CHECK(MPI_File_write_all(fh, block, (int)nn, MPI_DOUBLE, MPI_STATUS_IGNORE));
  CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET));
  memset(back, 0, sizeof(double) * (size_t)nn);
  CHECK(MPI_File_read_all(fh, back, (int)nn, MPI_DOUBLE, MPI_STATUS_IGNORE));
  if (memcmp(back, block, sizeof(double) * (size_t)nn) != 0) bad++;
}
/* the last step's matrix, read through a plain view: each rank checks the
 * rows of its own block where the subarray put them */
static void twophase_check(long n) {
  CHECK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_File_sync(fh));
  CHECK(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  long cols = (long)grid[1] * sub_n;
  for (int row = 0; row < sub_n; row++) {
    MPI_Offset at = ((MPI_Offset)coords[0] * sub_n + row) * cols + (MPI_Offset)coords[1] * sub_n;
    CHECK(MPI_File_read_at(fh, at, back, sub_n, MPI_DOUBLE, MPI_STATUS_IGNORE));
    for (int c = 0; c < sub_n; c++)
      if (back[c] != dval(n - 1, rank, (long)row * sub_n + c)) {
        bad++;
        break;
      }
  }
}
static void twophase_teardown(void) {
  file_done(&fh, path);
  MPI_Type_free(&ftype);
  free(block);
  free(back);
}

/* ---- records for shared and ordered: header (rank, step, length) + body ---- */

enum { REC_MAX = 64 };
typedef struct {
  int32_t rank, step, len;
  uint32_t body[(REC_MAX - 12) / 4];
} record;

/* the record of rank r at step i, len bytes (a multiple of 4, >= 16) */
static void rec_fill(record *rec, int r, long i, int len) {
  memset(rec, 0, sizeof *rec);
  rec->rank = r;
  rec->step = (int32_t)i;
  rec->len = len;
  for (int k = 0; k < (len - 12) / 4; k++) rec->body[k] = word(i, r, k);
}
static int rec_ok(const record *rec) {
  if (rec->rank < 0 || rec->rank >= size || rec->len < 16 || rec->len > REC_MAX) return 0;
  record want;
  rec_fill(&want, rec->rank, rec->step, rec->len);
  return memcmp(rec, &want, (size_t)rec->len) == 0;
}
static int ordered_len(int r) { return 16 + 16 * (r % 4); }

/* ---- shared: write_shared of 64-byte records, then read_shared ---- */

static long shared_reads; /* records read so far by this rank */
static unsigned long long shared_seen; /* sum of (step * size + rank + 1) over them */

static void shared_setup(void) {
  file_path(path, sizeof path, "shared");
  file_make(path);
  fh = file_open(path);
  shared_reads = 0;
  shared_seen = 0;
}
static void shared_iter(long i) {
  record rec;
  rec_fill(&rec, rank, i, REC_MAX);
  CHECK(MPI_File_write_shared(fh, &rec, REC_MAX, MPI_BYTE, MPI_STATUS_IGNORE));
}
/* back from the start: n records a rank, each one whole and valid */
static void shared_reads_(long n) {
  CHECK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_File_sync(fh));
  CHECK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  for (long i = 0; i < n; i++) {
    record rec;
    MPI_Status st;
    int got = 0;
    memset(&rec, 0, sizeof rec);
    CHECK(MPI_File_read_shared(fh, &rec, REC_MAX, MPI_BYTE, &st));
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got != REC_MAX || !rec_ok(&rec)) {
      bad++;
      continue;
    }
    shared_reads++;
    shared_seen += (unsigned long long)rec.step * (unsigned long long)size + (unsigned long long)rec.rank + 1;
  }
}
/* every record read once: their count and the sum of their ids */
static void shared_check(long n) {
  long reads = 0;
  unsigned long long seen = 0, total = (unsigned long long)n * (unsigned long long)size;
  MPI_Allreduce(&shared_reads, &reads, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&shared_seen, &seen, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && ((unsigned long long)reads != total || seen != total * (total + 1) / 2)) {
    fprintf(stderr, "scale_bench: shared: %ld records read of %llu, or some twice\n", reads, total);
    bad++;
  }
}
static void shared_teardown(void) { file_done(&fh, path); }

/* ---- ordered: write_ordered, then read_ordered of the same sizes ---- */

static void ordered_setup(void) {
  file_path(path, sizeof path, "ordered");
  file_make(path);
  fh = file_open(path);
}
static void ordered_iter(long i) {
  record rec;
  rec_fill(&rec, rank, i, ordered_len(rank));
  CHECK(MPI_File_write_ordered(fh, &rec, ordered_len(rank), MPI_BYTE, MPI_STATUS_IGNORE));
}
/* back from the start in rank order: each rank its own records */
static void ordered_reads(long n) {
  CHECK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_File_sync(fh));
  CHECK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  for (long i = 0; i < n; i++) {
    record rec, want;
    memset(&rec, 0, sizeof rec);
    CHECK(MPI_File_read_ordered(fh, &rec, ordered_len(rank), MPI_BYTE, MPI_STATUS_IGNORE));
    rec_fill(&want, rank, i, ordered_len(rank));
    if (memcmp(&rec, &want, (size_t)ordered_len(rank)) != 0) bad++;
  }
}
/* the file's size: every record of every step, nothing more */
static void ordered_check(long n) {
  MPI_Offset sz = -1, want = 0;
  for (int r = 0; r < size; r++) want += ordered_len(r);
  want *= n;
  if (file_bytes > want) want = file_bytes;
  CHECK(MPI_File_get_size(fh, &sz));
  if (sz != want) {
    fprintf(stderr, "scale_bench rank %d: ordered: file of %lld bytes, not %lld\n", rank, (long long)sz,
            (long long)want);
    bad++;
  }
}
static void ordered_teardown(void) { file_done(&fh, path); }

/* ---- nbcoll: iwrite_at_all + wait, iread_at_all + wait, 4 KiB per rank ---- */

enum { NB_BYTES = 4096 };
static uint32_t nbw[NB_BYTES / 4], nbr[NB_BYTES / 4];

static void nb_setup(void) {
  file_path(path, sizeof path, "nbcoll");
  file_make(path);
  fh = file_open(path);
}
static void nb_iter(long i) {
  for (int k = 0; k < NB_BYTES / 4; k++) nbw[k] = word(i, rank, k);
  MPI_Offset at = ((MPI_Offset)i * size + rank) * NB_BYTES;
  MPI_Request req;
  CHECK(MPI_File_iwrite_at_all(fh, at, nbw, NB_BYTES, MPI_BYTE, &req));
  CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  memset(nbr, 0, sizeof nbr);
  CHECK(MPI_File_iread_at_all(fh, at, nbr, NB_BYTES, MPI_BYTE, &req));
  CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
  if (memcmp(nbr, nbw, sizeof nbw) != 0) bad++;
}
/* the neighbour's last block, as the file holds it */
static void nb_check(long n) {
  CHECK(MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_File_sync(fh));
  int peer = (rank + 1) % size;
  CHECK(MPI_File_read_at(fh, ((MPI_Offset)(n - 1) * size + peer) * NB_BYTES, nbr, NB_BYTES, MPI_BYTE,
                         MPI_STATUS_IGNORE));
  for (int k = 0; k < NB_BYTES / 4; k++)
    if (nbr[k] != word(n - 1, peer, k)) {
      bad++;
      break;
    }
}
static void nb_teardown(void) { file_done(&fh, path); }

static const pattern patterns[] = {
    {"open", 1, 0, open_setup, open_iter, NULL, open_check, open_teardown},
    {"small", 2, 4, small_setup, small_iter, NULL, small_check, small_teardown},
    {"twophase", 2, 0, twophase_setup, twophase_iter, NULL, twophase_check, twophase_teardown},
    {"shared", 1, REC_MAX, shared_setup, shared_iter, shared_reads_, shared_check, shared_teardown},
    {"ordered", 1, REC_MAX, ordered_setup, ordered_iter, ordered_reads, ordered_check, ordered_teardown},
    {"nbcoll", 2, NB_BYTES, nb_setup, nb_iter, NULL, nb_check, nb_teardown},
};

static int wanted(const char *name) {
  const char *list = getenv("LMPIO_SCALE_PATTERNS");
  if (!list || !*list) return 1;
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

static double env_double(const char *name, double dflt) {
  const char *s = getenv(name);
  return s && *s ? atof(s) : dflt;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: scale_bench DIRECTORY [LABEL]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  dir = argv[1];
  label = argc > 2 ? argv[2] : "mpiio";
  budget = env_double("LMPIO_SCALE_BUDGET", 0.3);
  maxcalls = (long)env_double("LMPIO_SCALE_MAXCALLS", 100000);
  warmup = (long)env_double("LMPIO_SCALE_WARMUP", 1);
  sub_n = (int)env_double("LMPIO_SCALE_SUB_N", 128);
  file_bytes = (long long)(env_double("LMPIO_BENCH_FILE_MB", 0) * 1048576.0);
  tap = env_double("LMPIO_SCALE_TAP", 0) != 0;
  if (maxcalls < 4 || sub_n < 1 || warmup < 0) MPI_Abort(MPI_COMM_WORLD, 2);
  int failed = 0;
  for (size_t k = 0; k < sizeof patterns / sizeof patterns[0]; k++) {
    if (!wanted(patterns[k].name)) continue;
    measure(&patterns[k]);
    int b = 0;
    MPI_Allreduce(&bad, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    failed += b != 0;
  }
  MPI_Finalize();
  return failed != 0;
}
