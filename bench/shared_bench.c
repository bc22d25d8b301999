/* Shared file pointer and ordered collectives: lmpio against the MPI
 * library's own MPI-IO, same workload, one program.
 *
 *   write_ordered of 64-byte records, write_ordered of 1 KiB records,
 *   write_shared of 64-byte records, and two ceilings: plain pwrite (each
 *   rank writes its records to its own slots, no shared pointer at all) and,
 *   for write_shared, the design's own floor (a counter in shared memory that
 *   each record's atomic add reserves, then the pwrite: what lmpio's mapped
 *   pointer does with nothing else around it; ranks on one machine only).
 *
 * Rates count calls summed over all ranks (each rank's call is one call), per
 * second of the slowest rank; MB/s is the data written (10^6 bytes); us/call
 * is the time of one call as a rank sees it.  The MPI side uses whichever
 * io component mpirun selected (--mca io ompio | romio321), printed in the
 * "api" column.  See bench/shared_README.md.
 *
 * Usage: shared_bench [seconds per case (0.3)] [directory ($LMPIO_BENCH_DIR or /tmp)] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lmpio.h"

static int rank, nranks;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { API_LMPIO, API_MPI, API_POSIX, API_ADD };
enum { OP_ORDERED, OP_SHARED };

typedef struct {
  int api;
  lmpio_file lf;
  MPI_File mf;
  int fd;
  long long slot;            /* posix: next record of this rank */
  _Atomic long long *next;   /* add: the shared pointer, in bytes */
} bfile;

static void die(const char *what, int rc) {
  fprintf(stderr, "[rank %d] %s failed: %d %s\n", rank, what, rc,
          rc != MPI_SUCCESS ? lmpio_last_error_message() : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void bopen(bfile *f, int api, const char *path) {
  f->api = api;
  f->slot = 0;
  int amode = MPI_MODE_CREATE | MPI_MODE_WRONLY;
  int rc = MPI_SUCCESS;
  if (api == API_LMPIO) {
    rc = lmpio_file_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &f->lf);
    if (rc == MPI_SUCCESS) rc = lmpio_file_set_size(f->lf, 0);
  } else if (api == API_MPI) {
    rc = MPI_File_open(MPI_COMM_WORLD, path, amode, MPI_INFO_NULL, &f->mf);
    if (rc == MPI_SUCCESS) rc = MPI_File_set_size(f->mf, 0);
  } else {
    if (rank == 0) f->fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) f->fd = open(path, O_WRONLY);
    if (f->fd < 0) rc = MPI_ERR_IO;
  }
  if (rc != MPI_SUCCESS) die("open", rc);
  if (api == API_ADD) { /* the pointer: the first bytes of a mapped sibling file */
    char cpath[4200];
    snprintf(cpath, sizeof cpath, "%s.pointer", path);
    int cfd = -1;
    if (rank == 0 && (cfd = open(cpath, O_CREAT | O_TRUNC | O_RDWR, 0644)) >= 0 && ftruncate(cfd, 4096) < 0) cfd = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) cfd = open(cpath, O_RDWR);
    void *m = cfd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
    if (m == MAP_FAILED) die("mapping of the pointer", MPI_ERR_IO);
    close(cfd);
    f->next = m;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) unlink(cpath);
  }
}

static void bclose(bfile *f, const char *path) {
  int rc = MPI_SUCCESS;
  if (f->api == API_LMPIO) rc = lmpio_file_close(&f->lf);
  else if (f->api == API_MPI) rc = MPI_File_close(&f->mf);
  else close(f->fd);
  if (f->api == API_ADD) munmap((void *)f->next, 4096);
  if (rc != MPI_SUCCESS) die("close", rc);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) unlink(path);
}

