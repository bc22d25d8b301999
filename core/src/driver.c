/* The file-system drivers (driver.h): their rows, local, coherent, caching
 * and stream, and the choice of one by the name's prefix, as ROMIO spells
 * file systems, or by what statfs and the mount table say of an open
 * descriptor.  The hint lmpio_fs_driver and the agreement across ranks are
 * applied by open (file.c). */
#include "ground.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* unlock for drivers whose clients need nothing more than the lock's
 * release (local, coherent): the kernel or the lock manager makes the bytes
 * visible. */
static int unlock_plain(int fd, int wrote, MPI_Offset off, MPI_Offset len) {
  (void)wrote;
  return lmpio__os_unlock(fd, off, len);
}

/* The local driver: one kernel serves every rank (ext4, xfs, btrfs, tmpfs...),
 * so its page cache is the file: byte-range locks are all that
 * read-modify-write needs, and sync is fsync. */

static const lmpio__driver driver_local = {
    .name = "local",
    .id = LMPIO__FS_LOCAL,
    .lock = lmpio__os_lock,
    .unlock = unlock_plain,
    .pread = lmpio__os_pread_all,
    .pwrite = lmpio__os_pwrite_all,
    .size = lmpio__os_size,
    .sync = lmpio__os_fsync,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .sieve_writes = 1,
    .map_reads = 1,
    .map_writes = 1,
    .background = 1,
    .has_helper = 1,
};

/* The coherent driver: parallel file systems whose lock managers keep every
 * client's cache coherent with the others' (Lustre's LDLM, GPFS tokens,
 * BeeGFS, CephFS capabilities).  A client that takes a byte-range lock reads
 * what others wrote under theirs, and data written is visible to others once
 * the lock is released, so the operations are the plain POSIX ones, as on a
 * local file system.  The difference from local is elsewhere: ranks on
 * several machines (no mapped shared pointer across kernels: pointer.c knows
 * that from the ranks' kernels, not from here) and stripes (collrun.c
 * aligns file domains). */

static const lmpio__driver driver_coherent = {
    .name = "coherent",
    .id = LMPIO__FS_COHERENT,
    .lock = lmpio__os_lock,
    .unlock = unlock_plain,
    .pread = lmpio__os_pread_all,
    .pwrite = lmpio__os_pwrite_all,
    .size = lmpio__os_size,
    .sync = lmpio__os_fsync,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .sieve_writes = 1,
    .background = 1,
    .has_helper = 1,
};

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
    lmpio__os_pause_ms(1L << attempt); /* 1 ms, 2 ms, ... 128 ms */
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

static const lmpio__driver driver_caching = {
    .name = "caching",
    .id = LMPIO__FS_CACHING,
    .lock = caching_lock,
    .unlock = caching_unlock,
    .pread = caching_pread,
    .pwrite = lmpio__os_pwrite_all,
    .size = lmpio__os_size_fresh,
    .sync = caching_sync,
    .refresh = caching_refresh,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .sieve_writes = 0,
    .background = 1,
    .has_helper = 1,
};

/* The stream driver: pipes, FIFOs, sockets, terminals and the standard
 * streams, which have no file offsets.  Only rank 0 holds a descriptor; the
 * other ranks' bytes go through it (stream.c: write_shared, read_shared,
 * the ordered collectives and the check of a view), so there is no size and
 * nothing runs in the background (bytes leave in program order). */


/* Bytes are written as they come: nothing to sync. */
static int stream_sync(int fd) {
  (void)fd;
  return 0;
}

static int no_lock(int fd, int write, MPI_Offset off, MPI_Offset len) {
  (void)fd, (void)write, (void)off, (void)len;
  errno = ESPIPE;
  return -1;
}

static int no_unlock(int fd, int wrote, MPI_Offset off, MPI_Offset len) {
  (void)fd, (void)wrote, (void)off, (void)len;
  return 0;
}

