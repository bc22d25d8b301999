/* System calls through one table; EINTR and short-transfer loops; errno to
 * MPI error class.  The only file of the core that calls the system. */
#include "ground.h"

#include <linux/futex.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdio.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

static int real_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static int real_fcntl_lock(int fd, int cmd, struct flock *fl) { return fcntl(fd, cmd, fl); }
static int real_dup(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }
static int real_statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
  return statx(dirfd, path, flags, mask, buf);
}
static int real_sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
  return sync_file_range(fd, offset, nbytes, flags);
}

static int real_getfl(int fd) { return fcntl(fd, F_GETFL); }

#define REAL_TABLE                                                                                        \
  {                                                                                                       \
    .open = real_open, .close = close, .fstat = fstat, .fstatfs = fstatfs, .ftruncate = ftruncate,       \
    .fallocate = posix_fallocate, .fsync = fsync, .unlink = unlink, .pread = pread, .pwrite = pwrite,    \
    .fcntl_lock = real_fcntl_lock, .mmap = mmap, .munmap = munmap, .opendir = opendir,                   \
    .readdir = readdir, .closedir = closedir, .sync_file_range = real_sync_file_range, .read = read,     \
    .write = write, .stat = stat, .dup = real_dup, .fadvise = posix_fadvise, .statx = real_statx,        \
    .sigaction = sigaction, .futimens = futimens, .getfl = real_getfl, .nanosleep = nanosleep,           \
    .gethostname = gethostname                                                                           \
  }
const lmpio__os_table lmpio__os_real = REAL_TABLE;
lmpio__os_table lmpio__os = REAL_TABLE;

#define ENTRY(name) {#name, offsetof(lmpio__os_table, name)}
const lmpio__os_entry lmpio__os_entries[] = {
    ENTRY(open),      ENTRY(close),    ENTRY(fstat),     ENTRY(fstatfs),         ENTRY(ftruncate),
    ENTRY(fallocate), ENTRY(fsync),    ENTRY(unlink),    ENTRY(pread),           ENTRY(pwrite),
    ENTRY(fcntl_lock), ENTRY(mmap),    ENTRY(munmap),    ENTRY(opendir),         ENTRY(readdir),
    ENTRY(closedir),  ENTRY(sync_file_range), ENTRY(read), ENTRY(write),         ENTRY(stat),
    ENTRY(dup),       ENTRY(fadvise),  ENTRY(statx),     ENTRY(sigaction),       ENTRY(futimens),
    ENTRY(getfl),     ENTRY(nanosleep), ENTRY(gethostname),
};
const int lmpio__os_nentries = (int)(sizeof lmpio__os_entries / sizeof lmpio__os_entries[0]);

int lmpio__os_flags(int fd) { return lmpio__os.getfl(fd); }

void lmpio__os_pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  lmpio__os.nanosleep(&t, NULL);
}

void lmpio__os_hostname(char *name, size_t n) {
  if (n == 0) return;
  if (lmpio__os.gethostname(name, n - 1) != 0) name[0] = '\0';
  name[n - 1] = '\0';
}

int lmpio__os_open(const char *path, int flags, mode_t mode) {
  int fd;
  do fd = lmpio__os.open(path, flags, mode);
  while (fd < 0 && errno == EINTR);
  return fd;
}

int lmpio__os_close(int fd) {
  /* Linux releases the descriptor even when close reports EINTR: retrying
   * could close a descriptor another thread just opened. */
  if (lmpio__os.close(fd) < 0 && errno != EINTR) return -1;
  return 0;
}

int lmpio__os_fstat(int fd, struct stat *st) {
  int r;
  do r = lmpio__os.fstat(fd, st);
  while (r < 0 && errno == EINTR);
  return r;
}

int lmpio__os_size(int fd, MPI_Offset *size) {
  struct stat st;
  if (lmpio__os_fstat(fd, &st) < 0) return -1;
  *size = (MPI_Offset)st.st_size;
  return 0;
}

int lmpio__os_ftruncate(int fd, MPI_Offset length) {
  int r;
  do r = lmpio__os.ftruncate(fd, (off_t)length);
  while (r < 0 && errno == EINTR);
  return r;
}

int lmpio__os_fallocate(int fd, MPI_Offset offset, MPI_Offset length) {
  int e;
  do e = lmpio__os.fallocate(fd, (off_t)offset, (off_t)length);
  while (e == EINTR);
  if (e == 0) return 0;
  errno = e;
  return -1;
}

