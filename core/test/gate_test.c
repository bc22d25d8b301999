/* The sieve gate (core/src/gate.c): direct writes of a handle whose views
 * have holes go without byte-range locks, and no sieve overwrites them.
 *
 * First the gate alone, in one process, its "ranks" being gates on one
 * piece of memory over descriptors of their own (what two ranks of a
 * handle have): who waits for whom.  Then the file model at every rank
 * count: a sieving rank beside ranks writing into its holes, through one
 * handle and through two, nothing lost; and the locks the direct writes
 * no longer take. */
#include "internals.h"
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static char *gate_file(void) {
  static char p[256];
  snprintf(p, sizeof p, "/tmp/lmpio-gate-%d-%d", (int)getpid(), tl_rank);
  return p;
}

static void pause_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

typedef struct {
  lmpio__gate *g;
  int fd;
  _Atomic int done, result;
} sieve_arg;

static void *sieve_thread(void *p) {
  sieve_arg *a = p;
  atomic_store(&a->result, lmpio__gate_sieve_begin(a->g, a->fd));
  atomic_store(&a->done, 1);
  return NULL;
}

typedef struct {
  void *mem;
  int fd;
  lmpio__gate *g;
  _Atomic int done;
} open_arg;

static void *open_thread(void *p) {
  open_arg *a = p;
  a->g = lmpio__gate_open(a->mem, 0, 2, a->fd, 77);
  atomic_store(&a->done, 1);
  return NULL;
}

/* Every rank on its own file: the gate's rules, one process playing
 * the ranks. */