static long long no_pread(int fd, void *buf, MPI_Offset len, MPI_Offset off) {
  (void)fd, (void)buf, (void)len, (void)off;
  errno = ESPIPE;
  return -1;
}

static long long no_pwrite(int fd, const void *buf, MPI_Offset len, MPI_Offset off) {
  (void)fd, (void)buf, (void)len, (void)off;
  errno = ESPIPE;
  return -1;
}

static int no_size(int fd, MPI_Offset *size) {
  (void)fd, (void)size;
  errno = ESPIPE;
  return -1;
}

static const lmpio__driver driver_stream = {
    .name = "stream",
    .id = LMPIO__FS_STREAM,
    .lock = no_lock,
    .unlock = no_unlock,
    .pread = no_pread,
    .pwrite = no_pwrite,
    .size = no_size,
    .sync = stream_sync,
    .map_pointer = 0,
    .sieve_writes = 0,
    .no_size = "a stream (a pipe, FIFO, socket, terminal or standard stream): it has no size",
    .background = 0,
    .has_helper = 0,
};

const lmpio__driver *lmpio__driver_by_id(int id) {
  static const lmpio__driver *const all[LMPIO__FS_COUNT] = {&driver_local, &driver_coherent, &driver_caching,
                                                           &driver_stream};
  return id >= 0 && id < LMPIO__FS_COUNT ? all[id] : &driver_local;
}

/* ROMIO's prefixes, and what each file system's clients guarantee. */
static const struct {
  const char *prefix;
  int id;
} prefixes[] = {
    {"ufs:", LMPIO__FS_LOCAL},        {"xfs:", LMPIO__FS_LOCAL},      {"testfs:", LMPIO__FS_LOCAL},
    {"nfs:", LMPIO__FS_CACHING},      {"quobytefs:", LMPIO__FS_CACHING},
    {"lustre:", LMPIO__FS_COHERENT},  {"gpfs:", LMPIO__FS_COHERENT},  {"pvfs2:", LMPIO__FS_COHERENT},
    {"panfs:", LMPIO__FS_COHERENT},   {"beegfs:", LMPIO__FS_COHERENT}, {"daos:", LMPIO__FS_COHERENT},
    {"ime:", LMPIO__FS_COHERENT},     {"cephfs:", LMPIO__FS_COHERENT},
};

const char *lmpio__driver_prefix(const char *name, int *id, char *why, size_t n) {
  *id = -1;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t len = strlen(prefixes[i].prefix);
    if (strncasecmp(name, prefixes[i].prefix, len) != 0) continue; /* (any case, as ROMIO takes them) */
    *id = prefixes[i].id;
    snprintf(why, n, "the file name's prefix \"%.*s\"", (int)len, name);
    return name + len;
  }
  return name;
}