int lmpio__os_fsync(int fd) {
  int r;
  do r = lmpio__os.fsync(fd);
  while (r < 0 && errno == EINTR);
  return r;
}

void lmpio__os_writeback(int fd) {
  int r;
  do r = lmpio__os.sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  while (r < 0 && errno == EINTR);
}

void lmpio__os_touch(int fd) {
  const struct timespec t[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  while (lmpio__os.futimens(fd, t) < 0 && errno == EINTR) {
  }
}

int lmpio__os_unlink(const char *path) {
  int r;
  do r = lmpio__os.unlink(path);
  while (r < 0 && errno == EINTR);
  return r;
}

void *lmpio__os_mmap(size_t length, int fd) {
  void *p = lmpio__os.mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

void lmpio__os_munmap(void *addr, size_t length) {
  if (addr) lmpio__os.munmap(addr, length);
}

/* ---- mapped reads and their SIGBUS guard ---------------------------------- */

static __thread sigjmp_buf *bus_jump; /* set while a guarded copy runs */
static struct sigaction bus_before;
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_bus(int sig, siginfo_t *si, void *ctx) {
  sigjmp_buf *j = bus_jump;
  if (j) {
    bus_jump = NULL;
    siglongjmp(*j, 1);
  }
  /* Not ours: what was there before decides. */
  if (bus_before.sa_flags & SA_SIGINFO) {
    bus_before.sa_sigaction(sig, si, ctx);
  } else if (bus_before.sa_handler != SIG_DFL && bus_before.sa_handler != SIG_IGN) {
    bus_before.sa_handler(sig);
  } else {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    lmpio__os.sigaction(SIGBUS, &dfl, NULL);
    raise(SIGBUS);
  }
}

/* Whether our handler is in place, installing it when it is not: at the
 * first mapping, and again when the program set a handler of its own since
 * (which then gets every SIGBUS that is not ours). */
static int bus_install(void) {
  struct sigaction sa, now;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_bus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER; /* (not blocked after the jump out) */
  sigemptyset(&sa.sa_mask);
  pthread_mutex_lock(&bus_lock);
  int ok = lmpio__os.sigaction(SIGBUS, NULL, &now) == 0;
  if (ok && (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != on_bus)) {
    lmpio__stay_loaded(); /* (the handler stays installed) */
    ok = lmpio__os.sigaction(SIGBUS, &sa, NULL) == 0;
    if (ok) bus_before = now;
  }
  pthread_mutex_unlock(&bus_lock);
  return ok;
}

void *lmpio__os_map(int fd, MPI_Offset off, MPI_Offset len, int writable, char **at, size_t *maplen) {
  MPI_Offset page = (MPI_Offset)sysconf(_SC_PAGESIZE), start = off - off % page;
  if (!bus_install() || len <= 0 || off < 0 || (MPI_Offset)(size_t)(len + off - start) != len + off - start) return NULL;
  size_t n = (size_t)(len + off - start);
  /* MAP_POPULATE: one pass over the page tables instead of a fault per
   * page (writes) or per 16 pages (reads). */
  void *m = lmpio__os.mmap(NULL, n, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
                           (off_t)start);
  if (m == MAP_FAILED) return NULL;
  *at = (char *)m + (off - start);
  *maplen = n;
  return m;
}

void *lmpio__os_map_file(int fd, size_t len, int writable) {
  if (len == 0 || !bus_install()) return NULL;
  void *m = lmpio__os.mmap(NULL, len, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? NULL : m;
}

int lmpio__os_guard_ready(void) {
  return bus_install();
}

int lmpio__os_guarded(void (*fn)(void *), void *arg) {
  sigjmp_buf j;
  if (sigsetjmp(j, 0)) {
    errno = EIO;
    return -1;
  }
  bus_jump = &j;
  fn(arg);
  bus_jump = NULL;
  return 0;
}

/* Whether [off, off + len) lies within the offsets a file can have. */
static int range_ok(MPI_Offset len, MPI_Offset off) {
  if (off < 0 || len < 0 || len > (MPI_Offset)INT64_MAX - off) {
    errno = EFBIG;
    return 0;
  }
  return 1;
}

/* The loop of lmpio__os_pread_all, from byte done on. */
static long long pread_from(int fd, void *buf, MPI_Offset len, MPI_Offset off, MPI_Offset done) {
  while (done < len) {
    size_t want = (size_t)(len - done);
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30; /* Linux moves at most ~2 GiB per call */
    ssize_t n = lmpio__os.pread(fd, (char *)buf + done, want, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break; /* end of file */
    done += n;
  }
  return (long long)done;
}

long long lmpio__os_pread_all(int fd, void *buf, MPI_Offset len, MPI_Offset off) {
  if (!range_ok(len, off)) return -1;
  /* The usual case first, one call that reads it all (or finds the end of
   * the file, or fails), without the loop's frame. */
  if (len > 0 && len <= ((MPI_Offset)1 << 30)) {
    ssize_t n = lmpio__os.pread(fd, buf, (size_t)len, (off_t)off);
    if (n == len || n == 0 || (n < 0 && errno != EINTR)) return n;
    return pread_from(fd, buf, len, off, n > 0 ? n : 0);
  }
  return pread_from(fd, buf, len, off, 0);
}

/* The loop of lmpio__os_pwrite_all, from byte done on. */
static long long pwrite_from(int fd, const void *buf, MPI_Offset len, MPI_Offset off, MPI_Offset done) {
  while (done < len) {
    size_t want = (size_t)(len - done);
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
    ssize_t n = lmpio__os.pwrite(fd, (const char *)buf + done, want, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) { /* no progress and no error: report it rather than spin */
      errno = EIO;
      return -1;
    }
    done += n;
  }
  return (long long)done;
}

long long lmpio__os_pwrite_all(int fd, const void *buf, MPI_Offset len, MPI_Offset off) {
  if (!range_ok(len, off)) return -1;
  /* (as lmpio__os_pread_all) */
  if (len > 0 && len <= ((MPI_Offset)1 << 30)) {
    ssize_t n = lmpio__os.pwrite(fd, buf, (size_t)len, (off_t)off);
    if (n == len || (n < 0 && errno != EINTR)) return n;
    if (n == 0) {
      errno = EIO;
      return -1;
    }
    return pwrite_from(fd, buf, len, off, n > 0 ? n : 0);
  }
  return pwrite_from(fd, buf, len, off, 0);
}

static struct flock range_of(short type, MPI_Offset off, MPI_Offset len) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)off;
  fl.l_len = (off_t)len;
  return fl;
}

int lmpio__os_try_lock(int fd, short type, MPI_Offset off, MPI_Offset len) {
#ifdef F_OFD_SETLK
  struct flock fl = range_of(type, off, len);
  int r;
  do r = lmpio__os.fcntl_lock(fd, F_OFD_SETLK, &fl);
  while (r < 0 && errno == EINTR);
  return r;
#else
  (void)fd, (void)type, (void)off, (void)len;
  errno = ENOSYS;
  return -1;
#endif
}

static int setlk(int fd, short type, MPI_Offset off, MPI_Offset len) {
  struct flock fl = range_of(type, off, len);
#ifdef F_OFD_SETLKW
  /* Open-file-description locks belong to this descriptor, not to the whole
   * process: closing another descriptor of the same file keeps them, and
   * threads and handles of one process exclude each other. */
  for (;;) {
    if (lmpio__os.fcntl_lock(fd, F_OFD_SETLKW, &fl) == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EINVAL) return -1;
    break; /* kernel or file system without OFD locks */
  }
  fl.l_pid = 0;
#endif
  while (lmpio__os.fcntl_lock(fd, F_SETLKW, &fl) < 0)
    if (errno != EINTR) return -1;
  return 0;
}

int lmpio__os_lock(int fd, int write, MPI_Offset off, MPI_Offset len) {
  if (len <= 0) return 0;
  if (!range_ok(len, off)) return -1;
  return setlk(fd, write ? F_WRLCK : F_RDLCK, off, len);
}

int lmpio__os_unlock(int fd, MPI_Offset off, MPI_Offset len) {
  if (len <= 0 || !range_ok(len, off)) return 0;
  return setlk(fd, F_UNLCK, off, len);
}

int lmpio__os_stat(const char *path, struct stat *st) {
  int r;
  do r = lmpio__os.stat(path, st);
  while (r < 0 && errno == EINTR);
  return r;
}

int lmpio__os_dup(int fd) {
  int r;
  do r = lmpio__os.dup(fd);
  while (r < 0 && errno == EINTR);
  return r;
}

int lmpio__os_is_stream(mode_t mode) { return S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode); }

long long lmpio__os_read_all(int fd, void *buf, MPI_Offset len) {
  MPI_Offset done = 0;
  while (done < len) {
    size_t want = (size_t)(len - done);
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
    ssize_t n = lmpio__os.read(fd, (char *)buf + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break; /* end of input */
    done += n;
  }
  return (long long)done;
}

long long lmpio__os_write_all(int fd, const void *buf, MPI_Offset len) {
  /* A write to a pipe nobody reads raises SIGPIPE, whose default action
   * kills the process: block it in this thread for the write; if the write
   * raised one (and none was pending before), take it off the thread's
   * pending set before unblocking, so it is never delivered. */
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigemptyset(&pending);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigpending(&pending);
  int was_pending = sigismember(&pending, SIGPIPE);
  MPI_Offset done = 0;
  int e = 0;
  while (done < len) {
    size_t want = (size_t)(len - done);
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
    ssize_t n = lmpio__os.write(fd, (const char *)buf + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      e = errno;
      break;
    }
    if (n == 0) {
      e = EIO;
      break;
    }
    done += n;
  }
  if (e == EPIPE && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {}
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e) {
    errno = e;
    return -1;
  }
  return (long long)done;
}

int lmpio__os_drop_cache(int fd, MPI_Offset off, MPI_Offset len) {
  /* Whole pages: a partial page at either end is dropped with the rest of
   * it (its other bytes are read again too, which is only slower). */
  const MPI_Offset page = 4096;
  MPI_Offset lo = off / page * page;
  MPI_Offset n = len > 0 ? (len > INT64_MAX - off - page ? 0 : (off + len + page - 1) / page * page - lo) : 0;
  int e;
  do e = lmpio__os.fadvise(fd, (off_t)lo, (off_t)n, POSIX_FADV_DONTNEED);
  while (e == EINTR);
  if (e == 0) return 0;
  errno = e;
  return -1;
}

int lmpio__os_size_fresh(int fd, MPI_Offset *size) {
  struct statx sx;
  int r;
  do r = lmpio__os.statx(fd, "", AT_EMPTY_PATH | AT_STATX_FORCE_SYNC, STATX_SIZE, &sx);
  while (r < 0 && errno == EINTR);
  if (r < 0 && (errno == ENOSYS || errno == EINVAL)) return lmpio__os_size(fd, size); /* no statx */
  if (r < 0) return -1;
  *size = (MPI_Offset)sx.stx_size;
  return 0;
}

/* The mount table's name of each device seen (a few: most programs use
 * one or two file systems).  Reading /proc/self/mountinfo was half of an
 * open at 1 rank (about 30 us, more with many mounts); a device's file
 * system does not change while it is mounted. */
#define MOUNT_NAMES 8
static struct {
  dev_t dev;
  char type[64];
} mount_names[MOUNT_NAMES];
static int mount_named;
static pthread_mutex_t mount_lock = PTHREAD_MUTEX_INITIALIZER;

static void mount_type(dev_t dev, char *type, size_t n) {
  pthread_mutex_lock(&mount_lock);
  for (int i = 0; i < mount_named && i < MOUNT_NAMES; i++)
    if (mount_names[i].dev == dev) {
      snprintf(type, n, "%s", mount_names[i].type);
      pthread_mutex_unlock(&mount_lock);
      return;
    }
  pthread_mutex_unlock(&mount_lock);
  /* The mount table names FUSE file systems ("fuse.glusterfs"), which
   * statfs cannot tell apart; a missing /proc only loses the name. */
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return;
  char line[4096];
  unsigned maj = major(dev), min = minor(dev);
  while (fgets(line, sizeof line, f)) {
    unsigned a, b;
    if (sscanf(line, "%*d %*d %u:%u", &a, &b) != 2 || a != maj || b != min) continue;
    const char *sep = strstr(line, " - ");
    char fstype[256];
    if (sep && sscanf(sep + 3, "%255s", fstype) == 1) snprintf(type, n, "%s", fstype);
  }
  fclose(f);
  pthread_mutex_lock(&mount_lock);
  int i = mount_named++ % MOUNT_NAMES;
  mount_names[i].dev = dev;
  snprintf(mount_names[i].type, sizeof mount_names[i].type, "%s", n ? type : "");
  pthread_mutex_unlock(&mount_lock);
}

int lmpio__os_fs_type(int fd, long *magic, char *type, size_t n) {
  struct statfs sf;
  struct stat st;
  if (n) type[0] = '\0';
  if (lmpio__os.fstatfs(fd, &sf) != 0 || lmpio__os_fstat(fd, &st) != 0) return -1;
  *magic = (long)sf.f_type;
  if (n) mount_type(st.st_dev, type, n);
  return 0;
}

int lmpio__os_in_memory(int fd) {
  struct statfs sf;
  if (lmpio__os.fstatfs(fd, &sf) != 0) return 0;
  return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

MPI_Offset lmpio__os_block_size(int fd) {
  struct statfs sf;
  if (lmpio__os.fstatfs(fd, &sf) != 0 || sf.f_bsize <= 0) return 0;
  return (MPI_Offset)sf.f_bsize;
}

int lmpio__os_class(int e) {
  switch (e) {
  case ENOENT: return MPI_ERR_NO_SUCH_FILE;
  case EACCES: case EPERM: return MPI_ERR_ACCESS;
  case EEXIST: return MPI_ERR_FILE_EXISTS;
  case ENOSPC: return MPI_ERR_NO_SPACE;
#ifdef EDQUOT
  case EDQUOT: return MPI_ERR_QUOTA;
#endif
  case EROFS: return MPI_ERR_READ_ONLY;
  case ENAMETOOLONG: case EISDIR: case ENOTDIR: case ELOOP: return MPI_ERR_BAD_FILE;
  case ETXTBSY: case EBUSY: return MPI_ERR_FILE_IN_USE;
  case ENOMEM: return MPI_ERR_NO_MEM;
  case EOPNOTSUPP: return MPI_ERR_UNSUPPORTED_OPERATION;
  /* An offset past what the file system allows: the caller's offset. */
  case EFBIG: case EOVERFLOW: return MPI_ERR_ARG;
  default: return MPI_ERR_IO;
  }
}

int lmpio__os_error(int e, const char *call, const char *what, const char *path) {
  return lmpio__err(lmpio__os_class(e), call, "%s \"%s\": %s%s", what, path ? path : "", strerror(e),
                    e == EFBIG ? " (the offset is past the largest one the file system allows)" : "");
}

/* ---- waiting ------------------------------------------------------------ */

/* Turns of pausing, then of yielding, before sleeping.  With more ranks
 * than processors, a few microseconds of pauses (a rank that is running
 * arrives in that time in most calls; and only while the ranks awaited
 * may all be running, lmpio__os_pausing_helps), then a few yields, each
 * of which lets another runnable process of this processor have it (measured,
 * bench/README: small_calls_bench, 4 ranks on 2 cores).  With a processor
 * for every rank, a few hundred microseconds of pauses: sleeping costs the
 * waker a system call and the sleeper a wake-up of tens of microseconds,
 * and ranks whose calls do unequal work (each writing new pages) drift
 * further apart than 10 us (latency_bench, IOR's pattern, 2 ranks:
 * read_at_all 15 us a call with 256 pauses, 1.6 with 16384). */
#define PAUSES_SHARED 256
#define PAUSES_OWN 16384

long lmpio__os_quota_cpus(const char *cpu_max) {
  long long quota = 0, period = 0;
  if (!cpu_max || sscanf(cpu_max, "%lld %lld", &quota, &period) != 2 || quota <= 0 || period <= 0) return 0;
  return (long)((quota + period - 1) / period);
}

/* The first line of a file (empty when it cannot be read). */
static void first_line(const char *path, char *buf, size_t n) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(buf, (int)n, f)) buf[0] = '\0';
  fclose(f);
}

/* The processors the cgroup at dir (under root) allows: cgroup v2's
 * cpu.max, or v1's cfs quota and period; 0 for no limit. */
static long quota_at(const char *root, const char *dir, int v1) {
  char path[8400], q[64], per[64], both[160];
  if (!v1) {
    snprintf(path, sizeof path, "%s%s/cpu.max", root, dir);
    first_line(path, both, sizeof both);
    return lmpio__os_quota_cpus(both);
  }
  snprintf(path, sizeof path, "%s%s/cpu.cfs_quota_us", root, dir);
  first_line(path, q, sizeof q);
  snprintf(path, sizeof path, "%s%s/cpu.cfs_period_us", root, dir);
  first_line(path, per, sizeof per);
  q[strcspn(q, "\n")] = '\0';
  snprintf(both, sizeof both, "%s %s", q, per);
  return lmpio__os_quota_cpus(both);
}

long lmpio__os_cgroup_cpus(const char *proc_cgroup, const char *root) {
  char line[4096], dir[4096], v1root[4200];
  FILE *f = fopen(proc_cgroup, "r");
  if (!f) return 0;
  snprintf(v1root, sizeof v1root, "%s/cpu", root);
  long least = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    /* "0::/path" (v2), "N:cpu,cpuacct:/path" (v1's cpu controller) */
    char *ctl = strchr(line, ':'), *at = ctl ? strchr(ctl + 1, ':') : NULL;
    if (!at || at[1] != '/') continue;
    int v1 = at != ctl + 1;
    if (v1) {
      *at = '\0';
      char *c = ctl + 1, *tok;
      int cpu = 0;
      while ((tok = strsep(&c, ",")) != NULL) cpu |= strcmp(tok, "cpu") == 0;
      if (!cpu) continue;
    }
    snprintf(dir, sizeof dir, "%s", at + 1);
    for (;;) { /* (up to the root: the smallest limit binds) */
      long n = quota_at(v1 ? v1root : root, strcmp(dir, "/") == 0 ? "" : dir, v1);
      if (n > 0 && (least == 0 || n < least)) least = n;
      char *slash = strrchr(dir, '/');
      if (!slash || strcmp(dir, "/") == 0) break;
      if (slash == dir) dir[1] = '\0';
      else *slash = '\0';
    }
  }
  fclose(f);
  return least;
}

