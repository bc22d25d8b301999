/* The shared file pointer's store (entries: shared.c), and the runs of
 * the calls that move it: write_shared / read_shared and the ordered
 * collectives (their positions, the pointer moved once, the transfer).
 *
 * The pointer, in etypes of the current view, is split in two:
 *
 *     pointer = base + delta
 *
 * `base` lives in every rank's handle and only collective calls change it,
 * by amounts every rank knows, so it is the same on every rank.  `delta` is
 * what independent calls (write_shared, read_shared) added since the helper
 * was last reset; it lives in a helper file beside the data file (same file
 * system, so it works when ranks are on different machines) and any rank
 * updates it alone, without the help of any other rank, so a rank busy
 * outside MPI stalls nobody:
 *
 *  - LOCK mode: read and written under an fcntl byte-range lock;
 *  - MMAP mode (every rank runs under the same kernel and sees the same data
 *    file, so the helper's page is one page of one page cache): an atomic
 *    fetch-and-add on the mapped helper, no system call at all;
 *  - LOCAL mode (one rank): delta lives in the handle, no helper at all.
 *
 * A fresh helper holds zero.  It is created by whichever rank needs it first
 * and removed at close.  LMPIO_SHARED_FP=lock in the environment of any rank
 * at open forces LOCK mode (to test the multi-machine path on one machine).
 *
 * Every rank also caches delta as of the last collective, and remembers
 * whether it moved the pointer independently since then (`dirty`).  A
 * collective that learns that nobody is dirty knows the pointer without
 * touching the helper; otherwise every rank reads the helper, which is safe
 * because every rank is then inside the collective (nobody writes it) and no
 * rank leaves before all have read (a later synchronisation).  The ordered
 * collectives need no such synchronisation: the dirty ranks read the
 * helper before they enter, and the largest value read is the pointer
 * (ordered_positions).
 *
 * Ordered collectives: the call's first agreement (agree.c: one
 * MPI_Allgather) of each rank's {etypes requested, failed, dirty} gives
 * every rank its position (a prefix sum), the total and the outcome of the
 * argument checks; every rank moves its copy of base by
 * the total (the pointer moves once, nobody writes the helper) and transfers
 * its part in parallel.  That single collective is all the synchronisation
 * the call needs (it returns after every rank started its access): argument
 * errors are agreed through it before any transfer; a second agreement
 * after the transfer (lmpio__ordered, on more than one rank) makes
 * a storage or conversion error of one rank the call's on every rank.
 * Above 64 ranks the agreement is an MPI_Allreduce
 * and an MPI_Exscan gives the positions (log(ranks) each).
 *
 * The state lives in fh->shared (struct lmpio__shared). */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MODE_LOCAL, MODE_LOCK, MODE_MMAP };

/* The helper: the pointer's line, then the handle's gate (gate.c), in pages. */
#define POINTER_LINE 64
static size_t helper_size(int ranks) { return (POINTER_LINE + lmpio__gate_bytes(ranks) + 4095) / 4096 * 4096; }

typedef struct {
  int mode;
  int dirty;              /* this rank moved delta since the last collective */
  int view_ok;            /* every rank has the same view (shared access allowed) */
  MPI_Offset base;        /* same on every rank */
  MPI_Offset delta;       /* LOCAL: the delta; otherwise delta as of the last collective */
  int64_t *map;           /* MMAP: the helper's first page */
  long long *gather;      /* ordered: one entry per rank */
} shstate;

struct lmpio__shared {
  unsigned long long moves; /* this rank's calls that moved the pointer (lmpio__shared_moves) */
  int fd;                 /* the helper (its name is gone), or -1 */
  char why[1024];         /* why there is no helper, when fd < 0 */
  shstate st;
};

static shstate *st_of(lmpio_file fh) { return &fh->shared->st; }

unsigned long long lmpio__shared_moves(lmpio_file fh) { return fh->shared ? fh->shared->moves : 0; }
void lmpio__shared_note_move(lmpio_file fh) { fh->shared->moves++; }

/* A key that is the same on two ranks only when they run under the same
 * kernel (boot id, or host name where there is none) and see the same file. */
