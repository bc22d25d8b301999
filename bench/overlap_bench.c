/* Overlap of file I/O with computation: how much of a nonblocking call's
 * transfer hides behind a computation, for lmpio and for the MPI library's
 * own MPI-IO (the component --mca io chose), in one run.
 *
 *   overlap = 1 - (T_total - T_compute) / T_io
 *
 * T_io: the blocking call (write_at, read_at, write_at_all, write_all,
 * write_at + sync, and write_at / read_at through a view of a user-defined
 * representation, which lmpio alone accepts); T_compute: a pure-CPU loop calibrated to about 1.5 T_io;
 * T_total: start + compute + wait (MPI_Wait, or _end for a split
 * collective), with no MPI_Test in the loop.  1 means the transfer was
 * completely hidden, 0 that it ran after (or before) the computation.
 * Every rank writes its own block of SIZE bytes at rank * SIZE; times are
 * the slowest rank's (barrier to barrier), best of REPS.  With more than one
 * rank the line also gives T_total / (T_io + T_compute): the cost of running
 * the transfer beside the computation when there is no free core.
 *
 * Usage: mpirun -n 1 overlap_bench [DIR [MIB [REPS]]]   (default /dev/shm 256 3)
 * The program asks for MPI_THREAD_MULTIPLE (lmpio needs it to run in the
 * background). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lmpio.h"

static int rank, nranks;
static MPI_Offset size;
static char *buf;

/* ---- the computation ----------------------------------------------------- */

static volatile double sink;

static void compute(long n) {
  double x = 1.0, y = 0.5;
  for (long i = 0; i < n; i++) {
    x = x * 1.0000001 + 1e-9;
    y = y * 0.9999999 + x * 1e-12;
  }
  sink = x + y;
}

/* Iterations per second of compute(). */
static double compute_rate(void) {
  long n = 1000000;
  for (;;) {
    double t = MPI_Wtime();
    compute(n);
    t = MPI_Wtime() - t;
    if (t > 0.1) return (double)n / t;
    n *= 2;
  }
}

/* ---- the two backends, one call shape ------------------------------------- */

enum { B_LMPIO, B_MPI, NB };
static const char *bname[NB] = {"lmpio", "mpi-io"};
enum { OP_IWRITE_AT, OP_IREAD_AT, OP_IWRITE_AT_ALL, OP_SPLIT_WRITE_ALL, OP_IWRITE_AT_SYNC, OP_IWRITE_AT_USER,
       OP_IREAD_AT_USER, NOP };
static const char *opname[NOP] = {"iwrite_at", "iread_at", "iwrite_at_all", "write_all_begin/end",
                                  "iwrite_at+sync", "iwrite_at (user rep)", "iread_at (user rep)"};

/* A user-defined representation for the last two: doubles stored
 * big-endian, converted by C functions on the caller's thread (a write's
 * when it starts, a read's when it completes): the conversion is the
 * caller's work, only the transfer can hide. */
static void swap8(char *to, const char *from, int n) {
  for (int i = 0; i < n; i++) {
    unsigned long long v;
    memcpy(&v, from + 8 * i, 8);
    v = __builtin_bswap64(v);
    memcpy(to + 8 * i, &v, 8);
  }
}
static int swap_write(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra) {
  (void)t;
  (void)extra;
  swap8(filebuf, (const char *)userbuf + 8 * position, count);
  return MPI_SUCCESS;
}
static int swap_read(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra) {
  (void)t;
  (void)extra;
  swap8((char *)userbuf + 8 * position, filebuf, count);
  return MPI_SUCCESS;
}
static int extent8(MPI_Datatype t, MPI_Aint *e, void *extra) {
  (void)t;
  (void)extra;
  *e = 8;
  return MPI_SUCCESS;
}
static int is_user(int op) { return op == OP_IWRITE_AT_USER || op == OP_IREAD_AT_USER; }

typedef struct {
  int b;
  lmpio_file lf;
  MPI_File mf;
} file;

static void die(const char *what, int rc) {
  char s[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "code %d", rc);
  fprintf(stderr, "[rank %d] %s failed: %s %s\n", rank, what, s, lmpio_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(what, call)                \
  do {                                \
    int rc_ = (call);                 \
    if (rc_ != MPI_SUCCESS) die(what, rc_); \
  } while (0)

static void fopen_(file *f, const char *path) {
  if (f->b == B_LMPIO)
    CK("open", lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f->lf));
  else
    CK("open", MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f->mf));
}

