/* io_bench — lmpio against the MPI library's own MPI-IO and plain POSIX.
 *
 *   mpirun [--mca io ompio|romio321] -n P io_bench DIR [FS_LABEL [IO_LABEL]]
 *
 * Runs, in one launch, every workload below through lmpio_file_* and through
 * MPI_File_* (whichever MPI-IO component --mca io selected), alternating the
 * backends repetition by repetition so that machine noise hits both, and
 * keeps the best of LMPIO_BENCH_REPS repetitions.  Each measurement is
 * printed by rank 0 as one line:
 *
 *   RESULT workload=contig access=indep op=write ranks=2 fs=shm io=ompio
 *          backend=lmpio mbps=1234.5 sec=0.0543 bytes=67108864 reps=3 ok=1
 *
 * (on one line).  mbps is decimal MB/s of the data of all ranks over the
 * longest time any rank saw from leaving a barrier before the call to leaving
 * a barrier after it (so ranks that run one after another on shared cores
 * are not counted as running in parallel).  bytes is per
 * rank.  ok=0 when a call failed or the data was wrong.
 *
 * Workloads (each rank moves `bytes` of its own data):
 *   memcpy     op=copy: memcpy of the contiguous block (memory ceiling)
 *   contig     each rank its contiguous block at rank*bytes; backend=posix is
 *              plain pwrite/pread of the same bytes (the storage ceiling)
 *   strided8, strided64, strided4k
 *              view: displacement rank*B, filetype B bytes resized to an
 *              extent of P*B (ranks interleaved in blocks of B bytes)
 *   subarray   2-D block distribution of an N*dims[0] x N*dims[1] double
 *              matrix (MPI_Type_create_subarray, etype MPI_DOUBLE)
 *              strided and subarray: backend=mapped (access=indep) is the
 *              pattern's memory ceiling: every rank memcpys its pieces
 *              to or from a shared mapping of the file at once
 * each with access=indep (write_at/read_at) and access=coll
 * (write_at_all/read_at_all).
 *
 * Before the repetitions the whole file is written once with pwrite (untimed),
 * so every timed write overwrites an existing file.
 *
 * Verification: the 8-byte word at file byte o holds mix(o ^ salt), with a
 * new salt for every write.  After each write every rank preads its share of
 * the whole file and checks every word; after each read the buffer is
 * compared with what was written.
 *
 * Environment (sizes per rank):
 *   LMPIO_BENCH_REPS        repetitions per measurement, best kept (3)
 *   LMPIO_BENCH_CONTIG_MB   contig and memcpy MiB (64)
 *   LMPIO_BENCH_STRIDED_MB  strided64 and strided4k MiB (32)
 *   LMPIO_BENCH_STRIDED8_MB strided8 MiB (4)
 *   LMPIO_BENCH_SUB_N       side of each rank's square block of doubles (1448)
 *   LMPIO_BENCH_CAP_S       a backend stops repeating after 2 write+read pairs
 *                           that took longer than this many seconds, or 1 that
 *                           took 4 times as long (3)
 *   LMPIO_BENCH_WORKLOADS   comma list of workloads to run (all)
 *   LMPIO_BENCH_BACKENDS    comma list of backends among lmpio,mpiio,mapped (all)
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_hints.h"
#include "lmpio.h"

enum { B_LMPIO, B_MPIIO, B_POSIX, B_MAPPED, NBACKENDS };
static const char *const backend_name[NBACKENDS] = {"lmpio", "mpiio", "posix", "mapped"};

enum { W_CONTIG, W_STRIDED, W_SUB };

typedef struct {
  const char *name;
  int kind;
  MPI_Offset bytes;     /* per rank, a multiple of 8 */
  int block;            /* strided: bytes per block */
  int n, dims[2], coords[2];
  MPI_Offset disp;      /* view */
  MPI_Datatype etype, ftype; /* ftype MPI_DATATYPE_NULL: default view */
  MPI_Offset off;       /* access offset (etypes) */
  MPI_Datatype mtype;
  int mcount;
} workload;