static char boot_id[128];
static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

static void read_boot_id(void) { /* (once: reading it cost a fifth of an open at 1 rank) */
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(boot_id, sizeof boot_id, f)) boot_id[0] = '\0';
    fclose(f);
  }
  if (!boot_id[0]) lmpio__os_hostname(boot_id, sizeof boot_id);
}

static long long kernel_file_key(int fd) {
  pthread_once(&boot_once, read_boot_id);
  const char *id = boot_id;
  struct stat sb;
  unsigned long long dev = 0, ino = 0;
  if (lmpio__os_fstat(fd, &sb) == 0) {
    dev = (unsigned long long)sb.st_dev;
    ino = (unsigned long long)sb.st_ino;
  }
  unsigned long long h = (unsigned long long)lmpio__hash(id);
  h = (h ^ dev) * 1099511628211ULL;
  h = (h ^ ino) * 1099511628211ULL;
  return (long long)(h >> 2);
}

/* Signature of the view as far as shared-pointer access cares. */
static long long view_sig(const lmpio__view *v) {
  unsigned long long h = (unsigned long long)lmpio__hash(v->datarep);
  const unsigned long long parts[4] = {(unsigned long long)v->disp, (unsigned long long)v->esize,
                                 (unsigned long long)v->ft->extent, (unsigned long long)v->ft->size};
  for (int i = 0; i < 4; i++) h = (h ^ parts[i]) * 1099511628211ULL;
  return (long long)(h >> 2);
}

/* Whether errno e says the directory will not take a new file (rather
 * than, say, that memory ran out): then the helper goes elsewhere or the
 * file is opened without one. */
static int dir_refuses(int e) { return e != ENOMEM && e != EMFILE && e != ENFILE && e != EINTR; }

/* The helper's name: short (a legal 255-byte file name leaves room for it),
 * beside the data file, or in /dev/shm.  Stale helpers of path (from a
 * crash between create and unlink, or older versions) start with
 * "." + the first 32 bytes of its name and hold ".lmpio-shfp-". */
#define HELPER_TAG ".lmpio-shfp-"
static void helper_name(char *out, size_t n, const char *path, int in_shm, unsigned long long id) {
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path + 1) : 0;
  const char *base = slash ? slash + 1 : path;
  if (in_shm) snprintf(out, n, "/dev/shm/.%.32s%s%012llx", base, HELPER_TAG, id);
  else snprintf(out, n, "%.*s.%.32s%s%012llx", dirlen, path, base, HELPER_TAG, id);
}

/* Creates (rank 0) and opens (every rank) the helper, maps it in MMAP mode,
 * then removes its name once every rank holds it: nothing is left behind,
 * nobody can remove it under a running job, and no rank ever creates it
 * again.  Where the data file's directory takes no new file and every rank
 * shares one kernel, the helper lives in /dev/shm; otherwise (ranks on
 * several machines) the shared pointer stays unavailable, and only the
 * independent shared-pointer calls fail (open and the collective calls
 * work from the pointer's base). */
