/* Small contiguous accesses of local files through one mapping of the file.
 *
 * A 4 KiB pread costs about 0.2 us, nearly all of it the system call; the
 * same copy from a mapping whose pages are in place costs 0.02 us.  On a
 * local file system the page cache is the file, so a mapping sees every
 * rank's writes as pread would.  The handle keeps one shared mapping of the
 * whole file, made for the first access that uses it (below) and reaching
 * past the end of the file, so that it seldom has to be made again as the
 * file grows.
 *
 * Only bytes known to be in the file are copied: the size at the mapping,
 * raised by what this rank's own system calls read or wrote since.  A page
 * wholly past the end of the file raises SIGBUS, which the guard turns into
 * "use the system call" (and the mapping is dropped).  The file shrinks only
 * by set_size (collective), another handle or another program: set_size and
 * sync forget the mapping, which is what MPI's consistency rules ask of a
 * program that accesses a file through more than one handle.
 *
 * On a disk file system a write also needs its bytes to be settled.  A
 * write that extends the file zeroes the stretch between the old end and
 * its own first byte after the new size is visible (ext4, Linux 6.18): a
 * store made there through a mapping meanwhile is lost, though the size
 * already covered it (exchange_test at 8 ranks lost a rank's 16 bytes in 13
 * runs of 100; plain mmap and pwrite in a stand-alone program, 8 processes
 * each writing 16 bytes of a file they extend together: 800-1800 wrong ints
 * in 3000 rounds).  That zeroing is done under the inode's lock, which every
 * write system call takes.  So when a pwrite of this handle returns, every
 * size seen before it began is settled (the write that made that size has
 * finished), and so are the bytes it wrote (an extending write after it
 * starts at or past them): with stores kept below that, the same program
 * saw no wrong int in 37000 stores.  tmpfs zeroes nothing after the size
 * moves: there the size is the bound.
 *
 * The mapping is not always cheaper: the first touch of a page through it
 * faults (1-2 us for a read, 16 pages at a time; ~5 us for the first write
 * to a page after ext4 wrote it back), so a file read or rewritten once,
 * 4 KiB by 4 KiB, goes faster by pread/pwrite (IOR's 4 KiB reads at 2 ranks:
 * 4000 MiB/s mapped, 5600 by pread; timing both ways and choosing the
 * cheaper flipped between them and made 5000).  So only data accessed again
 * goes through the mapping: a table of the pages whose accesses began there
 * lately, and the third access beginning on a page (read or write) is
 * mapped.  Writes never extend the file this way, and do not update its
 * modification time: sync and close do, when the mapping was written.  The
 * hints' "enable" maps every small access.
 */
#include "path.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Writes on a disk file system up to this size go through the mapping: a
 * page written back since its last store faults again (~5 us a page), so a
 * larger rewrite could cost more than its pwrite.  Reads, and writes on
 * tmpfs, go at any size within a file of up to HOLD_MAX bytes: pread and
 * pwrite walk the page cache page by page, and writers take turns on the
 * inode's lock, while the mapping's pages, once touched, stay in place
 * (2 processes each rewriting and reading back their own block of a tmpfs
 * file, us a step, system calls against the mapping: 128 KiB 11.3 -> 5.2,
 * 1 MiB 186 -> 87, 4 MiB 1029 -> 621; ext4, 1 MiB: 101 -> 71). */
#define SMALL_MAX (256 * 1024)
/* (the page tables of what was touched stay until the mapping goes: 8
 * bytes a page) */
#define HOLD_MAX ((MPI_Offset)1 << 32)
/* The mapping reaches at least this far, and twice the file's size. */
#define MAP_MIN ((MPI_Offset)1 << 24)
/* Pages remembered (a power of two), and the access on a page that is mapped. */
#define SEEN 512
#define SEEN_MAPPED 3

struct lmpio__filemap {
  pthread_mutex_t busy; /* held while the mapping is used or changed (by the caller's thread or the worker) */
  int fd, writable;
  char *base;         /* the mapping, or NULL */
  size_t len;
  MPI_Offset known;   /* bytes [0, known) are in the file (when base is set) */
  MPI_Offset settled; /* a disk file system's stores stay in [0, settled) (above) */
  unsigned gen;       /* counts forgets: a size seen before one is void */
  int in_memory;      /* tmpfs or ramfs: no settling needed */
  int failed;         /* the file cannot be mapped: never again */
  int wrote;          /* written through since the last modification-time stamp */
  /* A size a system call saw up to this changes nothing (base ? known :
   * the largest offset), for lmpio__filemap_saw to look at without the
   * lock: it moves with base and known (note), and a saw it skips on a
   * stale value only leaves known lower, which is always safe. */
  MPI_Offset quiet;
  /* Pages accesses began on, lately: counted without the lock (relaxed
   * atomics), as threads racing on an entry only miscount, which moves an
   * access between the mapping and the system call, both right. */
  struct { MPI_Offset page; unsigned count; } seen[SEEN];
};

