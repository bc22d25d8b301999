/* The caching driver: network clients that cache pages and attributes on
 * their own (NFS between its close-to-open points, SMB, 9p, FUSE file
 * systems such as GlusterFS's client).  Nothing in the kernel makes a
 * byte-range lock refresh such a cache, so the driver does what MPI's
 * consistency semantics need around every lock:
 *
 *  - after the lock is granted, the client's cached pages of the range are
 *    dropped (whole pages), so the read of a read-modify-write sees what the
 *    other clients flushed under their locks;
 *  - before it is released, what was written under it is flushed to the
 *    server (fsync), so the next holder's read finds it;
 *  - a short read is checked against the size the server gives: a stale
 *    cached size is refreshed and the read made again, and a read that still
 *    comes back short of the server's size fails (ESTALE) instead of being
 *    taken as end of file and filled with zeros;
 *  - sync flushes and also drops the whole file's cached pages and asks
 *    for its attributes (the read after sync-barrier-sync comes from the
 *    server); so do open, and close once every rank has flushed (a plain
 *    POSIX read of the file after the close sees what the job wrote).
 *
 * Caches the kernel cannot reach (a FUSE daemon's own read-ahead or
 * io-cache) are outside what this driver can drop: such mounts need their
 * caches off for MPI's semantics (doc/cluster.md). */
#include "internal.h"

#include <errno.h>
#include <time.h>

static int caching_lock(int fd, int write, MPI_Offset off, MPI_Offset len) {
  if (lmpio__os_lock(fd, write, off, len) < 0) return -1;
  if (len > 0 && lmpio__os_drop_cache(fd, off, len) < 0) {
    int e = errno;
    lmpio__os_unlock(fd, off, len);
    errno = e;
    return -1;
  }
  return 0;
}

static int caching_unlock(int fd, int wrote, MPI_Offset off, MPI_Offset len) {
  int r = 0, e = 0;
  if (wrote && lmpio__os_fsync(fd) < 0) {
    r = -1;
    e = errno;
  }
  if (lmpio__os_unlock(fd, off, len) < 0 && r == 0) {
    r = -1;
    e = errno;
  }
  errno = e;
  return r;
}

static long long caching_pread(int fd, void *buf, MPI_Offset len, MPI_Offset off) {
  long long got = lmpio__os_pread_all(fd, buf, len, off);
  if (got < 0 || got == len) return got;
  /* Short: end of file, or a cached size that is behind the server's.  A
   * FUSE daemon may answer even a forced getattr from a cache of its own
   * (GlusterFS's md-cache); an fsync's reply carries the server's
   * attributes and refreshes such a cache on its way.  The kernel also
   * ignores a getattr's size when a write to the file raced with it (FUSE's
   * attribute versions: another rank of this machine writing elsewhere in
   * the file), so the refresh is tried a few times, backing off. */
  for (int attempt = 0; attempt < 8; attempt++) {
    MPI_Offset size;
    if (lmpio__os_fsync(fd) < 0 || lmpio__os_size_fresh(fd, &size) < 0) return -1;
    if (size <= off + got) return got;
    if (lmpio__os_drop_cache(fd, off + got, len - got) < 0) return -1;
    long long more = lmpio__os_pread_all(fd, (char *)buf + got, len - got, off + got);
    if (more < 0) return -1;
    got += more;
    MPI_Offset want = size - off < len ? size - off : len;
    if (got >= want) return got;
    struct timespec pause = {0, 1000000L << attempt}; /* 1 ms, 2 ms, ... 128 ms */
    nanosleep(&pause, NULL);
  }
  errno = ESTALE;
  return -1;
}

/* The whole file's pages go, and its attributes are asked again (after an
 * fsync, whose reply refreshes a FUSE daemon's own attribute cache): the
 * next read and size come from the server. */
static int caching_refresh(int fd) {
  MPI_Offset size;
  if (lmpio__os_drop_cache(fd, 0, 0) < 0 || lmpio__os_fsync(fd) < 0) return -1;
  return lmpio__os_size_fresh(fd, &size);
}

static int caching_sync(int fd) {
  if (lmpio__os_fsync(fd) < 0) return -1;
  return caching_refresh(fd);
}

const lmpio__driver lmpio__driver_caching = {
    .name = "caching",
    .id = LMPIO__FS_CACHING,
    .lock = caching_lock,
    .unlock = caching_unlock,
    .pread = caching_pread,
    .size = lmpio__os_size_fresh,
    .sync = caching_sync,
    .refresh = caching_refresh,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .background = 1,
    .has_helper = 1,
};