static int helper_create(lmpio_file fh, shstate *st, unsigned long long id, const char *call) {
  lmpio__shared *sh = fh->shared;
  char name[4200];
  int info[2] = {0, 0}; /* rank 0: errno of the creation, where (1: /dev/shm) */
  int rc = MPI_SUCCESS;
  if (fh->rank == 0) {
    helper_name(name, sizeof name, fh->path, 0, id);
    sh->fd = lmpio__os_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (sh->fd < 0 && dir_refuses(errno) && st->mode == MODE_MMAP) {
      info[1] = 1;
      helper_name(name, sizeof name, fh->path, 1, id);
      sh->fd = lmpio__os_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (sh->fd < 0) info[0] = errno;
    else if (st->mode == MODE_MMAP && lmpio__os_ftruncate(sh->fd, (MPI_Offset)helper_size(fh->size)) < 0) info[0] = errno;
  }
  if (MPI_Bcast(info, 2, MPI_INT, 0, fh->comm) != MPI_SUCCESS)
    return lmpio__err(MPI_ERR_OTHER, call, "MPI_Bcast failed");
  helper_name(name, sizeof name, fh->path, info[1], id);
  if (info[0] != 0) {
    if (fh->rank == 0 && sh->fd >= 0) {
      lmpio__os_close(sh->fd);
      lmpio__os_unlink(name);
    }
    sh->fd = -1;
    if (!dir_refuses(info[0]))
      return lmpio__agree(fh->comm, lmpio__os_error(info[0], call, "cannot create the shared file pointer", name), 0, call);
    /* No helper: the independent shared-pointer calls will say why. */
    const char *slash = strrchr(fh->path, '/');
    snprintf(sh->why, sizeof sh->why,
             "the shared file pointer of \"%s\" needs a helper file in the directory \"%.*s\", which takes no new file (%s), and the ranks run on more than one machine",
             fh->path, slash ? (int)(slash - fh->path) : 1, slash ? fh->path : ".", strerror(info[0]));
    return MPI_SUCCESS;
  }
  if (fh->rank != 0) {
    sh->fd = lmpio__os_open(name, O_RDWR | O_CLOEXEC, 0600);
    if (sh->fd < 0) rc = lmpio__os_error(errno, call, "cannot open the shared file pointer", name);
  }
  /* A file system that cannot map the helper (a FUSE mount with direct
   * I/O: ENODEV) keeps it in LOCK mode instead, on every rank. */
  long long unmapped = 0;
  if (rc == MPI_SUCCESS && st->mode == MODE_MMAP && !(st->map = lmpio__os_mmap(helper_size(fh->size), sh->fd))) unmapped = 1;
  rc = lmpio__agree_values(fh->comm, rc, NULL, 0, NULL, &unmapped, 1, call); /* every rank holds it (or none goes on) */
  if (rc == MPI_SUCCESS && unmapped) {
    lmpio__os_munmap(st->map, helper_size(fh->size));
    st->map = NULL;
    st->mode = MODE_LOCK;
  }
  if (fh->rank == 0) lmpio__os_unlink(name);
  return rc;
}

/* A writable handle on a local file system with a mapped helper gates its
 * direct writes (gate.c): the gate's memory follows the pointer's line. */
static void gate_open(lmpio_file fh, const shstate *st, unsigned long long id) {
  if (st->mode == MODE_MMAP && st->map && fh->drv->id == LMPIO__FS_LOCAL && !(fh->amode & MPI_MODE_RDONLY))
    fh->gate = lmpio__gate_open((char *)st->map + POINTER_LINE, fh->rank, fh->size, fh->fd, id);
}

int lmpio__shared_init(lmpio_file fh, MPI_Offset initial, const char *call) {
  /* Rank 0 names the helper (unique per open) and gives the initial value;
   * every rank says which kernel and file it sees and whether LOCK is forced. */
  long long key = fh->size > 1 ? kernel_file_key(fh->fd) : 0;
  const char *force = getenv("LMPIO_SHARED_FP");
  /* in[5]: this rank has no helper page kept from the last handle on the
   * communicator (handle_comm.c); when every rank has, MMAP mode takes it. */
  void *page = NULL;
  int page_fd = -1;
  long long in[6] = {0, -1, key, -key, force && strcmp(force, "lock") == 0,
                     !lmpio__handle_comm_page(fh->comm_slot, 0, &page, &page_fd)};
  if (fh->rank == 0) {
    static unsigned serial;
    char host[64] = "";
    lmpio__os_hostname(host, sizeof host);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long id = (unsigned long long)lmpio__hash(host) ^ ((unsigned long long)getpid() << 24) ^
                            ((unsigned long long)ts.tv_nsec << 8) ^ (unsigned long long)ts.tv_sec ^
                            __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED);
    in[0] = (long long)(id & 0xffffffffffffULL);
    in[1] = initial;
  }
  int rc = lmpio__agree_values(fh->comm, MPI_SUCCESS, NULL, 0, NULL, in, 6, call);
  if (rc != MPI_SUCCESS) return rc;
  lmpio__shared *sh = calloc(1, sizeof *sh);
  if (!sh) return lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  sh->fd = -1;
  fh->shared = sh;
  shstate *st = st_of(fh);
  /* A stream has no helper: its bytes go through rank 0 (stream.c). */
  st->mode = fh->size == 1 || !fh->drv->has_helper ? MODE_LOCAL
             : in[2] == -in[3] && !in[4] && fh->drv->map_pointer ? MODE_MMAP
                                                                   : MODE_LOCK;
  st->base = in[1];
  st->view_ok = 1; /* everyone starts with the default view */
  if (st->mode == MODE_MMAP && in[5] == 0) {
    /* The last handle's helper: its pointer starts again from the base.
     * Nobody reads it before open's last agreement, which follows. */
    lmpio__handle_comm_page(fh->comm_slot, 1, &page, &page_fd);
    st->map = page;
    sh->fd = page_fd;
    if (fh->rank == 0) __atomic_store_n(st->map, 0, __ATOMIC_SEQ_CST);
    gate_open(fh, st, (unsigned long long)in[0]);
    return MPI_SUCCESS;
  }
  if (st->mode != MODE_LOCAL) rc = helper_create(fh, st, (unsigned long long)in[0], call);
  if (rc == MPI_SUCCESS) gate_open(fh, st, (unsigned long long)in[0]);
  return rc;
}