static void fclose_(file *f) {
  if (f->b == B_LMPIO) CK("close", lmpio_file_close(&f->lf));
  else CK("close", MPI_File_close(&f->mf));
}

static void fsync_(file *f) {
  if (f->b == B_LMPIO) CK("sync", lmpio_file_sync(f->lf));
  else CK("sync", MPI_File_sync(f->mf));
}

/* The blocking form of op. */
static void blocking(file *f, int op) {
  MPI_Offset off = (MPI_Offset)rank * size;
  int n = (int)(size / 8);
  MPI_Status st;
  int l = f->b == B_LMPIO;
  switch (op) {
  case OP_IWRITE_AT:
  case OP_IWRITE_AT_SYNC:
  case OP_IWRITE_AT_USER:
    CK("write_at", l ? lmpio_file_write_at(f->lf, off, buf, n, MPI_DOUBLE, &st)
                     : MPI_File_write_at(f->mf, off, buf, n, MPI_DOUBLE, &st));
    if (op == OP_IWRITE_AT_SYNC) fsync_(f);
    break;
  case OP_IREAD_AT:
  case OP_IREAD_AT_USER:
    CK("read_at", l ? lmpio_file_read_at(f->lf, off, buf, n, MPI_DOUBLE, &st)
                    : MPI_File_read_at(f->mf, off, buf, n, MPI_DOUBLE, &st));
    break;
  case OP_IWRITE_AT_ALL:
    CK("write_at_all", l ? lmpio_file_write_at_all(f->lf, off, buf, n, MPI_DOUBLE, &st)
                         : MPI_File_write_at_all(f->mf, off, buf, n, MPI_DOUBLE, &st));
    break;
  case OP_SPLIT_WRITE_ALL:
    CK("seek", l ? lmpio_file_seek(f->lf, off, MPI_SEEK_SET) : MPI_File_seek(f->mf, off, MPI_SEEK_SET));
    CK("write_all", l ? lmpio_file_write_all(f->lf, buf, n, MPI_DOUBLE, &st)
                      : MPI_File_write_all(f->mf, buf, n, MPI_DOUBLE, &st));
    break;
  }
}

/* Starts op; finish() completes it. */
static void start(file *f, int op, MPI_Request *req) {
  MPI_Offset off = (MPI_Offset)rank * size;
  int n = (int)(size / 8);
  int l = f->b == B_LMPIO;
  switch (op) {
  case OP_IWRITE_AT:
  case OP_IWRITE_AT_SYNC:
  case OP_IWRITE_AT_USER:
    CK("iwrite_at", l ? lmpio_file_iwrite_at(f->lf, off, buf, n, MPI_DOUBLE, req)
                      : MPI_File_iwrite_at(f->mf, off, buf, n, MPI_DOUBLE, req));
    break;
  case OP_IREAD_AT:
  case OP_IREAD_AT_USER:
    CK("iread_at", l ? lmpio_file_iread_at(f->lf, off, buf, n, MPI_DOUBLE, req)
                     : MPI_File_iread_at(f->mf, off, buf, n, MPI_DOUBLE, req));
    break;
  case OP_IWRITE_AT_ALL:
    CK("iwrite_at_all", l ? lmpio_file_iwrite_at_all(f->lf, off, buf, n, MPI_DOUBLE, req)
                          : MPI_File_iwrite_at_all(f->mf, off, buf, n, MPI_DOUBLE, req));
    break;
  case OP_SPLIT_WRITE_ALL:
    CK("seek", l ? lmpio_file_seek(f->lf, off, MPI_SEEK_SET) : MPI_File_seek(f->mf, off, MPI_SEEK_SET));
    CK("write_all_begin", l ? lmpio_file_write_all_begin(f->lf, buf, n, MPI_DOUBLE)
                            : MPI_File_write_all_begin(f->mf, buf, n, MPI_DOUBLE));
    break;
  }
}