static void test_gate_rules(void) {
  const char *path = gate_file();
  int fd0 = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), fd1 = open(path, O_RDWR), other = open(path, O_RDWR);
  TL_CHECK(fd0 >= 0 && fd1 >= 0 && other >= 0);
  void *mem = aligned_alloc(64, lmpio__gate_bytes(2)), *mem2 = aligned_alloc(64, lmpio__gate_bytes(2));
  memset(mem, 0, lmpio__gate_bytes(2));
  memset(mem2, 0, lmpio__gate_bytes(2));
  TL_CHECK(lmpio__gate_open(NULL, 0, 2, fd0, 1) == NULL); /* no shared memory, no gate */
  TL_CHECK(lmpio__gate_open(mem, 0, 1, fd0, 1) == NULL);  /* nor at one rank */
  lmpio__gate *g0 = lmpio__gate_open(mem, 0, 2, fd0, 5), *g1 = lmpio__gate_open(mem, 1, 2, fd1, 5);
  TL_CHECK(g0 && g1);
  if (!g0 || !g1) return;

  /* No sieve: a direct write goes without its lock. */
  TL_EQ(lmpio__gate_direct_begin(g0), 1);
  /* A sieve of the handle waits for it to end. */
  sieve_arg s = {g1, fd1, 0, -1};
  pthread_t t;
  pthread_create(&t, NULL, sieve_thread, &s);
  pause_ms(100);
  TL_EQ(atomic_load(&s.done), 0);
  lmpio__gate_direct_end(g0);
  pthread_join(t, NULL);
  TL_EQ(atomic_load(&s.result), 1);
  /* While the sieve is under way a direct write takes its lock. */
  TL_EQ(lmpio__gate_direct_begin(g0), 0);
  TL_EQ(lmpio__gate_direct_begin(g1), 0);
  lmpio__gate_sieve_end(g1, fd1);
  TL_EQ(lmpio__gate_direct_begin(g0), 1);
  lmpio__gate_direct_end(g0);

  /* Sieves of the handle do not exclude each other. */
  TL_EQ(lmpio__gate_sieve_begin(g0, fd0), 1);
  TL_EQ(lmpio__gate_sieve_begin(g1, fd1), 1);
  lmpio__gate_sieve_end(g0, fd0);
  lmpio__gate_sieve_end(g1, fd1);

  /* Another handle's sieve while the gate is open: piece by piece. */
  TL_EQ(lmpio__gate_sieve_begin(NULL, other), 0);
  /* A second gated handle of the file: its sieves too, and ours. */
  lmpio__gate *h = lmpio__gate_open(mem2, 0, 2, other, 6);
  TL_CHECK(h != NULL);
  TL_EQ(lmpio__gate_sieve_begin(h, other), 0);
  TL_EQ(lmpio__gate_sieve_begin(g0, fd0), 0);
  TL_EQ(lmpio__gate_direct_begin(g0), 1); /* (a refused sieve left no count behind) */
  lmpio__gate_direct_end(g0);
  lmpio__gate_close(h);
  lmpio__gate_close(g0);
  lmpio__gate_close(g1);
  /* Every gate closed: other handles sieve again. */
  TL_EQ(lmpio__gate_sieve_begin(NULL, other), 1);

  /* A gate opening while another handle sieves waits for the sieve. */
  memset(mem, 0, lmpio__gate_bytes(2));
  open_arg o = {mem, fd0, NULL, 0};
  pthread_create(&t, NULL, open_thread, &o);
  pause_ms(100);
  TL_EQ(atomic_load(&o.done), 0);
  lmpio__gate_sieve_end(NULL, other);
  pthread_join(t, NULL);
  TL_CHECK(o.g != NULL);

  /* A rank stuck inside a direct write: a sieve gives up after a second
   * and goes piece by piece, leaving no count behind. */
  g1 = lmpio__gate_open(mem, 1, 2, fd1, 77);
  TL_CHECK(g1 != NULL);
  if (o.g && g1) {
    TL_EQ(lmpio__gate_direct_begin(g1), 1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    TL_EQ(lmpio__gate_sieve_begin(o.g, fd0), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double waited = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    TL_CHECK(waited >= 0.9 && waited < 30);
    TL_EQ(lmpio__gate_direct_begin(o.g), 1);
    lmpio__gate_direct_end(o.g);
    lmpio__gate_direct_end(g1);
  }
  lmpio__gate_close(o.g);
  lmpio__gate_close(g1);
  free(mem);
  free(mem2);
  close(fd0);
  close(fd1);
  close(other);
  unlink(path);
}

enum { B = 8 };

/* Rank r owns blocks r, r + P, ... of B bytes. */
static MPI_Datatype own_blocks(void) {
  MPI_Datatype blk, ft;
  MPI_Type_contiguous(B, MPI_BYTE, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)B * tl_size, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&blk);
  return ft;
}

/* Rank 0 rewrites its blocks sieved, over and over, while every other rank
 * writes each of its blocks once (the file starts empty): a sieve that read
 * a block before its owner wrote it and wrote it back after leaves zeros
 * there.  through_self: rank 0 sieves through a second handle of its own
 * (MPI_COMM_SELF) with the same view. */