void lmpio__shared_free(lmpio_file fh) {
  if (!fh->shared) return;
  shstate *st = st_of(fh);
  lmpio__gate_close(fh->gate);
  fh->gate = NULL;
  /* A mapped helper stays with the communicator for its next handle. */
  if (!(st->mode == MODE_MMAP && st->map && fh->shared->fd >= 0 &&
        lmpio__handle_comm_keep_page(fh->comm_slot, st->map, helper_size(fh->size), fh->shared->fd))) {
    lmpio__os_munmap(st->map, helper_size(fh->size));
    if (fh->shared->fd >= 0) lmpio__os_close(fh->shared->fd);
  }
  free(st->gather);
  free(fh->shared);
  fh->shared = NULL;
}

void lmpio__shared_delete(const char *path) {
  const char *slash = strrchr(path, '/');
  char dir[4200], prefix[40];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + (slash == path)) : 1, slash ? path : ".");
  snprintf(prefix, sizeof prefix, ".%.32s", slash ? slash + 1 : path);
  DIR *d = lmpio__os.opendir(dir);
  if (!d) return;
  const struct dirent *e;
  while ((e = lmpio__os.readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || !strstr(e->d_name, HELPER_TAG)) continue;
    char stale[8400];
    snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
    lmpio__os_unlink(stale);
  }
  lmpio__os.closedir(d);
}

/* ---- the helper ---------------------------------------------------------- */

static int helper_open(lmpio_file fh, const shstate *st, const char *call) {
  (void)st;
  if (fh->shared->fd >= 0) return MPI_SUCCESS;
  return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call, "%s", fh->shared->why);
}

/* Reads delta (add == 0 and set == NULL), adds to it (add != 0) or sets it
 * (set != NULL), atomically; *old receives the value before.  The sum wraps
 * as the mapped helper's atomic add does (lmpio__shared_reserve undoes a
 * move past 2^63 - 1). */