typedef struct {
  lmpio_file l;
  MPI_File m;
  int fd;
  char *map; /* mapped: the whole file */
  size_t len;
} bfile;

static int rank, nprocs;
static const char *fs_label = "fs", *io_label = "io";
static int reps = 3;
static double cap_s = 3.0;
static char path[4096];

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

static long envl(const char *name, long def) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  long v = strtol(s, &end, 10);
  return *end || v <= 0 ? def : v;
}

static double envd(const char *name, double def) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  char *end;
  double v = strtod(s, &end);
  return *end || v <= 0 ? def : v;
}

static int listed(const char *envname, const char *word) {
  const char *s = getenv(envname);
  if (!s || !*s || !strcmp(s, "all")) return 1;
  size_t n = strlen(word);
  for (const char *p = s; (p = strstr(p, word)) != NULL; p += n)
    if ((p == s || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
  return 0;
}

static void die(const char *what) {
  fprintf(stderr, "io_bench rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, n ? n : 1)) die("out of memory");
  memset(p, 0, n); /* fault the pages in before any timing */
  return p;
}

/* File byte offset of the memory word i (8 bytes) of this rank. */
static MPI_Offset file_off(const workload *w, MPI_Offset i) {
  MPI_Offset m = 8 * i;
  switch (w->kind) {
  case W_CONTIG: return (MPI_Offset)rank * w->bytes + m;
  case W_STRIDED: {
    MPI_Offset b = w->block;
    return (m / b) * nprocs * b + (MPI_Offset)rank * b + m % b;
  }
  default: {
    MPI_Offset n = w->n, a = i / n, c = i % n;
    MPI_Offset gcols = (MPI_Offset)w->dims[1] * n;
    return ((w->coords[0] * n + a) * gcols + w->coords[1] * n + c) * 8;
  }
  }
}

static void fill(const workload *w, uint64_t *buf, uint64_t salt) {
  MPI_Offset words = w->bytes / 8;
  if (w->kind == W_CONTIG) { /* the common case without the division */
    uint64_t base = (uint64_t)rank * (uint64_t)w->bytes;
    for (MPI_Offset i = 0; i < words; i++) buf[i] = mix((base + 8 * (uint64_t)i) ^ salt);
    return;
  }
  for (MPI_Offset i = 0; i < words; i++) buf[i] = mix((uint64_t)file_off(w, i) ^ salt);
}

/* Every rank checks its share of the whole file: word at o == mix(o^salt). */
static int verify_file(const workload *w, uint64_t salt) {
  int ok = 1;
  int fd = open(path, O_RDONLY);
  if (fd < 0) ok = 0;
  MPI_Offset words = w->bytes / 8 * nprocs;
  MPI_Offset lo = words * rank / nprocs, hi = words * (rank + 1) / nprocs;
  enum { CHUNK = 1 << 19 };
  static uint64_t buf[CHUNK];
  for (MPI_Offset at = lo; ok && at < hi;) {
    size_t n = (size_t)(hi - at < CHUNK ? hi - at : CHUNK);
    size_t got = 0;
    while (got < n * 8) {
      ssize_t r = pread(fd, (char *)buf + got, n * 8 - got, (off_t)(at * 8 + (MPI_Offset)got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != n * 8) {
      fprintf(stderr, "io_bench rank %d: %s: file too short at byte %lld\n", rank, w->name,
              (long long)(at * 8 + (MPI_Offset)got));
      ok = 0;
      break;
    }
    for (size_t k = 0; k < n; k++) {
      uint64_t o = 8 * (uint64_t)(at + (MPI_Offset)k);
      if (buf[k] != mix(o ^ salt)) {
        fprintf(stderr, "io_bench rank %d: %s: wrong data in the file at byte %llu\n", rank,
                w->name, (unsigned long long)o);
        ok = 0;
        break;
      }
    }
    at += (MPI_Offset)n;
  }
  if (fd >= 0) close(fd);
  return ok;
}

static int report_rc(int b, int rc, const char *what) {
  if (rc == MPI_SUCCESS) return 1;
  char msg[MPI_MAX_ERROR_STRING + 1] = "";
  int len = 0;
  if (b == B_LMPIO) snprintf(msg, sizeof msg, "%s", lmpio_last_error_message());
  else MPI_Error_string(rc, msg, &len);
  fprintf(stderr, "io_bench rank %d: %s %s failed: %s\n", rank, backend_name[b], what, msg);
  return 0;
}

static int posix_all(int wr, int fd, void *buf, size_t len, off_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = wr ? pwrite(fd, (char *)buf + done, len - done, off + (off_t)done)
                   : pread(fd, (char *)buf + done, len - done, off + (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    done += (size_t)n;
  }
  return 1;
}

/* LMPIO_BENCH_INFO="key=value,key=value": hints for every open (lmpio and
 * MPI-IO alike), e.g. romio_cb_write=enable to time two-phase on one node. */
static MPI_Info bench_info = MPI_INFO_NULL;

static void parse_info(void) {
  int bad;
  bench_info = bench_hints("LMPIO_BENCH_INFO", &bad);
  if (bad) die("LMPIO_BENCH_INFO: key=value expected");
}

static int b_open(int b, const workload *w, bfile *f) {
  int rc = MPI_SUCCESS;
  int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
  if (b == B_LMPIO) {
    rc = lmpio_file_open(MPI_COMM_WORLD, path, amode, bench_info, &f->l);
    if (rc == MPI_SUCCESS && w->ftype != MPI_DATATYPE_NULL)
      rc = lmpio_file_set_view(f->l, w->disp, w->etype, w->ftype, "native", MPI_INFO_NULL);
  } else if (b == B_MPIIO) {
    rc = MPI_File_open(MPI_COMM_WORLD, path, amode, bench_info, &f->m);
    if (rc == MPI_SUCCESS && w->ftype != MPI_DATATYPE_NULL)
      rc = MPI_File_set_view(f->m, w->disp, w->etype, w->ftype, "native", MPI_INFO_NULL);
  } else { /* posix and mapped (mapped maps the file once it is written: map_file) */
    f->fd = open(path, O_RDWR | O_CREAT, 0666);
    if (f->fd < 0) {
      perror(path);
      return 0;
    }
  }
  return report_rc(b, rc, "open/set_view");
}

static void b_close(int b, bfile *f) {
  if (b == B_LMPIO) report_rc(b, lmpio_file_close(&f->l), "close");
  else if (b == B_MPIIO) report_rc(b, MPI_File_close(&f->m), "close");
  else close(f->fd);
  if (f->map) munmap(f->map, f->len);
}

/* mapped: a shared mapping of the whole (written) file. */
static int map_file(const workload *w, bfile *f) {
  f->len = (size_t)(w->bytes * nprocs);
  f->map = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
  if (f->map != MAP_FAILED) return 1;
  perror("io_bench: mmap");
  f->map = NULL;
  return 0;
}

/* mapped: the rank's pieces of the pattern copied between buf and the
 * mapping, block by block, with no library and no system call: what the
 * memory system allows for this pattern while the other ranks do the same
 * (a strided pattern's ceiling: ranks copying interleaved blocks of the same
 * pages do not reach their contiguous copy's speed). */
static void mapped_copy(const workload *w, bfile *f, int wr, char *buf) {
  MPI_Offset piece = w->kind == W_STRIDED ? w->block : (MPI_Offset)w->n * 8;
  MPI_Offset pieces = w->bytes / piece;
  for (MPI_Offset k = 0; k < pieces; k++) {
    char *file = f->map + file_off(w, k * piece / 8), *mem = buf + k * piece;
    char *to = wr ? file : mem;
    const char *from = wr ? mem : file;
    if (piece == 8) memcpy(to, from, 8); /* (constant sizes: inlined moves) */
    else if (piece == 64) memcpy(to, from, 64);
    else memcpy(to, from, (size_t)piece);
  }
}

static int b_io(int b, bfile *f, const workload *w, int coll, int wr, void *buf) {
  MPI_Status st;
  int rc;
  if (b == B_POSIX)
    return posix_all(wr, f->fd, buf, (size_t)w->bytes, (off_t)((MPI_Offset)rank * w->bytes));
  if (b == B_MAPPED) {
    mapped_copy(w, f, wr, buf);
    return 1;
  }
  if (b == B_LMPIO) {
    if (wr) rc = coll ? lmpio_file_write_at_all(f->l, w->off, buf, w->mcount, w->mtype, &st)
                      : lmpio_file_write_at(f->l, w->off, buf, w->mcount, w->mtype, &st);
    else rc = coll ? lmpio_file_read_at_all(f->l, w->off, buf, w->mcount, w->mtype, &st)
                   : lmpio_file_read_at(f->l, w->off, buf, w->mcount, w->mtype, &st);
  } else {
    if (wr) rc = coll ? MPI_File_write_at_all(f->m, w->off, buf, w->mcount, w->mtype, &st)
                      : MPI_File_write_at(f->m, w->off, buf, w->mcount, w->mtype, &st);
    else rc = coll ? MPI_File_read_at_all(f->m, w->off, buf, w->mcount, w->mtype, &st)
                   : MPI_File_read_at(f->m, w->off, buf, w->mcount, w->mtype, &st);
  }
  if (!report_rc(b, rc, wr ? (coll ? "write_at_all" : "write_at") : (coll ? "read_at_all" : "read_at")))
    return 0;
  MPI_Count n = 0;
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  if (n != w->bytes) {
    fprintf(stderr, "io_bench rank %d: %s %s: status says %lld bytes, expected %lld\n", rank,
            backend_name[b], wr ? "write" : "read", (long long)n, (long long)w->bytes);
    return 0;
  }
  return 1;
}

static int all_ok(int ok) {
  int r;
  MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return r;
}

static double max_time(double t) {
  double r;
  MPI_Allreduce(&t, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return r;
}

typedef struct {
  double best;
  int ok, reps;
} stat_t;

static void print_result(const workload *w, const char *access, const char *op, const char *backend,
                         const stat_t *s) {
  if (rank != 0) return;
  double total = (double)w->bytes * nprocs;
  printf("RESULT workload=%s access=%s op=%s ranks=%d fs=%s io=%s backend=%s mbps=%.1f sec=%.4f "
         "bytes=%lld reps=%d ok=%d\n",
         w->name, access, op, nprocs, fs_label, io_label, backend,
         s->best > 0 ? total / s->best / 1e6 : 0.0, s->best, (long long)w->bytes, s->reps, s->ok);
  fflush(stdout);
}

static void run_memcpy(const workload *w, uint64_t *wbuf, uint64_t *rbuf) {
  stat_t s = {1e30, 1, 0};
  fill(w, wbuf, 1);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    memcpy(rbuf, wbuf, (size_t)w->bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    t = max_time(MPI_Wtime() - t);
    if (t < s.best) s.best = t;
    s.reps++;
  }
  s.ok = all_ok(memcmp(rbuf, wbuf, (size_t)w->bytes) == 0);
  print_result(w, "none", "copy", "memcpy", &s);
}

/* One workload, one access mode: repetitions alternate over the backends;
 * each does a timed write, a check of the file, a timed read, a check of the
 * buffer. */
static void run_workload(const workload *w, int coll, uint64_t *wbuf, uint64_t *rbuf, int wid) {
  int use[NBACKENDS] = {listed("LMPIO_BENCH_BACKENDS", "lmpio"), listed("LMPIO_BENCH_BACKENDS", "mpiio"),
                        w->kind == W_CONTIG && !coll, w->kind != W_CONTIG && !coll && listed("LMPIO_BENCH_BACKENDS", "mapped")};
  stat_t st[NBACKENDS][2];
  bfile f[NBACKENDS];
  int live[NBACKENDS];
  memset(f, 0, sizeof f);
  for (int b = 0; b < NBACKENDS; b++) {
    st[b][0] = st[b][1] = (stat_t){1e30, 1, 0};
    live[b] = use[b];
  }
  for (int b = 0; b < NBACKENDS; b++)
    if (use[b] && !all_ok(b_open(b, w, &f[b]))) {
      st[b][0].ok = st[b][1].ok = 0;
      live[b] = 0;
    }

  /* Untimed: write the whole file once, so that no backend pays for
   * extending it (whichever went first would). */
  if (use[B_LMPIO] || use[B_MPIIO] || use[B_MAPPED]) {
    int ok = 1, fd = open(path, O_RDWR | O_CREAT, 0666);
    MPI_Offset total = w->bytes * nprocs, lo = total * rank / nprocs, hi = total * (rank + 1) / nprocs;
    for (MPI_Offset at = lo; ok && fd >= 0 && at < hi;) {
      size_t n = (size_t)(hi - at < w->bytes ? hi - at : w->bytes);
      ok = posix_all(1, fd, wbuf, n, (off_t)at);
      at += (MPI_Offset)n;
    }
    if (fd >= 0) close(fd);
    if (!all_ok(ok && fd >= 0) && rank == 0) fprintf(stderr, "io_bench: cannot pre-write %s\n", path);
  }
  if (live[B_MAPPED] && !all_ok(map_file(w, &f[B_MAPPED]))) {
    st[B_MAPPED][0].ok = st[B_MAPPED][1].ok = 0;
    live[B_MAPPED] = 0;
  }

  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < NBACKENDS; k++) {
      int b = r % 2 ? NBACKENDS - 1 - k : k; /* alternate who goes first */
      if (!live[b]) continue;
      uint64_t salt = mix(((uint64_t)wid << 32) ^ ((uint64_t)coll << 24) ^ ((uint64_t)r << 8) ^ (uint64_t)b) | 1;
      fill(w, wbuf, salt);
      memset(rbuf, 0xa5, (size_t)w->bytes);
      double tpair = 0;
      for (int wr = 1; wr >= 0; wr--) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        int ok = b_io(b, &f[b], w, coll, wr, wr ? (void *)wbuf : (void *)rbuf);
        MPI_Barrier(MPI_COMM_WORLD); /* until the last rank is done */
        t = max_time(MPI_Wtime() - t);
        if (ok) ok = wr ? verify_file(w, salt) : memcmp(rbuf, wbuf, (size_t)w->bytes) == 0;
        ok = all_ok(ok);
        if (!ok && rank == 0)
          fprintf(stderr, "io_bench: %s %s %s %s: wrong data or error (rep %d)\n", w->name,
                  coll ? "coll" : "indep", wr ? "write" : "read", backend_name[b], r);
        stat_t *s = &st[b][wr];
        if (t < s->best) s->best = t;
        s->ok &= ok;
        s->reps++;
        tpair += t;
      }
      /* Slow backends stop early: after 2 repetitions over the cap, or 1
       * far over it (one slow repetition may just be machine noise). */
      if ((tpair > cap_s && st[b][1].reps >= 2) || tpair > 4 * cap_s) live[b] = 0;
    }
  }
  for (int b = 0; b < NBACKENDS; b++)
    if (use[b]) b_close(b, &f[b]);
  MPI_Barrier(MPI_COMM_WORLD);
  const char *access = coll ? "coll" : "indep";
  for (int b = 0; b < NBACKENDS; b++) {
    if (!use[b]) continue;
    print_result(w, access, "write", backend_name[b], &st[b][1]);
    print_result(w, access, "read", backend_name[b], &st[b][0]);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: io_bench DIR [FS_LABEL [IO_LABEL]]\n");
    MPI_Finalize();
    return 2;
  }
  if (argc > 2) fs_label = argv[2];
  if (argc > 3) io_label = argv[3];
  reps = (int)envl("LMPIO_BENCH_REPS", 3);
  cap_s = envd("LMPIO_BENCH_CAP_S", 3.0);
  MPI_Offset contig = (MPI_Offset)envl("LMPIO_BENCH_CONTIG_MB", 64) << 20;
  MPI_Offset strided = (MPI_Offset)envl("LMPIO_BENCH_STRIDED_MB", 32) << 20;
  MPI_Offset strided8 = (MPI_Offset)envl("LMPIO_BENCH_STRIDED8_MB", 4) << 20;
  int subn = (int)envl("LMPIO_BENCH_SUB_N", 1448);
  parse_info();

  /* One file name for the whole launch, chosen by rank 0. */
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/io_bench.%d.dat", argv[1], id);

  workload ws[6];
  int nw = 0;
  ws[nw++] = (workload){.name = "contig", .kind = W_CONTIG, .bytes = contig};
  ws[nw++] = (workload){.name = "strided8", .kind = W_STRIDED, .bytes = strided8, .block = 8};
  ws[nw++] = (workload){.name = "strided64", .kind = W_STRIDED, .bytes = strided, .block = 64};
  ws[nw++] = (workload){.name = "strided4k", .kind = W_STRIDED, .bytes = strided, .block = 4096};
  ws[nw++] = (workload){.name = "subarray", .kind = W_SUB, .n = subn,
                        .bytes = (MPI_Offset)subn * subn * 8};
  MPI_Offset maxbytes = 0;
  for (int i = 0; i < nw; i++) {
    workload *w = &ws[i];
    w->etype = MPI_BYTE;
    w->ftype = MPI_DATATYPE_NULL;
    w->mtype = MPI_BYTE;
    if (w->kind == W_STRIDED) w->bytes -= w->bytes % w->block;
    if (w->kind != W_SUB && w->bytes > 0x7fffffff) die("per-rank size must stay below 2 GiB");
    w->mcount = (int)w->bytes;
    if (w->kind == W_CONTIG) {
      w->off = (MPI_Offset)rank * w->bytes;
    } else if (w->kind == W_STRIDED) {
      MPI_Datatype c;
      MPI_Type_contiguous(w->block, MPI_BYTE, &c);
      MPI_Type_create_resized(c, 0, (MPI_Aint)w->block * nprocs, &w->ftype);
      MPI_Type_commit(&w->ftype);
      MPI_Type_free(&c);
      w->disp = (MPI_Offset)rank * w->block;
    } else {
      int periods[2] = {0, 0};
      MPI_Comm cart;
      MPI_Dims_create(nprocs, 2, w->dims);
      if (w->dims[0] > w->dims[1]) { /* 2 ranks: 1 x 2, so rows are split */
        int t = w->dims[0];
        w->dims[0] = w->dims[1];
        w->dims[1] = t;
      }
      MPI_Cart_create(MPI_COMM_WORLD, 2, w->dims, periods, 0, &cart);
      MPI_Cart_coords(cart, rank, 2, w->coords);
      MPI_Comm_free(&cart);
      int sizes[2] = {w->dims[0] * w->n, w->dims[1] * w->n}, sub[2] = {w->n, w->n};
      int starts[2] = {w->coords[0] * w->n, w->coords[1] * w->n};
      MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &w->ftype);
      MPI_Type_commit(&w->ftype);
      w->etype = MPI_DOUBLE;
      w->mtype = MPI_DOUBLE;
      w->mcount = w->n * w->n;
    }
    if (w->bytes > maxbytes) maxbytes = w->bytes;
  }
  uint64_t *wbuf = xmalloc((size_t)maxbytes), *rbuf = xmalloc((size_t)maxbytes);

  if (listed("LMPIO_BENCH_WORKLOADS", "memcpy")) run_memcpy(&ws[0], wbuf, rbuf);
  for (int i = 0; i < nw; i++) {
    if (!listed("LMPIO_BENCH_WORKLOADS", ws[i].name)) continue;
    if (rank == 0) unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int coll = 0; coll < 2; coll++) run_workload(&ws[i], coll, wbuf, rbuf, i);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) unlink(path);
  }
  for (int i = 0; i < nw; i++)
    if (ws[i].ftype != MPI_DATATYPE_NULL) MPI_Type_free(&ws[i].ftype);
  free(wbuf);
  free(rbuf);
  if (bench_info != MPI_INFO_NULL) MPI_Info_free(&bench_info);
  MPI_Finalize();
  return 0;
}