/* base or known changed (with the lock held). */
static void note(lmpio__filemap *m) {
  __atomic_store_n(&m->quiet, m->base ? m->known : INT64_MAX, __ATOMIC_RELAXED);
}

lmpio__filemap *lmpio__filemap_new(int fd, int writable, int in_memory) {
  lmpio__filemap *m = calloc(1, sizeof *m);
  if (!m) return NULL; /* (then every access makes its system call) */
  /* Adaptive: a brief spin, then the kernel (a window copy can be long, and
   * a thread spinning for it keeps a processor from the holder). */
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  int bad = pthread_mutex_init(&m->busy, &a);
  pthread_mutexattr_destroy(&a);
  if (bad) {
    free(m);
    return NULL;
  }
  m->fd = fd;
  m->writable = writable;
  m->in_memory = in_memory;
  m->quiet = INT64_MAX;
  for (int i = 0; i < SEEN; i++) m->seen[i].page = -1;
  return m;
}

static void take(lmpio__filemap *m) { pthread_mutex_lock(&m->busy); }

static void give(lmpio__filemap *m) { pthread_mutex_unlock(&m->busy); }

static void unmap(lmpio__filemap *m) {
  lmpio__os_munmap(m->base, m->len);
  m->base = NULL;
  m->len = 0;
  m->known = 0;
  note(m);
}

void lmpio__filemap_forget(lmpio__filemap *m) {
  if (!m) return;
  take(m);
  unmap(m);
  m->settled = 0; /* (the file may have been cut: stores wait for a pwrite again) */
  m->gen++;
  give(m);
}

/* How far this access may go through the mapping (base set). */
static MPI_Offset bound(const lmpio__filemap *m, int dir) {
  if (dir == LMPIO__READ || m->in_memory || m->settled >= m->known) return m->known;
  return m->settled;
}

void lmpio__filemap_free(lmpio__filemap *m) {
  if (!m) return;
  unmap(m);
  pthread_mutex_destroy(&m->busy);
  free(m);
}

/* Maps the file, reaching well past its end: 0 when it cannot. */
static int map(lmpio__filemap *m) {
  MPI_Offset size;
  if (lmpio__os_size(m->fd, &size) < 0) return 0;
  MPI_Offset want = MAP_MIN;
  while (want < 2 * size && want < ((MPI_Offset)1 << 46)) want *= 2;
  if (want < size || (MPI_Offset)(size_t)want != want) return 0;
  m->base = lmpio__os_map_file(m->fd, (size_t)want, m->writable);
  if (!m->base) {
    m->failed = 1;
    return 0;
  }
  m->len = (size_t)want;
  m->known = size;
  note(m);
  return 1;
}

typedef struct {
  char *mem, *file;
  size_t n;
  int dir;
} copy_args;

static void copy_run(void *arg) {
  const copy_args *c = arg;
  if (c->dir == LMPIO__WRITE) memcpy(c->file, c->mem, c->n);
  else memcpy(c->mem, c->file, c->n);
}

/* Counts an access beginning at off: whether it is at least the
 * SEEN_MAPPED-th on its page lately. */
static int again(lmpio__filemap *m, MPI_Offset off) {
  MPI_Offset page = off >> 12;
  unsigned i = (unsigned)(((unsigned long long)page * 0x9E3779B97F4A7C15ULL) >> 55) & (SEEN - 1);
  unsigned count = 0;
  if (__atomic_load_n(&m->seen[i].page, __ATOMIC_RELAXED) != page)
    __atomic_store_n(&m->seen[i].page, page, __ATOMIC_RELAXED);
  else
    count = __atomic_load_n(&m->seen[i].count, __ATOMIC_RELAXED);
  if (count < SEEN_MAPPED) __atomic_store_n(&m->seen[i].count, ++count, __ATOMIC_RELAXED);
  return count >= SEEN_MAPPED;
}