static void race(int through_self, long *lost_out) {
  char *path = tl_path(through_self ? "gate-self" : "gate-one");
  const int NB = tl_small_or(4096, 256);
  lmpio_file fh, self = LMPIO_FILE_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_ds_write", "enable");
  MPI_Info_set(info, "ind_wr_buffer_size", "1048576"); /* (one window: each sieve spans every block) */
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Datatype ft = own_blocks();
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  if (through_self && tl_rank == 0) {
    TL_OK(lmpio_file_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, info, &self));
    TL_OK(lmpio_file_set_view(self, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  }
  MPI_Info_free(&info);
  char *buf = malloc((size_t)B * NB);
  memset(buf, 'a' + tl_rank % 26, (size_t)B * NB);
  /* (the file's last block first: the sieves never reach past its end) */
  if (tl_rank == tl_size - 1) TL_OK(lmpio_file_write_at(fh, (MPI_Offset)(NB - 1) * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  MPI_Request done;
  if (tl_rank == 0) {
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    int over = 0;
    for (long r = 0; !over && r < 100000; r++) {
      TL_OK(lmpio_file_write_at(through_self ? self : fh, 0, buf, B * NB, MPI_BYTE, MPI_STATUS_IGNORE));
      MPI_Test(&done, &over, MPI_STATUS_IGNORE);
    }
    if (!over) MPI_Wait(&done, MPI_STATUS_IGNORE);
  } else {
    /* (paced: spread over many of rank 0's sieves) */
    for (int k = 0; k < NB - (tl_rank == tl_size - 1); k++) {
      TL_OK(lmpio_file_write_at(fh, (MPI_Offset)k * B, buf, B, MPI_BYTE, MPI_STATUS_IGNORE));
      double t = MPI_Wtime();
      while (MPI_Wtime() - t < 5e-6) continue;
    }
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    MPI_Wait(&done, MPI_STATUS_IGNORE);
  }
  if (self != LMPIO_FILE_NULL) TL_OK(lmpio_file_close(&self));
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  long lost = 0;
  if (tl_rank == 0) {
    size_t n = (size_t)B * NB * (size_t)tl_size;
    unsigned char *all = malloc(n);
    int fd = open(path, O_RDONLY);
    TL_CHECK(fd >= 0 && pread(fd, all, n, 0) == (ssize_t)n);
    if (fd >= 0) close(fd);
    for (size_t k = 0; k < n / B; k++)
      if (all[k * B] != 'a' + (int)(k % (size_t)tl_size) % 26 || all[k * B + B - 1] != all[k * B]) lost++;
    free(all);
  }
  MPI_Bcast(&lost, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  *lost_out = lost;
  free(buf);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

static void test_race_one_handle(void) {
  long lost;
  race(0, &lost);
  if (lost) fprintf(stderr, "[rank %d] %ld blocks lost\n", tl_rank, lost);
  TL_EQ(lost, 0);
}

static void test_race_two_handles(void) {
  long lost;
  race(1, &lost);
  if (lost) fprintf(stderr, "[rank %d] %ld blocks lost\n", tl_rank, lost);
  TL_EQ(lost, 0);
}

/* A collective write of one block a rank through views with holes: on one
 * node, through the gate (no lock); LMPIO_SHARED_FP=lock (no mapped helper,
 * as across nodes) takes one a write, as before. */
static void test_direct_writes_lock_nothing(void) {
  if (tl_size < 2) return;
  char *path = tl_path("gate-locks");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_Datatype ft = own_blocks();
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  char v[B];
  memset(v, 'x', B);
  double before = tl_stat(fh, "LMPIO_LOCKS");
  for (int i = 0; i < 10; i++) TL_OK(lmpio_file_write_at_all(fh, (MPI_Offset)i * B, v, B, MPI_BYTE, MPI_STATUS_IGNORE));
  double taken = tl_stat(fh, "LMPIO_LOCKS") - before;
  /* (every rank on this node, a local file system, the mapped helper) */
  MPI_Comm node;
  int here = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &here);
  MPI_Comm_free(&node);
  const char *forced = getenv("LMPIO_SHARED_FP");
  int gated = here == tl_size && fh->drv->id == LMPIO__FS_LOCAL && !(forced && strcmp(forced, "lock") == 0);
  TL_EQ(fh->gate != NULL, gated);
  TL_EQ(taken, gated ? 0 : 10);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("gate: a sieve waits for direct writes, direct writes take their lock beside a sieve, other handles' sieves go piece by piece", test_gate_rules);
  tl_run("gate: a sieving rank beside ranks writing into its holes through one handle loses nothing", test_race_one_handle);
  tl_run("gate: a sieve through another handle beside direct writes into its holes loses nothing", test_race_two_handles);
  tl_run("gate: collective writes through views with holes take no lock on one node", test_direct_writes_lock_nothing);
  return tl_finish();
}