/* Processors the ranks of this machine may use: the online ones, within
 * the container's quota (a 2-processor quota on a 64-processor host is 2:
 * there a long spin burns the quota and is throttled).  Not this process's
 * affinity: mpirun binds each rank to a core of its own, and the ranks
 * together still have one each. */
static long processors;
static pthread_once_t processors_once = PTHREAD_ONCE_INIT;

static void count_processors(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  long q = lmpio__os_cgroup_cpus("/proc/self/cgroup", "/sys/fs/cgroup");
  if (q > 0 && (n <= 0 || q < n)) n = q;
  processors = n;
}

long lmpio__os_processors(void) {
  pthread_once(&processors_once, count_processors);
  return processors;
}

unsigned lmpio__os_spin_turns(int ranks_here) {
  long cpus = lmpio__os_processors();
  return cpus > 0 && ranks_here <= cpus ? PAUSES_OWN : PAUSES_SHARED;
}

/* A yield lets another runnable process of this processor have it.  With
 * more ranks than processors that is often a rank awaited; with one each,
 * only when the scheduler put an awaited rank here.  Otherwise, beside busy
 * processes, it hands the processor to one of them for its time slice and
 * the rank is back milliseconds later, where a sleeping one is woken when
 * the record comes: twophase at 2 ranks beside 4 busy processes took
 * 96-300 us a call with 16 yields after 16384 pauses, 31-35 us with none
 * (the waits that ran past the pauses, 1-2% of them, were all in the
 * yields for over 50 us). */