static int64_t wrapping_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static int helper_rmw(lmpio_file fh, shstate *st, MPI_Offset add, const MPI_Offset *set,
                      MPI_Offset *old, const char *call) {
  if (st->mode == MODE_LOCAL) {
    *old = st->delta;
    st->delta = set ? *set : wrapping_add(st->delta, add);
    return MPI_SUCCESS;
  }
  int rc = helper_open(fh, st, call);
  if (rc != MPI_SUCCESS) return rc;
  if (st->mode == MODE_MMAP) {
    if (set) *old = __atomic_exchange_n(st->map, (int64_t)*set, __ATOMIC_SEQ_CST);
    else if (add) *old = __atomic_fetch_add(st->map, (int64_t)add, __ATOMIC_SEQ_CST);
    else *old = __atomic_load_n(st->map, __ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
  }
  int write = set || add;
  /* Through the file's driver: a caching client drops its cached page of
   * the helper under the lock and flushes the new value before unlocking. */
  const lmpio__driver *drv = fh->drv;
  if (drv->lock(fh->shared->fd, write, 0, sizeof(int64_t)) < 0)
    return lmpio__os_error(errno, call, "cannot lock the shared file pointer of", fh->path);
  int64_t cur = 0;
  long long got = drv->pread(fh->shared->fd, &cur, sizeof cur, 0);
  if (got < 0) rc = lmpio__os_error(errno, call, "cannot read the shared file pointer of", fh->path);
  else if (got < (long long)sizeof cur) cur = 0; /* fresh helper */
  if (rc == MPI_SUCCESS && write) {
    int64_t v = set ? (int64_t)*set : wrapping_add(cur, add);
    if (lmpio__os_pwrite_all(fh->shared->fd, &v, sizeof v, 0) < 0)
      rc = lmpio__os_error(errno, call, "cannot write the shared file pointer of", fh->path);
  }
  if (drv->unlock(fh->shared->fd, write && rc == MPI_SUCCESS, 0, sizeof(int64_t)) < 0 && rc == MPI_SUCCESS)
    rc = lmpio__os_error(errno, call, "cannot write the shared file pointer of", fh->path);
  *old = cur;
  return rc;
}

/* Inside a collective, once every rank has entered it: the current delta,
 * from the helper if any rank moved it (anydirty), else from the cache. */
static int collective_delta(lmpio_file fh, shstate *st, int anydirty, const char *call) {
  int rc = MPI_SUCCESS;
  if (anydirty && st->mode != MODE_LOCAL) {
    MPI_Offset d = 0;
    rc = helper_rmw(fh, st, 0, NULL, &d, call);
    if (rc == MPI_SUCCESS) st->delta = d;
  }
  /* A rank that could not read stays dirty: the next collective reads again. */
  st->dirty = rc != MPI_SUCCESS;
  return rc;
}

int lmpio__shared_get(lmpio_file fh, MPI_Offset *value, const char *call) {
  shstate *st = st_of(fh);
  MPI_Offset d = st->delta;
  int rc = MPI_SUCCESS;
  /* Without a helper nobody can have moved the pointer on their own. */
  if (st->mode != MODE_LOCAL && fh->shared->fd >= 0) rc = helper_rmw(fh, st, 0, NULL, &d, call);
  if (rc == MPI_SUCCESS) *value = st->base + d;
  return rc;
}

/* Every rank: one agreement on the outcome and `same`, reducing whether
 * some rank moved the pointer and whether the views' signatures match. */
static int sync_state(lmpio_file fh, int rc, const long long *same, int nsame, const char *labels, long long sig,
                      int *anydirty, int *sig_same, int first, const char *call) {
  shstate *st = st_of(fh);
  long long max[3] = {st->dirty, sig, -sig};
  lmpio__first f = {.same = same, .nsame = nsame, .labels = labels, .max = max, .nmax = 3};
  rc = first ? lmpio__agree_first(fh->comm, rc, &f, call)
             : lmpio__agree_values(fh->comm, rc, same, nsame, labels, max, 3, call);
  if (rc != MPI_SUCCESS) return rc;
  *anydirty = (int)max[0];
  if (sig_same) *sig_same = max[1] == -max[2];
  return MPI_SUCCESS;
}

/* Collective: the pointer becomes `value` (every rank passes the same).  The
 * helper is zeroed by rank 0 when it may hold something; then the ranks
 * synchronise so that nobody moves it before that. */
static int collective_set(lmpio_file fh, shstate *st, int anydirty, MPI_Offset value, const char *call) {
  int rc = MPI_SUCCESS;
  int must_zero = st->mode != MODE_LOCAL && (anydirty || st->delta != 0);
  if (must_zero && fh->rank == 0) {
    MPI_Offset zero = 0, old;
    rc = helper_rmw(fh, st, 0, &zero, &old, call);
  }
  st->base = value;
  st->delta = 0;
  st->dirty = 0;
  lmpio__shared_note_move(fh);
  if (must_zero) rc = lmpio__agree(fh->comm, rc, 0, call);
  return rc;
}

int lmpio__shared_reset(lmpio_file fh, const char *call) {
  shstate *st = st_of(fh);
  int anydirty = 0, sig_same = 1;
  int rc = sync_state(fh, MPI_SUCCESS, NULL, 0, NULL, view_sig(&fh->view), &anydirty, &sig_same, 0, call);
  if (rc != MPI_SUCCESS) return rc;
  st->view_ok = sig_same;
  return collective_set(fh, st, anydirty, 0, call);
}

/* ---- independent shared-pointer access -------------------------------- */

static int check_view(lmpio_file fh, const char *call) {
  if (!st_of(fh)->view_ok)
    return lmpio__err(MPI_ERR_NOT_SAME, call,
                      "shared file pointer access needs the same view on every rank of file \"%s\"", fh->path);
  return MPI_SUCCESS;
}

int lmpio__shared_reserve(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, MPI_Offset *at,
                          MPI_Offset *n, const lmpio__tm_node **held, const char *call) {
  *at = *n = 0;
  if (held) *held = NULL;
  int rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
  if (rc == MPI_SUCCESS) rc = check_view(fh, call);
  if (rc == MPI_SUCCESS) rc = lmpio__etypes_held(fh, count, type, n, held, call);
  if (rc == MPI_SUCCESS && *n > 0) {
    /* Reserve the range first: concurrent calls then never overlap. */
    shstate *st = st_of(fh);
    MPI_Offset d = 0;
    rc = helper_rmw(fh, st, *n, NULL, &d, call);
    MPI_Offset end;
    if (rc == MPI_SUCCESS && !(lmpio__add_ok(st->base, d, at) && lmpio__add_ok(*at, *n, &end))) {
      /* Past 2^63 - 1 etypes: moved back (a call that reserved after this
       * one lies further still, fails too and moves back its own part). */
      MPI_Offset ignored;
      helper_rmw(fh, st, -*n, NULL, &ignored, call);
      rc = lmpio__err(MPI_ERR_ARG, call, "the shared file pointer %lld + %lld etypes overflows a 64-bit offset",
                      (long long)st->base, (long long)wrapping_add(d, *n));
      *at = *n = 0;
    } else if (rc == MPI_SUCCESS) {
      lmpio__shared_note_move(fh);
      st->dirty = st->mode != MODE_LOCAL;
    }
  }
  return rc;
}

/* ---- ordered collectives ------------------------------------------------ */

/* Every rank's position and the total, from one collective prefix sum of the
 * requested etypes: the call's first agreement, which gathers every rank's
 * count (up to lmpio__agree_gathers ranks; above, it sums them and an
 * MPI_Exscan gives the position).  It also gives the helper's value: a
 * rank that moved the pointer since the last collective reads the helper
 * before it enters, the others pass the value they cached, and the largest
 * is the helper's value as every rank entered (it only grows between
 * collectives, and each rank's moves come before its own read).  So no
 * rank reads it after another may have left and moved it again (an
 * ordered split collective's _begin returns at once).  A failure is every
 * rank's. */
static int ordered_positions(lmpio_file fh, shstate *st, int rc, MPI_Offset n, MPI_Offset *before,
                             MPI_Offset *total, const char *call) {
  long long mine = rc == MPI_SUCCESS ? n : 0, sum = mine;
  MPI_Offset d = st->delta;
  if (rc == MPI_SUCCESS && st->dirty && st->mode != MODE_LOCAL) rc = helper_rmw(fh, st, 0, NULL, &d, call);
  long long delta = d;
  int gathers = lmpio__agree_gathers(fh->size);
  if (gathers && !st->gather && !(st->gather = malloc(sizeof(long long) * (size_t)fh->size)) && rc == MPI_SUCCESS)
    rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  lmpio__first f = {.max = &delta, .nmax = 1, .sum = &sum, .nsum = 1, .mine = &mine, .nmine = 1,
                    .table = st->gather};
  rc = lmpio__agree_first_of(fh->comm, fh->rank, fh->size, rc, &f, call);
  if (rc != MPI_SUCCESS) return rc; /* (a rank that could not read stays dirty) */
  st->delta = delta;
  st->dirty = 0;
  *total = sum;
  *before = 0;
  if (f.gathered) {
    for (int r = 0; r < fh->rank; r++) *before += st->gather[r];
    return MPI_SUCCESS;
  }
  long long ex = 0;
  if (MPI_Exscan(&mine, &ex, 1, MPI_LONG_LONG, MPI_SUM, fh->comm) != MPI_SUCCESS)
    return lmpio__agree(fh->comm, lmpio__err(MPI_ERR_OTHER, call, "MPI_Exscan failed"), 0, call);
  *before = fh->rank == 0 ? 0 : ex;
  return MPI_SUCCESS;
}

int lmpio__ordered_reserve(lmpio_file fh, MPI_Count count, MPI_Datatype type, int dir, int pre_rc,
                           MPI_Offset *at, MPI_Offset *n, int *agreed, const lmpio__tm_node **held,
                           const char *call) {
  shstate *st = st_of(fh);
  int rc = lmpio__pending(pre_rc, call);
  *n = 0;
  *at = 0;
  *agreed = 1;
  if (held) *held = NULL;
  if (rc == MPI_SUCCESS) rc = lmpio__check_access(fh, count, type, dir, LMPIO__SHARED, call);
  if (rc == MPI_SUCCESS) rc = check_view(fh, call);
  if (rc == MPI_SUCCESS) rc = lmpio__etypes_held(fh, count, type, n, held, call);
  MPI_Offset before = 0, total = *n;
  lmpio__shared_note_move(fh);
  rc = ordered_positions(fh, st, rc, *n, &before, &total, call);
  if (rc != MPI_SUCCESS) return rc;
  /* Past 2^63 - 1 etypes: the same numbers on every rank, so the same
   * failure, and the pointer stays (a signed overflow wrapped it). */
  MPI_Offset start, end;
  if (!lmpio__add_ok(st->base, st->delta, &start) || !lmpio__add_ok(start, total, &end))
    return lmpio__err(MPI_ERR_ARG, call, "the shared file pointer %lld + %lld etypes overflows a 64-bit offset",
                      (long long)st->base, (long long)total);
  *agreed = fh->size == 1;
  *at = start + before;
  st->base += total; /* the pointer moves once, by everything requested */
  return MPI_SUCCESS;
}

/* ---- the shared and ordered runs ------------------------------------------ */

/* The transfer of the n > 0 etypes reserved at etype `at`: count items of
 * type whose layout in the file is m (looked up once, by the reserve). */
static int transfer_at(lmpio_file fh, MPI_Offset at, MPI_Offset n, void *buf, MPI_Count count, MPI_Datatype type,
                       int dir, const lmpio__tm_node *m, MPI_Count *bytes, const char *call) {
  lmpio__held h;
  int rc = lmpio__transfer_hold(fh, at, n, dir, &h, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset fbytes = 0;
  rc = lmpio__transfer_node(h.plan, h.pos, buf, count, type, fh->view.rep ? NULL : m, bytes, &fbytes, call);
  lmpio__transfer_release(fh, &h, fbytes);
  return rc;
}

/* write_shared / read_shared: the pointer reserved, then the transfer (a
 * stream's through rank 0, stream.c). */
int lmpio__shared_access(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                         MPI_Status *status, const char *call) {
  MPI_Offset at, n;
  MPI_Count bytes = 0;
  if (fh != LMPIO_FILE_NULL && fh->drv->id == LMPIO__FS_STREAM) {
    lmpio__shared_note_move(fh);
    int rc = lmpio__pipe_shared(fh, buf, count, type, dir, &bytes, call);
    lmpio__set_status(status, bytes);
    return rc;
  }
  const lmpio__tm_node *m;
  int rc = lmpio__shared_reserve(fh, count, type, dir, &at, &n, &m, call);
  if (rc == MPI_SUCCESS && n > 0) {
    rc = transfer_at(fh, at, n, buf, count, type, dir, m, &bytes, call);
  }
  if (m) lmpio__typemap_release(m);
  lmpio__set_status(status, bytes);
  return rc;
}

/* The ordered collectives: one prefix sum, the pointer moved once, then
 * the transfers in parallel. */
int lmpio__ordered(lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype type, int dir,
                   MPI_Count *bytes, int pre_rc, const char *call) {
  *bytes = 0;
  if (fh->drv->id == LMPIO__FS_STREAM) {
    lmpio__shared_note_move(fh);
    return lmpio__pipe_ordered(fh, buf, count, type, dir, bytes, pre_rc, call);
  }
  MPI_Offset at, n;
  int agreed;
  const lmpio__tm_node *m;
  int rc = lmpio__ordered_reserve(fh, count, type, dir, pre_rc, &at, &n, &agreed, &m, call);
  if (rc == MPI_SUCCESS && n > 0) rc = transfer_at(fh, at, n, buf, count, type, dir, m, bytes, call);
  if (m) lmpio__typemap_release(m);
  if (rc != MPI_SUCCESS && agreed) return rc;
  if (fh->size == 1) return rc;
  /* A collective call succeeds or fails on every rank alike (DESIGN.md), so
   * the outcome of the transfers is agreed even though it costs a second
   * collective: a storage or conversion error met by one rank fails the call
   * everywhere. */
  return lmpio__agree(fh->comm, rc, 0, call);
}


/* ---- seek_shared ---------------------------------------------------------- */

int lmpio__shared_seek(lmpio_file fh, int rc, MPI_Offset offset, int whence, const char *call) {
  shstate *st = st_of(fh);
  if (rc == MPI_SUCCESS && whence != MPI_SEEK_SET && whence != MPI_SEEK_CUR && whence != MPI_SEEK_END)
    rc = lmpio__err(MPI_ERR_ARG, call, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  else if (rc == MPI_SUCCESS && (fh->amode & MPI_MODE_SEQUENTIAL))
    rc = lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                    "not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  else if (rc == MPI_SUCCESS && fh->split.kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  else if (rc == MPI_SUCCESS) rc = check_view(fh, call);
  int anydirty = 0;
  long long same[2] = {rc == MPI_SUCCESS ? offset : 0, rc == MPI_SUCCESS ? whence : 0};
  rc = sync_state(fh, rc, same, 2, "offsets|whence values", 0, &anydirty, NULL, 1, call);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Offset target = 0;
  if (whence == MPI_SEEK_END) {
    /* Every rank is inside the call: nobody writes; the largest size seen wins
     * (ranks on different machines may see a size a little late). */
    MPI_Offset size = 0;
    long long maxsize;
    if (fh->drv->size(fh->fd, &size) < 0) rc = lmpio__os_error(errno, call, "cannot stat", fh->path);
    rc = lmpio__agree(fh->comm, rc, 0, call);
    if (rc != MPI_SUCCESS) return rc;
    if (fh->size > 1) MPI_Allreduce(&size, &maxsize, 1, MPI_LONG_LONG, MPI_MAX, fh->comm);
    else maxsize = size;
    /* End of file in this view: the etypes that start before it, rounded up. */
    MPI_Offset data = lmpio__view_data_before(&fh->view, maxsize);
    target = data / fh->view.esize + (data % fh->view.esize != 0);
  } else if (whence == MPI_SEEK_CUR) {
    rc = collective_delta(fh, st, anydirty, call);
    if (anydirty && st->mode != MODE_LOCAL) rc = lmpio__agree(fh->comm, rc, 0, call);
    if (rc != MPI_SUCCESS) return rc;
    target = st->base + st->delta;
  }
  if (!lmpio__add_ok(target, offset, &target))
    return lmpio__err(MPI_ERR_ARG, call, "seek to %lld + %lld overflows a 64-bit offset", (long long)target,
                      (long long)offset);
  if (target < 0)
    return lmpio__err(MPI_ERR_ARG, call, "shared file pointer would become negative (%lld)", (long long)target);
  if (whence == MPI_SEEK_CUR) { /* move base only: delta stays in the helper */
    st->base += offset;
    lmpio__shared_note_move(fh);
    return MPI_SUCCESS;
  }
  return collective_set(fh, st, anydirty, target, call);
}
