/* Small contiguous accesses of local files through one mapping of the file.
 *
 * A 4 KiB pread costs about 0.2 us, nearly all of it the system call; the
 * same copy from a mapping whose pages are in place costs 0.02 us.  On a
 * local file system the page cache is the file, so a mapping sees every
 * rank's writes as pread would.  The handle keeps one shared mapping of the
 * whole file, made at the handle's eighth small access (a file read once
 * does not pay the 5-10 us it costs) and reaching past the end of the file,
 * so that it seldom has to be made again as the file grows.
 *
 * Only bytes known to be in the file are copied: the size at the mapping,
 * raised by what this rank's own system calls read or wrote since.  A page
 * wholly past the end of the file raises SIGBUS, which the guard turns into
 * "use the system call" (and the mapping is dropped).  The file shrinks only
 * by set_size (collective), another handle or another program: set_size and
 * sync forget the mapping, which is what MPI's consistency rules ask of a
 * program that accesses a file through more than one handle.
 *
 * Writes go through the mapping too, never extending the file.  Where the
 * kernel writes pages back (ext4, xfs...), the first write to a page after
 * its write-back faults, for about 5 us against a 1.5 us pwrite (ext4 here):
 * cheap for pages written again and again, three times a pwrite for a file
 * rewritten once.  So there one mapped write in 8 is timed, and when two of
 * 8 timed ones took a fault the next 4096 writes make their pwrite before
 * the mapping is tried again (tmpfs never faults that way: no timing).  A
 * mapped write does not update the file's modification time; sync and close
 * do, when the mapping was written. */
#include "internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Accesses up to this size go through the mapping: above it the copy, not
 * the system call, is the cost. */
#define SMALL_MAX (256 * 1024)
/* Small accesses seen before the mapping is made (hint "enable": at once). */
#define MAP_AFTER 8
/* The mapping reaches at least this far, and twice the file's size. */
#define MAP_MIN ((MPI_Offset)1 << 24)
/* Writes with write-back: one in SAMPLE is timed; a timed one over SLOW_NS
 * (lmpio__filemap_slow_ns) took a fault; SLOW of WINDOW timed ones: PAUSE
 * writes by pwrite. */
#define SAMPLE 8
#define WINDOW 8
#define SLOW 2
#define PAUSE 4096

long long lmpio__filemap_slow_ns = 2000;

struct lmpio__filemap {
  atomic_flag busy;   /* held while the mapping is used or changed */
  int fd, writable;
  int in_memory;      /* tmpfs and the like: writes through the mapping too */
  char *base;         /* the mapping, or NULL */
  size_t len;
  MPI_Offset known;   /* bytes [0, known) are in the file (when base is set) */
  unsigned uses;      /* small accesses before the mapping was made */
  int failed;         /* the file cannot be mapped: never again */
  int wrote;          /* written through since the last modification-time stamp */
  unsigned writes, timed, slow, pause; /* the write-back policy (above) */
};

lmpio__filemap *lmpio__filemap_new(int fd, int writable, int in_memory) {
  lmpio__filemap *m = calloc(1, sizeof *m);
  if (!m) return NULL; /* (then every access makes its system call) */
  atomic_flag_clear(&m->busy);
  m->fd = fd;
  m->writable = writable;
  m->in_memory = in_memory;
  return m;
}

static void take(lmpio__filemap *m) {
  while (atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire)) sched_yield();
}

static void give(lmpio__filemap *m) {
  atomic_flag_clear_explicit(&m->busy, memory_order_release);
}

static void unmap(lmpio__filemap *m) {
  lmpio__os_munmap(m->base, m->len);
  m->base = NULL;
  m->len = 0;
  m->known = 0;
}

void lmpio__filemap_forget(lmpio__filemap *m) {
  if (!m) return;
  take(m);
  unmap(m);
  give(m);
}

void lmpio__filemap_free(lmpio__filemap *m) {
  if (!m) return;
  unmap(m);
  free(m);
}

/* Maps the file, reaching past end (bytes that must be inside the file for
 * the access at hand to use the mapping): 0 when it cannot. */
static int map(lmpio__filemap *m, MPI_Offset end) {
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
  return end <= size;
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

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A mapped write under the write-back policy took dt ns (timed ones only). */
static void timed_write(lmpio__filemap *m, long long dt) {
  m->slow += dt > lmpio__filemap_slow_ns;
  if (++m->timed < WINDOW && m->slow < SLOW) return;
  if (m->slow >= SLOW) m->pause = PAUSE;
  m->timed = m->slow = 0;
}

int lmpio__filemap_copy(lmpio__filemap *m, int dir, int mode, void *mem, MPI_Offset len, MPI_Offset off) {
  if (!m || len <= 0 || len > SMALL_MAX || off < 0 || off > INT64_MAX - len || mode == LMPIO__HINT_DISABLE)
    return 0;
  int write = dir == LMPIO__WRITE;
  if (write && !m->writable) return 0;
  take(m);
  int done = 0, policy = write && !m->in_memory && mode != LMPIO__HINT_ENABLE;
  if (policy && m->pause > 0) {
    m->pause--;
  } else if (m->base || (!m->failed && (mode == LMPIO__HINT_ENABLE || ++m->uses >= MAP_AFTER))) {
    if (off + len <= m->known || (!m->base && map(m, off + len))) {
      copy_args c = {mem, m->base + off, (size_t)len, dir};
      long long t0 = policy && ++m->writes % SAMPLE == 0 ? now_ns() : 0;
      done = lmpio__os_guarded(copy_run, &c) == 0;
      if (!done) { /* cut short under the mapping, or an I/O error: the system calls tell which, from now on */
        unmap(m);
        m->failed = 1;
      } else if (t0) {
        timed_write(m, now_ns() - t0);
      }
      m->wrote |= done && write;
    }
  }
  give(m);
  return done;
}

void lmpio__filemap_stamp(lmpio__filemap *m) {
  if (!m) return;
  take(m);
  int wrote = m->wrote;
  m->wrote = 0;
  give(m);
  if (wrote) lmpio__os_touch(m->fd);
}

void lmpio__filemap_saw(lmpio__filemap *m, MPI_Offset end) {
  if (!m) return;
  take(m);
  if (m->base && end > m->known) {
    m->known = end;
    if ((size_t)end > m->len) unmap(m); /* made again, larger, at the next access */
  }
  give(m);
}