unsigned lmpio__os_wait_yields(unsigned pauses, int near) {
  return pauses == PAUSES_OWN && !near ? 0 : LMPIO__OS_YIELDS;
}

/* Pausing waits for a rank that is running and about to store.  With more
 * ranks awaited than the other processors, some are not running: pausing
 * holds the processor one of them needs, and each turn of every waiting
 * rank polls every awaited rank's line (16 ranks on 2 processors: perf put
 * 38% of the processors' time in these waits, and `ordered` took 127 us a
 * call, 36 without them; bench/README.md).  So a wait pauses only while the
 * ranks awaited may all be running elsewhere. */
int lmpio__os_pausing_helps(int awaited, long processors) {
  return processors <= 0 || awaited < processors;
}

int lmpio__os_cpu(void) { return sched_getcpu(); }

int lmpio__os_wait_round(unsigned *round, unsigned pauses, unsigned yields) {
  unsigned r = (*round)++;
  if (r < pauses) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
    return 0;
  }
  if (r - pauses < yields) {
    sched_yield();
    return 0;
  }
  *round = pauses + yields; /* (no wrap-around) */
  return 1;
}

void lmpio__os_sleep_on(const void *addr, unsigned seen, long timeout_us) {
  struct timespec t = {timeout_us / 1000000, (timeout_us % 1000000) * 1000};
  /* (not FUTEX_PRIVATE: the word may be in memory shared with other processes) */
  syscall(SYS_futex, addr, FUTEX_WAIT, seen, &t, NULL, 0);
}

void lmpio__os_wake(const void *addr) { syscall(SYS_futex, addr, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0); }
