/* What waiting for one another costs small reads, without lmpio or MPI.
 *
 * Two processes read 4 KiB blocks of one file, interleaved (process r reads
 * block 2i + r in step i: IOR's -t 4k -b 4k pattern at 2 ranks, every block
 * read once).  Free: each goes on at its own pace, as OMPIO's and ROMIO's
 * read_at_all do at one node (they do not communicate).  Lockstep: after
 * each read a process publishes its step in shared memory and spins until
 * the other has published the same step: the least a collective call that
 * agrees on its outcome can do (lmpio's exchange is such a cache line).
 *
 * Prints microseconds per step of each process and the distribution of the
 * reads alone: in lockstep each step costs the slower of two reads, so the
 * tail of one process's reads (page-cache work, interrupts) is paid by both.
 *
 * Usage: lockstep_bench [directory (/dev/shm)] [steps (8192)] [repetitions (5)]
 *
 * LMPIO_LOCKSTEP_BLOCK=bytes (4096) sets the block; LMPIO_LOCKSTEP_REWRITE=1
 * makes each step a write of the process's block and a read of it back,
 * meeting after each (scale_bench's twophase pattern at 2 ranks, where each
 * rank's block of the subarray is one run of the file: 131072);
 * LMPIO_LOCKSTEP_APPEND=1 with it writes step i's blocks after step i-1's,
 * extending a file that starts empty each repetition (its small pattern:
 * one int a rank a step, LMPIO_LOCKSTEP_BLOCK=4).  LMPIO_LOCKSTEP_MAP=1
 * copies to and from a shared mapping of the file instead of pwrite and
 * pread (not with APPEND: a store cannot extend the file); the mapping is
 * made once, so its pages stay in place from repetition to repetition. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { LINE = 64 };
static long BLOCK = 4096;

typedef struct {
  _Alignas(LINE) _Atomic long step;
} published;

static published *pub; /* [2], shared */
static int me;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void meet(long step) {
  atomic_store_explicit(&pub[me].step, step, memory_order_release);
  while (atomic_load_explicit(&pub[1 - me].step, memory_order_acquire) < step) {
  }
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/dev/shm";
  long steps = argc > 2 ? atol(argv[2]) : 8192;
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  if (steps < 100 || reps < 1) {
    fprintf(stderr, "usage: lockstep_bench [directory] [steps >= 100] [repetitions]\n");
    return 2;
  }
  const char *b = getenv("LMPIO_LOCKSTEP_BLOCK"), *rw = getenv("LMPIO_LOCKSTEP_REWRITE");
  if (b && atol(b) > 0) BLOCK = atol(b);
  int rewrite = rw && atoi(rw) != 0;
  const char *ap = getenv("LMPIO_LOCKSTEP_APPEND");
  int append = rewrite && ap && atoi(ap) != 0;
  const char *mp = getenv("LMPIO_LOCKSTEP_MAP");
  int mapped = mp && atoi(mp) != 0 && !append;
  char path[4096];
  snprintf(path, sizeof path, "%s/lmpio_lockstep_bench.%d", dir, (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  char *chunk = malloc(1 << 20);
  pub = mmap(NULL, sizeof(published) * 2, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  double *took = malloc(sizeof(double) * (size_t)steps);
  if (fd < 0 || !chunk || pub == MAP_FAILED || !took) {
    perror(path);
    return 1;
  }
  memset(chunk, 7, 1 << 20);
  for (long off = 0; off < (rewrite ? 2 : steps * 2) * BLOCK; off += 1 << 20)
    if (pwrite(fd, chunk, 1 << 20, off) != 1 << 20) {
      perror("pwrite");
      return 1;
    }
  size_t span = (size_t)((rewrite ? 2 : steps * 2) * BLOCK);
  char *map = mapped ? mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : NULL;
  if (map == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  pid_t child = fork();
  me = child == 0;
  char *buf = malloc((size_t)BLOCK);
  if (!buf) return 1;
  memset(buf, 1 + me, (size_t)BLOCK);
  long step = 0;
  for (int lockstep = 0; lockstep < 2; lockstep++) {
    double best = 1e30, mean = 0, med = 0, p99 = 0;
    for (int r = 0; r < reps; r++) {
      if (append && me == 0 && ftruncate(fd, 0) != 0) {
        perror("ftruncate");
        return 1;
      }
      meet(++step);
      double t0 = now();
      for (long i = 0; i < steps; i++) {
        double a = now();
        if (rewrite) {
          off_t at = (off_t)((append ? 2 * i : 0) + me) * BLOCK;
          if (map) memcpy(map + at, buf, (size_t)BLOCK);
          else if (pwrite(fd, buf, (size_t)BLOCK, at) != BLOCK) {
            perror("pwrite");
            return 1;
          }
          if (lockstep) meet(++step);
        }
        off_t at = (off_t)((rewrite && !append ? 0 : 2 * i) + me) * BLOCK;
        if (map) memcpy(buf, map + at, (size_t)BLOCK);
        else if (pread(fd, buf, (size_t)BLOCK, at) != BLOCK) {
          perror("pread");
          return 1;
        }
        took[i] = now() - a;
        if (lockstep) meet(++step);
      }
      double t = now() - t0;
      meet(++step);
      if (t < best) {
        best = t;
        double sum = 0;
        for (long i = 0; i < steps; i++) sum += took[i];
        qsort(took, (size_t)steps, sizeof(double), by_value);
        mean = sum / (double)steps;
        med = took[steps / 2];
        p99 = took[steps * 99 / 100];
      }
    }
    for (int p = 0; p < 2; p++) {
      if (p == me)
        printf("%-8s process %d: %.3f us/step; its %s: mean %.3f, median %.3f, 99th percentile %.3f us\n",
               lockstep ? "lockstep" : "free", me, best * 1e6 / (double)steps, rewrite ? "writes and reads" : "reads", mean * 1e6, med * 1e6, p99 * 1e6);
      fflush(stdout);
      meet(++step);
    }
  }
  if (map) munmap(map, span);
  if (child) {
    waitpid(child, NULL, 0);
    unlink(path);
  }
  close(fd);
  return 0;
}