static void one(bfile *f, int op, const char *rec, int len) {
  int rc = MPI_SUCCESS;
  if (f->api == API_LMPIO) {
    rc = op == OP_ORDERED ? lmpio_file_write_ordered(f->lf, rec, len, MPI_BYTE, MPI_STATUS_IGNORE)
                          : lmpio_file_write_shared(f->lf, rec, len, MPI_BYTE, MPI_STATUS_IGNORE);
  } else if (f->api == API_MPI) {
    rc = op == OP_ORDERED ? MPI_File_write_ordered(f->mf, rec, len, MPI_BYTE, MPI_STATUS_IGNORE)
                          : MPI_File_write_shared(f->mf, rec, len, MPI_BYTE, MPI_STATUS_IGNORE);
  } else {
    off_t off = f->api == API_ADD ? (off_t)atomic_fetch_add(f->next, len)
                                  : (off_t)((f->slot++ * nranks + rank) * (long long)len);
    if (pwrite(f->fd, rec, (size_t)len, off) != len) rc = MPI_ERR_IO;
  }
  if (rc != MPI_SUCCESS) die("write", rc);
}

/* Runs `iters` calls on every rank; returns the slowest rank's time. */
static double timed(bfile *f, int op, const char *rec, int len, long long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now();
  for (long long i = 0; i < iters; i++) one(f, op, rec, len);
  double dt = now() - t0, worst;
  MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

static void run_case(const char *name, int api, int op, int len, double seconds, const char *dir) {
  char path[4096];
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/lmpio-shared-bench-%d-%s-%d.dat", dir, pid, name, api);
  char rec[1024];
  memset(rec, 'a' + rank % 26, sizeof rec);
  bfile f;
  bopen(&f, api, path);
  /* A pilot run sizes the measured one. */
  long long pilot = 50;
  double t = timed(&f, op, rec, len, pilot);
  long long iters = t > 0 ? (long long)(seconds / t * pilot) : 100000;
  if (iters < 20) iters = 20;
  MPI_Bcast(&iters, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  t = timed(&f, op, rec, len, iters);
  bclose(&f, path);
  if (rank == 0) {
    const char *label = api == API_LMPIO ? "lmpio" : api == API_POSIX ? "pwrite" : api == API_ADD ? "add+pwrite" : NULL;
    char mpi_label[64];
    if (!label) {
      const char *io = getenv("OMPI_MCA_io");
      snprintf(mpi_label, sizeof mpi_label, "MPI(%s)", io && *io ? io : "default");
      label = mpi_label;
    }
    double calls = (double)iters * nranks / t;
    printf("%-18s %5d %-16s %12.0f %10.1f %10.2f\n", name, nranks, label, calls,
           calls * len / 1e6, t / (double)iters * 1e6);
    fflush(stdout);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  double seconds = argc > 1 ? atof(argv[1]) : 0.3;
  const char *dir = argc > 2 ? argv[2] : getenv("LMPIO_BENCH_DIR");
  if (!dir || !*dir) dir = "/tmp";
  const char *only = getenv("LMPIO_BENCH_API"); /* lmpio, mpi, posix or add: one side only */
  if (rank == 0) {
    printf("%-18s %5s %-16s %12s %10s %10s\n", "workload", "ranks", "api", "calls/s", "MB/s", "us/call");
    fflush(stdout);
  }
  struct { const char *name; int op, len; } cases[] = {
      {"write_ordered_64", OP_ORDERED, 64},
      {"write_ordered_1k", OP_ORDERED, 1024},
      {"write_shared_64", OP_SHARED, 64},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int apis[] = {API_LMPIO, API_MPI, API_POSIX, API_ADD};
    const char *names[] = {"lmpio", "mpi", "posix", "add"};
    for (int a = 0; a < 4; a++) {
      if (only && *only && strcmp(only, names[a]) != 0) continue;
      if (apis[a] == API_ADD && cases[c].op != OP_SHARED) continue;
      run_case(cases[c].name, apis[a], cases[c].op, cases[c].len, seconds, dir);
    }
  }
  MPI_Finalize();
  return 0;
}
