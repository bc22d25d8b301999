/* Small collective calls: the time of one call through lmpio against the MPI
 * library's own MPI-IO, in one program.
 *
 *   read_at_all and write_at_all of 4 KiB (each rank its own block of a
 *   contiguous default view), write_ordered of 64 B, and for reference the
 *   independent read_at/write_at and plain pread/pwrite of the same blocks.
 *
 * Each case runs `calls` calls per repetition; repetitions alternate between
 * lmpio and MPI-IO (then the reverse order) and the best of `reps` counts.
 * The time of a repetition is the slowest rank's, from a barrier to a barrier,
 * divided by the calls: microseconds per call as a rank sees it.  The MPI side
 * is whichever io component mpirun selected (--mca io ompio | romio321).
 *
 * LMPIO_BENCH_PATTERN=stream: call i of a rank accesses block i * ranks + rank
 * (IOR's -t 4k -b 4k pattern: every block read or written once, the file
 * written in full beforehand); append: the same, but every repetition of a
 * write case starts from an empty file (IOR's writes: each one extends the
 * file); the default, same, accesses the rank's block again and again.
 *
 * LMPIO_BENCH_INFO=key=value,...: hints for every open (both libraries).
 *
 * Usage: latency_bench [calls (20000)] [reps (5)] [directory ($LMPIO_BENCH_DIR or /tmp)] */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_hints.h"
#include "lmpio.h"

enum { API_LMPIO, API_MPI, API_POSIX, NAPI };
enum { C_READ_ALL, C_WRITE_ALL, C_ORDERED, C_READ_AT, C_WRITE_AT, NCASE };

static const char *const case_name[NCASE] = {"read_at_all 4k", "write_at_all 4k", "write_ordered 64",
                                             "read_at 4k", "write_at 4k"};
static const int case_len[NCASE] = {4096, 4096, 64, 4096, 4096};

static int rank, nranks, stream, append;
static MPI_Info info = MPI_INFO_NULL;

static void die(const char *what, int rc) {
  fprintf(stderr, "[rank %d] %s failed: %d %s\n", rank, what, rc, lmpio_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One repetition of case c through api: seconds of the slowest rank. */
static double run(int api, int c, long calls, const char *path, char *buf) {
  lmpio_file lf = LMPIO_FILE_NULL;
  MPI_File mf = MPI_FILE_NULL;
  int fd = -1, rc = MPI_SUCCESS;
  int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
  if (api == API_LMPIO) rc = lmpio_file_open(MPI_COMM_WORLD, path, amode, info, &lf);
  else if (api == API_MPI) rc = MPI_File_open(MPI_COMM_WORLD, path, amode, info, &mf);
  else fd = open(path, O_RDWR);
  if (rc != MPI_SUCCESS || (api == API_POSIX && fd < 0)) die("open", rc);
  int len = case_len[c];
  MPI_Offset off = (MPI_Offset)rank * len;
  if (append && (c == C_WRITE_ALL || c == C_WRITE_AT) && rank == 0 && truncate(path, 0) != 0) die("truncate", -1);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long i = 0; i < calls; i++) {
    MPI_Status st;
    if (stream && c != C_ORDERED) off = ((MPI_Offset)i * nranks + rank) * len;
    if (api == API_POSIX) {
      ssize_t n = c == C_READ_ALL || c == C_READ_AT ? pread(fd, buf, (size_t)len, off) : pwrite(fd, buf, (size_t)len, off);
      if (n != len) die("pread/pwrite", -1);
      continue;
    }
    int l = api == API_LMPIO;
    switch (c) {
    case C_READ_ALL: rc = l ? lmpio_file_read_at_all(lf, off, buf, len, MPI_BYTE, &st) : MPI_File_read_at_all(mf, off, buf, len, MPI_BYTE, &st); break;
    case C_WRITE_ALL: rc = l ? lmpio_file_write_at_all(lf, off, buf, len, MPI_BYTE, &st) : MPI_File_write_at_all(mf, off, buf, len, MPI_BYTE, &st); break;
    case C_ORDERED: rc = l ? lmpio_file_write_ordered(lf, buf, len, MPI_BYTE, &st) : MPI_File_write_ordered(mf, buf, len, MPI_BYTE, &st); break;
    case C_READ_AT: rc = l ? lmpio_file_read_at(lf, off, buf, len, MPI_BYTE, &st) : MPI_File_read_at(mf, off, buf, len, MPI_BYTE, &st); break;
    default: rc = l ? lmpio_file_write_at(lf, off, buf, len, MPI_BYTE, &st) : MPI_File_write_at(mf, off, buf, len, MPI_BYTE, &st); break;
    }
    if (rc != MPI_SUCCESS) die(case_name[c], rc);
  }
  double t = MPI_Wtime() - t0, tmax;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (api == API_LMPIO) rc = lmpio_file_close(&lf);
  else if (api == API_MPI) rc = MPI_File_close(&mf);
  else close(fd);
  if (rc != MPI_SUCCESS) die("close", rc);
  return tmax;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  long calls = argc > 1 ? atol(argv[1]) : 20000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  const char *dir = argc > 3 ? argv[3] : getenv("LMPIO_BENCH_DIR") ? getenv("LMPIO_BENCH_DIR") : "/tmp";
  char path[4096];
  snprintf(path, sizeof path, "%s/lmpio_latency_bench.%d", dir, (int)getpid() * (rank == 0));
  MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  char *buf = malloc(4096);
  memset(buf, 'x', 4096);
  info = bench_hints("LMPIO_BENCH_INFO", NULL);
  const char *pattern = getenv("LMPIO_BENCH_PATTERN");
  append = pattern && strcmp(pattern, "append") == 0;
  stream = append || (pattern && strcmp(pattern, "stream") == 0);
  if (rank == 0) { /* every block read exists */
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    long blocks = stream ? calls * nranks : nranks;
    for (long b = 0; fd >= 0 && b < blocks; b++)
      if (pwrite(fd, buf, 4096, (off_t)b * 4096) != 4096) die("prefill", -1);
    if (fd >= 0) close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  char component[64] = "mpiio";
  const char *io = getenv("OMPI_MCA_io");
  if (io) snprintf(component, sizeof component, "%s", io);
  if (rank == 0)
    printf("%-18s %6s %10s %10s %10s %8s   (us/call, best of %d x %ld calls, %s)\n", "case", "ranks", "lmpio",
           component, "posix", "lmpio/mpi", reps, calls, append ? "append" : stream ? "stream" : "same block");
  for (int c = 0; c < NCASE; c++) {
    double best[NAPI] = {1e30, 1e30, 1e30};
    for (int r = 0; r < reps; r++)
      for (int k = 0; k < NAPI; k++) {
        int api = r % 2 ? NAPI - 1 - k : k;
        if (api == API_POSIX && c == C_ORDERED) continue;
        double t = run(api, c, calls, path, buf);
        if (t < best[api]) best[api] = t;
      }
    if (rank == 0) {
      double us[NAPI];
      for (int k = 0; k < NAPI; k++) us[k] = best[k] * 1e6 / (double)calls;
      printf("%-18s %6d %10.3f %10.3f %10.3f %8.2f\n", case_name[c], nranks, us[API_LMPIO], us[API_MPI],
             c == C_ORDERED ? 0.0 : us[API_POSIX], us[API_LMPIO] / us[API_MPI]);
    }
  }
  if (rank == 0) unlink(path);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  free(buf);
  MPI_Finalize();
  return 0;
}
