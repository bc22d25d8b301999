/* File-system drivers: one table of operations per handle, chosen at open
 * (driver.c) from the name's prefix ("nfs:", "lustre:", as ROMIO spells
 * them), the hint lmpio_fs_driver, or the file system's statfs type.  What a
 * file system needs for MPI's consistency semantics (locks, cache drops,
 * flushes, fresh sizes) lives in its driver only; the data path calls these
 * operations and never asks which file system it runs on.
 *
 *   local     one kernel's page cache serves every rank (ext4, xfs, tmpfs...)
 *   coherent  a lock manager keeps every client's cache coherent (Lustre,
 *             GPFS, BeeGFS, CephFS...): byte-range locks are enough
 *   caching   clients cache pages and attributes on their own (NFS, SMB, FUSE
 *             file systems not known to be coherent): every lock drops the
 *             client's cached pages of its range, every write made under a
 *             lock is flushed before the lock goes, sizes are asked of the
 *             server, sync drops the cache too
 *   stream    pipes, FIFOs, sockets, terminals, standard streams: no offsets,
 *             bytes through rank 0 (stream.c) */
#ifndef LMPIO_DRIVER_H
#define LMPIO_DRIVER_H

#include "lmpio.h"
#include <stddef.h>

/* The drivers in order of caution: when ranks see different file systems
 * (or a hint and statfs disagree) the most cautious one wins. */
enum { LMPIO__FS_LOCAL, LMPIO__FS_COHERENT, LMPIO__FS_CACHING, LMPIO__FS_STREAM, LMPIO__FS_COUNT };

typedef struct lmpio__driver lmpio__driver;
struct lmpio__driver {
  const char *name;
  int id;               /* LMPIO__FS_* */
  /* Descriptor-level operations: a plan or a background job holds the
   * driver and its own descriptor, never the handle.  Each returns 0 (or
   * bytes) on success and -1 with errno set on failure. */
  /* A byte-range lock on [off, off + len); afterwards this client reads what
   * the file holds there (whatever other clients wrote and flushed). */
  int (*lock)(int fd, int write, MPI_Offset off, MPI_Offset len);
  /* Releases it; wrote: this process wrote under it, and other clients must
   * see those bytes once it is gone. */
  int (*unlock)(int fd, int wrote, MPI_Offset off, MPI_Offset len);
  /* A full read; short only at the end of the file as the server knows it
   * (a caching client whose idea of the size is stale re-reads; if it still
   * cannot, the read fails with ESTALE rather than return zeros). */
  long long (*pread)(int fd, void *buf, MPI_Offset len, MPI_Offset off);
  /* A full write (retrying short writes and EINTR). */
  long long (*pwrite)(int fd, const void *buf, MPI_Offset len, MPI_Offset off);
  /* The size of the file as the server knows it. */
  int (*size)(int fd, MPI_Offset *size);
  /* MPI_File_sync: what this process wrote is on storage, and what it reads
   * next comes from there. */
  int (*sync)(int fd);
  /* The unit two-phase file domains are aligned to when the hint
   * striping_unit is not given (the file system's block, statfs f_bsize);
   * 0 or NULL: none known. */
  MPI_Offset (*block)(int fd);
  /* Open, close and sync are MPI's synchronisation points: what other
   * processes flushed before them is what this one reads after them.
   * refresh drops this client's cached pages and attributes of the file
   * (open, close after every rank flushed, sync); NULL where the kernel
   * keeps them coherent. */
  int (*refresh)(int fd);
  /* The shared file pointer may live in a mapped page when every rank runs
   * under one kernel (the page cache is then one for all). */
  int map_pointer;
  /* A sieved write (read the window, fill in the data, write it back) is
   * safe: the read brings in what the file holds under the lock.  Not on
   * caching clients, whose page cache can hand a concurrent local reader's
   * older copy of a page to the sieve's read: their writes with holes go
   * piece by piece (romio_ds_write=enable cannot override it). */
  int sieve_writes;
  /* Reads may copy their pieces out of a mapping of the file (the kernel's
   * page cache is the file: local file systems). */
  int map_reads;
  /* Writes with holes may store their pieces into a writable mapping of
   * the file, which leaves the holes alone (no read-modify-write). */
  int map_writes;
  /* Why the file has no size (get_size refuses it), or NULL. */
  const char *no_size;
  /* Nonblocking operations may run in the background (else they complete
   * when they start); and the file has a shared-pointer helper. */
  int background, has_helper;
};

/* By id (LMPIO__FS_*). */
const lmpio__driver *lmpio__driver_by_id(int id);

/* The path without a ROMIO file-system prefix ("ufs:", "nfs:", "lustre:"...);
 * *id: the driver the prefix names, or -1 when there is none. */
const char *lmpio__driver_prefix(const char *name, int *id, char *why, size_t n);
/* The driver of an open descriptor by its file system (statfs type, and the
 * FUSE subtype from /proc/self/mountinfo); why: the reason, for get_info.
 * *known: 0 when the type is not in lmpio's table (then LMPIO__FS_LOCAL,
 * which open keeps only when every rank runs under one kernel, and says so
 * after why). */
int lmpio__driver_of_fd(int fd, char *why, size_t n, int *known);

#endif
