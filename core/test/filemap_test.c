/* Small contiguous accesses through the handle's mapping of the file
 * (core/src/filemap.c): they see what other ranks wrote, stop at the end of
 * the file, notice set_size and a sync after another handle or program cut
 * the file, and fall back to the system call when the mapping cannot be made
 * or raises SIGBUS.  Whether the mapping was used is read off the statistics
 * (a mapped access makes no pread or pwrite). */
#include "testlib.h"
#include "internals.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

enum { BLOCK = 4096 };

static MPI_Info hints(const char *reads, const char *writes) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (reads) MPI_Info_set(info, "lmpio_map_reads", reads);
  if (writes) MPI_Info_set(info, "lmpio_map_writes", writes);
  return info;
}

static lmpio_file open_with(MPI_Comm comm, const char *p, const char *reads, const char *writes) {
  lmpio_file fh = LMPIO_FILE_NULL;
  MPI_Info info = hints(reads, writes);
  TL_OK(lmpio_file_open(comm, p, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info_free(&info);
  return fh;
}

static void fill(unsigned char *b, int n, int seed) {
  for (int i = 0; i < n; i++) b[i] = (unsigned char)(seed * 31 + i * 7 + 1);
}

/* A file of each rank's own, in the directory of the others. */
static char *own_path(const char *tag) {
  char *p = tl_path(tag);
  snprintf(p + strlen(p), 32, ".%d", tl_rank);
  return p;
}

static void test_reads_see_other_ranks(void) {
  char *p = tl_path("ranks");
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, NULL, NULL); /* automatic */
  unsigned char mine[BLOCK], got[BLOCK], want[BLOCK];
  MPI_Status st;
  for (int round = 0; round < 3; round++) {
    fill(mine, BLOCK, tl_rank + 10 * round);
    TL_OK(lmpio_file_write_at(fh, (MPI_Offset)tl_rank * BLOCK, mine, BLOCK, MPI_BYTE, &st));
    TL_OK(lmpio_file_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    TL_OK(lmpio_file_sync(fh));
    for (int rep = 0; rep < 10; rep++)
      for (int r = 0; r < tl_size; r++) {
        fill(want, BLOCK, r + 10 * round);
        memset(got, 0, BLOCK);
        TL_OK(lmpio_file_read_at(fh, (MPI_Offset)r * BLOCK, got, BLOCK, MPI_BYTE, &st));
        int n = -1;
        MPI_Get_count(&st, MPI_BYTE, &n);
        TL_EQ(n, BLOCK);
        TL_CHECK(memcmp(got, want, BLOCK) == 0);
      }
    MPI_Barrier(MPI_COMM_WORLD); /* everyone read before the next round writes */
  }
  /* 30 reads per rank and round; after the first few, the mapping serves them */
  TL_CHECK(tl_stat(fh, "POSIX_READS") < 3 * 10 * tl_size / 2);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(p);
}

static int count_of(MPI_Status *st) {
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  return n;
}

static void test_end_and_set_size(void) {
  char *p = tl_path("size");
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, "enable", NULL);
  unsigned char b[3 * BLOCK];
  fill(b, (int)sizeof b, 3);
  MPI_Status st;
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, b, 10000, MPI_BYTE, &st));
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  unsigned char got[BLOCK];
  for (int i = 0; i < 4; i++) {
    TL_OK(lmpio_file_read_at(fh, 0, got, BLOCK, MPI_BYTE, &st));
    TL_EQ(count_of(&st), BLOCK);
    TL_OK(lmpio_file_read_at(fh, 2 * BLOCK, got, BLOCK, MPI_BYTE, &st)); /* past the end */
    TL_EQ(count_of(&st), 10000 - 2 * BLOCK);
    TL_CHECK(memcmp(got, b + 2 * BLOCK, 10000 - 2 * BLOCK) == 0);
  }
  /* Cut inside the second page: the mapping still shows that page whole
   * (zeros past the end), a read must stop at the new end. */
  TL_OK(lmpio_file_set_size(fh, 5000));
  TL_OK(lmpio_file_read_at(fh, BLOCK, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(count_of(&st), 5000 - BLOCK);
  TL_OK(lmpio_file_read_at(fh, 0, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(count_of(&st), BLOCK);
  TL_CHECK(memcmp(got, b, BLOCK) == 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(p);
}

/* Another handle's set_size (or another program's truncate): visible to
 * this handle after a sync, as MPI's consistency rules have it. */
static void test_other_handle_cuts(void) {
  char *p = own_path("other");
  lmpio_file a = open_with(MPI_COMM_SELF, p, "enable", NULL), b = open_with(MPI_COMM_SELF, p, NULL, NULL);
  unsigned char buf[4 * BLOCK], got[BLOCK];
  fill(buf, (int)sizeof buf, 5);
  MPI_Status st;
  TL_OK(lmpio_file_write_at(b, 0, buf, (int)sizeof buf, MPI_BYTE, &st));
  TL_OK(lmpio_file_sync(b));
  TL_OK(lmpio_file_sync(a));
  for (int i = 0; i < 3; i++) TL_OK(lmpio_file_read_at(a, BLOCK, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(count_of(&st), BLOCK);
  TL_OK(lmpio_file_set_size(b, BLOCK + 100));
  TL_OK(lmpio_file_sync(b));
  TL_OK(lmpio_file_sync(a));
  TL_OK(lmpio_file_read_at(a, BLOCK, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(count_of(&st), 100);
  /* another program cuts it to nothing: the mapped pages are gone (SIGBUS,
   * caught), the read makes its pread and finds the end */
  TL_CHECK(truncate(p, 0) == 0);
  TL_OK(lmpio_file_read_at(a, 0, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(count_of(&st), 0);
  TL_OK(lmpio_file_close(&a));
  TL_OK(lmpio_file_close(&b));
  unlink(p);
  free(p);
}

/* Writes through the mapping (tmpfs by default, anywhere with the hint):
 * what a plain pread sees, the size unchanged, a write past the end
 * extending the file by its pwrite. */
static void writes_case(const char *dir, const char *mode) {
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-filemap-%d-%d", dir, (int)getpid(), tl_rank);
  lmpio_file fh = open_with(MPI_COMM_SELF, p, NULL, mode);
  unsigned char b[4 * BLOCK], got[BLOCK];
  MPI_Status st;
  fill(b, (int)sizeof b, 9);
  TL_OK(lmpio_file_write_at(fh, 0, b, (int)sizeof b, MPI_BYTE, &st));
  for (int i = 0; i < 40; i++) {
    fill(got, BLOCK, 100 + i);
    TL_OK(lmpio_file_write_at(fh, (MPI_Offset)(i % 4) * BLOCK, got, BLOCK, MPI_BYTE, &st));
    TL_EQ(count_of(&st), BLOCK);
  }
  TL_OK(lmpio_file_write_at(fh, 4 * BLOCK, got, 100, MPI_BYTE, &st)); /* extends */
  MPI_Offset size = 0;
  TL_OK(lmpio_file_get_size(fh, &size));
  TL_EQ(size, 4 * BLOCK + 100);
  double writes = tl_stat(fh, "POSIX_WRITES");
  int fd = open(p, O_RDONLY);
  TL_CHECK(fd >= 0);
  for (int k = 0; k < 4; k++) {
    unsigned char want[BLOCK], seen[BLOCK];
    fill(want, BLOCK, 100 + 36 + k);
    TL_EQ(pread(fd, seen, BLOCK, (off_t)k * BLOCK), BLOCK);
    TL_CHECK(memcmp(seen, want, BLOCK) == 0);
  }
  close(fd);
  if (strcmp(mode, "disable") == 0) TL_EQ(writes, 42);
  else TL_CHECK(writes < 20);
  TL_OK(lmpio_file_close(&fh));
  unlink(p);
  free(p);
}

/* A block accessed once or twice goes by system call (the mapping's first
 * touch of a page faults, dearer than a pread), the third access through
 * the mapping, reads and writes alike (on a disk file system the block's
 * first pwrite settled it: filemap.c); the modification time of a file
 * written through the mapping is the close's. */
static void policy_case(const char *dir) {
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-filemap-policy-%d-%d", dir, (int)getpid(), tl_rank);
  lmpio_file fh = open_with(MPI_COMM_SELF, p, NULL, NULL);
  enum { N = 16 };
  unsigned char b[BLOCK], got[BLOCK];
  MPI_Status st;
  fill(b, BLOCK, 13);
  for (int i = 0; i < N; i++) TL_OK(lmpio_file_write_at(fh, (MPI_Offset)i * BLOCK, b, BLOCK, MPI_BYTE, &st));
  TL_EQ(tl_stat(fh, "POSIX_WRITES"), N);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < N; i++) {
      memset(got, 0, BLOCK);
      TL_OK(lmpio_file_read_at(fh, (MPI_Offset)i * BLOCK, got, BLOCK, MPI_BYTE, &st));
      TL_CHECK(memcmp(got, b, BLOCK) == 0);
    }
  TL_EQ(tl_stat(fh, "POSIX_READS"), N); /* the second access of each block; the third mapped */
  struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}}; /* 2001 */
  int fd = open(p, O_RDWR);
  TL_CHECK(fd >= 0 && futimens(fd, old) == 0);
  close(fd);
  fill(b, BLOCK, 14);
  for (int i = 0; i < N; i++) TL_OK(lmpio_file_write_at(fh, (MPI_Offset)i * BLOCK, b, BLOCK, MPI_BYTE, &st));
  TL_EQ(tl_stat(fh, "POSIX_WRITES"), N); /* the fourth access: mapped */
  TL_OK(lmpio_file_close(&fh));
  struct stat after;
  TL_CHECK(stat(p, &after) == 0);
  TL_CHECK(after.st_mtime > 1000000000 + 3600);
  fd = open(p, O_RDONLY);
  for (int i = 0; i < N; i++) {
    TL_EQ(pread(fd, got, BLOCK, (off_t)i * BLOCK), BLOCK);
    TL_CHECK(memcmp(got, b, BLOCK) == 0);
  }
  close(fd);
  unlink(p);
  free(p);
}

/* The file grows under the mapping (another program's write): a read of
 * the new bytes makes its pread, which tells the mapping the file is that
 * long (lmpio__filemap_saw, which skips the mapping's lock when nothing is
 * mapped), so the next read of them goes through the mapping; a read of
 * bytes no system call saw goes on by pread. */
static void test_saw_new_bytes(void) {
  char *p = tl_path("saw");
  char mine[4096];
  snprintf(mine, sizeof mine, "%s.%d", p, tl_rank);
  unsigned char b[BLOCK], got[BLOCK];
  fill(b, BLOCK, 21);
  int fd = open(mine, O_CREAT | O_TRUNC | O_RDWR, 0644);
  TL_CHECK(fd >= 0 && pwrite(fd, b, BLOCK, 0) == BLOCK);
  lmpio_file fh = open_with(MPI_COMM_SELF, mine, "enable", NULL);
  MPI_Status st;
  TL_OK(lmpio_file_read_at(fh, 0, got, BLOCK, MPI_BYTE, &st));
  TL_EQ(tl_stat(fh, "POSIX_READS"), 0); /* mapped, the file one block long */
  fill(b, BLOCK, 22);
  TL_CHECK(pwrite(fd, b, BLOCK, BLOCK) == BLOCK && pwrite(fd, b, BLOCK, 2 * BLOCK) == BLOCK);
  for (int i = 0; i < 3; i++) {
    memset(got, 0, BLOCK);
    TL_OK(lmpio_file_read_at(fh, BLOCK, got, BLOCK, MPI_BYTE, &st));
    TL_CHECK(count_of(&st) == BLOCK && memcmp(got, b, BLOCK) == 0);
  }
  TL_EQ(tl_stat(fh, "POSIX_READS"), 1); /* the first read of the new block only */
  TL_OK(lmpio_file_read_at(fh, 2 * BLOCK, got, BLOCK, MPI_BYTE, &st));
  TL_CHECK(count_of(&st) == BLOCK && memcmp(got, b, BLOCK) == 0);
  TL_EQ(tl_stat(fh, "POSIX_READS"), 2); /* past what the mapping knows */
  TL_OK(lmpio_file_close(&fh));
  close(fd);
  unlink(mine);
  free(p);
}

static const char *test_dir(void) {
  const char *dir = getenv("LMPIO_TEST_DIR");
  return dir && *dir ? dir : "/tmp";
}

static void test_policy(void) {
  if (access("/dev/shm", W_OK) == 0) policy_case("/dev/shm");
  policy_case(test_dir());
}

/* On a disk file system a store through the mapping goes only into settled
 * bytes: below the size seen before a pwrite of the handle that has
 * returned (filemap.c: an extending write of another process zeroes, after
 * the size moved, the stretch up to its first byte).  Here another
 * program made the file; the handle reads a block twice, then writes it
 * twice: on tmpfs both writes go through the mapping, on a disk file
 * system the first makes its pwrite (nothing settled yet) and the second
 * is stored.  (Seen failing: the first stored, before the settling; both
 * by pwrite with mapped writes on tmpfs only.) */
static void settle_case(const char *dir) {
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-filemap-settle-%d-%d", dir, (int)getpid(), tl_rank);
  static unsigned char b[16 * BLOCK];
  fill(b, (int)sizeof b, 21);
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  TL_EQ(pwrite(fd, b, sizeof b, 0), (ssize_t)sizeof b);
  lmpio_file fh = open_with(MPI_COMM_SELF, p, NULL, NULL);
  int in_memory = lmpio__os_in_memory(fh->fd);
  unsigned char got[BLOCK];
  MPI_Status st;
  for (int k = 0; k < 2; k++) TL_OK(lmpio_file_read_at(fh, 3 * BLOCK, got, BLOCK, MPI_BYTE, &st));
  TL_CHECK(memcmp(got, b + 3 * BLOCK, BLOCK) == 0);
  for (int k = 0; k < 2; k++) {
    fill(got, BLOCK, 30 + k);
    TL_OK(lmpio_file_write_at(fh, 3 * BLOCK, got, BLOCK, MPI_BYTE, &st));
    TL_EQ(tl_stat(fh, "POSIX_WRITES"), in_memory ? 0 : 1);
  }
  unsigned char seen[BLOCK];
  TL_EQ(pread(fd, seen, BLOCK, 3 * BLOCK), BLOCK);
  TL_CHECK(memcmp(seen, got, BLOCK) == 0);
  close(fd);
  TL_OK(lmpio_file_close(&fh));
  unlink(p);
  free(p);
}

static void test_settled(void) {
  if (access("/dev/shm", W_OK) == 0) settle_case("/dev/shm");
  settle_case(test_dir());
  int fd = open(test_dir(), O_RDONLY | O_DIRECTORY);
  if (tl_rank == 0 && fd >= 0 && lmpio__os_in_memory(fd)) /* (said, not failed: a setting of the run) */
    printf("# filemap_test: %s is in memory: the disk file system cases ran on tmpfs too\n", test_dir());
  if (fd >= 0) close(fd);
}

static void test_writes(void) {
  if (access("/dev/shm", W_OK) == 0) {
    writes_case("/dev/shm", "automatic");
    writes_case("/dev/shm", "disable");
  }
  writes_case(test_dir(), "enable");
}

/* Each rank's data one run of the file through a view with holes (a
 * subarray of whole rows: scale_bench's twophase at 2 ranks), written and
 * read back again and again by collective calls: after the first write and
 * read of a block, the mapping serves them, not pwrite and pread, and at the
 * end every rank reads what the others wrote last.  Blocks above 256 KiB
 * too, but their writes on a disk file system keep their pwrite (filemap.c).
 * (Seen failing: 10 pwrites and 10 preads a rank at 2 ranks, and at 1 rank
 * for the 1 MiB blocks.) */
static void blocks_case(const char *dir, int len) {
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  char p[4096];
  snprintf(p, sizeof p, "%s/lmpio-filemap-blocks-%d-%d", dir, pid, len);
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, NULL, NULL);
  int in_memory = lmpio__os_in_memory(fh->fd);
  MPI_Datatype run, ft;
  MPI_Type_contiguous(len, MPI_BYTE, &run);
  MPI_Type_create_resized(run, 0, (MPI_Aint)len * tl_size, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * len, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  unsigned char *b = malloc((size_t)len), *got = malloc((size_t)len);
  enum { ROUNDS = 10 };
  MPI_Status st;
  for (int round = 0; round < ROUNDS; round++) {
    fill(b, len, round * tl_size + tl_rank);
    TL_OK(lmpio_file_write_at_all(fh, 0, b, len, MPI_BYTE, &st));
    memset(got, 0, (size_t)len);
    TL_OK(lmpio_file_read_at_all(fh, 0, got, len, MPI_BYTE, &st));
    TL_EQ(count_of(&st), len);
    TL_CHECK(memcmp(got, b, (size_t)len) == 0);
  }
  TL_EQ(tl_stat(fh, "POSIX_READS"), 1);
  TL_EQ(tl_stat(fh, "POSIX_WRITES"), len <= 256 * 1024 || in_memory ? 1 : ROUNDS);
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  for (int r = 0; r < tl_size; r++) {
    fill(b, len, (ROUNDS - 1) * tl_size + r);
    TL_OK(lmpio_file_read_at(fh, (MPI_Offset)r * len, got, len, MPI_BYTE, &st));
    TL_CHECK(memcmp(got, b, (size_t)len) == 0);
  }
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) unlink(p);
  MPI_Type_free(&ft);
  MPI_Type_free(&run);
  free(b);
  free(got);
}

static void test_blocks(void) {
  int shm = access("/dev/shm", W_OK) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &shm, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  for (int len = 128 * 1024; len <= 1024 * 1024; len *= 8) {
    if (shm) blocks_case("/dev/shm", len);
    blocks_case(test_dir(), len);
  }
}

/* Strided calls (64-byte blocks interleaved by rank) through the handle's
 * mapping: after the first call made it, no call maps anything again, and
 * every rank reads what the others wrote, also after the file grew.  Each
 * round writes a new region past the end (by system calls: a mapping never
 * extends the file) and rewrites the region before it (through the
 * mapping on tmpfs; on a disk file system sieved, as the round's sync
 * left nothing settled: filemap.c); rank 0 checks the file's bytes by
 * plain pread.  The sync of
 * each round forgets the mapping: one mmap a round after the first.  (Seen
 * failing with a mapping per window: 14 mmap calls in rounds 1 and 2.) */
enum { SB = 64, SBLOCKS = 24576 }; /* 1.5 MiB a rank and region */
static int maps;
static void *map_counted(void *a, size_t n, int prot, int fl, int fd, off_t o) {
  maps++;
  return lmpio__os_real.mmap(a, n, prot, fl, fd, o);
}

static unsigned char strided_byte(int round, int rank, long i) {
  return (unsigned char)(round * 77 + rank * 31 + i * 7 + 1);
}

static void test_strided_kept(void) {
  char *p = tl_path("strided");
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, "enable", "enable");
  MPI_Datatype c, t;
  MPI_Type_contiguous(SB, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, (MPI_Aint)SB * tl_size, &t);
  MPI_Type_commit(&t);
  long n = (long)SB * SBLOCKS;
  MPI_Offset region = n * tl_size; /* file bytes of one region */
  unsigned char *mine = malloc((size_t)n), *got = malloc((size_t)n), *file = malloc((size_t)region);
  MPI_Status st;
  int other = (tl_rank + 1) % tl_size, maps_later = 0;
  for (int round = 0; round < 3; round++) {
    maps = 0;
    lmpio__os.mmap = map_counted;
    for (int k = round ? round - 1 : 0; k <= round; k++) { /* the region before, then the new one */
      int seed = 10 * round + k;
      for (long i = 0; i < n; i++) mine[i] = strided_byte(seed, tl_rank, i);
      TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * SB, MPI_BYTE, t, "native", MPI_INFO_NULL));
      TL_OK(lmpio_file_write_at_all(fh, (MPI_Offset)k * n, mine, (int)n, MPI_BYTE, &st));
    }
    TL_OK(lmpio_file_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    TL_OK(lmpio_file_sync(fh));
    TL_OK(lmpio_file_set_view(fh, (MPI_Offset)other * SB, MPI_BYTE, t, "native", MPI_INFO_NULL));
    for (int k = round ? round - 1 : 0; k <= round; k++)
      for (int rep = 0; rep < 2; rep++) {
        memset(got, 0, (size_t)n);
        TL_OK(lmpio_file_read_at(fh, (MPI_Offset)k * n, got, (int)n, MPI_BYTE, &st));
        TL_EQ(count_of(&st), (int)n);
        long bad = 0;
        for (long i = 0; i < n; i++) bad += got[i] != strided_byte(10 * round + k, other, i);
        TL_EQ(bad, 0);
      }
    lmpio__os = lmpio__os_real;
    if (round > 0) maps_later += maps;
    if (tl_rank == 0) { /* the file itself */
      int fd = open(p, O_RDONLY);
      TL_CHECK(fd >= 0);
      for (int k = round ? round - 1 : 0; k <= round; k++) {
        TL_EQ(pread(fd, file, (size_t)region, (off_t)(k * region)), (ssize_t)region);
        long bad = 0;
        for (MPI_Offset b = 0; b < region; b++) {
          long blk = (long)(b / SB);
          bad += file[b] != strided_byte(10 * round + k, (int)(blk % tl_size), (blk / tl_size) * SB + (long)(b % SB));
        }
        TL_EQ(bad, 0);
      }
      close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* checked before the next round writes */
  }
  if (tl_size > 1) TL_EQ(maps_later, 2); /* (at 1 rank the view is contiguous: no window, no mapping) */
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  free(mine);
  free(got);
  free(file);
  tl_unlink(p);
}

/* Automatic strided writes (1.5 MiB of 64-byte blocks, one window, the
 * rank's own file, made by another program) store through the handle's
 * mapping: at once on tmpfs; on a disk file system the first call sieves
 * (nothing is settled yet: filemap.c), and its pwrite settles the file for
 * the next, which stores.  (Seen failing: the first call stored, before
 * the settling; every call sieved with mapped writes on tmpfs only.) */
static void auto_strided_case(const char *dir) {
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-filemap-auto-%d-%d", dir, (int)getpid(), tl_rank);
  long n = (long)SB * SBLOCKS;
  unsigned char *mine = malloc((size_t)n), *file = malloc((size_t)(2 * n));
  memset(file, 0, (size_t)(2 * n));
  int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  TL_EQ(pwrite(fd, file, (size_t)(2 * n), 0), (ssize_t)(2 * n));
  close(fd);
  lmpio_file fh = open_with(MPI_COMM_SELF, p, NULL, NULL);
  int in_memory = lmpio__os_in_memory(fh->fd);
  MPI_Datatype c, t;
  MPI_Type_contiguous(SB, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 2 * SB, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  MPI_Status st;
  double first = 0;
  for (int round = 0; round < 2; round++) {
    for (long i = 0; i < n; i++) mine[i] = strided_byte(round, tl_rank, i);
    TL_OK(lmpio_file_write_at(fh, 0, mine, (int)n, MPI_BYTE, &st));
    TL_EQ(count_of(&st), (int)n);
    if (round == 0) first = tl_stat(fh, "POSIX_WRITES"); /* the first call's sieved windows, on disk */
  }
  TL_EQ(first > 0, !in_memory);
  TL_EQ(tl_stat(fh, "POSIX_WRITES"), first); /* the second call: stored */
  fd = open(p, O_RDONLY);
  TL_EQ(pread(fd, file, (size_t)(2 * n), 0), (ssize_t)(2 * n));
  close(fd);
  long bad = 0;
  for (long i = 0; i < n; i++) bad += file[i / SB * 2 * SB + i % SB] != strided_byte(1, tl_rank, i);
  TL_EQ(bad, 0);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  unlink(p);
  free(p);
  free(mine);
  free(file);
}

static void test_auto_strided_writes(void) {
  if (access("/dev/shm", W_OK) == 0) auto_strided_case("/dev/shm");
  auto_strided_case(test_dir());
}

/* Every rank's stores into one window begin at its own place in the window
 * and wrap around (engine.c store_window): a filetype of blocks of several
 * lengths, each tile one block of each length from every rank in turn, so
 * a window holds many vectors; and one of 8-byte blocks (one vector: a
 * rank's place falls inside it);
 * 1.5 MiB a rank, two rounds (the file is new: the first is sieved, and
 * settles the file on a disk file system; the second is stored).  Every
 * byte of the file is checked. */
static const int mixed_len[] = {1, 3, 8, 13, 64, 100, 5, 7, 40, 2}, eight[] = {8};
enum { NMIXED = sizeof mixed_len / sizeof mixed_len[0] };

static unsigned char mixed_byte(int round, int rank, long i) {
  return (unsigned char)(round * 53 + rank * 101 + i % 251 + 1);
}

static void rotated_case(const char *dir, const int *len, int nlen) {
  char *p = malloc(4096);
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(p, 4096, "%s/lmpio-filemap-rotated-%d", dir, pid);
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, NULL, "enable");
  int lens[NMIXED];
  MPI_Aint disp[NMIXED], tile = 0;
  long per_tile = 0;
  for (int i = 0; i < nlen; i++) {
    lens[i] = len[i];
    disp[i] = tile + (MPI_Aint)tl_rank * len[i];
    tile += (MPI_Aint)len[i] * tl_size;
    per_tile += len[i];
  }
  MPI_Datatype h, t;
  MPI_Type_create_hindexed(nlen, lens, disp, MPI_BYTE, &h);
  MPI_Type_create_resized(h, 0, tile, &t);
  MPI_Type_commit(&t);
  long tiles = (3L << 19) / per_tile, n = tiles * per_tile;
  MPI_Offset span = (MPI_Offset)tiles * tile;
  unsigned char *mine = malloc((size_t)n), *file = malloc((size_t)span);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  MPI_Status st;
  double before = 0;
  for (int round = 0; round < 2; round++) {
    for (long i = 0; i < n; i++) mine[i] = mixed_byte(round, tl_rank, i);
    before = tl_stat(fh, "POSIX_WRITES");
    TL_OK(lmpio_file_write_at_all(fh, 0, mine, (int)n, MPI_BYTE, &st));
    TL_EQ(count_of(&st), (int)n);
  }
  /* The second round went through the mapping; ranks on several nodes
   * (LMPIO_TEST_NODES) write through aggregators instead. */
  if (tl_size > 1 && fh->one_node) TL_EQ(tl_stat(fh, "POSIX_WRITES"), before);
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    int fd = open(p, O_RDONLY);
    TL_EQ(pread(fd, file, (size_t)span, 0), (ssize_t)span);
    close(fd);
    long bad = 0, at = 0;
    for (long k = 0; k < tiles; k++)
      for (int i = 0, before_i = 0; i < nlen; before_i += len[i++])
        for (int r = 0; r < tl_size; r++)
          for (int b = 0; b < len[i]; b++)
            bad += file[at++] != mixed_byte(1, r, k * per_tile + before_i + b);
    TL_EQ(bad, 0);
  }
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&t);
  MPI_Type_free(&h);
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) unlink(p);
  free(p);
  free(mine);
  free(file);
}

static void test_rotated_stores(void) {
  if (access("/dev/shm", W_OK) == 0) {
    rotated_case("/dev/shm", mixed_len, NMIXED);
    rotated_case("/dev/shm", eight, 1);
  }
  rotated_case(test_dir(), mixed_len, NMIXED);
  rotated_case(test_dir(), eight, 1);
}

/* Every rank writes its 16 bytes of a file truncated to nothing, three
 * times, over and over: none is lost.  Each first write extends the file;
 * the later ones are stored through the mapping (settled by the first).
 * Before the settling, a store (the page's third access, the file's size
 * covering it) could land in the stretch that another rank's extending
 * write was about to zero: at 8 ranks on ext4 this case failed 9 runs of
 * 10 (none of 10 at 2 ranks). */
static void test_extending_writes(void) {
  char *p = tl_path("extend");
  lmpio_file fh = open_with(MPI_COMM_WORLD, p, NULL, NULL);
  int *all = malloc(16 * (size_t)tl_size);
  for (int it = 0; it < 400 && !tl_case_failed; it++) {
    TL_OK(lmpio_file_set_size(fh, 0));
    int v[4];
    for (int k = 2; k >= 0; k--) { /* the last values are the ones checked */
      for (int j = 0; j < 4; j++) v[j] = it * 100000 + tl_rank * 16 + j + k * 1000;
      TL_OK(lmpio_file_write_at(fh, 16 * (MPI_Offset)tl_rank, v, 4, MPI_INT, MPI_STATUS_IGNORE));
    }
    TL_OK(lmpio_file_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    TL_OK(lmpio_file_sync(fh));
    TL_OK(lmpio_file_read_at(fh, 0, all, 4 * tl_size, MPI_INT, MPI_STATUS_IGNORE));
    for (int q = 0; q < tl_size; q++)
      for (int j = 0; j < 4; j++) TL_EQ(all[4 * q + j], it * 100000 + q * 16 + j);
  }
  TL_CHECK(tl_stat(fh, "POSIX_WRITES") < 2 * 400); /* the later writes stored */
  free(all);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(p);
}

/* The file grows under the handle's mapping (another program's writes):
 * a strided read of the new bytes uses the mapping it has while they lie
 * inside it, and maps the file again, once, when they lie past it. */
static void grow_and_read(int fd, lmpio_file fh, MPI_Offset at, long n, unsigned char seed, unsigned char *b) {
  for (long i = 0; i < 2 * n; i++) b[i] = (unsigned char)(seed + i / SB % 2 * 100);
  TL_EQ(pwrite(fd, b, (size_t)(2 * n), (off_t)at), (ssize_t)(2 * n));
  memset(b, 0, (size_t)n);
  MPI_Status st;
  TL_OK(lmpio_file_read_at(fh, at / 2, b, (int)n, MPI_BYTE, &st));
  TL_EQ(count_of(&st), (int)n);
  long bad = 0;
  for (long i = 0; i < n; i++) bad += b[i] != seed;
  TL_EQ(bad, 0);
}

static void test_strided_growth(void) {
  char *p = own_path("grow");
  lmpio_file fh = open_with(MPI_COMM_SELF, p, "enable", NULL);
  MPI_Datatype c, t;
  MPI_Type_contiguous(SB, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 2 * SB, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  long n = 1 << 20; /* data bytes a read; 2 MiB of file */
  unsigned char *b = malloc((size_t)(2 * n));
  int fd = open(p, O_RDWR);
  TL_CHECK(fd >= 0);
  grow_and_read(fd, fh, 0, n, 3, b); /* the mapping made: 16 MiB */
  maps = 0;
  lmpio__os.mmap = map_counted;
  grow_and_read(fd, fh, 2 * n, n, 4, b); /* inside it */
  TL_EQ(maps, 0);
  grow_and_read(fd, fh, (MPI_Offset)18 << 20, n, 5, b); /* past it */
  TL_EQ(maps, 1);
  grow_and_read(fd, fh, (MPI_Offset)22 << 20, n, 6, b); /* inside the new one */
  TL_EQ(maps, 1);
  lmpio__os = lmpio__os_real;
  close(fd);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  free(b);
  unlink(p);
  free(p);
}

/* A large strided collective write in the background (the collective
 * lane, which a blocking independent call does not wait for; through the
 * handle's mapping, under the shared lock of its window) while the caller
 * makes a small independent one over the same bytes (sieved: the exclusive
 * lock, then a pread, which tells the mapping what it saw).  Neither may wait for the lock while
 * holding the mapping the other needs: each pair must finish, and the file
 * hold one of the two writes' bytes in every block.  (Seen hanging when the
 * window's lock was taken with the mapping held.) */
enum { AB = 64, ABLOCKS = 24576, ASMALL = 256, APAIRS = 300 };
static int threads;
static void test_async_beside_sieve(void) {
  if (!threads) {
    if (tl_rank == 0) printf("# skip: MPI_THREAD_MULTIPLE not provided, no background jobs\n");
    return;
  }
  char *p = own_path("asyncsieve");
  lmpio_file fh = open_with(MPI_COMM_SELF, p, NULL, NULL); /* automatic: the large one mapped, the small sieved */
  MPI_Datatype c, t;
  MPI_Type_contiguous(AB, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 2 * AB, &t);
  MPI_Type_commit(&t);
  long n = (long)AB * ABLOCKS;
  unsigned char *big = malloc((size_t)n), *small = malloc((size_t)AB * ASMALL), *file = malloc((size_t)(2 * n));
  memset(file, 1, (size_t)(2 * n));
  MPI_Status st;
  TL_OK(lmpio_file_write_at(fh, 0, file, (int)(2 * n), MPI_BYTE, &st));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  for (int i = 0; i < APAIRS; i++) {
    memset(big, 2 + i % 50, (size_t)n);
    memset(small, 100 + i % 50, (size_t)AB * ASMALL);
    MPI_Request rq;
    TL_OK(lmpio_file_iwrite_at_all(fh, 0, big, (int)n, MPI_BYTE, &rq));
    TL_OK(lmpio_file_write_at(fh, 0, small, AB * ASMALL, MPI_BYTE, &st));
    TL_EQ(MPI_Wait(&rq, &st), MPI_SUCCESS);
  }
  TL_OK(lmpio_file_close(&fh));
  int fd = open(p, O_RDONLY);
  TL_EQ(pread(fd, file, (size_t)(2 * n), 0), (ssize_t)(2 * n));
  close(fd);
  unsigned char last_big = (unsigned char)(2 + (APAIRS - 1) % 50), last_small = (unsigned char)(100 + (APAIRS - 1) % 50);
  long bad = 0;
  for (long b = 0; b < 2 * n; b++) {
    long blk = b / AB;
    unsigned char want = blk % 2 ? 1 : blk / 2 < ASMALL ? 0 : last_big;
    bad += want ? file[b] != want : file[b] != last_big && file[b] != last_small;
  }
  TL_EQ(bad, 0);
  MPI_Type_free(&t);
  MPI_Type_free(&c);
  free(big);
  free(small);
  free(file);
  unlink(p);
  free(p);
}

/* Injected: mmap fails, or the mapping raises SIGBUS (here: a mapping of an
 * empty file instead of the file): every access still does what it must,
 * through its system call. */
static int empty_fd = -1;
static void *map_fails(void *a, size_t n, int prot, int fl, int fd, off_t o) {
  (void)a, (void)n, (void)prot, (void)fl, (void)fd, (void)o;
  errno = ENOMEM;
  return MAP_FAILED;
}
static void *map_empty(void *a, size_t n, int prot, int fl, int fd, off_t o) {
  (void)fd;
  return lmpio__os_real.mmap(a, n, prot, fl, empty_fd, o);
}

static int fstat_fails(int fd, struct stat *st) {
  (void)fd, (void)st;
  errno = EIO;
  return -1;
}

static void injected_case(void *(*mm)(void *, size_t, int, int, int, off_t), int (*fs)(int, struct stat *),
                          const char *dir) {
  char *p = malloc(4096);
  snprintf(p, 4096, "%s/lmpio-filemap-inj-%d-%d", dir, (int)getpid(), tl_rank);
  lmpio_file fh = open_with(MPI_COMM_SELF, p, "enable", "enable");
  unsigned char b[4 * BLOCK], got[BLOCK];
  MPI_Status st;
  fill(b, (int)sizeof b, 11);
  TL_OK(lmpio_file_write_at(fh, 0, b, (int)sizeof b, MPI_BYTE, &st));
  if (mm) lmpio__os.mmap = mm;
  if (fs) lmpio__os.fstat = fs;
  for (int i = 0; i < 20; i++) {
    memset(got, 0, BLOCK);
    TL_OK(lmpio_file_read_at(fh, (MPI_Offset)(i % 4) * BLOCK, got, BLOCK, MPI_BYTE, &st));
    TL_EQ(count_of(&st), BLOCK);
    TL_CHECK(memcmp(got, b + (i % 4) * BLOCK, BLOCK) == 0);
  }
  fill(got, BLOCK, 12);
  TL_OK(lmpio_file_write_at(fh, BLOCK, got, BLOCK, MPI_BYTE, &st));
  lmpio__os = lmpio__os_real;
  unsigned char seen[BLOCK];
  int fd = open(p, O_RDONLY);
  TL_EQ(pread(fd, seen, BLOCK, BLOCK), BLOCK);
  TL_CHECK(memcmp(seen, got, BLOCK) == 0);
  close(fd);
  TL_OK(lmpio_file_close(&fh));
  unlink(p);
  free(p);
}

static void test_injected(void) {
  const char *dir = test_dir();
  char e[4096];
  snprintf(e, sizeof e, "%s/lmpio-filemap-empty-%d-%d", dir, (int)getpid(), tl_rank);
  empty_fd = open(e, O_RDWR | O_CREAT | O_TRUNC, 0600);
  TL_CHECK(empty_fd >= 0);
  injected_case(map_fails, NULL, dir);
  injected_case(map_empty, NULL, dir);
  injected_case(NULL, fstat_fails, dir);
  close(empty_fd);
  unlink(e);
}

int main(int argc, char **argv) {
  int provided = 0; /* threads: background jobs run on the handle's workers */
  (void)tl_init;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &tl_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &tl_size);
  threads = provided == MPI_THREAD_MULTIPLE;
  tl_run("small reads through the mapping see every rank's writes", test_reads_see_other_ranks);
  tl_run("a mapped read stops at the end of the file, also after set_size cut it", test_end_and_set_size);
  tl_run("another handle's set_size or a truncate is seen after sync", test_other_handle_cuts);
  tl_run("writes through the mapping reach the file and never extend it", test_writes);
  tl_run("a block's third access goes through the mapping, not its first two; close sets the mtime", test_policy);
  tl_run("each rank's block of a view with holes, written and read again: through the mapping", test_blocks);
  tl_run("strided calls keep the handle's mapping and see every rank's writes", test_strided_kept);
  tl_run("stores through the mapping into settled bytes only (disk file systems)", test_settled);
  tl_run("automatic strided writes store through the mapping once the file is settled", test_auto_strided_writes);
  tl_run("ranks' stores into one window begin at different places: every byte lands right", test_rotated_stores);
  tl_run("ranks' small writes to a file they extend together: none lost", test_extending_writes);
  tl_run("the file grows under the mapping: strided reads of the new bytes", test_strided_growth);
  tl_run("the file grows under the mapping: a pread of the new bytes lets the next reads map them", test_saw_new_bytes);
  tl_run("a background strided write beside a sieved one over the same bytes: no deadlock", test_async_beside_sieve);
  tl_run("mmap or fstat failing, or a mapping raising SIGBUS: the system call instead", test_injected);
  return tl_finish();
}