static void finish(file *f, int op, MPI_Request *req) {
  MPI_Status st;
  if (op == OP_SPLIT_WRITE_ALL) {
    CK("write_all_end", f->b == B_LMPIO ? lmpio_file_write_all_end(f->lf, buf, &st)
                                        : MPI_File_write_all_end(f->mf, buf, &st));
  } else {
    CK("MPI_Wait", MPI_Wait(req, &st));
  }
  if (op == OP_IWRITE_AT_SYNC) fsync_(f);
}

/* Seconds of the slowest rank, barrier to barrier. */
static double slowest(double t0) {
  double t = MPI_Wtime() - t0, m;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *dir = argc > 1 ? argv[1] : "/dev/shm";
  size = (MPI_Offset)(argc > 2 ? atoi(argv[2]) : 256) << 20;
  int reps = argc > 3 ? atoi(argv[3]) : 3;
  int disk = strncmp(dir, "/dev/shm", 8) != 0;
  char io[64] = "?";
  const char *mca = getenv("OMPI_MCA_io");
  if (mca) snprintf(io, sizeof io, "%s", mca);
  if (rank == 0) {
    printf("# overlap_bench: %d rank(s), %lld MiB per rank per call, %s, MPI_THREAD_MULTIPLE %s, io=%s, best of %d\n",
           nranks, (long long)(size >> 20), dir, provided == MPI_THREAD_MULTIPLE ? "yes" : "NO", io, reps);
    printf("# %-8s %-20s %9s %9s %9s %8s%s\n", "backend", "call", "T_io", "T_comp", "T_total", "overlap",
           nranks > 1 ? "  total/(io+comp)" : "");
  }
  buf = malloc((size_t)size);
  if (!buf) die("malloc", MPI_ERR_NO_MEM);
  for (MPI_Offset i = 0; i < size; i++) buf[i] = (char)(i * 7 + rank);
  double rate = compute_rate();

  char path[4096];
  snprintf(path, sizeof path, "%s/lmpio-overlap-%d.dat", dir, (int)getpid());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  CK("register_datarep", lmpio_register_datarep("bench-be64", swap_read, swap_write, extent8, NULL));
  for (int op = 0; op < NOP; op++) {
    if (op == OP_IWRITE_AT_SYNC && !disk) continue;
    for (int b = 0; b < NB; b++) {
      if (b == B_MPI && is_user(op)) { /* MPI_Register_datarep fails in Open MPI and MPICH */
        if (rank == 0) printf("  %-8s %-20s %9s %9s %9s %8s\n", bname[b], opname[op], "-", "-", "-", "refused");
        continue;
      }
      if (b == B_MPI && op == OP_IWRITE_AT_ALL && strstr(io, "romio")) {
        /* ROMIO 3.2.1 as Open MPI 4.1 ships it dies in MPI_File_iwrite_at_all
         * (a null function pointer, with or without threads). */
        if (rank == 0) printf("  %-8s %-20s %9s %9s %9s %8s\n", bname[b], opname[op], "-", "-", "-", "crashes");
        continue;
      }
      file f = {b, LMPIO_FILE_NULL, MPI_FILE_NULL};
      fopen_(&f, path);
      blocking(&f, OP_IWRITE_AT); /* the file exists at full size: nobody pays for extending it */
      fsync_(&f);
      if (is_user(op))
        CK("set_view", lmpio_file_set_view(f.lf, 0, MPI_DOUBLE, MPI_DOUBLE, "bench-be64", MPI_INFO_NULL));
      double tio = 1e30, tcomp = 1e30, ttot = 1e30;
      for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        blocking(&f, op);
        double t = slowest(t0);
        if (t < tio) tio = t;
      }
      long n = (long)(rate * 1.5 * tio);
      for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        compute(n);
        double t = slowest(t0);
        if (t < tcomp) tcomp = t;
      }
      for (int r = 0; r < reps; r++) {
        MPI_Request req = MPI_REQUEST_NULL;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        start(&f, op, &req);
        compute(n);
        finish(&f, op, &req);
        double t = slowest(t0);
        if (t < ttot) ttot = t;
      }
      fclose_(&f);
      if (rank == 0) {
        printf("  %-8s %-20s %9.3f %9.3f %9.3f %8.2f", bname[b], opname[op], tio, tcomp, ttot,
               1.0 - (ttot - tcomp) / tio);
        if (nranks > 1) printf("  %.3f", ttot / (tio + tcomp));
        printf("\n");
        fflush(stdout);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) unlink(path);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
