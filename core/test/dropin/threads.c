/*
 * File handles under MPI_THREAD_MULTIPLE: threads open, use and close
 * files at the same time (each on its own communicator, a duplicate of
 * MPI_COMM_SELF), more of them than the drop-in's first block of handles
 * holds.  Every handle serves its own file, the Fortran integers of the
 * files open at once differ and map back to their handles, and a thread
 * checking garbage handles meanwhile always gets MPI_ERR_FILE.
 */
#include <pthread.h>
#include "check.h"

#define THREADS 4
#define HELD 12 /* files a thread holds open at once */
#define ROUNDS 4

typedef struct {
  int id, rank, failures;
  MPI_Comm comm;
  char path[600];
  MPI_Fint fints[HELD];
} worker;

static int class_of(int rc) {
  int cls = -1;
  MPI_Error_class(rc, &cls);
  return cls;
}

static void *work(void *arg) {
  worker *w = arg;
  for (int round = 0; round < ROUNDS; round++) {
    MPI_File fh[HELD];
    for (int i = 0; i < HELD; i++) {
      int value = w->id * 1000 + round * 100 + i, back = -1;
      fh[i] = MPI_FILE_NULL;
      int rc = MPI_File_open(w->comm, w->path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh[i]);
      rc = rc == MPI_SUCCESS ? MPI_File_write_at(fh[i], i * (MPI_Offset)sizeof(int), &value, 1, MPI_INT,
                                                 MPI_STATUS_IGNORE)
                             : rc;
      rc = rc == MPI_SUCCESS ? MPI_File_read_at(fh[i], i * (MPI_Offset)sizeof(int), &back, 1, MPI_INT,
                                                MPI_STATUS_IGNORE)
                             : rc;
      w->fints[i] = MPI_File_c2f(fh[i]);
      if (rc != MPI_SUCCESS || back != value || w->fints[i] <= 0 || MPI_File_f2c(w->fints[i]) != fh[i]) {
        fprintf(stderr, "rank %d thread %d: file %d of round %d: rc %d, read %d of %d\n", w->rank, w->id, i, round,
                rc, back, value);
        w->failures++;
      }
    }
    for (int i = 0; i < HELD; i++) {
      MPI_Offset size = 0;
      if (MPI_File_get_size(fh[i], &size) != MPI_SUCCESS || size < (MPI_Offset)sizeof(int) * HELD ||
          MPI_File_f2c(w->fints[i]) != fh[i])
        w->failures++;
      if (MPI_File_close(&fh[i]) != MPI_SUCCESS || fh[i] != MPI_FILE_NULL) w->failures++;
    }
  }
  return NULL;
}

/* Garbage handles while the others open and close: never taken for files. */
static int stop; /* (atomic loads and stores) */
static void *garbage(void *arg) {
  int *failures = arg;
  int junk[16] = {0};
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    MPI_Offset size;
    if (class_of(MPI_File_get_size((MPI_File)(void *)junk, &size)) != MPI_ERR_FILE) ++*failures;
    if (class_of(MPI_File_get_size(MPI_FILE_NULL, &size)) != MPI_ERR_FILE) ++*failures;
    usleep(100); /* (a spinning thread would slow the others on two cores) */
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided != MPI_THREAD_MULTIPLE) {
    check("skip: MPI_THREAD_MULTIPLE not provided", 1);
    MPI_Finalize();
    return 0;
  }
  char base[512];
  test_path(base, sizeof base, "threads");
  worker w[THREADS];
  pthread_t t[THREADS], g;
  int garbage_failures = 0;
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.id = i, .rank = rank};
    MPI_Comm_dup(MPI_COMM_SELF, &w[i].comm);
    snprintf(w[i].path, sizeof w[i].path, "%s.%d.%d", base, rank, i);
  }
  int started = pthread_create(&g, NULL, garbage, &garbage_failures) == 0;
  for (int i = 0; i < THREADS; i++) started &= pthread_create(&t[i], NULL, work, &w[i]) == 0;
  int failures = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    failures += w[i].failures;
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(g, NULL);
  check("threads open, use and close their files at once", started && failures == 0);
  check("garbage handles meanwhile: MPI_ERR_FILE", garbage_failures == 0);
  /* The last round's integers, each thread's distinct, were in use at once
   * with the other threads' only by chance: check within a thread. */
  int distinct = 1;
  for (int i = 0; i < THREADS; i++)
    for (int a = 0; a < HELD; a++)
      for (int b = 0; b < a; b++) distinct &= w[i].fints[a] != w[i].fints[b];
  check("the files a thread held open at once had distinct Fortran integers", distinct);
  for (int i = 0; i < THREADS; i++) {
    MPI_Comm_free(&w[i].comm);
    MPI_File_delete(w[i].path, MPI_INFO_NULL);
  }
  MPI_Finalize();
  return check_failures != 0;
}