/* statfs magic numbers (linux/magic.h and the file systems' own headers). */
static const struct {
  long magic;
  const char *name;
  int id;
} types[] = {
    {0xEF53, "ext2/3/4", LMPIO__FS_LOCAL},       {0x58465342, "xfs", LMPIO__FS_LOCAL},
    {0x9123683E, "btrfs", LMPIO__FS_LOCAL},      {0x01021994, "tmpfs", LMPIO__FS_LOCAL},
    {(long)0x858458f6, "ramfs", LMPIO__FS_LOCAL}, {0x2fc12fc1, "zfs", LMPIO__FS_LOCAL},
    {(long)0xF2F52010, "f2fs", LMPIO__FS_LOCAL},  {0x794c7630, "overlayfs", LMPIO__FS_LOCAL},
    {(long)0xCA451A4E, "bcachefs", LMPIO__FS_LOCAL}, {0x3153464a, "jfs", LMPIO__FS_LOCAL},
    {0x52654973, "reiserfs", LMPIO__FS_LOCAL},    {0x3434, "nilfs2", LMPIO__FS_LOCAL},
    {0x2011BAB0, "exfat", LMPIO__FS_LOCAL},       {0x4d44, "vfat/msdos", LMPIO__FS_LOCAL},
    {0x7366746e, "ntfs3", LMPIO__FS_LOCAL},       {(long)0xE0F5E1E2, "erofs", LMPIO__FS_LOCAL},
    {0x73717368, "squashfs", LMPIO__FS_LOCAL},    {0x9660, "iso9660", LMPIO__FS_LOCAL},
    /* the kernel's own files: each rank sees its own kernel's */
    {0x9fa0, "proc", LMPIO__FS_LOCAL},            {0x62656572, "sysfs", LMPIO__FS_LOCAL},
    {0x64626720, "debugfs", LMPIO__FS_LOCAL},     {0x74726163, "tracefs", LMPIO__FS_LOCAL},
    {0x1cd1, "devpts", LMPIO__FS_LOCAL},          {0x27e0eb, "cgroup", LMPIO__FS_LOCAL},
    {0x63677270, "cgroup2", LMPIO__FS_LOCAL},     {(long)0x958458f6, "hugetlbfs", LMPIO__FS_LOCAL},
    {0x62656570, "configfs", LMPIO__FS_LOCAL},    {0x73636673, "securityfs", LMPIO__FS_LOCAL},
    {(long)0xCAFE4A11, "bpf", LMPIO__FS_LOCAL},   {(long)0xde5e81e4, "efivarfs", LMPIO__FS_LOCAL},
    {0x0BD00BD0, "Lustre", LMPIO__FS_COHERENT},  {0x47504653, "GPFS", LMPIO__FS_COHERENT},
    {0x19830326, "BeeGFS", LMPIO__FS_COHERENT},  {0x00c36400, "CephFS", LMPIO__FS_COHERENT},
    {0x20030528, "PVFS2/OrangeFS", LMPIO__FS_COHERENT}, {(long)0xAAD7AAEA, "PanFS", LMPIO__FS_COHERENT},
    {0x01161970, "GFS2", LMPIO__FS_COHERENT},    {0x7461636f, "OCFS2", LMPIO__FS_COHERENT},
    {0x6969, "NFS", LMPIO__FS_CACHING},          {0x517B, "SMB", LMPIO__FS_CACHING},
    {(long)0xFF534D42, "CIFS", LMPIO__FS_CACHING}, {(long)0xFE534D42, "SMB2", LMPIO__FS_CACHING},
    {0x01021997, "9p", LMPIO__FS_CACHING},       {0x5346414F, "AFS", LMPIO__FS_CACHING},
    {0x73757245, "Coda", LMPIO__FS_CACHING},     {0x65735546, "FUSE", LMPIO__FS_CACHING},
};

int lmpio__driver_of_fd(int fd, char *why, size_t n, int *known) {
  long magic = 0;
  *known = 1;
  char type[256];
  if (lmpio__os_fs_type(fd, &magic, type, sizeof type) < 0) {
    /* Nothing is known of the file system: take the driver that is right
     * on every one.  The local driver is right only under one kernel: on a
     * caching client shared by nodes it left a rank that wrote nothing with
     * a stale size, its reads short and taken as end of file (the 4-node
     * cluster suite, nodes_test with a failing fstatfs). */
    snprintf(why, n, "statfs failed (%s): taken as a caching file system (right on every file system)",
             strerror(errno));
    return LMPIO__FS_CACHING;
  }
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if ((long)(unsigned)types[i].magic != (long)(unsigned)magic) continue;
    if (types[i].id == LMPIO__FS_CACHING)
      snprintf(why, n, "statfs type 0x%lx (%s%s%s): its clients cache pages and attributes", (unsigned long)magic,
               types[i].name, type[0] ? ", mounted as " : "", type);
    else
      snprintf(why, n, "statfs type 0x%lx (%s%s%s)", (unsigned long)magic, types[i].name,
               type[0] ? ", mounted as " : "", type);
    return types[i].id;
  }
  *known = 0;
  snprintf(why, n, "statfs type 0x%lx (%s) is not known", (unsigned long)magic, type[0] ? type : "unnamed");
  return LMPIO__FS_LOCAL;
}