int lmpio__filemap_copy(lmpio__filemap *m, int dir, int mode, void *mem, MPI_Offset len, MPI_Offset off) {
  if (!m || len <= 0 || off < 0 || off > INT64_MAX - len) return 0;
  int write = dir == LMPIO__WRITE;
  /* (an access that makes its system call still counts: a block written by
   * pwrite and read twice is read through the mapping the second time) */
  int hot = again(m, off);
  if (!hot && mode != LMPIO__HINT_ENABLE) return 0;
  /* A program that replaced the system call (a test failing it on purpose)
   * wants every access to make it. */
  int use = mode != LMPIO__HINT_DISABLE && (!write || m->writable) &&
            (write ? lmpio__os.pwrite == lmpio__os_real.pwrite : lmpio__os.pread == lmpio__os_real.pread) &&
            (len <= SMALL_MAX || ((!write || m->in_memory) && off + len <= HOLD_MAX));
  if (!use) return 0; /* (the lock only for the mapping) */
  int done = 0;
  take(m);
  if ((m->base || (!m->failed && map(m))) && off + len <= bound(m, dir)) {
    copy_args c = {mem, m->base + off, (size_t)len, dir};
    done = lmpio__os_guarded(copy_run, &c) == 0;
    if (!done) { /* cut short under the mapping, or an I/O error: the system calls tell which, from now on */
      unmap(m);
      m->failed = 1;
    }
    m->wrote |= done && write;
  }
  give(m);
  return done;
}

/* The windows of large strided accesses use the mapping too, from their
 * first access: its pages stay mapped from call to call, so a region read
 * or written again costs no page-table work (a mapping per window, made and
 * unmade each call, paid for it every time: 64-byte blocks at 2 ranks on
 * tmpfs, 3.0 GB/s a rank against 6.7 from the kept mapping, 5.1 for one
 * pread of the rank's bytes).  Even first touches are no dearer than
 * MAP_POPULATE of each window (3.2 against 3.0 GB/s).  The page tables of
 * what was touched stay until the mapping goes (8 bytes a page): files
 * larger than HOLD_MAX keep to a mapping per window. */

char *lmpio__filemap_hold(lmpio__filemap *m, int dir, MPI_Offset lo, MPI_Offset hi, MPI_Offset size) {
  if (!m || lo < 0 || hi <= lo || hi > size || size > HOLD_MAX || (dir == LMPIO__WRITE && !m->writable) ||
      !lmpio__os_guard_ready())
    return NULL;
  take(m);
  if (m->base && size > m->known) {
    m->known = size;
    note(m);
    if ((size_t)size > m->len) unmap(m); /* made again, larger, below */
  }
  if ((m->base || (!m->failed && map(m))) && hi <= bound(m, dir)) return m->base + lo;
  give(m);
  return NULL;
}

int lmpio__filemap_serves(lmpio__filemap *m, MPI_Offset size) {
  if (!m || size > HOLD_MAX) return 0;
  take(m);
  int failed = m->failed;
  give(m);
  return !failed;
}

void lmpio__filemap_release(lmpio__filemap *m, int dir, int ok) {
  if (!ok) { /* cut short under the mapping, or an I/O error: no more mapped accesses */
    unmap(m);
    m->failed = 1;
  }
  m->wrote |= ok && dir == LMPIO__WRITE;
  give(m);
}

void lmpio__filemap_stamp(lmpio__filemap *m) {
  if (!m) return;
  take(m);
  int wrote = m->wrote;
  m->wrote = 0;
  give(m);
  if (wrote) lmpio__os_touch(m->fd);
}

MPI_Offset lmpio__filemap_seen(lmpio__filemap *m, unsigned *gen) {
  if (!m || m->in_memory) return 0; /* (nothing to settle: no lock round before each pwrite) */
  take(m);
  MPI_Offset seen = m->base ? m->known : 0;
  *gen = m->gen;
  give(m);
  return seen;
}


int lmpio__filemap_may_store(lmpio__filemap *m, MPI_Offset end) {
  if (!m) return 0;
  take(m);
  int ok = m->in_memory || end <= m->settled;
  give(m);
  return ok;
}

static void saw(lmpio__filemap *m, MPI_Offset end) {
  if (m->base && end > m->known) {
    m->known = end;
    note(m);
    if ((size_t)end > m->len) unmap(m); /* made again, larger, at the next access */
  }
}

void lmpio__filemap_saw(lmpio__filemap *m, MPI_Offset end) {
  if (!m || end <= __atomic_load_n(&m->quiet, __ATOMIC_RELAXED)) return;
  take(m);
  saw(m, end);
  give(m);
}

void lmpio__filemap_wrote(lmpio__filemap *m, unsigned gen, MPI_Offset seen, MPI_Offset end) {
  /* (in memory nothing is settled: only what saw does, skipped as there) */
  if (!m || (m->in_memory && end <= __atomic_load_n(&m->quiet, __ATOMIC_RELAXED))) return;
  take(m);
  saw(m, end);
  MPI_Offset now = seen > end ? seen : end;
  if (gen == m->gen && now > m->settled) m->settled = now;
  give(m);
}
